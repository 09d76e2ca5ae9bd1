"""CUMCM 2024 C Problem 1: the plans are replayed exactly (real attachments, no mocks).

The oracle (the MILP reference plans) scores 1.0; a claim that is not the plan's replayed
profit is misreported; another feasible plan scores what it achieves; every rule has a plan
breaking it that fails the gate naming the rule and the rows; unusable input scores 0 with
a reason; the Lean replay agrees with the Python one and a forged profit fails the kernel.
"""

from __future__ import annotations

import copy
import functools
import json
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.replay import CpuBudget, run_replay
from tbmm.replay import crop_planting as C
from tbmm.suite.tasks import TASKS_ROOT, Task, load_task
from tbmm.verdict.pipeline import Evaluation, evaluate
from tbmm.verdict.scoring import read_artifact
from tbmm.verify import verify_artifact

SLUG = "cumcm-2024-c-crop-planting"
TASK_DIR = TASKS_ROOT / "CUMCM" / SLUG


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


@pytest.fixture(scope="module")
def data(task: Task) -> C.CropData:
    return C.load_data(task.data_dir / "attachments")


@pytest.fixture(scope="module")
def rules(task: Task) -> C.Rules:
    assert task.replay_spec is not None
    return C.Rules.from_params(task.replay_spec.params)


def reference() -> dict[str, Any]:
    """The reference artifact as plain JSON values (numbers as floats are never used: the
    JSON text is re-read exactly by `doc`)."""
    return json.loads((TASK_DIR / "reference.json").read_text(encoding="utf-8"))["artifact"]


@functools.cache
def _task() -> Task:
    return load_task(TASK_DIR)


def doc(art: dict[str, Any]) -> dict[str, Any]:
    """The artifact read as verification reads it (exact numbers, the task's input caps)."""
    return read_artifact(json.dumps(art), _task().caps)


def ev(task: Task, art: dict[str, Any]) -> Evaluation:
    return evaluate(task, doc(art))


def replayed(e: Evaluation, path: str) -> Fraction:
    assert e.replay is not None and e.replay.status == "ok", e.replay
    return exact.parse_decimal(e.replay.values[path])


def with_claims(task: Task, art: dict[str, Any]) -> dict[str, Any]:
    """`art` with each claimed profit set to its replayed value (an honest artifact)."""
    e = ev(task, art)
    out = copy.deepcopy(art)
    for case in C.CASES:
        q = replayed(e, f"q1.{case}.profit_yuan")
        # the claim as the exact decimal text (json.dumps writes the float's shortest repr,
        # which round-trips to the same decimal for these values: checked by the replay)
        out["q1"][case]["profit_yuan"] = json.loads(exact.fraction_to_text(q))
    return out


def failed(e: Evaluation) -> dict[str, str]:
    return {i.check.id: i.message for i in e.gate.failed}


# --- the reference -------------------------------------------------------------------------


def test_oracle_scores_one(task: Task) -> None:
    art = reference()
    e = ev(task, art)
    assert e.gate.verdict == "pass", failed(e)
    assert e.score.o_eval == 1
    for case in C.CASES:
        assert replayed(e, f"q1.{case}.rule_violations") == 0
        assert replayed(e, f"q1.{case}.profit_yuan") == exact.parse_decimal(
            str(art["q1"][case]["profit_yuan"])
        )
    rep = verify_artifact(task, json.dumps(art).encode(), lean=False)
    assert rep.exit_code == 0 and rep.o_eval == 1.0, rep.failing


def test_anchor_is_the_replayed_reference(task: Task) -> None:
    anchor = task.anchor_artifact
    for case in C.CASES:
        claim = anchor["q1"][case]["profit_yuan"].value
        assert anchor["replayed"]["q1"][case]["profit_yuan"].value == claim
        assert anchor["replayed"]["q1"][case]["rule_violations"].value == 0


def test_reference_record_states_solver_and_gap(task: Task) -> None:
    rec = json.loads((TASK_DIR / "reference" / "solve.json").read_text(encoding="utf-8"))
    assert rec["solver"].startswith("HiGHS")
    e = ev(task, reference())
    for case in C.CASES:
        r = rec["cases"][case]
        ours = replayed(e, f"q1.{case}.profit_yuan")
        assert exact.parse_decimal(r["replayed_profit_yuan"]) == ours
        # the solver's dual bound bounds every plan under these rules from above
        assert Fraction(r["dual_bound"]) >= ours
        assert r["rule_violations"] == 0


