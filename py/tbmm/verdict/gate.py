"""The feasibility gate: a task's `gate.toml` checks evaluated exactly on an artifact.

Each check is one of the six forms of `tbmm.core.forms` (or `agree`, a claim against its
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

import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from tbmm.core import forms
from tbmm.core.exact import Num, fraction_to_text, parse_decimal
from tbmm.core.forms import Form
from tbmm.core.paths import PathError, expand, expand_nodes, resolve
from tbmm.core.specs import REPLAYED
from tbmm.suite.compiled import Lite
from tbmm.suite.tasks import Task
from tbmm.verdict.scoring import lookup

if TYPE_CHECKING:
    from tbmm.suite.models import GateCheck

_WILD = re.compile(r"\[\*\]")


@dataclass(slots=True)
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
    list_missing: bool = (
        False  # the single instance of a check whose `[*]` list is missing or empty
    )

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


_ROLES: dict[int, tuple[GateCheck, dict[str, list[str]], bool]] = {}


def _role_paths(check: GateCheck) -> dict[str, list[str]]:
    """Role -> paths of a check (computed once per check; callers must not mutate it)."""
    return _roles(check)[0]


def _roles(check: GateCheck) -> tuple[dict[str, list[str]], bool]:
    hit = _ROLES.get(id(check))
    if hit is not None and hit[0] is check:
        return hit[1], hit[2]
    out: dict[str, list[str]] = {}
    for role in ROLES:
        v = getattr(check, role)
        if v is None:
            continue
        out[role] = [v] if isinstance(v, str) else list(v)
    wild = any("[*]" in p for ps in out.values() for p in ps)
    _ROLES[id(check)] = (check, out, wild)
    return out, wild


def instances(check: GateCheck, doc: dict[str, Any]) -> list[Instance]:
    """Expand a check over `doc`. A wildcard list that is missing or empty gives one
    `missing` instance: nothing was checked, so the check is unverifiable, not passed."""
    roles, has_wild = _roles(check)
    if not has_wild:
        return [Instance(check, None, roles)]
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
    n = _entries(doc, prefix)
    if n == 0:
        return [_missing_list(check, prefix, roles)]
    return [Instance(check, i, sub) for i, sub in enumerate(_concrete(check, roles, n))]


_CONCRETE: dict[int, tuple[GateCheck, list[dict[str, list[str]]]]] = {}


def _concrete(check: GateCheck, roles: dict[str, list[str]], n: int) -> list[dict[str, list[str]]]:
    """The concrete paths of a wildcard check's first `n` entries (entry i: the first `[*]`
    of each path made `[i]`), computed once per check and extended on demand; instances
    share them read-only."""
    hit = _CONCRETE.get(id(check))
    if hit is None or hit[0] is not check:
        hit = (check, [])
        _CONCRETE[id(check)] = hit
    subs = hit[1]
    for i in range(len(subs), n):
        subs.append({r: [_WILD.sub(f"[{i}]", p, count=1) for p in ps] for r, ps in roles.items()})
    return subs[:n]


def _entries(doc: dict[str, Any], prefix: str) -> int:
    """How many entries `prefix[*]` expands to: the length of the list at `prefix` (no
    wildcard in it), 0 when it is missing or not a list — `len(expand(doc, prefix + "[*]"))`
    without building the paths."""
    try:
        node = resolve(doc, prefix)
    except PathError:
        return 0
    return len(node) if isinstance(node, list) else 0


def _missing_list(check: GateCheck, prefix: str, roles: dict[str, list[str]]) -> Instance:
    inst = Instance(check, None, roles)
    inst.status, inst.message = "missing", f"{prefix}: list missing or empty"
    inst.list_missing = True
    return inst


@dataclass(frozen=True)
class _Plan:
    """A check's constants, read once from their decimal text (not per artifact)."""

    lo: Fraction | None
    hi: Fraction | None
    total: Fraction | None
    tol: Fraction | None
    bound: Fraction | None
    coef: Fraction
    slack: Fraction
    rel_tol: Fraction


