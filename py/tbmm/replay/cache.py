"""Content-addressed cache of replay results, shared by everything that calls `run_replay`
(verify, serve, rescore, the API): the same decisions of the same task are replayed once.

Key = sha256 over
* the code: every `.py` file of the `tbmm` package, numpy's and Python's versions (a replay
  computes with them; a changed file is a new key, so the disk cache never outlives it);
* the task: every file of its folder (replay.toml, artifact_map.toml, the data, the tables a
  spec names under reference/ ...) and the replay spec as loaded (module, digits, params);
* the artifact: an injective encoding of the whole tree the replay receives (the artifact
  without `replayed`): every key in its order, every number by its literal text, strings,
  booleans, nulls and non-finite numbers each tagged by type. Two artifacts share an entry
  only when the replay reads the same input, so no artifact can poison another's result.

Only completed replays are kept (`ok` or `unreplayable` with its reason); a replay stopped by
its CPU budget raises and is never cached. Entries are stored as JSON text and rebuilt on
every hit, so a caller that edits a result cannot alter the cache. A replay module that is
not a file of the package (a test's synthetic module) is never cached: its code has no key.

`TBMM_REPLAY_CACHE` selects the mode: `memory` (default: an in-process LRU bounded in
entries and bytes), `disk` (also under the user cache dir, `replays/`, as `tbmm.suite.compiled`
places its entries; like those, files in the user's own cache dir are trusted as the user's),
`off`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from tbmm.core import exact
from tbmm.suite.files import user_cache_dir

MAX_ENTRIES = 512
MAX_BYTES = 64 * 1024 * 1024
FORMAT = "tbmm-replay-cache/1"
_PKG = Path(__file__).resolve().parents[1]  # py/tbmm


_BYPASS: ContextVar[bool] = ContextVar("tbmm_replay_cache_bypass", default=False)


@contextmanager
def bypass() -> Iterator[None]:
    """Every replay inside runs afresh and is not stored (benchmarks measure replays)."""
    token = _BYPASS.set(True)
    try:
        yield
    finally:
        _BYPASS.reset(token)


def mode() -> str:
    """`memory`, `disk` or `off` (TBMM_REPLAY_CACHE; anything else is `memory`); `off`
    inside `bypass()`."""
    if _BYPASS.get():
        return "off"
    m = os.environ.get("TBMM_REPLAY_CACHE", "memory").strip().lower()
    return m if m in ("memory", "disk", "off") else "memory"


def disk_dir() -> Path:
    """$TBMM_CACHE_DIR/replays, else $XDG_CACHE_HOME/tbmm/replays, else ~/.cache/tbmm/replays."""
    return user_cache_dir("replays")


_CODE: bytes | None = None


def _code_digest() -> bytes:
    global _CODE
    if _CODE is None:
        import numpy

        h = hashlib.sha256(FORMAT.encode() + b"\0" + numpy.__version__.encode())
        h.update(sys.version.encode() + b"\0")
        for f in sorted(_PKG.rglob("*.py")):
            h.update(str(f.relative_to(_PKG)).encode() + b"\0" + f.read_bytes() + b"\0")
        _CODE = h.digest()
    return _CODE


def task_files_digest(task: Any) -> bytes:
    """Every file of the task's folder (replay.toml, its data, tables under reference/ that a
    spec's params name, ...), hashed once per Task object: whatever a replay reads from its
    task is in the key."""
    cache = getattr(task, "_cache", None)
    files = cache.get("replay_cache_files") if isinstance(cache, dict) else None
    if files is None:
        h = hashlib.sha256()
        root = Path(task.dir)
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(root)).encode("utf-8", "surrogatepass") + b"\0")
            h.update(hashlib.sha256(f.read_bytes()).digest())
        files = h.digest()
        if isinstance(cache, dict):
            cache["replay_cache_files"] = files
    return files


def _task_digest(task: Any, spec: Any) -> bytes:
    """The task's part of the key: its files, and the spec as loaded (a caller that replaced
    the spec in memory gets the new spec's digest; the old spec object is held, so its id is
    never reused for another)."""
    cache = getattr(task, "_cache", None)
    held = cache.get("replay_cache_spec") if isinstance(cache, dict) else None
    if held is not None and held[0] is spec:
        return held[1]
    h = hashlib.sha256(task_files_digest(task))
    h.update(spec.model_dump_json().encode())
    digest = h.digest()
    if isinstance(cache, dict):
        cache["replay_cache_spec"] = (spec, digest)
    return digest


class _Uncacheable(Exception):
    pass


def _encode(node: Any, out: list[str]) -> None:
    """Injective text of an artifact tree: type-tagged; strings as their `repr` (injective);
    a number by its literal text (a validated decimal: no tag character in it)."""
    t = type(node)
    if t is exact.Num:
        out.append("n" + node.text + ";")
    elif t is dict:
        out.append("{")
        for k, v in node.items():
            if type(k) is not str:
                raise _Uncacheable
            out.append(repr(k))
            _encode(v, out)
        out.append("}")
    elif t is list:
        out.append("[")
        for v in node:
            _encode(v, out)
        out.append("]")
    elif t is str:
        out.append("s" + repr(node))
    elif node is True or node is False:
        out.append("t" if node else "f")
    elif node is None:
        out.append("z")
    elif t is exact.NonFinite:
        out.append("x" + repr(node.text) + ";")
    else:  # anything else (a float, a Fraction, a subclass put there by a caller): not keyed
        raise _Uncacheable


_FILE_OK: dict[str, tuple[Any, bool]] = {}


def _module_is_ours(name: str) -> bool:
    """The replay module is the package's own file (checked once per module object)."""
    mod = sys.modules.get(f"tbmm.replay.{name}")
    seen = _FILE_OK.get(name)
    if seen is not None and seen[0] is mod:
        return seen[1]
    src = getattr(mod, "__file__", None)
    ok = bool(src) and Path(src).resolve() == _PKG / "replay" / f"{name}.py"
    _FILE_OK[name] = (mod, ok)
    return ok


