"""The leaderboard's renderers: the main, per-suite and per-task rows, the notes, and the
table (rich), Markdown, CSV and JSON forms of a computed `tbmm.reports.leaderboard.Leaderboard`.

Why apart from the computation: the numbers (exact until display) are defined once in
`tbmm.reports.leaderboard`; how they are shown changes with each front end (`tbmm leaderboard`,
`tbmm report`, `tbmm view`, `tbmm run`), and a change of layout cannot touch a score. This
module imports `tbmm.reports.leaderboard`, never the reverse.
"""

from __future__ import annotations

import csv
import io
from fractions import Fraction
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from tbmm.core.exact import fraction_to_text
from tbmm.reports.leaderboard import (
    HUNDRED,
    ROUND,
    Leaderboard,
    fmt_fixed,
    fmt_stat,
)

EMPTY_MESSAGE = "No trials in the results store: nothing to rank. Run `tbmm run --agent ...` first."


COLUMN_HELP: dict[str, str] = {
    "Seeds": "number of seeds the entry was run with (the seeds that appear in its trials)",
    "Artifacts": "tasks (of all tasks) whose artifact was a readable JSON object, mean over seeds",
    "Cost": "US$ per full run of every task (sum over one seed's trials), mean over seeds",
    "O-Eval": "multi-reference O-Eval (%), mean over headline tasks, mean ± sample std over seeds",
    "Multi-BO": "eq. (2) against each task's stored baseline F (1.000 = on par), mean ± sample std over seeds",
    "Robust BO": "Robust BO-Eval, mean over headline tasks, mean over seeds",
    "Skill": "the default reward: skill over each task's naive floor F_t (0 = no better than "
    "the best naive answer), mean over headline tasks, mean over seeds",
    "Gate-zeroed": "trials zeroed by the feasibility gate (all tasks, all seeds)",
    "Spent ($)": "US$ over every stored trial of the entry (all seeds); n/a when a trial's "
    "cost is unknown",
    "Tokens in / out": "tokens over every stored trial: prompt (cached included) / output",
    "Errors": "trials without a score: infrastructure errors and verifications with no verdict "
    "(left out of every mean; the entry is marked partial and ranks after complete entries "
    "until `tbmm run --resume` runs them again)",
}


def fmt_count(q: Fraction) -> str:
    """An integer as is, a non-integer mean over seeds with 2 decimals."""
    return str(q.numerator) if q.denominator == 1 else fmt_fixed(q, 2)


def fmt_cost(q: Fraction | None) -> str:
    return "n/a" if q is None else f"${fmt_fixed(q, 2)}"


def _pct(q: Fraction | None) -> str:
    return fmt_fixed(None if q is None else q * HUNDRED, 2)


def main_rows(lb: Leaderboard, *, stacked: bool = False) -> list[list[str]]:
    """Rows of the main table; `stacked` puts each "± std" under its mean (narrow screens)."""
    n = len(lb.tasks)
    out = []
    for i, x in enumerate(lb.entries, 1):
        art = x.artifacts.mean
        o, mb = fmt_stat(x.o_eval, 100, 2), fmt_stat(x.multi_bo, 1, 3)
        if stacked:
            o, mb = (v.replace(" ± ", "\n±") for v in (o, mb))
        out.append(
            [
                str(i),
                f"{x.shown} (partial)" if x.partial else x.shown,
                str(len(x.seeds)),
                f"{fmt_count(art) if art is not None else 'n/a'}/{n}",
                fmt_cost(x.cost),
                o,
                mb,
                fmt_fixed(x.robust_bo.mean, 3),
                str(x.gate_zeroed),
                str(x.errors),
                fmt_fixed(None if x.skill is None else x.skill.mean, 3),
                fmt_cost(x.spent),
                f"{fmt_tokens(x.tokens.get('tokens_in', 0))} / "
                f"{fmt_tokens(x.tokens.get('tokens_out', 0))}",
            ]
        )
    return out


