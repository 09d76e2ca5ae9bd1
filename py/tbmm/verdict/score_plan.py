"""A task's metric panel compiled once into integer constants: `score_task`'s fast path.

Why: scoring a small artifact used to cost ~30x json.loads of its bytes, nearly all of it
`Fraction` arithmetic repeated per artifact on values that never change (each metric's
anchor, effective band, domain, weight; each panel paper's anchors and which of them equal
the task's own) and intermediate `Fraction`s normalised (a gcd each) only to be compared
or summed. Here every constant is read once per task into (numerator, denominator)
integers; an artifact's value is read once per metric as an unnormalised integer pair
from its decimal text; comparisons are integer cross-multiplications; a reward becomes a
`Fraction` (one gcd) only where a `MetricScore` keeps it; the panel's weighted means are
accumulated on integers and normalised once.

The specification stays `tbmm.core.rules` and `tbmm.verdict.scoring.score_metric` / `panel_scores`:
`tests/test_score_plan.py` holds every verdict of this path equal (exact rationals, the
same reasons and notes) to that reference over the benchmark corpus and random mutants.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import gcd
from typing import TYPE_CHECKING, Any

from tbmm.core import exact, rules
from tbmm.core.paths import PathError, resolve
from tbmm.core.rules import DOMAIN_BOUNDS, Direction, Domain

if TYPE_CHECKING:
    from tbmm.suite.tasks import Task

# how a reward is computed from x (the value) and o (the anchor), b' > 0 unless EQUAL
HIGHER, LOWER, TARGET, EQUAL = 0, 1, 2, 3
ZERO, ONE = rules.ZERO, rules.ONE
_POW10 = [10**k for k in range(64)]


def _kind(direction: Direction, band_eff: Fraction) -> int:
    """`rules.reward_in_band`'s branches: exact_value, or a band <= 0, only pays equality."""
    if direction is Direction.exact_value or band_eff <= 0:
        return EQUAL
    if direction is Direction.higher_is_better:
        return HIGHER
    if direction is Direction.lower_is_better:
        return LOWER
    return TARGET


@dataclass(frozen=True, slots=True)
class _Anchor:
    """One (anchor, effective band) pair of a metric as integers, with the notes it adds."""

    kind: int
    an: int
    ad: int
    bn: int
    bd: int
    widened_note: str  # the degenerate-band note ("" when none applies)
    beyond: bool  # "beyond the anchor in the good direction" applies (one-sided metrics)


def _anchor(direction: Direction, band: Fraction, o: Fraction, band_eff: Fraction, widened: bool) -> _Anchor:
    from tbmm.verdict.scoring import _widened_note

    note = _widened_note(band, band_eff) if widened and direction is not Direction.exact_value else ""
    one_sided = direction is Direction.higher_is_better or direction is Direction.lower_is_better
    return _Anchor(
        _kind(direction, band_eff),
        o.numerator,
        o.denominator,
        band_eff.numerator,
        band_eff.denominator,
        note,
        one_sided,
    )


def reward_ints(a: _Anchor, xn: int, xd: int) -> tuple[int, int]:
    """`rules.reward_in_band` on integers: the reward as an unnormalised pair (n, d), d > 0;
    (1, 1) and (0, 1) exactly when the reward is 1 or 0."""
    an, ad = a.an, a.ad
    lhs, rhs = xn * ad, an * xd  # x <=> o, as x.n·o.d <=> o.n·x.d
    kind = a.kind
    if lhs == rhs:
        return 1, 1
    if kind == EQUAL:
        return 0, 1
    if kind == HIGHER:
        if lhs > rhs:
            return 1, 1
        dn = rhs - lhs
    elif kind == LOWER:
        if lhs < rhs:
            return 1, 1
        dn = lhs - rhs
    else:
        dn = abs(lhs - rhs)
    # distance dn/dd against the band bn/bd: 1 - (dn/dd)/(bn/bd) = (dd·bn - dn·bd)/(dd·bn)
    dd = ad * xd
    bn, bd = a.bn, a.bd
    left = dd * bn - dn * bd
    if left <= 0:
        return 0, 1
    return left, dd * bn


