"""Read the results store into leaderboard rows (one place, for `run`, `leaderboard`, `report`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from tbmm.reports.leaderboard import Leaderboard, TrialRow, compute, row_from_record, suite_config
from tbmm.suite.tasks import TASKS_ROOT, load_suite


class ResultsError(ValueError):
    """The store cannot be used; the message says why."""


def load_rows(
    db: Path, tasks_root: Path = TASKS_ROOT
) -> tuple[list[TrialRow], dict[str, Any], list[Any]]:
    """Every stored trial as a TrialRow (an absent DB is an empty store, never created here).
    `cfg["names"]` holds the entries' display names, `cfg["stopped"]` the entries' budget
    stop records; each row's report carries the paths
    of its trial's files (trajectory, raw events, stdout, ...) under "files"."""
    tasks = load_suite(tasks_root)
    cfg = suite_config(tasks)
    if not Path(db).is_file():
        return [], cfg, tasks
    import sqlite3

    from harness.runs.store import Store, trial_files

    try:
        store = Store(db)
        records = store.trials()
        cfg["names"] = store.names()
        cfg["stopped"] = store.stopped()  # entries a --max-cost budget left partial
        runs = store.runs_dir
        store.close()
    except sqlite3.DatabaseError as exc:
        raise ResultsError(f"{db}: not a readable results store ({exc})") from exc
    rows = []
    for r in records:
        row = row_from_record(r, task_suites=cfg["task_suites"], split_tasks=cfg["split_tasks"])
        files = trial_files(runs, r)
        if files:
            row.report["files"] = {k: str(v) for k, v in files.items()}
        rows.append(row)
    return rows, cfg, tasks


def leaderboard(
    db: Path, tasks_root: Path = TASKS_ROOT
) -> tuple[Leaderboard, list[TrialRow], list[Any]]:
    """The leaderboard of the store at `db`; Multi-BO against each task's stored F."""
    rows, cfg, tasks = load_rows(db, tasks_root)  # ResultsError passes through
    try:
        lb = compute(rows, **cfg)
    except ValueError as exc:
        raise ResultsError(str(exc)) from exc
    stale = stale_notes(rows, tasks)
    if stale:
        lb = dataclasses.replace(lb, notes=(*stale, *lb.notes))
    return lb, rows, tasks


def stale_notes(rows: list[TrialRow], tasks: list[Any]) -> list[str]:
    """One note per entry holding verdicts reached against task data that has changed
    since (another reference, gate or replay setting): they are shown as stored until
    `tbmm runs rescore` verifies their artifacts again."""
    current = {t.slug: t.verdict_digest for t in tasks}
    by_entry: dict[str, set[str]] = {}
    for r in rows:
        rep = r.report if isinstance(r.report, dict) else {}
        if "exit_code" not in rep:  # no verdict (an infrastructure error): nothing to compare
            continue
        if r.task in current and rep.get("task_digest") != current[r.task]:
            by_entry.setdefault(r.entry, set()).add(r.task)
    return [
        f"{e}: stored verdicts of {len(ts)} task(s) were reached against older task data "
        f"({', '.join(sorted(ts)[:3])}{', ...' if len(ts) > 3 else ''}); `tbmm runs rescore` "
        "verifies their stored artifacts against the current task data"
        for e, ts in sorted(by_entry.items())
    ]
