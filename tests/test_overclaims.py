"""Issue 12, items 2-3, on the six tasks without a decision replay of their own before it:
over-claims do not pay, and references no longer score arbitrary choices.

Each test states the exploit (or the honest different answer) as an artifact, runs it through
the full pipeline (replay -> gate -> score) as verification does, and checks its effective
O-Eval (a failed gate counts as 0) against the issue's bar of 0.1, or that a correct different
answer still earns credit.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import statistics
from collections import defaultdict
from fractions import Fraction
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.suite.tasks import Task, find_task
from tbmm.verdict import exploits as X
from tbmm.verdict.pipeline import Evaluation, evaluate
from tbmm.verdict.scoring import read_artifact

BAR = X.CREDIT  # 1/10: an exploit may earn at most this effective O-Eval
SIX = (
    "cumcm-2023-c-vegetable-pricing",
    "cumcm-2025-c-nipt",
    "mcm-2023-b-maasai-mara",
    "mcm-2024-b-submersible-search",
    "mcm-2024-c-tennis-momentum",
    "mcm-2025-b-juneau-tourism",
)


def task(slug: str) -> Task:
    return find_task(slug)


def anchor(t: Task) -> dict[str, Any]:
    """The anchor as an agent would write it (no replayed values), as plain JSON data."""
    doc = json.loads(t.anchor_artifact_bytes())
    doc.pop("replayed", None)
    return doc


def run(t: Task, doc: dict[str, Any]) -> Evaluation:
    """Verify like the harness: the JSON text, read within the task's input caps."""
    return evaluate(t, read_artifact(json.dumps(doc), t.caps))


def effective(ev: Evaluation) -> Fraction:
    return Fraction(0) if ev.infeasible else ev.score.o_eval


def failed(ev: Evaluation) -> set[str]:
    return {i.check.id for i in ev.gate.failed}


# --- every kind of the generated exploit suite, and the oracle, on the six tasks ----------


@pytest.mark.parametrize("slug", SIX)
def test_oracle_scores_one_and_passes_its_gate(slug: str) -> None:
    t = task(slug)
    ev = run(t, anchor(t))
    assert ev.gate.verdict == "pass" and not ev.gate.unverifiable, ev.gate.to_json()
    assert ev.score.o_eval == 1


@pytest.mark.slow
@pytest.mark.parametrize("slug", SIX)
def test_no_generated_exploit_earns_credit_and_none_is_listed(slug: str) -> None:
    t = task(slug)
    assert not (t.dir / "exploits.toml").exists(), "nothing is left to list on this task"
    found = X.audit(t)
    assert {a.kind for a in found} >= {"blind", "best", "omit"}
    paid = [(a.name, a.o_eval) for a in found if a.o_eval > BAR]
    assert not paid


# --- the issue's own examples ----------------------------------------------------------


def test_juneau_revenue_x10_fails_however_consistently_it_is_told() -> None:
    t = task("mcm-2025-b-juneau-tourism")
    base = anchor(t)
    out = base["outcome"]
    ten = Fraction(10)

    def times(x: Any, k: Fraction) -> float:
        return float(Fraction(str(x)) * k)

    # 1. revenue (and net benefit) x10, nothing else
    a = copy.deepcopy(base)
    a["outcome"]["total_revenue_usd"] = times(out["total_revenue_usd"], ten)
    a["outcome"]["net_benefit_usd"] = times(out["net_benefit_usd"], ten)
    ev = run(t, a)
    assert "revenue_within_visitors_times_per_visitor" in failed(ev) and effective(ev) == 0
    # 2. ... and the per-visitor revenue x10 to match
    b = copy.deepcopy(a)
    b["outcome"]["revenue_per_visitor_usd"] = times(out["revenue_per_visitor_usd"], ten)
    ev = run(t, b)
    assert "per_visitor_spending_bounded" in failed(ev) and effective(ev) == 0
    # 3. ... and the fee raised to pay for it (fee revenue grows with the fee)
    c = copy.deepcopy(b)
    c["policy"]["visitor_fee_usd"] = float(b["outcome"]["revenue_per_visitor_usd"]) - 468.75
    ev = run(t, c)
    assert "visitor_fee_within_spending" in failed(ev) and effective(ev) == 0
    # 4. ... at the largest fee and per-visitor revenue the statement's figures allow, the
    #    visitors (and the cap) must grow instead: the gate admits it, but it is no longer
    #    the anchor's prediction, and both target metrics score 0.
    d = copy.deepcopy(a)
    d["policy"]["visitor_fee_usd"] = 234.375
    d["outcome"]["revenue_per_visitor_usd"] = 703.125
    visitors = math.ceil(Fraction(str(a["outcome"]["total_revenue_usd"])) / Fraction("703.125"))
    d["outcome"]["annual_visitors"] = visitors
    d["policy"]["daily_cap"] = math.ceil(Fraction(visitors, 365))
    ev = run(t, d)
    assert ev.gate.verdict == "pass" and effective(ev) == 0
    # 5. more visitors than 365 days at the largest cap the statement allows: infeasible
    e = copy.deepcopy(d)
    e["outcome"]["annual_visitors"] = 365 * 20000 + 1
    e["policy"]["daily_cap"] = 20001
    ev = run(t, e)
    assert "daily_cap_limits" in failed(ev) and effective(ev) == 0


