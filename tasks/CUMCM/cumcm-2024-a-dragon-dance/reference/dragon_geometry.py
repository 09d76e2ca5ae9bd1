"""Ground truth of CUMCM 2024 A (the bench dragon), Problems 2-5, by two independent methods.

The statement fixes everything: 223 benches (head board 3.41 m, body/tail boards 2.20 m, all
0.30 m wide), handle holes 0.275 m from each board end, so consecutive handle centres are a
chord of 2.86 m (head bench) or 1.65 m (every other bench) apart; every handle centre lies on
the path the head's front handle travels. Problems 2-5 are therefore deterministic numbers.

Two methods compute every position, speed and contact independently:

* method A ("newton"): each next handle by Newton's method on the closed-form chord equation
  of the spiral (|P(theta') - P(theta)|^2 = d^2 in polar form) and by closed-form
  circle-circle intersection on the turning arcs; handle speeds by propagating the velocity
  along each rigid bench (the two handle velocities have equal components along the bench);
  bench contact by the separating-axis test of the two rectangles;
* method B ("bisection"): each next handle by bisection on the path's parameter (spiral angle,
  or arc length on the Problem 4 path) of the Cartesian distance; the turning curve rebuilt
  from its tangency conditions by bisection on the small radius; handle speeds by central
  finite differences of positions in time (Richardson-extrapolated); bench contact by the
  Euclidean distance between the rectangles (segment distances plus a containment test).

Conventions (the statement's figure 4): spiral r = b*theta with b = pitch/(2*pi), point
P(theta) = r(cos theta, sin theta); coiling in clockwise is theta decreasing; the head starts
at theta = 32*pi (point A on the 16th turn, r = 8.8 m for the 0.55 m pitch). Adjacent benches
share a handle and overlap at the joint by construction (the boards are stacked there, figure 3),
so only non-adjacent benches can collide.

Pure functions of floats; `numpy` only vectorises the pairwise contact tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

N_BENCHES = 223
N_HANDLES = N_BENCHES + 1
HEAD_BOARD_M = 3.41
BODY_BOARD_M = 2.20
BOARD_WIDTH_M = 0.30
HOLE_FROM_END_M = 0.275
HEAD_SPACING_M = HEAD_BOARD_M - 2 * HOLE_FROM_END_M  # 2.86 m between the head's two handles
BODY_SPACING_M = BODY_BOARD_M - 2 * HOLE_FROM_END_M  # 1.65 m
SPACINGS = (HEAD_SPACING_M,) + (BODY_SPACING_M,) * (N_BENCHES - 1)
BOARD_LENGTHS = (HEAD_BOARD_M,) + (BODY_BOARD_M,) * (N_BENCHES - 1)

Q1_PITCH_M = 0.55
Q1_START_THETA = 32 * math.pi  # point A: the 16th turn
TURN_RADIUS_M = 4.5  # the 9 m diameter turning space
Q3_START_RADIUS_M = 8.8  # Problem 3 window: the head coils in from the Problem 1 start radius
Q4_PITCH_M = 1.7
Q4_RADIUS_RATIO = 2.0  # the first arc's radius is twice the second's
SPEED_LIMIT_MPS = 2.0

Point = tuple[float, float]


class GeometryError(RuntimeError):
    """A solver did not converge or a configuration left the statement's geometry."""


# --------------------------------------------------------------------------------------------
# The Archimedean spiral r = b theta


def spiral_b(pitch: float) -> float:
    return pitch / (2 * math.pi)


def spiral_point(b: float, th: float) -> Point:
    r = b * th
    return (r * math.cos(th), r * math.sin(th))


def spiral_derivative(b: float, th: float) -> Point:
    """dP/dtheta (points outward along the spiral, counter-clockwise)."""
    c, s = math.cos(th), math.sin(th)
    return (b * (c - th * s), b * (s + th * c))


def arc_length(b: float, th: float) -> float:
    """Closed-form arc length of the spiral from its centre to angle th."""
    return 0.5 * b * (th * math.sqrt(1 + th * th) + math.asinh(th))


