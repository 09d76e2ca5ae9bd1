"""End to end through the real run path: sandbox backend, real verify (gate + score + Lean)."""

from __future__ import annotations

import shutil
from fractions import Fraction as F
from pathlib import Path

import pytest

from harness.agents.registry import OracleAgent, ReplayAgent
from harness.runs.runner import run_sweep
from harness.runs.store import Store
from harness.sandbox.backends import choose_backend
from tbmm.core import rules
from tbmm.reports.leaderboard import compute
from tbmm.reports.results import load_rows
from tbmm.suite.tasks import Task
from tbmm.verdict.gate import run_gate
from tbmm.verdict.scoring import baseline_artifact, read_artifact, score_task

from .conftest import infeasible_dragon


@pytest.fixture(scope="module")
def sandbox():  # noqa: ANN201
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap (Debian package bubblewrap) is not installed: .ci/run installs it")
    backend, why = choose_backend("sandbox")
    print(why)
    return backend


@pytest.mark.slow
def test_oracle_over_every_task_in_the_sandbox(suite: list[Task], sandbox, tmp_path: Path) -> None:  # noqa: ANN001
    db = tmp_path / "oracle.sqlite"
    summary = run_sweep(OracleAgent(), None, suite, 1, sandbox, 2, db, False, progress=False)
    n = len(suite)
    assert (summary.planned, summary.done, summary.failed) == (n, n, 0)
    rows = {r["task"]: r for r in Store(db).trials()}
    assert len(rows) == n
    stored, _, _ = load_rows(db)
    by_task = {r.task: r for r in stored}
    for t in suite:
        row = by_task[t.slug]
        assert rows[t.slug]["artifact_status"] == "ok"
        assert "lean" in row.report, (
            t.slug,
            row.status,
            row.report,
            rows[t.slug].get("exit_reason"),
            rows[t.slug].get("detail"),
        )
        assert row.report["lean"] in ("ok", "fail") and row.report["gate"] in (
            "pass",
            "warn",
            "fail",
        )
        if t.gate.anchor.feasible:
            # the anchor is exactly the single reference; under eq. 1 it is scored against
            # every panel paper, so its O-Eval is that of scoring it directly (1 only when no
            # other paper's values differ from it: tests/test_panels.py)
            assert row.status == "scored" and row.report["score"]["o_eval_anchor_exact"] == "1"
            assert row.o_eval == score_task(t, t.anchor_artifact).o_eval, t.slug
            assert row.report["lean"] == "ok" and row.report["exit_code"] == 0
        else:  # recorded infeasible: the gate and the kernel both reject it, the task is zeroed
            assert row.status == "gate_failed" and row.o_eval == 0 and row.robust_bo == -1, t.slug
            assert row.report["lean"] == "fail" and row.report["failing"]


def _write(dir_: Path, slug: str, seed: int | None, data: bytes) -> None:
    p = dir_ / slug / str(seed) if seed is not None else dir_
    p.mkdir(parents=True, exist_ok=True)
    (p / f"{slug}_result.json").write_bytes(data)


