"""CUMCM 2024 A (bench dragon): the computed references, recomputed from scratch by two
independent methods, and the task's verdicts on real artifacts.

The task has no replay of decisions: Problems 2-5 are deterministic numbers of the
statement's geometry, so the verifier's "replay" is the ground truth itself, computed by
`reference/dragon_geometry.py` in the task folder and recorded (kind "computed") in
reference.json / anchor.json. These tests recompute every reference with both methods
(Newton chain + analytic speeds + separating-axis contact vs bisection chain + finite-difference
speeds + Euclidean rectangle distance), require agreement to 1e-6 relative (the issue's bar;
they agree to ~1e-10), and require the committed anchor to be their 10-digit rounding.
"""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.core.paths import resolve
from tbmm.suite.tasks import Task, load_task, task_dirs
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact
from tbmm.verify import verify_artifact

SLUG = "cumcm-2024-a-dragon-dance"
TASK_DIR = next(d for d in task_dirs() if d.name == SLUG)
REF_DIR = TASK_DIR / "reference"
AGREE = 1e-6  # the bar for the two methods


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_dragon_{name}", REF_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolve their module
    sys.path.insert(0, str(REF_DIR))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(REF_DIR))
    return mod


g = _load("dragon_geometry")


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b))


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


def anchor_value(task: Task, path: str) -> float:
    return float(resolve(task.anchor_artifact, path).value)


def anchor_doc(task: Task) -> dict[str, Any]:
    return json.loads(exact.dumps(task.anchor_artifact))


def run(task: Task, doc: dict[str, Any] | str):  # noqa: ANN201
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return evaluate(task, read_artifact(text))


def metric(ev, mid: str):  # noqa: ANN001, ANN201
    return next(m for m in ev.score.metrics if m.id == mid)


def assert_rounds_to(value: float, reference: float) -> None:
    """The committed reference is `value` to 10 significant digits (any direction)."""
    assert abs(value - reference) <= 1e-9 * abs(reference), (value, reference)


# ------------------------------------------------------------------ the geometry, piecewise


def test_arc_length_closed_form_matches_quadrature() -> None:
    for pitch in (0.45, 0.55, 1.7):
        b = g.spiral_b(pitch)
        for th in (0.5, 3.0, 17.0, 32 * math.pi, 120.0):
            assert rel(g.arc_length(b, th), g.arc_length_quadrature(b, th)) < 1e-13


def test_spiral_chains_agree_between_newton_and_bisection() -> None:
    rng = random.Random(7)
    for _ in range(30):
        pitch = rng.uniform(0.35, 1.7)
        b = g.spiral_b(pitch)
        th = rng.uniform(2.5 / b, 9 / b)
        for d in (g.HEAD_SPACING_M, g.BODY_SPACING_M):
            a, c = g.next_theta_newton(b, th, d), g.next_theta_bisect(b, th, d)
            assert abs(a - c) < 1e-12 * a
            x0, x1 = g.spiral_point(b, th), g.spiral_point(b, a)
            assert abs(math.hypot(x1[0] - x0[0], x1[1] - x0[1]) - d) < 1e-12


def _rect(cx: float, cy: float, ang: float, length: float) -> list[tuple[float, float]]:
    u = (math.cos(ang), math.sin(ang))
    return [
        (cx + 0.5 * length * u[0], cy + 0.5 * length * u[1]),
        (cx - 0.5 * length * u[0], cy - 0.5 * length * u[1]),
    ]


