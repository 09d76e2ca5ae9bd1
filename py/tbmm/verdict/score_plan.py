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
from tbmm.core.paths import PathError, tokens
from tbmm.core.rules import DOMAIN_BOUNDS, Direction, Domain
from tbmm.verdict.scoring import (
    MetricScore,
    PaperScore,
    TaskScore,
    _widened_note,
    anchor_lists,
    lookup,
)

if TYPE_CHECKING:
    from tbmm.suite.tasks import Task

# how a reward is computed from x (the value) and o (the anchor), b' > 0 unless EQUAL
HIGHER, LOWER, TARGET, EQUAL = 0, 1, 2, 3
ZERO, ONE = rules.ZERO, rules.ONE
MINUS_ONE = -ONE
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
    return _frac(n, d)


_frac = exact.fraction
_MISS = object()


def _walk(node: Any, toks: tuple[str | int, ...]) -> tuple[Any, int]:
    """`tbmm.core.paths.resolve` on pre-split tokens without an exception: (the node, -1), or
    (_MISS, the index of the first token the document lacks)."""
    for i, tok in enumerate(toks):
        if type(tok) is str:
            if (type(node) is dict or isinstance(node, dict)) and tok in node:
                node = node[tok]
                continue
        elif (type(node) is list or isinstance(node, list)) and 0 <= tok < len(node):
            node = node[tok]
            continue
        return _MISS, i
    return node, -1


class _MetricPlan:
    """One metric's constants: its path, domain, own anchor and the `MetricScore` fields."""

    __slots__ = (
        "alts", "domain", "domain_reason", "excluded", "head", "id", "metric", "missing", "own",
        "path", "toks", "w",
    )  # fmt: skip

    def __init__(self, m: Any, wscale: int) -> None:
        spec = m.spec
        self.metric = m
        self.id, self.path = m.id, m.path
        try:
            self.toks: tuple[str | int, ...] | None = tokens(m.path)
        except PathError:
            self.toks = None  # a path that does not parse: the reference lookup says why
        # the "missing field (...)" reason per first missing token, read once from the
        # reference lookup (it depends on nothing but the path and that position)
        self.missing: dict[int, str] = {}
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
        self.alts: list[_Anchor] = []  # the panel papers' other anchors of this metric
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


