"""Bounded verification input: caps an artifact must meet before any real work is done.

Verification runs outside the sandbox, on the host, so an artifact must not be able to
stall it. The cost of verifying grows with the number of list entries the gate, the
scorer and the Lean certificate expand (`[*]` paths), with the digits of each number, and
with the nesting depth; parsing alone grows with the bytes. `parse_exact()` (the reader of
every path: CLI, API, serve, Harbor) enforces a cap on each before any Python tree of the
artifact exists:

1. bytes: the length, before anything is read further (`read_capped` does not even read more);
2. `prescan()`: one pass over the decoded text, in document order, that builds nothing:
   each number's length, nesting depth, entries per list (a generic cap, or a per-path
   cap such as ``{"q5.uavs": 5, "q5.uavs[*].drops": 3}`` derived from the task's
   statement) and entries over all referenced lists together. The first violation in
   the text is the reason, the same on every path;
3. only then the C JSON scanner builds the exact tree (numbers kept as their text).

Every rejection is a `BoundsError` with a one-line reason. `tbmm.tooling.bounds_bench` measures
how long the largest artifact within the default caps takes to verify.

Also here: `cpu_budget()` / `check_budget()`, a per-artifact verification CPU budget that
verification code polls; exceeding it raises `BudgetExceeded` (its own outcome,
"budget_exceeded": no verdict, never "infeasible" and never a score).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import re
import stat
import threading
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

MiB = 1024 * 1024
UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Caps:
    """Limits on one artifact. `per_path` overrides `max_list` for the list at that path
    (paths in tbmm.core.paths syntax, `[*]` for "any entry of the enclosing list").

    Only *referenced* lists cost verification work (the gate, the scorer and the Lean
    certificate expand them); `referenced` names them (None: every list is). A list nothing
    refers to is only parsed: it is held to the looser `max_list_unreferenced` and does not
    count toward `max_list_total`, so an honest extra table does not sink an answer."""

    max_bytes: int = 4 * MiB
    max_depth: int = 32
    max_digits: int = 40  # characters of one number literal (digits, sign, '.', exponent)
    max_list: int = 32
    max_list_total: int = 48
    per_path: Mapping[str, int] = field(default_factory=dict)
    referenced: frozenset[str] | None = None
    max_list_unreferenced: int = 100_000

    def list_cap(self, path: str) -> int:
        return self.per_path.get(path, self.max_list)

    def is_referenced(self, path: str) -> bool:
        return self.referenced is None or path in self.referenced


_INDEX = re.compile(r"\[(\d+|\*)\]")


def list_paths(paths: Iterator[str] | list[str]) -> frozenset[str]:
    """Every list a set of artifact paths reaches into, with `[*]` for any index:
    `a.b[2].c[*].d` -> {`a.b`, `a.b[*].c`}."""
    out = set()
    for p in paths:
        norm = _INDEX.sub("[*]", p)
        i = norm.find("[*]")
        while i >= 0:
            out.add(norm[:i])
            i = norm.find("[*]", i + 3)
    return frozenset(out)


DEFAULT_CAPS = Caps()


class BoundsError(ValueError):
    """The artifact exceeds a cap; the message is a one-line reason."""


def strip_bom(data: bytes | str) -> bytes | str:
    """A UTF-8 byte-order mark is legal at the start of a UTF-8 file; JSON parsers refuse it."""
    if isinstance(data, bytes):
        return data[len(UTF8_BOM) :] if data.startswith(UTF8_BOM) else data
    return data[1:] if data.startswith("\ufeff") else data


def check_size(size: int, caps: Caps = DEFAULT_CAPS) -> None:
    if size > caps.max_bytes:
        raise BoundsError(f"artifact is {size} bytes, over the cap of {caps.max_bytes} bytes")


def read_capped(path: Path, caps: Caps = DEFAULT_CAPS) -> bytes:
    """A file's bytes, never reading more than the cap (OSError if it cannot be read)."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISREG(st.st_mode):
            check_size(st.st_size, caps)
        data = fh.read(caps.max_bytes + 1)
    check_size(len(data), caps)
    return data