def test_contact_tests_agree_on_every_sign() -> None:
    """SAT gap and Euclidean signed distance: same sign on random bench pairs, and the SAT gap
    never exceeds the true distance (so a positive SAT gap proves separation)."""
    import numpy as np

    rng = random.Random(11)
    boards = []
    for _ in range(400):
        length = rng.choice(g.BOARD_LENGTHS[:2])
        hole = length - 2 * g.HOLE_FROM_END_M
        cx, cy, ang = rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0, math.pi)
        boards.append(_rect(cx, cy, ang, hole))
    corners = np.stack([g.bench_corners(b)[0] for b in boards])
    i = np.arange(0, len(boards), 2)
    j = i + 1
    sat = g.sat_gaps(corners, i, j)
    euc = g.euclid_gaps(corners, i, j)
    assert ((sat > 0) == (euc > 0)).all()
    assert (sat[sat > 0] <= euc[sat > 0] + 1e-12).all()
    # parallel boards exactly 1 mm apart, then 1 mm overlapping
    for gap, sign in ((0.001, 1), (-0.001, -1)):
        a = _rect(0, 0, 0, 1.65)
        b = _rect(0.2, g.BOARD_WIDTH_M + gap, 0, 1.65)
        c = np.stack([g.bench_corners(a)[0], g.bench_corners(b)[0]])
        s = g.sat_gaps(c, np.array([0]), np.array([1]))[0]
        e = g.euclid_gaps(c, np.array([0]), np.array([1]))[0]
        assert math.copysign(1, s) == sign == math.copysign(1, e)
        assert abs(s - gap) < 1e-12
        if gap > 0:
            assert abs(e - gap) < 1e-12


def test_speeds_analytic_match_finite_differences_on_every_segment() -> None:
    """Positions (Newton vs bisection) and speeds (rigid-bench propagation vs central
    differences) along the Problem 4 path: the head on the in-spiral, each arc, the out-spiral.
    (Not at an instant when a handle crosses a junction of the path, e.g. t = 0: there the
    acceleration jumps and a central difference is only O(h) accurate, ~3e-6.)"""
    pa, pb = g.turn_path_closed_form(), g.turn_path_bisect()
    for t in (-20.0, 0.5, 3.0, 9.5, 11.0, 14.48, 30.0, 250.0):
        ca = g.path_chain_newton(pa, t, 40)
        cb = g.path_chain_bisect(pb, t, 40)
        assert max(math.dist(h.point, p) for h, p in zip(ca, cb, strict=True)) < 1e-9
        va = g.chain_speeds_analytic(ca)
        vb = g.q5_speeds(t, "bisection", 40, pb)
        assert max(rel(x, y) for x, y in zip(va, vb, strict=True)) < AGREE, t


@pytest.mark.slow
def test_positions_agree_along_the_whole_problem_4_motion() -> None:
    """Method A's segment logic (chord equation on the spiral, then the arcs, then the
    in-spiral) finds the same nearest handle behind as method B's step-back search, for all 224
    handles at times covering the whole motion, including t = 46.2 s, when the head is a turn
    past the exit and the out-spiral passes within a bench length of the exit point (where a
    straight-distance segment test would skip the out-spiral)."""
    pa, pb = g.turn_path_closed_form(), g.turn_path_bisect()
    for t in [46.2] + [-30 + 9.7 * k for k in range(45)]:
        ca, cb = g.path_chain_newton(pa, t), g.path_chain_bisect(pb, t)
        assert max(math.dist(h.point, p) for h, p in zip(ca, cb, strict=True)) < 1e-9, t


def test_finite_difference_step_is_converged() -> None:
    """The finite-difference step (1e-3 s, Richardson) is converged: halving it changes the
    speeds by less than 1e-8 relative."""
    pb = g.turn_path_bisect()
    a = g.q5_speeds(14.48, "bisection", 12, pb, h=1e-3)
    b = g.q5_speeds(14.48, "bisection", 12, pb, h=5e-4)
    assert max(rel(x, y) for x, y in zip(a, b, strict=True)) < 1e-8


# --------------------------------------------------- the references, recomputed from scratch


def test_q4_turn_length_two_constructions_and_ratio_invariance(task: Task) -> None:
    a, b = g.turn_path_closed_form(), g.turn_path_bisect()
    assert rel(a.length, b.length) < AGREE and rel(a.r1, b.r1) < AGREE
    assert abs(a.r1 - 2 * a.r2) < 1e-12 and abs(b.sweep1 - b.sweep2) < 1e-12
    # the answer to 能否调整圆弧使得调头曲线变短: every ratio gives the same length
    for ratio in (0.3, 1.0, 1.7, 4.0, 9.0):
        assert abs(g.turn_path_bisect(ratio=ratio).length - a.length) < 1e-9
    assert g.turn_extent(a, 2001) <= g.TURN_RADIUS_M + 1e-9  # inside the turning space
    assert_rounds_to(a.length, anchor_value(task, "q4.original_turn_length_m"))
    assert_rounds_to(a.length, anchor_value(task, "q4.shortest_turn_length_m"))


