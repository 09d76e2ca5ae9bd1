"""The `tbmm` command line: tasks, score, gate, verify, lean, run, leaderboard, report."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from tbmm.clihelp import HelpGroup, typer_app
from tbmm.tasks import TASKS_ROOT, Task, TaskFormatError, find_task, load_suite


class _LazyGroup(HelpGroup):
    """`tbmm run` (the harness), `tbmm lean` and `tbmm export`/`ingest` (Harbor) import a lot;
    they are loaded when named (or listed by --help), so `tbmm score`/`gate`/`verify` start
    without them."""

    LAZY = {
        "run": ("harness.cli", "run_command"),
        "lean": ("tbmm.lean.cli", "lean_app"),
        "export": ("tbmm.harbor.cli", "export_app"),
        "ingest": ("tbmm.harbor.cli", "ingest_app"),
        "runs": ("harness.runs_cli", "runs_app"),
        "agents": ("harness.runs_cli", "agents_app"),
        "docker": ("harness.runs_cli", "docker_app"),
    }

    # click turns a write to a closed stdout pipe into exit 1; tbmm.entry's rule instead
    # (exit 0, quietly). Help and usage are written while the context is made.
    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            raise _closed_pipe() from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _closed_pipe() from None

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.LAZY if n not in self.commands)]

    def get_command(self, ctx: Any, name: str) -> Any:
        if name in self.LAZY and name not in self.commands:
            import importlib

            mod, attr = self.LAZY[name]
            obj = getattr(importlib.import_module(mod), attr)
            if not isinstance(obj, typer.Typer):
                single = typer_app(add_completion=False)
                single.command(name)(obj)
                obj = single
            cmd = typer.main.get_command(obj)
            cmd.name = name
            self.add_command(cmd, name)
        return super().get_command(ctx, name)


def _closed_pipe() -> SystemExit:
    from tbmm.entry import stdout_closed

    stdout_closed()
    return SystemExit(0)


def _rich_closed_pipe(self: Console) -> None:
    self.quiet = True
    if self.file is sys.stderr:  # nobody reads the messages: the command goes on to its code
        from tbmm.entry import stdout_closed

        stdout_closed(sys.stderr)
        return
    raise _closed_pipe()


def quiet_on_closed_pipe() -> None:
    """For the `tbmm` process (tbmm.entry): every rich console, typer's help included, ends
    the command as tbmm.entry does on a closed stdout pipe (rich's own hook exits 1); a
    closed stderr is silenced and the command keeps its exit code."""
    Console.on_broken_pipe = _rich_closed_pipe  # type: ignore[method-assign]


app = typer_app(
    cls=_LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    help="TB-MathModel: agentic, verifiable mathematical-modeling benchmark.",
)
tasks_app = typer_app(
    no_args_is_help=True,
    add_completion=False,
    help="Inspect, build and validate the task suite.",
)
app.add_typer(tasks_app, name="tasks")


def _print_version(value: bool) -> None:
    if value:
        from tbmm import __version__

        print(f"tbmm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print tbmm's version and exit.",
        ),
    ] = False,
) -> None:
    pass


console = Console()
err = Console(stderr=True)

TasksRoot = Annotated[
    Path, typer.Option("--tasks-root", help="Folder holding CUMCM/ and MCM/ task folders.")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _fail(msg: str, code: int = 2) -> typer.Exit:
    from rich.markup import escape

    err.print(f"[red]error:[/red] {escape(msg)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextlib.contextmanager
def _verification_errors() -> Iterator[None]:
    """What `tbmm verify` reports instead of a verdict: a malformed task file or no Lean
    toolchain (exit 2), a certificate the generator got wrong (exit 3, a bug: no verdict)."""
    from tbmm.lean.certify import CertificateError
    from tbmm.lean.runtime import ToolchainError

    try:
        yield
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    except ToolchainError as exc:
        raise _fail(f"{exc} (or pass --no-lean)") from exc
    except CertificateError as exc:
        raise _fail(f"the generated certificate left its grammar: {exc}", 3) from exc


def _task(slug: str, root: Path) -> Task:
    try:
        return find_task(slug, root)
    except (KeyError, TaskFormatError) as exc:
        raise _fail(str(exc).strip("'\"")) from exc


@tasks_app.command("list")
def tasks_list(tasks_root: TasksRoot = TASKS_ROOT, as_json: JsonFlag = False) -> None:
    """A table of the suite: contest, slug, metrics, figures, files, checks; totals,
    references by kind (--json: every field of each task)."""
    try:
        tasks = load_suite(tasks_root)
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    rows = []
    for t in tasks:
        m = t.manifest
        rows.append(
            {
                "suite": m.suite,
                "year": m.year,
                "problem": m.problem,
                "slug": m.slug,
                "metrics": len(t.scoring.metric),
                "figures": len(m.figures),
                "attachments": sum(a.present for a in m.attachments),
                "missing": sum(not a.present for a in m.attachments),
                "incomplete": t.incomplete,
                "checks": len(t.gate.check),
                "references": _reference_kinds(t),
                "replayed": t.replay_spec is not None,
            }
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    from tbmm.tables import Col, emit

    cols = [
        Col("contest", "id"),
        Col("slug", "id"),
        Col("metrics", "num"),
        Col("figures", "num", keep=60),
        Col("files", "num", keep=70),
        Col("checks", "num", keep=50),
    ]
    cells = []
    for r in rows:
        files = str(r["attachments"]) + (f"+{r['missing']}" if r["missing"] else "")
        cells.append(
            [
                f"{r['suite']} {r['year']} {r['problem']}",
                r["slug"] + (" *" if r["incomplete"] else ""),
                str(r["metrics"]),
                str(r["figures"]),
                files,
                str(r["checks"]),
            ]
        )
    emit(
        console,
        cols,
        cells,
        title=f"TB-MathModel tasks ({len(rows)})",
        caption="files: official attachments present (+N declared but missing upstream); "
        "* incomplete task (left out of `--tasks all` and of headline means)",
    )
    console.print(
        f"{sum(r['metrics'] for r in rows)} metrics, {sum(r['figures'] for r in rows)} figures, {sum(r['checks'] for r in rows)} gate checks"
    )
    kinds: dict[str, int] = {}
    for r in rows:
        for k, n in r["references"].items():
            kinds[k] = kinds.get(k, 0) + n
    console.print(
        "references by kind: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())),
        highlight=False,
    )


def _reference_kinds(t: Task) -> dict[str, int]:
    """How many of the task's metrics have each reference kind ("unstated" when missing)."""
    out: dict[str, int] = {}
    for m in t.scoring.metric:
        k = m.reference.kind if m.reference is not None else "unstated"
        out[k] = out.get(k, 0) + 1
    return out


@tasks_app.command("show")
def tasks_show(slug: str, tasks_root: TasksRoot = TASKS_ROOT, as_json: JsonFlag = False) -> None:
    """One task in full: provenance, attachments, figures, metric panel, gate, panel papers."""
    from tbmm import exact
    from tbmm import floor as floor_mod

    t = _task(slug, tasks_root)
    try:
        metrics = t.metrics
        doc = {
            "manifest": t.manifest.model_dump(mode="json"),
            "metrics": [
                {**m.spec.model_dump(mode="json"), "anchor": m.anchor_text} for m in metrics
            ],
            "gate": t.gate.model_dump(mode="json", exclude_none=True),
            "panel": t.panel.model_dump(mode="json"),
            "baseline": t.baseline.model_dump(mode="json"),
            "floor": json.loads(exact.dumps(floor_mod.stored(t))),
            "schema": t.schema,
        }
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    if as_json:
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    m = t.manifest
    console.rule(f"{m.slug} — {m.suite} {m.year} {m.problem}: {m.title}")
    p = m.provenance
    console.print(
        f"anchor paper: {p.paper_id} — {p.paper_title}\n  reproduction: {p.reproduction_level}\n  scope: {p.reproduction_scope}\n  source: {p.anchor_source} (sha256 {p.anchor_sha256[:12]}…)",
        highlight=False,
    )
    from tbmm.tables import Col, emit

    emit(
        console,
        [
            Col("path", "id"),
            Col("bytes", "num"),
            Col("sha256", "num", keep=40),
            Col("present", "num"),
        ],
        [
            [
                a.path.removeprefix("environment/data/attachments/"),
                str(a.bytes or "?"),
                (a.sha256 or "unknown")[:12],
                "yes" if a.present else "MISSING",
            ]
            for a in m.attachments
        ],
        title="attachments",
    )
    if m.figures:
        emit(
            console,
            [
                Col("id", "id"),
                Col("page", "num"),
                Col("bbox", "num", keep=30),
                Col("caption", "text"),
            ],
            [
                [f.id, str(f.page), ", ".join(f"{v:.0f}" for v in f.bbox), f.caption]
                for f in m.figures
            ],
            title="figures",
        )
    emit(
        console,
        [
            Col("id", "id"),
            Col("path", "id", keep=20),
            Col("direction", "num"),
            Col("anchor", "num"),
            Col("unit", "num", keep=50),
            Col("band", "num"),
            Col("weight", "num", keep=60),
            Col("reference", "num", keep=40),
        ],
        [
            [
                x.spec.id + (" (excluded)" if x.spec.exclude else ""),
                x.spec.path,
                x.spec.direction.value,
                x.anchor_text,
                x.spec.unit,
                x.spec.band,
                x.spec.weight,
                x.spec.reference.kind if x.spec.reference else "UNSTATED",
            ]
            for x in metrics
        ],
        title="metric panel",
    )
    for x in metrics:
        s = x.spec
        console.print(f"[bold]{s.id}[/bold] ({s.path}): {s.rationale}", highlight=False)
        if s.reference:
            console.print(
                f"  reference ({s.reference.kind}): {s.reference.source}", highlight=False
            )
            if s.reference.note:
                console.print(f"  note: {s.reference.note}", highlight=False)
            for h in s.reference.history:
                console.print(
                    f"  replaced {h.value} ({h.kind}, {h.source}): {h.evidence}", highlight=False
                )
    emit(
        console,
        [
            Col("id", "id"),
            Col("form", "num"),
            Col("paths", "text", min_width=14),
            Col("justification", "text", keep=30, min_width=16),
        ],
        [[c.id, c.form.value, ", ".join(c.paths()), c.justification] for c in t.gate.check],
        title=f"gate (anchor feasible: {t.gate.anchor.feasible})",
    )
    if not t.gate.anchor.feasible:
        console.print(f"[yellow]anchor infeasible:[/yellow] {t.gate.anchor.evidence}")
    _show_panel(t)
    _print_floor(t, doc["floor"])


def _show_panel(t: Task) -> None:
    """The reference panel: each paper, its scored values (with page and locator when read
    from its PDF) and why each other metric, or the whole paper, is not scored."""
    from tbmm.tables import Col, emit

    panel = t.panel
    paths = {m.id: m.path for m in t.metrics}
    scored = {p for p, _ in t.panel_anchors}
    rows = []
    for pp in panel.papers:
        d = pp.designation
        recs = {r.path: r for r in pp.fields}
        vals = []
        for k, v in pp.values.items():
            r = recs.get(paths.get(k, ""))
            where = (
                f" (p{r.page}, {r.locator}"
                + (f"; {r.transformation})" if r.transformation != "as_printed" else ")")
                if r
                else ""
            )
            vals.append(f"{k} = {v}{where}")
        vals += [
            f"{k}: {x.reason}" + (f" (p{x.page})" if x.page else "")
            for k, x in pp.excluded_fields.items()
        ]
        rows.append(
            [
                pp.paper_id,
                pp.role,
                f"{d.award}, {d.results_list} p{d.page} l{d.line}" if d else "",
                "scored"
                if pp.paper_id in scored
                else f"not scored: {pp.exclusion_reason or 'no scored field'}",
                "; ".join(vals),
            ]
        )
    emit(
        console,
        [
            Col("paper", "id"),
            Col("role", "num"),
            Col("designation", "text", keep=20),
            Col("eq. 1", "text", keep=20),
            Col("values and exclusions", "text", min_width=30),
        ],
        rows,
        title=f"reference panel ({len(panel.papers)} papers, {len(scored)} scored in eq. 1)",
    )
    if panel.literature_split:
        console.print(
            f"[yellow]literature split:[/yellow] {panel.literature_split_note}", highlight=False
        )


def _print_floor(t: Task, fl: dict[str, Any]) -> None:
    """The task's stored floor (floor.json): the baseline F and the naive answers."""
    from tbmm import rules
    from tbmm.tables import Col, emit

    b = fl["baseline"]
    f_t = Fraction(fl.get("floor", b["raw"]))
    emit(
        console,
        [
            Col("naive answer", "id"),
            Col("status", "num"),
            Col("gate", "num"),
            Col("raw", "num"),
            Col("O-Eval", "num"),
            Col("reward", "num"),
            Col("how", "text", keep=40, min_width=16),
        ],
        [
            [
                n["name"],
                n["status"],
                n["gate"],
                f"{float(Fraction(n['raw'])):.3f}",
                f"{float(Fraction(n['o_eval'])):.3f}",
                f"{float(rules.skill(Fraction(n['raw']), rules.ONE, f_t)):.3f}",
                n["how"],
            ]
            for n in fl.get("naive", [])
        ],
        title="naive answers (floor.json; reward = the default reward, skill over F_t)",
    )
    best = fl.get("best_naive", {})
    console.print(
        f"baseline F = {b['raw']} (≈{float(Fraction(b['raw'])):.4f}; pipeline {b['pipeline']}): "
        f"Robust BO-Eval's F and Multi-BO's f_t; best naive answer: {best.get('name', '—')} "
        f"(raw ≈{float(Fraction(best.get('raw', '0'))):.4f}); naive floor F_t = max of the two "
        f"≈{float(f_t):.4f}: the default reward measures skill over it",
        highlight=False,
    )
    from tbmm.naive import Generator

    why = Generator(t).hints.headroom
    if why:
        console.print(f"[yellow]no headroom over the naive floor:[/yellow] {why}", highlight=False)


@tasks_app.command("validate")
def tasks_validate(tasks_root: TasksRoot = TASKS_ROOT, as_json: JsonFlag = False) -> None:
    """Exit 0 only if every task is consistent (paths, checksums, figures, panel, gate, schema).

    Tasks whose official attachments are missing are flagged `incomplete` (not an error:
    they are declared, and `tbmm tasks fetch-assets` fills them in where a network exists).
    A task whose naive floor is within 0.1 of the reference fails unless its naive.toml
    says why (`headroom`); such a task is flagged `no headroom`."""
    from tbmm import floor
    from tbmm.naive import Generator
    from tbmm.validate import validate_all

    n, problems = validate_all(tasks_root)
    suite = load_suite(tasks_root)
    incomplete = {t.slug: t.missing_attachments for t in suite if t.incomplete}
    no_headroom: dict[str, str] = {}  # acknowledged in naive.toml: the reward cannot discriminate
    for t in suite:
        with contextlib.suppress(TaskFormatError):
            why = Generator(t).hints.headroom
            if why and 1 - floor.floor_f(t) <= Fraction(1, 10):
                no_headroom[t.slug] = why
    if as_json:
        print(
            json.dumps(
                {
                    "ok": not problems,
                    "tasks": n,
                    "problems": [p.to_json() for p in problems],
                    "incomplete": incomplete,
                    "no_headroom": no_headroom,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        for slug, files in incomplete.items():
            console.print(
                f"[yellow]![/yellow] {slug} \\[incomplete] missing attachment(s): {', '.join(files)}",
                highlight=False,
            )
        for slug, why in no_headroom.items():
            console.print(
                f"[yellow]![/yellow] {slug} \\[no headroom over the naive floor] {why}",
                highlight=False,
            )
        for p in problems:
            console.print(f"[red]✗[/red] {p.task} [{p.check}] {p.message}", highlight=False)
        if problems:
            console.print(f"[red]{len(problems)} problem(s) in {n} tasks[/red]")
        else:
            console.print(f"[green]✓ {n} tasks validate[/green]")
    raise typer.Exit(1 if problems else 0)


def _naive_cell(t: Task) -> str:
    """The best naive answer of a task (floor.json): name, the paper's O-Eval (the largest
    over the naive set) and the largest default reward (skill over F_t) any of them earns."""
    from tbmm import floor, rules

    ns = floor.naive(t)
    if not ns:
        return "n/a"
    f_t = floor.floor_f(t)
    best = max(ns, key=lambda n: Fraction(n["o_eval"]))
    reward = max(rules.skill(Fraction(n["raw"]), rules.ONE, f_t) for n in ns)
    return f"{best['name']} {float(Fraction(best['o_eval'])):.2f} / {float(reward):.2f}"


@tasks_app.command("exploits")
def tasks_exploits(
    only: Annotated[str, typer.Option("--only", help="One task slug (default: all).")] = "",
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="A markdown table.")] = False,
) -> None:
    """Try the generated adversarial artifacts on every task (blind extremes, pushed claims,
    stripped support, omitted gated fields). Exit 1 if one earns credit unexplained."""
    from tbmm import exact, floor
    from tbmm.exploits import KINDS, audit, summary

    try:
        tasks = [_task(only, tasks_root)] if only else load_suite(tasks_root)
        results = {t.slug: audit(t) for t in tasks}
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    open_ = [a for found in results.values() for a in found if a.unexplained]
    if as_json:
        print(
            json.dumps(
                {
                    slug: {
                        "summary": summary(t, results[slug]),
                        "attempts": [a.to_json() for a in results[slug]],
                        "naive": [
                            {k: v for k, v in n.items() if k != "artifact"}
                            for n in json.loads(exact.dumps(floor.naive(t)))
                        ],
                    }
                    for slug, t in ((t.slug, t) for t in tasks)
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        raise typer.Exit(1 if open_ else 0)
    if markdown:
        print("| task | " + " | ".join(KINDS) + " | best naive answer (O-Eval / reward) |")
        print("|---|" + "---|" * len(KINDS) + "---|")
        for t in tasks:
            found = results[t.slug]
            row = summary(t, found)
            cells = []
            for k in KINDS:
                worst = max((a.o_eval for a in found if a.kind == k), default=None)
                cells.append("n/a" if worst is None else f"{float(worst):.2f} {row[k]}")
            print(f"| {t.slug} | " + " | ".join(cells) + f" | {_naive_cell(t)} |")
        raise typer.Exit(1 if open_ else 0)
    table = Table(title="exploits: max effective O-Eval per kind (caught ≤ 0.1)")
    table.add_column("task", overflow="fold")
    for k in KINDS:
        table.add_column(k, justify="right")
    table.add_column("best naive (O-Eval / reward)", justify="right")
    style = {"caught": "green", "known": "yellow", "OPEN": "red", "n/a": "dim"}
    for t in tasks:
        found = results[t.slug]
        row = summary(t, found)
        cells = []
        for k in KINDS:
            worst = max((a.o_eval for a in found if a.kind == k), default=None)
            shown = "—" if worst is None else f"{float(worst):.2f}"
            cells.append(f"[{style[row[k]]}]{shown} {row[k]}[/{style[row[k]]}]")
        table.add_row(t.slug, *cells, _naive_cell(t))
    console.print(table)
    for a in open_:
        console.print(f"[red]open:[/red] {a.name} earns O-Eval {float(a.o_eval):.3f}")
    raise typer.Exit(1 if open_ else 0)


@tasks_app.command("build")
def tasks_build(
    source: Annotated[
        Path, typer.Option(help="The source release (../shared/tbmm-source).")
    ] = Path("../shared/tbmm-source"),
    tasks_root: TasksRoot = TASKS_ROOT,
    only: Annotated[
        str, typer.Option(help="Comma-separated slugs to rebuild (default: all).")
    ] = "",
) -> None:
    """Regenerate every task's generated files from the source release and the curated inputs."""
    from rich.progress import Progress

    from tbmm.build import BuildError, build_all, source_task_dirs

    try:
        total = len(source_task_dirs(source)) if not only else len(only.split(","))
        with Progress(console=err, transient=True) as progress:
            bar = progress.add_task("building", total=total)

            def step(slug: str) -> None:
                progress.update(bar, advance=1, description=slug)

            results = build_all(source, tasks_root, set(only.split(",")) if only else None, step)
    except (BuildError, TaskFormatError, FileNotFoundError) as exc:
        raise _fail(str(exc), 1) from exc
    for r in results:
        console.print(
            f"built {r.slug}: {r.fields} fields, {r.attachments} attachments"
            + (f" (+{r.missing} missing upstream)" if r.missing else "")
            + f", {r.figures} figures"
        )
    console.print(f"[green]{len(results)} tasks built[/green]")


@tasks_app.command("fetch-assets")
def tasks_fetch_assets(tasks_root: TasksRoot = TASKS_ROOT, timeout: float = 20.0) -> None:
    """Download attachments absent from the source release; say clearly which are still missing."""
    from tbmm.fetch import fetch_task

    missing = 0
    for t in load_suite(tasks_root):
        for r in fetch_task(t, timeout):
            style = {"fetched": "green", "present": "green", "missing": "red"}[r.status]
            console.print(
                f"[{style}]{r.status}[/{style}] {r.task}: {r.path.removeprefix('environment/data/attachments/')} — {r.detail}",
                highlight=False,
            )
            missing += r.status == "missing"
    if missing:
        console.print(
            f"[red]{missing} attachment(s) still missing[/red] (no network here? the tasks remain usable; agents see what is present)"
        )
    raise typer.Exit(1 if missing else 0)


def _read_artifact_bytes(path: Path, task: Task | None = None) -> bytes:
    """The file's bytes, refused (exit 2) past the byte cap without reading the rest."""
    from tbmm.bounds import DEFAULT_CAPS, BoundsError, read_capped

    try:
        return read_capped(path, task.caps if task is not None else DEFAULT_CAPS)
    except BoundsError as exc:
        raise _fail(f"{path}: {exc}") from exc
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_artifact_file(path: Path, task: Task) -> dict:
    """The artifact of `task` parsed exactly, within the task's input caps (exit 2 if not)."""
    from tbmm.scoring import ArtifactError, read_artifact

    data = _read_artifact_bytes(path, task)
    try:
        return read_artifact(data, task.caps)
    except ArtifactError as exc:
        raise _fail(f"{path}: {exc}") from exc


@app.command()
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
    from tbmm.entry import print_score, score_of
    from tbmm.pipeline import evaluate

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


@app.command()
def gate(
    artifact: Annotated[Path, typer.Argument(help="The agent's JSON artifact.")],
    task: Annotated[str, typer.Option("--task", help="Task slug.")],
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
) -> None:
    """Feasibility gate: exit 0 pass or warning, 1 hard fail, 2 unreadable input."""
    from tbmm.entry import print_gate
    from tbmm.pipeline import evaluate

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


@app.command()
def replay(
    artifact: Annotated[Path, typer.Argument(help="The agent's JSON artifact.")],
    task: Annotated[str, typer.Option("--task", help="Task slug.")],
    tasks_root: TasksRoot = TASKS_ROOT,
    as_json: JsonFlag = False,
) -> None:
    """Replay an answer's decisions: claimed vs replayed values, each constraint, the verdict.

    Exit 0 consistent, 1 infeasible or misreported, 2 unreadable (or the task has no replay)."""
    from tbmm.models import REPLAYED
    from tbmm.pipeline import evaluate

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


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="Worker processes (default: one per core).", min=0)
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

    from tbmm.serve import TOKEN_ENV, run

    if token is not None:
        if not token.strip():
            raise _fail("--token must not be empty")
        os.environ[TOKEN_ENV] = token  # the workers read it from their environment

    n = workers or (os.cpu_count() or 1)
    err.print(f"tbmm serve on http://{host}:{port} ({n} worker(s)); docs at /docs")
    try:
        run(host, port, n)
    except RuntimeError as exc:
        raise _fail(str(exc)) from exc


@app.command()
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
    from tbmm.viewer import run

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


def main() -> None:  # pragma: no cover - console entry
    from tbmm.entry import main as entry

    entry()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


# The task whose anchor `bench --lean` verifies on the command line and in a batch.
_LEAN_BENCH_TASK = "mcm-2025-b-juneau-tourism"


@app.command()
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
            help="The Lean layer's costs instead: a long-list artifact, the audit, the verify "
            "command line, a batch.",
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
        from tbmm.bench import bench_cli

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
        _bench_lean(one, entries, list_task, batch, tasks_root, as_json)
        return
    from tbmm.bench import bench_mixed, bench_replays

    tasks = [_task(s, tasks_root) for s in task] if task else load_suite(tasks_root)
    rows = bench_mixed(tasks, seconds)
    claims = [t for t in tasks if t.replay_spec is None]
    if claims and len(claims) < len(tasks):
        rows += bench_mixed(claims, seconds, group="no replay")
    speedups = []
    if replays:
        rows += bench_replays(tasks, seconds / 2)
        if reference_runs > 0:
            from tbmm.bench import bench_replay_speedups

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

    from tbmm import bench as B

    if list_task is not None:
        lists = [_task(list_task, tasks_root)]
    else:
        lists = []
        for x in load_suite(tasks_root):
            try:
                B.wildcard_list(x)
            except ValueError:
                continue
            lists.append(x)
    figures = [B.bench_lean_list(x, entries) for x in lists]
    figures += [B.bench_audit(), B.bench_verify_cli(t), B.bench_batch(t, n)]
    load = os.getloadavg()[0]
    if as_json:
        print(
            json.dumps({"load_average": load, "figures": [f.to_json() for f in figures]}, indent=2)
        )
        return
    for f in figures:
        rate = f" = {f.rate:.1f}/s" if f.count > 1 else ""
        console.print(
            f"{f.name:12s} {f.seconds:6.2f} s wall {f.cpu_seconds:6.2f} s CPU{rate}  "
            f"[{f.outcome}] {f.detail}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    console.print(
        f"load average {load:.1f} on {os.cpu_count()} CPUs: wall time is mostly waiting for a "
        "core; CPU time is what an idle machine would take",
        highlight=False,
    )


def _print_lean_scope(scope: dict[str, dict[str, str]]) -> None:
    """Which replayed values the Lean kernel recomputed and which it took from Python."""
    if not scope:
        return
    by_kernel = [p for p, e in scope.items() if e.get("by") == "lean_kernel"]
    by_python = [p for p, e in scope.items() if e.get("by") != "lean_kernel"]
    console.print(
        f"replayed values: {len(by_kernel)} recomputed by the Lean kernel, "
        f"{len(by_python)} taken from the Python replay (not recomputed by the kernel):",
        highlight=False,
    )
    for p in by_python:
        e = scope[p]
        tol = f"; agree {e['agree']}" if "agree" in e else ""
        console.print(
            f"  [yellow]python[/yellow] replayed.{p}: {e['precision']}{tol}", highlight=False
        )


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
    from tbmm.bounds import BoundsError, read_capped
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


@app.command()
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
    for issue in rep.schema_issues:
        console.print(f"[yellow]schema:[/yellow] {issue}", highlight=False)
    style = {0: "green", 1: "red"}.get(rep.exit_code, "magenta")
    verdict = {0: "FEASIBLE", 1: "INFEASIBLE"}.get(rep.exit_code, "NO VERDICT (Lean disagrees)")
    lean = rep.lean_detail
    console.print(
        f"[{style}]{verdict}[/{style}] {rep.task}: gate {rep.gate}, Lean {rep.lean}"
        + (
            f" ({lean.get('obligations', 0)} obligations over {lean.get('instances', 0)} check"
            f" instances, {lean.get('toolchain', '')})"
            if lean
            else ""
        ),
        highlight=False,
    )
    for f in rep.failing:
        console.print(f"  [red]✗[/red] {f}", highlight=False)
    for g in lean.get("gaps", []) if lean else []:
        console.print(f"  [yellow]gap (not claimed):[/yellow] {g}", highlight=False)
    _print_lean_scope(rep.lean_scope)
    console.print(
        f"O-Eval {rep.o_eval:.4f} [{rep.o_eval_exact}] | raw {rep.raw_exact} | Robust BO-Eval {rep.robust_bo_eval:.4f} | skill {rep.skill:.4f} | status {rep.status}",
        highlight=False,
    )
    raise typer.Exit(rep.exit_code)


DbOpt = Annotated[Path, typer.Option("--db", help="SQLite results store.")]


@app.command("leaderboard")
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
    from tbmm.leaderboard import to_csv, to_json, to_markdown, to_table
    from tbmm.results import ResultsError, leaderboard

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
        from tbmm.plots import write_plots

        for p in write_plots(lb, plots):
            err.print(f"wrote {p}")


@app.command("report")
def report_cmd(
    html: Annotated[Path, typer.Option("--html", help="Output HTML file.")],
    db: DbOpt = Path("runs/tbmm.sqlite"),
    tasks_root: TasksRoot = TASKS_ROOT,
) -> None:
    """A static, self-contained HTML report: tables, plots, per-task drill-down with provenance."""
    from tbmm.report import write_html
    from tbmm.results import ResultsError, leaderboard

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


@tasks_app.command("baseline-artifacts")
def tasks_baseline_artifacts(
    out: Annotated[
        Path, typer.Option("--out", help="Folder to write <slug>_result.json files into.")
    ],
    pipeline: Annotated[
        str | None, typer.Option(help="Baseline pipeline (default: each task's default).")
    ] = None,
    tasks_root: TasksRoot = TASKS_ROOT,
) -> None:
    """Write the baseline pipeline's reported values as artifacts (`tbmm score` shows their raw = F)."""
    from tbmm import exact
    from tbmm.scoring import baseline_artifact

    out.mkdir(parents=True, exist_ok=True)
    tasks = load_suite(tasks_root)
    for t in tasks:
        doc = baseline_artifact(t, pipeline)
        (out / f"{t.slug}_result.json").write_text(exact.dumps(doc) + "\n", encoding="utf-8")
    console.print(f"wrote {len(tasks)} baseline artifacts to {out}")