# --- claims ----------------------------------------------------------------------------------


def test_inflated_claims_are_misreported(task: Task) -> None:
    art = reference()
    for case in C.CASES:
        art["q1"][case]["profit_yuan"] = art["q1"][case]["profit_yuan"] * 10
    e = ev(task, art)
    f = failed(e)
    assert e.gate.verdict == "fail" and e.score.o_eval == 0
    for case in C.CASES:
        assert f[f"{case}_profit_claim"].startswith("misreported: claimed")


def test_claim_within_a_cent_agrees(task: Task) -> None:
    art = reference()
    q = exact.parse_decimal(str(art["q1"]["case1"]["profit_yuan"]))
    art["q1"]["case1"]["profit_yuan"] = json.loads(exact.fraction_to_text(q + Fraction(1, 100)))
    assert ev(task, art).gate.verdict == "pass"


# --- other feasible plans ----------------------------------------------------------------------


def _shrunk(art: dict[str, Any], data: C.CropData, rules: C.Rules, case: str) -> dict[str, Any]:
    """A different feasible plan: one non-legume planting above its minimum area made
    smaller (nothing else changes, so every rule still holds)."""
    out = copy.deepcopy(art)
    for row in out["q1"][case]["plan"]:
        p = data.plots[row["plot"]]
        area = exact.parse_decimal(str(row["area_mu"]))
        low = rules.min_area(p.kind)
        if not data.crops[row["crop"]].legume and area >= low + 1:
            row["area_mu"] = json.loads(exact.fraction_to_text(low))
            return out
    raise AssertionError("no planting to shrink")


@pytest.mark.slow
def test_a_different_feasible_plan_scores_what_it_achieves(
    task: Task, data: C.CropData, rules: C.Rules
) -> None:
    ref = ev(task, reference())
    art = with_claims(task, _shrunk(reference(), data, rules, "case1"))
    e = ev(task, art)
    assert e.gate.verdict == "pass", failed(e)
    mine = replayed(e, "q1.case1.profit_yuan")
    best = replayed(ref, "q1.case1.profit_yuan")
    assert mine != best
    m = next(x for x in e.score.metrics if x.id == "q1_case1_profit")
    spec = next(x for x in task.metrics if x.id == "q1_case1_profit")
    band, _ = spec.band_effective
    assert mine < best
    assert m.reward == max(Fraction(0), 1 - (best - mine) / band)


def test_swapped_plans_are_feasible_and_never_beat_the_optimum(task: Task) -> None:
    """Each case's reference plan is feasible for the other case: it scores what it earns
    there, which is at most the MILP optimum of that case."""
    art = reference()
    swapped = copy.deepcopy(art)
    swapped["q1"]["case1"]["plan"] = art["q1"]["case2"]["plan"]
    swapped["q1"]["case2"]["plan"] = art["q1"]["case1"]["plan"]
    swapped = with_claims(task, swapped)
    e, ref = ev(task, swapped), ev(task, art)
    assert e.gate.verdict == "pass", failed(e)
    for case in C.CASES:
        assert replayed(e, f"q1.{case}.profit_yuan") <= replayed(ref, f"q1.{case}.profit_yuan")


def test_the_2023_plan_repeated_breaks_rules_but_earns_its_revenue(
    task: Task, data: C.CropData
) -> None:
    """The village's own 2023 plan, planted every year, sells exactly the expected sales:
    its replayed profit is 7 x the 2023 profit (41,484,437.75 yuan), above the old anchor's
    case-1 figure, and it breaks the rotation and legume rules."""
    rows = [
        {
            "year": y,
            "plot": p,
            "season": s,
            "crop": c,
            "area_mu": json.loads(exact.fraction_to_text(a)),
        }
        for y in range(2024, 2031)
        for (p, s, c), a in data.history.items()
    ]
    art = {"q1": {c: {"profit_yuan": 0, "plan": rows} for c in C.CASES}}
    e = ev(task, art)
    per_year = sum((data.price[k] * q for k, q in data.demand.items()), Fraction(0)) - sum(
        (a * data.stats[(data.plots[p].kind, s, c)].cost for (p, s, c), a in data.history.items()),
        Fraction(0),
    )
    for case in C.CASES:
        assert replayed(e, f"q1.{case}.profit_yuan") == 7 * per_year == Fraction("41484437.75")
        assert replayed(e, f"q1.{case}.violations.rotation") > 0
        assert replayed(e, f"q1.{case}.violations.legume") > 0
    assert {f"{c}_rotation" for c in C.CASES} <= set(failed(e))


