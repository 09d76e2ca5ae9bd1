"""The scoring rules as pure exact functions (the single reference the Lean layer mirrors).

Per-metric reward, with O the anchor, x the reported value and b the band (the distance
at which the reward reaches 0):

* degenerate band: if b < 2% of |O| the band cannot discriminate and is widened to
  b' = 5% of |O|; otherwise b' = b.
* ``higher_is_better``: 1 if x >= O, else max(0, 1 - (O - x)/b').   (one-sided)
* ``lower_is_better``:  1 if x <= O, else max(0, 1 - (x - O)/b').   (one-sided)
* ``target_value``:     max(0, 1 - |x - O|/b').                      (symmetric)
* ``exact_value``:      1 if x == O else 0.

A value outside the metric's domain (probability outside [0,1], correlation outside
[-1,1], a negative or fractional count, ...) scores 0, as does a missing or non-numeric
value. Task level: R = sum(w r)/sum(w); O-Eval = clamp(R/O, 0, 1); Robust BO-Eval =
clip((R-F)/(O-F), -1, 1) when O-F > 1/10, else clip(R-F, -1, 1). Multi-BO cell for a
task = 1 + clip((o-f)/(1-f), -1, 1) when 1-f >= 1/10, else 1 + clip(o-f, -1/10, 1/10).
Skill (the default reward) = clip((R-F_t)/(O-F_t), 0, 1) when O-F_t > 1/10, else
clip(R-F_t, 0, 1), F_t = max(F, best naive raw score) (`tbmm.verdict.floor`); 0 when not scored.
All arithmetic is on `Fraction`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from fractions import Fraction

ZERO = Fraction(0)
ONE = Fraction(1)
DEGENERATE_BELOW = Fraction(2, 100)
WIDENED_TO = Fraction(5, 100)
GAP_MIN = Fraction(1, 10)


class Direction(StrEnum):
    higher_is_better = "higher_is_better"
    lower_is_better = "lower_is_better"
    target_value = "target_value"
    exact_value = "exact_value"


class Domain(StrEnum):
    """Value domains a metric may declare; outside the domain the reward is 0."""

    any = "any"
    probability = "probability"  # [0, 1]
    share = "share"  # [0, 1]
    correlation = "correlation"  # [-1, 1]
    percent = "percent"  # [0, 100]
    nonneg = "nonneg"  # [0, inf)
    count = "count"  # integer >= 0


DOMAIN_BOUNDS: dict[Domain, tuple[Fraction | None, Fraction | None, bool]] = {
    # domain: (lo, hi, must_be_integer)
    Domain.any: (None, None, False),
    Domain.probability: (ZERO, ONE, False),
    Domain.share: (ZERO, ONE, False),
    Domain.correlation: (-ONE, ONE, False),
    Domain.percent: (ZERO, Fraction(100), False),
    Domain.nonneg: (ZERO, None, False),
    Domain.count: (ZERO, None, True),
}


def clamp(x: Fraction, lo: Fraction, hi: Fraction) -> Fraction:
    return lo if _lt(x, lo) else hi if _lt(hi, x) else x


def effective_band(anchor: Fraction, band: Fraction) -> tuple[Fraction, bool]:
    """The band actually used, and whether the degenerate-band rule widened it."""
    mag = abs(anchor)
    if band < DEGENERATE_BELOW * mag:
        return WIDENED_TO * mag, True
    return band, False


def _lt(a: Fraction, b: Fraction) -> bool:
    """a < b on integers (positive denominators): Fraction's order, without its dispatch."""
    return a.numerator * b.denominator < b.numerator * a.denominator


def in_domain(x: Fraction, domain: Domain) -> bool:
    if domain is Domain.any:
        return True
    lo, hi, integral = DOMAIN_BOUNDS[domain]
    if lo is not None and _lt(x, lo):
        return False
    if hi is not None and _lt(hi, x):
        return False
    return not (integral and x.denominator != 1)


