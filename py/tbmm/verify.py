"""`tbmm verify`: schema check + feasibility gate + score + Lean kernel check, one report.

Exit codes: 0 feasible (the gate passed or only warned, and the Lean kernel recomputed
the same verdict from the artifact and the task as Lean terms), 1 infeasible (names the
failing check, instance and field, kernel-confirmed),
2 unreadable input (or over a cap of tbmm.core.bounds), 3 no verdict: the verification CPU budget
was exceeded (status `budget_exceeded`; CPU time, never the wall clock), or the Lean kernel did not confirm what Python
computed (status `lean_disagreement`: both values shown, or Lean could not check at all,
which `lean_detail.outcome` = "error" tells apart) — never "infeasible". A failed gate
zeroes the task: O-Eval 0, Robust BO-Eval -1. A missing Lean toolchain raises
`tbmm.lean.runtime.ToolchainError` (an infrastructure failure, not a score).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tbmm.core import bounds, exact
from tbmm.core.paths import MISSING, expand_nodes
from tbmm.suite.models import REPLAYED
from tbmm.suite.tasks import Task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import ArtifactError, read_artifact, score_task


class VerifyReport(BaseModel):
    """Everything known about one artifact of one task (JSON-serialisable, stored by the harness)."""

    task: str
    exit_code: int  # 0 feasible, 1 infeasible, 2 unreadable / over caps, 3 no verdict
    readable: bool
    error: str = ""
    schema_issues: list[str] = []
    gate: str = "skipped"  # pass | warn | fail | skipped
    lean: str = "skipped"  # ok | fail | disagreement | skipped
    lean_detail: dict[str, Any] = {}
    failing: list[str] = []  # failing obligations / checks, each naming the artifact field
    o_eval: float = 0.0
    o_eval_exact: str = "0"
    raw_exact: str = "0"
    robust_bo_eval: float = -1.0
    robust_bo_eval_exact: str = "-1"
    # the default reward: skill over the naive floor (tbmm.core.rules.skill), 0 unless scored;
    # computed in Python from the kernel-checked raw score and the task's stored floor
    skill: float = 0.0
    skill_exact: str = "0"
    status: str = "unreadable"
    score: dict[str, Any] = {}
    gate_report: dict[str, Any] = {}
    replay: dict[str, Any] = {}  # the replay report (tasks with replay.toml)
    # per replayed value (path under `replayed`): who computed it and how far it is
    # trusted. "lean_kernel": recomputed by the kernel from the artifact's decisions;
    # "python_replay": taken from the Python replay (the kernel checks the gate and the
    # scores over it, not the value itself), with its precision and agree tolerance
    lean_scope: dict[str, dict[str, str]] = {}
    # Task.verdict_digest of the task data this verdict was reached against (the
    # leaderboard flags stored verdicts whose task data has changed since)
    task_digest: str = ""


def schema_issues(task: Task, doc: dict[str, Any]) -> list[str]:
    """Fields of the schema that are missing or of the wrong type (informative, not fatal)."""
    issues = []
    for f in task.artifact_map.field:
        for path, node in expand_nodes(doc, f.path):
            if node is MISSING:
                issues.append(f"{path}: missing")
                continue
            if f.type == "list[number]":
                ok = isinstance(node, list) and all(isinstance(x, exact.Num) for x in node)
            elif f.type == "tag":
                ok = isinstance(node, str) and node in f.tags
            else:
                ok = isinstance(node, exact.Num) and (
                    f.type != "integer" or node.value.denominator == 1
                )
            if not ok:
                issues.append(f"{path}: expected {f.type}")
    return issues


def _unreadable(task: Task, error: str, status: str) -> VerifyReport:
    """Exit 2: nothing to check; scored as a missing artifact (O-Eval 0, Robust BO-Eval -1)."""
    return VerifyReport(
        task=task.slug,
        exit_code=2,
        readable=False,
        error=error,
        status=status,
        score=score_task(task, None).to_json(),
    )


def _over_budget(task: Task, error: str) -> VerifyReport:
    """Exit 3: the verification CPU budget ran out: no verdict (the score fields are those
    of a missing artifact only so that the report is complete; nothing may rank them)."""
    return VerifyReport(
        task=task.slug,
        exit_code=3,
        readable=True,
        error=error,
        status="budget_exceeded",
        score=score_task(task, None).to_json(),
    )


def verify_artifact(
    task: Task, data: bytes | None, *, lean: bool = True, budget_s: float = bounds.DEFAULT_BUDGET_S
) -> VerifyReport:
    """Verify one artifact (None = the agent wrote nothing). Never raises on bad input.

    Input over a cap of tbmm.core.bounds is refused before any work (status over_caps, exit 2).
    `budget_s` is CPU seconds of this thread (reading, replay, gate, scoring, certificate
    text), and the Lean kernel check runs under its own CPU limit
    (`tbmm.lean.certify.lean_cpu_limit`); neither counts the wall clock, so the machine's
    load never decides a verdict. Both sit at 10x or more of what the largest artifact
    within the caps costs; one that still runs out is status budget_exceeded (exit 3): no
    verdict, neither infeasible nor a score (the harness stores it as an error and reruns
    it). Task data and Lean library builds are never charged to it.
    """
    with bounds.cpu_budget(budget_s):
        try:
            rep = _verify(task, data, lean=lean)
        except bounds.BudgetExceeded as exc:
            rep = _over_budget(task, str(exc))
    rep.task_digest = task.verdict_digest
    return rep


def _verify(task: Task, data: bytes | None, *, lean: bool) -> VerifyReport:
    early, ev, doc = _python_stage(task, data)
    if early is not None:
        return early
    assert ev is not None and ev.doc is not None
    lr = None
    if lean:
        from tbmm.lean.certify import check_artifact

        lr = check_artifact(task, ev.doc, gate_report=ev.gate, score=ev.score)
        bounds.check_budget("after the Lean check")
    return _finish(task, doc, ev, lr, lean=lean)


def _python_stage(task: Task, data: bytes | None) -> tuple[VerifyReport | None, Any, Any]:
    """Read, resolve (replay), gate and score: a final report for what needs no Lean
    (missing, unreadable, over a cap), else the evaluation and the parsed artifact."""
    if data is None:
        return _unreadable(task, "missing artifact", "missing_artifact"), None, None
    try:
        doc = read_artifact(data, task.caps)
    except ArtifactError as exc:  # over a cap of tbmm.core.bounds: its own status
        over = isinstance(exc.__cause__, bounds.BoundsError)
        return _unreadable(task, str(exc), "over_caps" if over else "unreadable"), None, None
    ev = evaluate(task, doc)
    bounds.check_budget("after the gate, the replay and scoring")
    assert ev.doc is not None
    return None, ev, doc


def lean_scope(task: Task, replay: Any, lr: Any) -> dict[str, dict[str, str]]:
    """For each replayed value: recomputed by the Lean kernel, or taken from the Python
    replay (with the replay's precision and the tolerance its `agree` check allows)."""
    spec = task.replay_spec
    if replay is None or spec is None:
        return {}
    recomputed = set(lr.recomputed) if lr is not None and lr.outcome in ("ok", "fail") else set()
    agree = {c.against: c for c in task.gate.check if c.form.value == "agree" and c.against}
    out: dict[str, dict[str, str]] = {}
    for path in replay.values:
        full = f"{REPLAYED}.{path}"
        if full in recomputed:
            out[path] = {"by": "lean_kernel", "precision": "exact (recomputed from the decisions)"}
            continue
        precision = (
            "exact rationals (Python only)"
            if spec.exact
            else f"floating, rounded to {spec.digits} significant digits (Python only)"
        )
        entry = {"by": "python_replay", "precision": precision}
        c = agree.get(full)
        if c is not None:
            entry["agree"] = f"{c.field}: |claim - replayed| <= {c.tol or 0}" + (
                f" + {c.rel_tol} x |replayed|" if c.rel_tol else ""
            )
        out[path] = entry
    return out


def _finish(task: Task, doc: Any, ev: Any, lr: Any, *, lean: bool) -> VerifyReport:
    """The report of an evaluated artifact, with the Lean kernel's result `lr` (None: skipped)."""
    g, s = ev.gate, ev.score
    failing = [f"gate {i.name} ({i.check.form.value}): {i.message}" for i in g.failed]
    lean_state, lean_detail = "skipped", {}
    if lean and lr is not None:
        lean_state = lr.outcome
        lean_detail = lr.to_json()
        failing += [f"lean {o}" for o in lr.failing]
        failing += [f"lean disagreement: {d}" for d in lr.disagreements]
        if lr.disagreements:
            failing.append(
                f"lean disagreement: verdict: Python {lr.python_verdict}, "
                f"Lean kernel {lr.lean_verdict or 'differs'}"
            )
        if lr.error:
            failing.append(f"lean error: {lr.error}")
    if lean_state in ("disagreement", "error"):  # no verdict: Python's scores kept for diagnosis
        return VerifyReport(
            task=task.slug,
            exit_code=3,
            readable=True,
            schema_issues=schema_issues(task, doc),
            gate=g.verdict,
            lean="disagreement",
            lean_detail=lean_detail,
            failing=failing,
            status="lean_disagreement",
            score=s.to_json(),
            gate_report=g.to_json(),
            replay=ev.replay.to_json() if ev.replay is not None else {},
            lean_scope=lean_scope(task, ev.replay, None),
        )
    infeasible = g.verdict == "fail"  # Lean, when it ran, confirmed the same verdict
    sj = s.to_json()
    return VerifyReport(
        task=task.slug,
        exit_code=1 if infeasible else 0,
        readable=True,
        schema_issues=schema_issues(task, doc),
        gate=g.verdict,
        lean=lean_state,
        lean_detail=lean_detail,
        failing=failing,
        o_eval=sj["o_eval"],
        o_eval_exact=sj["o_eval_exact"],
        raw_exact=sj["raw_exact"],
        robust_bo_eval=sj["robust_bo_eval"],
        robust_bo_eval_exact=sj["robust_bo_eval_exact"],
        skill=sj["skill"],
        skill_exact=sj["skill_exact"],
        status=s.status,
        score=sj,
        gate_report=g.to_json(),
        replay=ev.replay.to_json() if ev.replay is not None else {},
        lean_scope=lean_scope(task, ev.replay, lr if lean else None),
    )


def verify_batch(
    items: list[tuple[Task, bytes | None]],
    *,
    lean: bool = True,
    budget_s: float = bounds.DEFAULT_BUDGET_S,
) -> list[VerifyReport]:
    """Verify many artifacts, the Lean kernel checking all of them in ONE run (one module,
    one theorem per artifact, each artifact's result apart: a refuted or failing one hides
    nothing of the others). Each artifact's own stages (reading, replay, gate, scoring)
    run within `budget_s` of CPU, as `verify_artifact`'s do; the shared Lean run gets the
    CPU limit of all its artifacts together (when it runs out, every artifact it held ends
    budget_exceeded)."""
    reports: list[VerifyReport | None] = []
    staged: list[tuple[int, Any, Any]] = []
    pooled = 0.0
    for k, (task, data) in enumerate(items):
        with bounds.cpu_budget(budget_s) as d:
            try:
                early, ev, doc = _python_stage(task, data)
            except bounds.BudgetExceeded as exc:
                early = _over_budget(task, str(exc))
            left = d.remaining()
        reports.append(early)
        if early is None:
            staged.append((k, ev, doc))
            pooled += max(left, 0.0)
    results: list[Any] = [None] * len(staged)
    if lean and staged:
        from tbmm.lean.certify import check_batch

        try:
            with bounds.cpu_budget(pooled):
                results = check_batch(
                    [(items[k][0], ev.doc, ev.gate, ev.score) for k, ev, _ in staged]
                )
        except bounds.BudgetExceeded as exc:
            why = f"{exc}: the batch's one Lean run had what its {len(staged)} artifacts' budgets left"
            for k, _, _ in staged:
                reports[k] = _over_budget(items[k][0], why)
            return _with_digests(items, reports)
    for (k, ev, doc), lr in zip(staged, results, strict=True):
        reports[k] = _finish(items[k][0], doc, ev, lr, lean=lean)
    return _with_digests(items, reports)


def _with_digests(
    items: list[tuple[Task, bytes | None]], reports: list[VerifyReport | None]
) -> list[VerifyReport]:
    out = [r for r in reports if r is not None]
    for (task, _), r in zip(items, out, strict=True):
        r.task_digest = task.verdict_digest
    return out