# --- every rule broken once ----------------------------------------------------------------------


def _plan(art: dict[str, Any]) -> list[dict[str, Any]]:
    return art["q1"]["case1"]["plan"]


def _first(plan: list[dict[str, Any]], pred) -> int:  # noqa: ANN001
    return next(i for i, r in enumerate(plan) if pred(r))


def _kind(data: C.CropData, r: dict[str, Any]) -> str:
    return data.plots[r["plot"]].kind


def break_suitability(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "flat")
    plan[i]["crop"] = "29"  # cucumber on flat dry land
    return i


def break_plot_area(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "terrace")
    r = plan[i]
    used = {
        x["crop"]
        for x in plan
        if (x["year"], x["plot"], x["season"]) == (r["year"], r["plot"], r["season"])
    }
    crop = next(c for c in map(str, range(6, 16)) if c not in used)
    plan.append(
        {
            **r,
            "crop": crop,
            "area_mu": json.loads(exact.fraction_to_text(data.plots[r["plot"]].area)),
        }
    )
    return i


def break_min_area(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "greenhouse")
    plan[i]["area_mu"] = 0.1
    return i


def break_irrigated_mode(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "irrigated" and r["season"] == "second")
    r = plan[i]
    firsts = [
        x for x in plan if (x["year"], x["plot"], x["season"]) == (r["year"], r["plot"], "first")
    ]
    for x in firsts:
        plan.remove(x)
    plan.append({**r, "season": "first", "crop": "16", "area_mu": 6})
    return plan.index(r)


def break_irrigated_second_one_crop(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "irrigated" and r["season"] == "second")
    r = plan[i]
    other = next(c for c in ("35", "36", "37") if c != r["crop"])
    plan.append({**r, "crop": other, "area_mu": 6})
    return i


def break_rotation(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "flat" and r["year"] == 2024)
    r = plan[i]
    nxt = [x for x in plan if (x["year"], x["plot"]) == (2025, r["plot"])]
    for x in nxt:
        plan.remove(x)
    plan.append({**r, "year": 2025})
    return plan.index(r)


