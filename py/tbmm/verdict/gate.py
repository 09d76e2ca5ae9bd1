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
import threading
from collections.abc import Callable
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
    if len(subs) < n:
        with _GROW:  # two threads growing the list at once would interleave their entries
            for i in range(len(subs), n):
                subs.append(
                    {r: [_WILD.sub(f"[{i}]", p, count=1) for p in ps] for r, ps in roles.items()}
                )
    return subs[:n]


_GROW = threading.RLock()


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


def _ints(q: Fraction | None) -> tuple[int, int] | None:
    return None if q is None else (q.numerator, q.denominator)


def _one_test(check: GateCheck, plan: _Plan) -> Callable[[int, int], bool]:
    """The form of a one-field check as a test of x = xn/xd (xd > 0) on integers, its
    constants read once: `forms.interval` / `forms.threshold` / `forms.count`."""
    form = check.form
    if form is Form.interval:
        lo, hi = _ints(plan.lo), _ints(plan.hi)
        if lo is not None and hi is not None:
            (ln, ld), (hn, hd) = lo, hi
            return lambda xn, xd: ln * xd <= xn * ld and xn * hd <= hn * xd
        if lo is not None:
            ln, ld = lo
            return lambda xn, xd: ln * xd <= xn * ld
        if hi is not None:
            hn, hd = hi
            return lambda xn, xd: xn * hd <= hn * xd
        return lambda xn, xd: True
    if form is Form.threshold:
        assert plan.bound is not None
        cn, cd = plan.bound.numerator, plan.bound.denominator
        op = check.op
        if op == ">=":
            return lambda xn, xd: xn * cd >= cn * xd
        if op == "<=":
            return lambda xn, xd: xn * cd <= cn * xd
        if op == ">":
            return lambda xn, xd: xn * cd > cn * xd
        if op == "<":
            return lambda xn, xd: xn * cd < cn * xd
        raise ValueError(f"unknown comparison {op!r}")
    hi = _ints(plan.hi)
    if hi is None:
        return lambda xn, xd: xd == 1 and xn >= 0
    hn, hd = hi
    return lambda xn, xd: xd == 1 and xn >= 0 and xn * hd <= hn


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
    ok: Callable[[int, int], bool]  # the form on x's integers
    # per list entry: its concrete paths and its field's path (`_concrete`), grown on demand
    subs: list[tuple[dict[str, list[str]], str]]

    def test(self, x: Fraction) -> bool:
        return self.ok(x.numerator, x.denominator)

    def run(self, doc: dict[str, Any]) -> tuple[list[Instance], bool] | None:
        """`instances` + `evaluate` of this check while every field it reads holds a number
        (and whether one failed); None otherwise (the general path then produces the same
        instances with their reasons)."""
        check, roles, ok = self.check, self.roles, self.ok
        if self.rest is None:
            node = _node(doc, self.toks)
            if type(node) is not Num:
                return None
            x = node._value
            if x is None:
                x = node.value
            (p,) = roles["field"]
            if ok(x.numerator, x.denominator):
                return [Instance(check, None, roles, {p: x}, "pass")], False
            inst = Instance(check, None, roles, {p: x}, "fail")
            inst.message = _failure_message(inst, {"field": [x]}, self.plan)
            return [inst], True
        entries = _node(doc, self.toks)
        if type(entries) is not list or not entries:
            return None
        subs = self.subs
        if len(subs) < len(entries):
            with _GROW:
                got = _concrete(check, roles, len(entries))
                subs.extend((sub, sub["field"][0]) for sub in got[len(subs) :])
        rest = self.rest
        key = rest[0] if len(rest) == 1 and type(rest[0]) is str else None
        out = []
        failed = False
        for i, e in enumerate(entries):
            # the common `list[*].key` directly, anything else through `_node`
            node = e[key] if key is not None and type(e) is dict and key in e else _node(e, rest)
            if type(node) is not Num:
                return None
            x = node._value
            if x is None:
                x = node.value
            sub, p = subs[i]
            if ok(x.numerator, x.denominator):
                out.append(Instance(check, i, sub, {p: x}, "pass"))
            else:
                inst = Instance(check, i, sub, {p: x}, "fail")
                inst.message = _failure_message(inst, {"field": [x]}, self.plan)
                out.append(inst)
                failed = True
        return out, failed


@dataclass(frozen=True, slots=True)
class _Fields:
    """A check without a wildcard on any form (agree, order, product, sum_to, ...), compiled:
    each path split into tokens once, in the order `evaluate` reads them."""

    check: GateCheck
    roles: dict[str, list[str]]
    flat: tuple[tuple[str, str, tuple[str | int, ...]], ...]  # (role, path, tokens)
    plan: _Plan

    def run(self, doc: dict[str, Any]) -> tuple[list[Instance], bool] | None:
        """`instances` + `evaluate` while every field holds a number; None otherwise."""
        inst = _fields_instance(self.check, None, self.roles, self.flat, self.plan, doc)
        return None if inst is None else ([inst], inst.status == "fail")


