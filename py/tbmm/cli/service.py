"""`tbmm serve` (the HTTP reward service) and `tbmm bench` (its throughput figures).

Why a module of its own: serving and measuring the verdict's speed change together;
`tbmm.cli.root` mounts each when named (or listed by --help).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tbmm.cli.root import JsonFlag, TasksRoot, _fail, _task, console, err
from tbmm.suite.tasks import TASKS_ROOT, Task, load_suite


def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            help="Judging processes: requests judged at once (default: one per core).", min=0
        ),
    ] = 0,
    token: Annotated[
        str | None,
        typer.Option(
            help="Require 'Authorization: Bearer TOKEN' on /v1/* (default: $TBMM_SERVE_TOKEN; "
            "none: open)."
        ),
    ] = None,
) -> None:
    """HTTP reward service: POST /v1/verify (batches), /v1/openrlhf, GET /v1/tasks, /healthz, /docs."""
    import os

    from tbmm.integrations.serve import TOKEN_ENV, run

    if token is not None:
        if not token.strip():
            raise _fail("--token must not be empty")
        os.environ[TOKEN_ENV] = token  # the workers read it from their environment

    n = workers or (os.cpu_count() or 1)
    err.print(f"tbmm serve on http://{host}:{port} ({n} judging process(es)); docs at /docs")
    try:
        run(host, port, n)
    except RuntimeError as exc:
        raise _fail(str(exc)) from exc


# The task whose anchor `bench --lean` verifies on the command line and in a batch.
_LEAN_BENCH_TASK = "mcm-2025-b-juneau-tourism"


def bench(
    task: Annotated[
        list[str] | None,
        typer.Option("--task", help="Only these task slugs (default: every task)."),
    ] = None,
    seconds: Annotated[float, typer.Option(help="CPU seconds per measurement.")] = 2.0,
    replays: Annotated[bool, typer.Option(help="Also run each replay's own benchmark.")] = True,
    reference_runs: Annotated[
        int,
        typer.Option(
            help="Interleaved rounds of each replay against its frozen pre-rewrite copy "
            "(tests/reference_replays/, in a checkout) on the task's anchor; 0: skip.",
        ),
    ] = 3,
    tasks_root: TasksRoot = TASKS_ROOT,
    lean: Annotated[
        bool,
        typer.Option(
            "--lean",
            help="The Lean layer's costs instead: per anchor the kernel check's and `tbmm "
            "verify`'s CPU and the check instances, a clean build, one Lean run per batch "
            "against one per artifact, long lists, the audit, the verify command line, a batch.",
        ),
    ] = False,
    entries: Annotated[int, typer.Option(help="--lean: entries of the long list.")] = 1000,
    list_task: Annotated[
        str | None,
        typer.Option(
            "--list-task",
            help="--lean: the task whose list grows (default: every task with a wildcard check).",
        ),
    ] = None,
    batch: Annotated[int, typer.Option(help="--lean: artifacts in the batch.")] = 40,
    lists: Annotated[
        bool, typer.Option(help="--lean: also grow each wildcard list (the slowest figures).")
    ] = True,
    cli: Annotated[
        bool,
        typer.Option(
            "--cli",
            help="CPU seconds of `tbmm score` / `tbmm gate` command lines instead (fresh "
            "processes, best of 3 after a warm-up), per task.",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Throughput: artifacts per CPU-second (one core) for scoring and the gate.

    Over a mixed corpus of every task; each figure also says what it costs as a multiple of
    json.loads of the same bytes ("costs 2.86× json.loads": 2.86 times the CPU time of the
    plain parse; `cost_x_json_loads` with --json). The same over the tasks without a replay
    (claims only: the replayed tasks' artifacts carry whole decisions, e.g. a planting plan
    of thousands of entries, and dominate the mix); replays per second per replayed task.
    With --lean, the Lean layer's costs instead (wall and CPU seconds, the Lean runs
    included); with --cli, the score and gate command lines' CPU seconds."""
    if cli:
        from tbmm.tooling.bench import bench_cli

        tasks = [_task(s, tasks_root) for s in task] if task else load_suite(tasks_root)
        figs = [(t.slug, f) for t in tasks for f in bench_cli(t)]
        if as_json:
            print(json.dumps([{"task": s, **f.to_json()} for s, f in figs], indent=2))
            return
        for s, f in figs:
            console.print(
                f"{s:34.34s} {f.name:>17s} {f.cpu_seconds:5.2f} s CPU {f.seconds:5.2f} s wall",
                highlight=False,
            )
        return
    if lean:
        one = _task(task[0] if task else _LEAN_BENCH_TASK, tasks_root)
        _bench_lean(one, entries, list_task if lists else "", batch, tasks_root, as_json)
        return
    from tbmm.tooling.bench import bench_mixed, bench_replays

    tasks = [_task(s, tasks_root) for s in task] if task else load_suite(tasks_root)
    rows = bench_mixed(tasks, seconds)
    claims = [t for t in tasks if t.replay_spec is None]
    if claims and len(claims) < len(tasks):
        rows += bench_mixed(claims, seconds, group="no replay")
    speedups = []
    if replays:
        rows += bench_replays(tasks, seconds / 2)
        if reference_runs > 0:
            from tbmm.tooling.bench import bench_replay_speedups

            speedups = bench_replay_speedups(tasks, reference_runs)
    loads = {r.task: r.rate for r in rows if r.name == "json.loads"}
    out = [
        {
            "name": r.name,
            "task": r.task,
            "count": r.count,
            "cpu_seconds": round(r.seconds, 3),
            "per_second": round(r.rate, 1),
            # a cost ratio (CPU time per artifact over json.loads's), not a speed-up
            "cost_x_json_loads": round(loads[r.task] / r.rate, 2)
            if r.task in loads and r.name != "json.loads"
            else None,
        }
        for r in rows
    ]
    out += [
        {
            "name": "replay vs reference",
            "task": r.task,
            "count": r.runs,
            "cpu_seconds": round(r.cpu, 3),
            "per_second": round(1 / r.cpu, 2) if r.cpu else None,
            "cost_x_json_loads": None,
            "reference": r.reference,
            "reference_cpu_seconds": round(r.reference_cpu, 3),
            "ratio_vs_reference": round(r.ratio, 2),
            "same_values": r.same_values,
        }
        for r in speedups
    ]
    if as_json:
        print(json.dumps(out, indent=2))
        return
    console.print(f"{len(tasks)} task(s); artifacts per CPU-second (one core)", highlight=False)
    for r in out:
        cost = r["cost_x_json_loads"]
        ratio = "" if cost is None else f"  costs {cost:.2f}× json.loads"
        where = "" if r["task"] == "mixed" else f"  ({r['task']})"
        if r["name"] == "json.loads" and r["task"] != "mixed":
            console.print(f"  tasks without a replay ({len(claims)}):", highlight=False)
        if r["name"] == "replay vs reference":
            continue
        console.print(
            f"{r['name']:>14s} {r['per_second']:>10,.0f}/s{ratio}{where}", highlight=False
        )
    for sp in speedups:
        console.print(
            f"  {sp.task} replay vs {sp.reference}: {sp.ratio:.2f}× less CPU "
            f"({sp.cpu:.2f} s vs {sp.reference_cpu:.2f} s on the {sp.input}, median of "
            f"{sp.runs} interleaved rounds, {'same values' if sp.same_values else 'values not identical'})",
            highlight=False,
            soft_wrap=True,
        )


