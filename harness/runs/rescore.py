"""`tbmm runs rescore`: stored artifacts verified again against the current task data.

Why: a verdict is reached against one version of a task's references, gate and replay
settings (its `task_digest`, `Task.verdict_digest`). When those change, stored verdicts
go stale (the leaderboard names the entries). Rescoring verifies each stale trial's STORED
artifact again with today's verifier and replaces the verdict in place: the agent is not
run again and no tokens are spent. The previous verdict is kept beside the new one in the
trial's files (`verdict-previous-<n>.json`), written before the row changes; each trial is
one transaction, so an interrupted rescore leaves every trial either as it was or rescored.

Infrastructure `error` trials have no verdict and are left alone (`tbmm run --resume`
runs them again). A trial whose task is no longer in the suite is listed and kept, and so is
the stored verdict of a trial whose new verification reaches none (exit code 3): listed as
failed. What is scored is what the run scored (`runner.scored_bytes`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.runs.runner import (
    Verifier,
    _verdict_fields,
    default_verifier,
    no_verdict_cause,
    scored_bytes,
    verify_each,
)
from harness.runs.store import STATUS_OK, Store


@dataclass
class RescoreSummary:
    checked: int = 0
    current: int = 0  # verdicts already reached against the current task data
    rescored: list[tuple[str, str, int, str | None, str | None]] = field(default_factory=list)
    unknown_tasks: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def is_stale(row: dict[str, Any], digest: str) -> bool:
    """A stored verdict reached against other task data (or one that records none)."""
    try:
        rep = json.loads(row.get("verdict") or "null")
    except ValueError:
        return True
    return not isinstance(rep, dict) or rep.get("task_digest") != digest


def _keep_previous(blob: Path, verdict_text: str | None) -> None:
    """The old verdict as `verdict-previous-<n>.json` (never overwriting an earlier one)."""
    if not verdict_text:
        return
    blob.mkdir(parents=True, exist_ok=True)
    n = 1
    while (blob / f"verdict-previous-{n}.json").exists():
        n += 1
    (blob / f"verdict-previous-{n}.json").write_text(verdict_text)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def rescore(
    db: Path,
    *,
    tasks_root: Path | None = None,
    entry: str | None = None,
    task: str | None = None,
    everything: bool = False,
    verifier: Verifier | None | str = "default",
    say: Callable[[str], None] | None = None,
) -> RescoreSummary:
    """Verify again every stale `ok` trial (all of them with `everything`) of the store,
    optionally of one entry and/or task; see the module docstring."""
    from tbmm.suite.tasks import TASKS_ROOT, load_suite

    say = say or (lambda _m: None)
    if verifier == "default":
        verifier, why = default_verifier()
        if verifier is None:
            raise RuntimeError(why)
    by_slug = {t.slug: t for t in load_suite(tasks_root or TASKS_ROOT)}
    summary = RescoreSummary()
    store = Store(db)
    try:
        todo: list[tuple[dict[str, Any], Any, str]] = []
        for row in store.trials(entry):
            if row["status"] != STATUS_OK or (task is not None and row["task"] != task):
                continue
            summary.checked += 1
            where = f"{row['entry_id']} / {row['task']} / seed {row['seed']}"
            t = by_slug.get(row["task"])
            if t is None:
                summary.unknown_tasks.append(where)
            elif not everything and not is_stale(row, t.verdict_digest):
                summary.current += 1
            elif not row.get("blob_dir"):
                summary.failed.append(f"{where}: no trial folder to keep the previous verdict in")
            else:
                todo.append((row, t, where))
        for i in range(0, len(todo), CHUNK):
            chunk = todo[i : i + CHUNK]
            say(f"verifying {i + 1}-{i + len(chunk)} of {len(todo)}")
            items = [
                (t, scored_bytes(row["exit_reason"], row["artifact_status"], row["artifact"]))
                for row, t, _ in chunk
            ]
            for (row, _, where), report in zip(chunk, verify_each(items, verifier), strict=True):
                if isinstance(report, Exception):  # a verifier fault keeps the stored verdict
                    summary.failed.append(f"{where}: {type(report).__name__}: {report}")
                    continue
                fields = _verdict_fields(report)
                no_verdict = no_verdict_cause(fields["verdict"])
                if no_verdict is not None:  # no verdict is no replacement: the old one stays
                    summary.failed.append(f"{where}: {no_verdict[:300]}")
                    continue
                blob = store.runs_dir / str(row["blob_dir"])
                _keep_previous(blob, row.get("verdict"))
                store.replace_verdict(int(row["id"]), fields)
                _write_atomic(blob / "verdict.json", json.dumps(fields["verdict"], indent=1))
                old, new = row.get("o_eval_exact"), fields.get("o_eval_exact")
                summary.rescored.append((row["entry_id"], row["task"], int(row["seed"]), old, new))
                say(f"{where}: O-Eval {old} -> {new}")
    finally:
        store.close()
    return summary


CHUNK = 32  # trials per Lean run of the default verifier (progress is reported per chunk)