class ScorePlan:
    """A task's metrics and panel compiled (built once per task, `plan_for`).

    Per panel paper, each field's anchor is either the metric's own (its reward is reused)
    or one of the metric's `alts` (the distinct other anchors of that metric over the whole
    panel, each reward computed once per artifact), and papers with the same fields and
    anchors share one computation (`sigs`)."""

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
        alt_of: dict[tuple[int, Fraction], int] = {}
        sig_of: dict[tuple[Any, ...], int] = {}
        # per signature: ([(metric index, weight, -1 for its own anchor or its alt index)],
        # the paper's total weight)
        self.sigs: list[tuple[tuple[tuple[int, int, int], ...], int]] = []
        # per panel paper: (paper id, field ids, whether R(m, S_p) is the own raw score,
        # its signature)
        self.papers: list[tuple[str, list[str], bool, int]] = []
        for paper_id, fields in panel:
            entries = []
            for m, q, _text in fields:
                i = index[id(m)]
                mp = self.metrics[i]
                if q == m.anchor:
                    entries.append((i, mp.w, -1))
                    continue
                j = alt_of.get((i, q))
                if j is None:
                    band_eff, widened = rules.effective_band(q, m.band)
                    j = alt_of[(i, q)] = len(mp.alts)
                    mp.alts.append(_anchor(m.spec.direction, m.band, q, band_eff, widened))
                entries.append((i, mp.w, j))
            ids = [m.id for m, _, _ in fields]
            reuse = all(j < 0 for _, _, j in entries) and set(ids) == scored_ids
            sig = (tuple(entries), sum(w for _, w, _ in entries))
            k = sig_of.get(sig)
            if k is None:
                k = sig_of[sig] = len(self.sigs)
                self.sigs.append(sig)
            self.papers.append((paper_id, ids, reuse, k))
        # the anchor's lists (`scoring.anchor_lists`) with their paths split once
        self.lists: list[tuple[str, int, tuple[str | int, ...] | None]] = []
        for path, n in anchor_lists(task):
            try:
                toks: tuple[str | int, ...] | None = tokens(path)
            except PathError:
                toks = None
            self.lists.append((path, n, toks))

    def score(
        self, doc: dict[str, Any] | None, unverifiable: dict[str, str]
    ) -> tuple[list[Any], Fraction | None, list[tuple[str, list[str], Fraction]]]:
        """(MetricScores, raw score or None without weight, [(paper id, fields, R(m, S_p))])
        exactly as `scoring.score_metric` / `raw_score` / `panel_scores` give them."""
        out, raw, papers, _, _ = self.score_ints(doc, unverifiable)
        return out, raw, papers

    def score_ints(
        self, doc: dict[str, Any] | None, unverifiable: dict[str, str] | None
    ) -> tuple[
        list[Any],
        Fraction | None,
        list[tuple[str, list[str], Fraction]],
        list[tuple[int, int]],
        tuple[int, int],
    ]:
        """`score`, each paper's R(m, S_p) and the raw score as unreduced integer pairs
        (n, d), d > 0 (the raw score's (0, 1) when there is no weight)."""
        out: list[Any] = []
        # per metric: the value as integers, or None when it scores 0 against any anchor
        xs: list[tuple[int, int] | None] = []
        # per metric: its reward against its own anchor as an integer pair
        own: list[tuple[int, int]] = []
        sn, sd = 0, 1  # the weighted sum of the own rewards
        Num = exact.Num
        dict_ = dict
        for p in self.metrics:
            if p.excluded:
                out.append(MetricScore(*p.head, None, None, p.excluded, True))
                xs.append(None)
                own.append((0, 1))
                continue
            if doc is None:
                out.append(MetricScore(*p.head, None, ZERO, "missing artifact", False))
                xs.append(None)
                own.append((0, 1))
                continue
            node: Any = doc
            toks = p.toks
            if toks is None:
                node = _MISS
            else:
                for tok in toks:
                    if type(node) is dict_ and tok in node:
                        node = node[tok]
                    else:  # an index, a dict subclass, or missing: the generic walk
                        node = _walk(doc, toks)[0]
                        break
            unv = unverifiable.get(p.id, "") if unverifiable else ""
            if type(node) is not Num or unv:
                if node is _MISS and not unv:
                    miss = -1 if toks is None else _walk(doc, toks)[1]
                    reason = p.missing.get(miss)
                    if reason is None:
                        reason = p.missing[miss] = lookup(doc, p.path).reason
                    text = None
                else:
                    v = lookup(doc, p.path)
                    text, reason = v.text, unv or v.reason
                out.append(MetricScore(*p.head, text, ZERO, reason, False))
                xs.append(None)
                own.append((0, 1))
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
                own.append((0, 1))
                continue
            a = p.own
            if xn * a.ad == a.an * xd:
                rn = rd = 1
                reason = a.widened_note
                r = ONE
            else:
                rn, rd = reward_ints(a, xn, xd)
                reason = a.widened_note
                if a.beyond and rn == rd:
                    beyond = "beyond the anchor in the good direction"
                    reason = f"{reason}; {beyond}" if reason else beyond
                r = _fraction(rn, rd)
            out.append(MetricScore(*p.head, text, r, reason, False))
            xs.append((xn, xd))
            own.append((rn, rd))
            if rn:
                w = p.w
                if rd == sd:
                    sn += w * rn
                elif rd == 1:
                    sn += w * rn * sd
                else:
                    sn, sd = sn * rd + w * rn * sd, sd * rd
        total = self.total
        raw = None if total == 0 else _fraction(sn, sd * total)
        papers = []
        pairs: list[tuple[int, int]] = []
        done: list[Fraction | None] = [None] * len(self.sigs)
        done_ints: list[tuple[int, int]] = [(0, 1)] * len(self.sigs)
        for paper_id, ids, reuse, k in self.papers:
            if reuse:  # `panel_scores` reuses the raw score (0 without weight)
                papers.append((paper_id, list(ids), ZERO if raw is None else raw))
                pairs.append((sn, sd * total) if total else (0, 1))
                continue
            r = done[k]
            if r is None:
                entries, ptotal = self.sigs[k]
                if ptotal == 0:
                    continue
                n, d = 0, 1
                for i, w, j in entries:
                    x = xs[i]
                    if x is None:
                        continue
                    if j < 0:
                        rn, rd = own[i]
                    else:
                        rn, rd = reward_ints(self.metrics[i].alts[j], x[0], x[1])
                    if rn:
                        if rd == d:
                            n += w * rn
                        elif rd == 1:
                            n += w * rn * d
                        else:
                            n, d = n * rd + w * rn * d, d * rd
                r = done[k] = _fraction(n, d * ptotal)
                done_ints[k] = (n, d * ptotal)
            papers.append((paper_id, list(ids), r))
            pairs.append(done_ints[k])
        return out, raw, papers, pairs, ((sn, sd * total) if total else (0, 1))

    def extra_entry_notes(self, doc: dict[str, Any]) -> list[str]:
        """`scoring.extra_entry_notes` on the pre-split paths."""
        notes: list[str] = []
        for path, n, toks in self.lists:
            if toks is None:
                continue
            node = _walk(doc, toks)[0]
            if isinstance(node, list) and len(node) > n:
                extra = len(node) - n
                notes.append(
                    f"{path}: {extra} extra entr{'y' if extra == 1 else 'ies'} excluded "
                    f"(anchor has {n})"
                )
        return notes


