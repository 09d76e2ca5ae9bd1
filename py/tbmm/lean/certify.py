"""Certificates: an artifact's invariants and scores as Lean theorems, checked by the kernel.

For one artifact of one task this module generates an Init-free Lean module whose
theorems are closed Bool computations proved by `rfl`:

* ``gate_<check>[_<i>]`` — one per gate instance: the form's checker applied to the
  artifact's numbers is `true` (feasible). For a committed anchor certificate whose anchor
  is recorded infeasible, a violated instance is stated instead as ``<...>_violated``:
  the checker is `false` — a kernel-checked witness of infeasibility, never a claim of
  feasibility;
* ``domain_<metric>`` — the metric's value lies in its declared domain (or is reported
  missing: a gap, no theorem);
* ``score_<metric>`` — `Reward.score` of the value equals the Python reward;
* ``raw``, ``oeval``, ``robust_bo``, ``panel_<i>`` — task-level scores computed in Lean
  from the metric scores equal the Python values.

Only numbers (as `Rat.frac`/`Rat.negFrac` literals) and identifiers generated here
(from validated check and metric ids) reach the Lean text: never an artifact string.
A sidecar JSON lists every obligation with its task, form, check and artifact field,
so a failing theorem is reported as the field it is about.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from tbmm import rules
from tbmm.exact import parse_decimal
from tbmm.files import write_text_if_changed
from tbmm.forms import Form
from tbmm.gate import GateReport, Instance, run_gate
from tbmm.lean import serialize as S
from tbmm.scoring import TaskScore, lookup, panel_scores, score_metric
from tbmm.tasks import Task

CERT_DIR = Path("TBMM") / "Cert"


@dataclass(frozen=True)
class Obligation:
    name: str  # local theorem name
    statement: str
    expect: bool
    kind: str  # gate | domain | score | task
    form: str
    check: str
    fields: tuple[str, ...]

    def sidecar(self, module: str, task: str) -> dict[str, Any]:
        return {
            "decl": f"{module}.{self.name}",
            "task": task,
            "kind": self.kind,
            "form": self.form,
            "check": self.check,
            "field": ", ".join(self.fields),
            "expect": self.expect,
        }


@dataclass
class Certificate:
    task: str
    module: str
    obligations: list[Obligation]
    gaps: list[str]  # gated or scored fields the artifact does not give: reported, never claimed
    text: str = ""

    def sidecar(self) -> list[dict[str, Any]]:
        return [o.sidecar(self.module, self.task) for o in self.obligations]


def module_name(slug: str) -> str:
    """`cumcm-2024-a-dragon-dance` -> `TBMM.Cert.Cumcm2024ADragonDance`."""
    return "TBMM.Cert." + "".join(part[:1].upper() + part[1:] for part in slug.split("-"))


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def gate_statement(inst: Instance) -> str:
    """The checker call for one evaluated instance (values already exact)."""
    c = inst.check
    v = inst.values
    vals = lambda role: [v[p] for p in inst.paths[role]]  # noqa: E731
    q = lambda s: None if s is None else parse_decimal(s)  # noqa: E731
    if c.form is Form.interval:
        return f"Forms.interval {S.rat(vals('field')[0])} {S.opt_rat(q(c.lo))} {S.opt_rat(q(c.hi))}"
    if c.form is Form.count:
        return f"Forms.count {S.rat(vals('field')[0])} {S.opt_rat(q(c.hi))}"
    if c.form is Form.sum_to:
        return f"Forms.sumTo {S.rat_list(vals('fields'))} {S.rat(q(c.total))} {S.rat(q(c.tol))}"
    if c.form is Form.order:
        slack = q(c.slack) or Fraction(0)
        return f"Forms.order {S.rat_list(vals('lhs'))} {S.rat_list(vals('rhs'))} {S.boolean(c.op == '<')} {S.rat(slack)}"
    if c.form is Form.threshold:
        return f"Forms.threshold {S.rat(vals('field')[0])} {S.cmp(c.op)} {S.rat(q(c.bound))}"
    if c.form is Form.agree:
        rel = q(c.rel_tol) or Fraction(0)
        return (
            f"Forms.agree {S.rat(vals('field')[0])} {S.rat(vals('against')[0])} "
            f"{S.rat(q(c.tol))} {S.rat(rel)}"
        )
    coef = q(c.coef) if c.coef is not None else Fraction(1)
    bound = (
        f"(Rat.prod {S.rat_list(vals('bound_factors'), common_den=False)})"
        if c.bound is None
        else S.rat(q(c.bound))
    )
    return f"Forms.product {S.rat_list(vals('factors'), common_den=False)} {S.rat(coef)} {S.cmp(c.op)} {bound}"


def _score_expr(task_metric, value: Fraction | None, anchor: Fraction) -> str:  # noqa: ANN001
    spec = task_metric.spec
    return (
        f"Reward.score {S.direction(spec.direction.value)} {S.domain(spec.domain.value)} "
        f"{S.opt_rat(value)} {S.rat(anchor)} {S.rat(task_metric.band)}"
    )


def _mean_expr(items: list[tuple[Fraction, str]]) -> str:
    ws = (
        "".join(f"(List.cons (Weighted.mk {S.rat(w)} ({e})) " for w, e in items)
        + "List.nil"
        + ")" * len(items)
    )
    return f"Rat.div (Reward.weightedSum {ws}) (Reward.totalWeight {ws})"


def obligations_for(
    task: Task,
    doc: dict[str, Any],
    *,
    witness_failures: bool = False,
    gate_report: GateReport | None = None,
    score: TaskScore | None = None,
) -> tuple[list[Obligation], list[str]]:
    """Every obligation of `doc` for `task`, and the gaps (fields it does not give).

    The gate instances are the gate's own (pass `gate_report` to reuse an evaluation), and
    the metric and panel scores the scorer's (pass `score` to reuse them).
    """
    own = {ms.id: ms for ms in score.metrics} if score is not None else {}
    report = gate_report or run_gate(task, doc)
    obs: list[Obligation] = []
    gaps: list[str] = [f"gate {w}" for w in report.warnings]
    for inst in report.instances:
        check = inst.check
        name = _safe(f"gate_{inst.name.replace('[', '_').replace(']', '')}")
        fields = tuple(p for ps in inst.paths.values() for p in ps)
        if inst.status == "missing":
            continue  # already a gap (from the gate's warnings): reported, never claimed
        if inst.status == "bad":
            # Not a finite number: nothing to state in Lean; reported as a failing obligation.
            obs.append(
                Obligation(name, "Bool.false", True, "gate", check.form.value, check.id, fields)
            )
            continue
        if inst.status == "fail" and witness_failures:
            obs.append(
                Obligation(
                    name + "_violated",
                    gate_statement(inst),
                    False,
                    "gate",
                    check.form.value,
                    check.id,
                    fields,
                )
            )
        else:
            obs.append(
                Obligation(
                    name, gate_statement(inst), True, "gate", check.form.value, check.id, fields
                )
            )

    scored: list[tuple[Any, Fraction | None, Fraction]] = []
    # A metric a missing gate input makes unverifiable is scored as absent (reward 0).
    value_of = {
        m.id: (None if m.id in report.unverifiable else lookup(doc, m.path).q) for m in task.metrics
    }
    for m in task.metrics:
        if m.spec.exclude:
            continue
        v = lookup(doc, m.path)
        if m.id in report.unverifiable:
            gaps.append(f"metric {m.id}: {report.unverifiable[m.id]}")
            v = type(v)(None, v.text, report.unverifiable[m.id])
        if v.q is None:
            gaps.append(f"metric {m.id}: {v.reason}")
        else:
            ok = rules.in_domain(v.q, m.spec.domain)
            obs.append(
                Obligation(
                    _safe(f"domain_{m.id}"),
                    f"Reward.inDomain {S.rat(v.q)} {S.domain(m.spec.domain.value)}",
                    ok,
                    "domain",
                    "domain",
                    m.id,
                    (m.path,),
                )
            )
        ms = (
            own[m.id]
            if m.id in own
            else score_metric(m, doc, unverifiable=report.unverifiable.get(m.id, ""))
        )
        assert ms.reward is not None
        scored.append((m, v.q, ms.reward))
        obs.append(
            Obligation(
                _safe(f"score_{m.id}"),
                f"Rat.beq ({_score_expr(m, v.q, m.anchor)}) {S.rat(ms.reward)}",
                True,
                "score",
                m.spec.direction.value,
                m.id,
                (m.path,),
            )
        )
    if scored:
        raw = rules.weighted_mean((m.weight, r) for m, _, r in scored) or rules.ZERO
        raw_expr = _mean_expr([(m.weight, _score_expr(m, x, m.anchor)) for m, x, _ in scored])
        paths = tuple(m.path for m, _, _ in scored)
        obs.append(
            Obligation(
                "raw", f"Rat.beq ({raw_expr}) {S.rat(raw)}", True, "task", "raw", "raw", paths
            )
        )
        from tbmm.scoring import baseline_raw, oracle_raw

        o_raw, f_raw = oracle_raw(task), baseline_raw(task)
        obs.append(
            Obligation(
                "oeval",
                f"Rat.beq (Reward.oEval {S.rat(raw)} {S.rat(o_raw)}) {S.rat(rules.o_eval(raw, o_raw))}",
                True,
                "task",
                "o_eval",
                "o_eval",
                paths,
            )
        )
        obs.append(
            Obligation(
                "robust_bo",
                f"Rat.beq (Reward.robustBo {S.rat(raw)} {S.rat(o_raw)} {S.rat(f_raw)}) {S.rat(rules.robust_bo(raw, o_raw, f_raw))}",
                True,
                "task",
                "robust_bo",
                "robust_bo",
                paths,
            )
        )
        panel = score.panel if score is not None else panel_scores(task, doc)
        by_paper = {p.paper_id: p for p in panel}
        for i, (paper_id, fields) in enumerate(task.panel_anchors):
            ps = by_paper.get(paper_id)
            if ps is None:
                continue
            expr = _mean_expr([(m.weight, _score_expr(m, value_of[m.id], q)) for m, q, _ in fields])
            obs.append(
                Obligation(
                    f"panel_{i}",
                    f"Rat.beq ({expr}) {S.rat(ps.score)}",
                    True,
                    "task",
                    "panel",
                    f"panel[{i}]",
                    tuple(m.path for m, _, _ in fields),
                )
            )
    return obs, gaps


def contract_obligations(task: Task) -> list[Obligation]:
    """The scoring contract of this task's panel, instantiated at each metric's anchor and band.

    One-sidedness (a value a full band beyond the anchor in the good direction scores 1),
    linear decay (half a band short scores 1/2; a target half a band off on either side
    scores 1/2), and calibration (a full band short, or off, scores 0; an exact-value
    metric scores 0 one unit away). Plus the baseline entry's raw score F from its values.
    """
    obs: list[Obligation] = []
    half = Fraction(1, 2)
    for m in task.metrics:
        if m.spec.exclude:
            continue
        d = m.spec.direction.value
        b, _ = m.band_effective
        o = m.anchor
        pts: list[tuple[str, Fraction, Fraction]] = []  # (suffix, x, expected)
        if d == "exact_value" or b <= 0:
            pts = [("equal", o, Fraction(1)), ("off", o + 1, Fraction(0))]
        elif d == "higher_is_better":
            pts = [
                ("beyond", o + b, Fraction(1)),
                ("half", o - b * half, half),
                ("edge", o - b, Fraction(0)),
            ]
        elif d == "lower_is_better":
            pts = [
                ("beyond", o - b, Fraction(1)),
                ("half", o + b * half, half),
                ("edge", o + b, Fraction(0)),
            ]
        else:
            pts = [
                ("half_lo", o - b * half, half),
                ("half_hi", o + b * half, half),
                ("edge_lo", o - b, Fraction(0)),
                ("edge_hi", o + b, Fraction(0)),
            ]
        for suffix, x, want in pts:
            if not rules.in_domain(x, m.spec.domain):
                continue  # the point lies outside the metric's domain: nothing to certify there
            assert rules.reward(m.spec.direction, x, o, m.band) == want, (task.slug, m.id, suffix)
            obs.append(
                Obligation(
                    _safe(f"contract_{m.id}_{suffix}"),
                    f"Rat.beq ({_score_expr(m, x, o)}) {S.rat(want)}",
                    True,
                    "contract",
                    d,
                    m.id,
                    (m.path,),
                )
            )
    from tbmm.scoring import baseline_artifact, baseline_raw

    bdoc = baseline_artifact(task)
    items = [
        (m.weight, _score_expr(m, lookup(bdoc, m.path).q, m.anchor))
        for m in task.metrics
        if not m.spec.exclude
    ]
    if items:
        obs.append(
            Obligation(
                "baseline_raw",
                f"Rat.beq ({_mean_expr(items)}) {S.rat(baseline_raw(task))}",
                True,
                "contract",
                "baseline_raw",
                "baseline",
                (),
            )
        )
    # Normalisation endpoints the leaderboard relies on (eqs. 1 and 2, Robust BO-Eval).
    for i, (_, fields) in enumerate(task.panel_anchors):
        expr = _mean_expr([(m.weight, _score_expr(m, q, q)) for m, q, _ in fields])
        obs.append(
            Obligation(
                f"panel_self_{i}",
                f"Rat.beq ({expr}) {S.rat(1)}",
                True,
                "contract",
                "panel_self",
                f"panel[{i}]",
                (),
            )
        )
    from tbmm.scoring import oracle_raw

    o_raw, f_raw = oracle_raw(task), baseline_raw(task)
    f_oeval = rules.o_eval(f_raw, o_raw)
    endpoints = [
        ("baseline_oeval", f"Reward.oEval {S.rat(f_raw)} {S.rat(o_raw)}", f_oeval),
        (
            "baseline_robust_bo",
            f"Reward.robustBo {S.rat(f_raw)} {S.rat(o_raw)} {S.rat(f_raw)}",
            rules.robust_bo(f_raw, o_raw, f_raw),
        ),
        (
            "oracle_multibo",
            f"Reward.multiBoCell {S.rat(1)} {S.rat(f_oeval)}",
            rules.multi_bo_cell(Fraction(1), f_oeval),
        ),
        (
            "baseline_multibo",
            f"Reward.multiBoCell {S.rat(f_oeval)} {S.rat(f_oeval)}",
            rules.multi_bo_cell(f_oeval, f_oeval),
        ),
    ]
    for name, expr, want in endpoints:
        obs.append(
            Obligation(
                name, f"Rat.beq ({expr}) {S.rat(want)}", True, "contract", name, "endpoints", ()
            )
        )
    return obs


def render(
    task: Task,
    doc: dict[str, Any],
    *,
    module: str | None = None,
    witness_failures: bool = False,
    contract: bool = False,
    gate_report: GateReport | None = None,
    score: TaskScore | None = None,
) -> Certificate:
    module = module or module_name(task.slug)
    obs, gaps = obligations_for(
        task, doc, witness_failures=witness_failures, gate_report=gate_report, score=score
    )
    if contract:
        obs += contract_obligations(task)
    ns = module
    body = [
        f"/-! Certificate for task `{S.ident(_safe(task.slug))}`: generated by `tbmm lean certify`; do not edit. -/",
        "noncomputable section",
        f"namespace {ns}",
        "",
    ]
    for o in obs:
        body.append(S.theorem(o.name, o.statement, expect=o.expect))
    body += [f"end {ns}", "end", ""]
    cert = Certificate(task.slug, module, obs, gaps)
    cert.text = S.module(body)
    return cert


def write_anchor_certificates(tasks: list[Task], root: Path) -> list[Certificate]:
    """(Re)write TBMM/Cert/<Name>.lean and .json for every task's anchor artifact."""
    out = []
    cert_dir = root / CERT_DIR
    cert_dir.mkdir(parents=True, exist_ok=True)
    for t in tasks:
        cert = render(
            t, t.anchor_artifact, witness_failures=not t.gate.anchor.feasible, contract=True
        )
        stem = cert.module.rsplit(".", 1)[-1]
        write_text_if_changed(cert_dir / f"{stem}.lean", cert.text)
        if cert.gaps:
            raise ValueError(f"{t.slug}: the anchor artifact leaves gaps: {cert.gaps}")
        write_text_if_changed(
            cert_dir / f"{stem}.json", json.dumps(cert.sidecar(), indent=1) + "\n"
        )
        out.append(cert)
    return out


