"""Certificates: an artifact's invariants and scores as Lean theorems, checked by the kernel.

For one artifact of one task this module generates an Init-free Lean module whose
theorems are closed Bool computations proved by `rfl`:

* ``gate_<check>[_<i>]`` — one per gate instance: the form's checker applied to the
  artifact's numbers is `true` (feasible). For a committed anchor certificate whose anchor
  is recorded infeasible, a violated instance is stated instead as ``<...>_violated``:
  the checker is `false` — a kernel-checked witness of infeasibility, never a claim of
  feasibility;
* ``replay_<name>`` — for an exact replay whose module defines
  ``lean_obligations(task, doc)``: the replay restated as a Lean function of the
  artifact's decisions and the task's data, evaluated by the kernel, equals the replayed
  value that is gated and scored;
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

import importlib
import json
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from tbmm import rules
from tbmm.exact import fraction_to_text as exact_text
from tbmm.exact import parse_decimal
from tbmm.files import write_text_if_changed
from tbmm.forms import Form
from tbmm.gate import GateReport, Instance, run_gate
from tbmm.lean import serialize as S
from tbmm.scoring import TaskScore, lookup, panel_scores, score_metric
from tbmm.tasks import Task

CERT_DIR = Path("TBMM") / "Cert"
REGENERATE = "uv run tbmm lean certify"
UNCHECKED = "unchecked"  # the kind of a gate instance whose value is not a number


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

    @property
    def stated(self) -> list[Obligation]:
        """The obligations that are theorems of the module (not the unchecked instances)."""
        return [o for o in self.obligations if o.kind != UNCHECKED]

    def sidecar(self) -> list[dict[str, Any]]:
        return [o.sidecar(self.module, self.task) for o in self.stated]

    @property
    def stem(self) -> str:
        """The file name without suffix: `TBMM.Cert.X` -> `X`."""
        return self.module.rsplit(".", 1)[-1]


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


def replay_obligations(task: Task, doc: dict[str, Any]) -> list[Obligation]:
    """What an exact replay states about its own numbers: the task's replay module's
    ``lean_obligations(task, doc) -> [(name, Bool term, fields)]`` (none if it has no such
    function). Its terms are built from numerals and generated names only, like ours."""
    spec = task.replay_spec
    if spec is None or not doc:
        return []
    hook = getattr(importlib.import_module(f"tbmm.replay.{spec.module}"), "lean_obligations", None)
    if hook is None:
        return []
    return [
        Obligation(_safe(f"replay_{name}"), term, True, "replay", spec.module, name, tuple(fields))
        for name, term, fields in hook(task, doc)
    ]


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
            # Not a finite number: nothing the kernel can check. Listed (the gate fails on it
            # in Python), never stated in Lean: a theorem would be vacuous either way.
            obs.append(Obligation(name, "", True, UNCHECKED, check.form.value, check.id, fields))
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

    obs += replay_obligations(task, doc)

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
        if o.kind != UNCHECKED:
            body.append(S.theorem(o.name, o.statement, expect=o.expect))
    body += [f"end {ns}", "end", ""]
    cert = Certificate(task.slug, module, obs, gaps)
    cert.text = S.module(body)
    return cert


def anchor_certificates(tasks: Sequence[Task]) -> list[Certificate]:
    """The certificate of every task's anchor artifact, rendered in memory.

    An infeasible anchor's violated instances are stated as kernel-checked witnesses
    (`…_violated`). Raises ValueError when an anchor leaves a gap (a field it does not give).
    """
    out = []
    for t in tasks:
        cert = render(
            t, t.anchor_artifact, witness_failures=not t.gate.anchor.feasible, contract=True
        )
        if cert.gaps:
            raise ValueError(f"{t.slug}: the anchor artifact leaves gaps: {cert.gaps}")
        out.append(cert)
    return out


def certificate_files(certs: Sequence[Certificate]) -> dict[str, str]:
    """`TBMM/Cert/<Name>.lean` and `.json` (paths relative to the project root) -> text."""
    files: dict[str, str] = {}
    for cert in certs:
        base = (CERT_DIR / cert.stem).as_posix()
        files[base + ".lean"] = cert.text
        files[base + ".json"] = json.dumps(cert.sidecar(), indent=1) + "\n"
    return files


def write_anchor_certificates(tasks: Sequence[Task], root: Path) -> list[Certificate]:
    """(Re)write TBMM/Cert/<Name>.lean and .json for every task's anchor artifact."""
    certs = anchor_certificates(tasks)
    (root / CERT_DIR).mkdir(parents=True, exist_ok=True)
    for rel, text in certificate_files(certs).items():
        write_text_if_changed(root / rel, text)
    return certs


