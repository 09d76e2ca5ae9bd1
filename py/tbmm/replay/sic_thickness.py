"""Replay of CUMCM 2025 B: epitaxial-layer thickness from infrared interference fringes.

The artifact gives, for every spectrum (sample x incidence angle), the layer thickness d,
the refractive-index model n(nu) = A + B x^2 + C / x^2 (x = nu / 1000 cm^-1) and the phase
convention of the fringe maxima. The replay

1. extracts the interference extrema of the task's own attachments with one fixed rule:
   Savitzky-Golay smoothing, then hysteresis (zigzag) peak picking, each extremum refined
   by the vertex of the parabola through its three smoothed samples (settings in
   replay.toml, identical for every artifact, so the measured extrema are task data);
2. predicts where the decisions put each extremum: with the half-order
   Q(nu) = 4 d nu sqrt(n(nu)^2 - sin^2 theta), two-beam (and, for real interface
   coefficients, multi-beam) extrema sit where Q is an integer. Convention "integer":
   maxima at 2 d n_eff nu = m, i.e. Q even, minima at Q odd; "half_integer": maxima at
   m + 1/2, Q odd. Consecutive measured extrema take consecutive half-orders T0, T0+1, ...;
   the one global offset T0 per spectrum (of the parity the convention and the first
   extremum's type imply) is the one that minimises the RMS;
3. returns the RMS wavenumber error per spectrum and per sample, the range of n over the
   band, and per sample the mean thickness (exact, from the decisions' decimal text) and
   the relative spread of its per-angle thicknesses;
4. judges each thickness at the index its own model states: the spectra identify only the
   product of d and the index (any constant SiC index in [2.2, 2.8] fits equally well with
   its own d), so the replay computes the thickness the measured extrema imply at the
   answer's index and orders (least squares of d * 4 nu_k sqrt(n(nu_k)^2 - sin^2 theta) =
   T0 + k, closed form) and returns per sample the mean relative error |d / implied - 1|.

It decides nothing: gate.toml ties the claims to these numbers and bounds them.
"""

from __future__ import annotations

import math
import re
import zipfile
from bisect import bisect_left
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tbmm.core import exact
from tbmm.core.paths import PathError, resolve
from tbmm.replay import CpuBudget, Outcome, ReplayInputError

# Parity of the half-order Q at the fringe maxima, per phase convention.
CONVENTIONS: dict[str, int] = {"integer": 0, "half_integer": 1}
_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_BISECTIONS = 48  # one sample step (~0.48 cm^-1) halved to the double-precision limit


def _dec(v: str) -> Fraction:
    try:
        return exact.parse_decimal(v)
    except exact.ExactError as exc:
        raise ValueError(str(exc)) from exc