def parse_exact(data: bytes | str, caps: Caps = DEFAULT_CAPS) -> Any:
    """Parse an artifact exactly (`tbmm.core.exact` numbers) within the caps: bytes first,
    then every other cap on the text (`prescan`, building nothing), then ONE pass of the
    JSON scanner. Raises BoundsError over a cap, ValueError/UnicodeDecodeError if not JSON."""
    check_size(len(data), caps)
    data = strip_bom(data)
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    if data.startswith("\ufeff"):  # a second BOM: json.loads's own refusal, word for word
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
    whole = prescan(data, caps)  # every cap, before any tree exists
    decoder = _decoder(caps.max_digits, len(data) >= MEMO_FROM)
    # The parse allocates one object per number and container, and a JSON tree holds no
    # reference cycles: the cyclic collector's passes over the growing heap are pure cost
    # (a third of the parse of a 20,000-number field), so it pauses for the parse.
    collecting = gc.isenabled()
    gc.disable()
    try:
        doc = decoder.decode(data)
    except RecursionError as exc:
        raise BoundsError(f"artifact is nested deeper than the cap of {caps.max_depth}") from exc
    finally:
        for memo in decoder.memo.values():
            memo.clear()
        if collecting:
            gc.enable()
    if not whole:  # the scan called it not JSON yet json read it: check the tree as well
        _walk(doc, caps)
    return doc


_DECODERS = threading.local()


# Texts from this many characters on are parsed with the literal memo (`_make_decoder`);
# below it a repeat is rare and the memo's lookup per number costs more than it saves.
MEMO_FROM = 4096


def _decoder(limit: int, memo: bool = True) -> _Decoder:
    """The exact decoder for a digit cap, built once per thread (`json.loads` with hooks
    builds a decoder and its C scanner on every call: most of a small artifact's parse)."""
    cache = getattr(_DECODERS, "by_limit", None)
    if cache is None:
        cache = _DECODERS.by_limit = {}
    dec = cache.get((limit, memo))
    if dec is None:
        dec = cache[(limit, memo)] = _make_decoder(limit, memo)
    return dec


class _Decoder(json.JSONDecoder):
    """The exact decoder of one digit cap, with the memo of the parse under way."""

    memo: dict[str, Any]


def _make_decoder(limit: int, memo: bool = True) -> _Decoder:
    from tbmm.core import exact

    def too_long(text: str) -> BoundsError:
        return BoundsError(
            f"a number has {len(text)} characters, over the cap of {limit}: {text[:20]}..."
        )

    # One hook call per number is most of the parse's cost: the common literal (no exponent,
    # within both the cap and exact.MAX_EXPONENT) becomes a lazy Num here directly; the rest
    # goes through exact's own validation. A literal seen before in the same artifact gets
    # the same Num back (artifacts repeat numbers: 1,717 distinct literals among the 24,077
    # of the heliostat anchor): a Num is an immutable value (its text; its exact value is
    # computed once, on first use), so sharing one between positions changes nothing but the
    # cost. The memo holds one parse's literals (parse_exact empties it after each parse).
    Num, plain = exact.Num, limit <= exact.MAX_EXPONENT
    floats: dict[str, Any] = {}
    ints: dict[str, Any] = {}
    seen_float, seen_int = floats.get, ints.get

    def num(text: str) -> Any:
        n = seen_float(text)
        if n is not None:
            return n
        if len(text) > limit:
            raise too_long(text)
        if plain and "e" not in text and "E" not in text:
            n = Num(None, text, False)  # the scanner's float without exponent has a '.'
        else:
            n = exact._num(text)
        floats[text] = n
        return n

    def integer(text: str) -> Any:
        n = seen_int(text)
        if n is not None:
            return n
        if len(text) > limit:
            raise too_long(text)
        n = ints[text] = Num(None, text, True) if plain else exact._int(text)
        return n

    def num_once(text: str) -> Any:  # `num` without the memo
        if len(text) > limit:
            raise too_long(text)
        if plain and "e" not in text and "E" not in text:
            return Num(None, text, False)
        return exact._num(text)

    def integer_once(text: str) -> Any:  # `integer` without the memo
        if len(text) > limit:
            raise too_long(text)
        return Num(None, text, True) if plain else exact._int(text)

    def constant(text: str) -> Any:
        if len(text) > limit:
            raise too_long(text)
        return exact.NonFinite(text)

    if not memo:
        dec = _Decoder(parse_float=num_once, parse_int=integer_once, parse_constant=constant)
        dec.memo = {}
        return dec
    dec = _Decoder(parse_float=num, parse_int=integer, parse_constant=constant)
    dec.memo = {"floats": floats, "ints": ints}
    return dec


