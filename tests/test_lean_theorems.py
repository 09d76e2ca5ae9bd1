"""The theorems for all inputs (`TBMM/Theorems.lean`): built with the bundled runtime,
stated as specified, free of axioms, and rejected by Lean when made false.

The statements below are the specification of issue 13's item 4; a theorem that is
weakened, renamed or dropped fails `test_statements_are_the_specification`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tbmm.lean.audit import core_declarations, print_axioms
from tbmm.lean.build import LIBRARY, build, check_module, copy_project, project_root
from tbmm.lean.source import blank_comments, decl_at, declarations
from tbmm.lean.theorems import (
    THEOREMS_MODULE,
    list_theorems,
    parse_theorems,
    theorem_report,
    theorems_ok,
)

REPO = project_root(Path(__file__).resolve().parent)
THEOREMS = REPO / "TBMM" / "Theorems.lean"

POS_BAND = "(hb : Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true)"
SPEC: dict[str, str] = {
    # reward and score in [0, 1], for every direction, domain, value, anchor and band
    "Reward.reward_nonneg": "(dir : Direction) (x anchor band : Rat) : "
    "Eq (Rat.le Rat.zero (reward dir x anchor band)) Bool.true",
    "Reward.reward_le_one": "(dir : Direction) (x anchor band : Rat) : "
    "Eq (Rat.le (reward dir x anchor band) Rat.one) Bool.true",
    "Reward.score_nonneg": "(dir : Direction) (dom : Domain) (x : Option Rat) (anchor band : Rat) : "
    "Eq (Rat.le Rat.zero (score dir dom x anchor band)) Bool.true",
    "Reward.score_le_one": "(dir : Direction) (dom : Domain) (x : Option Rat) (anchor band : Rat) : "
    "Eq (Rat.le (score dir dom x anchor band) Rat.one) Bool.true",
    # exactValue in {0, 1}
    "Reward.reward_exact_zero_or_one": "(x anchor band : Rat) : "
    "Or (Eq (reward Direction.exactValue x anchor band) Rat.zero) "
    "(Eq (reward Direction.exactValue x anchor band) Rat.one)",
    # the degenerate-band rule never shrinks a band
    "Reward.effectiveBand_ge": "(anchor band : Rat) : "
    "Eq (Rat.le band (effectiveBand anchor band)) Bool.true",
    "Reward.effectiveBand_pos": "{anchor band : Rat} (h : Eq (Rat.lt Rat.zero band) Bool.true) : "
    "Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true",
    "Reward.effectiveBand_pos_of_anchor": "{anchor band : Rat} "
    "(h : Eq (Rat.beq anchor Rat.zero) Bool.false) : "
    "Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true",
    # one-sidedness and monotonicity, under a positive effective band
    "Reward.reward_higher_one_sided": f"{{x anchor band : Rat}} {POS_BAND} "
    "(h : Eq (Rat.le anchor x) Bool.true) : "
    "Eq (reward Direction.higherIsBetter x anchor band) Rat.one",
    "Reward.reward_lower_one_sided": f"{{x anchor band : Rat}} {POS_BAND} "
    "(h : Eq (Rat.le x anchor) Bool.true) : "
    "Eq (reward Direction.lowerIsBetter x anchor band) Rat.one",
    "Reward.reward_higher_mono": f"{{x y anchor band : Rat}} {POS_BAND} "
    "(h : Eq (Rat.le x y) Bool.true) : Eq (Rat.le (reward Direction.higherIsBetter x anchor band) "
    "(reward Direction.higherIsBetter y anchor band)) Bool.true",
    "Reward.reward_lower_anti": f"{{x y anchor band : Rat}} {POS_BAND} "
    "(h : Eq (Rat.le x y) Bool.true) : Eq (Rat.le (reward Direction.lowerIsBetter y anchor band) "
    "(reward Direction.lowerIsBetter x anchor band)) Bool.true",
    # O-Eval in [0, 1], Robust BO-Eval in [-1, 1]
    "Reward.oEval_nonneg": "(raw oracle : Rat) : Eq (Rat.le Rat.zero (oEval raw oracle)) Bool.true",
    "Reward.oEval_le_one": "(raw oracle : Rat) : Eq (Rat.le (oEval raw oracle) Rat.one) Bool.true",
    "Reward.robustBo_ge_neg_one": "(raw oracle baseline : Rat) : "
    "Eq (Rat.le (Rat.negFrac 1 1) (robustBo raw oracle baseline)) Bool.true",
    "Reward.robustBo_le_one": "(raw oracle baseline : Rat) : "
    "Eq (Rat.le (robustBo raw oracle baseline) Rat.one) Bool.true",
    # a failed gate: O-Eval 0 and Robust BO-Eval -1
    "Reward.gatedOEval_infeasible": "(raw oracle : Rat) : "
    "Eq (gatedOEval Bool.false raw oracle) Rat.zero",
    "Reward.gatedRobustBo_infeasible": "(raw oracle baseline : Rat) : "
    "Eq (gatedRobustBo Bool.false raw oracle baseline) (Rat.negFrac 1 1)",
    "Reward.gatedOEval_nonneg": "(feasible : Bool) (raw oracle : Rat) : "
    "Eq (Rat.le Rat.zero (gatedOEval feasible raw oracle)) Bool.true",
    "Reward.gatedOEval_le_one": "(feasible : Bool) (raw oracle : Rat) : "
    "Eq (Rat.le (gatedOEval feasible raw oracle) Rat.one) Bool.true",
    # why the band hypothesis: without it both properties fail (ground facts)
    "Reward.one_sided_needs_positive_band": ": "
    "Eq (reward Direction.higherIsBetter (Rat.frac 1 1) Rat.zero Rat.zero) Rat.zero",
    "Reward.mono_needs_positive_band": ": "
    "Eq (Rat.le (reward Direction.higherIsBetter Rat.zero Rat.zero Rat.zero) "
    "(reward Direction.higherIsBetter (Rat.frac 1 1) Rat.zero Rat.zero)) Bool.false",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with the library (theorems included) built from scratch."""
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    res = build(root, certs=False)
    assert res.ok, res.failure and res.failure.summary()
    assert THEOREMS_MODULE in res.built
    return root


