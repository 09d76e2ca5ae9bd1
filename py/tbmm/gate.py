"""The feasibility gate: a task's `gate.toml` checks evaluated exactly on an artifact.

Each check is one of the six forms of `tbmm.forms` (or `agree`, a claim against its
replayed value). A check whose paths contain `[*]` expands into one instance per list
entry (the same index substituted in every path), except `sum_to`, where `[*]` means "sum
over every entry". Verdicts:

* ``fail``  — some instance is violated, or a gated field holds a non-number / NaN /
  Infinity (bad input is never silently passed);
* ``warn``  — nothing violated, but some check could not be evaluated because an input is
  missing (or its list is missing or empty), or the artifact is empty;
* ``pass``  — every instance holds.

A missing input is not a pass: a check that cannot be evaluated makes the metrics it
`protects` (default: every metric of the task) *unverifiable* — they score 0 with the
reason "unverifiable: <check> needs <field>". Only an entirely empty artifact is a mere
warning (it scores 0 anyway).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tbmm import forms
from tbmm.exact import fraction_to_text, parse_decimal
from tbmm.forms import Form
from tbmm.models import REPLAYED, GateCheck
from tbmm.paths import expand
from tbmm.scoring import lookup
from tbmm.tasks import Task

_WILD = re.compile(r"\[\*\]")


@dataclass
class Instance:
    """One concrete invariant: a check applied to concrete paths of one artifact."""

    check: GateCheck
    index: int | None  # the list index substituted for [*], if any
    paths: dict[
        str, list[str]
    ]  # role -> concrete paths (role: field/fields/lhs/rhs/factors/bound_factors)
    values: dict[str, Fraction] = field(default_factory=dict)
    status: str = "pending"  # pass | fail | missing | bad
    message: str = ""

    @property
    def name(self) -> str:
        return self.check.id if self.index is None else f"{self.check.id}[{self.index}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check.id,
            "instance": self.name,
            "form": self.check.form.value,
            "status": self.status,
            "values": {p: fraction_to_text(v) for p, v in self.values.items()},
            "message": self.message,
        }


ROLES = ("field", "against", "fields", "lhs", "rhs", "factors", "bound_factors")


def _role_paths(check: GateCheck) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for role in ROLES:
        v = getattr(check, role)
        if v is None:
            continue
        out[role] = [v] if isinstance(v, str) else list(v)
    return out


def instances(check: GateCheck, doc: dict[str, Any]) -> list[Instance]:
    """Expand a check over `doc`. A wildcard list that is missing or empty gives one
    `missing` instance: nothing was checked, so the check is unverifiable, not passed."""
    roles = _role_paths(check)
    if check.form is Form.sum_to:
        concrete = {
            r: [q for p in ps for q in (expand(doc, p) if "[*]" in p else [p])]
            for r, ps in roles.items()
        }
        wild_missing = [p for ps in roles.values() for p in ps if "[*]" in p and not expand(doc, p)]
        if wild_missing:
            return [_missing_list(check, wild_missing[0].split("[*]")[0], roles)]
        return [Instance(check, None, concrete)]
    wild = [p for ps in roles.values() for p in ps if "[*]" in p]
    if not wild:
        return [Instance(check, None, roles)]
    prefix = wild[0].split("[*]")[0]
    n = len(expand(doc, prefix + "[*]"))
    if n == 0:
        return [_missing_list(check, prefix, roles)]
    out = []
    for i in range(n):
        sub = {r: [_WILD.sub(f"[{i}]", p, count=1) for p in ps] for r, ps in roles.items()}
        out.append(Instance(check, i, sub))
    return out


def _missing_list(check: GateCheck, prefix: str, roles: dict[str, list[str]]) -> Instance:
    inst = Instance(check, None, roles)
    inst.status, inst.message = "missing", f"{prefix}: list missing or empty"
    return inst


def _const(v: str | None, default: Fraction | None = None) -> Fraction | None:
    return default if v is None else parse_decimal(v)


def evaluate(inst: Instance, doc: dict[str, Any]) -> Instance:
    """Fill values and status of one instance (exact arithmetic only)."""
    c = inst.check
    vals: dict[str, list[Fraction]] = {}
    for role, paths in inst.paths.items():
        got = []
        for p in paths:
            v = lookup(doc, p)
            if v.q is None:
                if v.reason.startswith("missing"):
                    inst.status, inst.message = "missing", f"{p} ({v.reason})"
                else:
                    inst.status, inst.message = "bad", f"{p}: {v.reason}"
                    return inst
                continue
            inst.values[p] = v.q
            got.append(v.q)
        vals[role] = got
    if inst.status == "missing":
        return inst
    one = vals.get("field", [Fraction(0)])[0] if "field" in vals else None
    if c.form is Form.interval:
        ok = forms.interval(one, _const(c.lo), _const(c.hi))  # type: ignore[arg-type]
        want = (
            f"in [{c.lo if c.lo is not None else '-inf'}, {c.hi if c.hi is not None else '+inf'}]"
        )
    elif c.form is Form.count:
        ok = forms.count(one, _const(c.hi))  # type: ignore[arg-type]
        want = "a non-negative integer" + (f" <= {c.hi}" if c.hi else "")
    elif c.form is Form.sum_to:
        ok = forms.sum_to(vals["fields"], parse_decimal(c.total), parse_decimal(c.tol))  # type: ignore[arg-type]
        want = (
            f"sum = {c.total} ± {c.tol} (got {fraction_to_text(sum(vals['fields'], Fraction(0)))})"
        )
    elif c.form is Form.order:
        strict = c.op == "<"
        ok = forms.order(vals["lhs"], vals["rhs"], strict, _const(c.slack, Fraction(0)))  # type: ignore[arg-type]
        want = f"sum(lhs) {'<' if strict else '<='} sum(rhs)" + (f" + {c.slack}" if c.slack else "")
    elif c.form is Form.threshold:
        ok = forms.threshold(one, c.op, parse_decimal(c.bound))  # type: ignore[arg-type]
        want = f"{c.op} {c.bound}"
    elif c.form is Form.agree:
        x, y = one, inst.values[inst.paths["against"][0]]
        ok = forms.agree(x, y, parse_decimal(c.tol), _const(c.rel_tol, Fraction(0)))  # type: ignore[arg-type]
        if not ok:
            tol = f"{c.tol}" + (f" + {c.rel_tol}·|replayed|" if c.rel_tol else "")
            inst.status = "fail"
            inst.message = (
                f"misreported: claimed {fraction_to_text(x)} at {inst.paths['field'][0]}, "
                f"replayed {fraction_to_text(y)}; tolerance {tol} {c.unit}".rstrip()
            )
            return inst
        want = ""
    else:
        bound = parse_decimal(c.bound) if c.bound is not None else forms.prod(vals["bound_factors"])
        coef = _const(c.coef, Fraction(1))
        ok = forms.product(vals["factors"], coef, c.op, bound)  # type: ignore[arg-type]
        lhs = coef * forms.prod(vals["factors"])  # type: ignore[operator]
        want = f"{fraction_to_text(lhs)} {c.op} {fraction_to_text(bound)}"
    inst.status = "pass" if ok else "fail"
    if not ok:
        shown = ", ".join(f"{p}={fraction_to_text(v)}" for p, v in inst.values.items())
        inst.message = f"violated: {shown}; required {want} {c.unit}".rstrip()
    return inst


@dataclass
class GateReport:
    task: str
    verdict: str  # pass | warn | fail
    instances: list[Instance]
    warnings: list[str]
    replay: list[dict[str, str]]
    # metric id -> "unverifiable: <check> needs <field>" (the first missing input found)
    unverifiable: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> list[Instance]:
        return [i for i in self.instances if i.status in ("fail", "bad")]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "verdict": self.verdict,
            "failed": [i.name for i in self.failed],
            "warnings": self.warnings,
            "unverifiable": self.unverifiable,
            "checks": [i.to_json() for i in self.instances],
            "replay_penalties": self.replay,
        }


def protected_metrics(task: Task, check: GateCheck) -> list[str]:
    """The metric ids a check protects (its `protects`, default every metric of the task)."""
    if check.protects is not None:
        return list(check.protects)
    return [m.id for m in task.scoring.metric]


def _explain(inst: Instance, details: dict[str, str]) -> None:
    """Append the replay's explanation of a failing replayed number (which decision)."""
    for paths in inst.paths.values():
        for p in paths:
            if p.startswith(f"{REPLAYED}.") and p[len(REPLAYED) + 1 :] in details:
                inst.message += f" ({details[p[len(REPLAYED) + 1 :]]})"
                return