def check(data: bytes | str, caps: Caps = DEFAULT_CAPS) -> None:
    """Raise BoundsError if `data` exceeds a cap (the checks of parse_exact, without its
    parse). Input that is not JSON at all passes: the parser proper reports it (with its
    own reason)."""
    check_size(len(data), caps)
    data = strip_bom(data)
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            return
    prescan(data, caps)


_CONTAINERS = frozenset((dict, list))
_DICT_ONLY = {dict}


def _walk(doc: Any, caps: Caps) -> None:
    total = 0
    stack: list[tuple[Any, str, int]] = [(doc, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > caps.max_depth:
            raise BoundsError(
                f"artifact is nested deeper than the cap of {caps.max_depth} (at {_show(path)})"
            )
        if type(node) is dict:
            if _CONTAINERS.isdisjoint(map(type, node.values())):
                continue  # only leaves below (checked in C: most list entries are such rows)
            for key, value in node.items():
                if type(value) is dict or type(value) is list:
                    stack.append((value, f"{path}.{key}" if path else str(key), depth + 1))
        elif type(node) is list:
            referenced = caps.is_referenced(path)
            cap = caps.list_cap(path) if referenced else caps.max_list_unreferenced
            if len(node) > cap:
                raise BoundsError(
                    f"list {_show(path)} has {len(node)} entries, over the cap of {cap}"
                )
            if referenced:
                total += len(node)
            if total > caps.max_list_total:
                raise BoundsError(
                    f"lists hold {total} or more entries in all, over the cap of "
                    f"{caps.max_list_total} (reached at {_show(path)})"
                )
            if _CONTAINERS.isdisjoint(map(type, node)):
                continue
            sub = f"{path}[*]"
            if depth + 1 > caps.max_depth:
                stack.extend((v, sub, depth + 1) for v in node if type(v) in _CONTAINERS)
                continue
            if set(map(type, node)) == _DICT_ONLY and _CONTAINERS.isdisjoint(
                map(type, chain.from_iterable(map(dict.values, node)))
            ):
                continue  # a table: rows of leaves (checked in C, not row by row below)
            for v in node:
                # a dict entry of leaves only is fully checked here (its depth is within the
                # cap): most of a long list's entries never reach the stack
                if type(v) is dict:
                    if not _CONTAINERS.isdisjoint(map(type, v.values())):
                        stack.append((v, sub, depth + 1))
                elif type(v) is list:
                    stack.append((v, sub, depth + 1))


def _show(path: str) -> str:
    if not path:
        return "<root>"
    return path if len(path) <= 80 else path[:77] + "..."


# -- the pre-scan: every cap on the text, before a tree of it exists ------------------------
#
# One pass over the decoded text, in document order, with compiled regular expressions:
# runs of flat entries (scalars, strings, rows of leaves) are passed over inside the regex
# engine and counted with str.count, only brackets and keys of containers cost a Python step.
# The first violation met in the text is the reason, whichever path (CLI, API, serve,
# Harbor) reads the artifact: they all call it through parse_exact. The scan follows json's
# own grammar (NaN/Infinity included, control characters in strings refused); at a syntax
# error it stops and the parser reports the error with its own words. A value a later
# duplicate key replaces is still text that was sent: it counts.

_WS_RX = re.compile(r"[ \t\n\r]*+")
_STR = r'"(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+"'
_STR_RX = re.compile(_STR)
_NUM = r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][-+]?[0-9]++)?+"
_NUM_RX = re.compile(_NUM)
_LOOSE_STR = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)  # for counting only
# a flat stretch (no bracket outside a string), one bracket, or a quote that never closes
_SKIP = re.compile(r'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")++|[\[\]{}]|"', re.DOTALL)


@dataclass(frozen=True)
class _Runs:
    """The fast-path patterns for one digit cap: a number is taken in a run only if its
    whole stretch of number characters is within the cap (the exact check is the slow
    path's, on the token itself)."""

    elems: re.Pattern[str]
    rows: re.Pattern[str]
    members: re.Pattern[str]