def fmt_tokens(n: int) -> str:
    """A token count, short: 950, 12.3k, 4.56M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.3g}k"
    return f"{n / 1_000_000:.3g}M"


MAIN_HEADER = [
    "#",
    "Entry",
    "Seeds",
    "Artifacts",
    "Cost ($/run)",
    "O-Eval (%)",
    "Multi-BO",
    "Robust BO",
    "Gate-zeroed",
    "Errors",
    "Skill",
    "Spent ($)",
    "Tokens in / out",
]


def suite_header(lb: Leaderboard) -> list[str]:
    return ["Entry"] + [
        f"{s} (%, {sum(1 for t in lb.headline_tasks if lb.task_suites[t] == s)} task(s))"
        for s in lb.suites
    ]


def suite_rows(lb: Leaderboard, *, stacked: bool = False) -> list[list[str]]:
    out = []
    for x in lb.entries:
        cells = [fmt_stat(x.suites.get(s), 100, 2) for s in lb.suites]
        if stacked:
            cells = [c.replace(" ± ", "\n±") for c in cells]
        out.append([x.shown, *cells])
    return out


def _task_label(lb: Leaderboard, t: str) -> str:
    if t in lb.incomplete_tasks:
        return f"{t} (incomplete)"
    return f"{t} (literature split)" if t in lb.split_tasks else t


def task_rows(lb: Leaderboard, *, stacked: bool = False) -> list[list[str]]:
    out = []
    for t in lb.tasks:
        row = [_task_label(lb, t), lb.task_suites[t]]
        for x in lb.entries:
            c = x.per_task[t]
            shown = "err" if c.mean is None else _pct(c.mean)
            sep = "\n" if stacked else " "
            row.append(f"{shown}{sep}[{c.marks}]" if c.marks else shown)
        out.append(row)
    return out


TASK_MARKS_NOTE = (
    "Per-task cells: mean O-Eval (%) over seeds; [gN] N seed(s) zeroed by the gate, "
    "[mN] N seed(s) without a readable artifact (counted 0), [nN] N seed(s) never run "
    "(no trial stored: counted 0), [eN] N seed(s) that ended without a score "
    "(infrastructure error or no verdict: left out of the mean; 'err' when every seed did)."
)


def all_notes(lb: Leaderboard) -> list[str]:
    """Every note a renderer should show under the main table, most important first."""
    out = [lb.baseline_message]
    if lb.headline_note():
        out.append(lb.headline_note())
    out.extend(lb.notes)
    front = [x.shown for x in lb.entries if x.pareto]
    if front:
        out.append(f"Cost/O-Eval Pareto front: {', '.join(front)}.")
    return out


def _rich_table(
    title: str, header: list[str], rows: list[list[str]], left: int, caption: str = ""
) -> Table:
    """A rich Table whose cells are plain Text: entry labels like "a[b]" are not markup."""
    t = Table(title=title, caption=Text(caption) if caption else None)
    for i, h in enumerate(header):
        t.add_column(Text(h), justify="left" if i < left else "right", overflow="fold")
    for r in rows:
        t.add_row(*(Text(c) for c in r))
    return t


# Terminal columns: what to drop first when the screen is narrow (lower keep = sooner).
_MAIN_COLS = (
    ("#", "num", 100),
    ("Entry", "id", 100),
    ("Seeds", "num", 20),
    ("Artifacts", "num", 40),
    ("$/run", "num", 60),
    ("O-Eval %", "num", 100),
    ("Multi-BO", "num", 100),
    ("Robust BO", "num", 30),
    ("Gate-0", "num", 50),
    ("Errors", "num", 100),
    ("Skill", "num", 35),
    ("Spent $", "num", 45),
    ("Tokens in/out", "num", 25),
)


def to_table(lb: Leaderboard, width: int = 80) -> RenderableType:
    """Rich renderables (one Group) fitted to a terminal `width`: main table, notes,
    per-suite table, per-task tables (entries in groups that fit, as E1, E2, ... when
    their names are long)."""
    from tbmm.reports.tables import Col, render

    if lb.empty:
        return Group(Text(EMPTY_MESSAGE, style="yellow"))
    cols = [Col(h, k, keep) for h, k, keep in _MAIN_COLS]
    stacked = width < 120  # "± std" under the mean: numbers stay whole on narrow screens
    parts: list[RenderableType] = [
        render(
            cols,
            main_rows(lb, stacked=stacked),
            title=f"TB-MathModel leaderboard ({len(lb.tasks)} tasks)",
            caption="O-Eval %, Multi-BO: mean ± sample std over seeds; "
            "Gate-0: gate-zeroed trials; Errors: trials without a score (left out of means; "
            "the entry is partial and ranks after complete ones)",
            width=width,
        ),
        Text("\n".join(f"• {n}" for n in all_notes(lb)), style="dim"),
    ]
    scols = [Col("Entry", "id")] + [Col(h, "num") for h in suite_header(lb)[1:]]
    parts.append(
        render(
            scols,
            suite_rows(lb, stacked=stacked),
            title="O-Eval by suite (headline tasks)",
            width=width,
        )
    )
    labels = [x.shown for x in lb.entries]
    short = any(len(lab) > 10 for lab in labels)
    heads = [f"E{i}" for i in range(1, len(labels) + 1)] if short else labels
    per = max(1, (width - 36) // 10)
    rows = task_rows(lb, stacked=stacked)
    for start in range(0, len(labels), per):
        idx = list(range(start, min(start + per, len(labels))))
        legend = "; ".join(f"E{i + 1} = {labels[i]}" for i in idx) + "\n" if short else ""
        tcols = [Col("Task", "id"), Col("Suite", "num", keep=20)] + [
            Col(heads[i], "num") for i in idx
        ]
        trows = [r[:2] + [r[2 + i] for i in idx] for r in rows]
        parts.append(
            render(
                tcols,
                trows,
                title="Per-task O-Eval (%), mean over seeds"
                + (f" (entries {idx[0] + 1}-{idx[-1] + 1})" if len(labels) > per else ""),
                caption=legend + TASK_MARKS_NOTE,
                width=width,
            )
        )
    return Group(*parts)


def _md_cell(s: str) -> str:
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]], right_from: int = 1) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |"]
    lines.append(
        "|" + "|".join("---" if i < right_from else "---:" for i in range(len(header))) + "|"
    )
    lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def to_markdown(lb: Leaderboard) -> str:
    """GitHub-flavoured Markdown: main table, notes, per-suite and per-task tables."""
    if lb.empty:
        return f"## TB-MathModel leaderboard\n\n{EMPTY_MESSAGE}\n"
    parts = [
        f"## TB-MathModel leaderboard ({len(lb.tasks)} tasks)",
        _md_table(MAIN_HEADER, main_rows(lb), right_from=2),
        "\n".join(f"- {_md_cell(n)}" for n in all_notes(lb)),
        "\n".join(f"- **{k}**: {v}" for k, v in COLUMN_HELP.items()),
        "### O-Eval by suite (headline tasks)",
        _md_table(suite_header(lb), suite_rows(lb)),
        "### Per-task O-Eval (%), mean over seeds",
        _md_table(["Task", "Suite"] + [x.shown for x in lb.entries], task_rows(lb), 2),
        TASK_MARKS_NOTE,
    ]
    return "\n\n".join(parts) + "\n"


def to_csv(lb: Leaderboard) -> str:
    """One row per entry (rank order); unknown values are "n/a"; percent columns 2 decimals;
    `stopped` is why a --max-cost budget left the entry partial (empty: it did not)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    suites = list(lb.suites)
    w.writerow(
        [
            "rank",
            "entry",
            "name",
            "agent",
            "model",
            "seeds",
            "artifacts",
            "tasks",
            "cost_usd",
            "o_eval_pct",
            "o_eval_std_pct",
            "multi_bo",
            "multi_bo_std",
            "robust_bo",
            "gate_zeroed",
            "errors",
            "partial",
            "missing_trials",
            "pareto",
            "skill",
            "spent_usd",
            "tokens_in",
            "tokens_out",
            "stopped",
        ]
        + [f"{s.lower()}_o_eval_pct" for s in suites]
        + [f"task:{t}" for t in lb.tasks]
    )
    for i, x in enumerate(lb.entries, 1):
        mb = x.multi_bo
        art = x.artifacts.mean
        w.writerow(
            [
                i,
                x.entry,
                x.shown,
                x.agent,
                x.model,
                len(x.seeds),
                "n/a" if art is None else fmt_count(art),
                len(lb.tasks),
                fmt_fixed(x.cost, 2),
                _pct(x.o_eval.mean),
                fmt_fixed(None if x.o_eval.std is None else x.o_eval.std * 100, 2),
                fmt_fixed(None if mb is None else mb.mean, 3),
                fmt_fixed(None if mb is None else mb.std, 3),
                fmt_fixed(x.robust_bo.mean, 3),
                x.gate_zeroed,
                x.errors,
                "yes" if x.partial else "no",
                x.missing_trials,
                "yes" if x.pareto else "no",
                fmt_fixed(None if x.skill is None else x.skill.mean, 3),
                "n/a" if x.spent is None else fraction_to_text(x.spent),
                x.tokens.get("tokens_in", 0),
                x.tokens.get("tokens_out", 0),
                x.stopped or "",
            ]
            + [_pct(x.suites[s].mean if s in x.suites else None) for s in suites]
            + [_pct(x.per_task[t].mean) for t in lb.tasks]
        )
    return buf.getvalue()


