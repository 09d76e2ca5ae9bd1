"""`tbmm run`: mount with `app.command("run")(run_command)` or `app.add_typer(run_app, name="run")`.

Exit codes of `tbmm run`: 0 every planned trial ran (whatever its score); 2 bad usage,
refused configuration (isolation, incomplete task) or an unusable results store; 3 the
pre-flight check failed (model endpoint unreachable or rejecting the key, agent program
missing in the sandbox): no trial ran; 4 some trials ended with an infrastructure `error`
(stored with their cause, not scored; `--resume` runs them again).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from harness.agents import TEMPLATES, Agent, CommandAgent, OracleAgent, ReplayAgent
from harness.backends import Backend, choose_backend
from harness.errors import PreflightError
from harness.isolation import missing, table
from harness.llm_agent import LLMAgent
from harness.model_table import ModelTableError, declares_vision, resolve_pricing
from harness.runner import DEFAULT_ARTIFACT_MAX_BYTES, SweepSummary, run_sweep, trial_limits
from harness.usage import Pricing

AGENTS = ("oracle", "replay", "llm", "command", *TEMPLATES)
EXIT_USAGE = 2
EXIT_PREFLIGHT = 3
EXIT_TRIAL_ERRORS = 4


def build_agent(
    name: str,
    *,
    replay_dir: Path | None = None,
    agent_cmd: str | None = None,
    base_url: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_turns: int = 60,
    temperature: float | None = None,
    vision: bool = False,
    retries: int = 6,
    agent_provider: str = "openai",
) -> Agent:
    """The agent behind an `--agent` name (see AGENTS). Prices are not the agent's: the
    runner costs every agent's tokens with the sweep's pricing."""
    if name == "oracle":
        return OracleAgent()
    if name == "replay":
        if replay_dir is None:
            raise typer.BadParameter("--agent replay needs --replay-dir")
        return ReplayAgent(replay_dir)
    if name == "llm":
        return LLMAgent(
            base_url=base_url,
            api_key_env=api_key_env,
            max_turns=max_turns,
            temperature=temperature,
            vision=vision,
            max_retries=retries,
        )
    if name == "command":
        if not agent_cmd:
            raise typer.BadParameter("--agent command needs --agent-cmd 'shell command'")
        if agent_provider not in ("openai", "anthropic", "none"):
            raise typer.BadParameter("--agent-provider: openai, anthropic or none")
        return CommandAgent.from_shell(agent_cmd, provider=agent_provider, max_retries=retries)
    if name in TEMPLATES:
        return CommandAgent(name, max_retries=retries)
    raise typer.BadParameter(f"unknown agent {name!r}; one of {', '.join(AGENTS)}")


def select_tasks(
    spec: str,
    root: Path | None = None,
    *,
    allow_incomplete: bool = False,
    note: Any = None,
) -> list[Any]:
    """`all` or comma-separated slugs, loaded with tbmm.tasks.

    An incomplete task (an official attachment missing) cannot be solved as posed: `all`
    leaves it out (saying so through `note`), a slug naming it is refused, unless
    `allow_incomplete`."""
    from tbmm.tasks import TASKS_ROOT, find_task, load_suite

    root = root or TASKS_ROOT
    if spec.strip() == "all":
        found = load_suite(root)
        if not found:
            raise typer.BadParameter(f"no tasks under {root}")
        if allow_incomplete:
            return found
        skipped = [t for t in found if t.incomplete]
        if skipped and note is not None:
            note(
                f"skipping {len(skipped)} incomplete task(s) (missing attachments; "
                f"--allow-incomplete runs them): "
                + "; ".join(f"{t.slug} ({', '.join(t.missing_attachments)})" for t in skipped)
            )
        return [t for t in found if not t.incomplete]
    chosen = [find_task(s.strip(), root) for s in spec.split(",") if s.strip()]
    refused = [t for t in chosen if t.incomplete and not allow_incomplete]
    if refused:
        raise ValueError(
            "incomplete task(s), an official attachment is missing: "
            + "; ".join(f"{t.slug} ({', '.join(t.missing_attachments)})" for t in refused)
            + " — pass --allow-incomplete to run them anyway"
        )
    return chosen


def run_command(
    agent: str = typer.Option(..., "--agent", help=f"one of: {', '.join(AGENTS)}"),
    model: str | None = typer.Option(None, "--model", help="model name (llm / CLI agents)"),
    tasks: str = typer.Option("all", "--tasks", help="all | SLUG[,SLUG...]"),
    seeds: int = typer.Option(1, "--seeds", min=1, help="seeds 0..N-1 per task"),
    backend: str = typer.Option(
        "auto", "--backend", help="auto | docker | sandbox | bwrap | harbor (needs --env)"
    ),
    harbor_env: str | None = typer.Option(
        None, "--env", help="--backend harbor: Harbor environment (docker, daytona, modal, ...)"
    ),
    harbor_dataset: Path | None = typer.Option(
        None, "--harbor-dataset", help="--backend harbor: a `tbmm export harbor` dataset to run"
    ),
    allow_weaker_isolation: bool = typer.Option(
        False,
        "--allow-weaker-isolation",
        help="run even when an isolation property is not enforced on this machine",
    ),
    concurrency: int = typer.Option(1, "--concurrency", min=1),
    db: Path = typer.Option(Path("runs/tbmm.sqlite"), "--db", help="SQLite results DB"),
    resume: bool = typer.Option(False, "--resume", help="run only (entry, task, seed) missing"),
    timeout: float | None = typer.Option(
        None, "--timeout", help="override the task's agent timeout (s)"
    ),
    replay_dir: Path | None = typer.Option(
        None, "--replay-dir", help="artifacts for --agent replay"
    ),
    agent_cmd: str | None = typer.Option(
        None, "--agent-cmd", help="shell command for --agent command"
    ),
    agent_provider: str = typer.Option(
        "openai",
        "--agent-provider",
        help="model API the --agent command uses through the proxy: openai | anthropic | "
        "none (no proxy, no endpoint pre-flight)",
    ),
    base_url: str | None = typer.Option(
        None, "--base-url", help="OpenAI-compatible base URL (llm)"
    ),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env"),
    max_turns: int = typer.Option(60, "--max-turns"),
    retries: int = typer.Option(
        6,
        "--retries",
        min=0,
        help="retries of a failed model request (429/5xx/connection; backoff 1 s doubling); "
        "when they run out the trial is an infrastructure error",
    ),
    temperature: float | None = typer.Option(None, "--temperature"),
    price_in: float | None = typer.Option(
        None, "--price-in", help="USD per 1M uncached input tokens (overrides the model table)"
    ),
    price_out: float | None = typer.Option(None, "--price-out", help="USD per 1M output tokens"),
    price_cache_read: float | None = typer.Option(
        None, "--price-cache-read", help="USD per 1M input tokens read from the cache"
    ),
    price_cache_write: float | None = typer.Option(
        None, "--price-cache-write", help="USD per 1M input tokens written to the cache"
    ),
    name: str | None = typer.Option(
        None, "--name", help="display name of the entry in tables and plots"
    ),
    vision: bool | None = typer.Option(
        None,
        "--vision/--no-vision",
        help="send the statement's figures as images (llm agent); default: on when the "
        "model's row in the model table declares vision",
    ),
    artifact_max_bytes: int = typer.Option(DEFAULT_ARTIFACT_MAX_BYTES, "--artifact-max-bytes"),
    tasks_root: Path | None = typer.Option(None, "--tasks-root"),
    allow_incomplete: bool = typer.Option(
        False,
        "--allow-incomplete",
        help="also run tasks whose official attachments are missing (left out of headline means)",
    ),
) -> None:
    """Run an agent on tasks x seeds, verify each artifact, store everything.

    Tasks with a missing official attachment ("incomplete") are skipped by `--tasks all`
    and refused by name unless --allow-incomplete. Exit codes: 0 all trials ran, 2 usage
    or configuration refused, 3 pre-flight failed (nothing ran), 4 some trials ended with
    an infrastructure error (stored, not scored; rerun them with --resume)."""
    console = Console(stderr=True)
    if backend == "harbor":
        _run_harbor(agent, model, tasks, seeds, harbor_env, harbor_dataset, concurrency, db,
                    resume, tasks_root, allow_incomplete, console)  # fmt: skip
        return
    try:
        pricing = resolve_pricing(
            model,
            price_in=price_in,
            price_out=price_out,
            price_cache_read=price_cache_read,
            price_cache_write=price_cache_write,
        )
        use_vision = declares_vision(model) if vision is None else vision
    except ModelTableError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    if pricing is None and (price_in is not None or price_out is not None):
        console.print(
            "[yellow]note:[/yellow] no model-table row for this model: give both --price-in "
            "and --price-out to cost it; costs will be reported unknown",
            highlight=False,
        )
    the_agent = build_agent(
        agent,
        replay_dir=replay_dir,
        agent_cmd=agent_cmd,
        base_url=base_url,
        api_key_env=api_key_env,
        max_turns=max_turns,
        temperature=temperature,
        vision=use_vision,
        retries=retries,
        agent_provider=agent_provider,
    )
    if agent == "llm":
        console.print(
            f"figures as images: {'on' if use_vision else 'off'} "
            f"({'--vision/--no-vision' if vision is not None else 'model table'})",
            highlight=False,
        )
    try:
        chosen, why = choose_backend(backend)
        console.print(why)
        selected = select_tasks(
            tasks,
            tasks_root,
            allow_incomplete=allow_incomplete,
            note=lambda msg: console.print(f"[yellow]note:[/yellow] {msg}", highlight=False),
        )
        check_isolation(chosen, selected, timeout, allow_weaker_isolation, console)
        summary = _sweep(
            the_agent,
            model,
            selected,
            seeds,
            chosen,
            concurrency,
            db,
            resume,
            timeout,
            artifact_max_bytes,
            console,
            pricing,
            name,
        )
    except PreflightError as exc:
        console.print("[red]pre-flight check failed, no trial ran:[/red]", highlight=False)
        for problem in exc.problems:
            console.print(f"  - {problem}", highlight=False, markup=False)
        raise typer.Exit(EXIT_PREFLIGHT) from exc
    except (RuntimeError, ValueError, KeyError, sqlite3.Error, OSError) as exc:
        console.print(f"[red]error:[/red] {str(exc).strip(chr(39))}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from exc
    console.print(
        f"{summary.entry_id}: ran {summary.done} (failed {summary.failed}, errors "
        f"{summary.errored}), skipped {summary.skipped} already stored, "
        f"{summary.wall_s:.1f}s -> {db}",
        highlight=False,
    )
    _print_leaderboard(db, tasks_root)
    if summary.errored:
        causes = sorted({r.error or "" for r in summary.records if r.status == "error"})
        console.print(
            f"[red]{summary.errored} trial(s) ended with an infrastructure error[/red] (not "
            f"scored; rerun with --resume): " + "; ".join(c[:200] for c in causes[:5]),
            highlight=False,
        )
        raise typer.Exit(EXIT_TRIAL_ERRORS)


def _run_harbor(
    agent: str,
    model: str | None,
    tasks: str,
    seeds: int,
    env: str | None,
    dataset: Path | None,
    concurrency: int,
    db: Path,
    resume: bool,
    tasks_root: Path | None,
    allow_incomplete: bool,
    console: Console,
) -> None:
    """`--backend harbor`: Harbor runs the sweep on `--env`, tbmm ingests the job."""
    from harness.harbor_ingest import IngestError
    from harness.harbor_run import HarborUnavailable, run_with_harbor

    say = lambda m: console.print(m, highlight=False)  # noqa: E731
    try:
        if env is None:
            raise ValueError(
                "--backend harbor needs --env (a Harbor environment: docker, daytona, modal, ...)"
            )
        if resume:
            raise ValueError(
                "--resume does not apply to --backend harbor: each run adds --seeds attempts"
            )
        selected = select_tasks(tasks, tasks_root, allow_incomplete=allow_incomplete, note=say)
        summary, code = run_with_harbor(
            agent=agent, model=model, tasks=selected, seeds=seeds, env=env,
            concurrency=concurrency, db=db, dataset=dataset, say=say,
        )  # fmt: skip
    except (HarborUnavailable, IngestError, RuntimeError, ValueError, KeyError, OSError) as exc:
        console.print(f"[red]error:[/red] {str(exc).strip(chr(39))}", highlight=False)
        raise typer.Exit(2) from exc
    for line in summary.errors:
        console.print(f"[yellow]error, not scored:[/yellow] {line}", highlight=False)
    console.print(
        f"harbor exited {code}; stored {len(summary.stored)} trial(s) "
        f"({', '.join(summary.entries) or 'no entry'}), {len(summary.errors)} infrastructure "
        f"error(s) stored as errors, not scores -> {db}",
        highlight=False,
    )
    _print_leaderboard(db, tasks_root)
    if code != 0 or summary.errors:
        raise typer.Exit(1)


def check_isolation(
    backend: Backend,
    tasks: list[Any],
    timeout: float | None,
    allow_weaker: bool,
    console: Console,
) -> None:
    """Print what enforces each isolation property for the selected tasks' limits; refuse
    (RuntimeError) when one is missing, unless the user allowed weaker isolation."""
    if not tasks:
        return
    limits = {trial_limits(t, timeout) for t in tasks}
    for lim in sorted(limits, key=lambda x: (x.cpus, x.memory_mb, x.storage_mb, x.wall_sec)):
        iso = backend.isolation(lim)
        title = (
            f"isolation ({lim.cpus} CPUs, {lim.memory_mb} MB memory, {lim.storage_mb} MB "
            f"storage, {lim.pids} processes, timeout {lim.wall_sec:g} s; from task.toml)"
        )
        console.print(table(iso, title))
        gaps = missing(iso)
        if gaps and not allow_weaker:
            raise RuntimeError(
                f"refusing to run: not enforced here: {', '.join(gaps)} "
                "(pass --allow-weaker-isolation to run anyway)"
            )
        if gaps:
            console.print(f"[yellow]weaker isolation allowed: {', '.join(gaps)} not enforced")


def _sweep(
    the_agent: Agent,
    model: str | None,
    tasks: list[Any],
    seeds: int,
    chosen: Backend,
    concurrency: int,
    db: Path,
    resume: bool,
    timeout: float | None,
    artifact_max_bytes: int,
    console: Console,
    pricing: Pricing | None = None,
    name: str | None = None,
) -> SweepSummary:
    """Run the sweep (errors surface as one-line messages in the caller)."""
    return run_sweep(
        the_agent,
        model,
        tasks,
        seeds,
        chosen,
        concurrency,
        db,
        resume,
        timeout=timeout,
        artifact_max_bytes=artifact_max_bytes,
        console=console,
        pricing=pricing,
        name=name,
    )


def _print_leaderboard(db: Path, tasks_root: Path | None) -> None:
    """The leaderboard of everything in the store, on stdout, after every sweep."""
    from tbmm.leaderboard import to_markdown, to_table
    from tbmm.results import ResultsError, leaderboard
    from tbmm.tasks import TASKS_ROOT, TaskFormatError

    try:
        lb, _, _ = leaderboard(db, tasks_root or TASKS_ROOT)
    except (ResultsError, TaskFormatError) as exc:
        Console(stderr=True).print(f"leaderboard unavailable: {exc}", highlight=False)
        return
    out = Console()
    if out.is_terminal:
        out.print(to_table(lb, out.width))
    else:  # piped or logged: Markdown reads anywhere, whatever the width
        print(to_markdown(lb))


run_app = typer.Typer(help="Run agents on tasks.", invoke_without_command=True)
run_app.callback(invoke_without_command=True)(run_command)
