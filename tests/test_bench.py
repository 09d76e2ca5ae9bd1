"""`tbmm bench` runs to the end: every replayed task's benchmark returns (one round each)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tbmm.bench import bench_mixed, bench_replays
from tbmm.cli import app
from tbmm.tasks import Task

from .conftest import REPO


@pytest.mark.slow
def test_every_replay_benchmark_returns(suite: list[Task]) -> None:
    replayed = [t for t in suite if t.replay_spec is not None]
    results = bench_replays(replayed, seconds=0.0)
    missing = {t.slug for t in replayed} - {r.task for r in results}
    # a replay without a benchmark is allowed only when its module has none (named here)
    import tbmm.bench as B

    for slug in missing:
        t = next(t for t in replayed if t.slug == slug)
        assert not hasattr(B, f"bench_replay_{t.replay_spec.module}"), slug
    assert all(r.count >= 1 and r.seconds >= 0 for r in results)


@pytest.mark.slow
def test_mixed_corpus_rows(suite: list[Task]) -> None:
    rows = bench_mixed(suite, seconds=0.0)
    assert [r.name for r in rows] == ["json.loads", "scoring", "gate"]
    assert all(r.count > 0 for r in rows)


# ------------------------------------------------------------------ ratio wording (issue 24)

COST = re.compile(r"costs (\d+\.\d\d)× json\.loads")


def test_bench_prints_ratios_as_costs_not_speedups() -> None:
    """A figure's ratio to json.loads is its CPU cost per artifact over the plain parse's:
    printed "costs N× json.loads" (never "N× json.loads", which reads as a speed-up) and
    equal to the rates' quotient in --json."""
    args = ["bench", "--seconds", "0", "--no-replays"]
    args += ["--task", "mcm-2025-b-juneau-tourism", "--task", "cumcm-2024-b-production-decision"]
    text = CliRunner().invoke(app, args)
    assert text.exit_code == 0, text.output
    lines = [ln for ln in text.stdout.splitlines() if "/s" in ln]
    ratio_lines = [ln for ln in lines if not ln.strip().startswith("json.loads")]
    assert ratio_lines and all(COST.search(ln) for ln in ratio_lines), text.stdout
    every_ratio = re.findall(r"[x×] json\.loads", text.stdout)
    assert len(every_ratio) == len(COST.findall(text.stdout)), text.stdout
    doc = CliRunner().invoke(app, [*args, "--json"])
    rows = json.loads(doc.stdout)
    loads = {r["task"]: r["per_second"] for r in rows if r["name"] == "json.loads"}
    assert {r["task"] for r in rows} == {"mixed", "no replay"}
    for r in rows:
        if r["name"] == "json.loads":
            assert r["cost_x_json_loads"] is None
        else:  # json.loads/s over the figure's own /s: > 1 when the figure is the slower
            assert r["cost_x_json_loads"] == pytest.approx(
                loads[r["task"]] / r["per_second"], rel=0.01
            )


def test_readme_quotes_json_loads_ratios_as_costs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quoted = list(re.finditer(r"(\S+) ([\d.]+(?:–[\d.]+)?)× (?:a plain )?json\.loads", readme))
    assert quoted, "README quotes the bench's ratios to json.loads"
    assert [m.group(1) for m in quoted] == ["costs"] * len(quoted), [m.group(0) for m in quoted]
    assert len(re.findall(r"\d[x×] (?:a plain )?json\.loads", readme)) == len(quoted)
