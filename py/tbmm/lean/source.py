"""Just enough Lean lexing for the driver and the audit: comments, imports, declarations.

Scanning raw text would flag the word `sorry` in a doc comment and miss nothing that
matters, so both the import reader and the forbidden-token scan first blank out comments
and string literals (keeping every newline and column, so positions stay true).

Generated certificates are large (hundreds of kilobytes, one message per theorem from
`#print axioms`), so a file is lexed once into a `SourceIndex` and every message is then
attributed to its declaration by bisection, never by re-scanning the text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_OPEN_RE = re.compile(r'--|/-|"')
_BLOCK_RE = re.compile(r"/-|-/")
_STRING_END_RE = re.compile(r'\\.|"', re.S)
_NOT_NEWLINE_RE = re.compile(r"[^\n]")


def _spaces(s: str) -> str:
    return _NOT_NEWLINE_RE.sub(" ", s)


def blank_comments(text: str) -> str:
    """`text` with comments (`--`, nested `/- -/`) and string literals replaced by spaces."""
    out: list[str] = []
    i, n = 0, len(text)
    while (m := _OPEN_RE.search(text, i)) is not None:
        start = m.start()
        out.append(text[i:start])
        tok = m.group()
        if tok == "--":
            end = text.find("\n", start)
            end = n if end < 0 else end
        elif tok == "/-":
            depth, end = 1, start + 2
            while depth and (b := _BLOCK_RE.search(text, end)) is not None:
                depth += 1 if b.group() == "/-" else -1
                end = b.end()
            if depth:
                end = n  # an unterminated comment runs to the end of the file
        else:
            end = n
            for s in _STRING_END_RE.finditer(text, start + 1):
                if s.group() == '"':
                    end = s.end()
                    break
        out.append(_spaces(text[start:end]))
        i = end
    out.append(text[i:])
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
_CTOR_RE = re.compile(r"^\s*\|\s*(?P<name>[A-Za-z_][A-Za-z0-9_']*)")
_STRUCT_MK_RE = re.compile(r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_']*)\s*::")


@dataclass(frozen=True)
class Decl:
    """A declaration found in a source file (full name with its enclosing namespaces)."""

    name: str
    kind: str
    line: int  # 1-based


@dataclass
class SourceIndex:
    """A Lean file lexed once: its declarations and constructors, in source order."""

    decls: list[Decl] = field(default_factory=list)
    constructors: list[str] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list, repr=False)

    def decl_at(self, line: int) -> Decl | None:
        """The declaration whose source contains `line` (the last one starting at or before it).

        A declaration starts at its doc comment: Lean reports some errors (a failed `rfl`)
        at the start of the doc comment, which must not be blamed on the declaration before.
        """
        k = bisect.bisect_right(self._starts, line)
        return self.decls[k - 1] if k else None

    def names(self, *kinds: str) -> list[str]:
        return [d.name for d in self.decls if not kinds or d.kind in kinds]


def index(text: str) -> SourceIndex:
    """Declarations (namespaces resolved) and constructors of a Lean file, in one pass."""
    scopes: list[str | None] = []  # a namespace's name, or None for a section
    idx = SourceIndex()
    current: Decl | None = None  # the inductive type or structure whose constructors follow
    raw = text.splitlines()
    lines = blank_comments(text).splitlines()
    for lineno, line in enumerate(lines, start=1):
        if m := _NS_RE.match(line):
            current = None
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
            d = Decl(full, m["kind"], lineno)
            idx.decls.append(d)
            idx._starts.append(_doc_start(raw, lineno))
            current = d if d.kind in ("inductive", "structure", "class") else None
            if d.kind in ("structure", "class"):
                custom = _STRUCT_MK_RE.match(lines[lineno]) if lineno < len(lines) else None
                idx.constructors.append(f"{full}.{custom['name'] if custom else 'mk'}")
            continue
        if current is not None and current.kind == "inductive" and (c := _CTOR_RE.match(line)):
            idx.constructors.append(f"{current.name}.{c['name']}")
    return idx


def declarations(text: str) -> list[Decl]:
    """The named declarations of a Lean file, with namespaces resolved."""
    return index(text).decls


def decl_at(text: str, line: int) -> Decl | None:
    """The declaration whose source contains `line` (the last one starting at or before it)."""
    return index(text).decl_at(line)


def _doc_start(lines: list[str], decl_line: int) -> int:
    """The 1-based line where the doc comment right above `decl_line` opens (or `decl_line`)."""
    i = decl_line - 2  # 0-based index of the line above the declaration
    if i < 0 or not lines[i].rstrip().endswith("-/"):
        return decl_line
    while i >= 0 and "/-" not in lines[i]:  # up to where this comment opens, no further
        i -= 1
    return i + 1 if i >= 0 and "/--" in lines[i] else decl_line
