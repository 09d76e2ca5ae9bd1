"""Throughput benchmarks (a script, not a timed test: absolute timings are noisy here).

`tbmm bench` measures, on one core in this process:
* scoring: artifacts parsed from JSON text and scored (all task-level scores) per second;
* gate: gate check instances evaluated per second.
Each variant of the anchor artifact is perturbed so that nothing is served from a cache.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tbmm import exact
from tbmm.gate import run_gate
from tbmm.scoring import read_artifact, score_task
from tbmm.tasks import Task


@dataclass(frozen=True)
class BenchResult:
    name: str
    task: str
    count: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else float("inf")


def _variants(task: Task, n: int) -> list[bytes]:
    base = exact.dumps(task.anchor_artifact, indent=None)
    m = task.metrics[0]
    out = []
    for i in range(n):
        bumped = exact.fraction_to_text(m.anchor + exact.parse_decimal(f"0.{i:06d}"))
        out.append(base.replace(m.anchor_text, bumped, 1).encode())
    return out


def bench_scoring(task: Task, seconds: float = 2.0) -> BenchResult:
    blobs = _variants(task, 1000)
    score_task(task, read_artifact(blobs[0], task.caps))  # warm caches of the task's own files
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for b in blobs:
            score_task(task, read_artifact(b, task.caps))
        n += len(blobs)
    return BenchResult("scoring", task.slug, n, time.perf_counter() - t0)


def bench_json_reference(task: Task, seconds: float = 2.0) -> BenchResult:
    """Plain `json.loads` of the same artifacts: the in-run reference that makes the figure a
    ratio (absolute rates on this machine drift by 10-20% between runs)."""
    import json

    blobs = _variants(task, 1000)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for b in blobs:
            json.loads(b)
        n += len(blobs)
    return BenchResult("json.loads", task.slug, n, time.perf_counter() - t0)


def bench_gate(task: Task, seconds: float = 2.0) -> BenchResult:
    docs = [read_artifact(b, task.caps) for b in _variants(task, 200)]
    run_gate(task, docs[0])
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for d in docs:
            n += len(run_gate(task, d).instances)
    return BenchResult("gate checks", task.slug, n, time.perf_counter() - t0)


def bench_replay_production_decision(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per second of CUMCM 2024 B artifacts at the largest legal input (the input's
    shape is fixed by the statement: 6 x 4 + 16 decision bits), cycling through 256
    pseudo-random decision vectors so that no result comes from a cache."""
    import random

    from tbmm.replay import run_replay, strip_replayed

    base, _ = strip_replayed(task.anchor_artifact)
    rng = random.Random(20240906)
    one, zero = exact.Num(None, "1", True), exact.Num(None, "0", True)

    def bit() -> exact.Num:
        return one if rng.random() < 0.5 else zero

    docs = []
    for _ in range(256):
        doc = exact.loads(exact.dumps(base))
        for case in doc["q2"]["cases"]:
            for k in ("inspect_part1", "inspect_part2", "inspect_product", "disassemble_defective"):
                case[k] = bit()
        q3 = doc["q3"]
        for entry in (*q3["parts"], *q3["semi_products"], q3["product"]):
            for k in ("inspect", "disassemble_defective"):
                if k in entry:
                    entry[k] = bit()
        docs.append(doc)
    run_replay(task, docs[0])
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for d in docs:
            run_replay(task, d)
        n += len(docs)
    return BenchResult("replay production_decision", task.slug, n, time.perf_counter() - t0)


def crop_planting_largest(task: Task) -> dict:
    """The largest legal CUMCM 2024 C artifact: every suitable (year, plot, season, crop)
    combination of 附件1/附件2 as a row, in both cases (7 x 1062 = 7434 rows each), with
    areas that differ per row so that nothing is shared."""
    from tbmm.replay.crop_planting import Rules, load_data

    data = load_data(task.data_dir / "attachments")
    rules = Rules.from_params(task.replay_spec.params)
    rows = []
    i = 0
    for y in rules.years:
        for pid, p in data.plots.items():
            for kind, season, crop in data.stats:
                if kind == p.kind:
                    i += 1
                    area = exact.fraction_to_text(p.area * (1 + i % 7) / 100)
                    rows.append(
                        f'{{"year": {y}, "plot": "{pid}", "season": "{season}", '
                        f'"crop": "{crop}", "area_mu": {area}}}'
                    )
    plan = "[" + ", ".join(rows) + "]"
    text = (
        f'{{"q1": {{"case1": {{"profit_yuan": 0, "plan": {plan}}}, '
        f'"case2": {{"profit_yuan": 0, "plan": {plan}}}}}}}'
    )
    return read_artifact(text, task.caps)


def bench_replay_crop_planting(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per second of the largest legal CUMCM 2024 C artifact (2 x 7434 rows); the
    reciprocal is the replay time per artifact (target <= 2 s)."""
    from tbmm.replay import run_replay

    doc = crop_planting_largest(task)
    run_replay(task, doc)
    n, t0 = 0, time.perf_counter()
    while n == 0 or time.perf_counter() - t0 < seconds:
        _, rep = run_replay(task, doc)
        assert rep is not None and rep.status == "ok", rep
        n += 1
    return BenchResult(
        "replay crop_planting (2 x 7434 rows)", task.slug, n, time.perf_counter() - t0
    )