def _gauss_legendre(n: int) -> list[tuple[float, float]]:
    """Nodes and weights on [-1, 1] (Newton on the Legendre recurrence)."""
    out = []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for k in range(2, n + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            dp = n * (x * p1 - p0) / (x * x - 1)
            dx = p1 / dp
            x -= dx
            if abs(dx) < 1e-16:
                break
        out.append((x, 2 / ((1 - x * x) * dp * dp)))
    return out


_GL20 = _gauss_legendre(20)


def _gl_piece(lo: float, hi: float) -> float:
    """Integral of sqrt(1 + u^2) over [lo, hi] (hi - lo <= 1) by 20-point Gauss-Legendre."""
    h, mid = 0.5 * (hi - lo), 0.5 * (hi + lo)
    return h * sum(w * math.sqrt(1 + (mid + h * x) ** 2) for x, w in _GL20)


_QUAD_TABLE: list[float] = [0.0]  # integral of sqrt(1 + u^2) over [0, k], k = 0, 1, 2, ...


def arc_length_quadrature(b: float, th: float) -> float:
    """The same arc length by 20-point Gauss-Legendre quadrature of b*sqrt(1+theta^2) on unit
    sub-intervals (cumulated once) plus the last partial one (method B; independent of the
    closed form)."""
    k = int(th)
    while len(_QUAD_TABLE) <= k:
        j = len(_QUAD_TABLE) - 1
        _QUAD_TABLE.append(_QUAD_TABLE[-1] + _gl_piece(j, j + 1))
    return b * (_QUAD_TABLE[k] + _gl_piece(k, th))


def theta_at_arc_length_newton(b: float, target: float, guess: float) -> float:
    """theta with arc_length(b, theta) = target (Newton; arc_length is convex and increasing)."""
    th = max(guess, 1e-9)
    for _ in range(100):
        step = (arc_length(b, th) - target) / (b * math.sqrt(1 + th * th))
        new = th - step
        if new <= 0:
            new = th / 2
        if abs(new - th) <= 1e-15 * max(1.0, th):
            return new
        th = new
    raise GeometryError(f"arc-length inversion did not converge (target {target})")


def theta_at_arc_length_bisect(b: float, target: float, hi: float) -> float:
    """The same by bisection on [0, hi] with the quadrature arc length (method B)."""
    lo = 0.0
    if arc_length_quadrature(b, hi) < target:
        raise GeometryError("arc-length target beyond the bracket")
    while hi - lo > 4e-16 * hi:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if arc_length_quadrature(b, mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# --------------------------------------------------------------------------------------------
# Handle chains on one spiral (Problems 1-3): theta of every handle from the head's theta


def next_theta_newton(b: float, th: float, d: float) -> float:
    """The next handle behind (further out, theta' > theta) at chord d: Newton on the polar
    chord equation th^2 + th'^2 - 2 th th' cos(th' - th) = (d/b)^2."""
    target = (d / b) ** 2
    phi = th + d / (b * math.sqrt(1 + th * th))  # arc-length guess (chord <= arc)
    for _ in range(60):
        c, s = math.cos(phi - th), math.sin(phi - th)
        g = th * th + phi * phi - 2 * th * phi * c - target
        dg = 2 * phi - 2 * th * c + 2 * th * phi * s
        new = phi - g / dg
        if abs(new - phi) <= 1e-15 * new:
            phi = new
            break
        phi = new
    else:
        raise GeometryError(f"chord Newton did not converge at theta={th}")
    if not th < phi < th + math.pi:
        raise GeometryError(f"chord Newton left the bracket at theta={th}")
    return phi


def next_theta_bisect(b: float, th: float, d: float) -> float:
    """The same handle by bisection on delta in (0, pi] of the Cartesian distance (the chord
    grows monotonically with delta on (0, pi) along the spiral)."""
    x0, y0 = spiral_point(b, th)

    def dist(delta: float) -> float:
        x, y = spiral_point(b, th + delta)
        return math.hypot(x - x0, y - y0)

    lo, hi = 0.0, math.pi
    if dist(hi) < d:
        raise GeometryError(f"no handle within half a turn of theta={th}")
    while hi - lo > 2e-16 * (th + hi):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if dist(mid) < d:
            lo = mid
        else:
            hi = mid
    return th + 0.5 * (lo + hi)


def spiral_chain(b: float, th_head: float, method: str, n: int = N_HANDLES) -> list[float]:
    step = next_theta_newton if method == "newton" else next_theta_bisect
    ths = [th_head]
    for k in range(n - 1):
        ths.append(step(b, ths[-1], SPACINGS[k]))
    return ths


def spiral_speeds_analytic(b: float, ths: Sequence[float], head_speed: float = 1.0) -> list[float]:
    """Handle speeds along a coiling-in chain (method A): on a rigid bench the velocities of its
    two handles have equal components along the bench."""
    v = [head_speed]
    for k in range(1, len(ths)):
        p0, p1 = spiral_point(b, ths[k - 1]), spiral_point(b, ths[k])
        ex, ey = p0[0] - p1[0], p0[1] - p1[1]
        t0, t1 = spiral_derivative(b, ths[k - 1]), spiral_derivative(b, ths[k])
        # direction of travel is -dP/dtheta for both handles; the sign cancels in the ratio
        r = (
            (t0[0] * ex + t0[1] * ey)
            / math.hypot(*t0)
            / ((t1[0] * ex + t1[1] * ey) / math.hypot(*t1))
        )
        v.append(v[-1] * r)
    return v


# --------------------------------------------------------------------------------------------
# Bench rectangles and contact


def bench_corners(points: Sequence[Point]) -> np.ndarray:
    """Corners (n_benches x 4 x 2, in order around the rectangle) of every bench whose two
    handles are consecutive points (front handle first)."""
    p = np.asarray(points, dtype=float)
    front, rear = p[:-1], p[1:]
    u = front - rear
    u /= np.linalg.norm(u, axis=1)[:, None]
    nrm = np.stack([-u[:, 1], u[:, 0]], axis=1)
    a = front + HOLE_FROM_END_M * u
    c = rear - HOLE_FROM_END_M * u
    w = 0.5 * BOARD_WIDTH_M * nrm
    return np.stack([a + w, a - w, c - w, c + w], axis=1)


def _point_segment_dist(p: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    d = s1 - s0
    t = np.clip(((p - s0) * d).sum(axis=-1) / (d * d).sum(axis=-1), 0.0, 1.0)
    q = s0 + t[..., None] * d
    return np.linalg.norm(p - q, axis=-1)


def _segments_cross(p0: np.ndarray, p1: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    def orient(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])

    d1, d2 = orient(q0, q1, p0), orient(q0, q1, p1)
    d3, d4 = orient(p0, p1, q0), orient(p0, p1, q1)
    return (d1 * d2 < 0) & (d3 * d4 < 0)


_PAIRS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def _all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    if n not in _PAIRS:
        i, j = np.triu_indices(n, k=2)  # non-adjacent benches only
        _PAIRS[n] = (i, j)
    return _PAIRS[n]


def _segment_distance(p0: np.ndarray, p1: np.ndarray, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """Distance between segments p0p1 and q0q1 (rows are pairs)."""
    d = np.minimum(
        np.minimum(_point_segment_dist(p0, q0, q1), _point_segment_dist(p1, q0, q1)),
        np.minimum(_point_segment_dist(q0, p0, p1), _point_segment_dist(q1, p0, p1)),
    )
    return np.where(_segments_cross(p0, p1, q0, q1), 0.0, d)


def candidate_pairs(corners: np.ndarray, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Non-adjacent bench pairs that may come within `margin` of each other; every other pair
    is separated by more than `margin` (an exact pruning, not an approximation): first by
    bounding circles, then by the distance between the boards' centre lines (every point of a
    board lies within half the width of its centre line)."""
    centre = 0.5 * (corners[:, 0] + corners[:, 2])
    radius = np.hypot(*(corners[:, 0] - centre).T)
    i, j = _all_pairs(len(corners))
    diff = centre[i] - centre[j]
    reach = radius[i] + radius[j] + margin
    keep = (diff * diff).sum(axis=1) <= reach * reach
    i, j = i[keep], j[keep]
    front = 0.5 * (corners[:, 0] + corners[:, 1])
    rear = 0.5 * (corners[:, 2] + corners[:, 3])
    sd = _segment_distance(front[i], rear[i], front[j], rear[j])
    keep = sd <= BOARD_WIDTH_M + margin
    return i[keep], j[keep]


def sat_gaps(corners: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Separating-axis gap of each pair (method A): the largest gap between the two
    rectangles' projections over the four edge normals; > 0 iff they are disjoint (and then a
    lower bound of their distance), <= 0 iff they touch or overlap."""
    a, b = corners[i], corners[j]
    best = np.full(len(i), -np.inf)
    for poly in (a, b):
        for e in range(2):
            edge = poly[:, e + 1] - poly[:, e]
            axis = np.stack([-edge[:, 1], edge[:, 0]], axis=1)
            axis /= np.linalg.norm(axis, axis=1)[:, None]
            pa = np.einsum("pkc,pc->pk", a, axis)
            pb = np.einsum("pkc,pc->pk", b, axis)
            gap = np.maximum(pb.min(axis=1) - pa.max(axis=1), pa.min(axis=1) - pb.max(axis=1))
            best = np.maximum(best, gap)
    return best


def _inside_depth(pts: np.ndarray, rect: np.ndarray) -> np.ndarray:
    """For points (pairs x k x 2) and rectangles (pairs x 4 x 2): how deep each point lies
    inside its rectangle (distance to the nearest edge; <= 0 when outside)."""
    depth = np.full(pts.shape[:2], np.inf)
    for e in range(4):
        s0, s1 = rect[:, e], rect[:, (e + 1) % 4]
        edge = s1 - s0
        inward = np.stack([edge[:, 1], -edge[:, 0]], axis=1)  # corners run clockwise or not:
        centre = rect.mean(axis=1)
        sign = np.sign(((centre - s0) * inward).sum(axis=1))
        inward = inward * (sign / np.linalg.norm(inward, axis=1))[:, None]
        depth = np.minimum(depth, ((pts - s0[:, None, :]) * inward[:, None, :]).sum(axis=2))
    return depth


def euclid_gaps(corners: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Signed distance of each pair (method B): the Euclidean distance between the two
    rectangles when they are disjoint (minimum over vertex-edge distances), minus the deepest
    vertex penetration when a vertex of one lies inside the other, and a tiny negative number
    for a crossing without a vertex inside (never the first contact of a continuous motion)."""
    a, b = corners[i], corners[j]
    dmin = np.full(len(i), np.inf)
    for src, dst in ((a, b), (b, a)):
        for e in range(4):
            s0, s1 = dst[:, e][:, None, :], dst[:, (e + 1) % 4][:, None, :]
            dd = _point_segment_dist(src, s0, s1).min(axis=1)
            dmin = np.minimum(dmin, dd)
    depth = np.maximum(_inside_depth(a, b).max(axis=1), _inside_depth(b, a).max(axis=1))
    out = np.where(depth > 0, -depth, dmin)
    # edges crossing with no vertex inside
    crossing = np.zeros(len(i), dtype=bool)
    for e in range(4):
        p0, p1 = a[:, e], a[:, (e + 1) % 4]
        for f in range(4):
            q0, q1 = b[:, f], b[:, (f + 1) % 4]
            crossing |= _segments_cross(p0, p1, q0, q1)
    return np.where((depth <= 0) & crossing, np.minimum(out, -1e-300), out)


CAP_M = 0.2  # clearances are reported up to 0.2 m (pairs farther apart are pruned exactly)


def clearance(points: Sequence[Point], method: str) -> tuple[float, tuple[int, int]]:
    """Smallest gap between non-adjacent benches (capped at CAP_M) and the pair (bench
    indexes, 0 = head) attaining it; <= 0 means two benches touch or overlap."""
    corners = bench_corners(points)
    i, j = candidate_pairs(corners, CAP_M)
    if len(i) == 0:
        return CAP_M, (-1, -1)
    gaps = sat_gaps(corners, i, j) if method == "newton" else euclid_gaps(corners, i, j)
    k = int(np.argmin(gaps))
    g = float(gaps[k])
    return (g, (int(i[k]), int(j[k]))) if g < CAP_M else (CAP_M, (-1, -1))


# --------------------------------------------------------------------------------------------
# One-dimensional searches shared by both methods (each method evaluates its own function)


GOLDEN = (math.sqrt(5) - 1) / 2


def golden_min(
    f: Callable[[float], float], lo: float, hi: float, tol: float, lipschitz: float = 0.0
) -> tuple[float, float]:
    """Minimum of f on [lo, hi] by golden-section search (exact for unimodal f). With a
    Lipschitz constant, stop as soon as f cannot reach 0 in the remaining bracket (a dip
    search only needs the sign)."""
    x1, x2 = hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo)
    f1, f2 = f(x1), f(x2)
    while hi - lo > tol:
        if lipschitz and min(f1, f2) > lipschitz * (hi - lo) and f1 > 0 and f2 > 0:
            break
        if f1 <= f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - GOLDEN * (hi - lo)
            f1 = f(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + GOLDEN * (hi - lo)
            f2 = f(x2)
    return (x1, f1) if f1 <= f2 else (x2, f2)


def bisect_sign(f: Callable[[float], float], lo: float, hi: float, tol: float) -> float:
    """The boundary between f > 0 at lo and f <= 0 at hi, to tol."""
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if f(mid) > 0:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass
class FirstContact:
    """The first parameter value at which a clearance function reaches 0 (None: none before
    the end), with the evidence for the Lipschitz bound the search relied on."""

    at: float | None
    evaluations: int
    max_rate: float  # largest |change of clearance| / step between consecutive samples


def first_contact(
    c: Callable[[float], float],
    start: float,
    stop: float,
    lipschitz: float,
    h_min: float,
    h_max: float,
    tol: float,
) -> FirstContact:
    """Conservative advancement: from `start`, step by clearance/lipschitz (clamped to
    [h_min, h_max]); a Lipschitz clearance cannot reach 0 within such a step. Where the step
    is clamped to h_min and the Lipschitz bound allows a dip to 0 between two samples, the
    interval is searched by golden section. The first sign change is bisected to `tol`. The
    largest rate seen between samples (clearances under the cap) is reported: it must stay
    well under `lipschitz` for the search to be trusted."""
    n = 0
    rate = 0.0

    def ev(x: float) -> float:
        nonlocal n
        n += 1
        return c(x)

    t, ct = start, ev(start)
    if ct <= 0:
        raise GeometryError(f"already in contact at the start ({start})")
    while t < stop:
        step = min(max(ct / lipschitz, h_min), h_max, stop - t)
        t2 = t + step
        c2 = ev(t2)
        if c2 <= 0:
            return FirstContact(bisect_sign(ev, t, t2, tol), n, rate)
        if max(ct, c2) < CAP_M:
            rate = max(rate, abs(c2 - ct) / step)
        if ct + c2 < lipschitz * step:  # a dip to 0 between the samples is not excluded
            xm, fm = golden_min(ev, t, t2, tol, lipschitz)
            if fm <= 0:
                return FirstContact(bisect_sign(ev, t, xm, tol), n, rate)
        t, ct = t2, c2
    return FirstContact(None, n, rate)


# --------------------------------------------------------------------------------------------
# Problem 2: coiling in on the 0.55 m spiral until two benches would touch


def q1_head_theta(t: float, method: str, pitch: float = Q1_PITCH_M) -> float:
    """The head's theta t seconds after the start (1 m/s inward from theta = 32 pi)."""
    b = spiral_b(pitch)
    if method == "newton":
        target = arc_length(b, Q1_START_THETA) - t
        return theta_at_arc_length_newton(b, target, Q1_START_THETA)
    target = arc_length_quadrature(b, Q1_START_THETA) - t
    return theta_at_arc_length_bisect(b, target, Q1_START_THETA)


def q1_points(t: float, method: str, n: int = N_HANDLES) -> list[Point]:
    b = spiral_b(Q1_PITCH_M)
    return [spiral_point(b, th) for th in spiral_chain(b, q1_head_theta(t, method), method, n)]


def q2_clearance(t: float, method: str) -> float:
    return clearance(q1_points(t, method), method)[0]


# Bound on the clearance's rate of change, in m per m of head travel (m/s at 1 m/s): the
# conservative advancement relies on it. The largest rate seen is 0.040 (a dense 0.05 s scan of
# Problem 2) and 0.011 (the Problem 3 coil-ins); computed.json records both and the tests
# require them to stay under half of this bound.
Q2_LIPSCHITZ = 0.1


def q2_terminal_time(method: str, tol: float = 1e-10) -> FirstContact:
    b = spiral_b(Q1_PITCH_M)
    centre = arc_length(b, Q1_START_THETA)
    hit = first_contact(
        lambda t: q2_clearance(t, method),
        0.0,
        centre - 1.0,
        Q2_LIPSCHITZ,
        0.005,
        2.0,
        tol,
    )
    if hit.at is None:
        raise GeometryError("no contact before the spiral centre")
    return hit


def q1_speeds(t: float, method: str, h: float = 1e-3) -> list[float]:
    """All handle speeds at time t: analytic (method A) or finite differences (method B)."""
    b = spiral_b(Q1_PITCH_M)
    if method == "newton":
        return spiral_speeds_analytic(b, spiral_chain(b, q1_head_theta(t, method), method))
    return _fd_speeds(lambda s: q1_points(s, method), t, h)


def _fd_speeds(pos: Callable[[float], list[Point]], t: float, h: float) -> list[float]:
    """Central differences of positions, Richardson-extrapolated: error O(h^4)."""

    def central(hh: float) -> list[float]:
        a, c = pos(t + hh), pos(t - hh)
        return [math.hypot(p[0] - q[0], p[1] - q[1]) / (2 * hh) for p, q in zip(a, c, strict=True)]

    d1, d2 = central(h), central(h / 2)
    return [(4 * y - x) / 3 for x, y in zip(d1, d2, strict=True)]


# --------------------------------------------------------------------------------------------
# Problem 3: the smallest pitch letting the head coil in to the turning-space boundary


def q3_clearance_at(pitch: float, th_head: float, method: str, n: int = N_HANDLES) -> float:
    b = spiral_b(pitch)
    pts = [spiral_point(b, th) for th in spiral_chain(b, th_head, method, n)]
    return clearance(pts, method)[0]


def q3_boundary_theta(pitch: float) -> float:
    return TURN_RADIUS_M / spiral_b(pitch)


def q3_window_min(
    pitch: float, method: str, lo_rad: float, hi_rad: float, tol: float = 1e-7
) -> tuple[float, float]:
    """Smallest clearance with the head between lo_rad and hi_rad (rad past the boundary
    angle, i.e. still outside the turning space), by golden section (the near-contact of the
    head bench with the next turn is a single smooth dip there). The chain is cut at 80
    handles, more than three turns behind the head; the whole dragon is checked by
    q3_path_contact (compute script) and at the critical position by the tests."""
    thb = q3_boundary_theta(pitch)
    x, f = golden_min(lambda x: q3_clearance_at(pitch, thb + x, method, 80), lo_rad, hi_rad, tol)
    return x, f


def q3_minimum_pitch(
    method: str,
    lo: float = 0.44,
    hi: float = 0.46,
    dip: tuple[float, float] = (0.5, 1.5),
    tol: float = 1e-12,
) -> float:
    """The pitch at which the smallest clearance in the dip window is 0 (Illinois regula
    falsi on that smooth function of the pitch): below it the head bench hits the next turn
    before reaching the boundary, above it it clears."""

    def g(p: float) -> float:
        return q3_window_min(p, method, *dip)[1]

    return illinois(g, lo, hi, tol)


def illinois(f: Callable[[float], float], lo: float, hi: float, tol: float) -> float:
    """Root of a continuous f with f(lo) <= 0 < f(hi) (regula falsi, Illinois variant)."""
    flo, fhi = f(lo), f(hi)
    if not (flo <= 0 < fhi):
        raise GeometryError("the bracket does not straddle the root")
    side = 0
    for _ in range(200):
        x = (lo * fhi - hi * flo) / (fhi - flo)
        fx = f(x)
        if fx <= 0:
            lo, flo = x, fx
            if side == -1:
                fhi /= 2
            side = -1
        else:
            hi, fhi = x, fx
            if side == 1:
                flo /= 2
            side = 1
        if hi - lo <= tol or fx == 0:
            return x
    raise GeometryError("regula falsi did not converge")


def q3_path_contact(pitch: float, method: str, tol: float = 1e-10) -> FirstContact:
    """Full check of a pitch: coil the whole dragon in from the Problem 1 start radius to the
    boundary (head travel as the parameter) and return the first contact, if any."""
    b = spiral_b(pitch)
    th_start = Q3_START_RADIUS_M / b
    thb = q3_boundary_theta(pitch)
    total = arc_length(b, th_start) - arc_length(b, thb)

    def c(s: float) -> float:
        th = theta_at_arc_length_newton(b, arc_length(b, th_start) - s, th_start)
        return q3_clearance_at(pitch, th, method)

    return first_contact(c, 0.0, total, Q2_LIPSCHITZ, 0.02, 5.0, tol)


# --------------------------------------------------------------------------------------------
# Problem 4: the S-shaped turning curve


@dataclass(frozen=True)
class TurnPath:
    """In-spiral down to A (on the boundary), arc 1 (radius r1, clockwise), arc 2 (radius r2,
    counter-clockwise), out-spiral (the in-spiral mirrored through the centre) from B = -A."""

    pitch: float
    b: float
    theta_a: float
    a: Point
    c1: Point
    c2: Point
    r1: float
    r2: float
    start1: float  # polar angle of A seen from c1
    start2: float  # polar angle of the tangency point seen from c2
    sweep1: float
    sweep2: float

    @property
    def len1(self) -> float:
        return self.r1 * self.sweep1

    @property
    def length(self) -> float:
        return self.r1 * self.sweep1 + self.r2 * self.sweep2


def _entry(pitch: float) -> tuple[float, float, Point, Point, Point]:
    b = spiral_b(pitch)
    th = TURN_RADIUS_M / b
    a = spiral_point(b, th)
    d = spiral_derivative(b, th)
    m = math.hypot(*d)
    tau = (-d[0] / m, -d[1] / m)  # direction of travel (coiling in)
    right = (tau[1], -tau[0])  # coiling in clockwise turns right
    return b, th, a, tau, right


def turn_path_closed_form(pitch: float = Q4_PITCH_M, ratio: float = Q4_RADIUS_RATIO) -> TurnPath:
    """Method A. With the entry A and exit B = -A fixed and the travel direction equal at both
    (the exit spiral is the entry spiral mirrored through the centre), arc 1 turns right with
    centre c1 = A + r1 n and arc 2 left with centre c2 = B - r2 n; tangency of the arcs
    |c2 - c1| = r1 + r2 gives r1 + r2 = |B - A|^2 / (2 (B - A).n) whatever the ratio, and both
    arcs sweep the same angle (the directions at A and B agree), so the length
    (r1 + r2) * sweep does not depend on the ratio."""
    b, th, a, _tau, n = _entry(pitch)
    bx, by = -a[0], -a[1]
    dx, dy = bx - a[0], by - a[1]
    total = (dx * dx + dy * dy) / (2 * (dx * n[0] + dy * n[1]))
    r1 = total * ratio / (1 + ratio)
    r2 = total - r1
    c1 = (a[0] + r1 * n[0], a[1] + r1 * n[1])
    c2 = (bx - r2 * n[0], by - r2 * n[1])
    w = ((c2[0] - c1[0]) / total, (c2[1] - c1[1]) / total)
    start1 = math.atan2(a[1] - c1[1], a[0] - c1[0])
    sweep = (start1 - math.atan2(w[1], w[0])) % (2 * math.pi)  # clockwise
    start2 = math.atan2(-w[1], -w[0])
    return TurnPath(pitch, b, th, a, c1, c2, r1, r2, start1, start2, sweep, sweep)


def turn_path_bisect(pitch: float = Q4_PITCH_M, ratio: float = Q4_RADIUS_RATIO) -> TurnPath:
    """Method B: the small radius r by bisection on the tangency condition
    |c2(r) - c1(ratio r)| = (1 + ratio) r, then each arc's sweep from its own end points
    (atan2 on each circle separately)."""
    b, th, a, _tau, n = _entry(pitch)
    bx, by = -a[0], -a[1]

    def excess(r: float) -> float:
        c1 = (a[0] + ratio * r * n[0], a[1] + ratio * r * n[1])
        c2 = (bx - r * n[0], by - r * n[1])
        return math.hypot(c2[0] - c1[0], c2[1] - c1[1]) - (1 + ratio) * r

    lo, hi = 1e-9, TURN_RADIUS_M
    if not (excess(lo) > 0 >= excess(hi)):
        raise GeometryError("no tangent arc pair")
    while hi - lo > 1e-16 * hi:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    r2 = 0.5 * (lo + hi)
    r1 = ratio * r2
    c1 = (a[0] + r1 * n[0], a[1] + r1 * n[1])
    c2 = (bx - r2 * n[0], by - r2 * n[1])
    f = r1 / (r1 + r2)
    tp = (c1[0] + f * (c2[0] - c1[0]), c1[1] + f * (c2[1] - c1[1]))
    start1 = math.atan2(a[1] - c1[1], a[0] - c1[0])
    sweep1 = (start1 - math.atan2(tp[1] - c1[1], tp[0] - c1[0])) % (2 * math.pi)
    start2 = math.atan2(tp[1] - c2[1], tp[0] - c2[0])
    sweep2 = (math.atan2(by - c2[1], bx - c2[0]) - start2) % (2 * math.pi)
    return TurnPath(pitch, b, th, a, c1, c2, r1, r2, start1, start2, sweep1, sweep2)


def turn_extent(path: TurnPath, samples: int = 20001) -> float:
    """Largest distance from the centre reached by the turning curve (sampled)."""
    best = 0.0
    for k in range(samples):
        s = path.length * k / (samples - 1)
        x, _ = path_point_by_length(path, s)
        best = max(best, math.hypot(*x))
    return best


# --------------------------------------------------------------------------------------------
# Problem 4/5 path: positions by arc length (method B) and by segment (method A)


def path_point_by_length(
    path: TurnPath, s: float, guess: float | None = None
) -> tuple[Point, float]:
    """Position at arc length s along the whole path (s = 0 at A, the head's travel), and the
    spiral angle used (for warm starts; 0 on the arcs)."""
    b = path.b
    if s < 0:
        fa = arc_length(b, path.theta_a)
        th = theta_at_arc_length_newton(b, fa - s, guess or path.theta_a - s / (b * path.theta_a))
        return spiral_point(b, th), th
    if s < path.len1:
        ang = path.start1 - s / path.r1
        return (path.c1[0] + path.r1 * math.cos(ang), path.c1[1] + path.r1 * math.sin(ang)), 0.0
    if s < path.length:
        ang = path.start2 + (s - path.len1) / path.r2
        return (path.c2[0] + path.r2 * math.cos(ang), path.c2[1] + path.r2 * math.sin(ang)), 0.0
    fa = arc_length(b, path.theta_a)
    th = theta_at_arc_length_newton(
        b, fa + s - path.length, guess or path.theta_a + (s - path.length) / (b * path.theta_a)
    )
    x, y = spiral_point(b, th)
    return (-x, -y), th


def path_chain_bisect(path: TurnPath, s_head: float, n: int = N_HANDLES) -> list[Point]:
    """Method B: each next handle is the nearest point behind (smaller arc length) at chord d:
    step back from arc distance d (a chord is never longer than its arc) in steps of d/50
    until the chord reaches d, then bisect on the arc length."""
    s_prev = s_head
    x_prev, _ = path_point_by_length(path, s_head)
    out = [x_prev]
    for k in range(n - 1):
        d = SPACINGS[k]

        def dist(s: float, x0: Point = x_prev) -> float:
            x, _ = path_point_by_length(path, s)
            return math.hypot(x[0] - x0[0], x[1] - x0[1])

        hi = s_prev - d
        if dist(hi) >= d:
            lo = hi
        else:
            step = d / 50
            lo = hi - step
            while dist(lo) < d:
                hi, lo = lo, lo - step
        # dist(lo) >= d > dist(hi), lo < hi
        while hi - lo > 1e-15 * max(1.0, abs(lo)):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if dist(mid) >= d:
                lo = mid
            else:
                hi = mid
        s_prev = 0.5 * (lo + hi)
        x_prev, _ = path_point_by_length(path, s_prev)
        out.append(x_prev)
    return out


def _circle_intersections(c: Point, r: float, x: Point, d: float) -> list[Point]:
    dx, dy = x[0] - c[0], x[1] - c[1]
    m = math.hypot(dx, dy)
    if m == 0 or m > r + d or m < abs(r - d):
        return []
    a = (r * r - d * d + m * m) / (2 * m)
    h = math.sqrt(max(r * r - a * a, 0.0))
    ux, uy = dx / m, dy / m
    px, py = c[0] + a * ux, c[1] + a * uy
    return [(px - h * uy, py + h * ux), (px + h * uy, py - h * ux)]


@dataclass
class Handle:
    seg: int  # 0 in-spiral, 1 arc 1, 2 arc 2, 3 out-spiral
    param: float  # theta on the spirals, swept angle (from the arc's start) on the arcs
    point: Point
    tangent: Point  # unit direction of travel


def _handle(path: TurnPath, seg: int, param: float) -> Handle:
    b = path.b
    if seg in (0, 3):
        x, y = spiral_point(b, param)
        d = spiral_derivative(b, param)
        m = math.hypot(*d)
        # in-spiral: travel is theta decreasing (-dP); out-spiral X = -P, theta increasing (-dP)
        tan = (-d[0] / m, -d[1] / m)
        return Handle(seg, param, (x, y) if seg == 0 else (-x, -y), tan)
    if seg == 1:
        ang = path.start1 - param
        p = (path.c1[0] + path.r1 * math.cos(ang), path.c1[1] + path.r1 * math.sin(ang))
        return Handle(1, param, p, (math.sin(ang), -math.cos(ang)))
    ang = path.start2 + param
    p = (path.c2[0] + path.r2 * math.cos(ang), path.c2[1] + path.r2 * math.sin(ang))
    return Handle(2, param, p, (-math.sin(ang), math.cos(ang)))


def head_handle(path: TurnPath, s: float) -> Handle:
    """The head's front handle after travelling s (m) from A (method A: closed-form arc length
    inverted by Newton on the spirals)."""
    b, fa = path.b, arc_length(path.b, path.theta_a)
    if s < 0:
        return _handle(path, 0, theta_at_arc_length_newton(b, fa - s, path.theta_a))
    if s < path.len1:
        return _handle(path, 1, s / path.r1)
    if s < path.length:
        return _handle(path, 2, (s - path.len1) / path.r2)
    return _handle(path, 3, theta_at_arc_length_newton(b, fa + s - path.length, path.theta_a))


def _spiral_root_newton(b: float, x: Point, d: float, th0: float, sign: float) -> float:
    """theta with |sign*P(theta) - x| = d by Newton from th0 (sign -1: the out-spiral)."""
    th = th0
    for _ in range(80):
        px, py = spiral_point(b, th)
        dpx, dpy = spiral_derivative(b, th)
        ex, ey = sign * px - x[0], sign * py - x[1]
        g = ex * ex + ey * ey - d * d
        dg = 2 * (ex * sign * dpx + ey * sign * dpy)
        new = th - g / dg
        if abs(new - th) <= 1e-15 * max(1.0, abs(new)):
            return new
        th = new
    raise GeometryError("spiral intersection Newton did not converge")


def prev_theta_newton(b: float, th: float, d: float) -> float:
    """The handle behind on the out-spiral (further in, theta' < theta) at chord d: Newton on
    the same polar chord equation, from the arc-length guess."""
    target = (d / b) ** 2
    phi = th - d / (b * math.sqrt(1 + th * th))
    for _ in range(60):
        c, s = math.cos(th - phi), math.sin(th - phi)
        g = th * th + phi * phi - 2 * th * phi * c - target
        dg = 2 * phi - 2 * th * c - 2 * th * phi * s
        new = phi - g / dg
        if abs(new - phi) <= 1e-15 * max(1.0, abs(new)):
            phi = new
            break
        phi = new
    else:
        raise GeometryError(f"chord Newton did not converge at theta={th}")
    if not th - math.pi < phi < th:
        raise GeometryError(f"chord Newton left the bracket at theta={th}")
    return phi


def next_handle_newton(path: TurnPath, prev: Handle, d: float) -> Handle:
    """Method A: the nearest handle behind `prev` at chord d. On a spiral, the chord equation
    from `prev` (the root within half a turn); if it falls beyond the segment's start, the
    turning arcs backwards: a short arc (sweep < pi) holds the handle iff its start point is
    at least d from `prev`, and then the circle-circle intersection gives it; last, the
    in-spiral by Newton. (Method B, which steps back along the path until the chord reaches d,
    checks that this is the nearest point behind.)"""
    b = path.b
    x = prev.point
    if prev.seg == 3:
        th = prev_theta_newton(b, prev.param, d)
        if th >= path.theta_a:
            return _handle(path, 3, th)
    if prev.seg == 0:
        return _handle(path, 0, next_theta_newton(b, prev.param, d))
    for seg in (2, 1):
        if seg > prev.seg:
            continue
        start = _handle(path, seg, 0.0).point
        if math.hypot(start[0] - x[0], start[1] - x[1]) < d:
            continue
        c, r, sweep = (
            (path.c1, path.r1, path.sweep1) if seg == 1 else (path.c2, path.r2, path.sweep2)
        )
        start_ang = path.start1 if seg == 1 else path.start2
        best: float | None = None
        for q in _circle_intersections(c, r, x, d):
            ang = math.atan2(q[1] - c[1], q[0] - c[0])
            u = (start_ang - ang) % (2 * math.pi) if seg == 1 else (ang - start_ang) % (2 * math.pi)
            if u > sweep + 1e-12 or (seg == prev.seg and u >= prev.param):
                continue
            if best is None or u > best:
                best = u
        if best is None:
            raise GeometryError(f"no intersection on arc {seg}")
        return _handle(path, seg, best)
    gap = d - math.hypot(path.a[0] - x[0], path.a[1] - x[1])
    speed = b * math.sqrt(1 + path.theta_a**2)  # |dP/dtheta| at A
    th = _spiral_root_newton(b, x, d, path.theta_a + gap / speed, 1.0)
    if th < path.theta_a:
        raise GeometryError("in-spiral intersection before the entry point")
    return _handle(path, 0, th)


def path_chain_newton(path: TurnPath, s_head: float, n: int = N_HANDLES) -> list[Handle]:
    out = [head_handle(path, s_head)]
    for k in range(n - 1):
        out.append(next_handle_newton(path, out[-1], SPACINGS[k]))
    return out


def chain_speeds_analytic(chain: Sequence[Handle], head_speed: float = 1.0) -> list[float]:
    v = [head_speed]
    for k in range(1, len(chain)):
        p, q = chain[k - 1], chain[k]
        ex, ey = p.point[0] - q.point[0], p.point[1] - q.point[1]
        num = p.tangent[0] * ex + p.tangent[1] * ey
        den = q.tangent[0] * ex + q.tangent[1] * ey
        if den <= 0:
            raise GeometryError("a bench is perpendicular to its rear handle's path")
        v.append(v[-1] * num / den)
    return v


def q5_speeds(
    t: float, method: str, n: int = N_HANDLES, path: TurnPath | None = None, h: float = 1e-3
) -> list[float]:
    """Handle speeds at time t (head at 1 m/s, t = 0 at the start of the turn)."""
    if method == "newton":
        path = path or turn_path_closed_form()
        return chain_speeds_analytic(path_chain_newton(path, t, n))
    path = path or turn_path_bisect()
    return _fd_speeds(lambda s: path_chain_bisect(path, s, n), t, h)


def q5_scan(path: TurnPath, t0: float, t1: float, h: float) -> list[tuple[float, float, int]]:
    """(t, max handle speed, handle index) on a grid of t (method A, all handles)."""
    out = []
    k = 0
    while True:
        t = t0 + k * h
        if t > t1 + 1e-12:
            break
        v = chain_speeds_analytic(path_chain_newton(path, t))
        j = max(range(len(v)), key=v.__getitem__)
        out.append((t, v[j], j))
        k += 1
    return out


def q5_refine(method: str, lo: float, hi: float, n: int, tol: float = 1e-9) -> tuple[float, float]:
    """The maximum over [lo, hi] of the largest speed among the first n handles."""
    path = turn_path_closed_form() if method == "newton" else turn_path_bisect()
    t, negv = golden_min(lambda t: -max(q5_speeds(t, method, n, path)), lo, hi, tol)
    return t, -negv
