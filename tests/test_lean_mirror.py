"""The Lean checkers agree with the Python references `tbmm.core.forms` and `tbmm.core.rules`.

Each case becomes one kernel-checked theorem stating the Lean value equals what Python
computes (and, for rational results, that it differs from a perturbed value), so a
single Lean run checks all of them; a disagreement names the case's theorem.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction as F
from pathlib import Path

import pytest

from tbmm.core import forms, rules
from tbmm.core.lean_syntax import (
    boolean,
    cmp,
    direction,
    domain,
    module,
    opt_rat,
    rat,
    rat_list,
    theorem,
)
from tbmm.lean.build import build, check_module, copy_project, project_root

REPO = project_root(Path(__file__).resolve().parent)

HELPERS = """noncomputable def optEq (o e : Option Rat) : Bool :=
  Option.casesOn (motive := fun _ => Bool) o
    (Option.casesOn (motive := fun _ => Bool) e Bool.true (fun _ => Bool.false))
    (fun a => Option.casesOn (motive := fun _ => Bool) e Bool.false (fun b => Rat.beq a b))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    build(root).raise_for_failure()
    return root


class Cases:
    """Collects `theorem`s, one per checked equality."""

    def __init__(self) -> None:
        self.body: list[str] = [HELPERS]
        self.n = 0

    def _name(self, tag: str) -> str:
        self.n += 1
        return f"{tag}_{self.n}"

    def bool(self, tag: str, expr: str, expected: bool) -> None:
        self.body.append(theorem(self._name(tag), expr, expect=expected))

    def rat(self, tag: str, expr: str, expected: F) -> None:
        self.body.append(theorem(self._name(tag), f"Rat.beq ({expr}) {rat(expected)}"))
        wrong = expected + F(1, 7)
        self.body.append(
            theorem(self._name(tag + "_neg"), f"Rat.beq ({expr}) {rat(wrong)}", expect=False)
        )

    def opt(self, tag: str, expr: str, expected: F | None) -> None:
        self.body.append(theorem(self._name(tag), f"optEq ({expr}) {opt_rat(expected)}"))

    def check(self, root: Path, tmp: Path) -> None:
        f = tmp / "Mirror.lean"
        f.write_text(module(self.body))
        res = check_module(f, root)
        assert res.ok, res.failure and f"{res.failure.decl}: {res.failure.message}"


def lst(xs: Sequence[F]) -> str:
    return rat_list(xs)