@pytest.mark.slow
def test_leaderboard_from_real_replay_runs(suite: list[Task], sandbox, tmp_path: Path) -> None:  # noqa: ANN001
    """Two entries through run_sweep + replay; every column checked against hand computation."""
    from tbmm.core import exact

    by = {t.slug: t for t in suite}
    juneau, dragon, tennis = (
        by["mcm-2025-b-juneau-tourism"],
        by["cumcm-2024-a-dragon-dance"],
        by["mcm-2024-c-tennis-momentum"],
    )
    tasks = [juneau, dragon, tennis]
    # the dragon entry is the source release's infeasible answer: a gate-zeroed task
    dragon_bad = infeasible_dragon(dragon)
    art = {t.slug: dragon_bad if t is dragon else t.anchor_artifact_bytes() for t in tasks}
    anchors, base = tmp_path / "anchors", tmp_path / "base"
    for t in tasks:  # seed 0: all three; seed 1: juneau missing
        _write(anchors, t.slug, 0, art[t.slug])
        if t is not juneau:
            _write(anchors, t.slug, 1, art[t.slug])
        _write(base, t.slug, None, (exact.dumps(baseline_artifact(t)) + "\n").encode())
    db = tmp_path / "lb.sqlite"
    juneau_1 = ReplayAgent(anchors, allow_missing=True)  # juneau seed 1: scored as missing
    run_sweep(juneau_1, "anchors", tasks, 2, sandbox, 1, db, False, progress=False)
    run_sweep(ReplayAgent(base), "baseline", tasks, 1, sandbox, 1, db, False, progress=False)
    rows, cfg, _ = load_rows(db)
    entries = sorted({r.entry for r in rows})
    base_id = next(e for e in entries if "@baseline" in e)
    anch_id = next(e for e in entries if "@anchors" in e)
    lb = compute(rows, **cfg)  # Multi-BO against each task's stored F (floor.json)

    # Hand computation, independent of the leaderboard module: per-task O-Eval from scoring + gate.
    def o(t: Task, doc) -> F:  # noqa: ANN001
        failed = run_gate(t, doc).verdict == "fail"
        return score_task(t, doc, gate_failed=failed).o_eval

    # headline tasks: the suite minus literature-split and incomplete tasks (from the data)
    n_head = sum(1 for t in suite if not t.panel.literature_split and not t.incomplete)
    # F: the baseline pipeline's reported values scored against the anchor, ungated
    f = {t.slug: score_task(t, baseline_artifact(t)).raw for t in tasks}
    assert all(lb.baseline_f[k] == v for k, v in f.items())
    bad_doc = read_artifact(dragon_bad)
    seed0 = (o(juneau, juneau.anchor_artifact) + o(dragon, bad_doc)) / n_head
    seed1 = o(dragon, bad_doc) / n_head
    assert o(juneau, juneau.anchor_artifact) == 1 and o(dragon, bad_doc) == 0
    mean = (seed0 + seed1) / 2
    std_sq = ((seed0 - mean) ** 2 + (seed1 - mean) ** 2) / 1  # sample variance, n - 1 = 1
    row = next(e for e in lb.entries if e.entry == anch_id)
    assert row.o_eval.mean == mean
    assert abs(float(row.o_eval.std) ** 2 - float(std_sq)) < 1e-12
    # Multi-BO: juneau cell (seed 0), dragon gate-failed counts o = 0, every other headline task -1
    others = n_head - 2
    mb0 = (
        rules.multi_bo_cell(F(1), f[juneau.slug])
        + rules.multi_bo_cell(F(0), f[dragon.slug])
        - others
    ) / n_head
    mb1 = (F(-1) + rules.multi_bo_cell(F(0), f[dragon.slug]) - others) / n_head
    assert row.multi_bo.mean == (mb0 + mb1) / 2
    assert row.gate_zeroed == 2  # dragon, both seeds
    assert row.o_eval.var == std_sq  # exact sample variance
    # Artifacts: readable JSON per seed over all tasks (tennis included): 3 then 2
    assert row.artifacts.mean == F(5, 2)
    # Robust BO-Eval: per seed, mean over headline tasks; missing and gate-zeroed cells are -1
    rb_j = score_task(juneau, juneau.anchor_artifact).robust_bo
    rb0 = (rb_j - 1 - others) / n_head
    rb1 = (F(-1) - 1 - others) / n_head
    assert row.robust_bo.mean == (rb0 + rb1) / 2
    assert (
        row.cost is None and row.cost_unknown_trials == 6
    )  # 3 tasks x 2 seeds replayed: cost unknown
    brow = next(e for e in lb.entries if e.entry == base_id)
    assert brow.o_eval.std is None  # one seed: n/a, never 0
    assert lb.entries[0].entry == anch_id  # sorted by O-Eval

    # Multi-BO's fallback branch through the same path: with F = 1 on juneau, 1 - f = 0 <
    # 0.10, so the anchors' juneau cell is 1 + clip(o - 1, -0.1, 0.1).
    f_full = {**cfg["baseline_f"], juneau.slug: F(1), dragon.slug: F(0)}
    lb2 = compute(rows, **{**cfg, "baseline_f": f_full})
    cell_j = 1 + max(F(-1, 10), min(F(1, 10), F(1) - 1))
    assert cell_j == rules.multi_bo_cell(F(1), F(1))
    cell_d = rules.multi_bo_cell(F(0), F(0))  # the anchors' dragon entry is gate-zeroed: o = 0
    a2 = next(e for e in lb2.entries if e.entry == anch_id)
    assert a2.multi_bo.per_seed[0][1] == (cell_j + cell_d - others) / n_head
