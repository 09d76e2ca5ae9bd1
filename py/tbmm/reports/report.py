"""A static, self-contained HTML report: leaderboard, plots, per-task drill-down, provenance.

One file with inline CSS, the plots as base64 PNG data URIs and the CJK characters it shows
as an embedded font subset (so Chinese titles render on a machine without CJK fonts); no
script, no external resource (a Content-Security-Policy meta tag forbids any, so a stray one
shows up as a browser console error instead of a silent fetch). Rendered from the Jinja2
templates the viewer uses (templates/common/: page skeleton, style, verdict partial;
templates/report/), autoescaped: artifact-derived text (reasons, messages, entry labels) may
contain markup. The page carries no timestamp, so the same inputs give the same bytes.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from tbmm.core.exact import fraction_to_text
from tbmm.reports import leaderboard as L
from tbmm.reports import leaderboard_render as R
from tbmm.reports.leaderboard import Leaderboard, TrialRow
from tbmm.verdict.floor import baseline_f

CSP = "default-src 'none'; img-src data:; font-src data:; style-src 'unsafe-inline'"


def anchor_id(slug: str) -> str:
    return "task-" + re.sub(r"[^A-Za-z0-9_-]", "_", slug)


def fmt_exact(text: Any, places: int = 4) -> str:
    """A report's exact number text (decimal or p/q) rounded for display; as is if unparsable."""
    if text is None:
        return "—"
    try:
        return L.fmt_fixed(Fraction(str(text)), places)
    except (ValueError, ZeroDivisionError):
        return str(text)


def reference_text(ref: Any) -> str:
    """A metric reference's source, note and replaced values, as one line."""
    if ref is None:
        return ""
    parts = [ref.source] + ([ref.note] if ref.note else [])
    parts += [f"replaced {h.value} ({h.kind}): {h.evidence}" for h in ref.history]
    return " — ".join(parts)


# ---------------------------------------------------------------------------- view models
# Plain dicts and lists for the templates (templates/report/); every string is escaped there.


def _leaderboard_view(lb: Leaderboard) -> dict[str, Any]:
    if lb.empty:
        return {"empty": R.EMPTY_MESSAGE}
    return {
        "empty": "",
        "baseline_msg": lb.baseline_message if lb.baseline_state != "ok" else "",
        "header": R.MAIN_HEADER,
        "rows": [
            {"cells": list(r), "pareto": x.pareto}
            for r, x in zip(R.main_rows(lb), lb.entries, strict=True)
        ],
        "notes": list(R.all_notes(lb)),
        "help": list(R.COLUMN_HELP.items()),
    }


def _plots_view(lb: Leaderboard) -> dict[str, Any]:
    try:
        from tbmm.reports.plots import figures, png_bytes
    except ImportError:  # the `plots` extra (matplotlib) is not installed
        return {"missing": 'plots need matplotlib: pip install "tbmm[plots]"', "items": []}
    items = [
        {
            "title": p.title,
            "notes": p.notes,
            "data": base64.b64encode(png_bytes(p.figure)).decode("ascii"),
        }
        for p in figures(lb)
    ]
    return {"missing": "", "items": items}


def _tables_view(lb: Leaderboard) -> dict[str, Any]:
    if lb.empty:
        return {}
    tasks = [
        {
            "slug": t,
            "anchor": anchor_id(t),
            "split": t in lb.split_tasks,
            "incomplete": t in lb.incomplete_tasks,
            "cells": list(r[1:]),
        }
        for t, r in zip(lb.tasks, R.task_rows(lb), strict=True)
    ]
    return {
        "suite_header": R.suite_header(lb),
        "suite_rows": [list(r) for r in R.suite_rows(lb)],
        "task_header": ["Task", "Suite"] + [x.shown for x in lb.entries],
        "tasks": tasks,
        "marks_note": R.TASK_MARKS_NOTE,
    }


def _panel_value(task: Any, pp: Any, metric_id: str, value: str) -> str:
    """`metric = value`, with the page and locator of its record when read from a PDF."""
    path = next((m.path for m in task.metrics if m.id == metric_id), "")
    rec = next((r for r in pp.fields if r.path == path), None)
    return f"{metric_id} = {value}" + (f" (p{rec.page}, {rec.locator})" if rec else "")


def naive_view(task: Any) -> dict[str, Any]:
    """The task's naive answers (floor.json) with their verdicts and default reward."""
    from tbmm.core import rules
    from tbmm.verdict import floor

    f_t = floor.floor_f(task)
    return {
        "floor": fraction_to_text(f_t),
        "rows": [
            [
                n["name"],
                n["status"],
                n["gate"],
                fmt_exact(n["raw"], 3),
                fmt_exact(n["o_eval"], 3),
                L.fmt_fixed(rules.skill(Fraction(n["raw"]), rules.ONE, f_t), 3),
                n["how"],
            ]
            for n in floor.naive(task)
        ],
    }


