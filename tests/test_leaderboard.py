"""Leaderboard columns against hand-computed values, renderers, edge cases, and the plots.

Synthetic suite: tasks c1, c2 (CUMCM), m1, ms (MCM; ms is literature-split), so the
headline tasks are c1, c2, m1. Entries:

* B (the baseline), seeds 0 and 1, whose per-task O-Eval is the stored F the board is given
  (FB: c1 1/2, c2 39/40, m1 1/8, ms 1/2). c2 has 1 − f = 1/40 < 1/10, so its Multi-BO
  cells use the ±0.10 fallback.
* A, seeds 0, 1, 2, with a missing artifact (ms, seed 0), an unreadable one (c2, seed 1)
  and a missing trial (m1, seed 2: no row at all).
* C, a single seed with a single scored trial and unknown cost.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from dataclasses import replace
from fractions import Fraction as F
from pathlib import Path

import pytest
from rich.console import Console

from tbmm.core.rules import multi_bo_cell
from tbmm.reports import leaderboard as L
from tbmm.reports import leaderboard_render as R
from tbmm.reports import plots
from tbmm.reports.leaderboard import TrialRow, compute, fmt_fixed, trial_row
from tbmm.suite.tasks import Task
from tbmm.verify import verify_artifact

from .conftest import infeasible_dragon

TASKS = ["c1", "c2", "m1", "ms"]
SUITES = {"c1": "CUMCM", "c2": "CUMCM", "m1": "MCM", "ms": "MCM"}
SPLIT = {"ms"}


def row(
    entry: str,
    task: str,
    seed: int,
    status: str,
    o: F | int = 0,
    cost: float | None = 0.25,
) -> TrialRow:
    """A trial; Robust BO-Eval is o − 1/2 when scored (any value works: it is just averaged)."""
    o = F(o) if status == "scored" else F(0)
    return TrialRow(
        entry=entry,
        agent=entry.split("|")[0],
        model="m-" + entry,
        task=task,
        suite=SUITES[task],
        seed=seed,
        status=status,
        o_eval=o,
        robust_bo=o - F(1, 2) if status == "scored" else F(-1),
        cost_usd=cost,
        gate="fail" if status == "gate_failed" else "pass",
        lean="ok",
        literature_split=task in SPLIT,
        report={},
    )


def rows_b() -> list[TrialRow]:
    return [
        row("B", "c1", 0, "scored", F(1, 2)),
        row("B", "c2", 0, "scored", F(19, 20)),
        row("B", "m1", 0, "scored", F(1, 4)),
        row("B", "ms", 0, "scored", 1),
        row("B", "c1", 1, "scored", F(1, 2)),
        row("B", "c2", 1, "scored", 1),
        row("B", "m1", 1, "gate_failed"),
        row("B", "ms", 1, "scored", 0),
    ]


def rows_a() -> list[TrialRow]:
    return [
        row("A", "c1", 0, "scored", 1, 0.5),
        row("A", "c2", 0, "scored", 1, 0.5),
        row("A", "m1", 0, "scored", 1, 0.5),
        row("A", "ms", 0, "missing_artifact", 0, 0.5),
        row("A", "c1", 1, "scored", F(3, 4), 0.5),
        row("A", "c2", 1, "unreadable", 0, 0.5),
        row("A", "m1", 1, "scored", F(1, 2), 0.5),
        row("A", "ms", 1, "scored", 1, 0.5),
        row("A", "c1", 2, "scored", 1, 0.5),
        row("A", "c2", 2, "scored", 1, 0.5),
        row("A", "ms", 2, "scored", F(1, 2), 0.5),
    ]


def rows_c() -> list[TrialRow]:
    return [row("C", "c1", 7, "scored", F(1, 5), None)]


FB = {"c1": F(1, 2), "c2": F(39, 40), "m1": F(1, 8), "ms": F(1, 2)}


def board(rows: list[TrialRow], baseline_f: dict[str, F] | None = FB) -> L.Leaderboard:
    return compute(rows, baseline_f=baseline_f, tasks=TASKS, task_suites=SUITES, split_tasks=SPLIT)


@pytest.fixture
def lb() -> L.Leaderboard:
    return board(rows_b() + rows_a() + rows_c())


def by(lb: L.Leaderboard, name: str) -> L.EntryRow:
    return next(x for x in lb.entries if x.entry == name)


# ---------------------------------------------------------------------------- columns


def test_order_and_headline(lb: L.Leaderboard) -> None:
    assert [x.entry for x in lb.entries] == ["A", "B", "C"]
    assert lb.headline_tasks == ("c1", "c2", "m1")
    assert lb.baseline_state == "ok"
    assert lb.baseline_f == {"c1": F(1, 2), "c2": F(39, 40), "m1": F(1, 8), "ms": F(1, 2)}


def test_baseline_entry_columns(lb: L.Leaderboard) -> None:
    b = by(lb, "B")
    assert b.seeds == (0, 1)
    assert dict(b.o_eval.per_seed) == {0: F(17, 30), 1: F(1, 2)}
    assert b.o_eval.mean == F(8, 15)
    assert b.o_eval.var == F(1, 450)
    assert fmt_fixed(b.o_eval.std * 100, 2) == "4.71"
    # cells: s0 (1, 1 + (19/20 − 39/40) = 39/40 fallback, 1 + (1/8)/(7/8) = 8/7);
    #        s1 (1, 1 + clip(1/40, ±1/10) = 41/40 fallback, gate-failed o = 0: 1 − 1/7 = 6/7)
    assert dict(b.multi_bo.per_seed) == {0: F(291, 280), 1: F(269, 280)}
    assert b.multi_bo.mean == 1
    assert dict(b.robust_bo.per_seed) == {0: F(1, 15), 1: F(-1, 6)}
    assert b.robust_bo.mean == F(-1, 20)
    assert b.artifacts.mean == 4
    assert b.cost == 1 and dict(b.cost_per_seed) == {0: 1, 1: 1}
    assert b.gate_zeroed == 1 and b.missing_trials == 0
    assert dict(b.suites["CUMCM"].per_seed) == {0: F(29, 40), 1: F(3, 4)}
    assert dict(b.suites["MCM"].per_seed) == {0: F(1, 4), 1: F(0)}


def test_entry_with_missing_and_unreadable(lb: L.Leaderboard) -> None:
    a = by(lb, "A")
    assert a.seeds == (0, 1, 2)
    assert dict(a.o_eval.per_seed) == {0: F(1), 1: F(5, 12), 2: F(2, 3)}
    assert a.o_eval.mean == F(25, 36)
    assert a.o_eval.var == F(37, 432) == statistics.variance([F(1), F(5, 12), F(2, 3)])
    assert fmt_fixed(a.o_eval.mean * 100, 2) == "69.44"
    assert fmt_fixed(a.o_eval.std * 100, 2) == "29.27"
    # s0: (2, 41/40, 2); s1: (3/2, unreadable −1, 10/7); s2: (2, 41/40, no trial −1)
    assert dict(a.multi_bo.per_seed) == {0: F(67, 40), 1: F(9, 14), 2: F(27, 40)}
    assert a.multi_bo.mean == F(419, 420)
    assert a.multi_bo.var == statistics.variance([F(67, 40), F(9, 14), F(27, 40)])
    assert fmt_fixed(a.multi_bo.mean, 3) == "0.998" and fmt_fixed(a.multi_bo.std, 3) == "0.587"
    assert a.robust_bo.mean == F(1, 12)
    assert dict(a.artifacts.per_seed) == {0: 3, 1: 3, 2: 3} and a.artifacts.mean == 3
    assert a.cost == F(11, 6) and dict(a.cost_per_seed) == {0: 2, 1: 2, 2: F(3, 2)}
    assert a.gate_zeroed == 0 and a.missing_trials == 1
    assert a.suites["CUMCM"].mean == F(19, 24)
    assert a.suites["MCM"].mean == F(1, 2) and a.suites["MCM"].std == F(1, 2)
    cell = a.per_task["c2"]
    assert cell.mean == F(2, 3) and cell.marks == "m1"
    assert a.per_task["m1"].per_seed[2] == (2, L.NO_TRIAL, F(0))
    assert a.per_task["ms"].mean == F(1, 2)  # the split task stays in the per-task table
    assert any("A: seed 2 has no trial for 1 of 4 tasks" in n for n in lb.notes)


def test_single_seed_std_is_na_and_unknown_cost(lb: L.Leaderboard) -> None:
    c = by(lb, "C")
    assert c.o_eval.mean == F(1, 15) and c.o_eval.var is None and c.o_eval.std is None
    assert L.fmt_stat(c.o_eval, 100, 2) == "6.67 ± n/a"
    assert c.multi_bo.mean == F(-8, 15)  # (1 + (1/5 − 1/2)/(1/2) − 1 − 1)/3
    assert c.cost is None and c.cost_unknown_trials == 1
    assert c.missing_trials == 3


def test_pareto(lb: L.Leaderboard) -> None:
    assert {x.entry for x in lb.entries if x.pareto} == {"A", "B"}
    assert L.pareto_front([("x", F(1), F(1, 2)), ("y", F(2), F(1, 2)), ("z", F(0), F(1, 4))]) == [
        "z",
        "x",
    ]
    assert L.pareto_front([("u", None, F(1))]) == []


def test_multi_bo_fallback_clip_and_missing_cell() -> None:
    # f = 0.975: margin 1/40 < 1/10, so the gain is clipped to ±0.10
    rows = [row("B", t, 0, "scored", F(39, 40)) for t in TASKS] + [
        row("X", "c1", 0, "scored", F(1, 2)),  # 1 + clip(1/2 − 39/40, ±1/10) = 9/10
        row("X", "c2", 0, "scored", 1),  # 1 + clip(1/40, ±1/10) = 41/40
        row("X", "m1", 0, "missing_artifact"),  # −1
    ]
    x = by(board(rows, baseline_f=dict.fromkeys(TASKS, F(39, 40))), "X")
    assert multi_bo_cell(F(1, 2), F(39, 40)) == F(9, 10)
    assert x.multi_bo.mean == (F(9, 10) + F(41, 40) - 1) / 3
    assert x.o_eval.mean == F(1, 2)


def test_single_entry_single_seed_renderers() -> None:
    lb = board([row("solo|m|d", t, 0, "scored", F(1, 3), 0.1) for t in TASKS], baseline_f=None)
    (x,) = lb.entries
    assert L.fmt_stat(x.o_eval, 100, 2) == "33.33 ± n/a"
    assert x.multi_bo is None and lb.baseline_state == "none"
    assert x.cost == F(2, 5)  # 4 × 0.1, exact (from the float's shortest decimal text)
    md = R.to_markdown(lb)
    assert "| 1 | solo\\|m\\|d | 1 | 4/4 | $0.40 | 33.33 ± n/a | n/a | -0.167 | 0 |" in md
    assert "no baseline F was given" in md
    j = R.to_json(lb)
    assert j["entries"][0]["o_eval"]["std"] is None
    assert j["entries"][0]["o_eval"]["mean_exact"] == "1/3"
    assert j["entries"][0]["multi_bo"] is None
    rec = next(csv.DictReader(io.StringIO(R.to_csv(lb))))
    assert rec["o_eval_std_pct"] == "n/a" and rec["multi_bo"] == "n/a"
    assert rec["o_eval_pct"] == "33.33" and rec["entry"] == "solo|m|d"


# ---------------------------------------------------------------------------- edge cases


def test_empty_input() -> None:
    lb = board([])
    assert lb.empty and lb.entries == ()
    assert R.EMPTY_MESSAGE in R.to_markdown(lb)
    assert R.to_json(lb)["empty"] is True and R.to_json(lb)["message"] == R.EMPTY_MESSAGE
    assert R.to_csv(lb).count("\n") == 1  # the header only
    con = Console(record=True, width=120)
    con.print(R.to_table(lb))
    assert "No trials in the results store" in con.export_text()
    assert plots.figures(lb) == []


def test_baseline_f_must_cover_every_task() -> None:
    """Multi-BO's F comes from the tasks' stored floor; a task without one is an error,
    never a silent F = 0."""
    with pytest.raises(ValueError, match="no baseline F for: ms"):
        board(rows_a() + rows_c(), baseline_f={k: v for k, v in FB.items() if k != "ms"})
    lb = board(rows_a() + rows_c())  # the baseline entry's own trials are not needed
    assert lb.baseline_state == "ok" and lb.baseline_f == FB
    assert by(lb, "A").multi_bo is not None


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate trial: B / c1 / seed 0"):
        board(rows_b() + [row("B", "c1", 0, "scored", 1)])
    with pytest.raises(ValueError, match="unknown status 'weird'"):
        board([row("B", "c1", 0, "weird")])
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        board([row("B", "c1", 0, "scored", F(3, 2))])
    with pytest.raises(ValueError, match="without a suite"):
        compute([], tasks=["zz"], task_suites={})
    lb = board(rows_b() + [replace(row("B", "c1", 0, "scored", 1), task="other")])
    assert any("outside the suite were ignored: other" in n for n in lb.notes)


def test_fmt_fixed_rounds_half_away_from_zero() -> None:
    assert fmt_fixed(F(1, 8), 2) == "0.13"
    assert fmt_fixed(F(-1, 8), 2) == "-0.13"
    assert fmt_fixed(F(-1, 1000), 2) == "0.00"
    assert fmt_fixed(F(2, 3) * 100, 2) == "66.67"
    assert fmt_fixed(F(5), 0) == "5"
    assert fmt_fixed(None) == "n/a"


# ---------------------------------------------------------------------------- renderers


def test_markdown_csv_json_agree(lb: L.Leaderboard) -> None:
    md = R.to_markdown(lb)
    assert "| 1 | A | 3 | 3/4 | $1.83 | 69.44 ± 29.27 | 0.998 ± 0.587 | 0.083 | 0 |" in md
    assert "| 2 | B | 2 | 4/4 | $1.00 | 53.33 ± 4.71 | 1.000 ± 0.056 | -0.050 | 1 |" in md
    assert "| 3 | C | 1 | 1/4 | n/a | 6.67 ± n/a | -0.533 ± n/a | -0.767 | 0 |" in md
    assert "Literature-split task(s) left out of the headline columns" in md and "ms" in md
    # [n1]: a seed never run (no row), told apart from [m1]: a trial without an artifact
    assert "| c2 | CUMCM | 66.67 [m1] | 97.50 | 0.00 [n1] |" in md
    assert "| ms (literature split) | MCM | 50.00 [m1] | 50.00 | 0.00 [n1] |" in md
    assert "| m1 | MCM | 50.00 [n1] | 12.50 [g1] | 0.00 [n1] |" in md
    recs = list(csv.DictReader(io.StringIO(R.to_csv(lb))))
    assert [r["entry"] for r in recs] == ["A", "B", "C"]
    a = recs[0]
    assert (a["o_eval_pct"], a["o_eval_std_pct"], a["multi_bo"], a["cost_usd"]) == (
        "69.44",
        "29.27",
        "0.998",
        "1.83",
    )
    assert a["cumcm_o_eval_pct"] == "79.17" and a["mcm_o_eval_pct"] == "50.00"
    assert a["task:c2"] == "66.67" and a["pareto"] == "yes" and recs[2]["cost_usd"] == "n/a"
    j = json.loads(json.dumps(R.to_json(lb)))  # JSON-serialisable
    ja = j["entries"][0]
    assert ja["o_eval"]["mean_exact"] == "25/36" and ja["o_eval"]["var_exact"] == "37/432"
    assert ja["o_eval"]["mean"] == round(25 / 36, 6)
    assert ja["multi_bo"]["mean_exact"] == "419/420"
    assert ja["cost_usd"]["exact"] == "11/6" and ja["cost_usd"]["per_seed"]["2"] == "1.5"
    assert ja["per_task"]["m1"]["per_seed"]["2"]["status"] == "no_trial"
    assert j["literature_split_tasks"] == ["ms"] and j["headline_tasks"] == ["c1", "c2", "m1"]
    assert j["baseline"]["f"]["c2"]["exact"] == "0.975"


def test_rich_table_shows_labels_literally() -> None:
    rows = [row("x[bold]y|m", t, 0, "scored", 1) for t in TASKS]
    con = Console(record=True, width=250)
    con.print(R.to_table(board(rows, baseline_f=dict.fromkeys(TASKS, F(1))), con.width))
    text = con.export_text()
    assert "x[bold]y|m" in text and "100.00 ± n/a" in text and "1.000 ± n/a" in text
    assert "[gN]" in text  # the caption's legend is not eaten as markup


# ---------------------------------------------------------------------------- from reports


@pytest.mark.slow
def test_trial_row_from_verify_reports(suite: list[Task]) -> None:
    t = next(x for x in suite if x.slug == "mcm-2025-b-juneau-tourism")
    rep = verify_artifact(t, t.anchor_artifact_bytes(), lean=False).model_dump()
    r = trial_row(
        entry="e",
        agent="a",
        model=None,
        task=t.slug,
        suite=t.suite,
        seed=0,
        report=rep,
        cost_usd=1.5,
        literature_split=False,
    )
    assert (r.status, r.o_eval, r.robust_bo, r.gate, r.model) == ("scored", 1, 1, "pass", "")
    d = next(x for x in suite if x.slug == "cumcm-2024-a-dragon-dance")
    rep = verify_artifact(d, infeasible_dragon(d), lean=False).model_dump()
    kw = dict(entry="e", agent="a", model="m", task=d.slug, suite=d.suite, seed=0)
    r = trial_row(**kw, report=rep, cost_usd=None, literature_split=False)
    assert (r.status, r.o_eval, r.robust_bo, r.gate) == ("gate_failed", 0, -1, "fail")
    rep = verify_artifact(d, b"[1, 2]", lean=False).model_dump()
    r = trial_row(**kw, report=rep, cost_usd=None, literature_split=False)
    assert (r.status, r.o_eval, r.robust_bo) == ("unreadable", 0, -1)
    r = trial_row(**kw, report=None, cost_usd=None, literature_split=False)
    assert r.status == "missing_artifact"
    r = trial_row(**kw, report=None, cost_usd=None, literature_split=False, error="agent crashed")
    assert r.status == "error" and r.report == {"error": "agent crashed"}
    cfg = L.suite_config(suite)
    assert cfg["tasks"] == [t.slug for t in suite]
    assert cfg["split_tasks"] == {t.slug for t in suite if t.panel.literature_split}
    assert cfg["task_suites"] == {t.slug: t.suite for t in suite}
    assert cfg["incomplete_tasks"] == {t.slug for t in suite if t.incomplete}


# ---------------------------------------------------------------------------- plots


def test_plot_series(lb: L.Leaderboard) -> None:
    figs = {p.name: p for p in plots.figures(lb)}
    assert list(figs) == ["oeval_vs_cost", "oeval_by_entry", "oeval_by_suite"]

    cost = figs["oeval_vs_cost"]
    ax = cost.figure.axes[0]
    assert ax.get_xscale() == "log"
    assert (
        ax.get_xlabel() == "Cost per full run (US$, log scale)" and ax.get_ylabel() == "O-Eval (%)"
    )
    pts = {c.get_label(): c.get_offsets().tolist() for c in ax.collections}
    # floor: a decade below the cheapest known positive cost ($1) -> $0.1
    assert pts == {
        "cost known": [[float(F(11, 6)), pytest.approx(2500 / 36)], [1.0, pytest.approx(160 / 3)]],
        r"cost unknown (drawn at \$0.1; not on the front)": [[0.1, pytest.approx(20 / 3)]],
    }
    (front,) = [ln for ln in ax.lines if ln.get_label() == "Pareto front"]
    assert front.get_xdata().tolist() == [1.0, float(F(11, 6))]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[-1] == "Pareto front" and len(legend) == 3
    assert cost.notes == ["1 entry with cost unknown (drawn at $0.1; not on the front)."]
    assert sorted(t.get_text() for t in ax.texts) == ["A", "B", "C"]

    ent = figs["oeval_by_entry"].figure.axes[0]
    widths = [p.get_width() for p in ent.patches]
    assert widths == pytest.approx([2500 / 36, 160 / 3, 20 / 3])
    assert [t.get_text() for t in ent.get_yticklabels()] == ["A", "B", "C"]
    (err,) = ent.containers[1:]  # bars, then one errorbar container for the 2 entries with std
    assert len(err.lines[2][0].get_segments()) == 2
    assert figs["oeval_by_entry"].notes == ["No error bar: a single seed (std n/a)."]

    sui = figs["oeval_by_suite"].figure.axes[0]
    # 6 bars, plus the outlined stub of C's MCM bar: C has no MCM trial, counted O-Eval 0
    assert len(sui.patches) == 7
    from matplotlib.container import BarContainer

    bars = [c for c in sui.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in bars][:2] == ["CUMCM (2 tasks)", "MCM (1 task)"]
    assert [p.get_width() for p in bars[1]][2] == 0
    (stub,) = bars[2]
    assert stub.get_width() == plots.ZERO_STUB and stub.get_facecolor()[:3] == (1.0, 1.0, 1.0)
    assert stub.get_y() + stub.get_height() / 2 == pytest.approx(2 + 0.2)  # C's MCM slot
    texts = sorted((round(t.get_position()[1], 2), t.get_text()) for t in sui.texts)
    assert (2.2, "0.00") in texts and len(texts) == 6  # every bar is labelled
    labels = [t.get_text() for t in sui.get_legend().get_texts()]
    assert labels == ["CUMCM (2 tasks)", "MCM (1 task)"]
    cumcm = [p.get_width() for p in sui.containers[0]]
    assert cumcm == pytest.approx([100 * 19 / 24, 100 * (F(29, 40) + F(3, 4)) / 2, 10])


@pytest.mark.slow
def test_write_plots_pngs_deterministic(lb: L.Leaderboard, tmp_path: Path) -> None:
    paths = plots.write_plots(lb, tmp_path / "a")
    again = plots.write_plots(lb, tmp_path / "b")
    assert [p.name for p in paths] == [
        "oeval_vs_cost.png",
        "oeval_by_entry.png",
        "oeval_by_suite.png",
    ]
    for p, q in zip(paths, again, strict=True):
        data = p.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
        assert data == q.read_bytes()
    import matplotlib.image as mpimg

    img = mpimg.imread(paths[0])
    assert img.shape[1] == 900 and img.shape[0] == 600  # 7.5 × 5.0 in at 120 dpi
    assert img[..., :3].std() > 0.05  # not blank
    assert plots.write_plots(board([]), tmp_path / "c") == []


@pytest.mark.slow
def test_row_from_store_record(suite: list[Task]) -> None:
    t = next(x for x in suite if x.slug == "mcm-2024-c-tennis-momentum")
    cfg = L.suite_config(suite)
    kw = {"task_suites": cfg["task_suites"], "split_tasks": cfg["split_tasks"]}
    rep = verify_artifact(t, t.anchor_artifact_bytes(), lean=False).model_dump(mode="json")
    rec = {
        "entry_id": "codex@gpt-x#1a2b3c4d",
        "agent": "codex",
        "model": "gpt-x",
        "task": t.slug,
        "suite": None,
        "seed": 2,
        "exit_reason": "completed",
        "detail": "",
        "artifact_status": "ok",
        "tokens_in": 10,
        "cost_usd": 0.5,
        "verdict": json.dumps(rep),
    }
    r = L.row_from_record(rec, **kw)
    assert (r.entry, r.agent, r.model, r.suite, r.seed) == (
        "codex@gpt-x#1a2b3c4d",
        "codex",
        "gpt-x",
        "MCM",
        2,
    )
    assert r.status == "scored" and r.o_eval == F(rep["o_eval_exact"]) and r.literature_split
    assert r.cost_usd == 0.5 and r.report["harness"]["tokens_in"] == 10
    assert r.report["score"]["task"] == t.slug
    r = L.row_from_record({**rec, "verdict": None, "artifact_status": "missing"}, **kw)
    assert r.status == "missing_artifact" and r.o_eval == 0 and r.robust_bo == -1
    r = L.row_from_record({**rec, "verdict": None, "exit_reason": "timeout"}, **kw)
    assert r.status == "error" and "never verified (exit reason timeout)" in r.report["error"]
    r = L.row_from_record({**rec, "verdict": {"error": "Traceback: boom"}}, **kw)
    # the verifier raised: no verdict (left out of the means), never the agent's 0
    assert r.status == L.INFRA
    assert r.report["infra_error"] == "no_verdict: verifier_fault: Traceback: boom"


def test_incomplete_task_left_out_of_headline_with_a_note() -> None:
    """An incomplete task (missing attachment) stays in the per-task table, not the means."""
    full = compute(rows_b(), tasks=TASKS, task_suites=SUITES, split_tasks=SPLIT)
    lb = compute(
        rows_b(),
        tasks=TASKS,
        task_suites=SUITES,
        split_tasks=SPLIT,
        incomplete_tasks={"m1"},
    )
    assert lb.headline_tasks == ("c1", "c2")
    assert "Incomplete task(s)" in lb.headline_note() and "m1" in lb.headline_note()
    b, b_full = by(lb, "B"), by(full, "B")
    # seed 0: (1/2 + 19/20)/2 without m1, vs (1/2 + 19/20 + 1/4)/3 with it
    assert dict(b.o_eval.per_seed)[0] == F(29, 40)
    assert dict(b_full.o_eval.per_seed)[0] == F(17, 30)
    assert R.to_json(lb)["incomplete_tasks"] == ["m1"]


def test_an_incomplete_task_never_run_is_noted_as_a_deliberate_skip() -> None:
    """The default run leaves incomplete tasks out on purpose: its note says so, and is no
    "has no trial ... counted O-Eval 0" gap note (which they are not: they are outside the
    headline means). A missing seed of an incomplete task the entry did run, a missing
    literature-split trial and a missing headline trial stay gap notes, each saying how it
    counts."""
    rows = [r for r in rows_b() if r.task != "m1"]  # B never ran m1
    rows += [row("D", t, s, "scored", 1) for t in ("c1", "c2", "ms") for s in (0, 1)]
    rows += [row("D", "m1", 0, "scored", 1)]  # D ran m1 once: seed 1 is a gap
    rows += [row("E", t, 0, "scored", 1) for t in ("c1", "m1")]  # E: no c2 (headline), no ms
    lb = compute(
        rows,
        tasks=TASKS,
        task_suites=SUITES,
        split_tasks=SPLIT,
        incomplete_tasks={"m1"},
    )
    notes = [n for n in lb.notes if n.startswith(("B:", "D:", "E:"))]
    assert notes == [
        "B: 1 incomplete task(s) not run, as intended (`tbmm run --tasks all` skips them "
        "unless --allow-incomplete; outside the headline means): m1.",
        "D: seed 1 has no trial for 1 of 4 tasks (outside the headline means; no artifact): m1.",
        "E: seed 0 has no trial for 2 of 4 tasks (the 1 headline one(s) counted O-Eval 0, "
        "Multi-BO −1): c2, ms.",
    ], lb.notes
    assert not any("no trial" in n and "B:" in n for n in lb.notes)
    # the skip changes no mean: B's seed 0 is (1/2 + 19/20)/2 with or without m1's rows
    assert dict(by(lb, "B").o_eval.per_seed)[0] == F(29, 40)
    # E's missing c2 counts 0: (1 + 0)/2
    assert dict(by(lb, "E").o_eval.per_seed)[0] == F(1, 2)


def test_incomplete_tasks_are_skipped_or_refused(tmp_path: Path) -> None:
    from harness.cli.run import select_tasks
    from tbmm.suite.tasks import TASKS_ROOT, load_suite

    suite = load_suite(TASKS_ROOT)
    incomplete = [t for t in suite if t.incomplete]
    if not incomplete:
        pytest.skip("every task's attachments are present on this machine (fetched)")
    notes: list[str] = []
    picked = select_tasks("all", TASKS_ROOT, note=notes.append)
    assert {t.slug for t in picked} == {t.slug for t in suite if not t.incomplete}
    assert notes and all(t.slug in notes[0] for t in incomplete)
    assert len(select_tasks("all", TASKS_ROOT, allow_incomplete=True)) == len(suite)
    with pytest.raises(ValueError, match="--allow-incomplete"):
        select_tasks(incomplete[0].slug, TASKS_ROOT)
    assert select_tasks(incomplete[0].slug, TASKS_ROOT, allow_incomplete=True)[0].incomplete


@pytest.mark.slow
def test_verdicts_reached_against_older_task_data_are_flagged(tmp_path) -> None:  # noqa: ANN001
    """A verdict records the digest of the task data it was reached against; once a
    reference or gate file changes, the leaderboard says which stored verdicts are stale."""
    import shutil

    from tbmm.reports.results import stale_notes
    from tbmm.suite.tasks import TASKS_ROOT, load_task, task_dirs
    from tbmm.verify import verify_artifact

    src = next(d for d in task_dirs(TASKS_ROOT) if (d / "gate.toml").is_file())
    dst = tmp_path / src.parent.name / src.name
    shutil.copytree(src, dst)
    t = load_task(dst)
    rep = verify_artifact(t, t.anchor_artifact_bytes(), lean=False)
    assert rep.task_digest == t.verdict_digest != ""
    base = dict(
        entry="A", agent="oracle", model="m", suite=t.suite, seed=0, status="scored",
        o_eval=F(1), robust_bo=F(1), cost_usd=None, gate="pass", lean="skipped",
        literature_split=False,
    )  # fmt: skip
    fresh = L.TrialRow(task=t.slug, report=rep.model_dump(), **base)
    err = L.TrialRow(task=t.slug, report={"files": {}}, **{**base, "status": "error"})
    assert stale_notes([fresh, err], [t]) == []
    with (dst / "gate.toml").open("a") as f:
        f.write("\n# an edit\n")
    changed = load_task(dst)
    assert changed.verdict_digest != t.verdict_digest
    (note,) = stale_notes([fresh, err], [changed])
    assert note.startswith("A: stored verdicts of 1 task(s)") and t.slug in note
    legacy = L.TrialRow(task=t.slug, report={"exit_code": 0}, **base)  # stored before digests
    assert stale_notes([legacy], [t])


# ---------------------------------------------------------------------------- no score, partial


def _no_verdict_row(entry: str, task: str, status: str) -> TrialRow:
    """A stored verification report that reached no verdict (exit code 3)."""
    report = {"status": status, "exit_code": 3, "error": "budget 1 s", "o_eval_exact": "0"}
    return trial_row(
        entry=entry, agent=entry, model="m", task=task, suite=SUITES[task], seed=0,
        report=report, cost_usd=0.25, literature_split=task in SPLIT,
    )  # fmt: skip


@pytest.mark.parametrize("status", sorted(L.NO_VERDICT))
def test_no_verdict_is_not_a_zero_and_selective_failure_cannot_raise_a_rank(status: str) -> None:
    """P scores 1 where it has a verdict and none on c2; Q scores 1/2 everywhere. Counting
    the missing verdict as 0 (what an unknown status did) or leaving it out unmarked (what
    an infrastructure error did) would either punish P for our budget or let P, failing
    selectively, outrank Q. P is partial: out of the means, after Q, off the front."""
    nv = _no_verdict_row("P", "c2", status)
    assert nv.status == L.INFRA and nv.report["infra_error"] == f"no_verdict: {status}: budget 1 s"
    rows = [row("P", "c1", 0, "scored", 1), nv, row("P", "m1", 0, "scored", 1)]
    rows += [row("Q", t, 0, "scored", F(1, 2)) for t in ("c1", "c2", "m1")]
    lb = board(rows, baseline_f=None)
    p, q = by(lb, "P"), by(lb, "Q")
    assert p.o_eval.mean == 1 and q.o_eval.mean == F(1, 2)  # c2 left out of P's mean
    assert (p.errors, p.error_causes, p.partial, q.partial) == (1, ("no_verdict",), True, False)
    assert p.o_eval_floor is not None and p.o_eval_floor.mean == F(2, 3)
    assert [x.entry for x in lb.entries] == ["Q", "P"]  # complete entries first
    assert not p.pareto and q.pareto
    assert p.per_task["c2"].marks == "e1" and p.per_task["c2"].mean is None
    note = next(n for n in lb.notes if n.startswith("P is partial"))
    assert "no_verdict" in note and "66.67 ± n/a %" in note and "--resume" in note
    assert R.main_rows(lb)[1][1] == "P (partial)" and R.main_rows(lb)[0][1] == "Q"
    recs = {r["entry"]: r for r in csv.DictReader(io.StringIO(R.to_csv(lb)))}
    assert (recs["P"]["partial"], recs["Q"]["partial"], recs["P"]["errors"]) == ("yes", "no", "1")
    j = {e["entry"]: e for e in R.to_json(lb)["entries"]}
    assert j["P"]["partial"] and j["P"]["o_eval_floor"]["mean_exact"] == "2/3"
    assert j["Q"]["o_eval_floor"] is None
    # a verdict is a verdict: exit code 0/1/2 statuses keep their meaning
    scored = trial_row(
        entry="S", agent="S", model=None, task="c1", suite="CUMCM", seed=0,
        report={"status": "scored", "o_eval_exact": "1/2"}, cost_usd=None, literature_split=False,
    )  # fmt: skip
    assert (scored.status, scored.o_eval) == ("scored", F(1, 2))


def test_skill_column_against_each_tasks_naive_floor() -> None:
    """Skill = mean over headline tasks of rules.skill(R, 1, F_t); not scored counts 0."""
    floors = {"c1": F(1, 2), "c2": F(19, 20), "m1": F(0), "ms": F(0)}
    rows = [
        replace(row("X", "c1", 0, "scored", F(3, 4)), raw=F(3, 4)),  # (3/4-1/2)/(1/2) = 1/2
        replace(row("X", "c2", 0, "scored", 1), raw=F(1)),  # no headroom: 1 - 19/20 = 1/20
        replace(row("X", "m1", 0, "gate_failed"), raw=F(0)),  # 0
        replace(row("X", "ms", 0, "scored", 1), raw=F(1)),  # literature split: not headline
    ]
    lb = compute(rows, tasks=TASKS, task_suites=SUITES, split_tasks=SPLIT, floor_f=floors)
    x = by(lb, "X")
    assert x.skill is not None and x.skill.mean == (F(1, 2) + F(1, 20) + 0) / 3
    assert R.to_json(lb)["entries"][0]["skill"]["mean_exact"] == "11/60"
    assert "| 0.183 |" in R.to_markdown(lb)
    assert by(board(rows), "X").skill is None  # no floor given: n/a
    with pytest.raises(ValueError, match="no naive floor for: ms"):
        compute(rows, tasks=TASKS, task_suites=SUITES, floor_f={"c1": F(0)} | {"c2": 0, "m1": 0})
