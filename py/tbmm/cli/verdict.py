"""`tbmm score`, `gate`, `replay` and `verify`: one artifact's (or a batch's) verdict.

Why a module of its own: these commands are the verdict core's front door and import only
it; `tbmm.cli.root` mounts each when named (or listed by --help).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from tbmm.cli.root import JsonFlag, TasksRoot, _fail, _task, _verification_errors, console
from tbmm.suite.tasks import TASKS_ROOT, Task, TaskFormatError


def _read_artifact_bytes(path: Path, task: Task | None = None) -> bytes:
    """The file's bytes, refused (exit 2) past the byte cap without reading the rest."""
    from tbmm.core.bounds import DEFAULT_CAPS, BoundsError, read_capped

    try:
        return read_capped(path, task.caps if task is not None else DEFAULT_CAPS)
    except BoundsError as exc:
        raise _fail(f"{path}: {exc}") from exc
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_artifact_file(path: Path, task: Task) -> dict:
    """The artifact of `task` parsed exactly, within the task's input caps (exit 2 if not)."""
    from tbmm.verdict.scoring import ArtifactError, read_artifact

    data = _read_artifact_bytes(path, task)
    try:
        return read_artifact(data, task.caps)
    except ArtifactError as exc:
        raise _fail(f"{path}: {exc}") from exc


def score(
    artifact: Annotated[Path, typer.Argument(help="The agent's JSON artifact.")],
    task: Annotated[str, typer.Option("--task", help="Task slug.")],
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
    gate_failed: Annotated[
        bool,
        typer.Option("--gate-failed", help="Score as if the feasibility gate failed (0 / -1)."),
    ] = False,
) -> None:
    """Score one artifact: per-metric rewards with reasons, O-Eval, Robust BO-Eval. Exit 0 when scored.

    The artifact is resolved (replayed, for a task with a replay) and gated first: a metric
    whose protecting check lacks an input scores 0, and a failed gate zeroes the task."""
    from tbmm.cli.entry import print_score, score_of
    from tbmm.verdict.pipeline import evaluate

    t = _task(task, tasks_root)
    doc = _read_artifact_file(artifact, t)
    try:
        result = score_of(t, evaluate(t, doc), gate_failed)
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        return
    print_score(result)


def gate(
    artifact: Annotated[Path, typer.Argument(help="The agent's JSON artifact.")],
    task: Annotated[str, typer.Option("--task", help="Task slug.")],
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
) -> None:
    """Feasibility gate: exit 0 pass or warning, 1 hard fail, 2 unreadable input."""
    from tbmm.cli.entry import print_gate
    from tbmm.verdict.pipeline import evaluate

    t = _task(task, tasks_root)
    doc = _read_artifact_file(artifact, t)
    try:
        report = evaluate(t, doc).gate
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        print_gate(report)
    raise typer.Exit(1 if report.verdict == "fail" else 0)