def break_legume(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    i = _first(plan, lambda r: _kind(data, r) == "hillside" and data.crops[r["crop"]].legume)
    plan[i]["area_mu"] = json.loads(
        exact.fraction_to_text(exact.parse_decimal(str(plan[i]["area_mu"])) - 1)
    )
    return i


def break_scatter(art, data, rules):  # noqa: ANN001, ANN201
    plan = _plan(art)
    rows = [
        r
        for r in plan
        if r["year"] == 2030 and _kind(data, r) == "greenhouse" and r["season"] == "second"
    ]
    by_plot: dict[str, dict[str, Any]] = {}
    for r in rows:
        by_plot.setdefault(r["plot"], r)
    picked = list(by_plot.values())[: rules.max_plots + 1]
    assert len(picked) == rules.max_plots + 1
    for r in picked:
        for x in [
            x
            for x in plan
            if (x["year"], x["plot"], x["season"]) == (2030, r["plot"], "second") and x is not r
        ]:
            plan.remove(x)
        r["crop"] = "41"
    return plan.index(picked[0])


BREAKERS = {
    "suitability": break_suitability,
    "plot_area": break_plot_area,
    "min_area": break_min_area,
    "irrigated_mode": break_irrigated_mode,
    "irrigated_second_one_crop": break_irrigated_second_one_crop,
    "rotation": break_rotation,
    "legume": break_legume,
    "scatter": break_scatter,
}


def test_every_rule_is_covered() -> None:
    assert set(BREAKERS) == set(C.RULES)


@pytest.mark.slow
@pytest.mark.parametrize("rule", sorted(BREAKERS))
def test_each_rule_violated_fails_the_gate_naming_it(
    task: Task, data: C.CropData, rules: C.Rules, rule: str
) -> None:
    art = reference()
    BREAKERS[rule](art, data, rules)
    art = with_claims(task, art)  # honest claims: only the rule can fail
    e = ev(task, art)
    f = failed(e)
    assert e.gate.verdict == "fail" and e.score.o_eval == 0
    assert f"case1_{rule}" in f, f
    assert "case1_profit_claim" not in f
    msg = f[f"case1_{rule}"]
    assert "q1.case1.plan[" in msg or rule in ("legume", "scatter", "plot_area"), msg
    if rule in ("legume", "scatter"):
        assert "plot" in msg or "plots" in msg, msg
    assert replayed(e, f"q1.case1.violations.{rule}") >= 1


# --- unusable input ------------------------------------------------------------------------------


def _unreplayable(task: Task, d: dict[str, Any]) -> str:
    e = evaluate(task, d)
    assert e.replay is not None and e.replay.status == "unreplayable"
    assert e.score.o_eval == 0
    return e.replay.error


def test_unknown_plot_tag(task: Task) -> None:
    art = reference()
    art["q1"]["case2"]["plan"][3]["plot"] = "Z9"
    assert "q1.case2.plan[3].plot: not a plot" in _unreplayable(task, doc(art))


def test_negative_area(task: Task) -> None:
    art = reference()
    art["q1"]["case1"]["plan"][0]["area_mu"] = -1
    assert "negative" in _unreplayable(task, doc(art))


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("year", 2031, "outside 2024-2030"),
        ("year", 2024.5, "not an integer"),
        ("season", "third", "season"),
        ("crop", 16, "not a crop number"),
        ("crop", "42", "not a crop number"),
        ("area_mu", "12", "not a number"),
        ("area_mu", 1e6, "exceeds the area"),
    ],
)
def test_bad_fields(task: Task, field: str, value: Any, reason: str) -> None:
    art = reference()
    art["q1"]["case1"]["plan"][0][field] = value
    assert reason in _unreplayable(task, doc(art))


def test_missing_case_and_duplicate_rows(task: Task) -> None:
    art = reference()
    del art["q1"]["case2"]
    assert "q1.case2: missing" in _unreplayable(task, doc(art))
    art = reference()
    art["q1"]["case1"]["plan"].append(dict(art["q1"]["case1"]["plan"][0]))
    assert "the same (year, plot, season, crop)" in _unreplayable(task, doc(art))


def test_a_million_rows_is_refused_at_once(task: Task) -> None:
    row = read_artifact(
        '{"year": 2024, "plot": "A1", "season": "first", "crop": "1", "area_mu": 1}'
    )
    d = {
        "q1": {
            c: {"profit_yuan": exact.Num(None, "0", True), "plan": [row] * 10**6} for c in C.CASES
        }
    }
    t0 = time.thread_time()
    reason = _unreplayable(task, d)
    assert "1000000 rows, more than the 7434" in reason
    assert time.thread_time() - t0 < 30  # CPU: refused before any work (not a benchmark)


@pytest.mark.slow
def test_list_bound_is_the_statement_maximum(task: Task, data: C.CropData, rules: C.Rules) -> None:
    bounds = {ls.path: ls.max_items for ls in task.artifact_map.lists}
    assert bounds == {f"q1.{c}.plan": C.max_rows(data, rules) for c in C.CASES}


def test_largest_legal_input_replays(task: Task) -> None:
    from tbmm.tooling.bench import crop_planting_largest

    d = crop_planting_largest(task)
    assert len(d["q1"]["case1"]["plan"]) == C.max_rows(
        C.load_data(task.data_dir / "attachments"), C.Rules.from_params(task.replay_spec.params)
    )  # type: ignore[union-attr]
    _, rep = run_replay(task, d, CpuBudget(120.0))
    assert rep is not None and rep.status == "ok"


# --- the rules' thresholds come from the 2023 plan --------------------------------------------