class SpectrumParams(BaseModel):
    """One measured spectrum: which attachment, which sample and angle, which band."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sample: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    file: str = Field(min_length=1)  # relative to the task's data/attachments folder
    angle_deg: str
    band_cm1: tuple[str, str]

    @field_validator("angle_deg")
    @classmethod
    def _angle(cls, v: str) -> str:
        if not 0 <= _dec(v) < 90:
            raise ValueError("angle must be in [0, 90) degrees")
        return v

    @field_validator("band_cm1")
    @classmethod
    def _band(cls, v: tuple[str, str]) -> tuple[str, str]:
        if not 0 < _dec(v[0]) < _dec(v[1]):
            raise ValueError("band must be 0 < lo < hi")
        return v


class Params(BaseModel):
    """replay.toml [params] of this module (every setting of the extraction and the fit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sg_half_window: int = Field(ge=2, le=1000)  # smoothing window = 2 * half + 1 samples
    sg_polyorder: int = Field(ge=0, le=6)
    hysteresis_pct: str  # reflectance (percentage points) an extremum must stand out by
    excluded_cm1: list[tuple[str, str]] = []  # extrema here are not compared (still counted)
    order_window: int = Field(ge=1, le=20)  # T0 is searched within this of Q(first extremum)
    max_thickness_um: str
    max_abs_coefficient: str
    spectra: dict[str, SpectrumParams] = Field(min_length=1)

    @field_validator("hysteresis_pct", "max_thickness_um", "max_abs_coefficient")
    @classmethod
    def _positive(cls, v: str) -> str:
        if _dec(v) <= 0:
            raise ValueError("must be > 0")
        return v


# --- the measured extrema (task data, identical for every artifact) -------------------


@dataclass(frozen=True)
class Extremum:
    nu: float  # cm^-1, refined position
    kind: int  # +1 maximum, -1 minimum
    compared: bool  # False inside an excluded window (counted for the orders, not compared)


@dataclass(frozen=True)
class Spectrum:
    """The extrema of one attachment over its band, and the band's sample wavenumbers."""

    file: str
    grid: tuple[float, ...]  # the measured wavenumbers inside the band
    extrema: tuple[Extremum, ...]


_CELL = re.compile(r'<c r="([A-Z]+)(\d+)"([^>]*)>(?:<f>[^<]*</f>)?<v>([^<]*)</v></c>')


def read_xlsx(path: Path) -> tuple[list[str], list[str]]:
    """Columns A (wavenumber) and B (reflectance) of the first worksheet, as decimal text.

    The official attachments are plain xlsx files whose numeric cells are `<c r="A2"><v>..`;
    cells of another type (the header's shared strings) are skipped with their row. A file
    that is not such a table raises RuntimeError (task data, not the artifact's input)."""
    try:
        with zipfile.ZipFile(path) as z:
            xml = z.read("xl/worksheets/sheet1.xml").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise RuntimeError(f"{path}: not a readable xlsx worksheet: {exc}") from exc
    rows: dict[int, dict[str, str | None]] = {}
    for col, row, attrs, text in _CELL.findall(xml):
        numeric = 't="' not in attrs or 't="n"' in attrs
        rows.setdefault(int(row), {})[col] = text if numeric else None
    nu: list[str] = []
    refl: list[str] = []
    for r in sorted(rows):
        a, b = rows[r].get("A"), rows[r].get("B")
        if a is not None and b is not None:
            nu.append(a)
            refl.append(b)
    if len(nu) < 10:
        raise RuntimeError(f"{path}: fewer than 10 numeric rows")
    fl = [float(v) for v in nu]
    steps = [y - x for x, y in zip(fl, fl[1:], strict=False)]
    if min(steps) <= 0 or max(steps) > 1.01 * min(steps):
        raise RuntimeError(f"{path}: wavenumbers are not on a uniform increasing grid")
    return nu, refl


def sg_coefficients(half: int, order: int) -> list[Fraction]:
    """Savitzky-Golay smoothing weights as a polynomial in the offset j: w_j = sum_k a_k j^k.

    Least squares of a degree-`order` polynomial over j = -half..half evaluated at j = 0:
    a = (V^T V)^-1 e0, solved exactly (the normal matrix is tiny). Returns a_0..a_order."""
    if 2 * half + 1 <= order:
        raise ValueError("window too short for the polynomial order")
    m = order + 1
    sums = [Fraction(sum(j**k for j in range(-half, half + 1))) for k in range(2 * m - 1)]
    rows = [[sums[i + j] for j in range(m)] + [Fraction(int(i == 0))] for i in range(m)]
    for col in range(m):  # Gauss-Jordan on (V^T V | e0)
        piv = next(r for r in range(col, m) if rows[r][col] != 0)
        rows[col], rows[piv] = rows[piv], rows[col]
        p = rows[col][col]
        rows[col] = [v / p for v in rows[col]]
        for r in range(m):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[col], strict=True)]
    return [rows[i][m] for i in range(m)]


_PLAIN = re.compile(r"^(\d+)(?:\.(\d*))?$")


