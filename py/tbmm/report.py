"""A static, self-contained HTML report: leaderboard, plots, per-task drill-down, provenance.

One file with inline CSS and the plots as base64 PNG data URIs; no script, no external
resource (a Content-Security-Policy meta tag forbids any, so a stray one shows up as a
browser console error instead of a silent fetch). Every string that reaches the page is
HTML-escaped: artifact-derived text (reasons, messages, entry labels) may contain markup.
The page carries no timestamp, so the same inputs give the same bytes.
"""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from tbmm import leaderboard as L
from tbmm import leaderboard_render as R
from tbmm.exact import fraction_to_text
from tbmm.floor import baseline_f
from tbmm.leaderboard import Leaderboard, TrialRow

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans","Noto Sans CJK SC",sans-serif;
  margin:24px auto;max-width:1200px;padding:0 16px;color:#1d2430;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #dde3ea;padding-bottom:4px;margin-top:2em}
h3{margin-top:1.4em}
table{border-collapse:collapse;margin:8px 0 12px;font-size:.86em}
th,td{border:1px solid #d5dbe3;padding:3px 7px;vertical-align:top}
th{background:#f2f5f8;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr:nth-child(even) td{background:#fafbfc}
.note{color:#4a5563;font-size:.9em}.msg{padding:8px 12px;border-left:4px solid #f0ad4e;background:#fff8ec}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:.8em;font-weight:600}
.scored,.pass,.ok{background:#dff0d8;color:#2d6a2d}.warn,.skipped{background:#fcf8e3;color:#7a5b00}
.gate_failed,.fail,.missing_artifact,.unreadable,.error,.no_trial{background:#f2dede;color:#8a2a2a}
.infra_error{background:#e2e3e5;color:#383d41}
.split{background:#e8e1f5;color:#4b2f86}
figure{margin:12px 0;display:inline-block;vertical-align:top}figure img{max-width:100%;border:1px solid #e3e7ec}
figcaption{font-size:.85em;color:#4a5563}
details{margin:4px 0 4px 0;border:1px solid #e3e7ec;border-radius:4px;padding:2px 8px}
summary{cursor:pointer}code{font-size:.92em;background:#f4f6f8;padding:0 3px;border-radius:3px;word-break:break-all}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:.88em}dt{font-weight:600}dd{margin:0;white-space:pre-wrap}
"""


def esc(x: Any) -> str:
    """HTML-escape anything (quotes too, so it is safe inside attribute values)."""
    return html.escape("" if x is None else str(x), quote=True)


def anchor_id(slug: str) -> str:
    return "task-" + re.sub(r"[^A-Za-z0-9_-]", "_", slug)


def _badge(state: str) -> str:
    cls = re.sub(r"[^a-z_]", "", state.lower()) or "skipped"
    return f'<span class="badge {cls}">{esc(state)}</span>'


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], numeric_from: int = 99) -> str:
    """Rows are pre-rendered HTML cells (callers escape); header cells are escaped here."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i >= numeric_from else f"<td>{c}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _dl(items: Iterable[tuple[str, Any]]) -> str:
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items) + "</dl>"


def _ul(items: Iterable[Any], cls: str = "") -> str:
    lis = "".join(f"<li>{esc(i)}</li>" for i in items)
    if not lis:
        return ""
    return f'<ul class="{cls}">{lis}</ul>' if cls else f"<ul>{lis}</ul>"


def fmt_exact(text: Any, places: int = 4) -> str:
    """A report's exact number text (decimal or p/q) rounded for display; as is if unparsable."""
    if text is None:
        return "—"
    try:
        return L.fmt_fixed(Fraction(str(text)), places)
    except (ValueError, ZeroDivisionError):
        return str(text)


# ---------------------------------------------------------------------------- leaderboard


def _leaderboard_html(lb: Leaderboard) -> str:
    parts = ["<h2 id=leaderboard>Leaderboard</h2>"]
    if lb.empty:
        parts.append(f'<p class="msg">{esc(R.EMPTY_MESSAGE)}</p>')
        return "".join(parts)
    if lb.baseline_state != "ok":
        parts.append(f'<p class="msg">{esc(lb.baseline_message)}</p>')
    rows = []
    for r, x in zip(R.main_rows(lb), lb.entries, strict=True):
        cells = [esc(c) for c in r]
        if x.pareto:
            cells[1] += (
                ' <span class="badge ok" title="on the cost/O-Eval Pareto front">front</span>'
            )
        rows.append(cells)
    parts.append(_table(R.MAIN_HEADER, rows, numeric_from=2))
    parts.append(_ul(R.all_notes(lb), "note"))
    parts.append(_dl(R.COLUMN_HELP.items()))
    return "".join(parts)


def _plots_html(lb: Leaderboard) -> str:
    try:
        from tbmm.plots import figures, png_bytes
    except ImportError:  # the `plots` extra (matplotlib) is not installed
        return '<p class="note">plots need matplotlib: pip install "tbmm[plots]"</p>'
    plots = figures(lb)
    if not plots:
        return ""
    out = ["<h2 id=plots>Plots</h2>"]
    for p in plots:
        data = base64.b64encode(png_bytes(p.figure)).decode("ascii")
        cap = esc(p.title) + "".join(f"<br>{esc(n)}" for n in p.notes)
        out.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{esc(p.title)}">'
            f"<figcaption>{cap}</figcaption></figure>"
        )
    return "".join(out)


def _suites_and_tasks_html(lb: Leaderboard) -> str:
    if lb.empty:
        return ""
    out = ["<h2 id=suites>O-Eval by suite (headline tasks)</h2>"]
    out.append(_table(R.suite_header(lb), [[esc(c) for c in r] for r in R.suite_rows(lb)], 1))
    out.append("<h2 id=per-task>Per-task O-Eval (%), mean over seeds</h2>")
    rows = []
    for t, r in zip(lb.tasks, R.task_rows(lb), strict=True):
        link = f'<a href="#{anchor_id(t)}">{esc(t)}</a>'
        if t in lb.split_tasks:
            link += ' <span class="badge split">literature split</span>'
        if t in lb.incomplete_tasks:
            link += ' <span class="badge split">incomplete</span>'
        rows.append([link] + [esc(c) for c in r[1:]])
    out.append(_table(["Task", "Suite"] + [x.shown for x in lb.entries], rows, 2))
    out.append(f'<p class="note">{esc(R.TASK_MARKS_NOTE)}</p>')
    return "".join(out)


# ---------------------------------------------------------------------------- drill-down


def _panel_value(task: Any, pp: Any, metric_id: str, value: str) -> str:
    """`metric = value`, with the page and locator of its record when read from a PDF."""
    path = next((m.path for m in task.metrics if m.id == metric_id), "")
    rec = next((r for r in pp.fields if r.path == path), None)
    return f"{metric_id} = {value}" + (f" (p{rec.page}, {rec.locator})" if rec else "")


def reference_text(ref: Any) -> str:
    """A metric reference's source, note and replaced values, as one line."""
    if ref is None:
        return ""
    parts = [ref.source] + ([ref.note] if ref.note else [])
    parts += [f"replaced {h.value} ({h.kind}): {h.evidence}" for h in ref.history]
    return " — ".join(parts)


def _provenance_html(task: Any) -> str:
    """Where every anchor came from: the reproduced paper, its gate feasibility, the panel."""
    m = task.manifest
    p = m.provenance
    out = ["<h3>Anchor provenance</h3>"]
    out.append(
        _dl(
            [
                ("title", m.title),
                ("suite / year / problem", f"{m.suite} {m.year} {m.problem}"),
                ("anchor paper", f"{p.paper_id}: {p.paper_title}"),
                ("reproduction level", p.reproduction_level),
                ("reproduction scope", p.reproduction_scope),
                ("anchor source", p.anchor_source),
                ("anchor sha256", p.anchor_sha256),
            ]
        )
    )
    ga = task.gate.anchor
    if ga.feasible:
        out.append(f"<p>Anchor feasibility: {_badge('pass')} the anchor passes its own gate.</p>")
    else:
        out.append(
            f"<p>Anchor feasibility: {_badge('fail')} recorded infeasible, with evidence:</p>"
            f'<p class="note">{esc(ga.evidence)}</p>'
        )
    out.append("<h3>Metrics and task anchor</h3>")
    out.append(
        _table(
            [
                "id",
                "path",
                "direction",
                "unit",
                "weight",
                "band",
                "anchor",
                "reference kind",
                "reference source",
                "excluded",
            ],
            [
                [
                    esc(mt.id),
                    f"<code>{esc(mt.path)}</code>",
                    esc(mt.spec.direction.value),
                    esc(mt.spec.unit),
                    esc(mt.spec.weight),
                    esc(mt.spec.band),
                    esc(mt.anchor_text),
                    esc(mt.spec.reference.kind if mt.spec.reference else "unstated"),
                    esc(reference_text(mt.spec.reference)),
                    esc(mt.spec.exclude),
                ]
                for mt in task.metrics
            ],
        )
    )
    panel = task.panel
    out.append(f"<h3>Reference panel ({len(panel.papers)} paper(s), eq. 1)</h3>")
    if panel.literature_split:
        out.append(
            f'<p><span class="badge split">literature split</span> '
            f"{esc(panel.literature_split_note)}</p>"
        )
    out.append(
        _table(
            [
                "paper",
                "title",
                "role",
                "designation",
                "scored values (page, locator)",
                "not reported",
                "exclusion reason",
            ],
            [
                [
                    esc(pp.paper_id),
                    esc(pp.title),
                    esc(pp.role),
                    esc(
                        f"{pp.designation.award}, {pp.designation.results_list} "
                        f"p{pp.designation.page} l{pp.designation.line}"
                        if pp.designation
                        else pp.source
                    ),
                    esc(", ".join(_panel_value(task, pp, k, v) for k, v in pp.values.items())),
                    esc(
                        ", ".join(
                            f"{k}: {x.reason}" + (f" (p{x.page})" if x.page else "")
                            for k, x in pp.excluded_fields.items()
                        )
                    ),
                    esc(pp.exclusion_reason or ""),
                ]
                for pp in panel.papers
            ],
        )
    )
    bl = task.baseline
    vals = bl.pipelines.get(bl.default_pipeline, {})
    out.append(
        f"<h3>Baseline F = {esc(fraction_to_text(baseline_f(task)))} (floor.json; "
        f"Robust BO-Eval and Multi-BO; baseline.json, pipeline {esc(bl.default_pipeline)})</h3>"
    )
    out.append(
        _table(
            ["metric", "value", "source"],
            [[esc(k), esc(v.value), esc(v.source)] for k, v in vals.items()],
        )
        if vals
        else '<p class="note">no mapped baseline values</p>'
    )
    out.append(_naive_html(task))
    return "".join(out)


def _naive_html(task: Any) -> str:
    """The task's naive answers (floor.json) with their verdicts and default reward."""
    from tbmm import floor, rules

    ns = floor.naive(task)
    f_t = floor.floor_f(task)
    head = (
        f"<h3>Naive answers (floor F_t = {esc(fraction_to_text(f_t))}; "
        "the default reward is skill over F_t)</h3>"
    )
    if not ns:
        return head + '<p class="note">no naive answers stored</p>'
    rows = [
        [
            esc(n["name"]),
            esc(n["status"]),
            esc(n["gate"]),
            esc(fmt_exact(n["raw"], 3)),
            esc(fmt_exact(n["o_eval"], 3)),
            esc(L.fmt_fixed(rules.skill(Fraction(n["raw"]), rules.ONE, f_t), 3)),
            esc(n["how"]),
        ]
        for n in ns
    ]
    return head + _table(["answer", "status", "gate", "raw", "O-Eval", "reward", "how"], rows)


def _metrics_html(score: Mapping[str, Any]) -> str:
    ms = score.get("metrics") or []
    if not ms:
        return '<p class="note">no metric scores in the report</p>'
    rows = []
    for m in ms:
        reward = "excluded" if m.get("excluded") else fmt_exact(m.get("reward_exact"), 4)
        rows.append(
            [
                esc(m.get("id")),
                f"<code>{esc(m.get('path'))}</code>",
                esc(m.get("direction")),
                esc(m.get("anchor")),
                esc("—" if m.get("value") is None else m.get("value")),
                esc(reward),
                esc(m.get("reason")),
            ]
        )
    return _table(["metric", "path", "direction", "anchor", "value", "reward", "reason"], rows)


def _gate_html(rep: Mapping[str, Any]) -> str:
    g = rep.get("gate_report") or {}
    verdict = str(rep.get("gate", g.get("verdict", "skipped")))
    out = [f"<p><b>Gate</b> {_badge(verdict)}</p>"]
    bad = [c for c in g.get("checks", []) if c.get("status") in ("fail", "bad")]
    if bad:
        out.append(
            _table(
                ["check", "form", "status", "values", "message"],
                [
                    [
                        esc(c.get("instance")),
                        esc(c.get("form")),
                        _badge(str(c.get("status"))),
                        esc(", ".join(f"{k} = {v}" for k, v in (c.get("values") or {}).items())),
                        esc(c.get("message")),
                    ]
                    for c in bad
                ],
            )
        )
    n = len(g.get("checks", []))
    if n:
        out.append(f'<p class="note">{n - len(bad)} of {n} check instance(s) hold.</p>')
    out.append(_ul((f"warning: {w}" for w in g.get("warnings", [])), "note"))
    out.append(
        _ul(
            (
                f"replay penalty (not checkable from the artifact): {r.get('id')}: {r.get('description')}"
                for r in g.get("replay_penalties", [])
            ),
            "note",
        )
    )
    return "".join(out)


def _lean_html(rep: Mapping[str, Any]) -> str:
    d = rep.get("lean_detail") or {}
    out = [f"<p><b>Lean</b> {_badge(str(rep.get('lean', 'skipped')))}"]
    if d:
        out.append(
            f" {esc(d.get('obligations', '?'))} obligation(s) checked by the Lean kernel,"
            f" {len(d.get('failing', []))} failing"
            f" ({esc(d.get('toolchain', ''))})"
        )
    out.append("</p>")
    out.append(_ul((f"failing: {f}" for f in d.get("failing", [])), "note"))
    out.append(_ul((f"gap (no evidence in the artifact): {x}" for x in d.get("gaps", [])), "note"))
    if d.get("error"):
        out.append(f'<p class="note">error: {esc(d.get("error"))}</p>')
    return "".join(out)


def _files_html(rep: Mapping[str, Any], base: Path | None) -> str:
    """Links to the trial's files (ATIF trajectory first), relative to the report's folder so
    the runs folder can move with it. Plain links: the page loads none of them."""
    files = rep.get("files") or {}
    if not files:
        return ""
    order = ["trajectory.json", "events.jsonl", "trajectory.jsonl", "stdout.txt", "stderr.txt"]
    names = [n for n in order if n in files] + sorted(n for n in files if n not in order)
    what = {
        "trajectory.json": "trajectory (ATIF)",
        "events.jsonl": "raw events (HTTP log)",
        "trajectory.jsonl": "raw events (old format; tbmm runs convert-trajectories)",
    }
    links = []
    for n in names:
        target = Path(files[n])
        href = os.path.relpath(target, base) if base is not None else target.as_uri()
        links.append(f'<a href="{esc(Path(href).as_posix())}">{esc(what.get(n, n))}</a>')
    return f'<p class="note">files: {" · ".join(links)}</p>'


def _trial_html(x: L.EntryRow, seed: int, row: TrialRow | None, base: Path | None = None) -> str:
    if row is None:
        return (
            f"<details><summary>{esc(x.shown)} · seed {esc(seed)} · {_badge(L.NO_TRIAL)} "
            f"(counted O-Eval 0, Multi-BO −1)</summary><p>No trial was recorded.</p></details>"
        )
    rep = row.report or {}
    if row.status == L.INFRA:
        facts = [
            (
                "status",
                "no score (an infrastructure error, or a verification with no verdict): left "
                "out of every mean; the entry is partial until it is rerun",
            )
        ]
        facts.append(("cause", rep.get("infra_error")))
        facts += [
            (f"harness {k}", v)
            for k, v in (rep.get("harness") or {}).items()
            if v not in (None, "")
        ]
        return (
            f"<details><summary>{esc(x.shown)} · seed {esc(seed)} · {_badge(row.status)} · "
            f"rerun with <code>--resume</code></summary>{_dl(facts)}{_files_html(rep, base)}"
            "</details>"
        )
    score = rep.get("score") or {}
    o = L.fmt_fixed(row.o_eval * 100, 2)
    summary = (
        f"{esc(x.shown)} · seed {esc(seed)} · {_badge(row.status)} · O-Eval {esc(o)}% · "
        f"gate {_badge(row.gate)} · Lean {_badge(row.lean)}"
    )
    facts = [
        ("status", row.status),
        ("O-Eval (eq. 1)", f"{o}% (exact {fraction_to_text(row.o_eval)})"),
        ("Robust BO-Eval", f"{L.fmt_fixed(row.robust_bo, 4)}"),
        ("raw score R", fmt_exact(rep.get("raw_exact"), 6)),
        ("cost", "unknown" if row.cost_usd is None else f"${row.cost_usd:.4f}"),
    ]
    if rep.get("error"):
        facts.append(("error", rep.get("error")))
    facts += [
        (f"harness {k}", v) for k, v in (rep.get("harness") or {}).items() if v not in (None, "")
    ]
    body = [_dl(facts), _files_html(rep, base)]
    body.append(_ul((f"schema: {s}" for s in rep.get("schema_issues", [])), "note"))
    body.append(_metrics_html(score))
    panel = score.get("panel") or []
    if panel:
        body.append(
            _table(
                ["panel paper", "fields", "R(m, S_p)"],
                [
                    [
                        esc(p.get("paper_id")),
                        esc(", ".join(p.get("fields", []))),
                        esc(fmt_exact(p.get("score_exact"))),
                    ]
                    for p in panel
                ],
                2,
            )
        )
    body.append(_ul(score.get("notes", []), "note"))
    body.append(_gate_html(rep))
    body.append(_lean_html(rep))
    if rep.get("failing"):
        body.append(
            f"<p><b>tbmm verify</b> exit {esc(rep.get('exit_code'))}: every failing obligation</p>"
        )
        body.append(_ul(rep["failing"], "note"))
    return f"<details><summary>{summary}</summary>{''.join(body)}</details>"


def _drilldown_html(
    lb: Leaderboard,
    rows: Sequence[TrialRow],
    tasks: Mapping[str, Any],
    base: Path | None = None,
) -> str:
    if lb.empty:
        return ""
    by_key = {(r.entry, r.task, r.seed): r for r in rows}
    out = ["<h2 id=drill-down>Per-task drill-down</h2>"]
    for t in lb.tasks:
        task = tasks.get(t)
        head = f"{t} — {task.manifest.title}" if task is not None else t
        split = ' <span class="badge split">literature split</span>' if t in lb.split_tasks else ""
        out.append(f'<section id="{anchor_id(t)}"><h2>{esc(head)}{split}</h2>')
        out.append(f'<p class="note">suite {esc(lb.task_suites[t])}</p>')
        if task is not None:
            out.append(_provenance_html(task))
        else:
            out.append('<p class="msg">No task information (not in the loaded suite).</p>')
        out.append("<h3>Trials</h3>")
        for x in lb.entries:
            for s in x.seeds:
                out.append(_trial_html(x, s, by_key.get((x.entry, t, s)), base))
        out.append("</section>")
    return "".join(out)


# ---------------------------------------------------------------------------- page


def _tasks_map(tasks_info: Sequence[Any] | Mapping[str, Any] | None) -> dict[str, Any]:
    if tasks_info is None:
        from tbmm.tasks import load_suite

        tasks_info = load_suite()
    if isinstance(tasks_info, Mapping):
        return dict(tasks_info)
    return {t.slug: t for t in tasks_info}


def render_html(
    lb: Leaderboard,
    rows: Sequence[TrialRow],
    tasks_info: Sequence[Any] | Mapping[str, Any] | None = None,
    *,
    title: str = "TB-MathModel report",
    base: Path | None = None,
) -> str:
    """The whole page as a string (see `write_html`); file links are relative to `base`
    (the report's folder), absolute file: URIs without it."""
    tasks = _tasks_map(tasks_info)
    n_trials = sum(1 for r in rows if r.task in lb.task_suites)
    nav = (
        '<p class="note"><a href="#leaderboard">leaderboard</a> · <a href="#plots">plots</a> · '
        '<a href="#suites">suites</a> · <a href="#per-task">per task</a> · '
        '<a href="#drill-down">drill-down</a></p>'
    )
    summary = (
        f'<p class="note">{len(lb.entries)} entr{"y" if len(lb.entries) == 1 else "ies"}, '
        f"{len(lb.tasks)} tasks ({len(lb.headline_tasks)} headline), {n_trials} trial(s). "
        "Browse every trial (its verdict, ATIF trajectory step by step and files) with "
        "<code>tbmm view --db DB</code>; share an entry as one file with "
        "<code>tbmm runs export ENTRY --db DB</code>.</p>"
    )
    body = "".join(
        [
            f"<h1>{esc(title)}</h1>",
            summary,
            nav if not lb.empty else "",
            _leaderboard_html(lb),
            _plots_html(lb),
            _suites_and_tasks_html(lb),
            _drilldown_html(lb, rows, tasks, base),
        ]
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )


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
