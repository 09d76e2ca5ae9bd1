"""CUMCM 2025 A (smoke screen): the replay of drop strategies, on the real task.

The replay's geometry is checked against independent brute force (dense rim sampling and
per-point segment/ball tests), its time search against a fine fixed step, and the verdict
pipeline on the task's own reference: the oracle scores 1.0, lying is misreported, every
rule of the statement has a violating case that names the decision, and bad input scores 0
with a reason instead of crashing or hanging.
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from tbmm.core import exact
from tbmm.replay import CpuBudget, ReplayInputError, strip_replayed
from tbmm.replay import smoke_screen as ss
from tbmm.suite.models import ReplaySpec
from tbmm.suite.tasks import TASKS_ROOT, Task, load_task
from tbmm.verdict.pipeline import Evaluation, evaluate
from tbmm.verdict.scoring import read_artifact
from tbmm.verify import verify_artifact

SLUG = "cumcm-2025-a-smoke-screen"
TASK_DIR = TASKS_ROOT / "CUMCM" / SLUG


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


@pytest.fixture(scope="module")
def spec(task: Task) -> ReplaySpec:
    assert task.replay_spec is not None
    return task.replay_spec


@pytest.fixture(scope="module")
def scene(spec: ReplaySpec) -> ss.Scene:
    return ss.scene_from_params(spec.params)


@pytest.fixture(scope="module")
def oracle(task: Task) -> dict[str, Any]:
    """The reference artifact as plain JSON (the oracle writes exactly this)."""
    own, _ = strip_replayed(task.anchor_artifact)
    return json.loads(exact.dumps(own))


def run(task: Task, doc: dict[str, Any]) -> Evaluation:
    return evaluate(task, read_artifact(json.dumps(doc), task.caps))


def failed(ev: Evaluation) -> dict[str, str]:
    return {i.name: i.message for i in ev.gate.failed}


def with_claims(task: Task, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with every claim set to its replayed value (an honest answer)."""
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "ok", ev.replay
    out = copy.deepcopy(doc)
    for path, text in ev.replay.values.items():
        qid, _, name = path.partition(".")
        if name.endswith("shielding_s") and qid in out:
            out[qid][name] = float(text)
    return out


# --- geometry against brute force ------------------------------------------------------


def brute_rim_max(
    P: np.ndarray, C: np.ndarray, ctr: np.ndarray, r: float, R: float, n: int
) -> float:
    """max over n rim points of dist(C, segment [P, Q]) − R, by direct sampling."""
    th = np.linspace(0, 2 * math.pi, n, endpoint=False)
    Q = np.stack([ctr[0] + r * np.cos(th), ctr[1] + r * np.sin(th), np.full(n, ctr[2])], axis=1)
    v, w = Q - P, C - P
    s = np.clip((v @ w) / np.einsum("ij,ij->i", v, v), 0, 1)
    return float(np.max(np.linalg.norm(s[:, None] * v - w, axis=1)) - R)