def _clamped(n: int, d: int, lo: Fraction) -> Fraction:
    """clamp(n/d, lo, 1) for d > 0 and lo in {0, -1} (`rules.clamp`'s value)."""
    if n >= d:
        return ONE
    if n * lo.denominator <= lo.numerator * d:
        return lo
    return _frac(n, d)


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
        return self.ints(raw.numerator, raw.denominator)

    def ints(self, rn: int, rd: int) -> Fraction:
        """The same of raw = rn/rd (rd > 0, not necessarily reduced)."""
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
    src: Any = None  # the floor document itself

    def o_eval(self, raw: Fraction) -> Fraction:
        """`rules.o_eval(raw, O)`."""
        o = self.oracle
        if o.numerator <= 0:
            return ZERO
        if o.numerator == o.denominator:
            return unit(raw)
        return _clamped(raw.numerator * o.denominator, raw.denominator * o.numerator, ZERO)

    def o_eval_ints(self, raw: Fraction, rn: int, rd: int) -> Fraction:
        """`o_eval` of raw = rn/rd (the same value, unreduced, rd > 0)."""
        o = self.oracle
        on, od = o.numerator, o.denominator
        if on <= 0:
            return ZERO
        if on == od:
            return ZERO if rn < 0 else ONE if rn >= rd else raw
        return _clamped(rn * od, rd * on, ZERO)