def decay(distance: Fraction, band: Fraction) -> Fraction:
    """Linear decay: 1 at distance 0, 0 at distance >= band (band > 0)."""
    if not _lt(distance, band):
        return ZERO
    # 1 - (dn/dd)/(bn/bd) = (dd bn - dn bd)/(dd bn): one normalisation instead of two
    dn, dd, bn, bd = distance.numerator, distance.denominator, band.numerator, band.denominator
    return Fraction(dd * bn - dn * bd, dd * bn)


def reward(direction: Direction, x: Fraction, anchor: Fraction, band: Fraction) -> Fraction:
    """Per-metric reward of a finite in-domain value (see module docstring)."""
    if direction is Direction.exact_value:
        return ONE if x == anchor else ZERO
    return reward_in_band(direction, x, anchor, effective_band(anchor, band)[0])


def reward_in_band(direction: Direction, x: Fraction, anchor: Fraction, b: Fraction) -> Fraction:
    """`reward` once the effective band b' is known (callers that cache b' skip recomputing it)."""
    if direction is Direction.exact_value:
        return ONE if x == anchor else ZERO
    if b <= 0:
        # Only possible when band == 0 and anchor == 0: nothing but the anchor itself counts.
        return ONE if x == anchor else ZERO
    if direction is Direction.higher_is_better:
        return ONE if not _lt(x, anchor) else decay(anchor - x, b)
    if direction is Direction.lower_is_better:
        return ONE if not _lt(anchor, x) else decay(x - anchor, b)
    if x == anchor:
        return ONE
    return decay(abs(x - anchor), b)


def weighted_mean(pairs: Iterable[tuple[Fraction, Fraction]]) -> Fraction | None:
    """sum(w r)/sum(w) over (weight, reward) pairs; None when there is no weight."""
    # Integer accumulation over a running common denominator, normalised once at the end
    # (Fraction's own + would take a gcd at every step): sn/sd = sum(w r), tn/td = sum(w).
    sn, sd, tn, td = 0, 1, 0, 1
    for w, r in pairs:
        wn, wd = w.numerator, w.denominator
        tn, td = tn * wd + wn * td, td * wd
        rn = r.numerator
        if rn:
            pn, pd = wn * rn, wd * r.denominator
            sn, sd = sn * pd + pn * sd, sd * pd
    if tn == 0:
        return None
    return Fraction(sn * td, sd * tn)


def o_eval(raw: Fraction, oracle_raw: Fraction) -> Fraction:
    """O-Eval = clamp(R/O, 0, 1); an oracle raw score of 0 gives 0 (nothing to normalise by)."""
    if oracle_raw <= 0:
        return ZERO
    return clamp(raw if oracle_raw == ONE else raw / oracle_raw, ZERO, ONE)


def skill(raw: Fraction, oracle_raw: Fraction, floor_raw: Fraction) -> Fraction:
    """The default reward: skill over the naive floor F_t (max of the baseline F and the best
    naive answer's raw score), Robust BO-Eval's shape clipped at 0: (R - F_t)/(O - F_t) when
    O - F_t > 1/10, else R - F_t, in [0, 1]. A naive answer (R <= F_t) earns 0."""
    gap = oracle_raw - floor_raw
    if gap > GAP_MIN:
        return clamp((raw - floor_raw) / gap, ZERO, ONE)
    return clamp(raw - floor_raw, ZERO, ONE)


def robust_bo(raw: Fraction, oracle_raw: Fraction, baseline_raw: Fraction) -> Fraction:
    """Robust BO-Eval against the baseline F (gap-compensated when O-F > 1/10)."""
    gap = oracle_raw - baseline_raw
    if gap > GAP_MIN:
        return clamp((raw - baseline_raw) / gap, -ONE, ONE)
    return clamp(raw - baseline_raw, -ONE, ONE)


def multi_bo_cell(o: Fraction, f: Fraction) -> Fraction:
    """Eq. (2) for one task: 1 + clip((o-f)/(1-f), -1, 1), or the +/-0.10 fallback."""
    margin = ONE - f
    if margin >= GAP_MIN:
        return ONE + clamp((o - f) / margin, -ONE, ONE)
    return ONE + clamp(o - f, -GAP_MIN, GAP_MIN)


def mean(xs: Sequence[Fraction]) -> Fraction | None:
    return None if not xs else sum(xs, ZERO) / len(xs)