def test_statements_are_the_specification() -> None:
    found = {t.name: t.statement for t in list_theorems(REPO)}
    assert found == SPEC


def test_theorems_module_declares_only_theorems() -> None:
    """A local `def reward …` could make an unchanged statement mean something else."""
    text = THEOREMS.read_text(encoding="utf-8")
    kinds = {d.kind for d in declarations(text)}
    assert kinds == {"theorem"}
    code = blank_comments(text)
    assert re.findall(r"^\s*(open|export|variable|local|attribute|@\[)", code, re.M) == []
    assert re.findall(r"\bnamespace\s+(\S+)", code) == ["Reward"]


def test_statements_use_only_library_notions() -> None:
    """The elaborator shim (`HAdd`, `Add`, see TBMM.Lemmas.Logic) appears in no statement."""
    for t in list_theorems(REPO):
        assert not re.search(r"\b(HAdd|Add|instHAdd|instAddNat|sorry)\b", t.statement), t.name


@pytest.mark.slow
def test_theorems_have_no_axioms(built: Path) -> None:
    names = [t.name for t in list_theorems(built)]
    axioms, errors = print_axioms(built, names, [LIBRARY])
    assert errors == []
    report = theorem_report(list_theorems(built), axioms)
    assert [r["name"] for r in report] == list(SPEC)
    assert all(r["audited"] and r["axioms"] == [] for r in report)
    assert theorems_ok(report)


@pytest.mark.slow
def test_lemma_library_has_no_axioms(built: Path) -> None:
    lemmas = [d for d in core_declarations(built) if not d.startswith("Reward.")]
    assert any(d.startswith("IExpr.") for d in lemmas)  # the library was really scanned
    axioms, errors = print_axioms(built, lemmas, [LIBRARY])
    assert errors == []
    assert {d: a for d, a in axioms.items() if a} == {}


@pytest.mark.slow
def test_report_flags_unaudited_and_axiom_theorems(built: Path, tmp_path: Path) -> None:
    """The audit hook fails a theorem that rests on an axiom or was never audited."""
    cheat = built / "TBMM" / "Cheat.lean"
    cheat.write_text(
        "prelude\nimport TBMM\n"
        "axiom everything_is_one : (q : Rat) → Eq q Rat.one\n"
        "theorem Reward.zero_is_one : Eq Rat.zero Rat.one := everything_is_one Rat.zero\n"
    )
    try:
        assert build(built, targets=["TBMM.Cheat"]).ok
        axioms, errors = print_axioms(built, ["Reward.zero_is_one"], ["TBMM.Cheat"])
    finally:
        cheat.unlink()
    assert errors == [] and axioms == {"Reward.zero_is_one": ["everything_is_one"]}
    [cheating] = parse_theorems(
        "namespace Reward\n/-- 0 = 1. -/\ntheorem zero_is_one : Eq Rat.zero Rat.one := x\nend Reward\n"
    )
    assert not theorems_ok(theorem_report([cheating], axioms))
    assert not theorems_ok(theorem_report([cheating], {}))  # not audited
    assert not theorems_ok([])


