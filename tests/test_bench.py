"""`tbmm bench` runs to the end: every replayed task's benchmark returns (one round each)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from tbmm.cli.root import app
from tbmm.suite.tasks import Task
from tbmm.tooling.bench import bench_mixed, bench_replays

from .conftest import REPO


@pytest.mark.slow
def test_every_replay_benchmark_returns(suite: list[Task]) -> None:
    replayed = [t for t in suite if t.replay_spec is not None]
    results = bench_replays(replayed, seconds=0.0)
    missing = {t.slug for t in replayed} - {r.task for r in results}
    # a replay without a benchmark is allowed only when its module has none (named here)
    import tbmm.tooling.bench as B

    for slug in missing:
        t = next(t for t in replayed if t.slug == slug)
        assert not hasattr(B, f"bench_replay_{t.replay_spec.module}"), slug
    assert all(r.count >= 1 and r.seconds >= 0 for r in results)


@pytest.mark.slow
def test_mixed_corpus_rows(suite: list[Task]) -> None:
    rows = bench_mixed(suite, seconds=0.0)
    assert [r.name for r in rows] == ["json.loads", "scoring", "gate"]
    assert all(r.count > 0 for r in rows)


def test_replay_speedup_against_the_reference_copy() -> None:
    """`tbmm bench`'s ratio line: the heliostat replay and its frozen copy alternate on the
    anchor and give the same values (the figure itself is not asserted: timings are noisy);
    a module without a copy has no line."""
    from tbmm.suite.tasks import find_task
    from tbmm.tooling.bench import bench_replay_speedups, reference_replay

    assert reference_replay("no_such_replay") is None
    task = find_task("cumcm-2023-a-heliostat-field")
    (r,) = bench_replay_speedups([task], runs=1)
    assert r.task == task.slug and r.runs == 1 and r.same_values
    assert (REPO / r.reference).is_file()
    assert r.cpu > 0 and r.reference_cpu > 0 and r.ratio == pytest.approx(r.reference_cpu / r.cpu)
    production = find_task("cumcm-2024-b-production-decision")  # replayed, no frozen copy
    assert production.replay_spec is not None and bench_replay_speedups([production]) == []


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


def test_nudged_artifacts_are_distinct(suite: list[Task]) -> None:
    from tbmm.tooling.bench import nudged

    t = next(t for t in suite if t.replay_spec is None)
    assert len(set(nudged(t, 3))) == 3  # no cache may serve one for another


def test_lean_bench_counts_what_the_kernel_checks(suite: list[Task]) -> None:
    """`tbmm bench --lean`'s per-anchor figure counts the gate's check instances, and the
    batch figure checks the same artifacts alone and together, every one agreed."""
    from tbmm.tooling.bench import bench_amortise, bench_anchor_lean, nudged
    from tbmm.verdict.gate import run_gate

    t = next(t for t in suite if t.replay_spec is None)
    a = bench_anchor_lean(t, cli=False)
    assert a.outcome == "ok" and a.lean_cpu > 0
    assert a.instances == len(run_gate(t, t.anchor_artifact).instances) > 0
    one, many = bench_amortise([(t, d) for d in nudged(t, 2)], "artifacts")
    assert one.count == many.count == 2
    assert one.outcome == many.outcome == "ok"
    assert one.cpu_seconds > 0 and many.cpu_seconds > 0