def random_geometry(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Missile/cloud pairs around the target: far and near, on and off the sightline, with
    the missile inside the ball and rim points inside the ball among them."""
    ctr = np.array([0.0, 200.0, 5.0])
    P = ctr + rng.normal(size=(n, 3)) * np.array([8000, 3000, 800])
    P[:, 2] = np.abs(P[:, 2]) + 20
    lam = rng.choice([0.0, 0.002, 0.5, 0.95, 0.999, 1.0], size=n)
    C = (
        P
        + lam[:, None] * (ctr - P)
        + rng.normal(size=(n, 3)) * rng.choice([0.5, 3, 8, 30], size=(n, 1))
    )
    return P, C


def test_rim_maximum_is_exact(scene: ss.Scene) -> None:
    rng = np.random.default_rng(7)
    P, C = random_geometry(rng, 400)
    ctr = scene.target_base
    r, R = scene.target_radius, scene.cloud_radius
    got = ss.rim_excess(P, C, ctr, r, R)
    n = 20000
    slack = r * math.pi / n  # the sampled maximum is within r·Δθ/2 of the true one
    for k in range(len(P)):
        b = brute_rim_max(P[k], C[k], ctr, r, R, n)
        assert b - 1e-9 <= got[k] <= b + slack + 1e-9, (k, got[k], b)


def test_quartic_roots_match_companion_eigenvalues() -> None:
    rng = np.random.default_rng(3)
    co = rng.normal(size=(500, 5)) + 1j * rng.normal(size=(500, 5))
    z = ss.quartic_roots(co)
    comp = np.zeros((500, 4, 4), dtype=complex)
    comp[:, 1, 0] = comp[:, 2, 1] = comp[:, 3, 2] = 1
    comp[:, :, 3] = -co[:, :4] / co[:, 4:5]
    e = np.linalg.eigvals(comp)
    assert np.max(np.abs(np.sort_complex(z) - np.sort_complex(e))) < 1e-8


def test_rims_decide_the_whole_cylinder(scene: ss.Scene) -> None:
    """Convexity: when both rims are hidden, so is every point of the solid cylinder."""
    rng = np.random.default_rng(11)
    P, C = random_geometry(rng, 3000)
    H = ss.target_excess(scene, P, C)
    hidden = np.nonzero(H <= 0)[0]
    assert len(hidden) > 50
    base, r, h, R = scene.target_base, scene.target_radius, scene.target_height, scene.cloud_radius
    m = 4000
    rad = r * np.sqrt(rng.uniform(0, 1, m))
    ang = rng.uniform(0, 2 * math.pi, m)
    pts = np.stack(
        [base[0] + rad * np.cos(ang), base[1] + rad * np.sin(ang), base[2] + rng.uniform(0, h, m)],
        axis=1,
    )
    for k in hidden:
        v, w = pts - P[k], C[k] - P[k]
        s = np.clip((v @ w) / np.einsum("ij,ij->i", v, v), 0, 1)
        assert np.all(np.linalg.norm(s[:, None] * v - w, axis=1) <= R + 1e-9)


def brute_covered(
    scene: ss.Scene, missile: str, drops: list[ss.Drop], dt: float, n_rim: int
) -> tuple[np.ndarray, np.ndarray]:
    """Independent fixed-step classification: at the midpoints of steps of dt, whether one
    cloud hides every point of both rims sampled at n_rim points (per-point segment/ball)."""
    P0 = scene.missiles[missile]
    u = (scene.decoy - P0) / np.linalg.norm(scene.decoy - P0)
    th = np.linspace(0, 2 * math.pi, n_rim, endpoint=False)
    b = scene.target_base
    Q = np.concatenate(
        [
            np.stack(
                [
                    b[0] + scene.target_radius * np.cos(th),
                    b[1] + scene.target_radius * np.sin(th),
                    np.full(n_rim, b[2] + z),
                ],
                axis=1,
            )
            for z in (0.0, scene.target_height)
        ]
    )
    ts = np.arange(0.0, scene.arrival(missile), dt) + dt / 2
    covered = np.zeros(len(ts), dtype=bool)
    for d in drops:
        t0 = d.detonation_time
        sel = np.nonzero((ts >= t0) & (ts <= t0 + scene.cloud_life) & ~covered)[0]
        for chunk in np.array_split(sel, max(1, len(sel) // 200)):
            if len(chunk) == 0:
                continue
            t = ts[chunk]
            P = P0[None, :] + (scene.missile_speed * t)[:, None] * u[None, :]
            C = d.detonation_point[None, :] - np.outer(t - t0, [0.0, 0.0, scene.cloud_sink])
            v = Q[None, :, :] - P[:, None, :]
            w = (C - P)[:, None, :]
            s = np.clip(np.sum(v * w, axis=2) / np.sum(v * v, axis=2), 0, 1)
            dist = np.linalg.norm(s[..., None] * v - w, axis=2)
            covered[chunk] |= np.all(dist <= scene.cloud_radius, axis=1)
    return ts, covered


def test_problem1_strategy(scene: ss.Scene) -> None:
    """The statement's own Problem 1 strategy (FY1 at 120 m/s towards the decoy, release at
    1.5 s, detonation 3.6 s later): 1.3916 s by the replay, the fixed-step brute force agrees."""
    d = ss.make_drop(scene, 0, "FY1", ss.uav_velocity(180, 120), 1.5, 3.6)
    (res,) = ss.blocked_intervals(scene, [("M1", d)])
    got = ss.union_length(res.intervals)
    assert abs(got - 1.39164) < 1e-4
    assert res.error_bound < 1e-5
    ts, covered = brute_covered(scene, "M1", [d], 2e-3, 360)
    assert abs(covered.sum() * 2e-3 - got) < 5e-3  # midpoint rule: <= dt/2 per boundary


def question_drops(doc: dict[str, Any], scene: ss.Scene, qid: str) -> list[ss.Drop]:
    return ss.read_drops(exact.loads(json.dumps(doc)), scene.questions[qid], scene)


BRUTE_DT = 0.01


@pytest.fixture(scope="module")
def reference_brute(scene: ss.Scene, oracle: dict) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The reference's Problem 5 classified the common way: 10 ms steps, 360 points per rim."""
    drops = question_drops(oracle, scene, "q5")
    return {
        m: brute_covered(scene, m, drops, BRUTE_DT, 360) for m in scene.questions["q5"].missiles
    }


