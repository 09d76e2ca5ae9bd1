"""Scoring: one test per edge rule with hand-computed values, plus task-level formulas."""

from __future__ import annotations

import json
from fractions import Fraction as F

from tbmm.core import rules
from tbmm.suite.tasks import Task
from tbmm.verdict.scoring import read_artifact, score_task

from .conftest import SYN_ANCHOR


def art(**q: str) -> dict:
    """The synthetic anchor's `q` fields with some replaced by raw JSON literals."""
    base = dict(SYN_ANCHOR["q"])
    base.update(q)
    body = ", ".join(f'"{k}": {v}' for k, v in base.items())
    return read_artifact('{"q": {' + body + '}, "rows": [{"p": 0.2, "d": 10}, {"p": 0.5, "d": 4}]}')


def metric(result, mid):  # noqa: ANN001, ANN201
    return next(m for m in result.metrics if m.id == mid)


def test_anchor_scores_exactly_one(syn: Task) -> None:
    r = score_task(syn, syn.anchor_artifact)
    assert r.raw == 1 and r.o_eval == 1 and r.o_eval_anchor == 1


def test_higher_is_better_is_one_sided(syn: Task) -> None:
    r = score_task(syn, art(speed="2.7"))
    assert metric(r, "speed").reward == 1
    assert "beyond the anchor" in metric(r, "speed").reason
    # shortfall 0.1 with band 0.5 -> 1 - 0.1/0.5 = 4/5
    assert metric(score_task(syn, art(speed="1.9")), "speed").reward == F(4, 5)


def test_lower_is_better_is_one_sided(syn: Task) -> None:
    assert metric(score_task(syn, art(cost="60")), "cost").reward == 1
    # excess 10 with band 50 -> 4/5
    assert metric(score_task(syn, art(cost="110")), "cost").reward == F(4, 5)


def test_target_value_is_symmetric(syn: Task) -> None:
    lo = metric(score_task(syn, art(corr="0.4")), "corr").reward
    hi = metric(score_task(syn, art(corr="0.6")), "corr").reward
    assert lo == hi == F(3, 5)  # 1 - 0.1/0.25


def test_exact_value(syn: Task) -> None:
    assert metric(score_task(syn, art(count="7.0")), "count").reward == 1
    assert metric(score_task(syn, art(count="8")), "count").reward == 0


def test_degenerate_band_is_widened_to_five_percent(syn: Task) -> None:
    m = metric(score_task(syn, art(big="1010")), "big")
    assert m.band_effective == 50  # 5% of 1000
    assert m.reward == F(4, 5)  # 1 - 10/50
    assert "degenerate band" in m.reason


def test_out_of_domain_correlation_scores_zero(syn: Task) -> None:
    m = metric(score_task(syn, art(corr="1.2")), "corr")
    assert m.reward == 0 and "out of domain" in m.reason


def test_negative_count_scores_zero(syn: Task) -> None:
    m = metric(score_task(syn, art(count="-7")), "count")
    assert m.reward == 0 and "out of domain" in m.reason


def test_nan_infinity_and_wrong_types_score_zero(syn: Task) -> None:
    for text, needle in (
        ("NaN", "finite"),
        ("Infinity", "finite"),
        ("1e999999", "out-of-range"),
        ('"2.0"', "wrong type (string"),
        ("true", "boolean"),
        ("null", "null"),
        ("[2]", "list"),
    ):
        m = metric(score_task(syn, art(speed=text)), "speed")
        assert m.reward == 0, text
        assert needle in m.reason, (text, m.reason)


def test_missing_field_scores_zero(syn: Task) -> None:
    r = score_task(syn, read_artifact('{"q": {"cost": 100}}'))
    m = metric(r, "speed")
    assert m.reward == 0 and m.reason.startswith("missing field")
    # weights: speed 2, cost 1, corr 1, count 1, big 1 -> only cost scores: 1/6
    assert r.raw == F(1, 6)


def test_excluded_metric_is_left_out_for_everyone(syn: Task) -> None:
    r = score_task(syn, art(raw_index="0.7"))
    m = metric(r, "raw_index")
    assert m.excluded and m.reward is None and "unit-incomparable" in m.reason
    assert r.raw == 1


def test_extra_list_entries_are_excluded_not_missing(syn: Task) -> None:
    doc = read_artifact(
        json.dumps(
            {
                "q": {"speed": 2, "cost": 100, "corr": 0.5, "count": 7, "big": 1000},
                "rows": [{"p": 0.2}, {"p": 0.5}, {"p": 0.9}, {"p": 0.1}],
            }
        )
    )
    r = score_task(syn, doc)
    assert r.raw == 1
    assert any("2 extra entries excluded" in n for n in r.notes)


def test_weighted_mean_and_task_scores(syn: Task) -> None:
    # speed 1.9 -> 4/5 (w 2); cost 110 -> 4/5; corr 0.5 -> 1; count 7 -> 1; big 1000 -> 1
    r = score_task(syn, art(speed="1.9", cost="110"))
    assert r.raw == (2 * F(4, 5) + F(4, 5) + 3) / 6
    assert r.o_eval_anchor == r.raw
    # baseline F: speed 1.5 -> 1 - 0.5/0.5 = 0; everything else missing -> F = 0; gap 1 > 0.1
    assert r.baseline_raw == 0
    assert r.robust_bo == r.raw


def test_missing_artifact_and_gate_failure(syn: Task) -> None:
    r = score_task(syn, None)
    assert (r.o_eval, r.robust_bo, r.status) == (0, -1, "missing_artifact")
    g = score_task(syn, syn.anchor_artifact, gate_failed=True)
    assert (g.o_eval, g.robust_bo, g.status) == (0, -1, "gate_failed")


def test_robust_bo_fallback_branch() -> None:
    # O - F = 0.05 <= 0.1: clipped raw gain R - F
    assert rules.robust_bo(F(1, 2), F(1), F(19, 20)) == F(-9, 20)
    assert rules.robust_bo(F(3, 4), F(1), F(1, 2)) == F(1, 2)  # (0.75-0.5)/0.5


def test_multi_bo_cell() -> None:
    assert rules.multi_bo_cell(F(3, 4), F(1, 2)) == F(3, 2)
    assert rules.multi_bo_cell(F(0), F(1, 2)) == 0
    # margin 1 - f = 0.05 < 0.1 -> 1 + clip(o - f, +-0.1)
    assert rules.multi_bo_cell(F(1), F(19, 20)) == F(21, 20)
    assert rules.multi_bo_cell(F(0), F(19, 20)) == F(9, 10)


def test_multi_reference_panel_eq1(tmp_path) -> None:  # noqa: ANN001
    from .conftest import make_task

    panel = {
        "papers": [
            {
                "paper_id": "A",
                "title": "anchor",
                "source": "s",
                "role": "anchor",
                "values": {"speed": "2.0", "corr": "0.5"},
            },
            {"paper_id": "B", "title": "other", "source": "s", "values": {"corr": "0.25"}},
            {
                "paper_id": "C",
                "title": "figure only",
                "source": "s",
                "values": {},
                "exclusion_reason": "figure_only",
            },
        ]
    }
    t = make_task(tmp_path, panel=panel)
    r = score_task(t, t.anchor_artifact)
    # A: 1; B: corr 0.5 vs 0.25 with band 0.25 -> 0; C excluded -> mean 1/2
    assert [p.paper_id for p in r.panel] == ["A", "B"]
    assert r.o_eval == F(1, 2)
    assert r.o_eval_anchor == 1
