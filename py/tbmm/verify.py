"""`tbmm verify`: schema check + feasibility gate + score + Lean kernel check, one report.

Exit codes: 0 feasible (the gate passed or only warned, and the Lean certificate of the
artifact's invariants checked), 1 infeasible (names the failing obligation and field),
2 unreadable input (or over a cap of tbmm.bounds), 3 no verdict: the verification budget
was exceeded (status `budget_exceeded`), or the Lean kernel did not confirm what Python
computed (status `lean_disagreement`: both values shown, or Lean could not check at all,
which `lean_detail.outcome` = "error" tells apart) — never "infeasible". A failed gate
zeroes the task: O-Eval 0, Robust BO-Eval -1. A missing Lean toolchain raises
`tbmm.lean.runtime.ToolchainError` (an infrastructure failure, not a score).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tbmm import bounds, exact
from tbmm.paths import MISSING, expand_nodes
from tbmm.pipeline import evaluate
from tbmm.scoring import ArtifactError, read_artifact, score_task
from tbmm.tasks import Task


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
    status: str = "unreadable"
    score: dict[str, Any] = {}
    gate_report: dict[str, Any] = {}
    replay: dict[str, Any] = {}  # the replay report (tasks with replay.toml)


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


def verify_artifact(
    task: Task, data: bytes | None, *, lean: bool = True, budget_s: float = bounds.DEFAULT_BUDGET_S
) -> VerifyReport:
    """Verify one artifact (None = the agent wrote nothing). Never raises on bad input.

    Input over a cap of tbmm.bounds is refused before any work (status over_caps, exit 2);
    a verification that runs past `budget_s` ends as status budget_exceeded (exit 3), scored
    as a missing artifact: it is neither infeasible nor a verdict on the model.
    """
    with bounds.deadline(budget_s):
        try:
            return _verify(task, data, lean=lean)
        except bounds.BudgetExceeded as exc:
            return VerifyReport(
                task=task.slug,
                exit_code=3,
                readable=True,
                error=str(exc),
                status="budget_exceeded",
                score=score_task(task, None).to_json(),
            )


def _verify(task: Task, data: bytes | None, *, lean: bool) -> VerifyReport:
    if data is None:
        return _unreadable(task, "missing artifact", "missing_artifact")
    try:
        doc = read_artifact(data, task.caps)
    except ArtifactError as exc:  # over a cap of tbmm.bounds: its own status
        over = isinstance(exc.__cause__, bounds.BoundsError)
        return _unreadable(task, str(exc), "over_caps" if over else "unreadable")
    ev = evaluate(task, doc)
    bounds.check_budget("after the gate, the replay and scoring")
    g, s, resolved = ev.gate, ev.score, ev.doc
    assert resolved is not None
    failing = [f"gate {i.name} ({i.check.form.value}): {i.message}" for i in g.failed]
    lean_state, lean_detail = "skipped", {}
    if lean:
        from tbmm.lean.certify import check_artifact

        lr = check_artifact(task, resolved, gate_report=g, score=s)
        bounds.check_budget("after the Lean check")
        lean_state = lr.outcome
        lean_detail = lr.to_json()
        failing += [f"lean {o}" for o in lr.failing]
        failing += [f"lean disagreement: {d}" for d in lr.disagreements]
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
        )
    infeasible = g.verdict == "fail" or lean_state == "fail"
    if infeasible and s.status != "gate_failed":
        s = score_task(task, resolved, gate_failed=True, unverifiable=g.unverifiable)
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
        status=s.status,
        score=sj,
        gate_report=g.to_json(),
        replay=ev.replay.to_json() if ev.replay is not None else {},
    )