@pytest.mark.slow
def test_thresholds_are_the_2023_plans(data: C.CropData, rules: C.Rules) -> None:
    open_air = [a for (p, _, _), a in data.history.items() if data.plots[p].kind in C.OPEN_AIR]
    green = [a for (p, _, _), a in data.history.items() if data.plots[p].kind not in C.OPEN_AIR]
    assert rules.min_area_open == min(open_air)
    assert rules.min_area_greenhouse == min(green)
    plots: dict[tuple[str, str], set[str]] = {}
    for p, s, c in data.history:
        plots.setdefault((s, c), set()).add(p)
    assert rules.max_plots == max(len(v) for v in plots.values())
    # and the 2023 plan itself obeys every static rule
    plan = C.Plan({(p, 2024, s): {} for (p, s, _) in data.history}, {}, 0)
    for (p, s, c), a in data.history.items():
        plan.cells[(p, 2024, s)][c] = a
    v = C.check_rules(plan, data, rules, "2023")
    for rule in (
        "suitability",
        "plot_area",
        "min_area",
        "irrigated_mode",
        "irrigated_second_one_crop",
        "scatter",
    ):
        assert len(v[rule]) == 0, (rule, v[rule].shown)


def test_data_facts(data: C.CropData) -> None:
    # the statement: 1201 mu of open-air land in 34 plots, 16 + 4 greenhouses of 0.6 mu
    open_air = [p.area for p in data.plots.values() if p.kind in C.OPEN_AIR]
    assert len(open_air) == 34 and sum(open_air, Fraction(0)) == 1201
    assert len(data.plots) == 54
    assert data.demand[("first", "6")] == 170840  # wheat: 80*800 + (60+55)*760 + 27*720
    assert data.price[("second", "41")] == 100  # morel 80-120
    assert data.stats[("smart", "first", "29")] == data.stats[("greenhouse", "first", "29")]


# --- Lean ----------------------------------------------------------------------------------------


def test_lean_data_module_is_fresh() -> None:
    assert C.main(["--check"]) == 0, (
        "TBMM/Replay/CropData.lean is stale: run python -m tbmm.replay.crop_planting --write-lean"
    )


def _lean_check(task: Task, obligations: list[tuple[str, str, bool]], tmp_path: Path):  # noqa: ANN202
    from tbmm.core import lean_syntax as S
    from tbmm.lean.build import check_module

    body = ["noncomputable section", "namespace CropTest", ""]
    for name, term, expect in obligations:
        body.append(S.theorem(name, term, expect=expect))
    body += ["end CropTest", "end", ""]
    path = tmp_path / "CropTest.lean"
    path.write_text(S.module(body), encoding="utf-8")
    return check_module(path)


@pytest.mark.slow
def test_lean_replay_agrees_and_a_forged_profit_fails(task: Task, tmp_path: Path) -> None:
    from tbmm.lean.runtime import find_toolchain

    try:
        find_toolchain()
    except Exception as exc:  # pragma: no cover - the toolchain ships with the venv
        pytest.skip(f"no Lean toolchain: {exc}")
    e = ev(task, reference())
    obs = C.lean_obligations(task, e.doc)  # type: ignore[arg-type]
    assert [n for n, _, _ in obs] == [f"crop_{c}" for c in C.CASES]
    res = _lean_check(task, [(n, t, True) for n, t, _ in obs], tmp_path)
    assert res.ok, res.failure
    # a forged profit (one yuan more) is not what the kernel computes
    forged = e.doc
    forged["replayed"]["q1"]["case1"]["profit_yuan"] = exact.Num(
        replayed(e, "q1.case1.profit_yuan") + 1, "forged", False
    )
    bad = C.lean_obligations(task, forged)
    res = _lean_check(task, [(bad[0][0], bad[0][1], True)], tmp_path)
    assert not res.ok and res.failure is not None and res.failure.decl is not None
    assert res.failure.decl.endswith("crop_case1")


@pytest.mark.slow
def test_lean_counts_violations_as_python_does(
    task: Task, data: C.CropData, tmp_path: Path
) -> None:
    """A plan breaking several rules: Lean's count and profit equal the Python replay's."""
    art = reference()
    for rule in ("rotation", "min_area", "suitability", "scatter", "irrigated_mode"):
        BREAKERS[rule](art, data, C.Rules.from_params(task.replay_spec.params))  # type: ignore[union-attr]
    e = ev(task, art)
    n = replayed(e, "q1.case1.rule_violations")
    assert n >= 5
    obs = C.lean_obligations(task, e.doc)  # type: ignore[arg-type]
    res = _lean_check(task, [(obs[0][0], obs[0][1], True)], tmp_path)
    assert res.ok, res.failure