@pytest.mark.slow
def test_q2_first_contact_two_methods(task: Task) -> None:
    hits = {m: g.q2_terminal_time(m) for m in ("newton", "bisection")}
    ta, tb = hits["newton"].at, hits["bisection"].at
    assert ta is not None and tb is not None and rel(ta, tb) < AGREE
    assert all(h.max_rate * 2 <= g.Q2_LIPSCHITZ for h in hits.values())
    assert_rounds_to(ta, anchor_value(task, "q2.terminal_time_s"))
    # contact: just before it every pair is apart, just after the head bench overlaps body 8
    for m in ("newton", "bisection"):
        assert g.q2_clearance(ta - 1e-6, m) > 0
        c, pair = g.clearance(g.q1_points(ta + 1e-6, m), m)
        assert c < 0 and pair == (0, 8)
    # the state there agrees (positions to 1e-9 m, speeds to 1e-6)
    pa, pb = g.q1_points(ta, "newton"), g.q1_points(ta, "bisection")
    assert max(math.dist(p, q) for p, q in zip(pa, pb, strict=True)) < 1e-9
    va, vb = g.q1_speeds(ta, "newton"), g.q1_speeds(ta, "bisection")
    assert max(rel(x, y) for x, y in zip(va, vb, strict=True)) < AGREE


@pytest.mark.slow
def test_q3_minimum_pitch_two_methods(task: Task) -> None:
    pa, pb = g.q3_minimum_pitch("newton"), g.q3_minimum_pitch("bisection")
    assert rel(pa, pb) < AGREE
    ref = anchor_value(task, "q3.minimum_pitch_m")
    assert_rounds_to(pa, ref)
    assert ref >= pa  # rounded up: the reference pitch itself coils in without contact
    for m in ("newton", "bisection"):
        assert g.q3_window_min(ref, m, 0.5, 1.5)[1] > 0
        assert g.q3_window_min(pa * (1 - 1e-6), m, 0.5, 1.5)[1] < 0
    # the 80-handle chain used in the search sees what the whole dragon sees there
    x, f = g.q3_window_min(pa, "newton", 0.5, 1.5)
    full = g.q3_clearance_at(pa, g.q3_boundary_theta(pa) + x, "newton")
    assert abs(full - f) < 1e-12


@pytest.mark.slow
def test_q5_max_speed_ratio_two_methods(task: Task) -> None:
    path = g.turn_path_closed_form()
    scan = g.q5_scan(path, -10.0, 400.0, 0.5)
    t, v, j = max(scan, key=lambda r: r[1])
    tops = [r for r in scan if r[1] > v - 0.05]
    assert {round(r[0]) for r in tops} == {round(t)}  # one peak, as the compute script's dense scan
    ra = g.q5_refine("newton", t - 0.5, t + 0.5, j + 3)
    rb = g.q5_refine("bisection", t - 0.5, t + 0.5, j + 3)
    assert rel(ra[1], rb[1]) < AGREE and abs(ra[0] - rb[0]) < 1e-3
    ratio = anchor_value(task, "q5.max_speed_ratio_when_head_1mps")
    speed = anchor_value(task, "q5.max_head_speed_mps")
    assert_rounds_to(ra[1], ratio)
    assert_rounds_to(2 / ra[1], speed)
    assert ratio >= ra[1] and speed <= 2 / ra[1]  # directed rounding keeps the pair feasible
    # outside the scanned window every handle is on a spiral and far below the peak
    for far in (-1000.0, 1000.0):
        assert max(g.chain_speeds_analytic(g.path_chain_newton(path, far))) < 1.01