@pytest.mark.slow
def test_near_tangent_cloud_is_cheap_and_bounded(scene: ss.Scene) -> None:
    """An adversarial cloud that just grazes the blocking condition (found by bisection on
    the heading of the Problem 1 strategy): H touches 0, the worst case of a Lipschitz
    search. The replay stays within a few thousand evaluations of H and its rigorous error
    bound stays far below 0.01 s."""

    def replay_at(heading: float) -> ss.PairResult:
        d = ss.make_drop(scene, 0, "FY1", ss.uav_velocity(heading, 120), 1.5, 3.6)
        budget = ss.Budget(10**6)
        (res,) = ss.blocked_intervals(scene, [("M1", d)], budget=budget)
        used.append(10**6 - budget.remaining)
        return res

    used: list[int] = []
    lo, hi = 180.0, 181.0
    assert replay_at(lo).intervals and not replay_at(hi).intervals
    for _ in range(45):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if replay_at(mid).intervals else (lo, mid)
    used.clear()
    for heading in (lo, hi):
        res = replay_at(heading)
        assert ss.union_length(res.intervals) < 1e-3
        assert res.error_bound < 1e-3
    assert max(used) < 5000


@pytest.mark.slow
def test_reference_replay_agrees_with_fixed_step(
    task: Task, scene: ss.Scene, oracle: dict, reference_brute: dict
) -> None:
    """Two methods on the reference strategy. Pointwise: every fixed-step time farther than
    20 ms from a boundary of the replayed union is classified alike. In measure: the
    midpoint rule errs by at most dt/2 per boundary. The replay's rigorous bound is small."""
    q = scene.questions["q5"]
    drops = question_drops(oracle, scene, "q5")
    pairs = [(m, d) for m in q.missiles for d in drops]
    results = ss.blocked_intervals(scene, pairs)
    for m in q.missiles:
        ivs = sorted(
            iv for (mm, _), r in zip(pairs, results, strict=True) if mm == m for iv in r.intervals
        )
        merged: list[list[float]] = []
        for a, b in ivs:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        ts, covered = reference_brute[m]
        inside = np.zeros(len(ts), dtype=bool)
        near = np.zeros(len(ts), dtype=bool)
        for a, b in merged:
            inside |= (ts >= a) & (ts <= b)
            near |= (np.abs(ts - a) < 0.02) | (np.abs(ts - b) < 0.02)
        assert np.array_equal(inside[~near], covered[~near]), m
        length = sum(b - a for a, b in merged)
        assert abs(covered.sum() * BRUTE_DT - length) <= len(merged) * BRUTE_DT + 1e-9, m
    ev = run(task, oracle)
    bounds = [n for n in ev.replay.notes if "error bound" in n]  # type: ignore[union-attr]
    assert bounds and all(float(n.split("bound ")[1].split()[0]) < 1e-3 for n in bounds)