@functools.lru_cache(maxsize=32)
def _runs(limit: int, empties: bool) -> _Runs:
    """`empties`: one more level fits under the depth cap, so an empty list or object (a
    container with nothing to count) is taken like a leaf, and an object's member may be
    a whole object of leaves."""
    consts = ["true", "false", "null"]
    consts += [c for c in ("NaN", "Infinity", "-Infinity") if len(c) <= limit]
    num = f"(?=[-+.0-9eE]{{1,{max(limit, 1)}}}(?![-+.0-9eE])){_NUM}" if limit > 0 else "(?!)"
    ws = r"[ \t\n\r]*+"
    leaf = f"(?:{num}|{'|'.join(consts)}|{_STR})"
    val = f"(?:{leaf}|\\[{ws}\\]|\\{{{ws}\\}})" if empties else leaf
    member = f"{_STR}{ws}:{ws}{leaf}{ws}"
    row = rf"\{{{ws}(?:{member}(?:,{ws}{member})*+)?+\}}"
    return _Runs(
        elems=re.compile(f"(?:{ws}{val}{ws},)*+"),
        rows=re.compile(f"(?:{ws}{row}{ws},)*+"),
        # an object's members: no count to keep, so a value may be a whole object of leaves
        members=re.compile(
            f"(?:{ws}{_STR}{ws}:{ws}(?:{val}|{row}){ws},)*+"
            if empties
            else f"(?:{ws}{_STR}{ws}:{ws}{val}{ws},)*+"
        ),
    )


def _outside_strings(seg: str) -> str:
    return _LOOSE_STR.sub("", seg) if '"' in seg else seg


def _count_entries(s: str, start: int) -> int:
    """Entries of the list opening at `start`, by brackets and top-level commas only (for
    the message of a list over its cap; an unclosed list counts to the end of the text)."""
    p, depth, commas = start + 1, 0, 0
    n = len(s)
    while p < n:
        if depth == 0:  # flat entries (leaves, rows, lists of leaves) in one regex call
            m = _FLAT_ENTRIES.match(s, p)
            a, b = m.span()  # type: ignore[union-attr]
            if b > a:
                commas += _FLAT_GROUP.sub("", _outside_strings(s[a:b])).count(",")
                p = b
        m = _SKIP.match(s, p)
        if m is None:  # pragma: no cover - every character starts one of the branches
            break
        a, b = m.span()
        c = s[a]
        if c in "[{":
            depth += 1
        elif c in "]}":
            if depth == 0:
                break
            depth -= 1
        elif c == '"' and b - a == 1:
            break  # a string that never closes: the rest is its body
        elif depth == 0:
            commas += _outside_strings(s[a:b]).count(",")
        p = b
    return commas + 1


_LOOSE = r'(?:[^"\[\]{}]++|"(?:[^"\\]++|\\.)*+")*+'  # anything but brackets
_FLAT_ENTRIES = re.compile(
    rf"(?:[^\[\]{{}},\"]*+(?:\"(?:[^\"\\]++|\\.)*+\")?+"
    rf"(?:\[{_LOOSE}\]|\{{{_LOOSE}\}})?+[^\[\]{{}},\"]*+,)*+",
    re.DOTALL,
)
_FLAT_GROUP = re.compile(r"\[[^\[\]{}]*+\]|\{[^\[\]{}]*+\}")  # once strings are gone


class _List:
    __slots__ = ("path", "count", "cap", "ref", "start")

    def __init__(self, path: str, cap: int, ref: bool, start: int) -> None:
        self.path, self.cap, self.ref, self.start, self.count = path, cap, ref, start, 0


