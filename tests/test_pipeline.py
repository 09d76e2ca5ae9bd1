"""The verdict pipeline's semantics: omission never pays, claims must match their replay,
replay outputs cannot be forged, and bad decision input scores 0 with a reason."""

from __future__ import annotations

import sys
import types
from fractions import Fraction
from pathlib import Path

import pytest

from tbmm.replay import (
    BudgetExceeded,
    CpuBudget,
    Outcome,
    ReplayInputError,
    to_exact,
)
from tbmm.suite.tasks import Task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact

from .conftest import GATE, SCORING, make_task

GOOD = (
    '{"q": {"speed": 2.0, "ratio": 1.25, "cost": 100, "corr": 0.5, "count": 7, "share": 0.3,'
    ' "big": 1000, "raw_index": 1080}, "rows": [{"p": 0.2, "d": 10}, {"p": 0.5, "d": 4}]}'
)


def _metric(ev, mid: str):  # noqa: ANN001, ANN202
    return next(m for m in ev.score.metrics if m.id == mid)


def test_full_artifact_scores_and_passes(syn: Task) -> None:
    ev = evaluate(syn, read_artifact(GOOD))
    assert ev.gate.verdict == "pass" and not ev.gate.unverifiable
    assert ev.score.o_eval == 1


def test_omitting_a_gated_field_zeroes_what_it_protects(syn: Task) -> None:
    # Drop q.ratio: the checks on it (ratio_ge_one, speed_cap) cannot be evaluated. Before,
    # this turned a gate failure into a warning and kept every metric's credit.
    doc = read_artifact(GOOD.replace('"ratio": 1.25, ', ""))
    ev = evaluate(syn, doc)
    assert ev.gate.verdict == "warn"
    sp = _metric(ev, "speed")
    assert sp.reward == 0 and sp.reason.startswith("unverifiable: ratio_ge_one needs q.ratio")
    assert ev.score.o_eval == 0  # every metric is protected by default


def test_protects_limits_the_zeroing(tmp_path: Path) -> None:
    gate = (
        GATE.replace('id = "order_cost"', 'id = "order_cost"\nprotects = ["cost"]')
        .replace('id = "ratio_ge_one"', 'id = "ratio_ge_one"\nprotects = ["speed"]')
        .replace('id = "speed_cap"', 'id = "speed_cap"\nprotects = ["speed"]')
    )
    t = make_task(tmp_path, gate=gate)
    ev = evaluate(t, read_artifact(GOOD.replace('"ratio": 1.25, ', "")))
    assert set(ev.gate.unverifiable) == {"speed"}
    assert _metric(ev, "speed").reward == 0
    assert _metric(ev, "cost").reward == 1


def test_empty_wildcard_list_is_unverifiable_not_passed(syn: Task) -> None:
    doc = read_artifact(GOOD.replace('[{"p": 0.2, "d": 10}, {"p": 0.5, "d": 4}]', "[]"))
    ev = evaluate(syn, doc)
    assert ev.gate.verdict == "warn"
    assert any("rows: list missing or empty" in r for r in ev.gate.unverifiable.values())
    assert ev.score.o_eval == 0


def test_empty_artifact_still_only_warns(syn: Task) -> None:
    ev = evaluate(syn, {})
    assert ev.gate.verdict == "warn" and ev.score.o_eval == 0


# --- replay ---------------------------------------------------------------------------

REPLAY_TOML = """
module = "synthetic_double"
exact = false
digits = 6
budget_cpu_seconds = "5"
rationale = "test replay: the speed achieved is twice the decision x"
"""


def _double(doc, task, spec, deadline):  # noqa: ANN001, ANN202
    x = doc.get("decision", {}).get("x")
    from tbmm.core import exact

    if not isinstance(x, exact.Num):
        raise ReplayInputError("decision.x: missing or not a number")
    deadline.check()
    return Outcome(
        values={"q.speed": float(x.value) * 2, "q.margin": Fraction(1, 3)},
        details={"q.speed": "from decision.x"},
    )