def test_juneau_policy_levers_are_not_scored_but_bounded() -> None:
    t = task("mcm-2025-b-juneau-tourism")
    other = anchor(t)  # a different cap and fee with the same predicted outcome
    other["policy"]["daily_cap"] = 12500
    other["policy"]["visitor_fee_usd"] = 40
    ev = run(t, other)
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1
    for path, value, check in (
        ("daily_cap", 0, "daily_cap_limits"),
        ("daily_cap", 20001, "daily_cap_limits"),
        ("visitor_fee_usd", 300, "visitor_fee_within_spending"),
    ):
        bad = anchor(t)
        bad["policy"][path] = value
        assert check in failed(run(t, bad)), (path, value)


def test_nipt_f1_and_accuracy_099_are_misreported() -> None:
    t = task("cumcm-2025-c-nipt")
    doc = anchor(t)
    doc["q4"]["female_abnormality_f1"] = 0.99
    doc["q4"]["female_abnormality_balanced_accuracy"] = 0.99
    doc["q4"]["female_abnormality_accuracy"] = 0.99  # the old field: ignored
    ev = run(t, doc)
    assert {"q4_f1_claim", "q4_balanced_accuracy_claim"} <= failed(ev)
    assert effective(ev) == 0
    msg = next(i.message for i in ev.gate.failed if i.check.id == "q4_f1_claim")
    assert msg.startswith("misreported: claimed 0.99") and "replayed 0.5631067961" in msg
    # the same claims without a rule to replay: nothing is replayed, nothing scores
    no_rule = copy.deepcopy(doc)
    del no_rule["q4"]["rules"]
    ev = run(t, no_rule)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert effective(ev) == 0 and all(m.reward == 0 for m in ev.score.metrics)


def test_nipt_a_worse_rule_told_honestly_scores_what_it_does() -> None:
    """The textbook Z-score rule (|Z13|, |Z18| or |Z21| >= 3) is feasible and honest, and
    scores by what it achieves (little; on the held-out samples), not by what it claims
    (its claims are what it does on the agent's samples)."""
    t = task("cumcm-2025-c-nipt")
    doc = anchor(t)
    doc["q4"]["rules"] = [
        {"intercept": -3, "terms": [{"feature": f, "coef": 1}]}
        for f in ("abs_z13", "abs_z18", "abs_z21")
    ]
    ev = run(t, doc)
    r = ev.replay
    assert r is not None and r.status == "ok"
    tp, fp, fn, tn = (
        int(r.values[f"q4.{k}"])
        for k in ("true_positives", "false_positives", "false_negatives", "true_negatives")
    )
    held = sum(
        int(r.values[f"q4.heldout_{k}"])
        for k in ("true_positives", "false_positives", "false_negatives", "true_negatives")
    )
    assert tp + fp + fn + tn == int(r.values["q4.samples"])
    assert held == int(r.values["q4.heldout_samples"])
    assert tp + fp + fn + tn + held == 604  # every labelled sample of the statement's sheet
    f1 = Fraction(2 * tp, 2 * tp + fp + fn)
    assert exact.parse_decimal(r.values["q4.f1"]) == Fraction(round(f1 * 10**10), 10**10)
    assert "q4_f1_claim" in failed(ev)  # it still claims the reference's figures
    doc["q4"]["female_abnormality_f1"] = float(exact.parse_decimal(r.values["q4.f1"]))
    doc["q4"]["female_abnormality_balanced_accuracy"] = float(
        exact.parse_decimal(r.values["q4.balanced_accuracy"])
    )
    ev = run(t, doc)
    assert ev.gate.verdict == "pass" and 0 <= ev.score.o_eval < Fraction(1, 2)


def test_nipt_groups_are_the_answers_partition() -> None:
    t = task("cumcm-2025-c-nipt")
    five = anchor(t)  # the statement's own example grouping, five groups
    five["q3"]["groups"] = [
        {"bmi_lower": lo, "bmi_upper": hi, "recommended_week": 12, "qualified_probability": 0.8}
        for lo, hi in ((20, 28), (28, 32), (32, 36), (36, 40), (40, 47))
    ]
    ev = run(t, five)
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1
    overlap = copy.deepcopy(five)
    overlap["q3"]["groups"][1]["bmi_lower"] = 27
    ev = run(t, overlap)
    assert "q3_groups_do_not_overlap" in failed(ev) and effective(ev) == 0