def prescan(s: str, caps: Caps = DEFAULT_CAPS) -> bool:
    """Enforce every cap except bytes (depth, digits, list lengths, entries of referenced
    lists in all) on the JSON text `s`, building nothing of it: BoundsError at the first
    violation in document order. True if the whole text is JSON as json reads it, False
    if the scan stopped at a syntax error (the parser then says which)."""
    limit, maxd, max_total = caps.max_digits, caps.max_depth, caps.max_list_total
    inner, last = _runs(limit, True), _runs(limit, False)  # below the cap / at it
    ws, string, number = _WS_RX.match, _STR_RX.match, _NUM_RX.match
    scanstring = json.decoder.scanstring
    n = len(s)
    stack: list[Any] = []  # a _List, or the path (str) of an object
    total = 0
    path = ""  # of the value about to be read
    p = ws(s, 0).end()

    def add(lst: _List, k: int) -> None:
        """Count k more entries of `lst`: its own cap first, then all referenced lists'."""
        nonlocal total
        c0 = lst.count
        lst.count += k
        list_at = lst.cap + 1 - c0 if lst.count > lst.cap else None  # entry (1-based) over
        total_at = None
        if lst.ref:
            t0 = total
            total += k
            if total > max_total:
                total_at = max_total + 1 - t0
        if list_at is not None and (total_at is None or list_at <= total_at):
            raise BoundsError(
                f"list {_show(lst.path)} has {_count_entries(s, lst.start)} entries, "
                f"over the cap of {lst.cap}"
            )
        if total_at is not None:
            raise BoundsError(
                f"lists hold {max_total + 1} or more entries in all, over the cap of "
                f"{max_total} (reached at {_show(lst.path)})"
            )

    while True:
        # -- a value at p (whitespace skipped); `path` is its path
        c = s[p] if p < n else ""
        if c == "{" or c == "[":
            if len(stack) + 1 > maxd:
                raise BoundsError(
                    f"artifact is nested deeper than the cap of {maxd} (at {_show(path)})"
                )
            p = ws(s, p + 1).end()
            if c == "[":
                ref = caps.is_referenced(path)
                lst = _List(
                    path, caps.list_cap(path) if ref else caps.max_list_unreferenced, ref, p - 1
                )
                stack.append(lst)
                if p < n and s[p] == "]":
                    p += 1
                    stack.pop()
                else:
                    fits = len(stack) < maxd
                    p = _entries(s, p, lst, inner if fits else last, add, fits)
                    path = lst.path + "[*]"
                    continue
            else:
                stack.append(path)
                if p < n and s[p] == "}":
                    p += 1
                    stack.pop()
                else:
                    runs = inner if len(stack) < maxd else last
                    p, path = _key(s, p, path, runs, scanstring)
                    if p < 0:
                        return False
                    continue
        elif c == '"':
            m = string(s, p)
            if m is None:
                return False
            p = m.end()
        else:
            m = number(s, p)
            if m is not None:
                tok = m.group()
            else:
                tok = next((k for k in _CONSTANTS if s.startswith(k, p)), "")
                if not tok:
                    return False
            if len(tok) > limit and tok not in _LITERALS:
                raise BoundsError(
                    f"a number has {len(tok)} characters, over the cap of {limit}: {tok[:20]}..."
                )
            p += len(tok)
        # -- after a value: the end, a separator or a closing bracket
        while True:
            if not stack:
                return ws(s, p).end() == n
            p = ws(s, p).end()
            c = s[p] if p < n else ""
            top = stack[-1]
            if type(top) is _List:
                if c == ",":
                    fits = len(stack) < maxd
                    p = _entries(s, ws(s, p + 1).end(), top, inner if fits else last, add, fits)
                    path = top.path + "[*]"
                    break
                if c != "]":
                    return False
            else:
                if c == ",":
                    runs = inner if len(stack) < maxd else last
                    p, path = _key(s, ws(s, p + 1).end(), top, runs, scanstring)
                    if p < 0:
                        return False
                    break
                if c != "}":
                    return False
            p += 1
            stack.pop()


_CONSTANTS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_LITERALS = frozenset(("true", "false", "null"))


def _entries(s: str, p: int, lst: _List, runs: _Runs, add: Any, rows_fit: bool) -> int:
    """Pass over the flat entries at p (each followed by a comma) in the regex engine and
    count them; count the entry that follows too (read by the caller). Rows of leaves are
    containers one level down: taken whole only where that level is within the depth cap."""
    while True:
        m = runs.elems.match(s, p)
        a, b = m.span()  # type: ignore[union-attr]
        if b > a:
            add(lst, _outside_strings(s[a:b]).count(","))
        if rows_fit:
            m = runs.rows.match(s, b)
            a2, b2 = m.span()  # type: ignore[union-attr]
            if b2 > a2:
                add(lst, _outside_strings(s[a2:b2]).count("{"))
                p = b2
                continue
        break
    add(lst, 1)
    return _WS_RX.match(s, b).end()