def scaled_ints(texts: list[str]) -> tuple[list[int], int]:
    """Decimal texts as integers over one common power-of-ten denominator, exactly."""
    parts: list[tuple[int, int]] = []  # (digits, decimals)
    for t in texts:
        m = _PLAIN.match(t)
        if m:
            frac = m.group(2) or ""
            parts.append((int(m.group(1) + frac), len(frac)))
            continue
        v = exact.parse_decimal(t)  # signs, exponents: the general (slower) path
        k = 0
        while (v * 10**k).denominator != 1:
            k += 1
        parts.append((int(v * 10**k), k))
    e = max(k for _, k in parts)
    return [d * 10 ** (e - k) for d, k in parts], 10**e


def smoothed(refl: list[str], half: int, order: int, lo: int, hi: int) -> tuple[list[int], int]:
    """Savitzky-Golay smoothed reflectance at indices lo..hi, exactly: integers S_i with
    s_i = S_i / scale (moment sums of the scaled data over the window; no rounding)."""
    first = lo - half
    ints, den = scaled_ints(refl[first : hi + half + 1])
    a = sg_coefficients(half, order)
    lcd = math.lcm(*(c.denominator for c in a))
    coef = [int(c * lcd) for c in a]
    # prefix[p][k] = sum_{t < k} t^p * R_(first + t)
    prefix = []
    for p in range(order + 1):
        acc, col = 0, [0]
        for t, r in enumerate(ints):
            acc += t**p * r
            col.append(acc)
        prefix.append(col)
    # w_j = sum_p coef_p j^p, so S_i = sum_p coef_p sum_q C(p,q) (-i)^(p-q) M_q(i) with the
    # window moments M_q(i) = sum_t t^q R_t over the window (differences of the prefixes).
    terms = [
        (q, cp * math.comb(p, q), p - q) for p, cp in enumerate(coef) if cp for q in range(p + 1)
    ]
    out = []
    for i in range(lo - first, hi - first + 1):
        s0, s1 = i - half, i + half + 1
        out.append(sum(k * (-i) ** e * (prefix[q][s1] - prefix[q][s0]) for q, k, e in terms))
    return out, den * lcd


def extract(
    path: Path, band: tuple[float, float], settings: Params
) -> tuple[tuple[float, ...], tuple[Extremum, ...]]:
    """The band's wavenumbers and the alternating extrema of the smoothed spectrum."""
    nu_text, refl = read_xlsx(path)
    nu = [float(v) for v in nu_text]
    half = settings.sg_half_window
    lo, hi = band
    a = bisect_left(nu, lo)
    b = bisect_left(nu, hi)
    b = b if b < len(nu) and nu[b] <= hi else b - 1
    if a - 1 - half < 0 or b + 1 + half >= len(nu) or b - a < 4:
        raise RuntimeError(f"{path}: band {band} too close to the data's ends for the window")
    vals, scale = smoothed(refl, half, settings.sg_polyorder, a - 1, b + 1)
    h = _dec(settings.hysteresis_pct) * scale
    if h.denominator != 1:  # keep every comparison in integers
        vals = [v * h.denominator for v in vals]
        h *= h.denominator
    h = int(h)
    s = dict(zip(range(a - 1, b + 2), vals, strict=True))
    picked: list[tuple[int, int]] = []
    trend = 0
    top = bot = a
    for j in range(a, b + 1):
        if s[j] > s[top]:
            top = j
        if s[j] < s[bot]:
            bot = j
        if trend >= 0 and s[j] < s[top] - h:
            picked.append((top, +1))
            trend, bot = -1, j
        elif trend <= 0 and s[j] > s[bot] + h:
            picked.append((bot, -1))
            trend, top = +1, j
    windows = [(_dec(x), _dec(y)) for x, y in settings.excluded_cm1]
    out: list[Extremum] = []
    for i, kind in picked:
        if i in (a, b):  # an end of the band is not an extremum of the spectrum
            continue
        y0, y1, y2 = s[i - 1], s[i], s[i + 1]
        den = y0 - 2 * y1 + y2
        off = Fraction(y0 - y2, 2 * den) if den != 0 else Fraction(0)
        n0, n1, n2 = (exact.parse_decimal(nu_text[k]) for k in (i - 1, i, i + 1))
        x = n1 + off * (n2 - n0) / 2
        out.append(Extremum(float(x), kind, not any(p <= x <= q for p, q in windows)))
    return tuple(nu[a : b + 1]), tuple(out)