def anchor_provenance(task: Any) -> list[tuple[str, Any]]:
    """The rows naming where a task's anchor came from (the report's task page, the viewer)."""
    m = task.manifest
    p = m.provenance
    return [
        ("title", m.title),
        ("suite / year / problem", f"{m.suite} {m.year} {m.problem}"),
        ("anchor paper", f"{p.paper_id}: {p.paper_title}"),
        ("reproduction level", p.reproduction_level),
        ("reproduction scope", p.reproduction_scope),
        ("anchor source", p.anchor_source),
        ("anchor sha256", p.anchor_sha256),
    ]


def _task_view(task: Any) -> dict[str, Any]:
    """Where every anchor came from: the reproduced paper, its gate feasibility, the panel."""
    panel = task.panel
    bl = task.baseline
    vals = bl.pipelines.get(bl.default_pipeline, {})
    return {
        "provenance": anchor_provenance(task),
        "feasible": task.gate.anchor.feasible,
        "evidence": task.gate.anchor.evidence,
        "metrics": [
            {
                "id": mt.id,
                "path": mt.path,
                "direction": mt.spec.direction.value,
                "unit": mt.spec.unit,
                "weight": mt.spec.weight,
                "band": mt.spec.band,
                "anchor": mt.anchor_text,
                "kind": mt.spec.reference.kind if mt.spec.reference else "unstated",
                "source": reference_text(mt.spec.reference),
                "exclude": mt.spec.exclude,
            }
            for mt in task.metrics
        ],
        "panel": {
            "n": len(panel.papers),
            "split": panel.literature_split,
            "split_note": panel.literature_split_note,
            "rows": [
                [
                    pp.paper_id,
                    pp.title,
                    pp.role,
                    (
                        f"{pp.designation.award}, {pp.designation.results_list} "
                        f"p{pp.designation.page} l{pp.designation.line}"
                        if pp.designation
                        else pp.source
                    ),
                    ", ".join(_panel_value(task, pp, k, v) for k, v in pp.values.items()),
                    ", ".join(
                        f"{k}: {x.reason}" + (f" (p{x.page})" if x.page else "")
                        for k, x in pp.excluded_fields.items()
                    ),
                    pp.exclusion_reason or "",
                ]
                for pp in panel.papers
            ],
        },
        "baseline": {
            "f": fraction_to_text(baseline_f(task)),
            "pipeline": bl.default_pipeline,
            "rows": [[k, v.value, v.source] for k, v in vals.items()],
        },
        "naive": naive_view(task),
    }


def _file_links(rep: Mapping[str, Any], base: Path | None) -> list[dict[str, str]]:
    """Links to the trial's files (ATIF trajectory first), relative to the report's folder so
    the runs folder can move with it. Plain links: the page loads none of them."""
    files = rep.get("files") or {}
    order = ["trajectory.json", "events.jsonl", "trajectory.jsonl", "stdout.txt", "stderr.txt"]
    names = [n for n in order if n in files] + sorted(n for n in files if n not in order)
    what = {
        "trajectory.json": "trajectory (ATIF)",
        "events.jsonl": "raw events (HTTP log)",
        "trajectory.jsonl": "raw events (old format; tbmm runs convert-trajectories)",
    }
    out = []
    for n in names:
        target = Path(files[n])
        href = os.path.relpath(target, base) if base is not None else target.as_uri()
        out.append({"href": Path(href).as_posix(), "label": what.get(n, n)})
    return out


def _trial_view(
    x: L.EntryRow, seed: int, row: TrialRow | None, task: Any, base: Path | None
) -> dict[str, Any]:
    from tbmm.reports.viewer import verdict_view

    head = {"shown": x.shown, "seed": seed}
    if row is None:
        return {**head, "kind": "none", "status": L.NO_TRIAL}
    rep = row.report or {}
    harness = [
        (f"harness {k}", v) for k, v in (rep.get("harness") or {}).items() if v not in (None, "")
    ]
    links = _file_links(rep, base)
    if row.status == L.INFRA:
        facts = [
            (
                "status",
                "no score (an infrastructure error, or a verification with no verdict): left "
                "out of every mean; the entry is partial until it is rerun",
            ),
            ("cause", rep.get("infra_error")),
            *harness,
        ]
        return {**head, "kind": "infra", "status": row.status, "facts": facts, "files": links}
    o = L.fmt_fixed(row.o_eval * 100, 2)
    facts = [
        ("status", row.status),
        ("O-Eval (eq. 1)", f"{o}% (exact {fraction_to_text(row.o_eval)})"),
        ("Robust BO-Eval", f"{L.fmt_fixed(row.robust_bo, 4)}"),
        ("raw score R", fmt_exact(rep.get("raw_exact"), 6)),
        ("cost", "unknown" if row.cost_usd is None else f"${row.cost_usd:.4f}"),
    ]
    if rep.get("error"):
        facts.append(("error", rep.get("error")))
    return {
        **head,
        "kind": "verdict",
        "status": row.status,
        "o_eval": o,
        "gate": row.gate,
        "lean": row.lean,
        "facts": facts + harness,
        "files": links,
        "verdict": verdict_view(rep, task),
    }