@dataclass(frozen=True)
class StaleFile:
    """A file under `TBMM/Cert/` that is not what the task data generate."""

    path: str  # relative to the project root
    state: str  # missing | stale | unexpected

    def __str__(self) -> str:
        why = {
            "missing": "is missing",
            "stale": "differs from what the task data and anchors generate (stale or edited)",
            "unexpected": "is not generated from any task",
        }[self.state]
        return f"{self.path} {why}"


def stale_certificates(
    root: Path, tasks: Sequence[Task], certs: Sequence[Certificate] | None = None
) -> list[StaleFile]:
    """Every certificate file that differs from a fresh rendering (missing, stale, extra)."""
    fresh = certificate_files(certs if certs is not None else anchor_certificates(tasks))
    out: list[StaleFile] = []
    for rel, text in sorted(fresh.items()):
        f = root / rel
        if not f.is_file():
            out.append(StaleFile(rel, "missing"))
        elif f.read_bytes() != text.encode("utf-8"):
            out.append(StaleFile(rel, "stale"))
    cert_dir = root / CERT_DIR
    if cert_dir.is_dir():
        for f in sorted(cert_dir.rglob("*")):
            rel = f.relative_to(root).as_posix()
            if f.is_file() and rel not in fresh:
                out.append(StaleFile(rel, "unexpected"))
    return out


VERIFY_MODULE = "TBMMVerify"


class CertificateError(RuntimeError):
    """A generated certificate left the allowed grammar: a generator bug, never a verdict."""


@dataclass(frozen=True)
class Disagreement:
    """A statement the Python side made that the Lean kernel did not confirm."""

    decl: str  # local theorem name
    fields: tuple[str, ...]
    python: str  # what Python computed
    lean: str  # what the kernel computed (or why it could not)
    message: str = ""  # Lean's first error line

    def __str__(self) -> str:
        where = f" ({', '.join(self.fields)})" if self.fields else ""
        return f"{self.decl}{where}: Python {self.python}, Lean kernel {self.lean}"

    def to_json(self) -> dict[str, Any]:
        return {
            "decl": self.decl,
            "fields": list(self.fields),
            "python": self.python,
            "lean": self.lean,
            "message": self.message,
        }


@dataclass
class LeanResult:
    """The kernel's view of one artifact's certificate.

    `ok`: the kernel checked every statement and agrees with Python (an infeasible artifact
    can be ok: its violations are then kernel-proved and listed in `failing`).
    """

    ok: bool
    obligations: int
    failing: list[str] = field(default_factory=list)  # "decl (field): why" per failed check
    gaps: list[str] = field(default_factory=list)
    seconds: float = 0.0
    toolchain: str = ""
    error: str = ""  # Lean could not check the module at all (timeout, crash)
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """`ok` (feasible), `fail` (infeasible, agreed), `disagreement`, or `error`."""
        if self.disagreements:
            return "disagreement"
        if self.error:
            return "error"
        return "fail" if self.failing else "ok"

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "outcome": self.outcome,
            "obligations": self.obligations,
            "failing": self.failing,
            "disagreements": [d.to_json() for d in self.disagreements],
            "gaps": self.gaps,
            "seconds": round(self.seconds, 3),
            "toolchain": self.toolchain,
            "error": self.error,
        }


_BEQ_RE = re.compile(
    r"Rat\.beq \((?P<expr>.*)\) \(Rat\.(?P<kind>frac|negFrac) (?P<n>\d+) (?P<d>\d+)\)"
)
_REFUTED = ("Not a definitional equality", "Type mismatch")


