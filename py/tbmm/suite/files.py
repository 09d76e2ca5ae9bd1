"""File helpers shared by the generators: checksums and atomic, change-only writes."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def user_cache_dir(name: str) -> Path:
    """A tbmm cache folder: $TBMM_CACHE_DIR/NAME, else $XDG_CACHE_HOME/tbmm/NAME, else
    ~/.cache/tbmm/NAME (one rule for every cache, so one variable moves them all)."""
    base = os.environ.get("TBMM_CACHE_DIR")
    if base:
        return Path(base) / name
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "tbmm" / name


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_text_if_changed(path: Path, text: str) -> None:
    """Write atomically (temp + rename), and not at all when the content is already there,
    so a rebuild leaves unchanged generated files (and their mtimes) alone."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
