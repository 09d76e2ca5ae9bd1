"""The six decidable gate forms as exact predicates (the reference the Lean layer mirrors).

Each form is a pure function over `Fraction` values returning True when the invariant
holds. Field lookup, wildcard expansion and verdicts live in `tbmm.verdict.gate`.

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
    """x op c, as x.num·c.den op c.num·x.den (denominators are positive)."""
    lhs, rhs = x.numerator * c.denominator, c.numerator * x.denominator
    if op == ">=":
        return lhs >= rhs
    if op == "<=":
        return lhs <= rhs
    if op == ">":
        return lhs > rhs
    if op == "<":
        return lhs < rhs
    raise ValueError(f"unknown comparison {op!r}")


def interval(x: Fraction, lo: Fraction | None, hi: Fraction | None) -> bool:
    """lo <= x <= hi (a missing side is unbounded), as `_le` twice, inlined: the gate's
    most frequent form."""
    xn, xd = x.numerator, x.denominator
    return (lo is None or lo.numerator * xd <= xn * lo.denominator) and (
        hi is None or xn * hi.denominator <= hi.numerator * xd
    )


def count(x: Fraction, hi: Fraction | None = None) -> bool:
    n = x.numerator
    return x.denominator == 1 and n >= 0 and (hi is None or n * hi.denominator <= hi.numerator)


def _sum(xs: Sequence[Fraction]) -> Fraction:
    return xs[0] if len(xs) == 1 else sum(xs, Fraction(0))


def sum_to(xs: Sequence[Fraction], total: Fraction, tol: Fraction) -> bool:
    """|sum(xs) - total| <= tol (the sum as one integer fraction n/d, d > 0)."""
    n, d = 0, 1
    for x in xs:
        xn, xd = x.numerator, x.denominator
        n, d = (n * xd + xn * d, d * xd) if xd != d else (n + xn, d)
    tn, td = total.numerator, total.denominator
    return abs(n * td - tn * d) * tol.denominator <= tol.numerator * d * td


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
    """|x - y| <= tol + rel_tol * |y|: the claim x agrees with the replayed value y.

    On integers (x = a/b, y = c/d, tol = e/f, rel_tol = g/h, denominators positive): both
    sides times b·d·f·h give |a·d - c·b|·f·h <= (e·h·d + g·f·|c|)·b, the same inequality
    without building intermediate Fractions (a gate of replayed claims is mostly these)."""
    a, b = x.numerator, x.denominator
    c, d = y.numerator, y.denominator
    e, f = tol.numerator, tol.denominator
    g, h = rel_tol.numerator, rel_tol.denominator
    return abs(a * d - c * b) * f * h <= (e * h * d + g * f * abs(c)) * b