def _bench_lean(
    t: Task, entries: int, list_task: str | None, n: int, tasks_root: Path, as_json: bool
) -> None:
    import os

    from tbmm.tooling import bench as B

    suite = load_suite(tasks_root)
    if list_task == "":  # --no-lists
        lists: list[Task] = []
    elif list_task is not None:
        lists = [_task(list_task, tasks_root)]
    else:
        lists = []
        for x in suite:
            try:
                B.wildcard_list(x)
            except ValueError:
                continue
            lists.append(x)
    anchors = [B.bench_anchor_lean(x) for x in suite]
    figures = [B.bench_clean_build()]
    claims = [x for x in suite if x.replay_spec is None]
    pairs = [
        B.bench_amortise(
            [(x, x.anchor_artifact_bytes()) for x in claims], "anchors of tasks without a replay"
        ),
        B.bench_amortise([(t, d) for d in B.nudged(t, 16)], f"artifacts of {t.slug}"),
    ]
    figures += [f for pair in pairs for f in pair]
    figures += [B.bench_lean_list(x, entries) for x in lists]
    figures += [B.bench_audit(), B.bench_verify_cli(t), B.bench_batch(t, n)]
    load = os.getloadavg()[0]
    instances = sum(a.instances for a in anchors)
    if as_json:
        doc = {
            "load_average": load,
            "anchors": [a.to_json() for a in anchors],
            "instances": instances,
            "figures": [f.to_json() for f in figures],
        }
        print(json.dumps(doc, indent=2))
        return
    console.print(
        "per anchor: CPU s of the Lean kernel check (its child process) | of `tbmm verify` "
        "(fresh process, Lean and the replay included) | check instances",
        highlight=False,
    )
    for a in anchors:
        console.print(
            f"  {a.task:36s} {a.lean_cpu:6.2f} {a.verify_cpu:6.2f} {a.instances:5d}  [{a.outcome}]",
            highlight=False,
            markup=False,
        )
    console.print(
        f"check instances over the {len(anchors)} anchors (one check on one list entry, "
        f"declared lists included): {instances}; Lean CPU over them: "
        f"{sum(a.lean_cpu for a in anchors):.2f} s",
        highlight=False,
    )
    for f in figures:
        rate = f" = {f.rate:.1f}/s" if f.count > 1 else ""
        console.print(
            f"{f.name:12s} {f.seconds:6.2f} s wall {f.cpu_seconds:6.2f} s CPU{rate}  "
            f"[{f.outcome}] {f.detail}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    for single, together in pairs:
        if together.cpu_seconds:
            console.print(
                f"{together.detail}: one run per artifact costs "
                f"{single.cpu_seconds / together.cpu_seconds:.1f}× the Lean CPU of the batch",
                highlight=False,
            )
    console.print(
        f"load average {load:.1f} on {os.cpu_count()} CPUs: wall time is mostly waiting for a "
        "core; CPU time is what an idle machine would take",
        highlight=False,
    )
