"""Where the task suite and the Lean sources live: a source checkout, or the wheel's data.

`pip install tbmm` ships the task folders and the Lean library inside the package
(`tbmm/_data/tasks`, `tbmm/_data/lean`), so every command works from any directory; in a
source checkout the checkout's own `tasks/` and Lean project are used (they are what the
build regenerates). `TBMM_TASKS_ROOT` points at another suite folder.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # py/tbmm (this file is in suite/)
PACKAGE_DATA = PACKAGE_DIR / "_data"
_CHECKOUT = PACKAGE_DIR.parents[1]  # py/tbmm -> the repository, in a source checkout


def checkout_root() -> Path | None:
    """The source checkout this package runs from, if it does (None when installed)."""
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "tasks").is_dir():
        return _CHECKOUT
    return None


def tasks_root() -> Path:
    """The suite folder: $TBMM_TASKS_ROOT, else the checkout's tasks/, else the wheel's."""
    env = os.environ.get("TBMM_TASKS_ROOT")
    if env:
        return Path(env)
    root = checkout_root()
    return root / "tasks" if root is not None else PACKAGE_DATA / "tasks"


def lean_root() -> Path | None:
    """The Lean project (lakefile.lean + TBMM/) shipped with this package, if any."""
    root = checkout_root()
    for cand in ([root] if root is not None else []) + [PACKAGE_DATA / "lean"]:
        if (cand / "lakefile.lean").is_file() and (cand / "TBMM").is_dir():
            return cand
    return None


def cache_dir() -> Path:
    """Per-user cache ($TBMM_CACHE, else $XDG_CACHE_HOME/tbmm, else ~/.cache/tbmm)."""
    env = os.environ.get("TBMM_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "tbmm"
