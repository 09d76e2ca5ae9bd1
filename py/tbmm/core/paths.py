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
            if (
                tok < 0
                or (type(node) is not list and not isinstance(node, list))
                or tok >= len(node)
            ):
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


MISSING = object()
"""The node of an expanded path that does not exist in the document."""


def expand_nodes(doc: Any, path: str) -> list[tuple[str, Any]]:
    """(concrete path, node or MISSING) for a path that may contain ``[*]``, in one walk.

    A wildcard expands over the entries that exist; any other step is kept even when the
    document lacks it (its node is then MISSING), as `expand` promises."""
    results: list[tuple[str, Any]] = [("", doc)]
    for tok in tokens(path):
        nxt: list[tuple[str, Any]] = []
        if type(tok) is str:
            for prefix, node in results:
                child = node[tok] if isinstance(node, dict) and tok in node else MISSING
                nxt.append((f"{prefix}.{tok}" if prefix else tok, child))
        elif tok >= 0:
            for prefix, node in results:
                child = node[tok] if isinstance(node, list) and tok < len(node) else MISSING
                nxt.append((f"{prefix}[{tok}]", child))
        else:
            for prefix, node in results:
                if isinstance(node, list):
                    nxt.extend((f"{prefix}[{i}]", x) for i, x in enumerate(node))
        results = nxt
    return results


def expand(doc: Any, path: str) -> list[str]:
    """Concrete paths for a path that may contain ``[*]`` (only entries that exist)."""
    return [p for p, _ in expand_nodes(doc, path)]


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