def test_submersible_probabilities_of_one_score_nothing() -> None:
    t = task("mcm-2024-b-submersible-search")
    doc = anchor(t)
    for k in doc["search"]:
        doc["search"][k] = 1.0
    ev = run(t, doc)
    assert ev.gate.verdict == "pass"  # consistent: the ordering checks hold with equality
    assert effective(ev) == 0
    later = anchor(t)
    later["search"]["find_probability_10h_start_5h"] = 0.5  # later start, likelier: no
    assert "later_start_not_likelier_5h" in failed(run(t, later))


# --- references that do not score arbitrary choices -------------------------------------


@pytest.mark.parametrize("count", range(27, 34))
def test_vegetables_any_count_in_27_to_33_is_equal(count: int) -> None:
    t = task("cumcm-2023-c-vegetable-pricing")
    doc = anchor(t)
    doc["q3"]["restocked_item_count"] = count
    ev = run(t, doc)
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1


@pytest.mark.parametrize("count", [26, 34])
def test_vegetables_count_outside_the_statement_fails(count: int) -> None:
    t = task("cumcm-2023-c-vegetable-pricing")
    doc = anchor(t)
    doc["q3"]["restocked_item_count"] = count
    assert "q3_item_count_range" in failed(run(t, doc))


def test_vegetables_profit_overclaim_does_not_pay() -> None:
    t = task("cumcm-2023-c-vegetable-pricing")
    doc = anchor(t)
    doc["q3"]["july1_profit_yuan"] *= 1.5
    doc["q2"]["week_profit_yuan"] *= 1.5
    assert effective(run(t, doc)) <= BAR


def test_maasai_shares_on_any_partition() -> None:
    t = task("mcm-2023-b-maasai-mara")
    printed = anchor(t)  # the paper's printed counts over its 36-cell grid: 37/36 of the area
    for k, cells in (
        ("wildlife_sanctuary_share", 13),
        ("community_use_share", 13),
        ("tourism_share", 9),
        ("hunting_share", 2),
    ):
        printed["plan"][k] = round(cells / 36, 4)
    assert "zoning_partitions_preserve" in failed(run(t, printed))
    # the same counts as shares of their own total (37) partition the preserve, and score
    # close to the reference: the 36-or-37 question costs little either way
    own = copy.deepcopy(printed)
    for k, cells in (
        ("wildlife_sanctuary_share", 13),
        ("community_use_share", 13),
        ("tourism_share", 9),
        ("hunting_share", 2),
    ):
        own["plan"][k] = round(cells / 37, 4)
    own["plan"]["hunting_share"] = round(1 - sum(round(c / 37, 4) for c in (13, 13, 9)), 4)
    ev = run(t, own)
    assert ev.gate.verdict == "pass" and ev.score.o_eval > Fraction(8, 10)
    # a different plan on a 10 x 10 grid (40/25/30/5 cells): feasible, partial credit
    other = anchor(t)
    other["plan"].update(
        wildlife_sanctuary_share=0.40,
        community_use_share=0.25,
        tourism_share=0.30,
        hunting_share=0.05,
        other_use_share=0,
    )
    ev = run(t, other)
    assert ev.gate.verdict == "pass" and 0 < ev.score.o_eval < 1


def test_tennis_runs_test_reference_is_recomputed_from_the_data() -> None:
    """median_runs_p (kind computed): a two-sided Wald-Wolfowitz runs test, normal
    approximation, on each match's point_victor sequence; median over the matches."""
    t = task("mcm-2024-c-tennis-momentum")
    path = next(t.data_dir.glob("attachments/*/2024_Wimbledon_featured_matches.csv"))
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    by: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        by[r["match_id"]].append(int(r["point_victor"]))
    ps = []
    for seq in by.values():
        n1, n2 = seq.count(1), seq.count(2)
        n = n1 + n2
        runs = 1 + sum(1 for a, b in zip(seq, seq[1:], strict=False) if a != b)
        mu = 2 * n1 * n2 / n + 1
        var = 2 * n1 * n2 * (2 * n1 * n2 - n) / (n * n * (n - 1))
        ps.append(math.erfc(abs(runs - mu) / math.sqrt(var) / math.sqrt(2)))
    median = statistics.median(ps)
    ref = next(m for m in t.metrics if m.id == "median_runs_p")
    assert ref.spec.reference is not None and ref.spec.reference.kind == "computed"
    assert abs(median - float(ref.anchor)) < 5e-7
    # the data facts the gate uses: 334 of 7284 points are the final's
    final = sum(1 for r in rows if r["match_id"] == "2023-wimbledon-1701")
    assert (final, len(rows)) == (334, 7284) and Fraction("0.0458") < Fraction(final, len(rows))


def test_tennis_blind_answers_fail_the_statement_checks() -> None:
    t = task("mcm-2024-c-tennis-momentum")
    for v, check in ((0, "strongest_transition_at_least_half"), (1, "warning_rate_all_below_one")):
        doc = anchor(t)
        for group in doc.values():
            for k in group:
                group[k] = v
        assert check in failed(run(t, doc)), v
