"""CUMCM 2023 B Problem 4 replay (tbmm.replay.multibeam_lines) on the real depth grid: the
geometry against independent computations, the discretisation against finer settings, the
verified reference scores 1.0, claims must match their replay, other feasible designs score
per their replay, each constraint has a violating answer, and bad input scores 0 with a
reason (never a crash or a hang)."""

from __future__ import annotations

import copy
import json
import math
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tbmm.core import exact, rules
from tbmm.core.bounds import CpuBudget
from tbmm.replay import ReplayInputError
from tbmm.replay import multibeam_lines as mb
from tbmm.suite.tasks import TASKS_ROOT, Task, load_task
from tbmm.verdict.pipeline import Evaluation, evaluate
from tbmm.verdict.scoring import ArtifactError, read_artifact
from tbmm.verify import verify_artifact

SLUG = "cumcm-2023-b-multibeam-lines"
TASK_DIR = TASKS_ROOT / "CUMCM" / SLUG
CLAIMS = ("total_line_length_nmi", "missed_area_pct", "overlap_over_20pct_length_nmi")

sys.path.insert(0, str(TASK_DIR / "reference"))
import make_reference as mr  # noqa: E402


@pytest.fixture(scope="module")
def task() -> Task:
    return load_task(TASK_DIR)


@pytest.fixture(scope="module")
def grid() -> mb.Grid:
    return mb.load_grid(TASK_DIR / "environment" / "data")


@pytest.fixture(scope="module")
def params(task: Task) -> mb.Params:
    assert task.replay_spec is not None
    return mb.Params.from_spec(task.replay_spec.params)


def reference() -> dict[str, Any]:
    return json.loads((TASK_DIR / "reference.json").read_text())["artifact"]


def ref_segments() -> list[tuple[float, ...]]:
    return [tuple(d[k] for k in mb.KEYS) for d in reference()["q4"]["lines"]]


def design(segs: list[tuple[float, ...]], **claims: float) -> dict[str, Any]:
    doc = copy.deepcopy(reference())
    doc["q4"]["lines"] = [
        dict(zip(mb.KEYS, (round(float(v), 6) for v in s), strict=True)) for s in segs
    ]
    doc["q4"].update(claims)
    return doc


def run(task: Task, doc: dict[str, Any]) -> Evaluation:
    return evaluate(task, read_artifact(json.dumps(doc), task.caps), CpuBudget(120))


def replayed(ev: Evaluation) -> dict[str, float]:
    assert ev.replay is not None and ev.replay.status == "ok", ev.replay
    return {k: float(exact.parse_decimal(v)) for k, v in ev.replay.values.items()}