_PLANS: dict[int, tuple[GateCheck, _Plan]] = {}


def _plan(c: GateCheck) -> _Plan:
    hit = _PLANS.get(id(c))
    if hit is not None and hit[0] is c:
        return hit[1]
    q = lambda v: None if v is None else parse_decimal(v)  # noqa: E731
    plan = _Plan(
        lo=q(c.lo),
        hi=q(c.hi),
        total=q(c.total),
        tol=q(c.tol),
        bound=q(c.bound),
        coef=q(c.coef) if c.coef is not None else Fraction(1),
        slack=q(c.slack) if c.slack is not None else Fraction(0),
        rel_tol=q(c.rel_tol) if c.rel_tol is not None else Fraction(0),
    )
    _PLANS[id(c)] = (c, plan)
    return plan


_ZERO = Fraction(0)


_ONE_FIELD = (Form.interval, Form.threshold, Form.count)


def evaluate(inst: Instance, doc: dict[str, Any]) -> Instance:
    """Fill values and status of one instance (exact arithmetic only)."""
    c = inst.check
    paths = inst.paths
    if len(paths) == 1 and c.form in _ONE_FIELD:
        # most instances: one field holding a number, against constants (same verdict and
        # message as the general path below, which handles everything else)
        (p,) = paths["field"]
        try:
            node = resolve(doc, p)
        except PathError:
            node = _MISSING
        if type(node) is Num:
            x = node.value
            inst.values[p] = x
            k = _plan(c)
            form = c.form
            if form is Form.interval:
                ok = forms.interval(x, k.lo, k.hi)
            elif form is Form.threshold:
                ok = forms.threshold(x, c.op, k.bound)  # type: ignore[arg-type]
            else:
                ok = forms.count(x, k.hi)
            inst.status = "pass" if ok else "fail"
            if not ok:
                inst.message = _failure_message(inst, {"field": [x]}, k)
            return inst
    vals: dict[str, list[Fraction]] = {}
    values = inst.values
    for role, paths in inst.paths.items():
        got = []
        for p in paths:
            try:
                node = resolve(doc, p)
            except PathError:
                node = _MISSING
            if type(node) is Num:
                q = node.value
                values[p] = q
                got.append(q)
                continue
            v = lookup(doc, p)  # the slow path only for what is not a number: its reason
            if v.reason.startswith("missing"):
                inst.status, inst.message = "missing", f"{p} ({v.reason})"
            else:
                inst.status, inst.message = "bad", f"{p}: {v.reason}"
                return inst
        vals[role] = got
    if inst.status == "missing":
        return inst
    k = _plan(c)
    one = vals["field"][0] if "field" in vals else None
    form = c.form
    if form is Form.interval:
        ok = forms.interval(one, k.lo, k.hi)  # type: ignore[arg-type]
    elif form is Form.count:
        ok = forms.count(one, k.hi)  # type: ignore[arg-type]
    elif form is Form.sum_to:
        ok = forms.sum_to(vals["fields"], k.total, k.tol)  # type: ignore[arg-type]
    elif form is Form.order:
        ok = forms.order(vals["lhs"], vals["rhs"], c.op == "<", k.slack)
    elif form is Form.threshold:
        ok = forms.threshold(one, c.op, k.bound)  # type: ignore[arg-type]
    elif form is Form.agree:
        ok = forms.agree(one, values[inst.paths["against"][0]], k.tol, k.rel_tol)  # type: ignore[arg-type]
    else:
        bound = k.bound if k.bound is not None else forms.prod(vals["bound_factors"])
        ok = forms.product(vals["factors"], k.coef, c.op, bound)  # type: ignore[arg-type]
    inst.status = "pass" if ok else "fail"
    if not ok:
        inst.message = _failure_message(inst, vals, k)
    return inst


