"""`tbmm leaderboard`, `report` and `view`: what a results store shows.

Why a module of its own: the readers of the results store (tables, HTML, the web viewer)
change with the reports, not with the verdict; `tbmm.cli.root` mounts each when named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tbmm.cli.root import TasksRoot, _fail, console, err
from tbmm.suite.tasks import TASKS_ROOT

DbOpt = Annotated[Path, typer.Option("--db", help="SQLite results store.")]


def leaderboard_cmd(
    db: DbOpt = Path("runs/tbmm.sqlite"),
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="auto (table on a terminal, md when piped) | table | md | csv | json"
        ),
    ] = "auto",
    plots: Annotated[
        Path | None, typer.Option("--plots", help="Write PNG plots to this folder.")
    ] = None,
    tasks_root: TasksRoot = TASKS_ROOT,
) -> None:
    """One row per entry: artifacts, O-Eval mean ± std, Multi-BO (against each task's stored F), cost, gate-zeroed cells; per-task and per-suite tables."""
    from tbmm.reports.leaderboard_render import to_csv, to_json, to_markdown, to_table
    from tbmm.reports.results import ResultsError, leaderboard

    if fmt not in ("auto", "table", "md", "csv", "json"):
        raise _fail(f"unknown format {fmt!r}: use auto, table, md, csv or json")
    try:
        lb, _, _ = leaderboard(db, tasks_root)
    except ResultsError as exc:
        raise _fail(str(exc)) from exc
    if fmt == "auto":
        fmt = "table" if console.is_terminal else "md"
    if fmt == "table":
        console.print(to_table(lb, console.width))
    elif fmt == "md":
        print(to_markdown(lb))
    elif fmt == "csv":
        print(to_csv(lb), end="")
    else:
        print(json.dumps(to_json(lb), ensure_ascii=False, indent=1))
    if plots is not None:
        from tbmm.reports.plots import write_plots

        for p in write_plots(lb, plots):
            err.print(f"wrote {p}")


def report_cmd(
    html: Annotated[Path, typer.Option("--html", help="Output HTML file.")],
    db: DbOpt = Path("runs/tbmm.sqlite"),
    tasks_root: TasksRoot = TASKS_ROOT,
) -> None:
    """A static, self-contained HTML report: tables, plots, per-task drill-down with provenance."""
    from tbmm.reports.report import write_html
    from tbmm.reports.results import ResultsError, leaderboard

    try:
        lb, rows, tasks = leaderboard(db, tasks_root)
    except ResultsError as exc:
        raise _fail(str(exc)) from exc
    out = write_html(lb, rows, tasks, html)
    console.print(f"wrote {out}")
    console.print(
        f"browse every trial (verdict, trajectory, files): tbmm view --db {db}",
        highlight=False,
        soft_wrap=True,
    )


def view(
    db: Annotated[Path, typer.Option("--db", help="SQLite results store.")] = Path(
        "runs/tbmm.sqlite"
    ),
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8765,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="Another Host name to answer (repeatable); by default only 127.0.0.1, "
            "localhost and --host are, so a DNS-rebinding web page cannot read the store.",
        ),
    ] = None,
) -> None:
    """Local web viewer of a results store: the leaderboard and entries, each trial's
    verdict (rewards, gate checks, replayed values with Lean's scope, references) and ATIF
    trajectory step by step, and its files. Read-only; no external resource."""
    if not db.is_file():
        raise _fail(f"no results store at {db}")
    from tbmm.reports.viewer import run

    try:
        run(
            db,
            host,
            port,
            hosts=allow_host or [],
            say=lambda m: err.print(m, highlight=False, soft_wrap=True),
        )
    except RuntimeError as exc:
        raise _fail(str(exc)) from exc