def test_agent_style_approximation_is_within_the_claim_tolerance(
    task: Task, scene: ss.Scene, oracle: dict, reference_brute: dict
) -> None:
    """An honest answer computed the common way (10 ms steps, 360 points per rim) passes
    the agree checks: this is what the tolerance is sized for."""
    doc = copy.deepcopy(oracle)
    total = 0.0
    for m, name in scene.questions["q5"].outputs.items():
        doc["q5"][name] = round(float(reference_brute[m][1].sum() * BRUTE_DT), 3)
        total += doc["q5"][name]
    doc["q5"]["total_shielding_s"] = round(total, 3)
    ev = run(task, doc)
    assert not [n for n in failed(ev) if n.startswith("q5")], failed(ev)
    assert ev.score.o_eval == 1


@pytest.mark.slow
def test_a_finer_time_floor_changes_nothing_visible(
    task: Task, spec: ReplaySpec, oracle: dict
) -> None:
    """time_floor_s = 1e-6 s: a 10x finer floor moves no replayed shielding time by 1e-5 s."""
    doc = exact.loads(json.dumps(oracle))
    base = ss.replay(doc, task, spec, CpuBudget(60))
    params = dict(spec.params)
    params["time_floor_s"] = "0.0000001"
    finer = ss.replay(doc, task, spec.model_copy(update={"params": params}), CpuBudget(60))
    for path, v in base.values.items():
        if path.endswith("shielding_s"):
            assert abs(float(v) - float(finer.values[path])) < 1e-5, path


# --- the verdict pipeline on the real task ---------------------------------------------


def test_oracle_scores_one_and_passes(task: Task, oracle: dict) -> None:
    ev = run(task, oracle)
    assert ev.replay is not None and ev.replay.status == "ok"
    assert ev.gate.verdict == "pass", failed(ev)
    assert not ev.gate.unverifiable
    assert ev.score.o_eval == 1
    report = verify_artifact(task, json.dumps(oracle).encode(), lean=False)
    assert report.exit_code == 0 and report.o_eval == 1.0
    assert report.replay["status"] == "ok"


def test_metrics_score_the_replay_not_the_claim(task: Task) -> None:
    paths = {m.spec.path for m in task.metrics}
    assert paths and all(p.startswith("replayed.q5.") for p in paths)


@pytest.mark.parametrize(
    ("qid", "name", "factor"),
    [("q5", "total_shielding_s", 1.2), ("q5", "m1_shielding_s", 1.1), ("q2", "shielding_s", 1.1)],
)
def test_inflated_claim_is_misreported(
    task: Task, oracle: dict, qid: str, name: str, factor: float
) -> None:
    doc = copy.deepcopy(oracle)
    doc[qid][name] = round(doc[qid][name] * factor + 0.2, 4)
    ev = run(task, doc)
    assert ev.gate.verdict == "fail" and ev.score.o_eval == 0
    msg = failed(ev)[f"{qid}_{name.removesuffix('_s')}_claim"]
    assert msg.startswith("misreported: claimed")


def test_old_anchor_style_claims_fail(task: Task, oracle: dict) -> None:
    """The source release's Problem 5 numbers (19.9 s total, 10.3/6.2/3.4 s) claimed for the
    reference's decisions are misreported unless the decisions achieve them."""
    doc = copy.deepcopy(oracle)
    doc["q5"].update(
        total_shielding_s=19.9, m1_shielding_s=10.3, m2_shielding_s=6.2, m3_shielding_s=3.4
    )
    ev = run(task, doc)
    assert ev.gate.verdict == "fail"
    assert any(n.startswith("q5_") and n.endswith("_claim") for n in failed(ev))