def _python_side(o: Obligation) -> tuple[str, str | None, Fraction | None]:
    """(what Python claims, the Lean expression of a rational claim, its value)."""
    m = _BEQ_RE.fullmatch(o.statement)
    if m is not None and o.expect:
        value = Fraction(int(m["n"]), int(m["d"])) * (-1 if m["kind"] == "negFrac" else 1)
        return f"= {exact_text(value)}", m["expr"], value
    head = o.statement.split(" ", 1)[0]
    return f"{head} … = {str(o.expect).lower()}", None, None


def check_artifact(
    task: Task,
    doc: dict[str, Any],
    *,
    root: Path | None = None,
    gate_report: GateReport | None = None,
    score: TaskScore | None = None,
) -> LeanResult:
    """Emit this artifact's certificate and have the kernel check it.

    Every gate instance is stated with Python's verdict (a violated one as a
    `…_violated : checker = false` witness), every metric's domain and score and the task
    scores with Python's values. So a build that passes means the kernel agrees with
    Python on everything, and each failing theorem is a disagreement, shown with both
    values. Raises `ToolchainError` when no Lean is available.
    """
    from tbmm.lean.allowlist import check_certificate, library_names
    from tbmm.lean.build import check_module, project_root
    from tbmm.lean.runtime import find_toolchain

    t0 = time.monotonic()
    root = root or project_root()
    tc = find_toolchain()
    cert = render(
        task, doc, module=VERIFY_MODULE, witness_failures=True, gate_report=gate_report, score=score
    )
    stated = cert.stated
    bad = check_certificate(
        cert.text, cert.module, library_names(root), expected=[(o.name, o.expect) for o in stated]
    )
    if bad:
        raise CertificateError("; ".join(str(b) for b in bad[:3]))
    with tempfile.TemporaryDirectory(prefix="tbmm-verify-") as tmp:
        path = Path(tmp) / f"{VERIFY_MODULE}.lean"
        path.write_text(cert.text, encoding="utf-8")
        res = check_module(path, root, toolchain=tc)
    by_name = {o.name: o for o in stated}
    refused: dict[str, str] = {}  # local theorem name -> Lean's first error line
    stray: list[str] = []
    for msg in res.messages:
        if msg.severity != "error":
            continue
        local = msg.decl.rsplit(".", 1)[-1] if msg.decl else ""
        text = msg.text.splitlines()[0] if msg.text else "error"
        if local in by_name:
            refused.setdefault(local, text)  # Lean follows the first error with consequences
        else:
            stray.append(text)
    error = ""
    if res.failure is not None and not refused:
        error = res.failure.summary()
    elif stray:
        error = "; ".join(stray[:3])
    rational = {
        name: expr
        for name in refused
        if (expr := _python_side(by_name[name])[1]) is not None
        and refused[name].startswith(_REFUTED)
    }
    lean_values = kernel_values(rational, root, toolchain=tc) if rational else {}
    disagreements = []
    for name, text in refused.items():
        o = by_name[name]
        python, expr, value = _python_side(o)
        if not text.startswith(_REFUTED):
            lean = f"could not check it ({text})"
        elif expr is None:
            lean = f"{python.rsplit('=', 1)[0]}= {str(not o.expect).lower()}"
        elif (got := lean_values.get(name)) is not None:
            lean = f"= {exact_text(got)}"
        else:
            lean = f"≠ {exact_text(value)}" if value is not None else "differs"
        disagreements.append(Disagreement(name, o.fields, python, lean, text))
    failing = [  # only a run that checked the whole module proves anything
        f"{o.name} ({', '.join(o.fields)}): the kernel proved the check false"
        for o in stated
        if o.kind == "gate" and not o.expect and o.name not in refused and not error
    ]
    failing += [
        f"{o.name} ({', '.join(o.fields)}): value is not a finite number: nothing the kernel can check"
        for o in cert.obligations
        if o.kind == UNCHECKED
    ]
    return LeanResult(
        ok=not disagreements and not error,
        obligations=len(stated),
        failing=failing,
        gaps=cert.gaps,
        seconds=time.monotonic() - t0,
        toolchain=f"{tc.kind} {tc.version}",
        error=error,
        disagreements=disagreements,
    )


