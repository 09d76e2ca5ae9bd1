"""The six decidable gate forms as exact predicates (the reference the Lean layer mirrors).

Each form is a pure function over `Fraction` values returning True when the invariant
holds. Field lookup, wildcard expansion and verdicts live in `tbmm.gate`.

1. interval   lo <= x <= hi (either bound optional)
2. count      x is an integer, x >= 0, and x <= hi when hi is given
3. sum_to     |sum(xs) - total| <= tol
4. order      sum(lhs) <= sum(rhs) + slack   (or < when strict)
5. threshold  x op c, op in >=, <=, >, <
6. product    coef * prod(factors) op bound, op in <=, >=; bound a constant or a product of fields

Besides the six invariant forms, `agree` is the replay agreement check: a claimed value x
must match its replayed value y, |x - y| <= tol + rel_tol * |y| (a claim that disagrees
with its replay is "misreported", hence infeasible).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from fractions import Fraction


class Form(StrEnum):
    interval = "interval"
    count = "count"
    sum_to = "sum_to"
    order = "order"
    threshold = "threshold"
    product = "product"
    agree = "agree"


OPS = (">=", "<=", ">", "<")


def _le(a: Fraction, b: Fraction) -> bool:
    """a <= b on integers (denominators are positive): the same order as Fraction's,
    without its generic-number dispatch, which dominates the gate's time."""
    return a.numerator * b.denominator <= b.numerator * a.denominator


def _lt(a: Fraction, b: Fraction) -> bool:
    return a.numerator * b.denominator < b.numerator * a.denominator


def compare(x: Fraction, op: str, c: Fraction) -> bool:
    if op == ">=":
        return _le(c, x)
    if op == "<=":
        return _le(x, c)
    if op == ">":
        return _lt(c, x)
    if op == "<":
        return _lt(x, c)
    raise ValueError(f"unknown comparison {op!r}")


def interval(x: Fraction, lo: Fraction | None, hi: Fraction | None) -> bool:
    return (lo is None or _le(lo, x)) and (hi is None or _le(x, hi))


def count(x: Fraction, hi: Fraction | None = None) -> bool:
    return x.denominator == 1 and x.numerator >= 0 and (hi is None or _le(x, hi))


def _sum(xs: Sequence[Fraction]) -> Fraction:
    return xs[0] if len(xs) == 1 else sum(xs, Fraction(0))


def sum_to(xs: Sequence[Fraction], total: Fraction, tol: Fraction) -> bool:
    return _le(abs(_sum(xs) - total), tol)


def order(lhs: Sequence[Fraction], rhs: Sequence[Fraction], strict: bool, slack: Fraction) -> bool:
    a, b = _sum(lhs), _sum(rhs)
    if slack:
        b += slack
    return _lt(a, b) if strict else _le(a, b)


def threshold(x: Fraction, op: str, c: Fraction) -> bool:
    return compare(x, op, c)


def prod(xs: Sequence[Fraction]) -> Fraction:
    p = Fraction(1)
    for x in xs:
        p *= x
    return p


def product(factors: Sequence[Fraction], coef: Fraction, op: str, bound: Fraction) -> bool:
    """coef * prod(factors) op bound (bound already evaluated: a constant or a field product).

    The product is compared as one integer fraction N/D (D > 0), without building the
    intermediate Fractions."""
    n, d = coef.numerator, coef.denominator
    for f in factors:
        n *= f.numerator
        d *= f.denominator
    lhs, rhs = n * bound.denominator, bound.numerator * d
    if op == "<=":
        return lhs <= rhs
    if op == ">=":
        return lhs >= rhs
    if op == "<":
        return lhs < rhs
    if op == ">":
        return lhs > rhs
    raise ValueError(f"unknown comparison {op!r}")


def agree(x: Fraction, y: Fraction, tol: Fraction, rel_tol: Fraction) -> bool:
    """|x - y| <= tol + rel_tol * |y|: the claim x agrees with the replayed value y."""
    return abs(x - y) <= tol + rel_tol * abs(y)
