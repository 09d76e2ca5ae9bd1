"""Just enough Lean lexing for the driver and the audit: comments, imports, declarations.

Scanning raw text would flag the word `sorry` in a doc comment and miss nothing that
matters, so both the import reader and the forbidden-token scan first blank out comments
and string literals (keeping every newline and column, so positions stay true).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


def blank_comments(text: str) -> str:
    """`text` with comments (`--`, nested `/- -/`) and string literals replaced by spaces."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/-", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/-", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("-/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def read_imports(text: str) -> list[str]:
    """Module names imported by a Lean file's header (`prelude`, then `import` lines)."""
    imports: list[str] = []
    for line in blank_comments(text).splitlines():
        words = line.split()
        if not words or words == ["prelude"]:
            continue
        if words[0] != "import":
            break
        imports.extend(w for w in words[1:] if w not in ("runtime", "all", "public", "meta"))
    return imports


_DECL_RE = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)?(?:(?:private|protected|noncomputable|partial|unsafe)\s+)*"
    r"(?P<kind>theorem|lemma|def|abbrev|instance|structure|inductive|class|axiom|opaque)"
    r"\s+(?P<name>[^\s:(\[{]+)"
)
_NS_RE = re.compile(r"^\s*(?:noncomputable\s+)?(?P<kw>namespace|section|end)\b\s*(?P<name>\S*)")


@dataclass(frozen=True)
class Decl:
    """A declaration found in a source file (full name with its enclosing namespaces)."""

    name: str
    kind: str
    line: int  # 1-based


def declarations(text: str) -> list[Decl]:
    """The named declarations of a Lean file, with namespaces resolved."""
    scopes: list[str | None] = []  # a namespace's name, or None for a section
    found: list[Decl] = []
    for lineno, line in enumerate(blank_comments(text).splitlines(), start=1):
        if m := _NS_RE.match(line):
            if m["kw"] == "namespace":
                scopes.append(m["name"])
            elif m["kw"] == "section":
                scopes.append(None)
            elif scopes:
                scopes.pop()
            continue
        if (m := _DECL_RE.match(line)) and not m["name"].startswith("("):
            prefix = ".".join(s for s in scopes if s)
            name = m["name"]
            if name.startswith("_root_."):
                full = name.removeprefix("_root_.")
            else:
                full = f"{prefix}.{name}" if prefix else name
            found.append(Decl(full, m["kind"], lineno))
    return found


def decl_at(text: str, line: int) -> Decl | None:
    """The declaration whose source contains `line` (the last one starting at or before it).

    A declaration starts at its doc comment: Lean reports some errors (a failed `rfl`) at
    the start of the doc comment, which must not be blamed on the declaration before.
    """
    lines = text.splitlines()
    best = None
    for d in declarations(text):
        if _doc_start(lines, d.line) <= line:
            best = d
        else:
            break
    return best


def _doc_start(lines: list[str], decl_line: int) -> int:
    """The 1-based line where the doc comment right above `decl_line` opens (or `decl_line`)."""
    i = decl_line - 2  # 0-based index of the line above the declaration
    if i < 0 or not lines[i].rstrip().endswith("-/"):
        return decl_line
    while i >= 0 and "/--" not in lines[i]:
        i -= 1
    return i + 1 if i >= 0 else decl_line