@lru_cache(maxsize=16)
def _spectrum_cached(
    path: str, size: int, mtime_ns: int, band: tuple[float, float], settings_json: str
) -> Spectrum:
    settings = Params.model_validate_json(settings_json)
    grid, extrema = extract(Path(path), band, settings)
    return Spectrum(Path(path).name, grid, extrema)


def spectrum(data_dir: Path, sp: SpectrumParams, settings: Params) -> Spectrum:
    """The measured extrema of one spectrum (cached per file version and settings)."""
    path = data_dir / "attachments" / sp.file
    try:
        st = path.stat()
    except OSError as exc:
        raise RuntimeError(f"attachment {sp.file} is missing: {exc}") from exc
    band = (float(_dec(sp.band_cm1[0])), float(_dec(sp.band_cm1[1])))
    return _spectrum_cached(str(path), st.st_size, st.st_mtime_ns, band, settings.model_dump_json())


# --- the decisions and their prediction ----------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One spectrum's fitted model as the artifact states it."""

    fit: str
    thickness_um: Fraction
    a: float
    b: float
    c: float
    convention: str

    def n(self, nu: float) -> float:
        x2 = (nu / 1000.0) ** 2
        return self.a + self.b * x2 + self.c / x2


@dataclass(frozen=True)
class FitResult:
    rms: float
    sq_sum: float  # sum of squared errors over the compared extrema
    count: int  # compared extrema
    n_min: float
    n_max: float
    first_half_order: int  # T0
    implied_thickness_um: float  # d the spectrum implies at the answer's own index (T0 kept)


def _describe(node: object) -> str:
    """A short description of a non-number (never the whole of a huge list)."""
    if isinstance(node, exact.NonFinite | str):
        return repr(str(node)[:40])
    if isinstance(node, list | dict):
        return f"a {type(node).__name__} of {len(node)} entries"
    return type(node).__name__


def _number(doc: dict[str, Any], path: str, lo: Fraction | None, hi: Fraction) -> Fraction:
    try:
        node = resolve(doc, path)
    except PathError as exc:
        raise ReplayInputError(f"{path}: missing ({exc})") from exc
    if not isinstance(node, exact.Num):
        raise ReplayInputError(f"{path}: not a finite number ({_describe(node)})")
    v = node.value
    if lo is not None and v <= lo:
        raise ReplayInputError(f"{path} = {node.text}: must be > {exact.fraction_to_text(lo)}")
    if abs(v) > hi:
        raise ReplayInputError(
            f"{path} = {node.text}: outside what the replay accepts (|value| <= "
            f"{exact.fraction_to_text(hi)})"
        )
    return v


def read_decision(doc: dict[str, Any], fit: str, settings: Params) -> Decision:
    base = f"fits.{fit}"
    d = _number(doc, f"{base}.thickness_um", Fraction(0), _dec(settings.max_thickness_um))
    cmax = _dec(settings.max_abs_coefficient)
    a, b, c = (float(_number(doc, f"{base}.{k}", None, cmax)) for k in ("n_A", "n_B", "n_C"))
    try:
        conv = resolve(doc, f"{base}.maxima_order")
    except PathError as exc:
        raise ReplayInputError(f"{base}.maxima_order: missing ({exc})") from exc
    if not isinstance(conv, str) or conv not in CONVENTIONS:
        raise ReplayInputError(
            f"{base}.maxima_order: must be one of {sorted(CONVENTIONS)} ({_describe(conv)})"
        )
    return Decision(fit, d, a, b, c, conv)


