"""Writing exact values and obligations as Lean source, injection-proof.

Only two kinds of text ever reach a generated Lean file from here: decimal numerals
produced by `int.__str__`, and fixed identifiers chosen by this module (constructor
names such as `Cmp.ge`) or validated by `ident`. An artifact's strings never do, so no
artifact can smuggle Lean syntax into a certificate.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from fractions import Fraction

_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Nested `List.cons` terms deeper than Lean's default recursion limit (512) need more.
MAX_REC_DEPTH = 1 << 16

CMP = {">=": "Cmp.ge", "<=": "Cmp.le", ">": "Cmp.gt", "<": "Cmp.lt"}
DIRECTION = {
    "higher_is_better": "Direction.higherIsBetter",
    "lower_is_better": "Direction.lowerIsBetter",
    "target_value": "Direction.targetValue",
    "exact_value": "Direction.exactValue",
}
DOMAIN = {
    "any": "Domain.any",
    "probability": "Domain.probability",
    "share": "Domain.share",
    "correlation": "Domain.correlation",
    "percent": "Domain.percent",
    "nonneg": "Domain.nonneg",
    "count": "Domain.count",
}


def ident(name: str) -> str:
    """A generated identifier, refused unless it is a plain ASCII Lean name."""
    if not _IDENT_RE.match(name):
        raise ValueError(f"not a plain identifier: {name!r}")
    return name


def rat(q: Fraction | int) -> str:
    """`(Rat.frac n d)` or `(Rat.negFrac n d)` for an exact rational."""
    q = Fraction(q)
    return _frac(q.numerator, q.denominator)


def frac(num: int, den: int) -> str:
    """`(Rat.frac n d)` or `(Rat.negFrac n d)` for `num/den` as written (not reduced)."""
    return _frac(num, den)


def _frac(num: int, den: int) -> str:
    if den < 1:
        raise ValueError(f"denominator must be positive: {den}")
    n, d = str(abs(int(num))), str(int(den))
    return f"(Rat.frac {n} {d})" if num >= 0 else f"(Rat.negFrac {n} {d})"


def opt_rat(q: Fraction | int | None) -> str:
    """An `Option Rat`: a missing value or an open bound is `Option.none`."""
    return "Option.none" if q is None else f"(Option.some {rat(q)})"


def rat_list(xs: Iterable[Fraction | int], *, common_den: bool = True) -> str:
    """A `List Rat` as nested `List.cons` (no list notation without Init).

    With `common_den` every element is written over the least common denominator, so
    `Rat.add` takes its shared-denominator path and a sum's denominator stays put.
    """
    qs = [Fraction(x) for x in xs]
    if common_den and qs:
        den = math.lcm(*(q.denominator for q in qs))
        items = [_frac(q.numerator * (den // q.denominator), den) for q in qs]
    else:
        items = [rat(q) for q in qs]
    return "".join(f"(List.cons {x} " for x in items) + "List.nil" + ")" * len(items)


def boolean(b: bool) -> str:
    return "Bool.true" if b else "Bool.false"


def cmp(op: str) -> str:
    """`Cmp.ge`/`Cmp.le`/`Cmp.gt`/`Cmp.lt` for `>=`, `<=`, `>`, `<`."""
    return CMP[op]


def direction(d: str) -> str:
    return DIRECTION[str(d)]


def domain(d: str) -> str:
    return DOMAIN[str(d)]


def theorem(name: str, statement: str, *, expect: bool = True) -> str:
    """An obligation `theorem NAME : Eq (STATEMENT) true := (rfl)`, checked by the kernel.

    `(rfl)` rather than `rfl`: Lean tags a theorem whose body is literally `rfl` as a
    `@[defeq]` rewrite rule and validates the tag by deciding the equality a second time
    in the elaborator; the parentheses keep the same proof term without that third
    evaluation (the elaborator's check and the kernel's remain).
    """
    return (
        f"set_option maxRecDepth {MAX_REC_DEPTH} in\n"
        f"theorem {ident(name)} : Eq ({statement}) {boolean(expect)} := (rfl)\n"
    )


def module(body: Sequence[str], imports: Sequence[str] = ("TBMM",)) -> str:
    """A complete Init-free Lean module around generated declarations."""
    for imp in imports:
        if not all(_IDENT_RE.match(part) for part in imp.split(".")):
            raise ValueError(f"not a module name: {imp!r}")
    header = ["prelude", *(f"import {i}" for i in imports), ""]
    return "\n".join(header) + "\n".join(body)