def settle(task: Task, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its three claims set to what its lines replay to."""
    vals = replayed(run(task, doc))
    out = copy.deepcopy(doc)
    for c in CLAIMS:
        out["q4"][c] = vals[f"q4.{c}"]
    return out


def failed_ids(ev: Evaluation) -> set[str]:
    return {i.check.id for i in ev.gate.failed}


def replay_values(task: Task, segs: list[tuple[float, ...]], **params: Any) -> dict[str, float]:
    """Replay `segs` directly with the task's parameters, some overridden."""
    from types import SimpleNamespace

    assert task.replay_spec is not None
    spec = SimpleNamespace(params={**task.replay_spec.params, **params})
    doc = exact.loads(json.dumps(design(segs)))
    out = mb.replay(doc, task, spec, CpuBudget(120))
    return {k: float(v) for k, v in out.values.items()}


def flat_grid(depth: float) -> mb.Grid:
    return mb.Grid(0.0, 0.0, 0.02, np.full((251, 201), depth))


def plane_grid(depth0: float, slope_x: float) -> mb.Grid:
    """Depth depth0 + slope_x * x (x in metres), over the task's 4 x 5 nmi frame."""
    x_m = np.arange(201) * 0.02 * 1852
    return mb.Grid(0.0, 0.0, 0.02, np.tile(depth0 + slope_x * x_m, (251, 1)))


# -- the data and the geometry ------------------------------------------------------------------


def test_depth_grid_is_the_attachment(grid: mb.Grid) -> None:
    """附件.xlsx: 201 x 251 nodes every 0.02 nmi over x in [0, 4], y in [0, 5], depths 20-197.2 m."""
    assert (grid.nx, grid.ny, grid.step) == (201, 251, 0.02)
    assert (grid.x0, grid.y0, grid.x1, grid.y1) == (0.0, 0.0, 4.0, 5.0)
    assert grid.depth.min() == 20.0 and grid.depth.max() == 197.2
    assert grid.depth[0, 0] == 24.4 and grid.depth[0, -1] == 197.2  # south-west, south-east
    assert grid.depth[-1, 0] == 84.4 and grid.depth[-1, -1] == 65.2  # north-west, north-east


def test_bilinear_depth_and_gradient(grid: mb.Grid) -> None:
    """At nodes the depth is the table's; midway it is the mean; the gradient is the
    bilinear surface's (checked by central differences)."""
    d, _, _ = mb.depth_and_gradient(grid, np.array([0.02, 1.0]), np.array([0.04, 2.0]), 1852)
    assert d[0] == pytest.approx(grid.depth[2, 1]) and d[1] == pytest.approx(grid.depth[100, 50])
    x, y = np.array([1.013]), np.array([2.517])
    d, gx, gy = mb.depth_and_gradient(grid, x, y, 1852)
    h = 1e-6
    dxp = (
        mb.depth_and_gradient(grid, x + h, y, 1852)[0]
        - mb.depth_and_gradient(grid, x - h, y, 1852)[0]
    )
    dyp = (
        mb.depth_and_gradient(grid, x, y + h, 1852)[0]
        - mb.depth_and_gradient(grid, x, y - h, 1852)[0]
    )
    assert gx[0] == pytest.approx(dxp[0] / (2 * h * 1852), rel=1e-6)
    assert gy[0] == pytest.approx(dyp[0] / (2 * h * 1852), rel=1e-6)


def test_reaches_are_the_beam_edges_on_the_sloped_bottom() -> None:
    """Independent: intersect each 60-degree beam edge with the tilted bottom by bisection;
    the horizontal distances are the replay's reaches, and their sum over cos(a) is the
    statement's W = D sin60 (1/cos(60+a) + 1/cos(60-a))."""
    half = math.radians(60)
    for depth, slope_deg in ((70.0, 1.5), (120.0, 3.0), (20.0, -2.0), (110.0, 0.0)):
        a = math.radians(slope_deg)
        rp, rm = mb.reaches(np.array([depth]), np.array([math.tan(a)]), half, 1.0)

        def edge(sign: float, depth: float = depth, a: float = a) -> float:
            # ray x = s sin60 * sign, z = s cos60 (down); bottom z = depth + x tan a
            lo, hi = 0.0, 10 * depth
            for _ in range(200):
                s = (lo + hi) / 2
                x = sign * s * math.sin(half)
                if s * math.cos(half) < depth + x * math.tan(a):
                    lo = s
                else:
                    hi = s
            return abs(sign * lo * math.sin(half))

        assert rp[0] == pytest.approx(edge(+1), rel=1e-9)
        assert rm[0] == pytest.approx(edge(-1), rel=1e-9)
        w = depth * math.sin(half) * (1 / math.cos(half + a) + 1 / math.cos(half - a))
        assert (rp[0] + rm[0]) / math.cos(a) == pytest.approx(w, rel=1e-12)


def test_parallel_lines_on_a_flat_bottom_overlap_by_one_minus_d_over_w() -> None:
    """Problem 1's eta = 1 - d/W: two parallel lines d apart on a flat 50 m bottom."""
    g = flat_grid(50.0)
    p = mb.Params()
    w = 2 * 50.0 * math.tan(math.radians(60)) / 1852
    for d in (0.5 * w, 0.85 * w, 0.95 * w):
        geo = np.array([[1.0, 1.0, 1.0, 2.0], [1.0 + d, 1.0, 1.0 + d, 2.0]])
        sw = mb.build_swaths(g, geo, [0, 1], p)
        eta = mb.overlap_shares(sw, CpuBudget(60))
        # line 0 runs north: its +n side is west; the neighbour lies east (-n side)
        assert np.allclose(eta[sw.off[0] : sw.off[1], 1], 1 - d / w)
        assert np.all(np.isnan(eta[sw.off[0] : sw.off[1], 0]))
        assert np.allclose(eta[sw.off[1] : sw.off[2], 0], 1 - d / w)


def test_overlap_along_the_ray_for_a_tilted_neighbour() -> None:
    """A neighbour at 10 degrees on a planar slope: the overlap share from the formula
    equals a direct measurement along each ping (sample the ray; a point is in the
    neighbour's swath when its offset from that line is within the reach there), away from
    the neighbour's ends; where the formula gives a gap the ping meets no other swath."""
    g = plane_grid(60.0, math.tan(math.radians(1.0)))
    p = mb.Params()
    ang = math.radians(10)
    geo = np.array(
        [[1.5, 1.0, 1.5, 2.0], [1.62, 1.3, 1.62 + 0.6 * math.sin(ang), 1.3 + 0.6 * math.cos(ang)]]
    )
    sw = mb.build_swaths(g, geo, [0, 1], p)
    eta = mb.overlap_shares(sw, CpuBudget(60))
    half = math.radians(60)
    a1, u1, n1 = sw.a[1], sw.u[1], sw.n[1]
    checked = 0
    for i in range(sw.off[0], sw.off[1]):
        if np.isnan(eta[i, 1]):
            continue
        P, ray = sw.pts[i], -sw.n[0]  # the neighbour lies on line 0's -n side (east)
        w = sw.rp[i] + sw.rm[i]
        s = np.linspace(0, sw.rm[i], 20001)
        pts = P + s[:, None] * ray
        t = (pts - a1) @ u1
        c = (pts - a1) @ n1
        foot = a1 + np.clip(t, 0, sw.length[1])[:, None] * u1
        d, gx, gy = mb.depth_and_gradient(g, foot[:, 0], foot[:, 1], 1852)
        rp, rm = mb.reaches(d, gx * n1[0] + gy * n1[1], half, 1852)
        inside = (t >= 0) & (t <= sw.length[1]) & (c <= rp) & (c >= -rm)
        measured = inside.mean() * sw.rm[i] / w
        if not 1.34 < P[1] < 1.86:
            continue  # near the neighbour's ends its band is cut short (the stated approximation)
        if eta[i, 1] <= 0:
            assert measured == 0  # a gap
        else:
            assert eta[i, 1] == pytest.approx(measured, abs=2e-3)
        checked += 1
    assert checked > 30


def naive_overlap(sw: mb.Swaths) -> np.ndarray:
    """The stated adjacency rule, station by station and candidate by candidate (no
    distance prefilter, no pruning)."""
    K, S = len(sw.ids), len(sw.pts)
    eta = np.full((S, 2), np.nan)
    rmax = [
        max(sw.rp[sw.off[k] : sw.off[k + 1]].max(), sw.rm[sw.off[k] : sw.off[k + 1]].max())
        for k in range(K)
    ]
    for k in range(K):
        for i in range(sw.off[k], sw.off[k + 1]):
            for side, sign in ((0, 1.0), (1, -1.0)):
                r_side = sw.rp[i] if side == 0 else sw.rm[i]
                best = None
                for j in range(K):
                    cos = abs(float(sw.n[k] @ sw.n[j]))
                    if j == k or cos < 1e-9:
                        continue
                    m = np.array([sign * sw.n[k], -sw.u[j]]).T
                    v, t = np.linalg.solve(m, sw.a[j] - sw.pts[i])
                    ok = -1e-12 <= t <= sw.length[j] + 1e-12 and -1e-12 <= v <= r_side + rmax[
                        j
                    ] / max(cos, 0.5)
                    if ok and (best is None or v < best[0]):
                        best = (max(v, 0.0), j, t, cos)
                if best is None:
                    continue
                v, j, t, cos = best
                face = sw.rp if sign * float(sw.n[k] @ sw.n[j]) < 0 else sw.rm
                r_face = mb._interp(sw, np.array([j]), np.array([t]), face)[0]
                w = sw.rp[i] + sw.rm[i]
                eta[i, side] = min(r_side + r_face / cos - v, w) / w
    return eta


def test_pruned_search_matches_naive(grid: mb.Grid) -> None:
    """The block-pruned nearest-crossing search equals the plain search on a mixed design:
    random segments, a slanted parallel group and a fan (crossings everywhere)."""
    rng = np.random.default_rng(3)
    segs = []
    for _ in range(20):
        a = rng.uniform([0.3, 0.3], [3.7, 4.7])
        ang, length = rng.uniform(0, np.pi), rng.uniform(0.05, 0.6)
        b = np.clip(a + length * np.array([np.cos(ang), np.sin(ang)]), 0, [4, 5])
        segs.append((*a, *b))
    segs += [(x, 1.0, x + 0.05, 2.0) for x in np.linspace(1.0, 1.6, 8)]
    segs += [(2.5, 3.5, 2.5 + 0.5 * np.cos(0.2 * k), 3.5 + 0.5 * np.sin(0.2 * k)) for k in range(6)]
    sw = mb.build_swaths(
        grid, np.array(segs), list(range(len(segs))), mb.Params(station_step_nmi=0.02)
    )
    fast = mb.overlap_shares(sw, CpuBudget(60))
    slow = naive_overlap(sw)
    assert np.array_equal(np.isnan(fast), np.isnan(slow))
    both = ~np.isnan(fast)
    assert both.sum() > 200
    assert np.max(np.abs(fast[both] - slow[both])) < 1e-12


def test_pruned_search_matches_naive_on_crossing_bundles(grid: mb.Grid) -> None:
    """Lines crossing at one point (every pair changes side there, the case the finer blocks
    and the valid-run narrowing target), a bundle crossing at a quarter of its length and a
    near-parallel tilted group, some lines repeated: the pruned search equals the plain one."""
    segs: list[tuple[float, ...]] = []
    for cx, cy, spread, at in ((1.5, 1.5, 0.15, 0.5), (2.8, 3.2, 0.5, 0.25)):
        for a in np.linspace(np.pi / 2 - spread, np.pi / 2 + spread, 7):
            d = np.array([np.cos(a), np.sin(a)])
            segs.append((*(np.array([cx, cy]) - at * d), *(np.array([cx, cy]) + (1 - at) * d)))
    rng = np.random.default_rng(5)
    for x in np.linspace(0.8, 0.9, 5):
        tilt = rng.uniform(-0.08, 0.08)
        segs.append((x, 3.0, x + tilt, 3.8))
    segs += [segs[0], segs[0], segs[-1], segs[3]]  # exact repeats: one stands for its class
    sw = mb.build_swaths(
        grid, np.array(segs), list(range(len(segs))), mb.Params(station_step_nmi=0.02)
    )
    fast = mb.overlap_shares(sw, CpuBudget(60))
    slow = naive_overlap(sw)
    assert np.array_equal(np.isnan(fast), np.isnan(slow))
    both = ~np.isnan(fast)
    assert both.sum() > 300
    assert np.max(np.abs(fast[both] - slow[both])) < 1e-12


def test_coverage_draws_a_repeated_segment_once_and_nothing_else_less(
    grid: mb.Grid, params: mb.Params
) -> None:
    """Exact repeats are drawn once, near repeats (1e-9 nmi apart, or reversed) are not
    repeats: the coverage is the frozen v1's, cell for cell, which draws every segment."""
    from tests.reference_replays import multibeam_lines_v1 as R

    base = [(1.0, 1.0, 1.0, 2.0), (2.0, 0.5, 3.0, 3.5), (0.2, 4.0, 3.8, 4.1)]
    segs = base * 5 + [(1.0 + 1e-9, 1.0, 1.0, 2.0), (3.0, 3.5, 2.0, 0.5), (0.5, 0.3, 0.9, 0.3)]
    sw = mb.build_swaths(grid, np.array(segs), list(range(len(segs))), params)
    got = mb.coverage(grid, sw, params, CpuBudget(60))
    assert np.array_equal(got, R.coverage(grid, sw, params, CpuBudget(60)))
    alone = mb.build_swaths(grid, np.array(segs[-1:]), [0], params)
    assert got.sum() > mb.coverage(grid, alone, params, CpuBudget(60)).sum() > 0


def test_repeats_are_exact_repeats_only(grid: mb.Grid, params: mb.Params) -> None:
    """Only a segment with the same start, direction and length stands for another: a
    shorter or longer one on the same line, a reversed one or a shifted one does not."""
    a = (1.0, 1.0, 1.5, 2.0)
    segs = [a, (1.0, 1.0, 1.25, 1.5), a, (1.5, 2.0, 1.0, 1.0), (1.0, 1.0, 1.75, 2.5), a]
    segs.append((1.0 + 1e-12, 1.0, 1.5, 2.0))
    sw = mb.build_swaths(grid, np.array(segs), list(range(len(segs))), params)
    assert mb._repeats(sw).tolist() == [0, 1, 0, 3, 4, 0, 6]


def test_valid_run_keeps_every_valid_station() -> None:
    """The narrowing before the block search drops only stations the exact test refuses:
    random linear distances, constant ones, tiny slopes and bounds met exactly."""
    rng = np.random.default_rng(11)
    n = 4000
    v0 = rng.uniform(-2, 2, n)
    dv = rng.uniform(-0.05, 0.05, n) * rng.choice([1.0, 1e-13, 0.0], n, p=[0.8, 0.1, 0.1])
    vmax = rng.uniform(0, 0.5, n)
    v0[:50] = -mb.TOL  # on the bound
    lo = rng.integers(0, 50, n)
    hi = lo + rng.integers(-1, 120, n)
    nlo, nhi = mb._valid_run(lo, hi, v0, dv, vmax)
    for e in range(n):
        i = np.arange(lo[e], hi[e] + 1)
        d = v0[e] + dv[e] * i
        valid = i[(d >= -mb.TOL) & (d <= vmax[e])]
        assert np.all((valid >= nlo[e]) & (valid <= nhi[e])), e


def test_group_first_is_the_smallest_per_key() -> None:
    rng = np.random.default_rng(2)
    key = rng.integers(0, 300, 5000)
    dist = rng.choice(rng.uniform(0, 1, 400), 5000)  # repeated values: exact ties
    pick = mb._group_first(key, dist, 300)
    assert sorted(key[pick].tolist()) == sorted(set(key.tolist()))
    for e in pick:
        same = np.flatnonzero(key == key[e])
        assert dist[e] == dist[same].min() and e == same[dist[same] == dist[e]][0]


def test_neighbour_distance_test_is_the_segment_distance() -> None:
    """`_segments_within` settles pairs by crossing, then by each end distance in turn: the
    same verdict as the distance between the segments (min of the four end distances, 0
    where they cross) against the limit, for crossing, touching, collinear and apart pairs."""
    rng = np.random.default_rng(4)
    m = 3000
    pts = rng.uniform(0, 2, (m, 4))
    pts[:200, 2:] = pts[:200, :2] + (pts[:200, :2] - pts[200:400, :2]) * 0.5  # collinear-ish
    pts[400:500] = pts[500:600]  # duplicates
    e = (pts[:, 0], pts[:, 1], pts[:, 2], pts[:, 3])
    pk = rng.integers(0, m, 20000)
    pj = rng.integers(0, m, 20000)
    lim = rng.uniform(0, 0.3, 20000)

    def seg_dist(k: int, j: int) -> float:
        a1, b1, a2, b2 = pts[k, :2], pts[k, 2:], pts[j, :2], pts[j, 2:]

        def cross(u: np.ndarray, v: np.ndarray) -> float:
            return float(u[0] * v[1] - u[1] * v[0])

        def ps(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
            d = b - a
            t = np.clip(float((p - a) @ d) / max(float(d @ d), 1e-300), 0.0, 1.0)
            return float(np.hypot(*(p - (a + t * d))))

        if (
            cross(b1 - a1, a2 - a1) * cross(b1 - a1, b2 - a1) < 0
            and cross(b2 - a2, a1 - a2) * cross(b2 - a2, b1 - a2) < 0
        ):
            return 0.0
        return min(ps(a1, a2, b2), ps(b1, a2, b2), ps(a2, a1, b1), ps(b2, a1, b1))

    got = mb._segments_within(e, pk, pj, lim)
    want = np.array([seg_dist(k, j) <= li for k, j, li in zip(pk, pj, lim, strict=True)])
    assert np.array_equal(got, want)
    assert 0 < got.sum() < got.size


def test_a_bent_line_is_not_its_own_neighbour_but_a_hairpin_is(task: Task) -> None:
    """Pieces of a line bent by 30 degrees never cross each other's pings (no overlap
    counted at the bend); a hairpin (the second piece runs back 0.05 nmi beside the first)
    makes two adjacent strips, overlapping by far more than 20 % along their common length."""
    bend = (2.0, 2.0)
    first = (2.0, 1.0, *bend)
    bent = replay_values(
        task, [first, (*bend, 2.0 + math.sin(math.radians(30)), 2.0 + math.cos(math.radians(30)))]
    )
    assert bent["q4.overlap_over_20pct_length_nmi"] == 0
    hairpin = replay_values(task, [first, (*bend, 2.05, 2.0), (2.05, 2.0, 2.05, 1.0)])
    assert hairpin["q4.overlap_over_20pct_length_nmi"] == pytest.approx(1.0, abs=0.02)


# -- adversarial layouts: overlap cannot be hidden by crossing or tilting lines ---------------


def per_segment_excess(
    grid: mb.Grid, params: mb.Params, segs: list[tuple[float, ...]]
) -> np.ndarray:
    """The replay's over-20 % length (nmi) per segment of `segs` (all inside the area)."""
    sw = mb.build_swaths(grid, np.array(segs, dtype=float), list(range(len(segs))), params)
    eta = mb.overlap_shares(sw, CpuBudget(60), params.max_neighbours)
    over = np.nan_to_num(eta, nan=-np.inf) > params.overlap_limit
    per = over.sum(axis=1) * 0.5 * sw.dt[sw.seg_of]
    return np.bincount(sw.seg_of, weights=per, minlength=len(segs))


def dense_lines(spacing: float) -> list[tuple[float, ...]]:
    """Five north-south lines 2 nmi long over the deep east (depth 60-160 m)."""
    return [(3.0 + i * spacing, 1.0, 3.0 + i * spacing, 3.0) for i in range(5)]


def herringbone(spacing: float, tilt_deg: float = 35.0, piece: float = 0.05, opposed: bool = True):
    """The same five lines as zigzags (pieces tilted +-tilt_deg from north). `opposed`:
    neighbouring lines in opposite phase, so facing pieces cross at 2 * tilt_deg = 70
    degrees, steeper than the 60 degrees an adjacency rule restricted to near-parallel lines
    would look at; otherwise the zigzags run in phase (parallel wiggly lines)."""
    shift = piece * math.tan(math.radians(tilt_deg))
    segs = []
    for i in range(5):
        x = 3.0 + i * spacing
        flip = opposed and i % 2 == 1
        pts = [
            (x + (shift if (m % 2 == 1) != flip else 0.0), 1.0 + m * piece)
            for m in range(round(2.0 / piece) + 1)
        ]
        segs += [(*a, *b) for a, b in zip(pts[:-1], pts[1:], strict=False)]
    return segs


@pytest.mark.slow
@pytest.mark.parametrize("spacing", [0.1, 0.15, 0.2])
def test_a_herringbone_does_not_hide_its_overlap(
    grid: mb.Grid, params: mb.Params, spacing: float
) -> None:
    """Zigzag lines whose facing pieces cross at 70 degrees: every crossing line within
    reach can be the adjacent one, so the herringbone reports at least the over-20 % length
    of straight lines at the same spacing (its pieces run closer together than those
    lines), never 0 as it would if steep crossings were exempt; and, like zigzags in phase,
    at least what the independent union measure (every other swath along every ping, see
    `union_excess`) finds, up to 0.1 nmi."""
    straight = per_segment_excess(grid, params, dense_lines(spacing)).sum()
    zig = per_segment_excess(grid, params, herringbone(spacing)).sum()
    assert zig >= straight and zig > 1.0, (spacing, straight, zig)
    for opposed in (True, False):
        segs = herringbone(spacing, opposed=opposed)
        sw = mb.build_swaths(grid, np.array(segs), list(range(len(segs))), params)
        replay = per_segment_excess(grid, params, segs).sum()
        assert replay >= union_excess(sw, samples=64) - 0.1, (spacing, opposed, replay)


@pytest.mark.slow
@pytest.mark.parametrize(
    "ties",
    [
        [(3.0, y, 3.4, y) for y in (1.5, 2.0, 2.5)],  # perpendicular
        [(3.0, 1.2, 3.4, 1.6), (3.0, 2.2, 3.4, 2.6)],  # 45 degrees
        [(3.0, 2.0, 3.4, 2.0 + 0.4 * math.tan(math.radians(10)))],  # 80 degrees
        [(3.05, 1.0, 3.05, 3.0), (3.15, 1.0, 3.35, 3.0)],  # in-between and slanted lines
    ],
)
def test_crossing_lines_do_not_hide_the_overlap_of_parallel_ones(
    task: Task, grid: mb.Grid, params: mb.Params, ties: list[tuple[float, ...]]
) -> None:
    """Dense parallel lines (overlap > 20 % along most of them) plus lines crossing or
    running between them: the parallel lines' own over-20 % length does not drop (a nearer
    crossing line only brings more overlap), and the design's total does not either."""
    base = dense_lines(0.1)
    alone = per_segment_excess(grid, params, base)
    assert alone.sum() > 5
    mixed = per_segment_excess(grid, params, base + ties)
    assert np.all(mixed[: len(base)] >= alone - 1e-9), (alone, mixed[: len(base)])
    assert replay_values(task, base + ties)["q4.overlap_over_20pct_length_nmi"] >= alone.sum()


def test_duplicated_and_split_lines_count_as_overlap(task: Task) -> None:
    """A line given twice, or split into collinear pieces that overlap, is surveyed twice:
    the doubled stretch counts as over-20 % overlap on both copies (each copy lies on both
    sides of the other's nadir); a line split end to end is not doubled."""
    one = [(2.0, 1.0, 2.0, 3.0)]
    assert replay_values(task, one)["q4.overlap_over_20pct_length_nmi"] == 0
    twice = replay_values(task, one * 2)
    assert twice["q4.overlap_over_20pct_length_nmi"] == pytest.approx(4.0, abs=0.02)
    halves = replay_values(task, [(2.0, 1.0, 2.0, 2.2), (2.0, 1.8, 2.0, 3.0)])
    assert halves["q4.overlap_over_20pct_length_nmi"] == pytest.approx(0.8, abs=0.03)
    split = replay_values(task, [(2.0, 1.0, 2.0, 2.0), (2.0, 2.0, 2.0, 3.0)])
    assert split["q4.overlap_over_20pct_length_nmi"] == 0


def test_tiny_segments_neither_break_nor_help(task: Task) -> None:
    """Segments of 1e-6 nmi (legal: positive length) replay without error, survey nothing
    and do not lower the over-20 % length of the design they are added to."""
    ref = replayed(run(task, reference()))
    tiny = [(0.5 + 0.3 * i, 2.5, 0.5 + 0.3 * i + 1e-6, 2.5) for i in range(10)]
    vals = replay_values(task, ref_segments() + tiny)
    assert vals["q4.missed_area_pct"] == ref["q4.missed_area_pct"]
    assert vals["q4.overlap_over_20pct_length_nmi"] >= ref["q4.overlap_over_20pct_length_nmi"]
    alone = replay_values(task, tiny)
    assert alone["q4.missed_area_pct"] == 100 and alone["q4.zero_length_segments"] == 0


def union_excess(sw: mb.Swaths, samples: int = 128) -> float:
    """An independent over-20 % length: the overlap share of a ping's side is the part of
    its ray, from the nadir to its reach, that lies in ANY other segment's swath (membership
    tested point by point with that segment's reaches interpolated where the point falls),
    sampled at `samples` midpoints, instead of the replay's band of the nearest line crossed.
    The pieces of a bent line that turn by less than 90 degrees are not each other's
    neighbours (their swaths meet only inside the bend). Brute force over all pairs, pruned
    only by where a segment's swath rectangle projects onto the other segment's axis."""
    K, S = len(sw.ids), len(sw.pts)
    seg_of = sw.seg_of
    end = sw.a + sw.length[:, None] * sw.u
    big = np.array(
        [
            max(sw.rp[sw.off[k] : sw.off[k + 1]].max(), sw.rm[sw.off[k] : sw.off[k + 1]].max())
            for k in range(K)
        ]
    )
    f = (np.arange(samples) + 0.5) / samples
    across = big[:, None] * sw.n
    corners = np.stack([sw.a + across, sw.a - across, end + across, end - across])  # (4, K, 2)
    shares = np.zeros((S, 2))
    for side, sign, r in ((0, 1.0, sw.rp), (1, -1.0, sw.rm)):
        hit = np.zeros((S, samples), dtype=bool)
        for k in range(K):
            t = (corners - sw.a[k]) @ sw.u[k]  # (4, K): j's swath rectangle in k's frame
            c = (corners - sw.a[k]) @ sw.n[k]
            near = (c.min(axis=0) <= big[k]) & (c.max(axis=0) >= -big[k])
            for j in np.flatnonzero(near):
                if j == k:
                    continue
                chained = (
                    np.array_equal(end[k], sw.a[j]) or np.array_equal(end[j], sw.a[k])
                ) and sw.u[k] @ sw.u[j] > 0
                if chained:
                    continue
                lo, hi = t[:, j].min(), t[:, j].max()
                st = np.arange(sw.off[k], sw.off[k + 1])
                tk = (np.arange(st.size) + 0.5) * sw.dt[k]
                st = st[(tk >= lo) & (tk <= hi)]
                if st.size == 0:
                    continue
                pts = (
                    sw.pts[st][:, None, :]
                    + (sign * r[st])[:, None, None] * f[None, :, None] * sw.n[k]
                )
                rel = pts - sw.a[j]
                tj, cj = rel @ sw.u[j], rel @ sw.n[j]
                jj = np.full(tj.size, j)
                rp = mb._interp(sw, jj, tj.ravel(), sw.rp).reshape(tj.shape)
                rm = mb._interp(sw, jj, tj.ravel(), sw.rm).reshape(tj.shape)
                hit[st] |= (tj >= 0) & (tj <= sw.length[j]) & (cj <= rp) & (cj >= -rm)
        shares[:, side] = hit.mean(axis=1) * r / (sw.rp + sw.rm)
    over = shares > 0.2
    return float((over.sum(axis=1) * 0.5 * sw.dt[seg_of]).sum())


@pytest.mark.slow
@pytest.mark.parametrize("which", ["reference", "uniform", "straight"])
def test_overlap_agrees_with_the_union_of_all_other_swaths(
    grid: mb.Grid, params: mb.Params, which: str
) -> None:
    """On layouts of parallel and near-parallel lines (the reference, its 16 bands and
    east-west western part; north-south lines 0.1 nmi apart; five dense deep-water lines) the
    replay's nearest-crossing rule and the independent union measure give the same
    over-20 % length within 0.15 nmi, well inside the gate's 0.5 nmi + 5 % (the reference:
    4.100 against 4.025; with 32 samples per ray the union measure's own resolution, 1/32 of
    a side, moves it to 4.717: the reference keeps many pings just under 20 %)."""
    segs = {
        "reference": ref_segments(),
        "uniform": uniform_design(),
        "straight": dense_lines(0.15),
    }[which]
    sw = mb.build_swaths(grid, np.array(segs, dtype=float), list(range(len(segs))), params)
    eta = mb.overlap_shares(sw, CpuBudget(60), params.max_neighbours)
    over = np.nan_to_num(eta, nan=-np.inf) > params.overlap_limit
    replay = float((over.sum(axis=1) * 0.5 * sw.dt[sw.seg_of]).sum())
    union = union_excess(sw)
    assert abs(replay - union) < 0.15, (replay, union)


# -- discretisation -----------------------------------------------------------------------------


def gap_design() -> list[tuple[float, ...]]:
    """The reference without every third north-south segment: gaps of many widths."""
    return [s for i, s in enumerate(ref_segments()) if s[0] != s[2] or i % 3]


def uniform_design() -> list[tuple[float, ...]]:
    """North-south lines every 0.1 nmi: narrow gaps beside grid-aligned lines."""
    return [(0.05 + 0.1 * i, 0.0, 0.05 + 0.1 * i, 5.0) for i in range(40)]


@pytest.mark.slow
def test_refining_the_evaluation_grid(task: Task) -> None:
    """The missed share on 0.01 nmi cells is within 0.05 percentage points of 0.005 and
    0.0025 nmi cells (the gate's tolerance is 0.5 points + 5 %)."""
    for segs in (ref_segments(), gap_design(), uniform_design()):
        base = replay_values(task, segs)["q4.missed_area_pct"]
        for step in ("0.005", "0.0025"):
            fine = replay_values(task, segs, eval_step_nmi=step)["q4.missed_area_pct"]
            assert abs(fine - base) < 0.05, (step, base, fine)
    assert replay_values(task, gap_design())["q4.missed_area_pct"] > 1  # gaps are counted


def test_refining_the_station_step(task: Task) -> None:
    """Stations every 0.01 nmi: 0.005 and 0.0025 nmi move the over-20 % length by < 0.05 nmi
    and the missed share by < 0.01 points."""
    for segs in (ref_segments(), uniform_design()):
        base = replay_values(task, segs)
        for step in ("0.005", "0.0025"):
            fine = replay_values(task, segs, station_step_nmi=step)
            key = "q4.overlap_over_20pct_length_nmi"
            assert abs(fine[key] - base[key]) < 0.05, (step, base[key], fine[key])
            assert abs(fine["q4.missed_area_pct"] - base["q4.missed_area_pct"]) < 0.01


# -- the reference and the score ------------------------------------------------------------------


@pytest.mark.slow
def test_reference_is_reproducible() -> None:
    """reference/make_reference.py rebuilds the committed reference design."""
    assert [tuple(float(v) for v in s) for s in mr.reference_segments()] == [
        tuple(float(v) for v in s) for s in ref_segments()
    ]


@pytest.mark.slow
def test_caps_agree(task: Task, params: mb.Params) -> None:
    """The list's max_items (input caps) is the replay's segment cap."""
    (ls,) = task.artifact_map.lists
    assert ls.path == mb.LIST and ls.max_items == params.max_lines
    assert task.caps.list_cap(mb.LIST) == params.max_lines


@pytest.mark.slow
def test_oracle_scores_one(task: Task) -> None:
    ev = run(task, reference())
    vals = replayed(ev)
    assert vals["q4.missed_area_pct"] == 0 and vals["q4.endpoints_outside_area"] == 0
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1
    rep = verify_artifact(task, json.dumps(reference()).encode(), lean=True)
    assert rep.exit_code == 0 and rep.lean == "ok" and rep.o_eval == 1.0, rep.failing


def test_inflated_claims_are_misreported(task: Task) -> None:
    for claim, factor, check in (
        ("total_line_length_nmi", 0.9, "q4_total_length_replayed"),
        ("overlap_over_20pct_length_nmi", 0.5, "q4_excess_overlap_replayed"),
    ):
        doc = reference()
        doc["q4"][claim] *= factor
        ev = run(task, doc)
        assert check in failed_ids(ev) and ev.score.o_eval == 0
        msg = next(i.message for i in ev.gate.failed if i.check.id == check)
        assert "misreported" in msg
    doc = settle(task, design(gap_design()))
    doc["q4"]["missed_area_pct"] = 0.5
    ev = run(task, doc)
    assert "q4_missed_share_replayed" in failed_ids(ev)


def test_the_issue_exploit_fails(task: Task) -> None:
    """{length 1 nmi, missed 0 %, overlap 0}: without lines nothing is verifiable; with the
    reference's lines it is misreported; with a real 1 nmi line it misses 99 % of the area."""
    claims = {"total_line_length_nmi": 1, "missed_area_pct": 0, "overlap_over_20pct_length_nmi": 0}
    bare = {"q4": dict(claims), "q3": reference()["q3"]}
    ev = run(task, bare)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert "q4.lines" in ev.replay.error and ev.score.o_eval == 0
    ev = run(task, design(ref_segments(), **claims))
    assert {"q4_total_length_replayed", "q4_excess_overlap_replayed"} <= failed_ids(ev)
    assert ev.score.o_eval == 0
    one = design([(3.0, 2.0, 3.0, 3.0)], **claims)
    ev = run(task, one)
    assert replayed(ev)["q4.missed_area_pct"] > 90
    assert "q4_area_is_surveyed" in failed_ids(ev) and ev.score.o_eval == 0
    assert "q4_area_is_surveyed" in failed_ids(run(task, settle(task, one)))


def expected_reward(task: Task, metric_id: str, value: float | Fraction) -> Fraction:
    m = next(m for m in task.metrics if m.id == metric_id)
    x = Fraction(str(value)) if isinstance(value, float) else value
    return rules.reward(rules.Direction(m.spec.direction), x, m.anchor, m.band)


@pytest.mark.slow
def test_a_different_feasible_design_scores_per_its_replay(
    task: Task, grid: mb.Grid, params: mb.Params
) -> None:
    """Full-length north-south lines with >= 10 % overlap: feasible, 335 nmi, over-20 %
    along 207 nmi; scored by the rules on those replayed values."""
    segs = mr.segments(grid, params, [mr.Block(0, 0, 4, 5, True)])
    ev = run(task, settle(task, design(segs)))
    assert ev.gate.verdict == "pass", [i.message for i in ev.gate.failed]
    got = {ms.id: ms.reward for ms in ev.score.metrics}
    vals = ev.replay.values  # type: ignore[union-attr]
    for mid, path in (
        ("q4_total_line_length", "q4.total_line_length_nmi"),
        ("q4_missed_area_pct", "q4.missed_area_pct"),
        ("q4_overlap_over_20pct_length", "q4.overlap_over_20pct_length_nmi"),
    ):
        assert got[mid] == expected_reward(task, mid, exact.parse_decimal(vals[path]))
    assert got["q4_missed_area_pct"] == 1 and got["q4_overlap_over_20pct_length"] == 0
    assert 0.3 < float(got["q4_total_line_length"]) < 0.35
    assert 0.4 < ev.score.o_eval < 0.5


@pytest.mark.slow
def test_a_better_design_is_not_penalised(task: Task, grid: mb.Grid, params: mb.Params) -> None:
    """The reference's procedure with 5 % minimum overlap instead of 10 %: shorter, less
    over-20 % overlap, still complete: O-Eval 1."""
    old = mr.ETA_MIN
    try:
        mr.ETA_MIN = 0.05
        segs = mr.segments(grid, params, mr.layouts()["EW x<0.8, NS 12 bands"])
    finally:
        mr.ETA_MIN = old
    ev = run(task, settle(task, design(segs)))
    vals = replayed(ev)
    ref = replayed(run(task, reference()))
    for key in ("q4.total_line_length_nmi", "q4.overlap_over_20pct_length_nmi"):
        assert vals[key] < ref[key]
    assert vals["q4.missed_area_pct"] == 0
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1


# -- constraints -----------------------------------------------------------------------------------


def test_an_endpoint_outside_the_area_fails_naming_the_segment(task: Task) -> None:
    segs = ref_segments()
    x0, y0, x1, y1 = segs[7]
    segs[7] = (x0, y0, 4.2 if x1 > x0 else x1, y1)
    ev = run(task, settle(task, design(segs)))
    assert "q4_lines_inside_area" in failed_ids(ev) and ev.score.o_eval == 0
    msg = next(i.message for i in ev.gate.failed if i.check.id == "q4_lines_inside_area")
    assert "q4.lines[7] end" in msg
    # exactly on the boundary is inside
    edge = ref_segments()
    edge[0] = (0, edge[0][1], 4, edge[0][3])
    assert "q4_lines_inside_area" not in failed_ids(run(task, settle(task, design(edge))))


def test_a_zero_length_segment_fails_naming_it(task: Task) -> None:
    segs = ref_segments() + [(2.0, 2.0, 2.0, 2.0)]
    ev = run(task, settle(task, design(segs)))
    assert "q4_segments_have_length" in failed_ids(ev) and ev.score.o_eval == 0
    msg = next(i.message for i in ev.gate.failed if i.check.id == "q4_segments_have_length")
    assert f"q4.lines[{len(segs) - 1}]" in msg


def test_missing_more_than_two_percent_fails(task: Task) -> None:
    """Half the reference's lines: a honest report, but the area is not surveyed."""
    doc = settle(task, design(ref_segments()[::2]))
    ev = run(task, doc)
    assert replayed(ev)["q4.missed_area_pct"] > 2
    assert "q4_area_is_surveyed" in failed_ids(ev) and ev.score.o_eval == 0
    msg = next(i.message for i in ev.gate.failed if i.check.id == "q4_area_is_surveyed")
    assert "evaluation points" in msg or "evaluation cells" in msg


def test_a_forged_replayed_block_is_replaced(task: Task) -> None:
    """An answer that carries its own `replayed` block (the reference's values) beside half
    the reference's lines is scored on what its lines replay to: the block is discarded."""
    doc = settle(task, design(ref_segments()[::2]))
    doc["replayed"] = {
        "q4": {
            "total_line_length_nmi": 249.8875,
            "missed_area_pct": 0,
            "overlap_over_20pct_length_nmi": 4.1001,
            "endpoints_outside_area": 0,
            "zero_length_segments": 0,
        }
    }
    ev = run(task, doc)
    assert replayed(ev)["q4.missed_area_pct"] > 2
    assert "q4_area_is_surveyed" in failed_ids(ev) and ev.score.o_eval == 0


def test_claims_must_be_coherent(task: Task) -> None:
    doc = reference()
    doc["q4"]["missed_area_pct"] = -1
    assert "q4_missed_share_is_percent" in failed_ids(run(task, doc))
    doc = reference()
    doc["q4"]["overlap_over_20pct_length_nmi"] = 300
    assert "q4_excess_overlap_within_lines" in failed_ids(run(task, doc))


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d["q4"].pop("lines"), "q4.lines: missing"),
        (lambda d: d["q4"].__setitem__("lines", {"a": 1}), "must be a list"),
        (lambda d: d["q4"].__setitem__("lines", []), "empty"),
        (lambda d: d["q4"]["lines"][3].pop("y_end_nmi"), "q4.lines[3].y_end_nmi: missing"),
        (lambda d: d["q4"]["lines"][5].__setitem__("x_start_nmi", "1.5"), "not a number"),
        (lambda d: d["q4"]["lines"][5].__setitem__("x_start_nmi", None), "q4.lines[5].x_start_nmi"),
        (lambda d: d["q4"]["lines"][0].__setitem__("x_end_nmi", 1e9), "not a coordinate"),
        (lambda d: d["q4"]["lines"].__setitem__(2, [1, 2, 3, 4]), "must be an object"),
    ],
)
def test_bad_decisions_score_zero_with_a_reason(task: Task, mutate: Any, reason: str) -> None:
    doc = reference()
    mutate(doc)
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert reason in ev.replay.error, ev.replay.error
    assert ev.score.o_eval == 0