def replay(
    artifact: Annotated[Path, typer.Argument(help="The agent's JSON artifact.")],
    task: Annotated[str, typer.Option("--task", help="Task slug.")],
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
) -> None:
    """Replay an answer's decisions: claimed vs replayed values, each constraint, the verdict.

    Exit 0 consistent, 1 infeasible or misreported, 2 unreadable (or the task has no replay)."""
    from tbmm.suite.models import REPLAYED
    from tbmm.verdict.pipeline import evaluate

    t = _task(task, tasks_root)
    try:
        spec = t.replay_spec
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    if spec is None:
        raise _fail(f"task {t.slug} has no replay (no replay.toml)")
    doc = _read_artifact_file(artifact, t)
    ev = evaluate(t, doc)
    rep = ev.replay
    assert rep is not None
    on_replay = [
        i
        for i in ev.gate.instances
        if any(p.startswith(f"{REPLAYED}.") for ps in i.paths.values() for p in ps)
        or i.check.form.value == "agree"
    ]
    unreplayable = rep.status != "ok"
    bad = [i for i in on_replay if i.status in ("fail", "bad")]
    verdict = "unreplayable" if unreplayable else "infeasible" if bad else "consistent"
    code = 1 if (unreplayable or bad or ev.gate.verdict == "fail") else 0
    if as_json:
        print(
            json.dumps(
                {
                    "task": t.slug,
                    "verdict": verdict,
                    "replay": rep.to_json(),
                    "checks": [i.to_json() for i in on_replay],
                    "gate": ev.gate.verdict,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        raise typer.Exit(code)
    console.print(
        f"replay {rep.module} for {t.slug}: {rep.status} in {rep.seconds:.3f} s of CPU"
        + (" (cached)" if rep.cached else ""),
        highlight=False,
    )
    if rep.error:
        console.print(f" [red]✗[/red] {rep.error}", highlight=False)
    for i in on_replay:
        if i.check.form.value != "agree":
            continue
        claimed, replayed = (i.values.get(i.paths[r][0]) for r in ("field", "against"))
        mark = "[green]✓[/green]" if i.status == "pass" else "[red]✗[/red]"
        shown = lambda q: "—" if q is None else f"{q.numerator / q.denominator:.10g}"  # noqa: E731
        console.print(
            f" {mark} {i.paths['field'][0]}: claimed {shown(claimed)}, replayed {shown(replayed)}",
            highlight=False,
        )
    for i in on_replay:
        if i.check.form.value == "agree":
            continue
        mark = {"pass": "[green]✓[/green]", "missing": "[yellow]?[/yellow]"}.get(
            i.status, "[red]✗[/red]"
        )
        console.print(f" {mark} {i.name} ({i.check.form.value}) {i.message}", highlight=False)
    style = {"consistent": "green"}.get(verdict, "red")
    console.print(f"[{style}]{verdict.upper()}[/{style}] (gate {ev.gate.verdict})")
    raise typer.Exit(code)


def _verify_many(
    artifact: Path | None,
    task: str | None,
    batch: Path | None,
    manifest: Path | None,
    tasks_root: Path,
    as_json: bool,
    no_lean: bool,
) -> None:
    """`tbmm verify --batch DIR --task T` / `--manifest FILE`: many artifacts, one Lean run."""
    import time

    from tbmm.verify import verify_batch

    if artifact is not None or (batch is not None and manifest is not None):
        raise _fail("--batch and --manifest take no ARTIFACT, and not each other")
    if batch is not None:
        if task is None:
            raise _fail("--batch needs --task (or use --manifest to name each file's task)")
        if not batch.is_dir():
            raise _fail(f"{batch}: not a folder")
        pairs = [(p, task) for p in sorted(batch.glob("*.json"))]
    else:
        assert manifest is not None
        try:
            mapping = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(f"cannot read the manifest {manifest}: {exc}") from exc
        if not isinstance(mapping, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            raise _fail(f"{manifest}: expected a JSON object mapping files to task slugs")
        pairs = [(manifest.parent / k, v) for k, v in mapping.items()]
    if not pairs:
        raise _fail("no artifacts to verify")
    from tbmm.core.bounds import BoundsError, read_capped
    from tbmm.verify import _unreadable

    tasks: dict[str, Task] = {}
    items, refused = [], {}
    for k, (path, slug) in enumerate(pairs):
        t = tasks.get(slug) or tasks.setdefault(slug, _task(slug, tasks_root))
        try:
            items.append((t, read_capped(path, t.caps)))
        except BoundsError as exc:
            refused[k] = _unreadable(t, f"{path}: {exc}", "over_caps")
        except OSError as exc:
            refused[k] = _unreadable(t, f"cannot read {path}: {exc.strerror or exc}", "unreadable")
    t0 = time.monotonic()
    with _verification_errors():
        checked = iter(verify_batch(items, lean=not no_lean))
        reps = [refused[k] if k in refused else next(checked) for k in range(len(pairs))]
    seconds = time.monotonic() - t0
    code = max(r.exit_code for r in reps)
    if as_json:
        out = [
            {"file": str(p), **r.model_dump(mode="json")}
            for (p, _), r in zip(pairs, reps, strict=True)
        ]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        raise typer.Exit(code)
    names = {0: "FEASIBLE", 1: "INFEASIBLE", 2: "UNREADABLE", 3: "NO VERDICT"}
    styles = {0: "green", 1: "red", 2: "yellow", 3: "magenta"}
    for (path, _), r in zip(pairs, reps, strict=True):
        st = styles[r.exit_code]
        console.print(
            f"[{st}]{names[r.exit_code]}[/{st}] {path.name} ({r.task}): gate {r.gate}, "
            f"Lean {r.lean}, O-Eval {r.o_eval_exact}, Robust BO-Eval {r.robust_bo_eval_exact}"
            + (f" ({r.error})" if r.error else ""),
            highlight=False,
            soft_wrap=True,
        )
        for f in r.failing:
            console.print(f"  [red]✗[/red] {f}", highlight=False, soft_wrap=True)
    counts = {names[c]: sum(r.exit_code == c for r in reps) for c in names}
    console.print(
        f"{len(reps)} artifacts in {seconds:.2f} s ({len(reps) / seconds:.1f}/s): "
        + ", ".join(f"{n} {k.lower()}" for k, n in counts.items() if n),
        highlight=False,
    )
    raise typer.Exit(code)


def verify(
    artifact: Annotated[
        Path | None, typer.Argument(help="The agent's JSON artifact (or use --batch/--manifest).")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="Task slug.")] = None,
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
    no_lean: Annotated[
        bool, typer.Option("--no-lean", help="Skip the Lean kernel check (gate and score only).")
    ] = False,
    batch: Annotated[
        Path | None,
        typer.Option("--batch", help="A folder of artifacts (*.json) of the task --task."),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest",
            help="A JSON object mapping artifact files (relative to it) to task slugs.",
        ),
    ] = None,
) -> None:
    """Schema + gate + score + Lean kernel check.

    Exit 0 feasible, 1 infeasible, 2 unreadable, over a cap or no Lean toolchain, 3 no
    verdict (verification budget exceeded, or Python and Lean disagree). With --batch or
    --manifest, every artifact is reported apart, the Lean kernel checks all of them in
    one run, and the exit code is the highest of theirs.
    """
    from tbmm.verify import verify_artifact

    if batch is not None or manifest is not None:
        _verify_many(artifact, task, batch, manifest, tasks_root, as_json, no_lean)
        return
    if artifact is None or task is None:
        raise _fail("give an ARTIFACT and --task (or --batch DIR --task, or --manifest FILE)")
    t = _task(task, tasks_root)
    data = _read_artifact_bytes(artifact, t)
    with _verification_errors():
        rep = verify_artifact(t, data, lean=not no_lean)
    if as_json:
        print(json.dumps(rep.model_dump(mode="json"), indent=2, ensure_ascii=False))
        raise typer.Exit(rep.exit_code)
    if not rep.readable or rep.status == "budget_exceeded":
        raise _fail(f"{artifact}: {rep.error}", rep.exit_code)
    from tbmm.cli.entry import verify_lines

    for line in verify_lines(rep.model_dump(mode="json")):
        console.print(line, highlight=False)
    raise typer.Exit(rep.exit_code)
