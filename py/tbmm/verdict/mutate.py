"""Single-leaf mutations that break one gate invariant (for discrimination and mutation tests).

Given an evaluated, passing instance, `violation` returns one artifact path and a new
exact value for it such that the instance's invariant no longer holds. The mutated
artifact differs from the original in exactly that numeric leaf.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from tbmm.core import exact
from tbmm.core.exact import parse_decimal
from tbmm.core.forms import Form, prod
from tbmm.core.paths import resolve, tokens
from tbmm.suite.tasks import Task
from tbmm.verdict.gate import Instance, run_gate

ONE = Fraction(1)


def violation(inst: Instance) -> tuple[str, Fraction] | None:
    """A (path, value) that violates `inst`, or None when no single leaf can (e.g. a zero product)."""
    c = inst.check
    v = inst.values
    first = lambda role: inst.paths[role][0]  # noqa: E731
    if c.form is Form.interval:
        p = first("field")
        return (
            (p, parse_decimal(c.hi) + ONE) if c.hi is not None else (p, parse_decimal(c.lo) - ONE)
        )
    if c.form is Form.count:
        return first("field"), Fraction(-1)
    if c.form is Form.agree:  # |claim - replayed| <= tol + rel_tol*|replayed|: move the claim out
        r = v[first("against")]
        tol = parse_decimal(c.tol) + (parse_decimal(c.rel_tol) * abs(r) if c.rel_tol else 0)
        return first("field"), r + tol + ONE
    if c.form is Form.threshold:
        p, b = first("field"), parse_decimal(c.bound)
        return p, {">=": b - ONE, ">": b, "<=": b + ONE, "<": b}[c.op]  # type: ignore[index]
    if c.form is Form.sum_to:
        p = first("fields")
        return p, v[p] + parse_decimal(c.tol) + ONE
    if c.form is Form.order:
        p = first("lhs")
        rhs = sum((v[q] for q in inst.paths["rhs"]), Fraction(0)) + (
            parse_decimal(c.slack) if c.slack else 0
        )
        others = sum((v[q] for q in inst.paths["lhs"][1:]), Fraction(0))
        if p in inst.paths["rhs"]:
            return None
        return p, rhs - others + ONE
    if c.form is Form.agree:
        p, y = first("field"), v[first("against")]
        slack = parse_decimal(c.tol) + (parse_decimal(c.rel_tol) * abs(y) if c.rel_tol else 0)
        return p, y + slack + ONE
    # product: coef * x * rest op bound
    p = first("factors")
    rest = prod([v[q] for q in inst.paths["factors"][1:]]) * (
        parse_decimal(c.coef) if c.coef else ONE
    )
    if rest == 0 or p in (inst.paths.get("bound_factors") or []):
        return None
    bound = (
        parse_decimal(c.bound)
        if c.bound is not None
        else prod([v[q] for q in inst.paths["bound_factors"]])
    )
    target = bound + ONE if c.op == "<=" else bound - ONE
    return p, target / rest


def violations(task: Task, doc: dict[str, Any]) -> Iterator[tuple[Instance, str, Fraction]]:
    """Per gate check of `task`, its first passing instance on `doc` that one leaf can break,
    with that leaf's path and the breaking value (checks in gate.toml order)."""
    seen: set[str] = set()
    for inst in run_gate(task, doc).instances:
        if inst.check.id in seen or inst.status != "pass":
            continue
        v = violation(inst)
        if v is not None:
            seen.add(inst.check.id)
            yield inst, v[0], v[1]


def with_leaf(doc: dict[str, Any], path: str, value: Fraction) -> dict[str, Any]:
    """A deep copy of `doc` with the number at `path` replaced (text = exact decimal or p/q as a decimal)."""
    out = copy.deepcopy(doc)
    toks = tokens(path)
    parent = (
        resolve(
            out, "".join(f".{t}" if isinstance(t, str) else f"[{t}]" for t in toks[:-1]).lstrip(".")
        )
        if len(toks) > 1
        else out
    )
    text = decimal_text(value)
    parent[toks[-1]] = exact.Num(parse_decimal(text), text, "." not in text and "e" not in text)
    return out


def decimal_text(q: Fraction, digits: int = 30) -> str:
    """A decimal literal for q: exact when q terminates, else rounded away from the anchor side by design of callers."""
    t = exact.fraction_to_text(q)
    if "/" not in t:
        return t
    # Non-terminating: round to `digits` places, then nudge by one ulp in the direction of q's excess.
    scale = 10**digits
    n = q.numerator * scale // q.denominator
    approx = Fraction(n, scale)
    if approx < q:
        n += 1
    return exact.fraction_to_text(Fraction(n, scale))
