"""`tbmm runs list|show|delete|rescore|rename|convert-trajectories|export|import` and
`tbmm agents list|install`."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from harness.agents import installed as cli_agents
from harness.runs.atif import write_trajectory
from harness.runs.store import EVENTS_FILE, TRAJECTORY_FILE, Store, StoreError
from tbmm.cli.help import typer_app
from tbmm.reports.leaderboard import outcome_counts
from tbmm.reports.leaderboard_render import fmt_tokens
from tbmm.reports.tables import Col, emit

runs_app = typer_app(
    no_args_is_help=True, add_completion=False, help="Manage stored entries and trials."
)
agents_app = typer_app(
    no_args_is_help=True, add_completion=False, help="CLI agents: pinned installs."
)

out = Console()
err = Console(stderr=True)

DbOpt = Annotated[Path, typer.Option("--db", help="SQLite results store.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _store(db: Path) -> Store:
    if not db.is_file():
        err.print(f"[red]error:[/red] no results store at {db}", highlight=False)
        raise typer.Exit(2)
    try:
        return Store(db)
    except (StoreError, sqlite3.Error) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from exc


def _entry(store: Store, spec: str) -> str:
    """An entry id from an exact id, a unique prefix, or a display name."""
    ids = [e["entry_id"] for e in store.entries()]
    if spec in ids:
        return spec
    by_name = [e["entry_id"] for e in store.entries() if e["name"] == spec]
    if len(by_name) == 1:
        return by_name[0]
    pref = [e for e in ids if e.startswith(spec)]
    if len(pref) == 1:
        return pref[0]
    what = "ambiguous" if len(pref) > 1 or len(by_name) > 1 else "unknown"
    err.print(
        f"[red]error:[/red] {what} entry {spec!r}; entries: {', '.join(ids) or 'none'}",
        highlight=False,
    )
    raise typer.Exit(2)


def _kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in counts.items())


def _when(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


def _cost(x: float | None) -> str:
    return "n/a" if x is None else f"${x:.4f}"


@runs_app.command("list")
def runs_list(db: DbOpt = Path("runs/tbmm.sqlite"), as_json: JsonOpt = False) -> None:
    """Every entry: id, display name, trials, trials without a score (errors; `partial`
    while any is unresolved), cost, created."""
    store = _store(db)
    entries = store.entries()
    for e in entries:
        e.update(outcome_counts(store.trials(e["entry_id"]), e.get("stopped")))
    store.close()
    if as_json:
        print(json.dumps(entries, indent=1))
        return
    cols = [
        Col("entry", "id"),
        Col("name", "id", keep=50),
        Col("trials", "num"),
        Col("errors", "num"),
        Col("cost", "num", keep=40),
        Col("tokens in/out", "num", keep=25),
        Col("created (UTC)", "num", keep=30),
    ]
    rows = [
        [
            e["entry_id"],
            e["name"] or "",
            str(e["trials"]),
            f"{e['errors']} (partial)" if e["partial"] else str(e["errors"]),
            _cost(e["cost_usd"]),
            f"{fmt_tokens(e['tokens']['input'])} / {fmt_tokens(e['tokens']['output'])}",
            _when(e["created_at"]),
        ]
        for e in entries
    ]
    emit(out, cols, rows, title=f"entries in {db}")


@runs_app.command("show")
def runs_show(
    entry: Annotated[str, typer.Argument(help="Entry id, unique prefix, or display name.")],
    db: DbOpt = Path("runs/tbmm.sqlite"),
    as_json: JsonOpt = False,
) -> None:
    """One entry: settings, its errors and agent failures counted by cause (an entry with
    unresolved errors is partial), then every trial (status, cause, score, cost)."""
    store = _store(db)
    eid = _entry(store, entry)
    meta = next(e for e in store.entries() if e["entry_id"] == eid)
    trials = store.trials(eid)
    runs = store.runs_dir
    store.close()
    keep = (
        "task",
        "seed",
        "status",
        "error",
        "exit_reason",
        "detail",
        "artifact_status",
        "o_eval",
        "gate",
        "lean",
        "duration_s",
        "tokens_in",
        "tokens_cache_read",
        "tokens_out",
        "cost_usd",
        "blob_dir",
        "trajectory",
    )
    counts = outcome_counts(trials, meta.get("stopped"))
    if as_json:
        doc = {**meta, **counts, "trials": [{k: t.get(k) for k in keep} for t in trials]}
        print(json.dumps(doc, indent=1, default=str))
        return
    out.print(
        f"[bold]{eid}[/bold]" + (f" ({meta['name']})" if meta["name"] else ""), highlight=False
    )
    out.print(
        f"agent {meta['agent']}, model {meta['model'] or '-'}, created {_when(meta['created_at'])} UTC",
        highlight=False,
    )
    out.print(
        "settings: " + json.dumps(meta["settings"], sort_keys=True), highlight=False, soft_wrap=True
    )
    tok = counts["tokens"]
    out.print(
        f"cost {_cost(meta['cost_usd'])} over the {len(trials)} stored trial(s) "
        f"(spent in all, replaced error trials included: {_cost(meta['spent_usd'])}); tokens: "
        f"{tok['input']} in ({tok['cached']} cached, {tok['cache_write']} cache writes), "
        f"{tok['output']} out, {tok['requests']} requests",
        highlight=False,
        soft_wrap=True,
    )
    if meta.get("stopped"):
        stop = meta["stopped"]
        out.print(
            f"[red]partial:[/red] {escape(str(stop.get('reason')))}; "
            f"{len(stop.get('not_started') or [])} trial(s) still not run "
            "(`tbmm run ... --resume --max-cost USD` with a larger budget runs them)",
            highlight=False,
            soft_wrap=True,
        )
    if counts["errors"]:
        out.print(
            f"[red]partial:[/red] {counts['errors']} trial(s) without a score "
            f"({escape(_kinds(counts['error_causes']))}), left out of the means; the leaderboard ranks "
            f"the entry after complete ones until `tbmm run ... --resume` runs them again",
            highlight=False,
            soft_wrap=True,
        )
    elif not meta.get("stopped"):
        out.print("complete: no trial without a score", highlight=False)
    if counts["agent_failures"]:
        out.print(
            f"agent failures (scored): {counts['agent_failures']} "
            f"({_kinds(counts['agent_failure_reasons'])})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    cols = [
        Col("task", "id"),
        Col("seed", "num"),
        Col("status", "num"),
        Col("O-Eval", "num"),
        Col("gate", "num", keep=40),
        Col("exit", "num", keep=30),
        Col("cost", "num", keep=50),
        Col("cause / detail", "text", keep=60, min_width=12),
    ]
    rows = []
    for t in trials:
        o = "" if t["o_eval"] is None else f"{t['o_eval']:.3f}"
        why = t.get("error") or t.get("detail") or ""
        rows.append(
            [
                t["task"],
                str(t["seed"]),
                t.get("status") or "ok",
                o,
                t.get("gate") or "",
                t["exit_reason"],
                _cost(t["cost_usd"]),
                why[:300],
            ]
        )
    emit(
        out,
        cols,
        rows,
        title=f"{len(trials)} trial(s)",
        caption=f"files under {runs}/<entry>/<task>/<seed>/ (trajectory.json = ATIF)",
    )


@runs_app.command("delete")
def runs_delete(
    entry: Annotated[str, typer.Argument(help="Entry id, unique prefix, or display name.")],
    db: DbOpt = Path("runs/tbmm.sqlite"),
    task: Annotated[str | None, typer.Option("--task", help="Only this task's trials.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Only this seed's trials.")] = None,
    errors_only: Annotated[
        bool, typer.Option("--errors", help="Only trials that ended with an infrastructure error.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
) -> None:
    """Delete an entry (rows and files), or some of its trials (--task/--seed/--errors)."""
    store = _store(db)
    eid = _entry(store, entry)
    whole = task is None and seed is None and not errors_only
    what = f"entry {eid} and all its trials" if whole else f"matching trials of {eid}"
    if not yes and not typer.confirm(f"delete {what}?"):
        raise typer.Exit(1)
    n = store.delete(eid, task=task, seed=seed, errors_only=errors_only)
    store.close()
    out.print(f"deleted {n} trial(s)" + (f" and entry {eid}" if whole else ""), highlight=False)


@runs_app.command("rescore")
def runs_rescore(
    entry: Annotated[
        str | None, typer.Argument(help="Entry id, unique prefix, or display name (default: all).")
    ] = None,
    db: DbOpt = Path("runs/tbmm.sqlite"),
    task: Annotated[str | None, typer.Option("--task", help="Only this task's trials.")] = None,
    everything: Annotated[
        bool,
        typer.Option("--all", help="Every stored verdict, not only those of older task data."),
    ] = False,
    tasks_root: Annotated[
        Path | None, typer.Option("--tasks-root", help="Folder holding the suite folders.")
    ] = None,
) -> None:
    """Verify stored artifacts again against the current task data (references, gates,
    replay settings) and replace their verdicts in place; the agent is not run again.

    By default only verdicts reached against older task data (the leaderboard names their
    entries); each previous verdict is kept in the trial's folder as verdict-previous-N.json.
    Infrastructure-error trials are left to `tbmm run --resume`. Exit 1 if a trial could not
    be rescored."""
    from harness.runs.rescore import rescore

    store = _store(db)
    eid = _entry(store, entry) if entry is not None else None
    store.close()
    try:
        s = rescore(
            db,
            tasks_root=tasks_root,
            entry=eid,
            task=task,
            everything=everything,
            say=lambda m: err.print(f"  {m}", highlight=False),
        )
    except (RuntimeError, StoreError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from exc
    for line in s.unknown_tasks:
        err.print(f"[yellow]kept (task not in the suite):[/yellow] {line}", highlight=False)
    for line in s.failed:
        err.print(f"[red]not rescored:[/red] {line}", highlight=False)
    changed = sum(1 for *_, old, new in s.rescored if old != new)
    out.print(
        f"checked {s.checked} trial(s): rescored {len(s.rescored)} ({changed} with another "
        f"O-Eval), {s.current} already current, {len(s.failed)} failed",
        highlight=False,
    )
    raise typer.Exit(1 if s.failed else 0)


@runs_app.command("rename")
def runs_rename(
    entry: Annotated[str, typer.Argument(help="Entry id, unique prefix, or display name.")],
    name: Annotated[str, typer.Argument(help="New display name ('' clears it).")],
    db: DbOpt = Path("runs/tbmm.sqlite"),
) -> None:
    """Set the display name tables and plots show for an entry."""
    store = _store(db)
    eid = _entry(store, entry)
    store.set_name(eid, name)
    store.close()
    out.print(f"{eid}: name {'cleared' if not name else repr(name)}", highlight=False)


@runs_app.command("convert-trajectories")
def runs_convert(
    db: DbOpt = Path("runs/tbmm.sqlite"),
    force: Annotated[
        bool, typer.Option("--force", help="Rebuild existing trajectory.json too.")
    ] = False,
) -> None:
    """Write the ATIF trajectory (trajectory.json) of every stored trial that lacks one,
    from its raw event log (events.jsonl, or trajectory.jsonl of older stores)."""
    store = _store(db)
    entries = {e["entry_id"]: e for e in store.entries()}
    done = skipped = failed = 0
    for t in store.trials():
        if not t.get("blob_dir"):
            skipped += 1
            continue
        blob = store.runs_dir / t["blob_dir"]
        target = blob / TRAJECTORY_FILE
        if target.is_file() and not force:
            skipped += 1
            continue
        src = next(
            (blob / n for n in (EVENTS_FILE, "trajectory.jsonl") if (blob / n).is_file()), None
        )
        if src is None:
            failed += 1
            err.print(
                f"no raw events for {t['entry_id']} / {t['task']} / {t['seed']}", highlight=False
            )
            continue
        e = entries.get(t["entry_id"], {})
        settings: dict[str, Any] = e.get("settings") or {}
        try:
            write_trajectory(
                src,
                target,
                agent_name=str(settings.get("harness") or t["agent"]),
                agent_version=str(settings.get("package") or "unknown"),
                model=t.get("model"),
                session_id=f"{t['entry_id']}/{t['task']}/{t['seed']}",
                started_at=t.get("started_at"),
                extra={
                    "entry": t["entry_id"],
                    "task": t["task"],
                    "seed": t["seed"],
                    "converted": True,
                },
            )
        except (OSError, ValueError) as exc:
            failed += 1
            err.print(f"{t['entry_id']} / {t['task']} / {t['seed']}: {exc}", highlight=False)
            continue
        store.set_trajectory(int(t["id"]), TRAJECTORY_FILE)
        done += 1
    store.close()
    out.print(
        f"wrote {done} trajectory file(s); {skipped} already present or without files; {failed} failed",
        highlight=False,
    )
    raise typer.Exit(1 if failed else 0)


@runs_app.command("export")
def runs_export(
    entry: Annotated[
        str | None, typer.Argument(help="Entry id, unique prefix, or display name.")
    ] = None,
    db: DbOpt = Path("runs/tbmm.sqlite"),
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="Output file: .json, or .json.gz for gzip (default <entry>.json.gz).",
        ),
    ] = None,
    schema: Annotated[
        bool, typer.Option("--schema", help="Print the file's JSON Schema and exit.")
    ] = False,
) -> None:
    """Write one entry as ONE self-describing file: the entry, every trial's row, its stored
    verdict (exact JSON text), artifact and files (ATIF trajectory, raw events, stdout, ...),
    with a schema version and a digest; `tbmm runs import` reads it into any store."""
    from harness.runs.export import build_export, json_schema, write_export

    if schema:
        print(json.dumps(json_schema(), indent=1))
        return
    if entry is None:
        err.print("[red]error:[/red] give an ENTRY (or --schema)", highlight=False, soft_wrap=True)
        raise typer.Exit(2)
    store = _store(db)
    eid = _entry(store, entry)
    try:
        doc = build_export(store, eid)
    except (OSError, StoreError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    finally:
        store.close()
    target = output or Path(
        f"{''.join(c if c.isalnum() or c in '-_.@' else '_' for c in eid)}.json.gz"
    )
    size = write_export(doc, target)
    out.print(
        f"wrote {target}: entry {eid}, {len(doc.trials)} trial(s), {size} bytes "
        f"(schema_version {doc.schema_version})",
        highlight=False,
        soft_wrap=True,
    )


@runs_app.command("import")
def runs_import(
    file: Annotated[Path, typer.Argument(help="A file written by `tbmm runs export`.")],
    db: DbOpt = Path("runs/tbmm.sqlite"),
) -> None:
    """Read an export into a store (created if absent), in one transaction, with the entry's
    budget state (spend, --max-cost stop: an entry its budget stopped stays partial; a
    schema-version-1 file has none). Refuses a file of another schema version, with a
    digest or hash mismatch, or holding a trial that differs from one already stored;
    trials already stored identically are skipped (exit 0)."""
    from harness.runs.export import ExportError, import_export, read_export

    try:
        exp = read_export(file)
    except ExportError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    try:
        store = Store(db)
    except (StoreError, sqlite3.Error) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    try:
        new, present = import_export(exp, store)
        stop = store.stopped().get(exp.entry.entry_id)
    except (ExportError, StoreError, OSError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from exc
    finally:
        store.close()
    out.print(
        f"imported {new} trial(s) of {exp.entry.entry_id} into {db}; {present} already present",
        highlight=False,
        soft_wrap=True,
    )
    if exp.read_version < 2:
        out.print(
            f"note: {file} has schema_version {exp.read_version}, which carries no budget "
            "state: the entry's spend is taken as the sum of its trials' costs and no "
            "--max-cost stop is recorded (export it again with this tbmm to carry both)",
            highlight=False,
            soft_wrap=True,
        )
    if stop is not None:
        out.print(
            f"[red]partial:[/red] {escape(str(stop.get('reason')))}; "
            f"{len(stop.get('not_started') or [])} trial(s) still not run",
            highlight=False,
            soft_wrap=True,
        )


@agents_app.command("list")
def agents_list() -> None:
    """The CLI agents tbmm knows, their pinned version, and whether it is installed."""
    cols = [
        Col("agent", "id"),
        Col("npm package", "id"),
        Col("pinned", "num"),
        Col("installed", "text", min_width=10),
    ]
    rows = []
    for p in cli_agents.PACKAGES.values():
        where = str(cli_agents.install_dir(p)) if cli_agents.is_installed(p) else "no"
        rows.append([p.name, p.npm, p.version, where])
    emit(out, cols, rows, title="CLI agents (install dir: $TBMM_CLI_DIR or ~/.cache/tbmm/cli)")


@agents_app.command("install")
def agents_install(
    names: Annotated[list[str], typer.Argument(help="Agent names (see `tbmm agents list`).")],
) -> None:
    """Install the pinned version of CLI agents with npm into tbmm's own prefix."""
    code = 0
    for name in names:
        pkg = cli_agents.PACKAGES.get(name)
        if pkg is None:
            err.print(
                f"[red]unknown agent {name!r}[/red]: {', '.join(cli_agents.PACKAGES)}",
                highlight=False,
            )
            code = 2
            continue
        try:
            d = cli_agents.ensure_installed(pkg)
        except (cli_agents.InstallError, OSError) as exc:
            err.print(f"[red]{pkg.spec}: {exc}[/red]", highlight=False)
            code = 1
            continue
        out.print(f"{pkg.spec} installed in {d}", highlight=False)
    raise typer.Exit(code)


docker_app = typer_app(
    no_args_is_help=True, add_completion=False, help="Docker images without a registry."
)


@docker_app.callback()
def _docker_group() -> None:
    """Docker images without a registry (a group even with one command: `tbmm docker base`)."""


@docker_app.command("base")
def docker_base() -> None:
    """Build the offline base image (Debian bookworm via mmdebstrap + the locked wheels,
    no registry, no network in the build); `tbmm run --backend docker` then uses it."""
    from harness.sandbox.container import docker_client
    from harness.sandbox.images import base_tag, ensure_local_base

    try:
        client = docker_client(timeout=600)
        tag = ensure_local_base(client, log=lambda m: err.print(m, highlight=False))
    except Exception as exc:  # engine missing, mmdebstrap missing, download or build failed
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from exc
    out.print(f"{tag} ready (expected tag for this lock: {base_tag()})", highlight=False)
