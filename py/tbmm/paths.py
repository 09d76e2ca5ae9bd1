"""Artifact paths: ``a.b[2].c`` to reach a leaf, ``[*]`` to expand over every list entry."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+|\*)\]|\.")


class PathError(KeyError):
    """The path does not resolve in this document (the message says where it stopped)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "path error"


@lru_cache(maxsize=4096)
def tokens(path: str) -> tuple[str | int, ...]:
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            raise PathError(f"bad path syntax at {path[pos:]!r} in {path!r}")
        if m.group(1):
            out.append(m.group(1))
        elif m.group(2):
            out.append(-1 if m.group(2) == "*" else int(m.group(2)))
        pos = m.end()
    return tuple(out)


def resolve(doc: Any, path: str) -> Any:
    """The node at `path` (no wildcards); PathError names the first missing step."""
    node = doc
    for tok in tokens(path):
        if type(tok) is str:
            if (type(node) is not dict and not isinstance(node, dict)) or tok not in node:
                raise _error(doc, path)
            node = node[tok]
        else:
            if tok < 0 or (type(node) is not list and not isinstance(node, list)) or tok >= len(node):
                raise _error(doc, path)
            node = node[tok]
    return node


def _error(doc: Any, path: str) -> PathError:
    """The PathError for the first step of `path` that `doc` lacks (the slow path)."""
    node, walked = doc, ""
    for tok in tokens(path):
        if isinstance(tok, str):
            if not isinstance(node, dict) or tok not in node:
                return PathError(f"no key {tok!r} at {walked or '<root>'}")
            node = node[tok]
            walked = f"{walked}.{tok}" if walked else tok
        else:
            if tok < 0:
                return PathError(f"wildcard in {path!r}: use expand()")
            if not isinstance(node, list) or tok >= len(node):
                return PathError(f"no index [{tok}] at {walked or '<root>'}")
            node = node[tok]
            walked = f"{walked}[{tok}]"
    return PathError(f"cannot resolve {path!r}")


def expand(doc: Any, path: str) -> list[str]:
    """Concrete paths for a path that may contain ``[*]`` (only entries that exist)."""
    results = [""]
    for tok in tokens(path):
        nxt: list[str] = []
        for prefix in results:
            if isinstance(tok, str):
                nxt.append(f"{prefix}.{tok}" if prefix else tok)
            elif tok >= 0:
                nxt.append(f"{prefix}[{tok}]")
            else:
                try:
                    node = resolve(doc, prefix) if prefix else doc
                except PathError:
                    node = None
                if isinstance(node, list):
                    nxt.extend(f"{prefix}[{i}]" for i in range(len(node)))
        results = nxt
    return results


def set_path(doc: dict[str, Any], path: str, value: Any) -> None:
    """Create intermediate objects/lists as needed and put `value` at `path` (no wildcards)."""
    toks = tokens(path)
    node: Any = doc
    for i, tok in enumerate(toks):
        last = i == len(toks) - 1
        nxt_is_index = not last and isinstance(toks[i + 1], int)
        empty: Any = [] if nxt_is_index else {}
        if isinstance(tok, str):
            if last:
                node[tok] = value
            else:
                node = node.setdefault(tok, empty)
        else:
            while len(node) <= tok:
                node.append(None)
            if last:
                node[tok] = value
            else:
                if node[tok] is None:
                    node[tok] = empty
                node = node[tok]