def forms_cases(c: Cases, rng: random.Random) -> None:
    half, third = F(1, 2), F(1, 3)
    for x, lo, hi in [
        (F(3), F(2), F(6)),
        (F(1), F(2), None),
        (-half, F(-1), None),
        (F(7), None, None),
        (F(2), F(2), F(2)),
        (F(6000001, 1000000), None, F(6)),
        (F(-2), F(-1), F(1)),
    ]:
        c.bool(
            "interval",
            f"Forms.interval {rat(x)} {opt_rat(lo)} {opt_rat(hi)}",
            forms.interval(x, lo, hi),
        )
    for x, hi in [
        (F(7), None),
        (F(8, 4), None),
        (F(9, 4), None),
        (F(-1), None),
        (F(5), F(4)),
        (F(0), F(0)),
    ]:
        c.bool("count", f"Forms.count {rat(x)} {opt_rat(hi)}", forms.count(x, hi))
    for xs, total, tol in [
        ([F("33.3333"), F("33.3333"), F("33.3334")], F(100), F(0)),
        ([F(50), F("49.9")], F(100), F("0.05")),
        ([F(50), F("49.9")], F(100), F("0.1")),
        ([], F(0), F(0)),
        ([F(-3), third, F(8, 3)], F(0), F(0)),
    ]:
        c.bool(
            "sum_to", f"Forms.sumTo {lst(xs)} {rat(total)} {rat(tol)}", forms.sum_to(xs, total, tol)
        )
    for lhs, rhs, strict, slack in [
        ([F(3)], [F(1), F(2)], False, F(0)),
        ([F(3)], [F(1), F(2)], True, F(0)),
        ([F(3)], [F(1), F(2)], True, F(1, 10)),
        ([F(5), half], [F(6)], False, F(-1, 2)),
        ([F(5), half], [F(6)], True, F(-1, 2)),
    ]:
        c.bool(
            "order",
            f"Forms.order {lst(lhs)} {lst(rhs)} {boolean(strict)} {rat(slack)}",
            forms.order(lhs, rhs, strict, slack),
        )
    for x, cval in [(F(60), F(60)), (F("59.999"), F(60)), (F(61), F(60))]:
        for op in forms.OPS:
            c.bool(
                "threshold",
                f"Forms.threshold {rat(x)} {cmp(op)} {rat(cval)}",
                forms.threshold(x, op, cval),
            )
    for factors, coef, op, bound in [
        ([F("1.5"), F(4, 3)], F(1), "<=", F(2)),
        ([F("1.5"), F(4, 3)], F(1), ">=", F(2)),
        ([F("1.5"), F("1.34")], F(1), "<=", F(2)),
        ([F(3), F(-2)], F(-1), "<=", F(6)),
        ([], F(5, 2), ">=", F(5, 2)),
        ([F(10) ** 12, F(3, 10) ** 5], F(1), "<=", F(2430000000)),
    ]:
        c.bool(
            "product",
            f"Forms.product {lst(factors)} {rat(coef)} {cmp(op)} {rat(bound)}",
            forms.product(factors, coef, op, bound),
        )

    def num() -> F:
        return F(rng.randint(-(10**9), 10**9), rng.choice([1, 10, 1000, 10**6, 7]))

    for _ in range(60):
        x, a, b = num(), num(), num()
        lo, hi = min(a, b), max(a, b)
        c.bool(
            "r_interval",
            f"Forms.interval {rat(x)} {opt_rat(lo)} {opt_rat(hi)}",
            forms.interval(x, lo, hi),
        )
        xs = [num() for _ in range(rng.randint(0, 6))]
        total, tol = sum(xs, F(0)) + rng.choice([F(0), num() / 1000]), abs(num()) / 10**6
        c.bool(
            "r_sum_to",
            f"Forms.sumTo {lst(xs)} {rat(total)} {rat(tol)}",
            forms.sum_to(xs, total, tol),
        )
        ys = [num() for _ in range(rng.randint(0, 4))]
        op = rng.choice(forms.OPS)
        c.bool(
            "r_product",
            f"Forms.product {lst(ys)} {rat(a)} {cmp(op)} {rat(b)}",
            forms.product(ys, a, op, b),
        )