@pytest.fixture
def replayed_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Task:
    mod = types.ModuleType("tbmm.replay.synthetic_double")
    mod.replay = _double  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tbmm.replay.synthetic_double", mod)
    scoring = SCORING.replace('path = "q.speed"', 'path = "replayed.q.speed"')
    gate = (
        GATE
        + """
[[check]]
id = "speed_claim"
form = "agree"
field = "q.speed"
against = "replayed.q.speed"
tol = "0.01"
justification = "the claimed speed is the replayed one"

[[check]]
id = "margin_positive"
form = "threshold"
field = "replayed.q.margin"
op = ">"
bound = "0"
justification = "the replayed margin is positive"
"""
    )
    t = make_task(tmp_path, scoring=scoring, gate=gate)
    (t.dir / "replay.toml").write_text(REPLAY_TOML)
    # the anchor carries its own replayed values (as `tbmm tasks build` writes them)
    anchor = (t.dir / "anchor.json").read_text()
    anchor = anchor.replace(
        '"artifact": {',
        '"artifact": {"decision": {"x": 1.0}, "replayed": {"q": {"speed": 2, "margin": 0.3333333}}, ',
    )
    (t.dir / "anchor.json").write_text(anchor)
    from tbmm.suite.tasks import load_task

    return load_task(t.dir)


def _with_decision(x: str, claim: str = "2.0") -> str:
    return GOOD.replace('"speed": 2.0', f'"speed": {claim}')[:-1] + f', "decision": {{"x": {x}}}}}'


def test_replayed_value_is_scored_not_the_claim(replayed_task: Task) -> None:
    ev = evaluate(replayed_task, read_artifact(_with_decision("1.0")))
    assert ev.replay is not None and ev.replay.status == "ok"
    assert ev.replay.values == {"q.speed": "2", "q.margin": "0.333333"}
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1


def test_inflated_claim_is_misreported(replayed_task: Task) -> None:
    ev = evaluate(replayed_task, read_artifact(_with_decision("1.0", claim="6.0")))
    assert ev.gate.verdict == "fail" and ev.score.o_eval == 0
    inst = next(i for i in ev.gate.failed if i.check.id == "speed_claim")
    assert inst.message.startswith("misreported: claimed 6")


def test_forged_replayed_key_is_ignored(replayed_task: Task) -> None:
    text = _with_decision("0.5", claim="1.0")[:-1] + ', "replayed": {"q": {"speed": 99}}}'
    ev = evaluate(replayed_task, read_artifact(text))
    assert ev.doc is not None and str(ev.doc["replayed"]["q"]["speed"]) == "1"
    assert any("ignored" in n for n in ev.replay.notes)  # type: ignore[union-attr]
    assert ev.score.o_eval < 1


def test_unreplayable_decisions_score_zero_with_the_reason(replayed_task: Task) -> None:
    ev = evaluate(replayed_task, read_artifact(_with_decision('"fast"')))
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    sp = _metric(ev, "speed")
    assert sp.reward == 0 and "missing or not a number" in sp.reason
    assert ev.score.o_eval == 0


def test_to_exact_rounds_floats_to_digits() -> None:
    assert to_exact(0.1 + 0.2, 12).text == "0.3"
    assert to_exact(Fraction(3, 8), 12).value == Fraction(3, 8)  # terminating: exact
    third = to_exact(Fraction(1, 3), 12)  # non-terminating: a JSON literal of 12 digits
    assert third.text == "0.333333333333" and third.value == Fraction(333333333333, 10**12)
    assert to_exact(Fraction(-72, 9259), 6).text == "-0.00777622"
    with pytest.raises(ReplayInputError):
        to_exact(float("nan"), 12)


def test_deadline() -> None:
    d = CpuBudget(0.0)
    with pytest.raises(BudgetExceeded):
        d.check()


def test_a_list_shorter_than_the_statement_asks_fails(tmp_path: Path) -> None:
    t = make_task(tmp_path)
    amap = (t.dir / "artifact_map.toml").read_text()
    amap = amap.replace(
        'final_question = "q"\n',
        'final_question = "q"\n\n[[list]]\npath = "rows"\nmin_items = 2\nmax_items = 4\ndescription = "two to four rows"\n',
    )
    (t.dir / "artifact_map.toml").write_text(amap)
    from tbmm.suite.tasks import load_task

    t = load_task(t.dir)
    ok = evaluate(t, read_artifact(GOOD))
    assert ok.gate.verdict == "pass"
    short = GOOD.replace('[{"p": 0.2, "d": 10}, {"p": 0.5, "d": 4}]', '[{"p": 0.7, "d": 10}]')
    ev = evaluate(t, read_artifact(short.replace('"share": 0.3', '"share": 0.3')))
    bad = [i for i in ev.gate.failed if i.check.id == "list_min_items"]
    assert bad and "at least 2" in bad[0].message and ev.score.o_eval == 0