def test_verification_refuses_oversized_plans_before_parsing(task: Task) -> None:
    """Through `tbmm verify`: a plan longer than the statement's maximum is refused by the
    task's input caps (exit 2, a reason), and 10^6 rows by the byte cap, before any parse."""
    row = '{"year": 2024, "plot": "A1", "season": "first", "crop": "1", "area_mu": 1}'

    def art(n: int) -> bytes:
        plan = "[" + ", ".join([row] * n) + "]"
        return (
            f'{{"q1": {{"case1": {{"profit_yuan": 0, "plan": {plan}}}, '
            f'"case2": {{"profit_yuan": 0, "plan": []}}}}}}'
        ).encode()

    over = verify_artifact(
        task,
        art(
            C.max_rows(
                C.load_data(task.data_dir / "attachments"),
                C.Rules.from_params(task.replay_spec.params),
            )
            + 1
        ),
        lean=False,
    )  # type: ignore[union-attr]
    assert over.exit_code == 2 and over.o_eval == 0 and "q1.case1.plan" in over.error
    huge = verify_artifact(task, art(10**6), lean=False)
    assert huge.exit_code == 2 and huge.o_eval == 0 and huge.error


def test_public_api_reads_the_plan_within_the_tasks_caps() -> None:
    """A correct answer's 700-row plans are within this task's caps (not the generic 32)."""
    from tbmm import api

    text = json.dumps(reference())
    assert api.score(SLUG, text).o_eval == 1
    assert api.gate(SLUG, text).verdict == "pass"


# --- against the frozen reference implementation -----------------------------------------------


def _reference_outcome(task: Task, doc: dict[str, Any]) -> Any:
    """(values, details, notes) of the frozen replay of 2026-12-02, or its refusal's text."""
    from tbmm.replay import ReplayInputError
    from tests.reference_replays import crop_planting_v1 as R

    try:
        out = R.replay(doc, task, task.replay_spec, CpuBudget(600))
    except ReplayInputError as exc:
        return ("refused", str(exc))
    return (out.values, out.details, out.notes)


def _production_outcome(task: Task, doc: dict[str, Any]) -> Any:
    from tbmm.replay import ReplayInputError

    try:
        out = C.replay(doc, task, task.replay_spec, CpuBudget(600))
    except ReplayInputError as exc:
        return ("refused", str(exc))
    return (out.values, out.details, out.notes)


def _row_edits() -> list[tuple[str, Any]]:
    """Plans that leave the fast path or break rules: each (what, edit of one row or plan)."""
    num = exact.loads
    return [
        ("year as 2024.0", lambda r: r.__setitem__("year", num("2024.0"))),
        ("year with exponent", lambda r: r.__setitem__("year", num("2.025e3"))),
        ("year outside", lambda r: r.__setitem__("year", num("2031"))),
        ("year as text", lambda r: r.__setitem__("year", "2024")),
        ("area with exponent", lambda r: r.__setitem__("area_mu", num("15e-1"))),
        ("area -0", lambda r: r.__setitem__("area_mu", num("-0.0"))),
        ("area negative", lambda r: r.__setitem__("area_mu", num("-0.1"))),
        ("area over its plot", lambda r: r.__setitem__("area_mu", num("1000"))),
        ("area tiny", lambda r: r.__setitem__("area_mu", num("0.000000000000000000000000001"))),
        ("area 40 decimals", lambda r: r.__setitem__("area_mu", num("0." + "3" * 38))),
        ("area as text", lambda r: r.__setitem__("area_mu", "1.5")),
        ("unknown plot", lambda r: r.__setitem__("plot", "Z9")),
        ("plot as a list", lambda r: r.__setitem__("plot", ["A1"])),
        ("unknown season", lambda r: r.__setitem__("season", "third")),
        ("unknown crop", lambda r: r.__setitem__("crop", "42")),
        ("crop as a number", lambda r: r.__setitem__("crop", num("6"))),
        ("missing key", lambda r: r.pop("season")),
        ("extra key", lambda r: r.__setitem__("note", "x")),
        ("null year", lambda r: r.__setitem__("year", None)),
    ]