@dataclass
class LeanResult:
    ok: bool
    obligations: int
    failing: list[str] = field(default_factory=list)  # "decl (field): message"
    gaps: list[str] = field(default_factory=list)
    seconds: float = 0.0
    toolchain: str = ""
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "obligations": self.obligations,
            "failing": self.failing,
            "gaps": self.gaps,
            "seconds": round(self.seconds, 3),
            "toolchain": self.toolchain,
            "error": self.error,
        }


def check_artifact(
    task: Task,
    doc: dict[str, Any],
    *,
    root: Path | None = None,
    gate_report: GateReport | None = None,
    score: TaskScore | None = None,
) -> LeanResult:
    """Emit this artifact's certificate (claiming feasibility) and have the kernel check it."""
    from tbmm.lean.build import check_module, project_root
    from tbmm.lean.runtime import find_toolchain

    t0 = time.monotonic()
    root = root or project_root()
    tc = find_toolchain()
    cert = render(task, doc, module="TBMMVerify", gate_report=gate_report, score=score)
    bad = [o for o in cert.obligations if o.statement == "Bool.false"]
    with tempfile.TemporaryDirectory(prefix="tbmm-verify-") as tmp:
        path = Path(tmp) / "TBMMVerify.lean"
        path.write_text(cert.text, encoding="utf-8")
        res = check_module(path, root, toolchain=tc)
    by_name = {o.name: o for o in cert.obligations}
    failing: list[str] = []
    seen: set[str] = set()
    for msg in res.messages:
        if msg.severity != "error" or not msg.decl:
            continue
        local = msg.decl.rsplit(".", 1)[-1]
        if local in seen:
            continue  # Lean follows the first error of a declaration with consequential ones
        seen.add(local)
        o = by_name.get(local)
        label = f"{local} ({', '.join(o.fields)})" if o else local
        text = msg.text.splitlines()[0] if msg.text else "error"
        if o in bad:
            text = "value is not a finite number: nothing the kernel can check"
        failing.append(f"{label}: {text}")
    error = ""
    if res.failure is not None and not failing:
        error = res.failure.summary() if hasattr(res.failure, "summary") else str(res.failure)
        failing.append(error)
    return LeanResult(
        ok=res.ok,
        obligations=len(cert.obligations),
        failing=failing,
        gaps=cert.gaps,
        seconds=time.monotonic() - t0,
        toolchain=f"{tc.kind} {tc.version}",
        error=error,
    )