def test_nan_and_huge_numbers_are_refused(task: Task) -> None:
    text = json.dumps(reference()).replace('"x_start_nmi": 0,', '"x_start_nmi": NaN,', 1)
    ev = evaluate(task, read_artifact(text, task.caps))
    assert ev.replay is not None and "not a finite number" in ev.replay.error
    assert ev.score.o_eval == 0
    text = json.dumps(reference()).replace('"x_start_nmi": 0,', '"x_start_nmi": 1e300,', 1)
    ev = evaluate(task, read_artifact(text, task.caps))
    assert ev.replay is not None and "not a coordinate" in ev.replay.error


def test_stacked_lines_and_overlong_designs_are_refused(task: Task) -> None:
    """Stacked or fanned lines (more than 200 candidate neighbours) and more than 1,000 nmi
    of lines are refused as input, with the reason, before the costly work."""
    ev = run(task, design([(1.0, 1.0, 1.0, 2.0)] * 202))
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert "q4.lines[0]: 201 other segments" in ev.replay.error
    fan = [(2.0, 2.5, 2.0 + math.cos(a), 2.5 + math.sin(a)) for a in np.linspace(0, math.pi, 700)]
    ev = run(task, design(fan))
    assert ev.replay is not None and "stacked or fanned" in ev.replay.error
    ev = run(task, design([(x, 0.0, x, 5.0) for x in np.linspace(0.01, 3.99, 201)]))
    assert ev.replay is not None and "over the cap of 1000 nmi" in ev.replay.error
    assert ev.score.o_eval == 0


