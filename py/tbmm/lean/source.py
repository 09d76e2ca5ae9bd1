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

_NOT_NEWLINE_RE = re.compile(r"[^\n]")
_HEX = frozenset("0123456789abcdefABCDEF")


def _spaces(s: str) -> str:
    return _NOT_NEWLINE_RE.sub(" ", s)


def _letter_like(c: str) -> bool:
    """Lean's `isLetterLike`, with the Latin ranges later versions add (a superset is
    safe: a character Lean does not accept in a name is a parse error, never code)."""
    v = ord(c)
    return (
        (0x3B1 <= v <= 0x3C9 and v != 0x3BB)
        or (0x391 <= v <= 0x3A9 and v not in (0x3A0, 0x3A3))
        or 0x3CA <= v <= 0x3FB
        or 0x1F00 <= v <= 0x1FFE
        or 0x2100 <= v <= 0x214F
        or 0x1D49C <= v <= 0x1D59F
        or (0xC0 <= v <= 0xFF and v not in (0xD7, 0xF7))
        or 0x100 <= v <= 0x17F
    )


def _id_first(c: str) -> bool:
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or c == "_" or _letter_like(c)


def _id_rest(c: str) -> bool:
    v = ord(c)
    return (
        _id_first(c)
        or "0" <= c <= "9"
        or c in "'!?"
        or 0x2080 <= v <= 0x209C
        or 0x1D62 <= v <= 0x1D6A
        or v == 0x2C7C
    )


def _comment_end(text: str, i: int) -> int:
    """End of a block comment whose body starts at `i` (Lean's `finishCommentBlock`: `/-`
    nests, `-/` closes, each two-character mark consumed whole, left to right)."""
    n, depth = len(text), 1
    while i < n:
        two = text[i : i + 2]
        if two == "-/":
            depth -= 1
            i += 2
            if not depth:
                return i
        elif two == "/-":
            depth += 1
            i += 2
        else:
            i += 1
    return n  # unterminated: Lean fails on it; nothing after it is code either way


def _string_end(text: str, i: int) -> int:
    """End of a string literal whose body starts at `i`: a backslash always escapes the
    character after it (`\\`, `\"`, a line-continuation newline, `x`/`u` + hex digits)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        else:
            i += 1
    return n


def _raw_string_end(text: str, i: int) -> int | None:
    """End of a raw string `r#…#"…"#…#` starting at `i` (the `r`), or None if none starts."""
    j = i + 1
    while j < len(text) and text[j] == "#":
        j += 1
    if j >= len(text) or text[j] != '"':
        return None
    close = '"' + "#" * (j - i - 1)
    k = text.find(close, j + 1)
    return len(text) if k < 0 else k + len(close)


def _char_end(text: str, i: int) -> int | None:
    """End of a character literal opening at `i` (`'a'`, `'"'`, `'\\''`, `'\\x41'`), or
    None when the text there is not one (Lean would reject it)."""
    j = i + 1
    if j >= len(text):
        return None
    if text[j] == "\\":
        esc = text[j + 1 : j + 2]
        j += 2 + {"x": 2, "u": 4}.get(esc, 0)
    else:
        j += 1
    return j + 1 if text[j : j + 1] == "'" else None


def _ident_end(text: str, i: int) -> int:
    """End of a (possibly dotted, possibly `«…»`-escaped) identifier starting at `i`."""
    n = len(text)
    while True:
        if text[i] == "«":
            k = text.find("»", i + 1)
            i = n if k < 0 else k + 1
        else:
            i += 1
            while i < n and _id_rest(text[i]):
                i += 1
        if i + 1 < n and text[i] == "." and (_id_first(text[i + 1]) or text[i + 1] == "«"):
            i += 1
            continue
        return i


def blank_comments(text: str) -> str:
    """`text` with comments and string and character literals replaced by spaces.

    A small lexer following Lean's own (`whitespace`, `tokenFn`): line comments, nested
    block comments (a doc comment `/--`/`/-!` opens with three characters, so `/--/`
    does not close), string literals with escapes, raw strings `r"…"`/`r#"…"#` (no
    escapes), character literals (`'"'`), and identifiers — whole, so `x'` or `a.r`
    cannot open a literal, and `«…»`-escaped, whose guillemets are blanked (their
    content is code: `«sorry»` still reads `sorry`). Newlines and columns are kept.
    """
    out = list(text)
    n, i = len(text), 0

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        end: int | None = None
        if c == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif c == "/" and text.startswith("/-", i):
            end = _comment_end(text, i + (3 if text[i + 2 : i + 3] in ("-", "!") else 2))
        elif c == '"':
            end = _string_end(text, i + 1)
        elif c == "r" and (end := _raw_string_end(text, i)) is not None:
            pass
        elif c == "'" and text[i + 1 : i + 2] != "'":
            end = _char_end(text, i)
        elif _id_first(c) or c == "«" or (c == "`" and i + 1 < n and text[i + 1] == "«"):
            start = i + 1 if c == "`" else i
            j = _ident_end(text, start)
            for k in range(start, j):
                if text[k] in "«»":
                    out[k] = " "
            i = j
            continue
        elif "0" <= c <= "9":
            while i < n and "0" <= text[i] <= "9":
                i += 1
            continue
        if end is None:
            i += 1
            continue
        blank(i, end)
        i = end
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
# A structure's field line: `  val : Nat`, `  x y : Nat := 0`, `  (x : Nat)`, `  {x : Nat}`.
_FIELD_RE = re.compile(
    r"^\s+[({\[]?\s*(?P<names>[A-Za-z_][\w'!?]*(?:\s+[A-Za-z_][\w'!?]*)*)\s*:(?!:)"
)


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
    fields: list[str] = field(default_factory=list)  # structure projections, `S.field`
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
                nxt = next((s for s in lines[lineno:] if s.strip()), "")
                custom = _STRUCT_MK_RE.match(nxt)
                idx.constructors.append(f"{full}.{custom['name'] if custom else 'mk'}")
            continue
        if current is not None and current.kind == "inductive" and (c := _CTOR_RE.match(line)):
            idx.constructors.append(f"{current.name}.{c['name']}")
        elif current is not None and current.kind != "inductive" and line.strip():
            if not line[:1].isspace():
                current = None  # the structure's body ended
            elif f := _FIELD_RE.match(line):
                idx.fields += [f"{current.name}.{x}" for x in f["names"].split()]
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