def _failure_message(inst: Instance, vals: dict[str, list[Fraction]], k: _Plan) -> str:
    """What was violated, with the values (built only for a failing instance)."""
    c = inst.check
    if c.form is Form.agree:
        x, y = vals["field"][0], inst.values[inst.paths["against"][0]]
        tol = f"{c.tol}" + (f" + {c.rel_tol}·|replayed|" if c.rel_tol else "")
        return (
            f"misreported: claimed {fraction_to_text(x)} at {inst.paths['field'][0]}, "
            f"replayed {fraction_to_text(y)}; tolerance {tol} {c.unit}".rstrip()
        )
    if c.form is Form.interval:
        want = (
            f"in [{c.lo if c.lo is not None else '-inf'}, {c.hi if c.hi is not None else '+inf'}]"
        )
    elif c.form is Form.count:
        want = "a non-negative integer" + (f" <= {c.hi}" if c.hi else "")
    elif c.form is Form.sum_to:
        want = f"sum = {c.total} ± {c.tol} (got {fraction_to_text(sum(vals['fields'], _ZERO))})"
    elif c.form is Form.order:
        want = f"sum(lhs) {c.op} sum(rhs)" + (f" + {c.slack}" if c.slack else "")
    elif c.form is Form.threshold:
        want = f"{c.op} {c.bound}"
    else:
        bound = k.bound if k.bound is not None else forms.prod(vals["bound_factors"])
        lhs = k.coef * forms.prod(vals["factors"])
        want = f"{fraction_to_text(lhs)} {c.op} {fraction_to_text(bound)}"
    shown = ", ".join(f"{p}={fraction_to_text(v)}" for p, v in inst.values.items())
    return f"violated: {shown}; required {want} {c.unit}".rstrip()


_MISSING = object()


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


def _short_lists(task: Task, doc: dict[str, Any]) -> list[Instance]:
    """A declared list with fewer entries than the statement's minimum (`min_items`) is a
    failed instance: an answer must not shrink a list below what the statement asks for.
    (Longer than `max_items` never gets here: the input caps refuse it.)"""
    out = []
    for ls in task.artifact_map.lists:
        if ls.min_items <= 0:
            continue
        for path, node in expand_nodes(doc, ls.path):
            # a missing list (MISSING) is not short: the checks over it are unverifiable
            if isinstance(node, list) and len(node) < ls.min_items:
                check = _list_check(ls.path, ls.min_items, isinstance(ls, Lite))
                inst = Instance(check, None, {"field": [path]})
                inst.status = "fail"
                inst.message = (
                    f"violated: list {path} has {len(node)} entries; the statement asks for "
                    f"at least {ls.min_items}"
                )
                out.append(inst)
    return out


@functools.lru_cache(maxsize=256)
def _list_check(path: str, min_items: int, lite: bool) -> GateCheck:
    """The check a too-short declared list fails (validated like a task file's own check;
    a plain copy of it in lite mode, like the task's)."""
    fields = {
        "id": "list_min_items",
        "form": Form.count.value,
        "field": path,
        "justification": f"the statement asks for at least {min_items} entries in {path}",
    }
    if lite:
        from tbmm.suite import compiled

        return compiled.validated("GateCheck", fields)
    from tbmm.suite.models import GateCheck

    return GateCheck.model_validate(fields)


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


def _node(doc: Any, toks: tuple[str | int, ...]) -> Any:
    """`tbmm.core.paths.resolve` on pre-split tokens, _MISSING instead of PathError (the gate's
    hot loop: no exception, no token lookup per instance)."""
    node = doc
    for tok in toks:
        if type(tok) is str:
            if (type(node) is dict or isinstance(node, dict)) and tok in node:
                node = node[tok]
            else:
                return _MISSING
        elif (type(node) is list or isinstance(node, list)) and 0 <= tok < len(node):
            node = node[tok]
        else:
            return _MISSING
    return node