def test_committed_files_are_the_script_output(task: Task) -> None:
    """reference.json is compute_reference's rounding of computed.json, which records both
    methods agreeing and the validation scans (dense Problem 2 scan, full Problem 3 coil-ins)."""
    cr = _load("compute_reference")
    res = json.loads((REF_DIR / "computed.json").read_text(encoding="utf-8"))
    art = cr.reference_artifact(res)
    ref = exact.loads((TASK_DIR / "reference.json").read_text(encoding="utf-8"))["artifact"]
    for sec, fields in art.items():
        for name, text in fields.items():
            node = ref[sec][name]
            assert node.text == text and node.value == Fraction(Decimal(text)), (sec, name)
    for key in ("terminal_time_s", "minimum_pitch_m", "turn_length_m", "max_speed_ratio"):
        block = next(res[q][key] for q in ("q2", "q3", "q4", "q5") if key in res[q])
        assert block["rel_diff"] < 1e-9, key
    dense = res["q2"]["dense_scan"]
    # the Lipschitz bound of the conservative advancement holds with a factor >= 2
    assert dense["max_clearance_rate_mps"] * 2 <= g.Q2_LIPSCHITZ
    assert abs(dense["first_sample_in_contact_s"] - res["q2"]["terminal_time_s"]["newton"]) < 0.05
    assert all(m["clearance_euclid_m"] > 0 for m in dense["near_misses_below_1cm"])
    contacts = res["q3"]["full_window_contacts"]
    assert contacts["p*(1-1e-6)"]["first_contact_head_travel_m"] is not None
    for k, v in contacts.items():  # the whole coil-in from r = 8.8 m is contact-free above p*
        assert (v["first_contact_head_travel_m"] is None) == (k != "p*(1-1e-6)"), k
        assert v["max_clearance_rate"] * 2 <= g.Q2_LIPSCHITZ, k
    assert res["q2"]["max_clearance_rate_mps"] * 2 <= g.Q2_LIPSCHITZ
    assert all(v < 0 for v in res["q3"]["min_clearance_below_critical"].values())
    # the statement's own Problem 4 motion is collision-free
    assert res["q4_motion_clearance"]["min_clearance_m_capped"] > 0


# ------------------------------------------------------------------ verdicts on artifacts


@pytest.mark.slow
def test_oracle_scores_one_and_passes(task: Task) -> None:
    ev = evaluate(task, task.anchor_artifact)
    assert ev.gate.verdict == "pass" and not ev.gate.unverifiable
    assert ev.score.o_eval == 1
    rep = verify_artifact(task, task.anchor_artifact_bytes())
    assert rep.exit_code == 0 and rep.gate == "pass" and rep.lean == "ok"
    assert rep.o_eval == 1


def test_old_source_values_are_infeasible(task: Task) -> None:
    doc = {
        "q5": {"max_head_speed_mps": 2.00002, "max_speed_ratio_when_head_1mps": 0.99999},
        "q2": {"terminal_time_s": 464.0},
        "q3": {"minimum_pitch_m": 0.4},
        "q4": {"original_turn_length_m": 14.1372, "shortest_turn_length_m": 14.1372},
    }
    ev = run(task, doc)
    failed = {i.check.id for i in ev.gate.failed}
    assert failed == {"head_speed_limit", "ratio_at_least_one", "q2_before_spiral_centre"}
    assert ev.score.o_eval == 0


@pytest.mark.parametrize(
    "path,factor",
    [
        ("q5.max_head_speed_mps", 1.01),
        ("q2.terminal_time_s", 1.01),
        ("q3.minimum_pitch_m", 0.99),
        ("q4.original_turn_length_m", 0.99),
    ],
)
def test_a_one_percent_miss_either_way_scores_below_one(
    task: Task, path: str, factor: float
) -> None:
    for f in (factor, 2 - factor):
        doc = anchor_doc(task)
        sec, name = path.split(".")
        doc[sec][name] *= f
        if sec == "q5":  # keep the pair consistent: ratio = 2 / speed
            doc["q5"]["max_speed_ratio_when_head_1mps"] = 2 / doc["q5"]["max_head_speed_mps"]
        if sec == "q4":
            doc["q4"]["shortest_turn_length_m"] = doc["q4"]["original_turn_length_m"]
        ev = run(task, doc)
        assert ev.gate.verdict == "pass", ev.gate.to_json()["failed"]
        assert 0 < ev.score.o_eval < 1, (path, f)


def test_the_trivial_speed_answer_gets_nothing_for_problem_5(task: Task) -> None:
    """'max head speed 2.0, ratio 1.0' scored 0.9999 before; it is feasible by the bounds but
    far from the computed maximum, so Problem 5 scores 0."""
    doc = anchor_doc(task)
    doc["q5"] = {"max_head_speed_mps": 2.0, "max_speed_ratio_when_head_1mps": 1.0}
    ev = run(task, doc)
    assert ev.gate.verdict == "pass" and metric(ev, "max_head_speed").reward == 0
    assert ev.score.o_eval == Fraction(3, 5)  # weights 2 of 5 lost


