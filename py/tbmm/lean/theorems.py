"""The theorems proved for all inputs (`TBMM/Theorems.lean`), as data for the audit.

A certificate's obligations are ground computations about one artifact; the theorems
of `TBMM.Theorems` quantify over every input of the scoring rules (reward in [0, 1],
one-sidedness, monotonicity, the gate's zeroing, ...). The audit reports them apart
from the obligations: `theorem_report` pairs each theorem's statement, read from the
source, with its `#print axioms` result, so `tbmm lean audit --json` can show what is
proved and that it rests on no axiom.

Hook for the audit (`tbmm.lean.audit`): the theorems are library declarations, so
`core_declarations` already sends them to `#print axioms`; after that,
``theorem_report(list_theorems(root), axioms)`` is the value for a ``"theorems"`` key,
and `theorems_ok` of it belongs in the audit's verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tbmm.lean.build import module_file, project_root
from tbmm.lean.source import blank_comments, declarations

THEOREMS_MODULE = "TBMM.Theorems"


@dataclass(frozen=True)
class TheoremInfo:
    """One theorem of `TBMM.Theorems`: full name, statement and doc comment."""

    name: str
    statement: str  # binders and type, whitespace-normalised: "(x : Rat) : Eq (…) Bool.true"
    doc: str
    line: int  # 1-based, in TBMM/Theorems.lean

    def to_json(self, axioms: Sequence[str] | None = None) -> dict[str, object]:
        """`axioms` None: not audited (no `#print axioms` report for this theorem)."""
        return {
            "name": self.name,
            "statement": self.statement,
            "doc": self.doc,
            "line": self.line,
            "audited": axioms is not None,
            "axioms": list(axioms) if axioms is not None else None,
        }


def list_theorems(root: Path | None = None) -> list[TheoremInfo]:
    """The theorems of `TBMM/Theorems.lean`, in source order."""
    root = (root or project_root()).resolve()
    text = module_file(root, THEOREMS_MODULE).read_text(encoding="utf-8")
    return parse_theorems(text)


def parse_theorems(text: str) -> list[TheoremInfo]:
    """The `theorem` declarations of a Lean source, with statement and doc comment."""
    code = blank_comments(text)
    offsets = _line_offsets(code)
    found: list[TheoremInfo] = []
    for d in declarations(text):
        if d.kind != "theorem":
            continue
        start = offsets[d.line - 1]
        head = re.compile(r"\s*theorem\s+\S+").match(code, start)
        if head is None:  # modifiers before `theorem`: skip up to the keyword
            head = re.compile(r".*?\btheorem\s+\S+").match(code, start)
        assert head is not None, d
        stmt = _statement(code, head.end())
        found.append(TheoremInfo(d.name, stmt, _doc_before(text, start), d.line))
    return found


def theorem_report(
    theorems: Sequence[TheoremInfo], axioms: Mapping[str, Sequence[str]]
) -> list[dict[str, object]]:
    """Each theorem with its `#print axioms` result (from `tbmm.lean.audit.print_axioms`)."""
    return [t.to_json(axioms.get(t.name)) for t in theorems]


def theorems_ok(report: Sequence[Mapping[str, object]]) -> bool:
    """Every theorem was audited and depends on no axiom (and there is at least one)."""
    return bool(report) and all(r["audited"] and not r["axioms"] for r in report)


def _line_offsets(text: str) -> list[int]:
    offsets = [0]
    for i, c in enumerate(text):
        if c == "\n":
            offsets.append(i + 1)
    return offsets


def _statement(code: str, pos: int) -> str:
    """From after the theorem's name to its top-level `:=` (brackets balanced)."""
    depth = 0
    i = pos
    while i < len(code):
        c = code[i]
        if c in "([{⟨":
            depth += 1
        elif c in ")]}⟩":
            depth -= 1
        elif depth == 0 and code.startswith(":=", i):
            return " ".join(code[pos:i].split())
        i += 1
    raise ValueError(f"no `:=` after the theorem at offset {pos}")


def _doc_before(text: str, start: int) -> str:
    """The doc comment ending right before offset `start`, on one line ('' if none)."""
    prefix = text[:start].rstrip()
    if not prefix.endswith("-/"):
        return ""
    opening = prefix.rfind("/--")
    return " ".join(prefix[opening + 3 : -2].split()) if opening >= 0 else ""