def test_the_replay_matches_the_reference_implementation(task: Task) -> None:
    """The production replay and the frozen copy give identical values (exact rationals),
    details and notes, or the same refusal, on the anchor, on the benchmark's largest legal
    artifact (`tbmm bench`), and on plans edited row by row: every way off the fast path
    and every rule broken (small, unsuitable, repeated, scattered and duplicated plantings)."""
    from tbmm.replay import strip_replayed
    from tbmm.tooling.bench import crop_planting_largest

    base = strip_replayed(task.anchor_artifact)[0]
    cases: dict[str, dict[str, Any]] = {
        "anchor": base,
        "reference.json": doc(reference()),
        "largest": crop_planting_largest(task),
    }
    doc_ = base
    for i, (what, edit) in enumerate(_row_edits()):
        d = copy.deepcopy(doc_)
        plan = d["q1"]["case1" if i % 2 else "case2"]["plan"]
        edit(plan[(7 * i) % len(plan)])
        cases[what] = d
    d = copy.deepcopy(doc_)
    plan = d["q1"]["case1"]["plan"]
    plan.append(copy.deepcopy(plan[3]))  # a duplicate (year, plot, season, crop)
    cases["duplicate row"] = d
    d = copy.deepcopy(doc_)
    plan = d["q1"]["case2"]["plan"]
    for j, row in enumerate(plan):  # small areas: the minimum area and the legumes broken
        row["area_mu"] = exact.loads(f"0.{j % 5 + 1}")
    cases["small areas"] = d
    d = copy.deepcopy(doc_)
    d["q1"]["case1"]["plan"] = d["q1"]["case1"]["plan"][: len(d["q1"]["case1"]["plan"]) // 3]
    cases["a third of the plan"] = d
    d = copy.deepcopy(doc_)
    for row in d["q1"]["case1"]["plan"]:  # areas of many decimals (a large common scale)
        row["area_mu"] = exact.loads(exact.fraction_to_text(row["area_mu"].value * 7 / 8))
    cases["eighths"] = d
    data = C.load_data(task.data_dir / "attachments")
    d = copy.deepcopy(doc_)
    plan = d["q1"]["case1"]["plan"]
    used = {(r["plot"], r["year"].text, r["season"], r["crop"]) for r in plan}
    for row in plan[::5]:  # unsuitable crops, and plots planted beyond their area
        kind = data.plots[row["plot"]].kind
        for crop in data.crops:
            key = (row["plot"], row["year"].text, row["season"], crop)
            if (kind, row["season"], crop) not in data.stats and key not in used:
                plan.append({**row, "crop": crop, "area_mu": row["area_mu"]})
                used.add(key)
                break
    cases["unsuitable, overfull"] = d
    for what, d in cases.items():
        assert _production_outcome(task, d) == _reference_outcome(task, d), what
    refused = [w for w, d in cases.items() if _production_outcome(task, d)[0] == "refused"]
    assert "area negative" in refused and "duplicate row" in refused  # the edits did bite
    small = _production_outcome(task, cases["small areas"])[0]
    assert all(small[f"q1.case2.violations.{r}"] > 0 for r in ("min_area", "legume"))
    over = _production_outcome(task, cases["unsuitable, overfull"])[0]
    assert all(over[f"q1.case1.violations.{r}"] > 0 for r in ("suitability", "plot_area"))
    largest = _production_outcome(task, cases["largest"])[0]
    no = ("suitability", "plot_area")  # every suitable planting, each within its plot
    assert all(largest[f"q1.case1.violations.{r}"] > 0 for r in C.RULES if r not in no)


def test_a_plan_built_from_fraction_cells_reads_them_afresh(
    data: C.CropData, rules: C.Rules
) -> None:
    """A Plan constructed from Fraction cells (tests, tools) is counted from the cells as
    they are when the rules run, not as they were when the Plan was made."""
    plot = next(p for p in data.plots.values() if p.kind == "flat")
    plan = C.Plan({(plot.id, 2024, "first"): {}}, {}, 0)
    assert C.check_rules(plan, data, rules, "t")["min_area"].count == 0
    plan.cells[(plot.id, 2024, "first")]["1"] = Fraction(1, 10)
    assert C.check_rules(plan, data, rules, "t")["min_area"].count == 1
    assert (
        C.profit(plan, data, rules, "case1")[2]
        == Fraction(1, 10) * data.stats[("flat", "first", "1")].cost
    )