def test_six_decimal_answers_pass_the_product_slack(task: Task) -> None:
    for v, r in (("1.246266", "1.604793"), ("1.246267", "1.604794")):
        text = exact.dumps(task.anchor_artifact)
        doc = json.loads(text)
        doc["q5"] = {"max_head_speed_mps": float(v), "max_speed_ratio_when_head_1mps": float(r)}
        ev = run(task, doc)
        assert ev.gate.verdict == "pass" and metric(ev, "max_head_speed").reward > Fraction(99, 100)


@pytest.mark.parametrize(
    "check,path,value",
    [
        ("head_speed_limit", "q5.max_head_speed_mps", 2.01),
        ("ratio_at_least_one", "q5.max_speed_ratio_when_head_1mps", 0.99),
        ("speed_times_ratio_limit", "q5.max_speed_ratio_when_head_1mps", 1.7),
        ("q2_before_spiral_centre", "q2.terminal_time_s", 450.0),
        ("q2_before_spiral_centre", "q2.terminal_time_s", -1.0),
        ("q3_pitch_range", "q3.minimum_pitch_m", 0.25),
        ("q3_pitch_range", "q3.minimum_pitch_m", 1.8),
        ("q4_adjusted_not_longer", "q4.shortest_turn_length_m", 13.7),
        ("q4_turn_at_least_diameter", "q4.original_turn_length_m", 8.9),
        ("q4_shortest_at_least_diameter", "q4.shortest_turn_length_m", 8.5),
    ],
)
def test_each_bound_has_a_violating_case(task: Task, check: str, path: str, value: float) -> None:
    doc = anchor_doc(task)
    sec, name = path.split(".")
    doc[sec][name] = value
    ev = run(task, doc)
    failed = {i.check.id: i for i in ev.gate.failed}
    assert check in failed and (path in failed[check].message or path in failed[check].values)
    assert ev.score.o_eval == 0


def test_a_missing_field_zeroes_everything(task: Task) -> None:
    """Every field is gated, and a check that cannot be evaluated zeroes every metric: leaving
    out a problem (or the speed ratio that keeps the head speed honest) never pays."""
    for sec, name in [("q2", None), ("q3", None), ("q5", "max_speed_ratio_when_head_1mps")]:
        doc = anchor_doc(task)
        if name is None:
            del doc[sec]
        else:
            del doc[sec][name]
        ev = run(task, doc)
        assert ev.score.o_eval == 0, sec
        assert all(m.reward == 0 and m.reason.startswith("unverifiable") for m in ev.score.metrics)


@pytest.mark.parametrize(
    "old,new,code,why",
    [
        ("1.246266358", "NaN", 1, "q5.max_head_speed_mps: not a finite number"),
        ("412.4738377", '"soon"', 1, "q2.terminal_time_s: wrong type (string"),
        ("0.4503373931", "-0.45", 1, "q3.minimum_pitch_m=-0.45; required in [0.3, 1.7]"),
        ("1.604793379", "1e999999", 1, "not a finite number (out-of-range number"),
        # a huge table where a number belongs: refused by the input caps before any check
        ("13.62124491", "[" + ",".join(["1"] * 1_000_000) + "]", 2, "over the cap"),
    ],
)
def test_bad_input_scores_zero_with_a_reason(
    task: Task, old: str, new: str, code: int, why: str
) -> None:
    text = exact.dumps(task.anchor_artifact, indent=None).replace(old, new, 1)
    rep = verify_artifact(task, text.encode(), lean=False)
    assert rep.exit_code == code and rep.o_eval == 0
    assert any(why in f for f in [rep.error, *rep.failing]), (rep.error, rep.failing)


def test_reference_directory_stays_out_of_the_agent_image(task: Task) -> None:
    env = TASK_DIR / "environment"
    assert not any(p.name in ("computed.json", "dragon_geometry.py") for p in env.rglob("*"))
    assert "reference" not in (TASK_DIR / "environment" / "Dockerfile").read_text(encoding="utf-8")
    assert Path(REF_DIR / "compute_reference.py").is_file()