def _key(s: str, p: int, parent: str, runs: _Runs, scanstring: Any) -> tuple[int, str]:
    """Pass over an object's flat members at p, then read the next member's key: the
    position of its value and the value's path (-1: not JSON)."""
    p = runs.members.match(s, p).end()  # type: ignore[union-attr]
    p = _WS_RX.match(s, p).end()
    m = _STR_RX.match(s, p)
    if m is None:
        return -1, ""
    a, b = m.span()
    key = s[a + 1 : b - 1]
    if "\\" in key:
        key = scanstring(s, a + 1, True)[0]
    p = _WS_RX.match(s, b).end()
    if p >= len(s) or s[p] != ":":
        return -1, ""
    return _WS_RX.match(s, p + 1).end(), f"{parent}.{key}" if parent else key


# -- per-artifact CPU budget --------------------------------------------------------------
#
# A verdict must be a function of (task, artifact) alone, so budgets count the CPU time
# the verification itself spends (the calling thread's, `time.thread_time()`), never the
# wall clock: a busy machine slows a verification down but does not make it spend more
# CPU. Each budget is at least 10x the CPU the largest artifact within the caps measured
# (the replay's `budget_cpu_seconds` rationale, `tbmm.tooling.bounds_bench`), so no legal input
# reaches it; a verification that still does is "no verdict" (status budget_exceeded,
# exit 3), which the harness stores as an error and reruns, never a score. Task data
# loading (a replay's `prepare`) and Lean library builds run before the budget starts.

DEFAULT_BUDGET_S = 60.0  # CPU seconds for reading, replay, gate, scoring and certificate text
# CPU seconds for the Lean kernel check of ONE artifact's certificate (a child process,
# limited by RLIMIT_CPU; a batch gets this times its artifacts). The largest anchors cost
# 5-6.5 s of CPU there (crop planting, heliostat field), see README's Lean figures.
LEAN_CPU_BUDGET_S = 120.0
# Liveness only: the wall-clock cap of one Lean run. Hitting it is "no verdict" as well,
# never a score; it only exists so that a stuck child cannot hold a worker forever.
LEAN_WALL_GUARD_S = 1800.0


class BudgetExceeded(Exception):
    """Verification of one artifact spent its CPU budget: no verdict."""

    def __init__(self, budget_s: float, stage: str) -> None:
        super().__init__(f"verification CPU budget of {budget_s:g} s exceeded ({stage})")
        self.budget_s = budget_s
        self.stage = stage


def cpu_now() -> float:
    """CPU seconds spent so far by the calling thread (a server's concurrent requests do
    not charge each other, and waiting for the machine costs nothing)."""
    return time.thread_time()


@dataclass
class CpuBudget:
    """A cooperative CPU budget of the calling thread: long loops call `check()`."""

    budget_s: float
    start: float = field(default_factory=cpu_now)

    def remaining(self) -> float:
        return self.budget_s - (cpu_now() - self.start)

    def check(self, stage: str = "") -> None:
        if self.remaining() < 0:
            raise BudgetExceeded(self.budget_s, stage or "a replay")

    @property
    def spent(self) -> float:
        return cpu_now() - self.start


_CURRENT: ContextVar[CpuBudget | None] = ContextVar("tbmm_verify_budget", default=None)


@contextlib.contextmanager
def cpu_budget(budget_s: float) -> Iterator[CpuBudget]:
    """Make a CPU budget current for this thread/context: `check_budget()` anywhere below
    sees it. Must be entered and left on the same thread (thread CPU time)."""
    d = CpuBudget(budget_s)
    token = _CURRENT.set(d)
    try:
        yield d
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def uncharged() -> Iterator[None]:
    """Run work that belongs to the task, not to the artifact (loading a replay's data and
    modules: cached after the first artifact), without charging the current budget: the
    first artifact of a process must not pay what later ones get for free."""
    d = _CURRENT.get()
    t0 = cpu_now()
    try:
        yield
    finally:
        if d is not None:
            d.start += cpu_now() - t0


def check_budget(stage: str) -> None:
    """Raise BudgetExceeded if the current budget (if any) is spent. Cheap: call it in loops."""
    d = _CURRENT.get()
    if d is not None:
        d.check(stage)


def remaining_budget() -> float | None:
    d = _CURRENT.get()
    return d.remaining() if d is not None else None


def budget_exceeded(stage: str) -> BudgetExceeded:
    """The error for `stage` running out of the current budget."""
    d = _CURRENT.get()
    return BudgetExceeded(d.budget_s if d is not None else 0.0, stage)