KERNEL_VALUE_BITS = (64, 256, 1024)  # a larger value is shown as "≠ Python's value"
KERNEL_VALUES_MAX = 4  # disagreements whose Lean value is read back (each costs a few runs)
KERNEL_VALUES_TIMEOUT = 120.0  # seconds per Lean run; a disagreement is a bug, not a workload


def kernel_values(
    exprs: dict[str, str], root: Path, *, toolchain: Any = None
) -> dict[str, Fraction | None]:
    """The value the Lean kernel computes for each rational expression (None: too large).

    Nothing in this Init-free library prints a value, so the kernel is asked yes/no
    questions it can answer by `rfl`, one theorem each, all in one module per round: the
    sign, which of `KERNEL_VALUE_BITS` bounds the numerator and the denominator, then
    every bit of both. Only used to show Lean's side of a disagreement.
    """
    from tbmm.lean.build import check_module

    def run(theorems: dict[str, str]) -> set[str]:
        """The names of the theorems the kernel accepted."""
        body = ["noncomputable section", "namespace TBMMValues", ""]
        body += [S.theorem(n, stmt) for n, stmt in theorems.items()]
        body += ["end TBMMValues", "end", ""]
        with tempfile.TemporaryDirectory(prefix="tbmm-values-") as tmp:
            path = Path(tmp) / "TBMMValues.lean"
            path.write_text(S.module(body), encoding="utf-8")
            res = check_module(path, root, toolchain=toolchain, timeout=KERNEL_VALUES_TIMEOUT)
        errors = [m for m in res.messages if m.severity == "error"]
        if res.exit_code not in (0, 1) or any(not m.decl for m in errors):
            return set()  # timed out, crashed, or failed outside a theorem: nothing is known
        refused = {
            m.decl.rsplit(".", 1)[-1] for m in res.messages if m.decl and m.severity == "error"
        }
        return {n for n in theorems if n not in refused}

    keys = {f"v{i}": name for i, name in enumerate(list(exprs)[:KERNEL_VALUES_MAX])}
    parts = {
        k: (f"(Int.natAbs (Rat.num ({exprs[n]})))", f"(Rat.den ({exprs[n]}))")
        for k, n in keys.items()
    }
    first: dict[str, str] = {}
    for k, (num, den) in parts.items():
        first[f"{k}_nonneg"] = f"Rat.le Rat.zero ({exprs[keys[k]]})"
        for b in KERNEL_VALUE_BITS:
            first[f"{k}_nbound_{b}"] = f"Nat.beq (Nat.shiftRight {num} {b}) 0"
            first[f"{k}_dbound_{b}"] = f"Nat.beq (Nat.shiftRight {den} {b}) 0"
    passed = run(first)
    bits: dict[str, int] = {}
    second: dict[str, str] = {}
    for k, (num, den) in parts.items():
        nb = next((b for b in KERNEL_VALUE_BITS if f"{k}_nbound_{b}" in passed), None)
        db = next((b for b in KERNEL_VALUE_BITS if f"{k}_dbound_{b}" in passed), None)
        if nb is None or db is None:
            continue
        bits[k] = max(nb, db)
        for i in range(nb):
            second[f"{k}_n_{i}"] = f"Nat.beq (Nat.land (Nat.shiftRight {num} {i}) 1) 1"
        for i in range(db):
            second[f"{k}_d_{i}"] = f"Nat.beq (Nat.land (Nat.shiftRight {den} {i}) 1) 1"
    ones = run(second) if second else set()
    out: dict[str, Fraction | None] = {}
    for k, name in keys.items():
        if k not in bits:
            out[name] = None
            continue
        num = sum(1 << i for i in range(bits[k]) if f"{k}_n_{i}" in ones)
        den = sum(1 << i for i in range(bits[k]) if f"{k}_d_{i}" in ones)
        if den == 0:
            out[name] = None
            continue
        out[name] = Fraction(num if f"{k}_nonneg" in passed else -num, den)
    return out