def _q(q: Fraction | None) -> dict[str, Any]:
    return {
        "value": None if q is None else round(float(q), ROUND),
        "exact": None if q is None else fraction_to_text(q),
    }


def to_json(lb: Leaderboard) -> dict[str, Any]:
    """Exact values as strings plus rounded floats; scores on the [0, 1] scale (display in %)."""
    entries = []
    for i, x in enumerate(lb.entries, 1):
        entries.append(
            {
                "rank": i,
                "entry": x.entry,
                "name": x.shown,
                "agent": x.agent,
                "model": x.model,
                "seeds": list(x.seeds),
                "artifacts": x.artifacts.to_json(1, 2),
                "cost_usd": {
                    **_q(x.cost),
                    "per_seed": {str(s): fraction_to_text(c) for s, c in x.cost_per_seed},
                    "unknown_trials": x.cost_unknown_trials,
                },
                "o_eval": x.o_eval.to_json(100, 2),
                "multi_bo": None if x.multi_bo is None else x.multi_bo.to_json(1, 3),
                "robust_bo": x.robust_bo.to_json(1, 3),
                "skill": None if x.skill is None else x.skill.to_json(1, 3),
                "gate_zeroed": x.gate_zeroed,
                "errors": x.errors,
                "error_causes": list(x.error_causes),
                "partial": x.partial,
                "stopped": x.stopped,
                "spent_usd": _q(x.spent),
                "tokens": {
                    "input": x.tokens.get("tokens_in", 0),
                    "cached": x.tokens.get("tokens_cache_read", 0),
                    "cache_write": x.tokens.get("tokens_cache_write", 0),
                    "output": x.tokens.get("tokens_out", 0),
                    "requests": x.tokens.get("requests", 0),
                },
                "o_eval_floor": None if x.o_eval_floor is None else x.o_eval_floor.to_json(100, 2),
                "missing_trials": x.missing_trials,
                "pareto": x.pareto,
                "suites": {s: st.to_json(100, 2) for s, st in x.suites.items()},
                "per_task": {
                    t: {
                        **_q(c.mean),
                        "per_seed": {
                            str(s): {"status": st, "o_eval_exact": fraction_to_text(o)}
                            for s, st, o in c.per_seed
                        },
                    }
                    for t, c in x.per_task.items()
                },
            }
        )
    return {
        "schema": "tbmm-leaderboard/1",
        "empty": lb.empty,
        "message": EMPTY_MESSAGE if lb.empty else None,
        "baseline": {
            "entry": lb.baseline,
            "state": lb.baseline_state,
            "message": lb.baseline_message,
            "f": {t: _q(f) for t, f in lb.baseline_f.items()},
        },
        "tasks": list(lb.tasks),
        "headline_tasks": list(lb.headline_tasks),
        "literature_split_tasks": sorted(lb.split_tasks),
        "incomplete_tasks": sorted(lb.incomplete_tasks),
        "task_suites": dict(lb.task_suites),
        "notes": all_notes(lb),
        "columns": COLUMN_HELP,
        "entries": entries,
    }