def _drilldown_view(
    lb: Leaderboard, rows: Sequence[TrialRow], tasks: Mapping[str, Any], base: Path | None
) -> list[dict[str, Any]]:
    if lb.empty:
        return []
    by_key = {(r.entry, r.task, r.seed): r for r in rows}
    out = []
    for t in lb.tasks:
        task = tasks.get(t)
        out.append(
            {
                "slug": t,
                "anchor": anchor_id(t),
                "head": f"{t} — {task.manifest.title}" if task is not None else t,
                "split": t in lb.split_tasks,
                "suite": lb.task_suites[t],
                "task": _task_view(task) if task is not None else None,
                "trials": [
                    _trial_view(x, s, by_key.get((x.entry, t, s)), task, base)
                    for x in lb.entries
                    for s in x.seeds
                ],
            }
        )
    return out


# ---------------------------------------------------------------------------- page


def _tasks_map(tasks_info: Sequence[Any] | Mapping[str, Any] | None) -> dict[str, Any]:
    if tasks_info is None:
        from tbmm.suite.tasks import load_suite

        tasks_info = load_suite()
    if isinstance(tasks_info, Mapping):
        return dict(tasks_info)
    return {t.slug: t for t in tasks_info}


def _naive_html(task: Any) -> str:
    """The naive-answers section of a task's drill-down, alone (for tests and reuse)."""
    from tbmm.reports.templating import environment

    mod = environment().get_template("report/parts.html").module
    return str(mod.naive(naive_view(task)))


def render_html(
    lb: Leaderboard,
    rows: Sequence[TrialRow],
    tasks_info: Sequence[Any] | Mapping[str, Any] | None = None,
    *,
    title: str = "TB-MathModel report",
    base: Path | None = None,
    embed_font: bool = True,
) -> str:
    """The whole page as a string (see `write_html`); file links are relative to `base`
    (the report's folder), absolute file: URIs without it. The CJK characters the page
    shows are embedded as a font subset (`tbmm.reports.fonts`) unless `embed_font` is False."""
    from tbmm.reports import fonts
    from tbmm.reports.templating import environment

    tasks = _tasks_map(tasks_info)
    ctx: dict[str, Any] = {
        "csp": CSP,
        "title": title,
        "n_entries": len(lb.entries),
        "n_tasks": len(lb.tasks),
        "n_headline": len(lb.headline_tasks),
        "n_trials": sum(1 for r in rows if r.task in lb.task_suites),
        "empty": lb.empty,
        "board": _leaderboard_view(lb),
        "plots": _plots_view(lb) if not lb.empty else {"missing": "", "items": []},
        "tables": _tables_view(lb),
        "drill": _drilldown_view(lb, rows, tasks, base),
        "font": None,
        "font_note": "",
    }
    tmpl = environment().get_template("report/report.html")
    page = tmpl.render(**ctx)
    chars = fonts.cjk_chars(page)
    if chars and embed_font:
        font = fonts.embed(page)
        if font is None:
            ctx["font_note"] = (
                f"{len(chars)} CJK character(s) on this page are drawn with the reader's own "
                'fonts: install "tbmm[report]" to embed Noto Sans SC.'
            )
        else:
            ctx["font"] = font
        page = tmpl.render(**ctx)
    return page


def write_html(
    lb: Leaderboard,
    rows: Sequence[TrialRow],
    tasks_info: Sequence[Any] | Mapping[str, Any] | None,
    out_path: Path,
    *,
    title: str = "TB-MathModel report",
) -> Path:
    """Write the report; `tasks_info` is `load_suite()` (list or slug map; None loads it)."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    html_text = render_html(lb, rows, tasks_info, title=title, base=out_path.parent.resolve())
    out_path.write_text(html_text, encoding="utf-8")
    return out_path
