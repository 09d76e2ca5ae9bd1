"""`tbmm tasks`: list, show, validate, exploits, build, fetch-assets, baseline-artifacts.

Why a module of its own: the suite's inspection and build commands are most of the CLI's
printing and change with the task files, not with the verdict; `tbmm.cli.root` mounts the group
when `tasks` is named (or listed by --help).
"""

from __future__ import annotations

import contextlib
import json
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tbmm.cli.help import typer_app
from tbmm.cli.root import JsonFlag, TasksRoot, _fail, _task, console, err
from tbmm.suite.tasks import TASKS_ROOT, Task, TaskFormatError, load_suite

tasks_app = typer_app(
    no_args_is_help=True,
    add_completion=False,
    help="Inspect, build and validate the task suite.",
)


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
    from tbmm.reports.tables import Col, emit

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
    from tbmm.core import exact
    from tbmm.verdict import floor as floor_mod

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
    from tbmm.reports.tables import Col, emit

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
    from tbmm.reports.tables import Col, emit

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
    from tbmm.core import rules
    from tbmm.reports.tables import Col, emit

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
    from tbmm.verdict.naive import Generator

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
    from tbmm.tooling.validate import validate_all
    from tbmm.verdict import floor
    from tbmm.verdict.naive import Generator

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


def _worst(found: list[Any], kind: str) -> Fraction | None:
    """The largest O-Eval an exploit of `kind` earned (None: the kind does not apply)."""
    return max((a.o_eval for a in found if a.kind == kind), default=None)


def _naive_cell(t: Task) -> str:
    """The best naive answer of a task (floor.json): name, the paper's O-Eval (the largest
    over the naive set) and the largest default reward (skill over F_t) any of them earns."""
    from tbmm.core import rules
    from tbmm.verdict import floor

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
    from tbmm.core import exact
    from tbmm.verdict import floor
    from tbmm.verdict.exploits import KINDS, audit, summary

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
                worst = _worst(found, k)
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
            worst = _worst(found, k)
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

    from tbmm.tooling.build import BuildError, build_all, source_task_dirs

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
    from tbmm.tooling.fetch import fetch_task

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
    from tbmm.core import exact
    from tbmm.verdict.scoring import baseline_artifact

    out.mkdir(parents=True, exist_ok=True)
    tasks = load_suite(tasks_root)
    for t in tasks:
        doc = baseline_artifact(t, pipeline)
        (out / f"{t.slug}_result.json").write_text(exact.dumps(doc) + "\n", encoding="utf-8")
    console.print(f"wrote {len(tasks)} baseline artifacts to {out}")
