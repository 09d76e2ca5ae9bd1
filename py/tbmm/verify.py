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

from tbmm import verify_plain as P
from tbmm.core import bounds
from tbmm.suite.tasks import Task
from tbmm.verify_plain import lean_scope, schema_issues

__all__ = ["VerifyReport", "lean_scope", "schema_issues", "verify_artifact", "verify_batch"]


class VerifyReport(BaseModel):
    """Everything known about one artifact of one task (JSON-serialisable, stored by the harness).

    Built from `tbmm.verify_plain`'s plain fields, whose `FIELDS` table repeats these names,
    order and defaults (tests/test_verify_lite.py holds the two equal)."""

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


def _unreadable(task: Task, error: str, status: str) -> VerifyReport:
    """Exit 2: nothing to check; scored as a missing artifact (O-Eval 0, Robust BO-Eval -1)."""
    return VerifyReport(**P.unreadable(task, error, status))


def _python_stage(task: Task, data: bytes | None) -> tuple[VerifyReport | None, Any, Any]:
    """Read, resolve (replay), gate and score: a final report for what needs no Lean
    (missing, unreadable, over a cap), else the evaluation and the parsed artifact."""
    early, ev, doc = P.python_stage(task, data)
    return (None if early is None else VerifyReport(**early)), ev, doc


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
    it). Task data and Lean library builds are never charged to it. The pipeline itself is
    `tbmm.verify_plain` (plain fields, which `tbmm verify` prints without this model).
    """
    return VerifyReport(**P.verify_fields(task, data, lean=lean, budget_s=budget_s))


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
    return [VerifyReport(**f) for f in P.verify_batch_fields(items, lean=lean, budget_s=budget_s)]