def _fields_instance(
    check: GateCheck,
    index: int | None,
    roles: dict[str, list[str]],
    flat: tuple[tuple[str, str, tuple[str | int, ...]], ...],
    k: _Plan,
    doc: dict[str, Any],
) -> Instance | None:
    """One evaluated instance of a multi-field check over concrete paths (`flat`: role,
    path, tokens, in `evaluate`'s order), or None when a field does not hold a number."""
    values: dict[str, Fraction] = {}
    vals: dict[str, list[Fraction]] = {}
    for role, p, toks in flat:
        node = _node(doc, toks)
        if type(node) is not Num:
            return None
        x = node.value
        values[p] = x
        got = vals.get(role)
        if got is None:
            vals[role] = [x]
        else:
            got.append(x)
    form = check.form
    if form is Form.agree:
        ok = forms.agree(vals["field"][0], values[roles["against"][0]], k.tol, k.rel_tol)  # type: ignore[arg-type]
    elif form is Form.order:
        # `forms.order` on integers: sum(lhs) <= (or <) sum(rhs) + slack
        an, ad = _isum(vals["lhs"])
        bn, bd = _isum(vals["rhs"])
        sl = k.slack
        if sl:
            sn, sd = sl.numerator, sl.denominator
            bn, bd = bn * sd + sn * bd, bd * sd
        ok = an * bd < bn * ad if check.op == "<" else an * bd <= bn * ad
    elif form is Form.sum_to:
        ok = forms.sum_to(vals["fields"], k.total, k.tol)  # type: ignore[arg-type]
    elif form is Form.product:
        bound = k.bound if k.bound is not None else forms.prod(vals["bound_factors"])
        ok = forms.product(vals["factors"], k.coef, check.op, bound)  # type: ignore[arg-type]
    else:
        return None  # the one-field forms are `_OneField`'s
    inst = Instance(check, index, roles, values, "pass" if ok else "fail")
    if not ok:
        inst.message = _failure_message(inst, vals, k)
    return inst


@dataclass(frozen=True, slots=True)
class _WildFields:
    """A multi-field check with `[*]` (not `sum_to`), compiled: one `_fields_instance` per
    entry of the list its first wildcard path runs over, the concrete paths of entry i
    (`_concrete`) split into tokens once and kept."""

    check: GateCheck
    roles: dict[str, list[str]]
    prefix: tuple[str | int, ...]  # the list's path (before the first `[*]`)
    plan: _Plan
    flats: list[tuple[tuple[str, str, tuple[str | int, ...]], ...]]  # per entry, grown on demand

    def run(self, doc: dict[str, Any]) -> tuple[list[Instance], bool] | None:
        from tbmm.core.paths import tokens

        entries = _node(doc, self.prefix)
        if type(entries) is not list or not entries:
            return None
        n = len(entries)
        subs = _concrete(self.check, self.roles, n)
        flats = self.flats
        if len(flats) < n:
            with _GROW:  # see `_concrete`
                for i in range(len(flats), n):
                    flat = tuple((r, p, tokens(p)) for r, ps in subs[i].items() for p in ps)
                    if any(t == -1 for _, _, toks in flat for t in toks):
                        return None  # a second wildcard: the general path's
                    flats.append(flat)
        out = []
        failed = False
        check, k = self.check, self.plan
        for i in range(n):
            inst = _fields_instance(check, i, subs[i], flats[i], k, doc)
            if inst is None:
                return None
            failed = failed or inst.status == "fail"
            out.append(inst)
        return out, failed


def _isum(xs: list[Fraction]) -> tuple[int, int]:
    """sum(xs) as an unreduced integer pair (n, d), d > 0."""
    n, d = 0, 1
    for x in xs:
        xn, xd = x.numerator, x.denominator
        if xd == d:
            n += xn
        else:
            n, d = n * xd + xn * d, d * xd
    return n, d


@dataclass(frozen=True, slots=True)
class _Agree:
    """An `agree` check without a wildcard, compiled: |x - y| <= tol + rel_tol·|y| on the
    integers of the claim x and the replayed y (`forms.agree`), its constants read once."""

    check: GateCheck
    roles: dict[str, list[str]]
    p: str
    q: str
    pt: tuple[str | int, ...]
    qt: tuple[str | int, ...]
    plan: _Plan
    f: int  # tol = e/f, rel_tol = g/h: the constants of `forms.agree`'s inequality
    e_h: int  # e·h
    g_f: int  # g·f
    f_h: int  # f·h

    def run(self, doc: dict[str, Any]) -> tuple[list[Instance], bool] | None:
        xn = _node(doc, self.pt)
        yn = _node(doc, self.qt)
        if type(xn) is not Num or type(yn) is not Num:
            return None
        x, y = xn.value, yn.value
        a, b = x.numerator, x.denominator
        c, d = y.numerator, y.denominator
        ok = abs(a * d - c * b) * self.f_h <= (self.e_h * d + self.g_f * abs(c)) * b
        values = {self.p: x}
        values[self.q] = y
        inst = Instance(self.check, None, self.roles, values, "pass" if ok else "fail")
        if ok:
            return [inst], False
        inst.message = _failure_message(inst, {"field": [x], "against": [y]}, self.plan)
        return [inst], True