def key(task: Any, spec: Any, doc: dict[str, Any]) -> str | None:
    """The cache key of replaying `doc` (the artifact without `replayed`) for `task`, or None
    when it cannot be keyed soundly (cache off, module not a package file, odd tree)."""
    if mode() == "off" or not _module_is_ours(spec.module):
        return None
    parts: list[str] = []
    try:
        _encode(doc, parts)
    except (_Uncacheable, RecursionError):
        return None
    h = hashlib.sha256(_code_digest())
    h.update(_task_digest(task, spec))
    h.update("".join(parts).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class ReplayCache:
    """A thread-safe LRU of entry texts, bounded in entries and in bytes."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._items: OrderedDict[str, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def get(self, k: str) -> str | None:
        with self._lock:
            text = self._items.get(k)
            if text is not None:
                self._items.move_to_end(k)
                self.hits += 1
                return text
        text = _disk_get(k) if mode() == "disk" else None
        with self._lock:
            if text is None:
                self.misses += 1
            else:
                self.hits += 1
        if text is not None:
            self._put(k, text)
        return text

    def put(self, k: str, text: str) -> None:
        self._put(k, text)
        if mode() == "disk":
            _disk_put(k, text)

    def _put(self, k: str, text: str) -> None:
        size = len(text) + len(k)
        if size > self.max_bytes // 4:
            return  # one entry never crowds out the rest
        with self._lock:
            old = self._items.pop(k, None)
            if old is not None:
                self._bytes -= len(old) + len(k)
            self._items[k] = text
            self._bytes += size
            while self._items and (
                len(self._items) > self.max_entries or self._bytes > self.max_bytes
            ):
                k0, t0 = self._items.popitem(last=False)
                self._bytes -= len(t0) + len(k0)


def _disk_get(k: str) -> str | None:
    try:
        text = (disk_dir() / f"{k}.json").read_text(encoding="utf-8")
        doc = json.loads(text)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != k or not isinstance(doc.get("entry"), str):
        return None  # a torn or foreign file: a miss, replayed afresh
    return doc["entry"]


def _disk_put(k: str, text: str) -> None:
    folder = disk_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{k}.{os.getpid()}.{threading.get_ident()}.tmp"
        tmp.write_text(json.dumps({"key": k, "entry": text}), encoding="utf-8")
        os.replace(tmp, folder / f"{k}.json")
    except OSError:
        pass  # a read-only or full cache dir only costs the next replay


CACHE = ReplayCache()