def run_gate(
    task: Task, doc: dict[str, Any] | None, replay_details: dict[str, str] | None = None
) -> GateReport:
    """Evaluate every check of the task on `doc` (None or {} = empty artifact: warning).

    `doc` is the resolved artifact (replay outputs under `replayed`); `replay_details`
    explains replayed numbers in failure messages.
    """
    replay = [{"id": r.id, "description": r.description} for r in task.gate.replay]
    if not doc:
        return GateReport(
            task.slug, "warn", [], ["empty or missing artifact: nothing to check"], replay
        )
    insts: list[Instance] = []
    unverifiable: dict[str, str] = {}
    for check in task.gate.check:
        for inst in instances(check, doc):
            if inst.status == "pending":
                evaluate(inst, doc)
            insts.append(inst)
            if inst.status == "missing":
                reason = f"unverifiable: {check.id} needs {inst.message}"
                for mid in protected_metrics(task, check):
                    unverifiable.setdefault(mid, reason)
            elif inst.status == "fail" and replay_details:
                _explain(inst, replay_details)
    warnings = [f"{i.name}: {i.message}" for i in insts if i.status == "missing"]
    if any(i.status in ("fail", "bad") for i in insts):
        verdict = "fail"
    elif warnings:
        verdict = "warn"
    else:
        verdict = "pass"
    return GateReport(task.slug, verdict, insts, warnings, replay, unverifiable)