def test_a_huge_table_is_refused_fast(task: Task) -> None:
    """10^6 segments (and 1,001) are over the list cap: refused before parsing, by the
    task's input caps; verify reports over_caps."""
    row = '{"x_start_nmi": 1, "y_start_nmi": 1, "x_end_nmi": 1, "y_end_nmi": 2}'
    for n in (1001, 10**6 // 40):
        text = '{"q4": {"lines": [' + ",".join([row] * n) + "]}}"
        with pytest.raises(ArtifactError, match="over the cap"):
            read_artifact(text, task.caps)
    big = '{"q4": {"lines": [' + ",".join([row] * 10**6) + "]}}"
    rep = verify_artifact(task, big.encode(), lean=False)
    assert rep.exit_code == 2 and rep.status == "over_caps" and rep.o_eval == 0


@pytest.mark.slow
def test_the_largest_legal_designs_replay(task: Task) -> None:
    """The benchmark's most expensive legal designs (tbmm.tooling.bench.multibeam_lines_largest: at
    the caps of 1,000 segments, 1,000 nmi and 200 candidate neighbours) are accepted, not
    refused, and replay to finite values (a generous deadline: their CPU time against the
    15 s budget is the benchmark's figure, never a timed assertion)."""
    from tbmm.replay import run_replay
    from tbmm.tooling.bench import multibeam_lines_artifact, multibeam_lines_largest

    for name, segs in multibeam_lines_largest().items():
        assert len(segs) <= 1000, name
        _, rep = run_replay(task, multibeam_lines_artifact(task, segs), CpuBudget(600))
        assert rep is not None and rep.status == "ok", (name, rep)
        vals = {k: float(exact.parse_decimal(v)) for k, v in rep.values.items()}
        assert all(math.isfinite(v) for v in vals.values()), (name, vals)
        assert vals["q4.total_line_length_nmi"] <= 1000, name


@pytest.mark.slow
def test_the_replay_checks_its_own_cap(task: Task, params: mb.Params) -> None:
    """Called directly (not through the input caps), the replay refuses more segments than
    its cap too."""
    doc = exact.loads(json.dumps(design([(1.0, 1.0, 1.0, 2.0)] * (params.max_lines + 1))))
    from types import SimpleNamespace

    assert task.replay_spec is not None
    with pytest.raises(ReplayInputError, match="over the cap of 1000"):
        mb.replay(doc, task, SimpleNamespace(params=task.replay_spec.params), CpuBudget(60))


def test_segments_outside_the_area_still_replay(task: Task) -> None:
    """A segment entirely outside the area adds its length but no swath; the gate fails."""
    segs = ref_segments() + [(4.5, 1.0, 4.5, 2.0)]
    ev = run(task, settle(task, design(segs)))
    vals = replayed(ev)
    assert vals["q4.endpoints_outside_area"] == 2
    assert vals["q4.total_line_length_nmi"] == pytest.approx(249.8875 + 1, abs=1e-9)
    assert "q4_lines_inside_area" in failed_ids(ev)


def test_replay_data_path_is_the_task_attachment(task: Task) -> None:
    assert Path(task.data_dir / "attachments" / mb.ATTACHMENT).is_file()


# --- against the frozen reference implementation -----------------------------------------------


def _same_as_reference(task: Task, doc: dict[str, Any]) -> None:
    """The production replay and the frozen copy of 2026-12-02 give the same outcome: every
    value equal as a float (so to the rounded digits), the same details and notes."""
    from tests.reference_replays import multibeam_lines_v1 as R

    old = R.replay(doc, task, task.replay_spec, CpuBudget(600))
    new = mb.replay(doc, task, task.replay_spec, CpuBudget(600))
    assert old.values == new.values
    assert (old.details, old.notes) == (new.details, new.notes)


def test_the_anchor_replays_as_the_reference_implementation(task: Task) -> None:
    from tbmm.replay import strip_replayed

    _same_as_reference(task, strip_replayed(task.anchor_artifact)[0])


@pytest.mark.slow
def test_the_benchmark_corpus_replays_as_the_reference_implementation(task: Task) -> None:
    """`tbmm bench`'s most expensive legal designs (tbmm.tooling.bench.multibeam_lines_largest)."""
    from tbmm.tooling.bench import multibeam_lines_artifact, multibeam_lines_largest

    for segs in multibeam_lines_largest().values():
        _same_as_reference(task, multibeam_lines_artifact(task, segs))
