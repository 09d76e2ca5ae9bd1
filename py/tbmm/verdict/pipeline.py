"""One artifact through the verdict pipeline: resolve (replay) → gate → score.

Every entry point (the CLI's score/gate/verify/replay, the harness, the library) goes
through `evaluate`, so an artifact is resolved once and every stage sees the same tree:
the agent's artifact with the replay's outputs under `replayed`. The Lean certificate
(`tbmm.verify`) is then stated over that same tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tbmm.replay import CpuBudget, ReplayReport, run_replay
from tbmm.suite.tasks import Task
from tbmm.verdict.gate import GateReport, run_gate
from tbmm.verdict.scoring import TaskScore, score_task


@dataclass
class Evaluation:
    """Resolved artifact, replay, gate and scores of one artifact of one task."""

    task: Task
    doc: dict[str, Any] | None  # the resolved artifact (None: missing)
    replay: ReplayReport | None
    gate: GateReport
    score: TaskScore  # zeroed when the gate failed

    @property
    def infeasible(self) -> bool:
        return self.gate.verdict == "fail"


def evaluate(
    task: Task, doc: dict[str, Any] | None, deadline: CpuBudget | None = None
) -> Evaluation:
    """Resolve `doc` (the parsed artifact; None = missing), gate it and score it."""
    if doc is None:
        g = run_gate(task, None)
        return Evaluation(task, None, None, g, score_task(task, None))
    resolved, rep = run_replay(task, doc, deadline)
    g = run_gate(task, resolved, rep.details if rep else None)
    if rep is not None and rep.status == "unreplayable":
        g.warnings.insert(0, f"replay {rep.module}: {rep.error}")
        g.unverifiable = {
            k: f"{v}; the replay failed: {rep.error}" if "replayed." in v else v
            for k, v in g.unverifiable.items()
        }
    s = score_task(task, resolved, gate_failed=g.verdict == "fail", unverifiable=g.unverifiable)
    return Evaluation(task, resolved, rep, g, s)