def evaluate_fit(
    spec: Spectrum, dec: Decision, angle_deg: Fraction, window: int, deadline: CpuBudget
) -> FitResult:
    """RMS error of the predicted extremum positions (see the module docstring)."""
    s2 = math.sin(math.radians(float(angle_deg))) ** 2
    d_cm = float(dec.thickness_um) * 1e-4
    grid = spec.grid
    ns = [dec.n(v) for v in grid]
    for v, n in zip(grid, ns, strict=True):
        if n <= 0 or n * n <= s2:
            raise ReplayInputError(
                f"fits.{dec.fit}: n({v:.1f} cm^-1) = {n:.6g} leaves no propagating wave in the "
                f"layer (needs n > sin(theta) = {math.sqrt(s2):.4f})"
            )

    def q_of(v: float) -> float:
        n = dec.n(v)
        return 4.0 * d_cm * v * math.sqrt(n * n - s2)

    qs = [4.0 * d_cm * v * math.sqrt(n * n - s2) for v, n in zip(grid, ns, strict=True)]
    for i in range(1, len(qs)):
        if not qs[i] > qs[i - 1]:
            raise ReplayInputError(
                f"fits.{dec.fit}: the half-order 4 d nu sqrt(n^2 - sin^2 theta) does not increase "
                f"between {grid[i - 1]:.1f} and {grid[i]:.1f} cm^-1, so the model does not give "
                "one extremum per order"
            )
    deadline.check()
    lo_slope = (qs[1] - qs[0]) / (grid[1] - grid[0])
    hi_slope = (qs[-1] - qs[-2]) / (grid[-1] - grid[-2])

    def position(target: float) -> float:
        if target <= qs[0]:
            return grid[0] - (qs[0] - target) / lo_slope
        if target >= qs[-1]:
            return grid[-1] + (target - qs[-1]) / hi_slope
        k = bisect_left(qs, target)  # qs[k-1] < target <= qs[k]
        x0, x1 = grid[k - 1], grid[k]
        for _ in range(_BISECTIONS):
            mid = 0.5 * (x0 + x1)
            if q_of(mid) < target:
                x0 = mid
            else:
                x1 = mid
        return 0.5 * (x0 + x1)

    ext = spec.extrema
    first = ext[0]
    parity = CONVENTIONS[dec.convention] if first.kind > 0 else 1 - CONVENTIONS[dec.convention]
    q_first = q_of(first.nu)
    best: tuple[float, float, int] | None = None
    for t0 in range(math.ceil(q_first - window), math.floor(q_first + window) + 1):
        if t0 % 2 != parity:
            continue
        deadline.check()
        errs = [position(float(t0 + k)) - e.nu for k, e in enumerate(ext) if e.compared]
        sq = math.fsum(e * e for e in errs)
        if best is None or sq < best[0]:
            best = (sq, float(len(errs)), t0)
    if best is None:  # the window always holds an integer of each parity (window >= 1)
        raise ReplayInputError(f"fits.{dec.fit}: no half-order candidate")
    sq, count, t0 = best
    # The thickness the measured extrema imply at the answer's own index and orders: least
    # squares of d * 4 nu_k sqrt(n(nu_k)^2 - sin^2 theta) = T0 + k over the compared
    # extrema (closed form; Q is linear in d). The spectra fix only this product of d and
    # the index, so d is judged against it, never against the reference's index.
    num = den = 0.0
    for k, e in enumerate(ext):
        if e.compared:
            n = dec.n(e.nu)
            q1 = 4.0 * e.nu * math.sqrt(max(n * n - s2, 0.0))
            num += q1 * (t0 + k)
            den += q1 * q1
    if not den > 0:
        raise ReplayInputError(f"fits.{dec.fit}: no compared extremum to imply a thickness")
    return FitResult(
        rms=math.sqrt(sq / count),
        sq_sum=sq,
        count=int(count),
        n_min=min(ns),
        n_max=max(ns),
        first_half_order=t0,
        implied_thickness_um=num / den * 1e4,
    )


def prepare(task: Any, spec: Any) -> None:
    """Read and smooth the attached spectra (task data: cached, never charged to an
    artifact's budget)."""
    settings = Params.model_validate(spec.params)
    for sp in settings.spectra.values():
        spectrum(task.data_dir, sp, settings)


