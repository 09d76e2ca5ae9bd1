"""`tbmm export harbor` and `tbmm ingest harbor` (mounted by tbmm.cli.root)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tbmm.cli.help import typer_app
from tbmm.suite.stack import PYTHON_IMAGE

err = Console(stderr=True)
_PYTHON_TAG = PYTHON_IMAGE.rsplit("/", 1)[-1].split("@")[0]  # python:3.11-slim-bookworm

export_app = typer_app(
    help="Export the suite for other frameworks.", no_args_is_help=True, add_completion=False
)
ingest_app = typer_app(
    help="Read results produced elsewhere into the results store.",
    no_args_is_help=True,
    add_completion=False,
)


@export_app.callback()
def _export() -> None:
    """Export the suite for other frameworks (`tbmm export harbor OUT`)."""


@ingest_app.callback()
def _ingest() -> None:
    """Read results produced elsewhere into the results store (`tbmm ingest harbor JOB_DIR`)."""


def _fail(msg: str, code: int = 2) -> typer.Exit:
    err.print(f"[red]error:[/red] {msg}", highlight=False)
    return typer.Exit(code)


@export_app.command("harbor")
def export_harbor_cmd(
    out: Annotated[Path, typer.Argument(help="Folder to write the Harbor dataset into.")],
    tasks: Annotated[str, typer.Option("--tasks", help="all | SLUG[,SLUG...]")] = "all",
    wheelhouse: Annotated[
        Path | None,
        typer.Option(
            "--wheelhouse",
            help="Use this prepared wheelhouse (one tbmm wheel + requirements.txt) instead "
            "of building one from the checkout.",
        ),
    ] = None,
    verifier_base: Annotated[
        str,
        typer.Option(
            "--verifier-base",
            help="Base image of the verifier environment (Python 3.11, glibc >= 2.35); "
            "pin it by digest (NAME@sha256:...).",
            show_default=f"tbmm.suite.stack.PYTHON_IMAGE, {_PYTHON_TAG} pinned by digest",
        ),
    ] = PYTHON_IMAGE,
    agent_image: Annotated[
        str | None,
        typer.Option(
            "--agent-image",
            help="Build the agent environment FROM this prebuilt image (with python3 and the "
            "scientific stack) instead of the task's own Dockerfile: "
            f"{_PYTHON_TAG} pinned by digest plus the "
            "hashed lock of that stack.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a previous export in OUT.")
    ] = False,
    reward: Annotated[
        str,
        typer.Option(
            "--reward",
            help="What each trial's `reward` (reward.txt, Harbor's mean) holds: skill (skill "
            "over the task's naive floor, the reward of the RL adapters and tbmm serve), "
            "o_eval (the paper's O-Eval) or robust_bo. reward.json has all three either way.",
        ),
    ] = "skill",
    allow_incomplete: Annotated[
        bool,
        typer.Option(
            "--allow-incomplete", help="Also export tasks with a missing official attachment."
        ),
    ] = False,
    tasks_root: Annotated[Path | None, typer.Option("--tasks-root")] = None,
) -> None:
    """Write a self-contained Harbor dataset: task folders (agent environment without any
    scoring data), a separate verifier environment per task that installs tbmm offline,
    tests/test.sh writing Harbor's reward files, and the dataset manifest."""
    from harness.cli.run import select_tasks
    from tbmm.integrations.harbor.export import ExportError, digest_pinned, export_harbor

    for flag, image in (("--verifier-base", verifier_base), ("--agent-image", agent_image)):
        if image is not None and not digest_pinned(image):
            err.print(
                f"[yellow]note:[/yellow] {flag} {image} is not pinned by digest: the tag can "
                "move under the export (`harbor lint` flags it); NAME@sha256:... pins it",
                highlight=False,
            )
    try:
        chosen = select_tasks(
            tasks,
            tasks_root,
            allow_incomplete=allow_incomplete,
            note=lambda m: err.print(f"[yellow]note:[/yellow] {m}", highlight=False),
        )
        res = export_harbor(
            out,
            chosen,
            wheelhouse=wheelhouse,
            verifier_base=verifier_base,
            agent_image=agent_image,
            force=force,
            progress=lambda m: err.print(f"  {m}", highlight=False),
            reward=reward,
        )
    except (ExportError, KeyError, ValueError, OSError) as exc:
        raise _fail(str(exc).strip("'")) from exc
    err.print(
        f"wrote {len(res.tasks)} Harbor tasks to {res.out} (dataset.toml; wheelhouse "
        f"{res.wheelhouse_bytes / 2**20:.1f} MiB, hard-linked into every task's tests/; "
        f"{res.wheel} sha256 {res.wheel_sha256[:16]}…)\n"
        f"run: harbor run -p {res.out} -a oracle -e docker   then: tbmm ingest harbor jobs/<job>",
        highlight=False,
    )


@ingest_app.command("harbor")
def ingest_harbor_cmd(
    job_dir: Annotated[Path, typer.Argument(help="A Harbor job directory (<jobs>/<job>).")],
    db: Annotated[Path, typer.Option("--db", help="SQLite results store.")] = Path(
        "runs/tbmm.sqlite"
    ),
    name: Annotated[
        str | None,
        typer.Option("--name", help="Entry id for these trials (default: harbor-<agent>@<model>)."),
    ] = None,
    tasks_root: Annotated[Path | None, typer.Option("--tasks-root")] = None,
) -> None:
    """Store a Harbor job's trials: each collected artifact verified again by tbmm (Harbor's
    reward kept for the record), ATIF trajectories, agent logs, tokens and cost. Trials whose
    infrastructure failed are listed, not scored. Idempotent: a stored trial is skipped."""
    from harness.harbor.ingest import IngestError, ingest_job
    from harness.runs.store import StoreError

    try:
        s = ingest_job(
            job_dir,
            db,
            name=name,
            tasks_root=tasks_root,
            say=lambda m: err.print(f"  {m}", highlight=False),
        )
    except (IngestError, StoreError, OSError) as exc:
        raise _fail(str(exc)) from exc
    for line in s.errors:
        err.print(f"[yellow]error, not scored:[/yellow] {line}", highlight=False)
    for line in s.skipped:
        err.print(f"[yellow]skipped:[/yellow] {line}", highlight=False)
    for line in s.reward_mismatches:
        err.print(f"[magenta]reward mismatch:[/magenta] {line}", highlight=False)
    err.print(
        f"{job_dir}: stored {len(s.stored)} trial(s) into {db} "
        f"({', '.join(s.entries) or 'no entry'}); {s.already} already stored, "
        f"{len(s.errors)} infrastructure error(s) stored as errors (not scores), "
        f"{s.retried} earlier error(s) replaced by their retry, {len(s.skipped)} skipped",
        highlight=False,
    )
    raise typer.Exit(1 if s.errors else 0)
