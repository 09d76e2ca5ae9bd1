"""CUMCM 2023 B, Problem 4: replay a multibeam survey-line design on the attached depth grid.

The artifact gives the survey lines as straight segments in the attachment's coordinates
(nautical miles: x from west to east in [0, 4], y from south to north in [0, 5]; a bent
line is a chain of segments). The replay recomputes what the design achieves with the
statement's own swath geometry (Problems 1-2) applied to the local bottom:

* depth D and its gradient at a point: bilinear interpolation of 附件.xlsx (0.02 nmi grid);
* a ping at a station of a line fans out in the vertical plane perpendicular to the line
  with opening angle theta; the bottom in that plane is the tangent plane at the nadir, of
  across-track slope a = atan(grad D . n) (n the line's horizontal normal), so the swath
  reaches, horizontally, D sin(theta/2) cos a / cos(theta/2 + a) on the side the bottom
  deepens and D sin(theta/2) cos a / cos(theta/2 - a) on the other (their sum divided by
  cos a is the statement's W = D sin(theta/2) (1/cos(theta/2 + a) + 1/cos(theta/2 - a)));
* a line's swath is the union of its pings: the points at along-track distance t in
  [0, L] and across-track offset within the ping's reach at t (reaches interpolated
  linearly between stations, which are the midpoints of equal steps <= station_step_nmi);
* missed share: the evaluation cells (eval_step_nmi squares tiling the area) whose sample
  point no swath contains, as a percentage of all cells; each cell is sampled at a
  low-discrepancy (R2) offset, so narrow gaps along the grid's rows or columns are counted
  in proportion to their width instead of all or nothing;
* overlap of adjacent swaths: from each station, on each side, the nearest other line
  crossed by the ping's ray within reach is the adjacent one; the overlap along the ping is the part of this swath's width the adjacent
  swath also covers (taken as a band of constant width around its line), as a share of
  this swath's width (Problem 1's eta = 1 - d/W for parallel lines on a flat bottom); the
  length where it exceeds the limit (20 %) is summed over stations, each adjacent pair
  counted once (half on each of its two lines).

It also counts the decisions that break the statement's frame: endpoints outside the
survey area and zero-length segments; the gate holds each count at 0 (the geometry uses
the part of a segment inside the area). The replay decides nothing itself (see
tbmm.replay).
"""

from __future__ import annotations

import functools
import math
import operator
import re
import zipfile
from dataclasses import dataclass
from fractions import Fraction
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from tbmm.core import exact
from tbmm.core.bounds import CpuBudget
from tbmm.replay import Outcome, ReplayInputError

LIST = "q4.lines"
KEYS = ("x_start_nmi", "y_start_nmi", "x_end_nmi", "y_end_nmi")
ATTACHMENT = "附件.xlsx"
SHOWN = 3  # offending decisions named per detail

_CELL = re.compile(r'<c r="([A-Z]+)(\d+)"[^>]*?(?:/>|>(?:<f>[^<]*</f>)?<v>([^<]*)</v></c>)')


# -- the depth grid ---------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """附件.xlsx: depth (m) at x = x0 + i*step (west to east), y = y0 + j*step (south to north)."""

    x0: float
    y0: float
    step: float  # nmi
    depth: np.ndarray  # shape (ny, nx): depth[j, i]

    @property
    def nx(self) -> int:
        return int(self.depth.shape[1])

    @property
    def ny(self) -> int:
        return int(self.depth.shape[0])

    @property
    def x1(self) -> float:
        return self.x0 + (self.nx - 1) * self.step

    @property
    def y1(self) -> float:
        return self.y0 + (self.ny - 1) * self.step