def _fraction(n: int, d: int) -> Fraction:
    """Fraction(n, d) for d > 0, sharing the constants 0 and 1."""
    if n == 0:
        return ZERO
    if n == d:
        return ONE
    return Fraction(n, d)


class _MetricPlan:
    """One metric's constants: its path, domain, own anchor and the `MetricScore` fields."""

    __slots__ = ("head", "domain", "domain_reason", "excluded", "id", "own", "path", "w", "metric")

    def __init__(self, m: Any, wscale: int) -> None:
        spec = m.spec
        self.metric = m
        self.id, self.path = m.id, m.path
        self.excluded = f"excluded by config: {spec.exclude}" if spec.exclude else ""
        band_eff, widened = m.band_effective
        direction = spec.direction
        # MetricScore's first nine fields: id .. band_effective
        self.head = (
            m.id,
            m.path,
            direction.value,
            spec.unit,
            m.weight,
            m.anchor,
            m.anchor_text,
            m.band,
            band_eff,
        )
        self.own = _anchor(direction, m.band, m.anchor, band_eff, widened)
        dom = spec.domain
        if dom is Domain.any:
            self.domain = None
        else:
            lo, hi, integral = DOMAIN_BOUNDS[dom]
            self.domain = (
                None if lo is None else (lo.numerator, lo.denominator),
                None if hi is None else (hi.numerator, hi.denominator),
                integral,
            )
        self.domain_reason = f"out of domain ({dom.value})"
        # the weight on the task's common weight denominator (an integer)
        self.w = m.weight.numerator * (wscale // m.weight.denominator)


def _in_domain(dom: tuple[Any, Any, bool], xn: int, xd: int) -> bool:
    lo, hi, integral = dom
    if lo is not None and xn * lo[1] < lo[0] * xd:
        return False
    if hi is not None and hi[0] * xd < xn * hi[1]:
        return False
    return not (integral and xn % xd)


def _weighted(pairs: list[tuple[int, int, int]], total: int) -> tuple[int, int]:
    """sum(w·r)/total over (w, rn, rd) on integers: an unnormalised pair (n, d), d > 0."""
    sn, sd = 0, 1
    for w, rn, rd in pairs:
        if rn:
            if rd == sd:
                sn += w * rn
            elif rd == 1:
                sn += w * rn * sd
            else:
                sn, sd = sn * rd + w * rn * sd, sd * rd
    return sn, sd * total


class ScorePlan:
    """A task's metrics and panel compiled (built once per task, `plan_for`)."""

    def __init__(self, task: Task) -> None:
        metrics = task.metrics
        panel = task.panel_anchors
        self.key = (metrics, panel)
        wscale = 1
        for m in metrics:
            d = m.weight.denominator
            wscale = wscale * d // gcd(wscale, d)
        self.wscale = wscale
        self.metrics = [_MetricPlan(m, wscale) for m in metrics]
        index = {id(m): i for i, m in enumerate(metrics)}
        scored = [p for p in self.metrics if not p.excluded]
        self.total = sum(p.w for p in scored)  # sum of the scored weights, times wscale
        scored_ids = {p.id for p in scored}
        # per panel paper: (paper id, field ids, whether R(m, S_p) is the own raw score,
        # [(metric index, weight, its anchor or None when it is the metric's own)], total)
        self.papers: list[tuple[str, list[str], bool, list[tuple[int, int, _Anchor | None]], int]] = []
        for paper_id, fields in panel:
            entries = []
            for m, q, _text in fields:
                i = index[id(m)]
                mp = self.metrics[i]
                if q == m.anchor:
                    entries.append((i, mp.w, None))
                else:
                    band_eff, widened = rules.effective_band(q, m.band)
                    entries.append((i, mp.w, _anchor(m.spec.direction, m.band, q, band_eff, widened)))
            ids = [m.id for m, _, _ in fields]
            reuse = all(a is None for _, _, a in entries) and set(ids) == scored_ids
            self.papers.append((paper_id, ids, reuse, entries, sum(w for _, w, _ in entries)))

    def score(
        self, doc: dict[str, Any] | None, unverifiable: dict[str, str]
    ) -> tuple[list[Any], Fraction | None, list[tuple[str, list[str], Fraction]]]:
        """(MetricScores, raw score or None without weight, [(paper id, fields, R(m, S_p))])
        exactly as `scoring.score_metric` / `raw_score` / `panel_scores` give them."""
        from tbmm.verdict.scoring import MetricScore, lookup

        out: list[Any] = []
        # per metric: the value as integers, or None when it scores 0 against any anchor
        xs: list[tuple[int, int] | None] = []
        own: list[tuple[int, int, int]] = []
        Num = exact.Num
        for p in self.metrics:
            if p.excluded:
                out.append(MetricScore(*p.head, None, None, p.excluded, True))
                xs.append(None)
                continue
            if doc is None:
                out.append(MetricScore(*p.head, None, ZERO, "missing artifact", False))
                xs.append(None)
                continue
            try:
                node = resolve(doc, p.path)
            except PathError:
                node = None
            unv = unverifiable.get(p.id, "") if unverifiable else ""
            if type(node) is not Num or unv:
                v = lookup(doc, p.path)
                out.append(MetricScore(*p.head, v.text, ZERO, unv or v.reason, False))
                xs.append(None)
                continue
            text = node.text
            val = node._value
            if val is not None:
                xn, xd = val.numerator, val.denominator
            elif "e" in text or "E" in text:
                val = node.value
                xn, xd = val.numerator, val.denominator
            else:
                whole, dot, frac = text.partition(".")
                if dot:
                    xn, k = int(whole + frac), len(frac)
                    xd = _POW10[k] if k < 64 else 10**k
                else:
                    xn, xd = int(text), 1
            if p.domain is not None and not _in_domain(p.domain, xn, xd):
                out.append(MetricScore(*p.head, text, ZERO, p.domain_reason, False))
                xs.append(None)
                continue
            a = p.own
            rn, rd = reward_ints(a, xn, xd)
            reason = a.widened_note
            if a.beyond and rn == rd and xn * a.ad != a.an * xd:
                beyond = "beyond the anchor in the good direction"
                reason = f"{reason}; {beyond}" if reason else beyond
            out.append(MetricScore(*p.head, text, _fraction(rn, rd), reason, False))
            xs.append((xn, xd))
            own.append((p.w, rn, rd))
        total = self.total
        if total == 0:
            raw = None
        else:
            n, d = _weighted(own, total)
            raw = _fraction(n, d)
        papers = []
        for paper_id, ids, reuse, entries, ptotal in self.papers:
            if reuse:
                r = raw if raw is not None else ZERO
            elif ptotal == 0:
                continue
            else:
                pairs = []
                for i, w, a in entries:
                    x = xs[i]
                    if x is None:
                        continue
                    if a is None:
                        s = out[i].reward
                        pairs.append((w, s.numerator, s.denominator))
                    else:
                        rn, rd = reward_ints(a, x[0], x[1])
                        pairs.append((w, rn, rd))
                n, d = _weighted(pairs, ptotal)
                r = _fraction(n, d) if n else ZERO
            papers.append((paper_id, list(ids), r))
        return out, raw, papers


def _clamped(n: int, d: int, lo: Fraction) -> Fraction:
    """clamp(n/d, lo, 1) for d > 0 and lo in {0, -1} (`rules.clamp`'s value)."""
    if n >= d:
        return ONE
    if n * lo.denominator <= lo.numerator * d:
        return lo
    return Fraction(n, d)


@dataclass(frozen=True, slots=True)
class _Gap:
    """`rules.robust_bo` / `rules.skill` against one floor value F (O and F fixed per task):
    clip((R - F)/(O - F), lo, 1) when O - F > 1/10, else clip(R - F, lo, 1)."""

    fn: int
    fd: int
    gn: int  # the divisor: O - F when it exceeds 1/10, else 1
    gd: int
    lo: Fraction

    @classmethod
    def of(cls, oracle: Fraction, floor: Fraction, lo: Fraction) -> _Gap:
        gap = oracle - floor
        if gap > rules.GAP_MIN:
            return cls(floor.numerator, floor.denominator, gap.numerator, gap.denominator, lo)
        return cls(floor.numerator, floor.denominator, 1, 1, lo)

    def __call__(self, raw: Fraction) -> Fraction:
        rn, rd = raw.numerator, raw.denominator
        # (rn/rd - fn/fd) / (gn/gd) = (rn·fd - fn·rd)·gd / (rd·fd·gn), gn > 0
        return _clamped((rn * self.fd - self.fn * rd) * self.gd, rd * self.fd * self.gn, self.lo)


@dataclass(frozen=True, slots=True)
class Floors:
    """What a task's verdict is measured against besides its panel, read once per floor
    document (`tbmm.verdict.floor`): O, F, F_t and the task-level formulas over them."""

    oracle: Fraction
    baseline: Fraction
    floor: Fraction
    robust_bo: _Gap
    skill: _Gap
    keys: tuple[Any, Any]  # the floor document's texts these were read from

    def o_eval(self, raw: Fraction) -> Fraction:
        """`rules.o_eval(raw, O)`."""
        o = self.oracle
        if o.numerator <= 0:
            return ZERO
        if o.numerator == o.denominator:
            return unit(raw)
        return _clamped(raw.numerator * o.denominator, raw.denominator * o.numerator, ZERO)


def floors(task: Task) -> Floors:
    """The task's `Floors`, re-read whenever its floor document's texts change (a build,
    or a test that swaps the document)."""
    from tbmm.verdict.floor import baseline_f, floor_f, stored
    from tbmm.verdict.scoring import oracle_raw

    doc = stored(task)
    base = doc.get("baseline")
    keys = (base.get("raw") if isinstance(base, dict) else None, doc.get("floor"))
    hit = task._cache.get("score_floors")
    if hit is not None and hit.keys[0] is keys[0] and hit.keys[1] is keys[1]:
        return hit
    o, f, f_t = oracle_raw(task), baseline_f(task), floor_f(task)
    out = Floors(o, f, f_t, _Gap.of(o, f, -ONE), _Gap.of(o, f_t, ZERO), keys)
    task._cache["score_floors"] = out
    return out


def unit(q: Fraction) -> Fraction:
    """clamp(q, 0, 1): q itself when it is in [0, 1] (no new Fraction, no gcd)."""
    n, d = q.numerator, q.denominator
    if n < 0:
        return ZERO
    return ONE if n >= d else q


def panel_mean(scores: list[Fraction]) -> Fraction:
    """`scoring.panel_o_eval` of a non-empty panel: clamp(mean of R(m, S_p), 0, 1)."""
    if len(scores) == 1:
        return unit(scores[0])
    n, d = 0, 1
    for s in scores:
        sn, sd = s.numerator, s.denominator
        n, d = (n + sn, d) if sd == d else (n * sd + sn * d, d * sd)
    return _clamped(n, d * len(scores), ZERO)


def plan_for(task: Task) -> ScorePlan:
    """The task's `ScorePlan`, built on first use and rebuilt if its metrics or panel are
    reloaded (a plan never outlives the objects it was read from)."""
    plan = task._cache.get("score_plan")
    if plan is None or plan.key[0] is not task.metrics or plan.key[1] is not task.panel_anchors:
        plan = ScorePlan(task)
        task._cache["score_plan"] = plan
    return plan