def _one_field(check: GateCheck) -> _OneField | _Fields | _Agree | _WildFields | None:
    """The compiled form of a check, or None (the general path evaluates it)."""
    from tbmm.core.paths import tokens

    roles, wild = _roles(check)
    if check.form not in _ONE_FIELD or list(roles) != ["field"] or len(roles["field"]) != 1:
        if wild:
            if check.form is Form.sum_to or check.form in _ONE_FIELD:
                return None  # `[*]` is "every entry" in sum_to: the general path's
            first = next(p for ps in roles.values() for p in ps if "[*]" in p)
            try:
                prefix = tokens(first.split("[*]")[0])
            except PathError:
                return None
            if -1 in prefix:
                return None
            return _WildFields(check, roles, prefix, _plan(check), [])
        try:
            flat = tuple((r, p, tokens(p)) for r, ps in roles.items() for p in ps)
        except PathError:
            return None
        if any(t == -1 for _, _, toks in flat for t in toks):
            return None
        k = _plan(check)
        if check.form is Form.agree and list(roles) == ["field", "against"] and len(flat) == 2:
            if k.tol is None:
                return None  # the general path says what is wrong with it
            (_, p, pt), (_, q, qt) = flat
            e, f = k.tol.numerator, k.tol.denominator
            g, h = k.rel_tol.numerator, k.rel_tol.denominator
            return _Agree(check, roles, p, q, pt, qt, k, f, e * h, g * f, f * h)
        return _Fields(check, roles, flat, k)
    (p,) = roles["field"]
    try:
        test = _one_test(check, _plan(check))
        if not wild:
            return _OneField(check, roles, check.form, _plan(check), tokens(p), None, test, [])
        head, tail = p.split("[*]", 1)
        toks, rest = tokens(head), tokens(tail)
    except (PathError, ValueError):
        return None
    if -1 in rest:
        return None  # a second wildcard: the general path says what is missing
    return _OneField(check, roles, check.form, _plan(check), toks, rest, test, [])


def _gate_plan(task: Task) -> list[tuple[GateCheck, _OneField | _Fields | _Agree | _WildFields | None]]:
    """The task's checks with their compiled forms, built once per gate spec."""
    checks = task.gate.check
    hit = task._cache.get("gate_plan")
    if hit is None or hit[0] is not checks:
        hit = (checks, [(c, _one_field(c)) for c in checks])
        task._cache["gate_plan"] = hit
    return hit[1]


# Checks whose fields all hold numbers run compiled (`_OneField.run`, `_Fields.run`);
# `instances` + `evaluate` are the general path and its specification (tests hold them
# equal). The tests that make Python lie to the Lean kernel switch FAST_CHECKS off to
# inject their lies into the general path.
FAST_CHECKS = True


def _fast(one: _OneField | _Fields | _Agree | _WildFields, doc: dict[str, Any]) -> list[Instance] | None:
    """The compiled check's instances, or None (the general path's turn)."""
    got = one.run(doc)
    return None if got is None else got[0]


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
    failed = bool(insts)  # a too-short list is a failed instance
    warnings: list[str] = []
    unverifiable: dict[str, str] = {}
    fast_on = FAST_CHECKS
    for check, one in _gate_plan(task):
        got = one.run(doc) if one is not None and fast_on else None
        if got is not None:
            batch, bad = got
            insts.extend(batch)
            if bad:
                failed = True
                if replay_details:
                    for inst in batch:
                        if inst.status == "fail":
                            _explain(inst, replay_details)
            continue
        for inst in instances(check, doc):
            if inst.status == "pending":
                evaluate(inst, doc)
            insts.append(inst)
            status = inst.status
            if status == "missing":
                reason = f"unverifiable: {check.id} needs {inst.message}"
                for mid in protected_metrics(task, check):
                    unverifiable.setdefault(mid, reason)
                warnings.append(f"{inst.name}: {inst.message}")
            elif status == "fail" or status == "bad":
                failed = True
                if status == "fail" and replay_details:
                    _explain(inst, replay_details)
    if failed:
        verdict = "fail"
    elif warnings:
        verdict = "warn"
    else:
        verdict = "pass"
    return GateReport(task.slug, verdict, insts, warnings, replay, unverifiable)