@dataclass(frozen=True, slots=True)
class _OneField:
    """A check on one field against constants (interval, threshold, count), compiled: its
    path split into tokens (around its `[*]` when it has one) and its constants read once."""

    check: GateCheck
    roles: dict[str, list[str]]
    form: Form
    plan: _Plan
    toks: tuple[str | int, ...]  # the whole path (no wildcard) or the list's prefix
    rest: tuple[str | int, ...] | None  # after the `[*]`: None without a wildcard

    def test(self, x: Fraction) -> bool:
        k, form = self.plan, self.form
        if form is Form.interval:
            return forms.interval(x, k.lo, k.hi)
        if form is Form.threshold:
            return forms.threshold(x, self.check.op, k.bound)  # type: ignore[arg-type]
        return forms.count(x, k.hi)


def _one_field(check: GateCheck) -> _OneField | None:
    """The compiled form of a one-field check, or None (the general path evaluates it)."""
    from tbmm.core.paths import tokens

    roles, wild = _roles(check)
    if check.form not in _ONE_FIELD or list(roles) != ["field"] or len(roles["field"]) != 1:
        return None
    (p,) = roles["field"]
    try:
        if not wild:
            return _OneField(check, roles, check.form, _plan(check), tokens(p), None)
        head, tail = p.split("[*]", 1)
        toks, rest = tokens(head), tokens(tail)
    except PathError:
        return None
    if -1 in rest:
        return None  # a second wildcard: the general path says what is missing
    return _OneField(check, roles, check.form, _plan(check), toks, rest)


def _gate_plan(task: Task) -> list[tuple[GateCheck, _OneField | None]]:
    """The task's checks with their compiled forms, built once per gate spec."""
    checks = task.gate.check
    hit = task._cache.get("gate_plan")
    if hit is None or hit[0] is not checks:
        hit = (checks, [(c, _one_field(c)) for c in checks])
        task._cache["gate_plan"] = hit
    return hit[1]


# Single-field checks against constants run compiled (`_fast`); `instances` + `evaluate` are the
# general path and its specification (tests hold them equal). The tests that make Python lie
# to the Lean kernel switch FAST_CHECKS off to inject their lies into the general path.
FAST_CHECKS = True


def _fast(one: _OneField, doc: dict[str, Any]) -> list[Instance] | None:
    """`instances` + `evaluate` of a compiled one-field check while every field it reads
    holds a number; None otherwise (the general path then produces the same instances
    with their reasons)."""
    check, roles, test = one.check, one.roles, one.test
    if one.rest is None:
        node = _node(doc, one.toks)
        if type(node) is not Num:
            return None
        x = node.value
        (p,) = roles["field"]
        inst = Instance(check, None, roles, {p: x}, "pass")
        if not test(x):
            inst.status = "fail"
            inst.message = _failure_message(inst, {"field": [x]}, one.plan)
        return [inst]
    entries = _node(doc, one.toks)
    if type(entries) is not list or not entries:
        return None
    rest = one.rest
    nodes = [_node(e, rest) for e in entries]
    if any(type(n) is not Num for n in nodes):
        return None
    out = []
    for i, (sub, node) in enumerate(zip(_concrete(check, roles, len(nodes)), nodes, strict=True)):
        x = node.value
        (p,) = sub["field"]
        inst = Instance(check, i, sub, {p: x}, "pass")
        if not test(x):
            inst.status = "fail"
            inst.message = _failure_message(inst, {"field": [x]}, one.plan)
        out.append(inst)
    return out


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
    insts: list[Instance] = list(_short_lists(task, doc))
    unverifiable: dict[str, str] = {}
    for check, one in _gate_plan(task):
        fast = _fast(one, doc) if one is not None and FAST_CHECKS else None
        for inst in fast if fast is not None else instances(check, doc):
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
