"""`tbmm run`: mount with `app.command("run")(run_command)` or `app.add_typer(run_app, name="run")`.

Exit codes of `tbmm run`: 0 every planned trial ran (whatever its score), or --limit or the
--max-cost budget left some for later; 2 bad usage,
refused configuration (isolation, incomplete task, a replay folder missing or without the
artifacts, a model the model table does not know and no --price-in/--price-out, a
`--model PROVIDER/NAME` whose provider is not in harness/agents/providers.toml or whose key
variable is unset, an unusable path or results store), before any trial and with nothing
stored; 3 the pre-flight check
failed (model endpoint unreachable, rejecting the key or not knowing the model, agent
program missing in the sandbox): no trial ran; 4 some trials ended `error` (an
infrastructure failure or a verification with no verdict: stored with their cause, not
scored; `--resume` runs them again).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from harness.agents.builtin import LLMAgent
from harness.agents.errors import ConfigError, PreflightError
from harness.agents.model_table import (
    TABLE,
    ModelTableError,
    declares_vision,
    lookup,
    resolve_pricing,
)
from harness.agents.providers import API_STYLES, ModelRoute, ProviderError, resolve
from harness.agents.registry import TEMPLATES, Agent, CommandAgent, OracleAgent, ReplayAgent
from harness.agents.usage import Pricing, TrialCaps
from harness.runs.runner import (
    DEFAULT_ARTIFACT_MAX_BYTES,
    SweepSummary,
    check_config,
    run_sweep,
    trial_limits,
)
from harness.sandbox.backends import Backend, choose_backend
from harness.sandbox.isolation import missing, table
from tbmm.cli.help import typer_app

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
    replay_allow_missing: bool = False,
    caps: TrialCaps | None = None,
    route: ModelRoute | None = None,
    max_output_tokens: int | None = None,
) -> Agent:
    """The agent behind an `--agent` name (see AGENTS). Prices are not the agent's: the
    runner costs every agent's tokens with the sweep's pricing."""
    if name == "oracle":
        return OracleAgent()
    if name == "replay":
        if replay_dir is None:
            raise typer.BadParameter("--agent replay needs --replay-dir")
        return ReplayAgent(replay_dir, allow_missing=replay_allow_missing)
    if name == "llm":
        return LLMAgent(
            base_url=base_url,
            api_key_env=api_key_env,
            max_turns=max_turns,
            temperature=temperature,
            vision=vision,
            max_retries=retries,
            caps=caps,
            route=route,
            max_output_tokens=max_output_tokens,
        )
    if name == "command":
        if not agent_cmd:
            raise typer.BadParameter("--agent command needs --agent-cmd 'shell command'")
        if agent_provider not in ("openai", "anthropic", "none"):
            raise typer.BadParameter("--agent-provider: openai, anthropic or none")
        return CommandAgent.from_shell(
            agent_cmd, provider=agent_provider, max_retries=retries, caps=caps, route=route
        )
    if name in TEMPLATES:
        return CommandAgent(name, max_retries=retries, caps=caps, route=route)
    raise typer.BadParameter(f"unknown agent {name!r}; one of {', '.join(AGENTS)}")


MODEL_AGENTS = ("llm", *TEMPLATES)  # agents that cannot run without --model
# the API style each CLI agent's program speaks (None: any of its provider family's)
TEMPLATE_API: dict[str, str | None] = {
    "codex": "responses",
    "opencode": "responses",
    "claude-code": "anthropic",
}


def _provider_names() -> str:
    """The providers of the table, for --help (which must stay true to the data)."""
    from harness.agents.providers import providers

    try:
        return ", ".join(providers())
    except ProviderError:
        return "the table cannot be read"


def model_route(
    agent: str,
    model: str | None,
    *,
    base_url: str | None,
    api: str | None,
    api_key_env: str | None,
    agent_provider: str = "openai",
) -> ModelRoute | None:
    """The route of `--model` for an agent that calls a model (None for the others, and
    for a CLI agent given a bare model name: its endpoint comes from the environment as
    before). ProviderError (exit 2) when the provider is unknown, its key variable is unset,
    or it does not serve the API style the agent speaks."""
    if not model:
        return None
    if agent == "llm":
        route = resolve(model, base_url=base_url, api=api, api_key_env=api_key_env)
    elif agent in TEMPLATES or (agent == "command" and agent_provider != "none"):
        if api is not None:
            raise ProviderError(
                f"--api applies to --agent llm only (the {agent} program picks its own)"
            )
        speaks = TEMPLATE_API.get(agent) or ("anthropic" if agent_provider == "anthropic" else None)
        try:
            route = resolve(model, base_url=base_url, api=speaks, api_key_env=api_key_env)
        except ProviderError as exc:
            raise ProviderError(
                f"--agent {agent} speaks the {speaks or 'OpenAI'} API: {exc}"
            ) from exc
        if route.provider is None:
            return None
        if speaks is None and route.family != "openai":
            raise ProviderError(
                f"--model {model}: --agent command --agent-provider {agent_provider} speaks the "
                f"OpenAI APIs; provider {route.provider!r} serves {route.api}"
            )
    else:
        return None
    why = route.key_problem()
    if why:
        raise ProviderError(why)
    return route


def model_problems(
    the_agent: Agent, agent: str, model: str | None, price_in: float | None, price_out: float | None
) -> list[str]:
    """An agent that calls a model needs one the model table knows, or explicit prices: a
    typo would otherwise run a whole sweep at an unknown cost against a model that may not
    exist (the pre-flight then asks the endpoint too)."""
    if agent in MODEL_AGENTS and not model:
        return [f"--agent {agent} needs --model"]
    upstream = getattr(the_agent, "upstream", None)  # a command agent behind the proxy
    if agent not in MODEL_AGENTS and not (callable(upstream) and upstream() is not None):
        return []
    if model and lookup(model) is None and (price_in is None or price_out is None):
        user = os.environ.get("TBMM_MODELS")
        return [
            f"--model {model!r} is not in the model table ({TABLE}"
            + (f", $TBMM_MODELS={user}" if user else "")
            + "): check the name, add a row, or price it with --price-in and --price-out"
        ]
    return []


def path_problems(db: Path, tasks_root: Path | None) -> list[str]:
    """The results store can be created or opened for writing; a given tasks root exists."""
    problems = []
    if tasks_root is not None and not tasks_root.is_dir():
        problems.append(f"--tasks-root {tasks_root}: no such folder")
    if db.exists():
        if not db.is_file():
            problems.append(f"--db {db}: not a regular file")
        elif not os.access(db, os.R_OK | os.W_OK):
            problems.append(f"--db {db}: not readable and writable")
        return problems
    parent = db.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        problems.append(f"--db {db}: {parent} is not a folder")
    elif not os.access(parent, os.W_OK | os.X_OK):
        problems.append(f"--db {db}: cannot create it under {parent} (not writable)")
    return problems


def select_tasks(
    spec: str,
    root: Path | None = None,
    *,
    allow_incomplete: bool = False,
    note: Any = None,
) -> list[Any]:
    """`all` or comma-separated slugs, loaded with tbmm.suite.tasks.

    An incomplete task (an official attachment missing) cannot be solved as posed: `all`
    leaves it out (saying so through `note`), a slug naming it is refused, unless
    `allow_incomplete`."""
    from tbmm.suite.tasks import TASKS_ROOT, find_task, load_suite

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
    model: str | None = typer.Option(
        None,
        "--model",
        help=f"PROVIDER/NAME with a provider of harness/agents/providers.toml ({_provider_names()}), "
        "or a bare NAME at an OpenAI-compatible --base-url; priced by the model table, or by "
        "--price-in and --price-out",
    ),
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
        None,
        "--replay-dir",
        help="artifacts for --agent replay: <slug>/<seed>/<slug>_result.json or "
        "<slug>_result.json; refused (exit 2) when missing or lacking a selected trial's",
    ),
    replay_allow_missing: bool = typer.Option(
        False,
        "--replay-allow-missing",
        help="--agent replay: score a selected (task, seed) the folder has no artifact for as "
        "a missing artifact instead of refusing (at least one must be there)",
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
        None,
        "--base-url",
        help="the model API's base URL, overriding the provider table's (e.g. a vLLM or "
        "llama.cpp server: --model local/NAME --base-url http://127.0.0.1:8000/v1)",
    ),
    api_key_env: str | None = typer.Option(
        None,
        "--api-key-env",
        help="environment variable holding the API key (default: the provider's, "
        "OPENAI_API_KEY for a bare model name)",
    ),
    api: str | None = typer.Option(
        None,
        "--api",
        help="API style of --agent llm: chat (OpenAI Chat Completions) | responses (OpenAI "
        "Responses) | anthropic (Anthropic Messages); default: the provider's",
    ),
    max_turns: int = typer.Option(60, "--max-turns"),
    max_output_tokens: int | None = typer.Option(
        None,
        "--max-output-tokens",
        min=1,
        help="cap on each response's tokens (llm): max_completion_tokens, max_output_tokens "
        "or max_tokens by API style; default the API's own (Anthropic Messages: 8192)",
    ),
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
    max_requests: int | None = typer.Option(
        None,
        "--max-requests",
        min=1,
        help="per-trial cap on model requests: the first request beyond it ends the trial "
        "(budget_exceeded, the agent's own failure); default no cap",
    ),
    max_tokens: int | None = typer.Option(
        None,
        "--max-tokens",
        min=1,
        help="per-trial cap on tokens (prompt, cached included, + output); as --max-requests",
    ),
    max_trial_cost: float | None = typer.Option(
        None,
        "--max-trial-cost",
        help="per-trial cap on cost in USD (needs prices); as --max-requests",
    ),
    max_cost: float | None = typer.Option(
        None,
        "--max-cost",
        help="the entry's budget in USD (needs prices): a trial starts only while the "
        "entry's recorded cost (earlier sweeps included) plus an estimate for each running "
        "trial (its cost so far, at least --max-trial-cost or the entry's costliest stored "
        "trial) is below it; the trials left are recorded and the entry is partial until a "
        "--resume runs them. The spend can pass the budget by the last trial started plus "
        "what running trials cost beyond their estimates: with --max-trial-cost C, by less "
        "than C plus that cap's own overshoot (responses in flight when a trial reaches it)",
    ),
    limit: int | None = typer.Option(
        None,
        "--limit",
        min=1,
        help="start at most N of the trials to run (the rest stay missing, counted 0, "
        "until a later --resume)",
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
    and refused by name unless --allow-incomplete. Exit codes: 0 all trials ran (or
    --limit / --max-cost left some for later), 2 usage or configuration refused (replay
    folder missing or without the artifacts, model not in the model table and not priced,
    unknown provider or its key variable unset, unusable path: nothing stored), 3 pre-flight failed
    (nothing ran), 4 some trials ended with an infrastructure error or no verdict (stored,
    not scored; rerun them with --resume)."""
    console = Console(stderr=True)
    if backend == "harbor":
        if limit is not None or max_cost is not None or api is not None:
            _refuse(console, ["--limit, --max-cost and --api do not apply to --backend harbor"])
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
        console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from exc
    try:
        caps = TrialCaps(max_requests, max_tokens, max_trial_cost)
        if max_cost is not None and not max_cost > 0:
            raise ValueError(f"the --max-cost budget must be positive, not {max_cost!r}")
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from exc
    refusal = model_refusal(agent, model, agent_provider, caps, pricing, max_cost)
    if refusal:
        console.print(f"[red]error:[/red] {refusal}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE)
    if pricing is None and (price_in is not None or price_out is not None):
        console.print(
            "[yellow]note:[/yellow] no model-table row for this model: give both --price-in "
            "and --price-out to cost it; costs will be reported unknown",
            highlight=False,
        )
    if api is not None and api not in API_STYLES:
        _refuse(console, [f"--api {api!r}: one of {', '.join(API_STYLES)}"])
    try:
        route = model_route(
            agent,
            model,
            base_url=base_url,
            api=api,
            api_key_env=api_key_env,
            agent_provider=agent_provider,
        )
    except ProviderError as exc:
        _refuse(console, [str(exc)])
    if route is not None and route.provider is not None:
        console.print(
            f"model {route.name!r} from provider {route.provider} at {route.base_url} "
            f"({route.api} API, key ${route.key_env})",
            highlight=False,
        )
    the_agent = build_agent(
        agent,
        replay_dir=replay_dir,
        agent_cmd=agent_cmd,
        base_url=base_url,
        api_key_env=api_key_env or "OPENAI_API_KEY",
        max_turns=max_turns,
        temperature=temperature,
        vision=use_vision,
        retries=retries,
        agent_provider=agent_provider,
        replay_allow_missing=replay_allow_missing,
        caps=caps,
        route=route,
        max_output_tokens=max_output_tokens,
    )
    problems = model_problems(the_agent, agent, model, price_in, price_out)
    problems += path_problems(db, tasks_root)
    # limits that would turn every trial into the agent's failure (a timeout, a rejected file)
    if timeout is not None and not timeout > 0:
        problems.append(f"--timeout {timeout:g}: must be above 0 seconds")
    if artifact_max_bytes < 1:
        problems.append(f"--artifact-max-bytes {artifact_max_bytes}: must be at least 1")
    if problems:
        _refuse(console, problems)
    if agent == "llm":
        console.print(
            f"figures as images: {'on' if use_vision else 'off'} "
            f"({'--vision/--no-vision' if vision is not None else 'model table'})",
            highlight=False,
        )
    try:
        selected = select_tasks(
            tasks,
            tasks_root,
            allow_incomplete=allow_incomplete,
            note=lambda msg: console.print(f"[yellow]note:[/yellow] {msg}", highlight=False),
        )
        check_config(the_agent, selected, list(range(seeds)))
        chosen, why = choose_backend(backend)
        console.print(why)
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
            limit,
            max_cost,
        )
    except ConfigError as exc:
        _refuse(console, exc.problems)
    except PreflightError as exc:
        console.print("[red]pre-flight check failed, no trial ran:[/red]", highlight=False)
        for problem in exc.problems:
            console.print(f"  - {problem}", highlight=False, markup=False)
        raise typer.Exit(EXIT_PREFLIGHT) from exc
    except (RuntimeError, ValueError, KeyError, sqlite3.Error, OSError) as exc:
        console.print(f"[red]error:[/red] {str(exc).strip(chr(39))}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_USAGE) from exc
    console.print(
        f"{summary.entry_id}: ran {summary.done} (failed {summary.failed}, errors "
        f"{summary.errored}), skipped {summary.skipped} already stored, "
        f"{summary.wall_s:.1f}s -> {db}",
        highlight=False,
    )
    if summary.stopped:
        console.print(f"[yellow]partial:[/yellow] {summary.stopped}", highlight=False)
    elif summary.not_started:
        console.print(
            f"{summary.not_started} trial(s) left for a later --resume (--limit)", highlight=False
        )
    _print_leaderboard(db, tasks_root)
    if summary.errored:
        causes = sorted({r.error or "" for r in summary.records if r.status == "error"})
        console.print(
            f"[red]{summary.errored} trial(s) ended with an infrastructure error or no verdict"
            f"[/red] (not scored; rerun with --resume): "
            + escape("; ".join(c[:200] for c in causes[:5])),  # causes quote the upstream
            highlight=False,
        )
        raise typer.Exit(EXIT_TRIAL_ERRORS)


def _refuse(console: Console, problems: list[str]) -> None:
    """Configuration refused: each problem, exit 2; no trial ran, nothing was stored."""
    console.print("[red]configuration refused, no trial ran:[/red]", highlight=False)
    for problem in problems:
        console.print(f"  - {problem}", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


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
    from harness.harbor.ingest import IngestError
    from harness.harbor.run import HarborUnavailable, run_with_harbor

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
        console.print(f"[red]error:[/red] {str(exc).strip(chr(39))}", highlight=False, soft_wrap=True)
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


def model_refusal(
    agent: str,
    model: str | None,
    provider: str,
    caps: TrialCaps,
    pricing: Pricing | None,
    budget_usd: float | None = None,
) -> str | None:
    """Why the model settings are refused before any trial, or None. An agent whose traffic
    goes through the proxy needs --model (the proxy pins every request to it); a cost cap
    needs prices (an unpriced response would never count against it)."""
    proxied = agent in TEMPLATES or (agent == "command" and provider != "none")
    if (proxied or agent == "llm") and not model:
        return f"--agent {agent} needs --model: every model request is pinned to it"
    if caps.cost_usd is not None and pricing is None:
        return (
            "--max-trial-cost needs prices: a model-table row for --model, or --price-in and "
            "--price-out"
        )
    if budget_usd is not None and pricing is None and agent not in ("oracle",):
        return (
            "--max-cost needs prices (an unpriced trial would never count against the budget): "
            "a model-table row for --model, or --price-in and --price-out"
        )
    return None


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
    limit: int | None = None,
    budget_usd: float | None = None,
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
        limit=limit,
        budget_usd=budget_usd,
    )


def _print_leaderboard(db: Path, tasks_root: Path | None) -> None:
    """The leaderboard of everything in the store, on stdout, after every sweep."""
    from tbmm.reports.leaderboard_render import to_markdown, to_table
    from tbmm.reports.results import ResultsError, leaderboard
    from tbmm.suite.tasks import TASKS_ROOT, TaskFormatError

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


run_app = typer_app(help="Run agents on tasks.", invoke_without_command=True)
run_app.callback(invoke_without_command=True)(run_command)