def replay(doc: dict[str, Any], task: Any, spec: Any, deadline: CpuBudget) -> Outcome:
    """Replay the per-spectrum models of an artifact against the task's spectra."""
    settings = Params.model_validate(spec.params)
    decisions = {fit: read_decision(doc, fit, settings) for fit in settings.spectra}
    out = Outcome()
    by_sample: dict[str, list[tuple[Decision, FitResult]]] = {}
    for fit, sp in settings.spectra.items():
        dec = decisions[fit]
        meas = spectrum(task.data_dir, sp, settings)
        res = evaluate_fit(meas, dec, _dec(sp.angle_deg), settings.order_window, deadline)
        by_sample.setdefault(sp.sample, []).append((dec, res))
        model = (
            f"d = {exact.fraction_to_text(dec.thickness_um)} um, n = {dec.a:g} + {dec.b:g} x^2 "
            f"+ {dec.c:g}/x^2, maxima at {dec.convention.replace('_', '-')} orders"
        )
        where = f"{meas.file} ({sp.angle_deg} deg, {res.count} compared extrema)"
        p = f"fits.{fit}"
        out.values[f"{p}.rms_cm1"] = res.rms
        out.values[f"{p}.n_min"] = res.n_min
        out.values[f"{p}.n_max"] = res.n_max
        out.values[f"{p}.first_order"] = Fraction(res.first_half_order, 2)
        out.values[f"{p}.implied_thickness_um"] = res.implied_thickness_um
        out.details[f"{p}.implied_thickness_um"] = (
            f"{p}: the thickness the extrema of {meas.file} imply at this model's index and "
            f"orders (least squares of d q1(nu_k) = T0 + k, T0 = {res.first_half_order})"
        )
        out.details[f"{p}.rms_cm1"] = f"{p} ({model}) against the extrema of {where}"
        out.details[f"{p}.n_min"] = f"{p}: n over {sp.band_cm1[0]}-{sp.band_cm1[1]} cm^-1"
        out.details[f"{p}.n_max"] = out.details[f"{p}.n_min"]
        out.details[f"{p}.first_order"] = f"{p}: order of the first extremum of {meas.file}"
    for sample, rows in by_sample.items():
        ds = [dec.thickness_um for dec, _ in rows]
        mean = sum(ds, Fraction(0)) / len(ds)
        names = ", ".join(f"fits.{dec.fit}" for dec, _ in rows)
        out.values[f"{sample}.thickness_um"] = mean
        # a float: an exact ratio such as 72/9259 has no decimal text for the JSON anchor
        out.values[f"{sample}.thickness_rel_diff"] = float((max(ds) - min(ds)) / mean)
        count = sum(r.count for _, r in rows)
        out.values[f"{sample}.rms_cm1"] = math.sqrt(math.fsum(r.sq_sum for _, r in rows) / count)
        out.values[f"{sample}.n_min"] = min(r.n_min for _, r in rows)
        out.values[f"{sample}.n_max"] = max(r.n_max for _, r in rows)
        out.values[f"{sample}.thickness_rel_error"] = math.fsum(
            abs(float(dec.thickness_um) / r.implied_thickness_um - 1.0) for dec, r in rows
        ) / len(rows)
        out.details[f"{sample}.thickness_rel_error"] = (
            f"mean over {names} of |d / implied d - 1|: each thickness judged at the index its "
            "own model states"
        )
        out.details[f"{sample}.thickness_um"] = f"mean thickness of {names}"
        out.details[f"{sample}.thickness_rel_diff"] = f"(max - min) / mean thickness of {names}"
        out.details[f"{sample}.rms_cm1"] = f"pooled RMS extremum error of {names}"
        out.details[f"{sample}.n_min"] = f"smallest n over the bands of {names}"
        out.details[f"{sample}.n_max"] = f"largest n over the bands of {names}"
    return out
