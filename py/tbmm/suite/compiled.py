"""Validated task files kept as plain data, so that a short command skips pydantic.

Why: importing pydantic and building the task models costs about 0.2 s of CPU, more than
the whole verdict on a small artifact, and `tbmm score` / `tbmm gate` would pay it on
every call. In lite mode (`tbmm.suite.tasks.LITE`, set by those commands) a task file is
validated through its pydantic model once; the validated fields are stored as JSON under
the user's cache directory, keyed by the file's bytes and the model code; later processes
rebuild plain objects with the same attributes and methods (`tbmm.core.specs`) from it.

A cache entry is data only (JSON, never pickle). Its key covers the file's bytes and the
source of `tbmm.suite.models`, `tbmm.core.specs` and this module, so an edited task file or model
reads as a miss and is validated again; an unreadable or malformed entry is a miss too.
Where the directory cannot be written, every load validates (correct, only slower).
"""

from __future__ import annotations

import hashlib
import json
import os
from enum import Enum
from pathlib import Path
from typing import Any

from tbmm.core.forms import Form
from tbmm.core.rules import Direction, Domain
from tbmm.core.specs import METHODS
from tbmm.suite.files import user_cache_dir

FORMAT = "tbmm-compiled/1"
ENUMS: dict[str, type[Enum]] = {e.__name__: e for e in (Form, Direction, Domain)}
_PKG = Path(__file__).resolve().parents[1]  # py/tbmm


def cache_dir() -> Path:
    """$TBMM_CACHE_DIR, else $XDG_CACHE_HOME/tbmm, else ~/.cache/tbmm; entries in compiled/."""
    return user_cache_dir("compiled")


_CODE_DIGEST: bytes | None = None


def _code_digest() -> bytes:
    """sha256 over the code that decides what a validated file holds."""
    global _CODE_DIGEST
    if _CODE_DIGEST is None:
        h = hashlib.sha256(FORMAT.encode())
        for name in (
            "suite/models.py", "core/specs.py", "suite/compiled.py", "core/forms.py",
            "core/rules.py",
        ):
            h.update(name.encode() + b"\0" + (_PKG / name).read_bytes() + b"\0")
        _CODE_DIGEST = h.digest()
    return _CODE_DIGEST


def key(model: str, data: bytes) -> str:
    h = hashlib.sha256(_code_digest())
    h.update(model.encode() + b"\0" + data)
    return h.hexdigest()


class Lite:
    """A validated model's fields as attributes (read-only), with its `tbmm.core.specs` methods."""

    _model = "Lite"

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._model} is frozen (a validated task file)")

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{self._model}({body})"


_CLASSES: dict[str, type[Lite]] = {}


def lite_class(model: str) -> type[Lite]:
    cls = _CLASSES.get(model)
    if cls is None:
        bases = (Lite, METHODS[model]) if model in METHODS else (Lite,)
        cls = type(model, bases, {"_model": model, "__slots__": ()})
        _CLASSES[model] = cls
    return cls


def dump(obj: Any) -> Any:
    """A validated pydantic model tree as tagged plain JSON data."""
    fields = getattr(type(obj), "model_fields", None)
    if fields is not None:
        return {"$m": type(obj).__name__, "f": {k: dump(getattr(obj, k)) for k in fields}}
    if isinstance(obj, Enum):
        name = type(obj).__name__
        if ENUMS.get(name) is not type(obj):
            raise TypeError(f"enum {name} is not registered in tbmm.suite.compiled.ENUMS")
        return {"$e": name, "v": obj.value}
    if isinstance(obj, tuple):
        return {"$t": [dump(v) for v in obj]}
    if isinstance(obj, list):
        return [dump(v) for v in obj]
    if isinstance(obj, dict):
        return {"$d": {str(k): dump(v) for k, v in obj.items()}}
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot keep {type(obj).__name__} in a compiled task file")


def build(data: Any) -> Any:
    """`dump`'s inverse: plain objects (`Lite`) in place of the pydantic models."""
    if isinstance(data, list):
        return [build(v) for v in data]
    if isinstance(data, dict):
        if "$m" in data:
            return lite_class(data["$m"])({k: build(v) for k, v in data["f"].items()})
        if "$e" in data:
            return ENUMS[data["$e"]](data["v"])
        if "$t" in data:
            return tuple(build(v) for v in data["$t"])
        return {k: build(v) for k, v in data["$d"].items()}
    return data


def get(model: str, data: bytes) -> Any | None:
    """The plain copy of a validated file with these bytes, or None (a miss)."""
    path = cache_dir() / f"{key(model, data)}.json"
    try:
        entry = json.loads(path.read_bytes())
        if entry.get("format") != FORMAT or entry.get("model") != model:
            return None
        return build(entry["data"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def put(model: str, data: bytes, obj: Any) -> Any:
    """Store a validated model (best effort) and return its plain copy."""
    plain = dump(obj)
    folder = cache_dir()
    path = folder / f"{key(model, data)}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "model": model, "data": plain}))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs speed
    return build(plain)


def validated(model: str, fields: dict[str, Any]) -> Any:
    """A model built in code (not read from a file), validated once like a file's."""
    raw = json.dumps(fields, sort_keys=True).encode()
    hit = get(model, raw)
    if hit is not None:
        return hit
    from tbmm.suite import models

    return put(model, raw, getattr(models, model).model_validate(fields))
