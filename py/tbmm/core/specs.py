"""What the task-file models do, without pydantic.

The pydantic models (`tbmm.suite.models`) validate task files; the scoring path only reads them.
The behaviour it reads (a check's paths, a metric's weight as a rational) lives here so
that the same methods serve the pydantic models and their validated plain copies
(`tbmm.suite.compiled`), which a short command builds without importing pydantic.
"""

from __future__ import annotations

from fractions import Fraction

from tbmm.core.exact import parse_decimal

# Top-level key of the resolved artifact that holds a replay's outputs (never the agent's).
REPLAYED = "replayed"


class MetricSpecMethods:
    """`MetricSpec`: weight and band as exact rationals (validated decimal text)."""

    weight: str
    band: str

    @property
    def weight_q(self) -> Fraction:
        return parse_decimal(self.weight)

    @property
    def band_q(self) -> Fraction:
        return parse_decimal(self.band)


class GateCheckMethods:
    """`GateCheck`: every artifact path the check reads, in role order."""

    field: str | None
    against: str | None
    fields: list[str] | None
    lhs: list[str] | None
    rhs: list[str] | None
    factors: list[str] | None
    bound_factors: list[str] | None

    def paths(self) -> list[str]:
        out: list[str] = []
        if self.field:
            out.append(self.field)
        if self.against:
            out.append(self.against)
        for group in (self.fields, self.lhs, self.rhs, self.factors, self.bound_factors):
            out.extend(group or [])
        return out


# model name -> its methods (the plain copies get the same ones)
METHODS: dict[str, type] = {"MetricSpec": MetricSpecMethods, "GateCheck": GateCheckMethods}