def reward_cases(c: Cases) -> None:
    anchors_bands = [
        (F(1), F(1, 2)),
        (F(100), F(1)),  # degenerate: 1 < 2 -> widened to 5
        (F(100), F(2)),  # exactly 2%: not degenerate
        (F(-40), F("0.5")),  # degenerate on a negative anchor
        (F(0), F(0)),  # band 0 at anchor 0: only the anchor counts
        (F(0), F(1, 4)),
        (F("0.85"), F("0.05")),
    ]
    for anchor, band in anchors_bands:
        eb, widened = rules.effective_band(anchor, band)
        c.rat("eband", f"Reward.effectiveBand {rat(anchor)} {rat(band)}", eb)
        c.bool("widened", f"Reward.bandWidened {rat(anchor)} {rat(band)}", widened)
        xs = [
            anchor,
            anchor - band / 2,
            anchor + band / 2,
            anchor - 3 * band - 1,
            anchor + 10,
            anchor - F(1, 100),
        ]
        for d in rules.Direction:
            for x in xs:
                r = rules.reward(d, x, anchor, band)
                c.rat(
                    "reward", f"Reward.reward {direction(d)} {rat(x)} {rat(anchor)} {rat(band)}", r
                )
    for d in rules.Domain:
        for x in [F(-2), F(-1), F(-1, 2), F(0), F(1, 2), F(1), F(3, 2), F(7), F(100), F(101)]:
            c.bool("domain", f"Reward.inDomain {rat(x)} {domain(d)}", rules.in_domain(x, d))
    # score: a missing value or one outside the domain gives 0
    for x in [None, F(-1, 10), F(1, 2), F(3, 2)]:
        expected = (
            F(0)
            if x is None or not rules.in_domain(x, rules.Domain.probability)
            else rules.reward(rules.Direction.target_value, x, F(1, 2), F(1, 4))
        )
        c.rat(
            "score",
            f"Reward.score {direction('target_value')} {domain('probability')} {opt_rat(x)} {rat(F(1, 2))} {rat(F(1, 4))}",
            expected,
        )
    for pairs in [
        [(F(2), F(1)), (F(1), F(1, 2))],
        [(F(0), F(1))],
        [],
        [(F(1), F(1)), (F(-1), F(0))],
        [(F(3, 10), F(9, 10)), (F(7, 10), F(2, 5)), (F(1), F(0))],
    ]:
        ws = "".join(f"(List.cons (Weighted.mk {rat(w)} {rat(r)}) " for w, r in pairs)
        ws += "List.nil" + ")" * len(pairs)
        c.opt("wmean", f"Reward.weightedMean {ws}", rules.weighted_mean(pairs))
    for xs in [[], [F(1), F(2)], [F(1, 3), F(1, 3), F(1, 2)]]:
        c.opt("mean", f"Reward.mean {lst(xs)}", rules.mean(xs))
    for raw, oracle in [
        (F(1, 2), F(1)),
        (F(3, 2), F(1)),
        (F(-1), F(1)),
        (F(1, 2), F(0)),
        (F(1, 2), F(-1)),
        (F(2, 3), F(4, 5)),
    ]:
        c.rat("oeval", f"Reward.oEval {rat(raw)} {rat(oracle)}", rules.o_eval(raw, oracle))
    for raw, oracle, base in [
        (F(1, 2), F(1), F(1, 5)),
        (F(0), F(1), F(1, 5)),
        (F(1, 2), F(3, 10), F(1, 5)),  # gap exactly 1/10: not > 1/10 -> raw gain
        (F(1, 2), F(31, 100), F(1, 5)),
        (F(2), F(1), F(1, 2)),
        (F(-3), F(1), F(9, 10)),
    ]:
        c.rat(
            "robust_bo",
            f"Reward.robustBo {rat(raw)} {rat(oracle)} {rat(base)}",
            rules.robust_bo(raw, oracle, base),
        )
    for o, f in [
        (F(1, 2), F(1, 5)),
        (F(1), F(9, 10)),
        (F(1), F(91, 100)),
        (F(0), F(95, 100)),
        (F(0), F(1, 2)),
        (F(1), F(1)),
    ]:
        c.rat("multi_bo", f"Reward.multiBoCell {rat(o)} {rat(f)}", rules.multi_bo_cell(o, f))


@pytest.mark.slow
def test_forms_agree_with_python(project: Path, tmp_path: Path) -> None:
    c = Cases()
    forms_cases(c, random.Random(20231))
    assert c.n > 200
    c.check(project, tmp_path)


@pytest.mark.slow
def test_rewards_agree_with_python(project: Path, tmp_path: Path) -> None:
    c = Cases()
    reward_cases(c)
    assert c.n > 300
    c.check(project, tmp_path)