def test_same_shielding_by_other_decisions_scores_one(task: Task, oracle: dict) -> None:
    """Reordered drops (any order is allowed) plus an extra drop that shields nothing: a
    different decision, the same replayed shielding, full credit."""
    doc = copy.deepcopy(oracle)
    drops = doc["q5"]["drops"][::-1]
    counts = {u: sum(d["uav"] == u for d in drops) for u in ("FY1", "FY2", "FY3", "FY4", "FY5")}
    spare = next((u for u, n in counts.items() if n < 3), None)
    if spare is not None:
        last = max((d["release_time_s"] for d in drops if d["uav"] == spare), default=0.0)
        # released late, it detonates after every missile has arrived: it shields nothing
        drops.append({"uav": spare, "release_time_s": last + 70.0, "fuse_delay_s": 0.5})
    doc["q5"]["drops"] = drops
    ev = run(task, with_claims(task, doc))
    assert ev.gate.verdict == "pass", failed(ev)
    assert ev.score.o_eval == 1


def test_weaker_feasible_strategy_scores_its_replay(task: Task, oracle: dict) -> None:
    """One drop fewer, claims honest: feasible, scored below 1 by what it achieves."""
    doc = copy.deepcopy(oracle)
    doc["q5"]["drops"] = doc["q5"]["drops"][:-1]
    doc = with_claims(task, doc)
    ev = run(task, doc)
    assert ev.gate.verdict == "pass", failed(ev)
    assert 0 < ev.score.o_eval < 1
    total = next(m for m in ev.score.metrics if m.id == "q5_total_shielding")
    assert total.value_text == ev.replay.values["q5.total_shielding_s"]  # type: ignore[union-attr]
    expected = 1 - (total.anchor - exact.parse_decimal(total.value_text)) / total.band_effective
    assert total.reward == max(Fraction(0), expected)


def first_drop_of(doc: dict, uav: str) -> int:
    return next(i for i, d in enumerate(doc["q5"]["drops"]) if d["uav"] == uav)


@pytest.mark.parametrize(
    ("change", "check"),
    [
        (lambda d: d["q5"]["fy1"].update(speed_mps=140.5), "q5_fy1_speed"),
        (lambda d: d["q5"]["fy4"].update(speed_mps=69.9), "q5_fy4_speed"),
        (lambda d: d["q5"]["fy2"].update(heading_deg=360.01), "q5_fy2_heading"),
        (lambda d: d["q5"]["fy5"].update(heading_deg=-1), "q5_fy5_heading"),
        (lambda d: d["q5"]["drops"][0].update(release_time_s=-0.5), "q5_release_after_tasking[0]"),
        (lambda d: d["q5"]["drops"][1].update(fuse_delay_s=-0.1), "q5_fuse_nonneg[1]"),
    ],
)
def test_decision_rules(task: Task, oracle: dict, change: Any, check: str) -> None:
    doc = copy.deepcopy(oracle)
    change(doc)
    ev = run(task, doc)
    assert ev.gate.verdict == "fail" and ev.score.o_eval == 0
    assert check in failed(ev), failed(ev)


