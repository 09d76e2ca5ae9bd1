"""Benchmark of the CUMCM 2023 B Problem 4 replay (a script, not a test: timings are noisy).

    uv run python tests/bench/bench_replay_multibeam_lines.py [repeats]

Each artifact goes through `tbmm.verdict.pipeline.evaluate` (replay + gate + score; no Lean). Cold =
the first artifact in a process (parses 附件.xlsx and builds the sample offsets, cached
afterwards); warm = every later one. Besides the reference, the largest legal inputs
(`tbmm.tooling.bench.multibeam_lines_largest`, also behind `tbmm bench`'s replay line): 1,000
segments and 1,000 nmi of lines (the caps of artifact_map.toml and replay.toml), arranged
the ways that cost the replay most: stacks, fans and crossing bundles of lines at the cap of
200 candidate neighbours per segment, dense parallel lines, long diagonals over the deepest water
(the widest swaths: most evaluation cells per segment), random short segments, and a
1,000-segment band layout. Wall and CPU (process) seconds are reported: on a machine
shared by other jobs the wall time can be a multiple of the CPU time. The replay cache
(`tbmm.replay.cache`) is bypassed: every figure is a replay, not a cache hit.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

from tbmm.core import exact
from tbmm.core.bounds import CpuBudget
from tbmm.replay import multibeam_lines as mb
from tbmm.replay.cache import bypass
from tbmm.suite.tasks import TASKS_ROOT, load_task
from tbmm.tooling.bench import multibeam_lines_artifact, multibeam_lines_largest
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact

SLUG = "cumcm-2023-b-multibeam-lines"


def _time(task: Any, text: str) -> tuple[float, float, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    with bypass():  # the replay itself, never a cached result
        ev = evaluate(task, read_artifact(text, task.caps), CpuBudget(600))  # measure, never stop
    return time.perf_counter() - t0, time.process_time() - c0, ev


def main(repeats: int = 3) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / SLUG)
    ref = json.loads((task.dir / "reference.json").read_text())["artifact"]
    cases = {"reference": read_artifact(json.dumps(ref), task.caps)} | {
        k: multibeam_lines_artifact(task, v) for k, v in multibeam_lines_largest().items()
    }
    print(
        f"{'artifact':34s} {'cold wall':>9s} {'cold cpu':>9s} {'warm wall':>9s} {'warm cpu':>9s}"
        f" {'max wall':>9s}  replayed (L nmi, missed %, E nmi)"
    )
    worst = 0.0
    for name, doc in cases.items():
        text = exact.dumps(doc, indent=None)
        cold, warm = [], []
        for _ in range(repeats):
            mb._grid_cached.cache_clear()
            mb.sample_offsets.cache_clear()
            mb.sample_points.cache_clear()
            cold.append(_time(task, text))
            warm.append(_time(task, text))
        ev = warm[-1][2]
        assert ev.replay is not None and ev.replay.status == "ok", (name, ev.replay)
        v = ev.replay.values
        walls = [c[0] for c in cold + warm]
        worst = max(worst, *walls)
        print(
            f"{name:34s} {statistics.median(c[0] for c in cold):9.3f}"
            f" {statistics.median(c[1] for c in cold):9.3f}"
            f" {statistics.median(w[0] for w in warm):9.3f}"
            f" {statistics.median(w[1] for w in warm):9.3f} {max(walls):9.3f}"
            f"  {float(v['q4.total_line_length_nmi']):.1f}, {float(v['q4.missed_area_pct']):.2f},"
            f" {float(v['q4.overlap_over_20pct_length_nmi']):.1f}"
        )
    print(f"largest wall time of one artifact: {worst:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
