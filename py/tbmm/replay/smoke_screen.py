"""Replay of CUMCM 2025 A (smoke-screen drops): what a drop strategy shields, recomputed.

The artifact gives, per question, one heading and one speed per UAV and a list of drops
(UAV, release time, fuse delay). The replay flies the missiles straight at the decoy, the
UAVs on their level straight tracks, the grenades in free fall from the UAV's velocity,
and the clouds (a sphere that sinks at constant speed and is effective for a fixed
lifetime after detonation), and measures, per missile, the union over clouds of the time
during which one cloud hides the whole real target from that missile.

Criterion (the statement's target is a solid cylinder; a missile must not see any of it):
at time t cloud c blocks missile m when every segment from the missile to a point of the
cylinder meets the closed ball of the cloud. The set of points whose segment from the
missile meets a ball is convex (it is {P + λ(b − P): b in the ball, λ >= 1}), and the
cylinder is the convex hull of its two rim circles, so it suffices that every rim point
be hidden. For one rim the worst point is found exactly: h(θ) = dist(C, [P, Q(θ)]) − R is
piecewise smooth in θ, and its maximum lies at a critical point of one piece or on a
boundary between pieces; all of these are roots of trigonometric polynomials of degree
<= 2 (solved as quartics), so H(t) = max over both rims of max_θ h is exact up to rounding.

Time: H is Lipschitz in t. Globally |dH/dt| <= L = missile speed + sink speed (moving the
missile by δ moves every point of a segment by at most δ; the cloud's centre moves by its
own displacement); on a time segment a much smaller local constant holds (the missile flies
almost along the sightline and the cloud's lever on it is short, `_local_lipschitz`). A
segment [a, b] with (H(a) + H(b) − K·(b − a))/2 > 0 contains no blocked instant, one with
(H(a) + H(b) + K·(b − a))/2 <= 0 is blocked throughout (K its constant). Every other
segment is halved until it is at most `time_floor_s` wide; such a leaf is counted by linear
interpolation of H and contributes at most its Lipschitz slack to a rigorous error bound,
which the replay reports in its notes. Only the float rounding of H is not bounded (H is
computed from coordinates of 1e4 m in double precision: ~1e-11 m).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from tbmm.core import exact
from tbmm.replay import CpuBudget, Outcome, ReplayInputError

if TYPE_CHECKING:
    from tbmm.suite.models import ReplaySpec

# Decision values beyond this magnitude are refused (they would only overflow the geometry).
MAX_MAGNITUDE = Fraction(10**9)


# --- scene (the statement's data, from replay.toml [params]) ---------------------------


def _num(x: Any, where: str) -> float:
    """A parameter as a float (parameters are decimal strings or TOML numbers)."""
    if isinstance(x, bool) or not isinstance(x, str | int | float):
        raise ValueError(f"replay.toml params.{where}: expected a number, got {x!r}")
    return float(exact.parse_decimal(str(x)))


def _vec(x: Any, where: str) -> np.ndarray:
    if not isinstance(x, list) or len(x) != 3:
        raise ValueError(f"replay.toml params.{where}: expected [x, y, z]")
    return np.array([_num(v, f"{where}[{i}]") for i, v in enumerate(x)], dtype=float)


@dataclass(frozen=True)
class Question:
    """One question's rules: which UAVs, which missiles, drops per UAV, output names."""

    qid: str
    uavs: tuple[str, ...]
    missiles: tuple[str, ...]
    min_drops_per_uav: int
    max_drops_per_uav: int
    outputs: dict[str, str]  # missile id -> output name (per-missile shielding time)
    total: str  # output name of the sum over missiles ("" = none)

    @property
    def max_drops(self) -> int:
        return self.max_drops_per_uav * len(self.uavs)


