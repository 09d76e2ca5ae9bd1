"""One baseline F per task everywhere (issue 22, item 4).

F is stored once per task (floor.json, built by `tbmm tasks build`, checked fresh by
validate); `tbmm score`, `tbmm verify`, the library, the RL adapters, the leaderboard's
Multi-BO and the report read it, and the Lean certificate recomputes it from baseline.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from fractions import Fraction as F
from pathlib import Path

import pytest

from tbmm.core import rules
from tbmm.reports.leaderboard import suite_config
from tbmm.suite.tasks import TASKS_ROOT, Task, load_task
from tbmm.verdict import floor
from tbmm.verdict.scoring import _raw_of, baseline_artifact, score_task

TBMM = [str(Path(sys.executable).with_name("tbmm"))]


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        [*TBMM, *args], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}
    )
    if check:
        assert res.returncode == 0, (args, res.stdout[-2000:], res.stderr[-2000:])
    return res


@pytest.mark.slow
def test_stored_f_is_the_baseline_values_scored(suite: list[Task]) -> None:
    """The stored F is what the baseline pipeline's values score against the anchor
    (computed here independently of floor.json) and what every score carries."""
    for t in suite:
        f = floor.baseline_f(t)
        assert f == _raw_of(t, baseline_artifact(t)), t.slug
        assert floor.stale(t) == "", t.slug
        s = score_task(t, t.anchor_artifact)
        assert s.baseline_raw == f
        assert s.robust_bo == rules.robust_bo(s.raw, s.oracle_raw, f)
        assert s.oracle_raw == 1, t.slug  # so F is also the baseline's O-Eval vs the anchor


@pytest.mark.slow
def test_score_verify_adapters_and_leaderboard_share_f(suite: list[Task]) -> None:
    """`tbmm score --json`'s F equals the leaderboard's for every task; verify and the
    robust_bo adapter reward are computed against that same F."""
    import tbmm
    from tbmm.rewards import compute_score

    board_f = suite_config(suite)["baseline_f"]
    for t in suite:
        art = t.anchor_artifact_bytes()
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"one-baseline-{os.getpid()}-{t.slug}.json"
        path.write_bytes(art)
        try:
            out = json.loads(_cli("score", str(path), "--task", t.slug, "--json").stdout)
        finally:
            path.unlink()
        f_score = F(out["baseline_raw_exact"])
        assert f_score == board_f[t.slug] == floor.baseline_f(t), t.slug
        v = tbmm.verify(t, art)
        assert v.score is not None
        expect = rules.robust_bo(F(v.score.raw_exact), F(1), f_score)
        assert F(v.robust_bo_exact) == expect, t.slug
        completion = art.decode()
        got = compute_score("tbmm", completion, t.slug, {"reward": "robust_bo"})
        assert got == pytest.approx(float(expect), abs=1e-6), t.slug  # adapters round to 6 places


def test_stale_or_missing_floor_fails_validate(tmp_path: Path) -> None:
    """An edited baseline.json without a rebuild, or a hand-edited F, is caught."""
    from tbmm.tooling.validate import validate_task

    src = TASKS_ROOT / "MCM" / "mcm-2025-b-juneau-tourism"
    dst = tmp_path / "MCM" / src.name
    shutil.copytree(src, dst)
    assert [p for p in validate_task(dst) if p.check == "floor"] == []
    doc = json.loads((dst / "floor.json").read_text())
    doc["baseline"]["raw"] = "0.99"  # a forged F
    (dst / "floor.json").write_text(json.dumps(doc))
    probs = [p.message for p in validate_task(dst) if p.check == "floor"]
    assert probs and "stale" in probs[0]
    assert floor.baseline_f(load_task(dst)) == F(99, 100)  # what every consumer would read
    (dst / "floor.json").unlink()
    probs = [p.message for p in validate_task(dst) if p.check == "floor"]
    assert probs and "missing" in probs[0]


@pytest.mark.slow
def test_readme_baseline_workflow_reproduces_f(tmp_path: Path) -> None:
    """README's workflow end to end with the CLI on a temporary store: the baseline
    artifacts replayed as an entry, then the leaderboard: its F for every task equals
    `tbmm score`'s F of that task's baseline artifact."""
    base, db = tmp_path / "baseline", tmp_path / "runs.sqlite"
    _cli("tasks", "baseline-artifacts", "--out", str(base))
    some = "mcm-2025-b-juneau-tourism,cumcm-2024-a-dragon-dance,mcm-2023-c-wordle"
    res = _cli(
        "run",
        "--agent",
        "replay",
        "--replay-dir",
        str(base),
        "--model",
        "question_results",
        "--tasks",
        some,
        "--allow-incomplete",
        "--db",
        str(db),
        check=False,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    lb = json.loads(_cli("leaderboard", "--db", str(db), "--format", "json").stdout)
    assert lb["baseline"]["state"] == "ok"
    f_board = lb["baseline"]["f"]
    slugs = sorted(p.name.removesuffix("_result.json") for p in base.glob("*_result.json"))
    assert sorted(f_board) == slugs  # every task, not only those the entry ran
    for slug in slugs:
        out = json.loads(
            _cli("score", str(base / f"{slug}_result.json"), "--task", slug, "--json").stdout
        )
        assert out["baseline_raw_exact"] == f_board[slug]["exact"], slug
    # the replayed entry itself is judged like any other answer: its bare numbers lack what
    # the gate needs, so it is not where F comes from
    (entry,) = lb["entries"]
    assert entry["multi_bo"] is not None