def _variant(old: str, new: str) -> str:
    """Theorems.lean with one statement edited (checked as a file outside the library)."""
    text = THEOREMS.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.mark.slow
def test_unchanged_copy_checks(built: Path, tmp_path: Path) -> None:
    """The control for the false variants: the same file, unedited, passes."""
    f = tmp_path / "Same.lean"
    f.write_text(THEOREMS.read_text(encoding="utf-8"))
    res = check_module(f, built)
    assert res.ok, res.failure and res.failure.summary()


FALSE_VARIANTS = {
    # reward ≤ 1/2: false (an exact hit scores 1)
    "Reward.reward_le_one": (
        "Eq (Rat.le (reward dir x anchor band) Rat.one) Bool.true :=",
        "Eq (Rat.le (reward dir x anchor band) (Rat.frac 1 2)) Bool.true :=",
    ),
    # the band shrinks: false (a degenerate band is widened)
    "Reward.effectiveBand_ge": (
        "Eq (Rat.le band (effectiveBand anchor band)) Bool.true :=",
        "Eq (Rat.le (effectiveBand anchor band) band) Bool.true :=",
    ),
    # a zero anchor always has a positive effective band: false (band 0)
    "Reward.effectiveBand_pos_of_anchor": (
        "(h : Eq (Rat.beq anchor Rat.zero) Bool.false) :",
        "(h : Eq (Rat.beq anchor Rat.zero) Bool.true) :",
    ),
    # higherIsBetter decreasing in the value: false
    "Reward.reward_higher_mono": (
        "Eq (Rat.le (reward Direction.higherIsBetter x anchor band)\n"
        "      (reward Direction.higherIsBetter y anchor band)) Bool.true :=",
        "Eq (Rat.le (reward Direction.higherIsBetter y anchor band)\n"
        "      (reward Direction.higherIsBetter x anchor band)) Bool.true :=",
    ),
    # one-sidedness without the band hypothesis: false (anchor 0, band 0)
    "Reward.reward_higher_one_sided": (
        "    (hb : Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true)\n"
        "    (h : Eq (Rat.le anchor x) Bool.true) :\n"
        "    Eq (reward Direction.higherIsBetter x anchor band) Rat.one :=\n"
        "  Eq.trans (reward_eq_graded Direction.higherIsBetter x anchor band rfl"
        " (Bool.false_of_not hb))",
        "    (h : Eq (Rat.le anchor x) Bool.true) :\n"
        "    Eq (reward Direction.higherIsBetter x anchor band) Rat.one :=\n"
        "  Eq.trans (reward_eq_graded Direction.higherIsBetter x anchor band rfl"
        " (Bool.false_of_not rfl))",
    ),
    # a failed gate keeps O-Eval 1: false
    "Reward.gatedOEval_infeasible": (
        "Eq (gatedOEval Bool.false raw oracle) Rat.zero :=",
        "Eq (gatedOEval Bool.false raw oracle) Rat.one :=",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("decl", list(FALSE_VARIANTS))
def test_false_variant_fails(built: Path, tmp_path: Path, decl: str) -> None:
    old, new = FALSE_VARIANTS[decl]
    f = tmp_path / "Variant.lean"
    f.write_text(_variant(old, new))
    res = check_module(f, built)
    assert not res.ok
    assert res.failure is not None
    assert res.failure.decl == decl
    assert res.failure.exit_code == 1


def test_parse_theorems() -> None:
    text = (
        "prelude\nnamespace A\n/-- First.\n  two lines. -/\n"
        "theorem t1 (x : Nat)\n    (h : Eq x x) : Eq x x := h\n"
        "def d : Nat := 0\n-- a comment with theorem fake : x := y\n"
        "theorem t2 : Eq (f (g := 1)) 2 := rfl\nend A\n"
    )
    ts = parse_theorems(text)
    assert [(t.name, t.statement, t.doc, t.line) for t in ts] == [
        ("A.t1", "(x : Nat) (h : Eq x x) : Eq x x", "First. two lines.", 5),
        ("A.t2", ": Eq (f (g := 1)) 2", "", 9),
    ]


def test_error_on_a_doc_comment_names_the_theorem_below() -> None:
    """Lean reports a failed `rfl` at the doc comment's line: blame that theorem."""
    text = (
        "prelude\n/-- One. -/\ntheorem a : T := rfl\n/-- Two,\n  long. -/\ntheorem b : T := rfl\n"
    )
    names = [getattr(decl_at(text, n), "name", None) for n in (2, 3, 4, 5, 6)]
    assert names == ["a", "a", "b", "b", "b"]
    assert decl_at(text, 1) is None