@pytest.mark.slow
def test_a_disagreement_is_caught(project: Path, tmp_path: Path) -> None:
    c = Cases()
    c.bool("ok", f"Forms.count {rat(3)} Option.none", True)
    c.body.append(theorem("wrong_reward", f"Rat.beq (Reward.oEval {rat(1)} {rat(2)}) {rat(1)}"))
    f = tmp_path / "Wrong.lean"
    f.write_text(module(c.body))
    res = check_module(f, project)
    assert not res.ok and res.failure is not None
    assert res.failure.decl == "wrong_reward"


@pytest.mark.slow
def test_differential_thousand_random_cases_in_one_module(project: Path, tmp_path: Path) -> None:
    """>= 1,000 random cases: Python computes every result, one Lean module confirms them all.

    Half are per-metric scores (random direction, domain, value or missing, anchor, band —
    including degenerate bands and out-of-domain values), half gate-form verdicts over all
    six forms; each rational result also gets a perturbed negative theorem.
    """
    rng = random.Random(424242)
    c = Cases()

    def num(scale: int = 10**6) -> F:
        return F(rng.randint(-scale, scale), rng.choice([1, 2, 3, 10, 100, 1000, 10**6]))

    for _ in range(600):
        d = rng.choice(list(rules.Direction))
        dom = rng.choice(list(rules.Domain))
        anchor = num(1000)
        band = abs(num(100)) * rng.choice([F(1), F(1, 100), F(1, 1000)])
        x = None if rng.random() < 0.1 else anchor + num(100) * rng.choice([F(1), F(1, 100)])
        if x is None or not rules.in_domain(x, dom):
            expected = F(0)
        else:
            expected = rules.reward(d, x, anchor, band)
        c.rat(
            "score",
            f"Reward.score {direction(d)} {domain(dom)} {opt_rat(x)} {rat(anchor)} {rat(band)}",
            expected,
        )
    ops = list(forms.OPS)
    for _ in range(500):
        form = rng.choice(["interval", "count", "sum_to", "order", "threshold", "product"])
        if form == "interval":
            x, lo, hi = num(), rng.choice([None, num()]), rng.choice([None, num()])
            c.bool(
                "d_interval",
                f"Forms.interval {rat(x)} {opt_rat(lo)} {opt_rat(hi)}",
                forms.interval(x, lo, hi),
            )
        elif form == "count":
            x = F(rng.randint(-5, 50), rng.choice([1, 1, 2]))
            hi = rng.choice([None, F(rng.randint(0, 40))])
            c.bool("d_count", f"Forms.count {rat(x)} {opt_rat(hi)}", forms.count(x, hi))
        elif form == "sum_to":
            xs = [num() for _ in range(rng.randint(1, 8))]
            total = sum(xs, F(0)) + rng.choice([F(0), num(10) / 100])
            tol = abs(num(10)) / 100
            c.bool(
                "d_sum_to",
                f"Forms.sumTo {lst(xs)} {rat(total)} {rat(tol)}",
                forms.sum_to(xs, total, tol),
            )
        elif form == "order":
            lhs = [num() for _ in range(rng.randint(1, 3))]
            rhs = [num() for _ in range(rng.randint(1, 3))]
            strict, slack = rng.random() < 0.5, rng.choice([F(0), num(10)])
            c.bool(
                "d_order",
                f"Forms.order {lst(lhs)} {lst(rhs)} {boolean(strict)} {rat(slack)}",
                forms.order(lhs, rhs, strict, slack),
            )
        elif form == "threshold":
            x, op, b = num(), rng.choice(ops), num()
            c.bool(
                "d_threshold",
                f"Forms.threshold {rat(x)} {cmp(op)} {rat(b)}",
                forms.threshold(x, op, b),
            )
        else:
            fs = [num(1000) for _ in range(rng.randint(1, 3))]
            coef, op, b = num(10), rng.choice(["<=", ">="]), num()
            c.bool(
                "d_product",
                f"Forms.product {lst(fs)} {rat(coef)} {cmp(op)} {rat(b)}",
                forms.product(fs, coef, op, b),
            )
    assert c.n >= 1000
    c.check(project, tmp_path)