@dataclass(frozen=True)
class Scene:
    """The statement's constants and the replay's numerical settings."""

    g: float
    missile_speed: float
    decoy: np.ndarray
    missiles: dict[str, np.ndarray]
    uavs: dict[str, np.ndarray]
    target_base: np.ndarray
    target_radius: float
    target_height: float
    cloud_radius: float
    cloud_sink: float
    cloud_life: float
    min_release_gap: float
    time_floor: float
    max_evaluations: int
    questions: dict[str, Question]

    @property
    def lipschitz(self) -> float:
        """|dH/dt| <= missile speed + cloud sink speed (see the module docstring)."""
        return self.missile_speed + self.cloud_sink

    @property
    def target_centre(self) -> np.ndarray:
        return self.target_base + np.array([0.0, 0.0, self.target_height / 2])

    @property
    def target_reach(self) -> float:
        """Distance from the target's centre to its rims (every point of the cylinder is
        within it)."""
        return math.hypot(self.target_radius, self.target_height / 2)

    def arrival(self, missile: str) -> float:
        return float(np.linalg.norm(self.decoy - self.missiles[missile]) / self.missile_speed)


def scene_from_params(params: Mapping[str, Any]) -> Scene:
    """Build the scene from replay.toml's [params] (ValueError names a bad entry)."""
    p = dict(params)
    try:
        questions = {}
        for qid, q in p["questions"].items():
            outputs = {str(k): str(v) for k, v in q["outputs"].items()}
            questions[qid] = Question(
                qid=qid,
                uavs=tuple(q["uavs"]),
                missiles=tuple(q["missiles"]),
                min_drops_per_uav=int(q["min_drops_per_uav"]),
                max_drops_per_uav=int(q["max_drops_per_uav"]),
                outputs=outputs,
                total=str(q.get("total", "")),
            )
        scene = Scene(
            g=_num(p["gravity_mps2"], "gravity_mps2"),
            missile_speed=_num(p["missile_speed_mps"], "missile_speed_mps"),
            decoy=_vec(p["decoy"], "decoy"),
            missiles={k: _vec(v, f"missiles.{k}") for k, v in p["missiles"].items()},
            uavs={k: _vec(v, f"uavs.{k}") for k, v in p["uavs"].items()},
            target_base=_vec(p["target_base_center"], "target_base_center"),
            target_radius=_num(p["target_radius_m"], "target_radius_m"),
            target_height=_num(p["target_height_m"], "target_height_m"),
            cloud_radius=_num(p["cloud_radius_m"], "cloud_radius_m"),
            cloud_sink=_num(p["cloud_sink_mps"], "cloud_sink_mps"),
            cloud_life=_num(p["cloud_life_s"], "cloud_life_s"),
            min_release_gap=_num(p["min_release_gap_s"], "min_release_gap_s"),
            time_floor=_num(p["time_floor_s"], "time_floor_s"),
            max_evaluations=int(p["max_evaluations"]),
            questions=questions,
        )
    except KeyError as exc:
        raise ValueError(f"replay.toml params: missing {exc}") from exc
    for q in scene.questions.values():
        unknown = [u for u in q.uavs if u not in scene.uavs] + [
            m for m in q.missiles if m not in scene.missiles
        ]
        if unknown or set(q.outputs) != set(q.missiles):
            raise ValueError(f"replay.toml params.questions.{q.qid}: unknown ids or outputs")
    return scene


# --- geometry ----------------------------------------------------------------------------