def test_detonation_below_ground_names_the_drop(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    i = first_drop_of(doc, doc["q5"]["drops"][0]["uav"])
    doc["q5"]["drops"][i]["fuse_delay_s"] = 25.0  # 0.5 g 25^2 = 3062 m > every UAV's altitude
    ev = run(task, doc)
    msg = failed(ev)[f"q5_detonation_above_ground[{i}]"]
    assert f"q5.drops[{i}]" in msg and "detonates at z = -" in msg


def test_too_many_drops_for_one_uav(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    base = {"uav": "FY3", "fuse_delay_s": 1.0}
    doc["q5"]["drops"] = [d for d in doc["q5"]["drops"] if d["uav"] == "FY1"]
    doc["q5"]["drops"] += [dict(base, release_time_s=float(t)) for t in (1, 3, 5, 7)]
    ev = run(task, doc)
    assert "FY3 drops 4" in failed(ev)["q5_drops_per_uav"]


def test_drops_less_than_one_second_apart(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    i = first_drop_of(doc, "FY1")
    d = dict(doc["q5"]["drops"][i])
    d["release_time_s"] = d["release_time_s"] + 0.4
    doc["q5"]["drops"] = [x for x in doc["q5"]["drops"] if x["uav"] != "FY1"] + [
        doc["q5"]["drops"][i],
        d,
    ]
    ev = run(task, doc)
    msg = failed(ev)["q5_release_gap"]
    assert "FY1" in msg and "0.4 s apart" in msg


def test_context_questions_have_their_own_rules(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    doc["q3"]["drops"] = doc["q3"]["drops"][:2]
    ev = run(task, doc)
    assert "FY1 drops 2" in failed(ev)["q3_drops_per_uav"]
    doc = copy.deepcopy(oracle)
    doc["q4"]["fy2"]["speed_mps"] = 150
    assert "q4_fy2_speed" in failed(run(task, doc))


def test_context_question_left_out_scores_zero(task: Task, oracle: dict) -> None:
    """Problems 2-4 are not scored but required (a missing field never pays)."""
    doc = copy.deepcopy(oracle)
    del doc["q3"]
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert "q3: missing" in ev.replay.error
    assert ev.score.o_eval == 0


# --- bad input ----------------------------------------------------------------------------


def unreplayable(task: Task, doc: dict | str) -> Evaluation:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    ev = evaluate(task, read_artifact(text, task.caps))
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert ev.score.o_eval == 0
    assert all(m.reward == 0 for m in ev.score.metrics)
    return ev


def test_missing_uav_is_unreplayable(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    del doc["q5"]["fy2"]
    ev = unreplayable(task, doc)
    assert "q5.fy2: missing" in ev.replay.error  # type: ignore[union-attr]
    assert any("q5.fy2" in m.reason for m in ev.score.metrics)


def test_missing_final_question_is_unreplayable(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    del doc["q5"]
    assert "q5" in unreplayable(task, doc).replay.error  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ({"release_time_s": "NaN"}, "not a number"),
        ({"fuse_delay_s": "Infinity"}, "not a number"),
        ({"fuse_delay_s": '"3"'}, "not a number"),
        ({"uav": '"FY9"'}, "is not one of"),
        ({"release_time_s": "1e300"}, "exceeds"),
    ],
)
def test_bad_numbers_and_ids(task: Task, oracle: dict, patch: dict, reason: str) -> None:
    doc = copy.deepcopy(oracle)
    key, raw = next(iter(patch.items()))
    doc["q5"]["drops"][0][key] = "@@"
    text = json.dumps(doc).replace('"@@"', raw)
    ev = unreplayable(task, text)
    assert "q5.drops[0]" in ev.replay.error and reason in ev.replay.error  # type: ignore[union-attr]


@pytest.mark.slow
def test_drop_table_beyond_the_statement_is_refused(
    task: Task, spec: ReplaySpec, oracle: dict
) -> None:
    """More drops than 5 UAVs x 3: verification refuses the artifact as unreadable before
    parsing numbers (the task's input caps come from the [[list]] bounds), and the replay
    itself refuses it before any geometry, even a table of a million drops."""
    doc = copy.deepcopy(oracle)
    doc["q5"]["drops"] = doc["q5"]["drops"] + [doc["q5"]["drops"][0]] * (
        16 - len(doc["q5"]["drops"])
    )
    report = verify_artifact(task, json.dumps(doc).encode(), lean=False)
    assert report.exit_code == 2 and report.o_eval == 0
    assert "q5.drops has 16 entries, over the cap of 15" in report.error
    huge = copy.deepcopy(oracle)
    huge["q5"]["drops"] = [huge["q5"]["drops"][0]] * 1_000_000
    with pytest.raises(ReplayInputError, match="at most 15"):
        ss.replay(huge, task, spec, CpuBudget(5))  # plain dict: the replay reads it as given


def test_drops_not_a_list(task: Task, oracle: dict) -> None:
    doc = copy.deepcopy(oracle)
    doc["q5"]["drops"] = {"uav": "FY1"}
    assert "q5.drops" in unreplayable(task, doc).replay.error  # type: ignore[union-attr]


@pytest.mark.slow
def test_work_cap_bounds_adversarial_input(task: Task, spec: ReplaySpec, oracle: dict) -> None:
    """With a tiny evaluation cap the replay still answers (leaves counted by interpolation)
    and reports the larger error bound instead of running on."""
    params = dict(spec.params)
    params["max_evaluations"] = 200
    doc = exact.loads(json.dumps(oracle))
    out = ss.replay(doc, task, spec.model_copy(update={"params": params}), CpuBudget(60))
    exact_out = ss.replay(doc, task, spec, CpuBudget(60))
    assert set(out.values) == set(exact_out.values)
    note = next(n for n in out.notes if n.startswith("q5: shielding error bound"))
    assert float(note.split("bound ")[1].split()[0]) > 1e-3


def test_replay_outputs_are_finite_fractions_after_rounding(task: Task, oracle: dict) -> None:
    ev = run(task, oracle)
    for text in ev.replay.values.values():  # type: ignore[union-attr]
        assert isinstance(exact.parse_decimal(text), Fraction)


@pytest.mark.slow
def test_replay_toml_constants_are_the_statements(spec: ReplaySpec) -> None:
    """The positions and constants replayed are the statement's (its verbatim text)."""
    text = (TASK_DIR / "instruction.md").read_text(encoding="utf-8").replace("\n", "")
    p = spec.params
    for pos in list(p["missiles"].values()) + list(p["uavs"].values()):
        x, y, z = (str(v).replace("-", "\u2212") for v in pos)
        assert f"({x}, {y}, {z})" in text, pos
    for needle in (
        "飞行速度300 m/s",
        "以3 m/s 的速度匀速下沉",
        "云团中心10 m 范围内",
        "起爆20s 内",
        "半径7 m、高10 m",
        "(0, 200, 0)",
        "至少间隔1 s",
        "70~140 m/s",
    ):
        assert needle in text, needle
    assert (
        p["missile_speed_mps"],
        p["cloud_sink_mps"],
        p["cloud_radius_m"],
        p["cloud_life_s"],
    ) == ("300", "3", "10", "20")
    assert (p["target_radius_m"], p["target_height_m"], p["min_release_gap_s"]) == ("7", "10", "1")


# --- adversarial: stacked grazing clouds, omitted claims ----------------------------------


def grazing_strategy(scene: ss.Scene, oracle: dict) -> dict:
    """The reference's Problem 5 with every blocking drop's fuse delay moved (by bisection,
    all drops at once) to where its cloud just stops hiding the target from its missile:
    every cloud grazes the criterion, the worst case of the replay's time search."""
    doc = copy.deepcopy(oracle)
    q5 = doc["q5"]

    def drop(d: dict, fuse: float) -> ss.Drop:
        b = q5[d["uav"].lower()]
        vel = ss.uav_velocity(b["heading_deg"], b["speed_mps"])
        return ss.make_drop(scene, 0, d["uav"], vel, d["release_time_s"], fuse)

    def hides(pairs: list[tuple[str, ss.Drop]]) -> list[bool]:
        res = ss.blocked_intervals(scene, pairs, budget=ss.Budget(10**8))
        return [bool(r.intervals) for r in res]

    work = []  # (drop, missile, blocking fuse, non-blocking fuse)
    for d in q5["drops"]:
        f = d["fuse_delay_s"]
        missiles = ("M1", "M2", "M3")
        hit = hides([(m, drop(d, f)) for m in missiles])
        if any(hit):
            m = missiles[hit.index(True)]
            far = next(f + k for k in (0.5, 1, 2, 4, 8) if not hides([(m, drop(d, f + k))])[0])
            work.append([d, m, f, far])
    assert len(work) >= 10
    for _ in range(32):  # the fuse to ~1e-9 s
        mids = [(lo + hi) / 2 for _, _, lo, hi in work]
        hit = hides([(m, drop(d, f)) for (d, m, _, _), f in zip(work, mids, strict=True)])
        for w, f, h in zip(work, mids, hit, strict=True):
            w[2 if h else 3] = f
    for d, _, lo, _ in work:
        d["fuse_delay_s"] = lo
    return doc


def test_stacked_grazing_clouds_are_refused_not_guessed(
    task: Task, scene: ss.Scene, oracle: dict
) -> None:
    """A legal-size input built to exhaust the replay's work cap: every cloud grazes the
    criterion. The replay still answers within its cap, but its error bound exceeds the
    0.01 s the task asks for, so the gate refuses the strategy (naming the bound) instead of
    scoring a value it cannot certify. Without the cap the same input shields ~nothing: an
    honest strategy loses nothing by the refusal."""
    doc = grazing_strategy(scene, oracle)
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "ok"
    msg = failed(ev)["q5_shielding_resolved"]
    assert "shielding_error_bound_s" in msg
    assert ev.gate.verdict == "fail" and ev.score.o_eval == 0
    q5 = scene.questions["q5"]
    free = ss.replay_question(exact.loads(json.dumps(doc)), q5, scene, None, ss.Budget(10**8))
    assert free.values["q5.total_shielding_s"] < 0.01
    assert free.values["q5.shielding_error_bound_s"] < 0.1


@pytest.mark.parametrize("name", ["total_shielding_s", "m3_shielding_s"])
def test_omitted_claim_scores_zero(task: Task, oracle: dict, name: str) -> None:
    """A claim left out (the decisions kept) is not free credit: the agree check cannot be
    evaluated and every metric is zeroed."""
    doc = copy.deepcopy(oracle)
    del doc["q5"][name]
    ev = run(task, doc)
    assert ev.score.o_eval == 0
    check = f"q5_{name.removesuffix('_s')}_claim"
    assert {m.id for m in task.metrics} == set(ev.gate.unverifiable)
    assert any(check in reason for reason in ev.gate.unverifiable.values())


def test_reference_is_resolved_far_below_the_accuracy(task: Task, oracle: dict) -> None:
    ev = run(task, oracle)
    for qid in ("q2", "q3", "q4", "q5"):
        bound = ev.replay.values[f"{qid}.shielding_error_bound_s"]  # type: ignore[union-attr]
        assert exact.parse_decimal(bound) < Fraction(1, 10**4)


@pytest.mark.slow
def test_largest_legal_input_is_resolved_within_the_cap(task: Task, spec: ReplaySpec) -> None:
    """The benchmark's input (5 UAVs x 3 drops near the sightlines, plus Problems 2-4) stays
    within the work cap with an error bound far below the 0.01 s the gate allows (its time
    per replay is measured by tbmm.tooling.bench.bench_replay_smoke_screen, not here)."""
    from tbmm.tooling.bench import largest_smoke_screen_input

    doc = largest_smoke_screen_input(task)
    assert len(doc["q5"]["drops"]) == 15
    out = ss.replay(doc, task, spec, CpuBudget(60))
    for qid in ("q2", "q3", "q4", "q5"):
        assert out.values[f"{qid}.shielding_error_bound_s"] < 1e-3
    assert "evaluations of H left" in out.details["q5.shielding_error_bound_s"]