def floors(task: Task) -> Floors:
    """The task's `Floors`, re-read whenever its floor document's texts change (a build,
    or a test that swaps the document)."""
    c = task._cache
    hit = c.get("score_floors")
    doc = c.get("floor")
    if hit is not None and doc is hit.src:
        base = doc.get("baseline")
        if (
            type(base) is dict
            and base.get("raw") is hit.keys[0]
            and doc.get("floor") is hit.keys[1]
        ):
            return hit
    from tbmm.verdict.floor import baseline_f, floor_f, stored
    from tbmm.verdict.scoring import oracle_raw

    doc = stored(task)
    base = doc.get("baseline")
    keys = (base.get("raw") if isinstance(base, dict) else None, doc.get("floor"))
    if hit is not None and hit.keys[0] is keys[0] and hit.keys[1] is keys[1]:
        return hit
    o, f, f_t = oracle_raw(task), baseline_f(task), floor_f(task)
    out = Floors(o, f, f_t, _Gap.of(o, f, -ONE), _Gap.of(o, f_t, ZERO), keys, doc)
    c["score_floors"] = out
    return out


def unit(q: Fraction) -> Fraction:
    """clamp(q, 0, 1): q itself when it is in [0, 1] (no new Fraction, no gcd)."""
    n, d = q.numerator, q.denominator
    if n < 0:
        return ZERO
    return ONE if n >= d else q


def panel_mean_ints(pairs: list[tuple[int, int]]) -> Fraction:
    """`scoring.panel_o_eval` of a non-empty panel, clamp(mean of R(m, S_p), 0, 1), from the
    papers' unreduced integer pairs (n, d), d > 0: one reduction."""
    if len(pairs) == 1:
        n, d = pairs[0]
        return ZERO if n <= 0 else ONE if n >= d else _frac(n, d)
    sn, sd = 0, 1
    for n, d in pairs:
        if d == sd:
            sn += n
        else:
            sn, sd = sn * d + n * sd, sd * d
    return _clamped(sn, sd * len(pairs), ZERO)


def plan_for(task: Task) -> ScorePlan:
    """The task's `ScorePlan`, built on first use and rebuilt if its metrics or panel are
    reloaded (a plan never outlives the objects it was read from)."""
    plan = task._cache.get("score_plan")
    if plan is None or plan.key[0] is not task.metrics or plan.key[1] is not task.panel_anchors:
        plan = ScorePlan(task)
        task._cache["score_plan"] = plan
    return plan


def task_score(
    task: Task,
    doc: dict[str, Any] | None,
    gate_failed: bool,
    unverifiable: dict[str, str] | None,
) -> TaskScore:
    """`scoring.score_task` through the task's plan (its reference branch, COMPILED off,
    composes the specification functions instead; the two give the same `TaskScore`)."""
    plan = task._cache.get("score_plan")
    if plan is None or plan.key[0] is not task.metrics or plan.key[1] is not task.panel_anchors:
        plan = plan_for(task)
    if doc is None:
        status, scored, notes = "missing_artifact", False, []
    elif gate_failed:
        status, scored, notes = "gate_failed", False, []
    else:
        status, scored = "scored", True
        notes = plan.extra_entry_notes(doc) if plan.lists else []
    metrics, raw, papers, pairs, (rn, rd) = plan.score_ints(doc, unverifiable)
    fl = floors(task)
    if raw is None:
        raw = ZERO
    panel = [PaperScore(pid, ids, r) for pid, ids, r in papers]
    if scored:
        o_anchor = fl.o_eval_ints(raw, rn, rd)
        o_eval = panel_mean_ints(pairs) if papers else o_anchor
        robust = fl.robust_bo.ints(rn, rd)
        skill = fl.skill.ints(rn, rd)
    else:
        o_anchor = o_eval = skill = ZERO
        robust = MINUS_ONE
        notes.append(
            "missing artifact: O-Eval 0, Robust BO-Eval -1"
            if doc is None
            else "feasibility gate failed: O-Eval 0, Robust BO-Eval -1"
        )
    p = task.panel
    if p.literature_split:
        notes.append(
            f"literature-split task: kept in per-task tables, left out of headline means ({p.literature_split_note})"
        )
    return TaskScore(
        task.slug, status, metrics, raw, fl.oracle, o_anchor, o_eval, panel, fl.baseline, robust,
        p.literature_split, notes, fl.floor, skill,
    )  # fmt: skip