def _deg1_roots(c0: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
    """The (up to) two θ with c0 + c1 cos θ + c2 sin θ = 0, shape (n, 2); rows without a
    solution give the nearest approach instead (harmless extra candidates)."""
    phi = np.arctan2(c2, c1)
    rho = np.hypot(c1, c2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(rho > 0, -c0 / np.where(rho > 0, rho, 1.0), 0.0)
    a = np.arccos(np.clip(ratio, -1.0, 1.0))
    return np.stack([phi + a, phi - a], axis=1)


def quartic_roots(coeffs: np.ndarray) -> np.ndarray:
    """All four complex roots of c0 + c1 z + c2 z^2 + c3 z^3 + c4 z^4 per row of `coeffs`
    (shape (n, 5), complex, c4 != 0), by Ferrari's method (resolvent cubic by Cardano, the
    root of largest modulus) and two Newton steps on the original quartic per root.

    Vectorised closed form: a batch of 4x4 companion eigenproblems costs ~15 us per row,
    this ~1 us; tests compare both."""
    lead = coeffs[:, 4]
    b, c, d, e = (coeffs[:, k] / lead for k in (3, 2, 1, 0))
    # depressed quartic y^4 + p y^2 + q y + r, z = y - b/4
    b2 = b * b
    p = c - 3 * b2 / 8
    q = d - b * c / 2 + b2 * b / 8
    r = e - b * d / 4 + b2 * c / 16 - 3 * b2 * b2 / 256
    # resolvent cubic m^3 + p m^2 + (p^2/4 - r) m - q^2/8 = 0, depressed m = x - p/3
    big_a, big_b, big_c = p, p * p / 4 - r, -q * q / 8
    pp = big_b - big_a * big_a / 3
    qq = 2 * big_a**3 / 27 - big_a * big_b / 3 + big_c
    disc = np.sqrt(qq * qq / 4 + pp**3 / 27)
    u1, u2 = -qq / 2 + disc, -qq / 2 - disc
    u3 = np.where(np.abs(u1) >= np.abs(u2), u1, u2) ** (1 / 3)
    best = np.zeros_like(u3)
    for k in range(3):
        uk = u3 * np.exp(2j * np.pi * k / 3)
        with np.errstate(divide="ignore", invalid="ignore"):
            vk = np.where(uk != 0, -pp / (3 * np.where(uk != 0, uk, 1)), 0)
        mk = uk + vk - big_a / 3
        best = np.where(np.abs(mk) > np.abs(best), mk, best)
    s2 = np.sqrt(2 * best)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(s2 != 0, q / (2 * np.where(s2 != 0, s2, 1)), 0)
    out = []
    for sign in (1, -1):
        # y^2 - sign*s2*y + (p/2 + m + sign*t) = 0
        bb = -sign * s2
        cc = p / 2 + best + sign * t
        root = np.sqrt(bb * bb - 4 * cc)
        out += [(-bb + root) / 2, (-bb - root) / 2]
    # biquadratic (q = 0, m = 0): y^2 = (-p +- sqrt(p^2 - 4r)) / 2
    bi = np.sqrt(p * p - 4 * r)
    y2 = [(-p + bi) / 2, (-p - bi) / 2]
    degenerate = s2 == 0
    biq = [np.sqrt(y2[0]), -np.sqrt(y2[0]), np.sqrt(y2[1]), -np.sqrt(y2[1])]
    z = np.stack([np.where(degenerate, bq, y) for y, bq in zip(out, biq, strict=True)], axis=1)
    z = z - (b / 4)[:, None]
    mono = np.stack([e, d, c, b, np.ones_like(b)], axis=1)
    for _ in range(2):
        val = (((z + mono[:, 3:4]) * z + mono[:, 2:3]) * z + mono[:, 1:2]) * z + mono[:, 0:1]
        der = ((4 * z + 3 * mono[:, 3:4]) * z + 2 * mono[:, 2:3]) * z + mono[:, 1:2]
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(der != 0, val / np.where(der != 0, der, 1), 0)
        z = np.where(np.isfinite(step), z - step, z)
    return z


def _critical_angles(
    a0: np.ndarray, a1: np.ndarray, a2: np.ndarray, b0: np.ndarray, b1: np.ndarray, b2: np.ndarray
) -> np.ndarray:
    """Roots θ of N = 2A'V − AV' for A = a0 + a1 cos + a2 sin, V = b0 + b1 cos + b2 sin
    (the critical points of A²/V), shape (n, 4): N is a trigonometric polynomial of degree
    2, i.e. z^-2 times a quartic in z = e^{iθ}; spurious roots off the unit circle only
    add candidates."""
    ah = (a1 - 1j * a2) / 2  # Fourier coefficient k = 1 of A
    vh = (b1 - 1j * b2) / 2
    n2 = 1j * ah * vh
    n1 = 2j * ah * b0 - 1j * a0 * vh
    n0 = -6.0 * np.imag(ah * np.conj(vh))
    coeffs = np.stack([np.conj(n2), np.conj(n1), n0 + 0j, n1, n2], axis=1)  # z^0 .. z^4
    scale = np.max(np.abs(coeffs), axis=1)
    scale = np.where(scale > 0, scale, 1.0)
    tiny = np.abs(coeffs[:, 4]) < 1e-12 * scale
    coeffs[:, 4] = np.where(tiny, 1e-12 * scale, coeffs[:, 4])
    with np.errstate(all="ignore"):
        angles = np.angle(quartic_roots(coeffs))
    return np.where(np.isfinite(angles), angles, 0.0)


_GRID = np.linspace(0.0, 2 * math.pi, 8, endpoint=False)


def rim_excess(P: np.ndarray, C: np.ndarray, ctr: np.ndarray, r: float, R: float) -> np.ndarray:
    """max over the horizontal circle (centre ctr, radius r) of dist(C, segment [P, Q]) − R,
    for n missile positions P and cloud centres C (arrays (n, 3)); <= 0 means the whole
    circle is hidden from P by the ball (C, R)."""
    d = ctr[None, :] - P
    w = C - P
    u = ctr[None, :] - C
    a0 = np.einsum("ij,ij->i", w, d)
    a1, a2 = r * w[:, 0], r * w[:, 1]
    b0 = np.einsum("ij,ij->i", d, d) + r * r
    b1, b2 = 2 * r * d[:, 0], 2 * r * d[:, 1]
    phi_u = np.arctan2(u[:, 1], u[:, 0])
    cand = np.concatenate(
        [
            _critical_angles(a0, a1, a2, b0, b1, b2),  # line piece
            np.stack([phi_u, phi_u + math.pi], axis=1),  # end-point piece |Q − C|
            _deg1_roots(a0, a1, a2),  # piece boundary s* = 0
            _deg1_roots(a0 - b0, a1 - b1, a2 - b2),  # piece boundary s* = 1
            np.broadcast_to(_GRID, (len(a0), len(_GRID))),  # safety net
        ],
        axis=1,
    )
    c, s = np.cos(cand), np.sin(cand)
    vx = d[:, 0:1] + r * c
    vy = d[:, 1:2] + r * s
    vz = np.broadcast_to(d[:, 2:3], vx.shape)
    A = w[:, 0:1] * vx + w[:, 1:2] * vy + w[:, 2:3] * vz
    V = vx * vx + vy * vy + vz * vz
    st = np.clip(A / V, 0.0, 1.0)
    ex = st * vx - w[:, 0:1]
    ey = st * vy - w[:, 1:2]
    ez = st * vz - w[:, 2:3]
    dist = np.sqrt(ex * ex + ey * ey + ez * ez)
    return np.max(dist, axis=1) - R


def target_excess(scene: Scene, P: np.ndarray, C: np.ndarray) -> np.ndarray:
    """H = max over both rim circles of the target: <= 0 iff the cloud hides the whole
    cylinder from the missile (the cylinder is the convex hull of its rims)."""
    base = scene.target_base
    top = base + np.array([0.0, 0.0, scene.target_height])
    r, R = scene.target_radius, scene.cloud_radius
    H = np.maximum(rim_excess(P, C, base, r, R), rim_excess(P, C, top, r, R))
    # a degenerate geometry (none arises from finite decisions) counts as not hidden
    return np.where(np.isnan(H), np.inf, H)


# --- decisions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Drop:
    """One grenade: its UAV's track and its own timing, plus where it ends up."""

    index: int
    uav: str
    release: float
    fuse: float
    release_point: np.ndarray
    detonation_point: np.ndarray

    @property
    def detonation_time(self) -> float:
        return self.release + self.fuse


def _number(node: Any, where: str) -> float:
    if not isinstance(node, exact.Num):
        what = "missing" if node is None else f"not a number ({str(node)[:40]!r})"
        raise ReplayInputError(f"{where}: {what}")
    if abs(node.value) > MAX_MAGNITUDE:
        raise ReplayInputError(f"{where}: |{node.text[:40]}| exceeds {MAX_MAGNITUDE}")
    return float(node.value)


def _uav_velocity(block: dict[str, Any], qid: str, uav: str) -> np.ndarray:
    key = uav.lower()
    track = block.get(key)
    if not isinstance(track, dict):
        raise ReplayInputError(f"{qid}.{key}: missing (heading_deg and speed_mps of {uav})")
    heading = _number(track.get("heading_deg"), f"{qid}.{key}.heading_deg")
    speed = _number(track.get("speed_mps"), f"{qid}.{key}.speed_mps")
    return uav_velocity(heading, speed)


def read_drops(doc: dict[str, Any], q: Question, scene: Scene) -> list[Drop]:
    """The question's drops with their release and detonation points (ReplayInputError on
    anything that cannot be replayed: missing, non-number, unknown UAV, too many entries)."""
    block = doc.get(q.qid)
    if not isinstance(block, dict):
        raise ReplayInputError(f"{q.qid}: missing (the question's decisions)")
    raw = block.get("drops")
    if not isinstance(raw, list):
        raise ReplayInputError(f"{q.qid}.drops: missing or not a list")
    if len(raw) > q.max_drops:
        raise ReplayInputError(
            f"{q.qid}.drops: {len(raw)} entries; the statement allows at most {q.max_drops}"
        )
    velocity = {u: _uav_velocity(block, q.qid, u) for u in q.uavs}
    drops = []
    for i, entry in enumerate(raw):
        where = f"{q.qid}.drops[{i}]"
        if not isinstance(entry, dict):
            raise ReplayInputError(f"{where}: not an object")
        uav = entry.get("uav")
        if not isinstance(uav, str) or uav not in q.uavs:
            raise ReplayInputError(
                f"{where}.uav: {str(uav)[:20]!r} is not one of {', '.join(q.uavs)}"
            )
        release = _number(entry.get("release_time_s"), f"{where}.release_time_s")
        fuse = _number(entry.get("fuse_delay_s"), f"{where}.fuse_delay_s")
        drops.append(make_drop(scene, i, uav, velocity[uav], release, fuse))
    return drops


def uav_velocity(heading_deg: float, speed: float) -> np.ndarray:
    """Level velocity for a heading in degrees counter-clockwise from +x."""
    rad = math.radians(heading_deg)
    return np.array([speed * math.cos(rad), speed * math.sin(rad), 0.0])


def make_drop(
    scene: Scene, index: int, uav: str, velocity: np.ndarray, release: float, fuse: float
) -> Drop:
    """A grenade released from `uav` (flying `velocity` from its start at t = 0) at time
    `release`, falling freely with the UAV's velocity and detonating after `fuse`."""
    start = scene.uavs[uav] + velocity * release
    boom = start + velocity * fuse - np.array([0.0, 0.0, 0.5 * scene.g * fuse * fuse])
    return Drop(index, uav, release, fuse, start, boom)


# --- time search -------------------------------------------------------------------------


@dataclass
class Budget:
    """Evaluations of H left for one replay (shared by its questions): past it, open
    segments are counted as leaves, so adversarial input costs bounded time and shows up
    as a larger error bound instead."""

    remaining: int


@dataclass
class PairResult:
    """Blocked intervals of one (missile, cloud) pair and the rigorous error bound."""

    intervals: list[tuple[float, float]]
    error_bound: float


def blocked_intervals(
    scene: Scene,
    pairs: Sequence[tuple[str, Drop]],
    deadline: CpuBudget | None = None,
    budget: Budget | None = None,
) -> list[PairResult]:
    """For each (missile, drop) pair, the times at which that drop's cloud hides the whole
    target from the missile (breadth-first Lipschitz subdivision over all pairs at once)."""
    L = scene.lipschitz
    n = len(pairs)
    results = [PairResult([], 0.0) for _ in range(n)]
    if n == 0:
        return results
    m0 = np.array([scene.missiles[m] for m, _ in pairs])
    mdir = np.array(
        [
            (scene.decoy - scene.missiles[m]) / np.linalg.norm(scene.decoy - scene.missiles[m])
            for m, _ in pairs
        ]
    )
    c0 = np.array([d.detonation_point for _, d in pairs])
    t0 = np.array([d.detonation_time for _, d in pairs])
    lo = np.maximum(t0, 0.0)
    hi = np.minimum(t0 + scene.cloud_life, np.array([scene.arrival(m) for m, _ in pairs]))
    sink = np.array([0.0, 0.0, -scene.cloud_sink])

    def excess(idx: np.ndarray, t: np.ndarray) -> np.ndarray:
        P = m0[idx] + (scene.missile_speed * t)[:, None] * mdir[idx]
        C = c0[idx] + (t - t0[idx])[:, None] * sink[None, :]
        return target_excess(scene, P, C)

    live = np.nonzero(hi > lo)[0]
    seg_i = live
    seg_a, seg_b = lo[live], hi[live]
    both = excess(np.concatenate([seg_i, seg_i]), np.concatenate([seg_a, seg_b]))
    ha, hb = both[: len(seg_i)], both[len(seg_i) :]
    budget = budget if budget is not None else Budget(scene.max_evaluations)
    budget.remaining -= 2 * len(seg_i)
    floor = scene.time_floor
    while len(seg_i):
        if deadline is not None:
            deadline.check()
        width = seg_b - seg_a
        lip = _local_lipschitz(scene, L, seg_i, seg_a, seg_b, ha, hb, m0, mdir, c0, t0)
        free = (ha + hb - lip * width) / 2 > 0
        full = (ha + hb + lip * width) / 2 <= 0
        leaf = ~free & ~full & (width <= floor)
        for k in np.nonzero(full)[0]:
            results[seg_i[k]].intervals.append((float(seg_a[k]), float(seg_b[k])))
        for k in np.nonzero(leaf)[0]:
            _leaf(results[seg_i[k]], seg_a[k], seg_b[k], ha[k], hb[k], lip[k])
        split = ~free & ~full & ~leaf
        if int(split.sum()) > budget.remaining:
            for k in np.nonzero(split)[0]:
                _leaf(results[seg_i[k]], seg_a[k], seg_b[k], ha[k], hb[k], lip[k])
            break
        seg_i, seg_a, seg_b, ha, hb = (x[split] for x in (seg_i, seg_a, seg_b, ha, hb))
        mid = (seg_a + seg_b) / 2
        hm = excess(seg_i, mid)
        budget.remaining -= len(seg_i)
        seg_i = np.concatenate([seg_i, seg_i])
        seg_a, seg_b = np.concatenate([seg_a, mid]), np.concatenate([mid, seg_b])
        ha, hb = np.concatenate([ha, hm]), np.concatenate([hm, hb])
    return results


def _closest(x0: np.ndarray, vel: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min over t in [a, b] of |x0 + t vel| (rows), for a point moving on a line."""
    vv = np.einsum("ij,ij->i", vel, vel)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(vv > 0, -np.einsum("ij,ij->i", x0, vel) / np.where(vv > 0, vv, 1.0), a)
    t = np.clip(t, a, b)
    return np.linalg.norm(x0 + t[:, None] * vel, axis=1)


def _local_lipschitz(
    scene: Scene,
    L: float,
    idx: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    ha: np.ndarray,
    hb: np.ndarray,
    m0: np.ndarray,
    mdir: np.ndarray,
    c0: np.ndarray,
    t0: np.ndarray,
) -> np.ndarray:
    """A bound on |dH/dt| over each segment [a, b] (see the module docstring).

    For a rim point Q the nearest point of the segment [P, Q] to the cloud centre C is
    N = P + s(Q − P); where 0 < s <= 1, |d dist/dt| <= |dC/dt| + (1 − s)|dP/dt ⊥ (Q − P)|.
    Two geometric facts bound the missile's share: (1 − s)|Q − P| = |N − Q| <= |N − C| +
    |C − Q| <= (H + R) + |C − Q| (the lever), and the missile flies at the decoy D, so the
    sine of the angle between its velocity and Q − P is at most |D − Q| / |Q − P| (law of
    sines). s = 0 needs the cloud within H + R of the missile; where that cannot be
    excluded the global constant L is used."""
    speed, sink = scene.missile_speed, scene.cloud_sink
    width = b - a
    h_max = np.maximum(np.maximum(ha, hb), 0.0) + L * width / 2
    centre, reach = scene.target_centre, scene.target_reach
    vel_p = speed * mdir[idx]
    vel_c = np.broadcast_to(np.array([0.0, 0.0, -sink]), vel_p.shape)
    c_a = c0[idx] + (a - t0[idx])[:, None] * vel_c
    c_b = c_a + width[:, None] * vel_c
    d_co = np.maximum(np.linalg.norm(c_a - centre, axis=1), np.linalg.norm(c_b - centre, axis=1))
    # missile-to-target distance (lower bound over the segment), and missile-to-cloud
    d_pq = _closest(m0[idx] - centre, vel_p, a, b) - reach
    rel0 = c0[idx] - t0[idx][:, None] * vel_c - m0[idx]  # C(t) − P(t) = rel0 + t (vC − vP)
    d_cp = _closest(rel0, vel_c - vel_p, a, b)
    dq = float(np.linalg.norm(centre - scene.decoy)) + reach
    ok = (d_pq > 0) & (d_cp - scene.cloud_radius > h_max)
    safe = np.where(d_pq > 0, d_pq, 1.0)
    lever = np.minimum((h_max + scene.cloud_radius + d_co + reach) / safe, 1.0)
    perp = np.minimum(dq / safe, 1.0)
    return np.where(ok, sink + speed * lever * perp, L)


def _leaf(res: PairResult, a: float, b: float, ha: float, hb: float, L: float) -> None:
    """Count an unresolved segment by linear interpolation of H; add its Lipschitz slack
    (the most the interpolation can be wrong by) to the error bound."""
    width = b - a
    if ha <= 0 and hb <= 0:
        res.intervals.append((a, b))
        res.error_bound += max(0.0, width - (abs(ha) + abs(hb)) / L)
    elif ha > 0 and hb > 0:
        res.error_bound += max(0.0, width - (ha + hb) / L)
    else:
        cross = a + width * ha / (ha - hb)
        res.intervals.append((cross, b) if ha > 0 else (a, cross))
        res.error_bound += max(0.0, width - (abs(ha) + abs(hb)) / L)


def union_length(intervals: list[tuple[float, float]]) -> float:
    """Measure of a union of closed intervals (overlaps counted once)."""
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


# --- the replay --------------------------------------------------------------------------


def replay_question(
    doc: dict[str, Any],
    q: Question,
    scene: Scene,
    deadline: CpuBudget | None = None,
    budget: Budget | None = None,
) -> Outcome:
    """Replay one question's decisions: shielding per missile, per-drop detonation
    altitude, and the counts of broken per-UAV rules (each explained by its drops)."""
    drops = read_drops(doc, q, scene)
    out = Outcome()
    qid = q.qid
    for d in drops:
        path = f"{qid}.drops[{d.index}].detonation_z_m"
        out.values[path] = float(d.detonation_point[2])
        out.details[path] = (
            f"{qid}.drops[{d.index}] ({d.uav}, release {d.release:g} s, fuse {d.fuse:g} s) "
            f"detonates at z = {d.detonation_point[2]:.3f} m"
        )
    # Per-UAV rules: the number of drops, and the gap between two releases of one UAV.
    count_bad, gap_bad = [], []
    for u in q.uavs:
        mine = sorted((d for d in drops if d.uav == u), key=lambda d: (d.release, d.index))
        if not q.min_drops_per_uav <= len(mine) <= q.max_drops_per_uav:
            count_bad.append(
                f"{u} drops {len(mine)} (allowed {q.min_drops_per_uav}..{q.max_drops_per_uav})"
            )
        for x, y in zip(mine, mine[1:], strict=False):
            if y.release - x.release < scene.min_release_gap:
                gap_bad.append(
                    f"{u}: drops[{x.index}] and drops[{y.index}] released "
                    f"{y.release - x.release:g} s apart (< {scene.min_release_gap:g} s)"
                )
    out.values[f"{qid}.drop_count_violations"] = len(count_bad)
    out.details[f"{qid}.drop_count_violations"] = "; ".join(count_bad) or "none"
    out.values[f"{qid}.release_gap_violations"] = len(gap_bad)
    out.details[f"{qid}.release_gap_violations"] = "; ".join(gap_bad) or "none"
    # Shielding: union over clouds, per missile.
    pairs = [(m, d) for m in q.missiles for d in drops]
    results = blocked_intervals(scene, pairs, deadline, budget)
    total = 0.0
    bound = 0.0
    for m in q.missiles:
        ivs: list[tuple[float, float]] = []
        used = []
        for (mm, d), res in zip(pairs, results, strict=True):
            if mm == m:
                ivs.extend(res.intervals)
                bound += res.error_bound
                if res.intervals:
                    used.append(f"drops[{d.index}] {union_length(res.intervals):.3f} s")
        length = float(union_length(ivs))
        total += length
        path = f"{qid}.{q.outputs[m]}"
        out.values[path] = length
        out.details[path] = f"{m}: union of " + (", ".join(used) or "no blocking cloud")
    if q.total:
        out.values[f"{qid}.{q.total}"] = total
        out.details[f"{qid}.{q.total}"] = f"sum over {', '.join(q.missiles)}"
    out.notes.append(f"{qid}: shielding error bound {bound:.2e} s (Lipschitz leaves)")
    # The bound is an output so that the gate can refuse what the replay cannot resolve to
    # the task's accuracy (input that exhausts the work cap, or clouds that graze the
    # criterion en masse): past the bound, a leaf counted as blocked might not be.
    path = f"{qid}.shielding_error_bound_s"
    out.values[path] = bound
    left = f"; evaluations of H left in the work cap: {budget.remaining}" if budget else ""
    out.details[path] = (
        f"sum of the Lipschitz slack of the unresolved time segments over {len(pairs)} "
        f"cloud-missile pairs{left}"
    )
    return out


def replay(doc: dict[str, Any], task: Any, spec: ReplaySpec, deadline: CpuBudget) -> Outcome:
    """Replay every question of the task (each is required: a missing one is unusable input)."""
    try:
        scene = scene_from_params(spec.params)
    except ValueError as exc:  # a broken task file, not the agent's fault: fail loudly
        raise RuntimeError(str(exc)) from exc
    out = Outcome()
    budget = Budget(scene.max_evaluations)
    for q in scene.questions.values():
        part = replay_question(doc, q, scene, deadline, budget)
        out.values.update(part.values)
        out.details.update(part.details)
        out.notes.extend(part.notes)
    return out