def _col(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def parse_grid(path: Path) -> Grid:
    """The depth grid of the attachment: row 2 holds the x coordinates (from column C),
    column B the y coordinates (from row 3), the block from C3 the depths. The layout is
    checked (uniform steps, a complete block, positive depths): the file is task data."""
    with zipfile.ZipFile(path) as z:
        text = z.read("xl/worksheets/sheet1.xml").decode("utf-8")
    cells: dict[tuple[int, int], float] = {}
    for col, row, v in _CELL.findall(text):
        if v:
            cells[(int(row), _col(col))] = float(v)
    xs = [cells[(2, c)] for c in range(3, 3 + 10_000) if (2, c) in cells]
    ys = [cells[(r, 2)] for r in range(3, 3 + 10_000) if (r, 2) in cells]
    nx, ny = len(xs), len(ys)
    if nx < 2 or ny < 2:
        raise ValueError(f"{path.name}: no coordinate row/column found")
    try:
        depth = np.array(
            [[cells[(3 + j, 3 + i)] for i in range(nx)] for j in range(ny)], dtype=float
        )
    except KeyError as exc:
        raise ValueError(f"{path.name}: depth block incomplete at {exc}") from exc
    step = (xs[-1] - xs[0]) / (nx - 1)
    if not (
        np.allclose(np.diff(xs), step, rtol=0, atol=1e-9)
        and np.allclose(np.diff(ys), step, rtol=0, atol=1e-9)
        and np.all(np.isfinite(depth))
        and depth.min() > 0
    ):
        raise ValueError(f"{path.name}: not a uniform grid of positive depths")
    return Grid(round(xs[0], 9), round(ys[0], 9), round(step, 9), depth)


@functools.lru_cache(maxsize=4)
def _grid_cached(path: str, mtime_ns: int, size: int) -> Grid:
    return parse_grid(Path(path))


def load_grid(task_data_dir: Path) -> Grid:
    """The task's depth grid (parsed once per file version and process)."""
    p = task_data_dir / "attachments" / ATTACHMENT
    st = p.stat()
    return _grid_cached(str(p), st.st_mtime_ns, st.st_size)


# -- parameters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Params:
    opening_deg: float = 120.0
    nmi_m: float = 1852.0
    station_step_nmi: float = 0.01
    eval_step_nmi: float = 0.01
    overlap_limit: float = 0.2
    max_lines: int = 1000
    max_total_length_nmi: float = 1000.0
    max_neighbours: int = 200
    coord_limit_nmi: Fraction = Fraction(100)

    @classmethod
    def from_spec(cls, params: dict[str, Any]) -> Params:
        def num(key: str, default: Any) -> Fraction:
            return exact.parse_decimal(str(params[key])) if key in params else Fraction(default)

        return cls(
            opening_deg=float(num("opening_deg", 120)),
            nmi_m=float(num("nmi_m", 1852)),
            station_step_nmi=float(num("station_step_nmi", Fraction(1, 100))),
            eval_step_nmi=float(num("eval_step_nmi", Fraction(1, 100))),
            overlap_limit=float(num("overlap_limit", Fraction(1, 5))),
            max_lines=int(params.get("max_lines", 1000)),
            max_total_length_nmi=float(num("max_total_length_nmi", 1000)),
            max_neighbours=int(params.get("max_neighbours", 200)),
            coord_limit_nmi=num("coord_limit_nmi", 100),
        )


# -- decisions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    index: int  # position in q4.lines
    coords: tuple[Fraction, Fraction, Fraction, Fraction]  # exact x0, y0, x1, y1 (nmi)
    floats: tuple[float, float, float, float]  # the same, correctly rounded


def _within(v: Fraction, f: float, lo: Fraction, hi: Fraction, flo: float, fhi: float) -> bool:
    """lo <= v <= hi for v exact, f = float(v), flo and fhi the floats of the bounds: a float
    strictly inside (flo, fhi) settles it (correct rounding keeps the order), only a float on
    a bound needs the exact value."""
    if flo < f < fhi:
        return True
    return lo <= v <= hi


def read_lines(doc: dict[str, Any], p: Params) -> list[Segment]:
    """The segments of `q4.lines`, exact; ReplayInputError names the first unusable entry."""
    q4 = doc.get("q4")
    if not isinstance(q4, dict) or "lines" not in q4:
        raise ReplayInputError(f"{LIST}: missing (the survey lines are the decisions replayed)")
    lines = q4["lines"]
    if not isinstance(lines, list):
        raise ReplayInputError(f"{LIST}: must be a list of segments")
    if not lines:
        raise ReplayInputError(f"{LIST}: empty (a design needs at least one survey line)")
    if len(lines) > p.max_lines:
        raise ReplayInputError(f"{LIST}: {len(lines)} segments, over the cap of {p.max_lines}")
    out: list[Segment] = []
    lim = p.coord_limit_nmi
    flim = float(lim)
    for i, entry in enumerate(lines):
        where = f"{LIST}[{i}]"
        if not isinstance(entry, dict):
            raise ReplayInputError(f"{where}: must be an object with {', '.join(KEYS)}")
        vals: list[Fraction] = []
        fl: list[float] = []
        for k in KEYS:
            node = entry.get(k)
            if isinstance(node, exact.NonFinite):
                raise ReplayInputError(f"{where}.{k}: not a finite number ({node.text[:20]})")
            if not isinstance(node, exact.Num):
                what = "missing" if node is None else f"not a number ({type(node).__name__})"
                raise ReplayInputError(f"{where}.{k}: {what}")
            v, f = node.value, float(node.text)
            if not _within(v, f, -lim, lim, -flim, flim):
                raise ReplayInputError(
                    f"{where}.{k}: {node.text[:20]} nmi is not a coordinate of this sea area "
                    f"(|value| > {p.coord_limit_nmi} nmi)"
                )
            vals.append(v)
            fl.append(f)
        out.append(Segment(i, (vals[0], vals[1], vals[2], vals[3]), (fl[0], fl[1], fl[2], fl[3])))
    return out


_GET4 = operator.itemgetter(*KEYS)
_TEXT = operator.attrgetter("text")


def read_columns(doc: dict[str, Any], p: Params) -> tuple[list[tuple[Any, ...]], np.ndarray]:
    """`read_lines` as columns: per segment its four JSON numbers (exact values computed
    only where needed) and an (n, 4) array of their floats. Plain lines (objects with the
    four keys, finite numbers strictly within the coordinate limit) are read in C-level
    passes; anything else goes through `read_lines`, which names the first unusable entry."""
    q4 = doc.get("q4")
    lines = q4.get("lines") if isinstance(q4, dict) else None
    if isinstance(lines, list) and 0 < len(lines) <= p.max_lines:
        try:
            nodes = list(map(_GET4, lines))  # a non-object raises TypeError, a missing key KeyError
        except (TypeError, KeyError):
            nodes = []
        flat = list(chain.from_iterable(nodes))
        if nodes and set(map(type, flat)) == {exact.Num} and not any(map(_not_dict, lines)):
            f = np.fromiter(map(float, map(_TEXT, flat)), dtype=float, count=len(flat))
            flim = float(p.coord_limit_nmi)
            if bool(np.all(np.abs(f) < flim)):  # strictly inside: the float settles it
                return nodes, f.reshape(-1, 4)
    segs = read_lines(doc, p)
    return [tuple(_Exact(v) for v in s.coords) for s in segs], np.array(
        [s.floats for s in segs], dtype=float
    ).reshape(-1, 4)


def _not_dict(entry: Any) -> bool:
    """True for an entry `read_lines` refuses though itemgetter reads it (not a dict)."""
    return type(entry) is not dict


class _Exact:
    """A Fraction with the `value` attribute of exact.Num (the slow reader's numbers)."""

    __slots__ = ("value",)

    def __init__(self, value: Fraction) -> None:
        self.value = value


def _clip(x0: float, y0: float, x1: float, y1: float, box: tuple[float, float, float, float]):
    """Liang-Barsky: the part of a segment inside the box, or None."""
    bx0, by0, bx1, by1 = box
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for pk, qk in ((-dx, x0 - bx0), (dx, bx1 - x0), (-dy, y0 - by0), (dy, by1 - y0)):
        if pk == 0:
            if qk < 0:
                return None
            continue
        r = qk / pk
        if pk < 0:
            lo = max(lo, r)
        else:
            hi = min(hi, r)
        if lo > hi:
            return None
    return x0 + lo * dx, y0 + lo * dy, x0 + hi * dx, y0 + hi * dy


def clip_all(
    f: np.ndarray, box: tuple[float, float, float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """`_clip` of every row of f (x0, y0, x1, y1), with its float operations in its order
    (Python's max(lo, r) keeps lo unless r > lo): (clipped rows, whether any part is left)."""
    bx0, by0, bx1, by1 = box
    x0, y0, x1, y1 = f[:, 0], f[:, 1], f[:, 2], f[:, 3]
    dx, dy = x1 - x0, y1 - y0
    lo = np.zeros(len(f))
    hi = np.ones(len(f))
    dead = np.zeros(len(f), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for pk, qk in ((-dx, x0 - bx0), (dx, bx1 - x0), (-dy, y0 - by0), (dy, by1 - y0)):
            flat = pk == 0
            dead |= flat & (qk < 0)
            r = qk / np.where(flat, 1.0, pk)
            lo = np.where(~flat & (pk < 0) & (r > lo), r, lo)
            hi = np.where(~flat & (pk > 0) & (r < hi), r, hi)
            dead |= lo > hi
    out = np.stack([x0 + lo * dx, y0 + lo * dy, x0 + hi * dx, y0 + hi * dy], axis=1)
    return out, ~dead


# -- swath geometry ----------------------------------------------------------------------------


@dataclass
class Swaths:
    """Per replayed segment: start, unit direction, left normal, length, station step, and
    the stations' reaches on the normal's side (rp) and the other side (rm), all in nmi."""

    ids: list[int]  # index into q4.lines
    a: np.ndarray  # (K, 2)
    u: np.ndarray  # (K, 2)
    n: np.ndarray  # (K, 2)
    length: np.ndarray  # (K,)
    dt: np.ndarray  # (K,)
    off: np.ndarray  # (K + 1,) offsets into the station arrays
    pts: np.ndarray  # (S, 2) stations
    rp: np.ndarray  # (S,)
    rm: np.ndarray  # (S,)

    @property
    def count(self) -> np.ndarray:
        return np.diff(self.off)

    @property
    def seg_of(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.ids)), self.count)


def depth_and_gradient(
    g: Grid, x: np.ndarray, y: np.ndarray, nmi_m: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear depth (m) and its gradient (m per m, east and north) at points (nmi)."""
    fx = np.clip((x - g.x0) / g.step, 0.0, g.nx - 1.0)
    fy = np.clip((y - g.y0) / g.step, 0.0, g.ny - 1.0)
    i0 = np.minimum(np.floor(fx).astype(np.int64), g.nx - 2)
    j0 = np.minimum(np.floor(fy).astype(np.int64), g.ny - 2)
    tx, ty = fx - i0, fy - j0
    d = g.depth.ravel()  # flat gathers (the same values as d[j, i], fewer index passes)
    at = j0 * g.nx + i0
    d00, d10 = d.take(at), d.take(at + 1)
    at += g.nx
    d01, d11 = d.take(at), d.take(at + 1)
    depth = (1 - tx) * (1 - ty) * d00 + tx * (1 - ty) * d10 + (1 - tx) * ty * d01 + tx * ty * d11
    h = g.step * nmi_m
    gx = ((1 - ty) * (d10 - d00) + ty * (d11 - d01)) / h
    gy = ((1 - tx) * (d01 - d00) + tx * (d11 - d10)) / h
    return depth, gx, gy


def reaches(
    depth: np.ndarray, slope_n: np.ndarray, half_angle: float, nmi_m: float
) -> tuple[np.ndarray, np.ndarray]:
    """Horizontal reach (nmi) of a ping toward +n and toward -n, for across-track slope
    tan(a) = slope_n (> 0: the bottom deepens toward +n)."""
    a = np.arctan(slope_n)
    k = depth * math.sin(half_angle) * np.cos(a) / nmi_m
    return k / np.cos(half_angle + a), k / np.cos(half_angle - a)


def build_swaths(g: Grid, geo: np.ndarray, ids: list[int], p: Params) -> Swaths:
    """Stations (midpoints of equal steps of at most station_step_nmi) and reaches of the
    segments `geo` (rows x0, y0, x1, y1 in nmi, each of positive length)."""
    half = math.radians(p.opening_deg) / 2
    A = geo[:, 0:2]
    D = geo[:, 2:4] - A
    length = np.hypot(D[:, 0], D[:, 1])
    U = D / length[:, None]
    N = np.stack([-U[:, 1], U[:, 0]], axis=1)
    count = np.maximum(1, np.ceil(length / p.station_step_nmi - 1e-9)).astype(np.int64)
    dt = length / count
    off = np.concatenate([[0], np.cumsum(count)])
    # per station, column by column (the same float operations as on (S, 2) rows)
    local = np.arange(int(off[-1])) - np.repeat(off[:-1], count)
    t = (local + 0.5) * np.repeat(dt, count)
    px = np.repeat(A[:, 0], count) + t * np.repeat(U[:, 0], count)
    py = np.repeat(A[:, 1], count) + t * np.repeat(U[:, 1], count)
    pts = np.stack([px, py], axis=1)
    depth, gx, gy = depth_and_gradient(g, px, py, p.nmi_m)
    slope = gx * np.repeat(N[:, 0], count) + gy * np.repeat(N[:, 1], count)
    rp, rm = reaches(depth, slope, half, p.nmi_m)
    return Swaths(ids, A, U, N, length, dt, off, pts, rp, rm)


def _weights(sw: Swaths, k: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stations around along-track distance t of segment(s) k and the interpolation weight
    (linear between stations, constant beyond the first and last)."""
    m = sw.off[k + 1] - sw.off[k]
    f = t / sw.dt[k] - 0.5
    i0 = np.clip(np.floor(f), 0, m - 1).astype(np.int64)
    i1 = np.minimum(i0 + 1, m - 1)
    w = np.clip(f - i0, 0.0, 1.0)
    return sw.off[k] + i0, sw.off[k] + i1, w


def _interp(sw: Swaths, k: np.ndarray, t: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Reach `r` of segment(s) k at along-track distance t."""
    a, b, w = _weights(sw, k, t)
    return r[a] * (1 - w) + r[b] * w


def _ragged(start: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs start[q] .. start[q] + count[q] - 1: (run of each element, element)."""
    count = np.maximum(count, 0)
    q = np.repeat(np.arange(count.size), count)
    first = np.cumsum(count) - count
    return q, start[q] + np.arange(int(count.sum())) - first[q]


def _chunks(cost: np.ndarray, limit: float) -> list[np.ndarray]:
    """Consecutive index groups of about `limit` summed cost each (bounds memory): the
    group of an index is its preceding cost sum divided by `limit`, rounded down."""
    if cost.size == 0:
        return []
    before = np.cumsum(cost) - cost
    group = np.floor(before / limit)
    cuts = np.flatnonzero(group[1:] != group[:-1]) + 1
    return np.split(np.arange(cost.size), cuts)


# -- coverage -----------------------------------------------------------------------------------

PIECE = 32  # stations per piece: a piece's bounding rectangle hugs its part of the swath
CHUNK_CELLS = 50_000  # rectangle cells per batch; cells covered by earlier batches are skipped
CHUNK_ROWS = 100_000  # (piece, row) intervals computed at once
FILL_EXT = 2  # evaluation cells: how far a piece's sure part reaches beyond its own stations
EPS = 1e-9  # nmi: the sure part's margin (rounding of the exact test is ~1e-15 nmi)


def _interval(a: np.ndarray, b: np.ndarray, lo: Any, hi: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the x interval where lo <= a + b*x <= hi."""
    flat = np.abs(b) < 1e-15
    bb = np.where(flat, 1.0, b)
    x1, x2 = (lo - a) / bb, (hi - a) / bb
    inside = (a >= lo) & (a <= hi)
    xlo = np.where(flat, np.where(inside, -np.inf, np.inf), np.minimum(x1, x2))
    xhi = np.where(flat, np.where(inside, np.inf, -np.inf), np.maximum(x1, x2))
    return xlo, xhi


GOLDEN = 0.6180339887498949  # (sqrt 5 - 1) / 2: the order in which coverage takes pieces
PLASTIC = 1.324717957244746  # the plastic number: R2 low-discrepancy sequence constants


@functools.lru_cache(maxsize=4)
def sample_offsets(nx: int, ny: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each evaluation cell is sampled, as fractions of the cell (row-major cell index
    n = row * nx + col): the R2 sequence (frac(0.5 + n / g), frac(0.5 + n / g^2)), g the
    plastic number. A jittered grid does not alias with lines that run along its rows or
    columns (a regular grid counts a narrow gap beside a north-south line all or nothing)."""
    n = np.arange(nx * ny, dtype=np.float64)
    ox = np.mod(0.5 + n / PLASTIC, 1.0).reshape(ny, nx)
    oy = np.mod(0.5 + n / PLASTIC**2, 1.0).reshape(ny, nx)
    return ox, oy


@functools.lru_cache(maxsize=4)
def sample_points(
    x0: float, y0: float, h: float, nx: int, ny: int
) -> tuple[np.ndarray, np.ndarray]:
    """The evaluation cells' sample points (nmi), flat in row-major cell order: computed once
    per grid and process, as `coverage` computed them per tested cell (the same floats)."""
    ox, oy = sample_offsets(nx, ny)
    col = np.tile(np.arange(nx), ny)
    row = np.repeat(np.arange(ny), nx)
    sx = x0 + (col + ox.ravel()) * h
    sy = y0 + (row + oy.ravel()) * h
    sx.flags.writeable = False
    sy.flags.writeable = False
    return sx, sy


def _repeats(sw: Swaths) -> np.ndarray:
    """Per segment, the first segment with the same start, direction and length (itself if
    none): exact repeats have the same stations and reaches."""
    geo = np.concatenate([sw.a, sw.u, sw.length[:, None]], axis=1)
    _, first, inverse = np.unique(geo, axis=0, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)]


def coverage(g: Grid, sw: Swaths, p: Params, dl: CpuBudget) -> np.ndarray:
    """Per evaluation cell (rows south to north, columns west to east): whether its sample
    point lies inside some swath.

    Each segment is cut into pieces of PIECE stations; a piece's part of the swath lies in
    the rectangle of its along-track extent and its largest reaches (over the stations its
    interpolation uses). Per row of cells, the rectangle spans an x interval (from where its
    edges cross the row's bounds and its corners inside the row). Pieces are taken in
    batches; only the cells of a batch's intervals that no earlier batch covered are tested,
    against the reaches interpolated at their own t. So the work follows the area newly
    covered, not the total swath area (stacked or dense lines cost little more than one)."""
    h = p.eval_step_nmi
    nxe = round((g.x1 - g.x0) / h)
    nye = round((g.y1 - g.y0) / h)
    cov = np.zeros((nye, nxe), dtype=bool)
    flat = cov.ravel()
    K = len(sw.ids)
    if K == 0:
        return cov
    sx, sy = sample_points(g.x0, g.y0, h, nxe, nye)
    # pieces: segment, first station, one past the last station; a segment repeating an
    # earlier one exactly (same start, direction and length: the same stations and reaches)
    # adds nothing to the union, so only the first of each is drawn
    npc = (sw.count + PIECE - 1) // PIECE
    cls = _repeats(sw)
    drawn = cls == np.arange(K)
    npc = np.where(drawn, npc, 0)
    seg, first = _ragged(np.zeros(K, dtype=np.int64), npc)
    s0 = first * PIECE
    s1 = np.minimum(s0 + PIECE, sw.count[seg])
    t_lo = np.where(s0 == 0, 0.0, s0 * sw.dt[seg])
    t_hi = np.where(s1 == sw.count[seg], sw.length[seg], s1 * sw.dt[seg])
    lo_st = sw.off[seg] + np.maximum(s0 - 1, 0)
    hi_st = sw.off[seg] + np.minimum(s1, sw.count[seg] - 1)  # inclusive
    # largest reaches over stations lo_st..hi_st (runs of at most PIECE + 2 stations)
    Rp = np.zeros(seg.size)
    Rm = np.zeros(seg.size)
    for d in range(PIECE + 2):
        st = np.minimum(lo_st + d, hi_st)
        Rp = np.maximum(Rp, sw.rp[st])
        Rm = np.maximum(Rm, sw.rm[st])
    a, u, n = sw.a[seg], sw.u[seg], sw.n[seg]
    p0 = a + t_lo[:, None] * u
    p1 = a + t_hi[:, None] * u
    corners = np.stack(
        [p0 + Rp[:, None] * n, p0 - Rm[:, None] * n, p1 + Rp[:, None] * n, p1 - Rm[:, None] * n],
        axis=1,
    )  # (Q, 4, 2)
    cy = corners[:, :, 1]
    j0 = np.maximum(0, np.floor((cy.min(axis=1) - g.y0) / h)).astype(np.int64)
    j1 = np.minimum(nye - 1, np.floor((cy.max(axis=1) - g.y0) / h)).astype(np.int64)
    # the piece's sure part: a rectangle its interpolated swath contains for certain (the
    # along-track range widened by FILL_EXT on each side, so that the cells on the border of
    # two pieces lie wholly inside one of them; the smallest reaches over every station the
    # interpolation uses there; EPS inside on every side, far beyond rounding)
    ext = FILL_EXT * h
    e = int(np.ceil(2 * ext / p.station_step_nmi)) + 1  # stations within ext (dt >= step / 2)
    m = sw.count[seg]
    in_lo = sw.off[seg] + np.maximum(s0 - 1 - e, 0)
    in_hi = sw.off[seg] + np.minimum(s1 + e, m - 1)
    Ip = np.full(seg.size, np.inf)
    Im = np.full(seg.size, np.inf)
    for d in range(PIECE + 2 + 2 * e):
        st = np.minimum(in_lo + d, in_hi)
        Ip = np.minimum(Ip, sw.rp[st])
        Im = np.minimum(Im, sw.rm[st])
    L = sw.length[seg]
    ti_lo = np.maximum(t_lo - ext, EPS)
    ti_hi = np.minimum(t_hi + ext, L - EPS)
    ci_lo, ci_hi = -(Im - EPS), Ip - EPS
    sure = (ti_lo < ti_hi) & (ci_lo < ci_hi)
    # pieces in a scattered (golden-ratio) order: a batch rarely holds two overlapping pieces,
    # so a cell in many swaths (dense or stacked lines) is tested about once, not once per
    # swath of its batch; the union does not depend on the order
    perm = np.argsort(np.mod(np.arange(seg.size) * GOLDEN, 1.0), kind="stable")
    batches = []
    fill_start, fill_end = [], []
    for part in _chunks(np.maximum(0, j1 - j0 + 1)[perm].astype(float), CHUNK_ROWS):
        qs = perm[part]
        dl.check("multibeam coverage")
        r, row = _ragged(j0[qs], j1[qs] - j0[qs] + 1)
        q = qs[r]
        ax, ay = a[q, 0], a[q, 1]
        ux, uy, nx_, ny_ = u[q, 0], u[q, 1], n[q, 0], n[q, 1]
        xlo = np.full(q.size, np.inf)
        xhi = np.full(q.size, -np.inf)
        klo = np.full(q.size, -np.inf)  # the sure part: x where both row bounds are inside
        khi = np.full(q.size, np.inf)
        for edge in (0.0, 1.0):  # the row's lower and upper bound
            dy = g.y0 + (row + edge) * h - ay
            # t = (x - ax) ux + dy uy in [t_lo, t_hi];  c = (x - ax) nx + dy ny in [-Rm, Rp]
            at, an = dy * uy - ax * ux, dy * ny_ - ax * nx_
            tlo, thi = _interval(at, ux, t_lo[q], t_hi[q])
            clo, chi = _interval(an, nx_, -Rm[q], Rp[q])
            lo_, hi_ = np.maximum(tlo, clo), np.minimum(thi, chi)
            ok = lo_ <= hi_
            xlo = np.where(ok, np.minimum(xlo, lo_), xlo)
            xhi = np.where(ok, np.maximum(xhi, hi_), xhi)
            tlo, thi = _interval(at, ux, ti_lo[q], ti_hi[q])
            clo, chi = _interval(an, nx_, ci_lo[q], ci_hi[q])
            klo = np.maximum(klo, np.maximum(tlo, clo))
            khi = np.minimum(khi, np.minimum(thi, chi))
        for c in range(4):
            y_c = corners[q, c, 1]
            inside = (y_c >= g.y0 + row * h) & (y_c <= g.y0 + (row + 1) * h)
            xlo = np.where(inside, np.minimum(xlo, corners[q, c, 0]), xlo)
            xhi = np.where(inside, np.maximum(xhi, corners[q, c, 0]), xhi)
        xlo = np.clip(xlo, g.x0 - h, g.x1 + h)
        xhi = np.clip(xhi, g.x0 - h, g.x1 + h)
        i0 = np.clip(np.floor((xlo - g.x0) / h), 0, nxe).astype(np.int64)
        i1 = np.clip(np.floor((xhi - g.x0) / h), -1, nxe - 1).astype(np.int64)
        batches.append((q, row, i0, i1))
        # cells wholly inside the sure part (its every point, the sample point included)
        k0 = np.ceil((np.clip(klo, g.x0 - h, g.x1 + h) - g.x0) / h)
        k1 = np.floor((np.clip(khi, g.x0 - h, g.x1 + h) - g.x0) / h) - 1
        k0 = np.clip(k0, 0, nxe).astype(np.int64)
        k1 = np.clip(k1, -1, nxe - 1).astype(np.int64)
        full = sure[q] & (k0 <= k1)
        fill_start.append(row[full] * nxe + k0[full])
        fill_end.append(row[full] * nxe + k1[full] + 1)
    if fill_start:
        N = flat.size + 1
        marks = np.bincount(np.concatenate(fill_start), minlength=N)
        marks -= np.bincount(np.concatenate(fill_end), minlength=N)
        flat |= np.cumsum(marks[:-1]) > 0
    if not batches:
        return cov
    q, row, i0, i1 = (np.concatenate(x) for x in zip(*batches, strict=True))
    # the cells of [i0, i1] on each row that are still uncovered, tested in batches of
    # about CHUNK_CELLS (the uncovered cells found again before each)
    open_cells = np.flatnonzero(~flat)
    todo = np.searchsorted(open_cells, row * nxe + i1, side="right")
    todo -= np.searchsorted(open_cells, row * nxe + i0, side="left")
    keep = todo > 0
    q, row, i0, i1, todo = q[keep], row[keep], i0[keep], i1[keep], todo[keep]
    for n_part, part in enumerate(_chunks(todo.astype(float), CHUNK_CELLS)):
        dl.check("multibeam coverage")
        if n_part:
            open_cells = np.flatnonzero(~flat)
        lo = np.searchsorted(open_cells, row[part] * nxe + i0[part], side="left")
        hi = np.searchsorted(open_cells, row[part] * nxe + i1[part], side="right")
        r, at = _ragged(lo, hi - lo)
        if at.size == 0:
            continue
        cell = open_cells[at]
        r = part[r]
        k = seg[q[r]]
        px = sx[cell] - sw.a[k, 0]
        py = sy[cell] - sw.a[k, 1]
        t = px * sw.u[k, 0] + py * sw.u[k, 1]
        c = px * sw.n[k, 0] + py * sw.n[k, 1]
        ia, ib, w = _weights(sw, k, t)
        inside = (t >= 0) & (t <= sw.length[k])
        inside &= c <= sw.rp[ia] * (1 - w) + sw.rp[ib] * w
        inside &= c >= -(sw.rm[ia] * (1 - w) + sw.rm[ib] * w)
        flat[cell[inside]] = True
    return cov


# -- overlap of adjacent swaths ----------------------------------------------------------------

BLOCKS = (64, 16, 4)  # stations per block, coarse to fine, in the nearest-crossing search
TOL = 1e-12  # nmi: a line through the nadir itself counts on both sides
DOMINATED = 1e-9  # nmi: farther than a sure crossing by this much (rounding is ~1e-15)
CHUNK_PAIRS = 200_000  # (segment, candidate) pairs handled at once (memory bound)


def _group_first(key: np.ndarray, dist: np.ndarray, nkeys: int) -> np.ndarray:
    """Indices of the smallest `dist` per distinct integer `key` in [0, nkeys): an unbuffered
    minimum per key (linear, no sort of all entries), then the first entry reaching it
    (exact ties go to the earlier entry)."""
    if key.size == 0:
        return np.zeros(0, dtype=np.int64)
    best = np.full(nkeys, np.inf)
    np.minimum.at(best, key, dist)
    at = np.flatnonzero(dist == best[key])
    first = np.full(nkeys, at.size)  # per key, the earliest position in `at` (no sort)
    np.minimum.at(first, key[at], np.arange(at.size))
    return at[first[first < at.size]]


def _prune(
    key: np.ndarray,
    nkeys: int,
    lo: np.ndarray,
    hi: np.ndarray,
    full: np.ndarray,
    sv0: np.ndarray,
    dsv: np.ndarray,
    rq: np.ndarray,
    rk_min: np.ndarray,
    rk_max: np.ndarray,
) -> np.ndarray:
    """Which (candidate, station run) entries can hold some station's nearest crossing.

    Entry e covers stations lo[e]..hi[e] of the run `key[e]` (a segment, or a block of one)
    at signed distances sv0[e] + dsv[e] * i, valid in [0, rk + rq[e]]. An entry that covers
    its whole run (`full`) within reach everywhere guarantees a crossing no farther than its
    largest distance there; the smallest such guarantee per run is that run's bound, and an
    entry whose smallest distance is not below the bound can be nobody's nearest (the
    entry setting the bound is kept). Nor can an entry farther than that champion by more
    than DOMINATED at both ends of its own stations: the two distances are linear in the
    station, so it is farther at every station between (no exact tie can hand it a station)."""
    va, vb = sv0 + dsv * lo, sv0 + dsv * hi
    vlo, vhi = np.minimum(va, vb), np.maximum(va, vb)
    keep = (vhi >= -TOL) & (vlo <= rk_max[key] + rq)
    idx = np.flatnonzero(full & (vlo >= -TOL))
    idx = idx[vhi[idx] <= rk_min[key[idx]] + rq[idx]]  # sure: valid at every station
    if idx.size == 0:
        return keep
    win = idx[_group_first(key[idx], vhi[idx], nkeys)]
    bound = np.full(nkeys, np.inf)
    bound[key[win]] = vhi[win]
    c0 = np.zeros(nkeys)
    cd = np.zeros(nkeys)
    c0[key[win]] = sv0[win]
    cd[key[win]] = dsv[win]
    bk = bound[key]
    keep &= np.maximum(vlo, 0.0) < bk
    at = np.flatnonzero(keep & (bk < np.inf))  # the dominance test where a champion is
    k = key[at]
    c0k, cdk = c0[k], cd[k]
    above = va[at] - (c0k + cdk * lo[at]) > DOMINATED
    above &= vb[at] - (c0k + cdk * hi[at]) > DOMINATED
    keep[at[above]] = False
    keep[win] = True  # the champion itself (its own smallest distance is below its bound)
    return keep


def _valid_run(
    lo: np.ndarray, hi: np.ndarray, v0: np.ndarray, dv: np.ndarray, vmax: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The stations lo..hi narrowed to those where -TOL <= v0 + dv * i <= vmax may hold (a
    linear distance: an interval), widened by one station against rounding, so that only
    stations the exact test would refuse anyway are dropped. A line crossing this one
    changes side halfway: half of its stations need no look on this side."""
    moving = dv != 0.0
    dd = np.where(moving, dv, 1.0)
    a, b = (-TOL - v0) / dd, (vmax - v0) / dd
    first = np.where(moving, np.floor(np.minimum(a, b)) - 1, -np.inf)
    last = np.where(moving, np.ceil(np.maximum(a, b)) + 1, np.inf)
    still = ~moving & ((v0 < -TOL) | (v0 > vmax))  # a constant distance out of range
    new_lo = np.maximum(lo, np.clip(first, -1, 2**62).astype(np.int64, copy=False))
    new_hi = np.minimum(hi, np.clip(last, -1, 2**62).astype(np.int64, copy=False))
    return new_lo, np.where(still, new_lo - 1, new_hi)


def _nearest_crossings(
    sw: Swaths,
    pk: np.ndarray,
    sv0: np.ndarray,
    dsv: np.ndarray,
    i0: np.ndarray,
    i1: np.ndarray,
    rq: np.ndarray,
    rk: np.ndarray,
    runs: tuple[np.ndarray, np.ndarray, list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per station and one side, the nearest crossing among candidate pairs.

    Pair q (line pk[q] and a candidate) is crossed by the stations i0[q]..i1[q] of line
    pk[q] at signed distance sv0[q] + dsv[q] * i (positive: on this side); it counts where
    0 <= distance <= rk[station] + rq[q]. Returns (global station, pair, distance) of each
    station's nearest valid crossing.

    Pairs are pruned (`_prune`) first over whole segments, then over ever finer blocks (BLOCKS)
    of stations, and only the survivors are expanded station by station: stacked, parallel or
    fanned lines cost about one candidate per block instead of all of them."""
    seg_min, seg_max, levels = runs
    m = sw.count[pk]
    full = (i0 == 0) & (i1 == m - 1)
    keep = _prune(pk, sw.count.size, i0, i1, full, sv0, dsv, rq, seg_min, seg_max)
    q = np.flatnonzero(keep)
    lo, hi = _valid_run(i0[q], i1[q], sv0[q], dsv[q], seg_max[pk[q]] + rq[q])
    ok = lo <= hi
    q, lo, hi = q[ok], lo[ok], hi[ok]
    for size, boff, blk_min, blk_max in levels:  # ever finer blocks of stations
        r, b = _ragged(lo // size, hi // size - lo // size + 1)
        q = q[r]
        lo = np.maximum(lo[r], b * size)
        hi = np.minimum(hi[r], b * size + size - 1)
        gb = boff[pk[q]] + b
        full = (lo == b * size) & (hi == np.minimum(b * size + size - 1, m[q] - 1))
        keep = _prune(gb, blk_min.size, lo, hi, full, sv0[q], dsv[q], rq[q], blk_min, blk_max)
        q, lo, hi = q[keep], lo[keep], hi[keep]
    r, i = _ragged(lo, hi - lo + 1)
    qq = q[r]
    gs = sw.off[pk[qq]] + i
    dd = sv0[qq] + dsv[qq] * i
    ok = (dd >= -TOL) & (dd <= rk[gs] + rq[qq])
    gs, qq, dd = gs[ok], qq[ok], np.maximum(dd[ok], 0.0)
    pick = _group_first(gs, dd, len(sw.pts))
    return gs[pick], qq[pick], dd[pick]


def _cross(ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray) -> np.ndarray:
    return ax * by - ay * bx


def _point_segment_xy(
    px: np.ndarray, py: np.ndarray, ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray
) -> np.ndarray:
    """Distance from points p to segments ab, on coordinate columns (numpy reduces a
    length-2 axis slowly)."""
    dx, dy = bx - ax, by - ay
    den = np.maximum(dx * dx + dy * dy, 1e-300)
    t = np.clip(((px - ax) * dx + (py - ay) * dy) / den, 0.0, 1.0)
    return np.hypot(px - (ax + t * dx), py - (ay + t * dy))


def _segments_within(e: tuple[np.ndarray, ...], pk: np.ndarray, pj: np.ndarray, lim: np.ndarray):
    """Segment distance(k, j) <= lim (0 where they cross) for the pairs (pk, pj) of segments with end columns
    e = (x0, y0, x1, y1): the same test, with each distance computed only for the pairs no
    earlier one settled (crossing pairs first, then the four end-to-segment distances)."""
    x0, y0, x1, y1 = e
    a1x, a1y, b1x, b1y = x0[pk], y0[pk], x1[pk], y1[pk]
    a2x, a2y, b2x, b2y = x0[pj], y0[pj], x1[pj], y1[pj]
    d1x, d1y, d2x, d2y = b1x - a1x, b1y - a1y, b2x - a2x, b2y - a2y
    o1 = _cross(d1x, d1y, a2x - a1x, a2y - a1y)
    o2 = _cross(d1x, d1y, b2x - a1x, b2y - a1y)
    o3 = _cross(d2x, d2y, a1x - a2x, a1y - a2y)
    o4 = _cross(d2x, d2y, b1x - a2x, b1y - a2y)
    ok = (o1 * o2 < 0) & (o3 * o4 < 0)
    for p, a, b in (
        ((a1x, a1y), (a2x, a2y), (b2x, b2y)),
        ((b1x, b1y), (a2x, a2y), (b2x, b2y)),
        ((a2x, a2y), (a1x, a1y), (b1x, b1y)),
        ((b2x, b2y), (a1x, a1y), (b1x, b1y)),
    ):
        w = np.flatnonzero(~ok)
        if w.size == 0:
            break
        d = _point_segment_xy(p[0][w], p[1][w], a[0][w], a[1][w], b[0][w], b[1][w])
        ok[w[d <= lim[w]]] = True
    return ok


def adjacent_candidates(
    sw: Swaths, rmax: np.ndarray, cap: int, dl: CpuBudget
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (k, j) such that a ping of k may meet j as its adjacent line: j lies within
    R_k + 2 R_j of k, so that a crossing within reach, r + R_j / max(|n_k . n_j|, 1/2) <=
    R_k + 2 R_j, is possible.

    More than `cap` candidates for one segment is not a survey layout (stacked or fanned
    lines): ReplayInputError names the segment, before any costly work."""
    K = len(sw.ids)
    ends = np.stack([sw.a, sw.a + sw.length[:, None] * sw.u], axis=1)  # (K, 2, 2)
    e = (ends[:, 0, 0], ends[:, 0, 1], ends[:, 1, 0], ends[:, 1, 1])
    lo, hi = ends.min(axis=1), ends.max(axis=1)
    # bounding boxes: k's grown by R_k, j's by 2 R_j (coordinate columns, contiguous)
    lkx, lky = lo[:, 0] - rmax, lo[:, 1] - rmax
    hkx, hky = hi[:, 0] + rmax, hi[:, 1] + rmax
    ljx, ljy = lo[:, 0] - 2 * rmax, lo[:, 1] - 2 * rmax
    hjx, hjy = hi[:, 0] + 2 * rmax, hi[:, 1] + 2 * rmax
    out_k, out_j = [], []
    rows = max(1, CHUNK_PAIRS // K)
    for c0 in range(0, K, rows):
        dl.check("multibeam neighbours")
        ks = np.arange(c0, min(K, c0 + rows))
        near = (lkx[ks, None] <= hjx[None]) & (ljx[None] <= hkx[ks, None])
        near &= lky[ks, None] <= hjy[None]
        near &= ljy[None] <= hky[ks, None]
        near[np.arange(ks.size), ks] = False
        pk, pj = np.nonzero(near)
        pk = ks[pk]
        keep = _segments_within(e, pk, pj, rmax[pk] + 2 * rmax[pj])
        pk, pj = pk[keep], pj[keep]
        count = np.bincount(pk - c0, minlength=ks.size)
        if count.max(initial=0) > cap:
            k = int(ks[np.argmax(count)])
            raise ReplayInputError(
                f"{LIST}[{sw.ids[k]}]: {int(count.max())} other segments run within reach of "
                f"its swath (cap {cap}): stacked or fanned lines, not a survey layout"
            )
        out_k.append(pk)
        out_j.append(pj)
    return np.concatenate(out_k), np.concatenate(out_j)


def overlap_shares(sw: Swaths, dl: CpuBudget, cap: int = 200) -> np.ndarray:
    """Per station and side (+n, -n), shape (S, 2): the overlap share with the adjacent
    swath; NaN where no candidate line (see `adjacent_candidates`) is crossed within reach.

    In the frame of line k (t along it, c across it) another segment j is a straight piece
    from (ta, ca) to (tb, cb): the ping ray at station t crosses it iff t lies between ta
    and tb, at c = ca + (t - ta) (cb - ca) / (tb - ta), a linear function of the station
    index over a contiguous run of stations. The adjacent swath on a side is the one of the
    nearest candidate line crossed within reach: this ping's reach plus that line's largest
    reach measured along the ray (divided by |n_k . n_j|, at most doubled: a line crossing
    at more than 60 degrees counts within r + 2 R_j); a line farther away leaves a gap.
    The pieces of a bent line (one starting where the other ends, turning by less than 90
    degrees) never cross each other's pings: each lies beyond the other's end along its axis."""
    S = len(sw.pts)
    eta = np.full((S, 2), np.nan)
    K = len(sw.ids)
    if K < 2:
        return eta
    rmax = np.maximum(
        np.maximum.reduceat(sw.rp, sw.off[:-1]), np.maximum.reduceat(sw.rm, sw.off[:-1])
    )
    all_k, all_j = adjacent_candidates(sw, rmax, cap, dl)
    # exact repeats of one segment cross every ray at the same point with the same reaches:
    # one of them per class stands for all (the cap above counted every one)
    cls = _repeats(sw)
    _, firsts = np.unique(all_k * K + cls[all_j], return_index=True)
    firsts.sort()
    all_k, all_j = all_k[firsts], all_j[firsts]
    ends = np.stack([sw.a, sw.a + sw.length[:, None] * sw.u], axis=1)  # (K, 2, 2)
    reach = np.stack([sw.rp, sw.rm], axis=1)  # (S, 2)
    starts = []
    for size in BLOCKS:
        nb = (sw.count + size - 1) // size
        boff = np.concatenate([[0], np.cumsum(nb)])[:-1]
        bstart = (
            sw.off[:-1][np.repeat(np.arange(K), nb)]
            + (np.arange(int(nb.sum())) - np.repeat(boff, nb)) * size
        )
        starts.append((size, boff, bstart))
    side_runs = [
        (
            np.minimum.reduceat(reach[:, s], sw.off[:-1]),
            np.maximum.reduceat(reach[:, s], sw.off[:-1]),
            [
                (
                    size,
                    boff,
                    np.minimum.reduceat(reach[:, s], bstart),
                    np.maximum.reduceat(reach[:, s], bstart),
                )
                for size, boff, bstart in starts
            ],
        )
        for s in (0, 1)
    ]
    # batches of whole segments (all_k is sorted), so each station sees all its candidates
    per_k = np.bincount(all_k, minlength=K)
    first = np.concatenate([[0], np.cumsum(per_k)])
    for ks in _chunks(per_k.astype(float), CHUNK_PAIRS):
        dl.check("multibeam overlap")
        sel = slice(int(first[ks[0]]), int(first[ks[-1] + 1]))
        pk, pj = all_k[sel], all_j[sel]
        if pk.size == 0:
            continue
        rel = ends[pj] - sw.a[pk][:, None, :]  # (P, 2, 2)
        uk, nk = sw.u[pk], sw.n[pk]
        ta = rel[:, 0, 0] * uk[:, 0] + rel[:, 0, 1] * uk[:, 1]
        tb = rel[:, 1, 0] * uk[:, 0] + rel[:, 1, 1] * uk[:, 1]
        ca = rel[:, 0, 0] * nk[:, 0] + rel[:, 0, 1] * nk[:, 1]
        cb = rel[:, 1, 0] * nk[:, 0] + rel[:, 1, 1] * nk[:, 1]
        span = tb - ta
        cos = np.abs(span) / sw.length[pj]  # |n_k . n_j|
        dt, m = sw.dt[pk], sw.count[pk]
        i0 = np.clip(np.ceil(np.minimum(ta, tb) / dt - 0.5), 0, m).astype(np.int64)
        i1 = np.clip(np.floor(np.maximum(ta, tb) / dt - 0.5), -1, m - 1).astype(np.int64)
        keep = (i1 >= i0) & (np.abs(span) > 1e-12)  # a perpendicular line is never crossed
        pk, pj, ta, ca, cb, span, cos = (x[keep] for x in (pk, pj, ta, ca, cb, span, cos))
        i0, i1, dt = i0[keep], i1[keep], dt[keep]
        if pk.size == 0:
            continue
        slope = (cb - ca) / span  # dc/dt along k
        v0 = ca + (0.5 * dt - ta) * slope  # c at station index 0
        dv = dt * slope
        same = span > 0  # n_k . n_j > 0
        for side, sign in ((0, 1.0), (1, -1.0)):
            gs, qq, dd = _nearest_crossings(
                sw,
                pk,
                sign * v0,
                sign * dv,
                i0,
                i1,
                rmax[pj] / np.maximum(cos, 0.5),
                reach[:, side],
                side_runs[side],
            )
            if gs.size == 0:
                continue
            jj = pj[qq]
            local = gs - sw.off[pk[qq]]
            tj = ((local + 0.5) * dt[qq] - ta[qq]) / span[qq] * sw.length[jj]
            # the adjacent swath's reach on the side facing this line's nadir: its +n side
            # when the ray runs against n_j (sign * (n_k . n_j) < 0)
            face_plus = (sign > 0) != same[qq]
            ia, ib, w = _weights(sw, jj, tj)
            r_face = np.where(
                face_plus, sw.rp[ia] * (1 - w) + sw.rp[ib] * w, sw.rm[ia] * (1 - w) + sw.rm[ib] * w
            )
            width = reach[gs, 0] + reach[gs, 1]
            ell = reach[gs, side] + r_face / cos[qq] - dd
            eta[gs, side] = np.minimum(ell, width) / width
    return eta


# -- the replay -------------------------------------------------------------------------------------


def _fmt(q: Fraction) -> str:
    return exact.fraction_to_text(q) if q.denominator == 1 else f"{float(q):.6g}"


def prepare(task: Any, spec: Any) -> None:
    """Load the depth grid and the evaluation cells' sample points (task data: cached per
    process, never charged to an artifact's budget)."""
    g = load_grid(task.data_dir)
    h = Params.from_spec(spec.params).eval_step_nmi
    sample_points(g.x0, g.y0, h, round((g.x1 - g.x0) / h), round((g.y1 - g.y0) / h))


def replay(doc: dict[str, Any], task: Any, spec: Any, deadline: CpuBudget) -> Outcome:
    p = Params.from_spec(spec.params)
    nodes, f = read_columns(doc, p)
    g = load_grid(task.data_dir)
    box = (g.x0, g.y0, g.x1, g.y1)
    bx0, by0, bx1, by1 = (Fraction(str(v)) for v in box)
    # endpoints in the area: a float strictly inside settles it (correct rounding keeps the
    # order), one on or beyond a bound is compared exactly
    strict = (f[:, 0::2] > box[0]) & (f[:, 0::2] < box[2]) & (f[:, 1::2] > box[1])
    strict &= f[:, 1::2] < box[3]  # (n, 2): start, end
    outside: list[str] = []
    n_out = 0
    for i, e in zip(*np.nonzero(~strict), strict=True):
        x, y = nodes[i][2 * e].value, nodes[i][2 * e + 1].value
        if not (bx0 <= x <= bx1 and by0 <= y <= by1):
            n_out += 1
            if len(outside) < SHOWN:
                name = "end" if e else "start"
                outside.append(f"{LIST}[{i}] {name} ({_fmt(x)}, {_fmt(y)})")
    # zero length: equal floats are necessary, the exact values decide
    zero_ids = [
        i
        for i in np.flatnonzero((f[:, 0] == f[:, 2]) & (f[:, 1] == f[:, 3])).tolist()
        if nodes[i][0].value == nodes[i][2].value and nodes[i][1].value == nodes[i][3].value
    ]
    zero = [f"{LIST}[{i}]" for i in zero_ids]
    is_zero = np.zeros(len(f), dtype=bool)
    is_zero[zero_ids] = True
    # the total, summed in order as the reference does (a zero-length segment adds 0.0)
    dx, dy = (f[:, 2] - f[:, 0]).tolist(), (f[:, 3] - f[:, 1]).tolist()
    total = functools.reduce(operator.add, map(math.hypot, dx, dy), 0.0)
    clipped, some = clip_all(f, box)
    cdx = (clipped[:, 2] - clipped[:, 0]).tolist()
    cdy = (clipped[:, 3] - clipped[:, 1]).tolist()
    # a piece shorter than 1e-9 nmi (2 micrometres) inside the area has no swath to speak of
    long_ = np.fromiter(map(math.hypot, cdx, cdy), dtype=float, count=len(cdx)) > 1e-9
    use = np.flatnonzero(some & long_ & ~is_zero)
    geo = clipped[use]
    ids = use.tolist()
    if total > p.max_total_length_nmi:
        raise ReplayInputError(
            f"{LIST}: the segments are {total:.6g} nmi long in all, over the cap of "
            f"{p.max_total_length_nmi:g} nmi for a design of this area"
        )
    deadline.check("multibeam input")
    sw = build_swaths(g, geo.reshape(-1, 4), ids, p)
    cov = coverage(g, sw, p, deadline)
    missed_pct = 100.0 * (1.0 - float(cov.mean()))
    eta = overlap_shares(sw, deadline, p.max_neighbours)
    over = np.nan_to_num(eta, nan=-np.inf) > p.overlap_limit  # (S, 2)
    seg_of = sw.seg_of
    per_station = over.sum(axis=1) * 0.5 * sw.dt[seg_of]
    per_seg = np.bincount(seg_of, weights=per_station, minlength=len(sw.ids))
    excess = float(per_seg.sum())

    values: dict[str, Fraction | float | int] = {
        "q4.total_line_length_nmi": total,
        "q4.missed_area_pct": missed_pct,
        "q4.overlap_over_20pct_length_nmi": excess,
        "q4.endpoints_outside_area": n_out,
        "q4.zero_length_segments": len(zero),
    }
    details: dict[str, str] = {}
    if n_out:
        more = f" and {n_out - len(outside)} more" if n_out > len(outside) else ""
        details["q4.endpoints_outside_area"] = (
            f"outside the survey area [{_fmt(bx0)}, {_fmt(bx1)}] x [{_fmt(by0)}, {_fmt(by1)}] nmi: "
            + ", ".join(outside)
            + more
        )
    if zero:
        more = f" and {len(zero) - SHOWN} more" if len(zero) > SHOWN else ""
        details["q4.zero_length_segments"] = (
            "start equals end (no direction, no swath): " + ", ".join(zero[:SHOWN]) + more
        )
    if missed_pct > 0 and cov.size:
        miss = np.argwhere(~cov)
        h = p.eval_step_nmi
        (jlo, ilo), (jhi, ihi) = miss.min(axis=0), miss.max(axis=0)
        details["q4.missed_area_pct"] = (
            f"{len(miss)} of {cov.size} evaluation points ({h:g} nmi grid) outside every swath, "
            f"within x [{g.x0 + ilo * h:.3f}, {g.x0 + (ihi + 1) * h:.3f}], "
            f"y [{g.y0 + jlo * h:.3f}, {g.y0 + (jhi + 1) * h:.3f}] nmi"
        )
    if excess > 0:
        worst = np.argsort(-per_seg)[:SHOWN]
        details["q4.overlap_over_20pct_length_nmi"] = "most along " + ", ".join(
            f"{LIST}[{sw.ids[k]}] ({per_seg[k]:.3f} nmi)" for k in worst if per_seg[k] > 0
        )
    notes = [
        f"{len(nodes)} segments, {len(sw.pts)} stations at <= {p.station_step_nmi:g} nmi; "
        f"coverage on a {p.eval_step_nmi:g} nmi grid of {cov.size} points"
    ]
    finite = eta[np.isfinite(eta)]
    if finite.size:
        notes.append(
            f"overlap of adjacent swaths over {finite.size} station sides: "
            f"min {100 * finite.min():.1f} %, mean {100 * finite.mean():.1f} %, "
            f"max {100 * finite.max():.1f} %"
        )
    return Outcome(values=values, details=details, notes=notes)
