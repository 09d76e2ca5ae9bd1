"""Benchmark of the CUMCM 2023 B Problem 4 replay (a script, not a test: timings are noisy).

    uv run python tests/bench/bench_replay_multibeam_lines.py [repeats]

Each artifact goes through `tbmm.pipeline.evaluate` (replay + gate + score; no Lean). Cold =
the first artifact in a process (parses 附件.xlsx and builds the sample offsets, cached
afterwards); warm = every later one. Besides the reference, the largest legal inputs: 1,000
segments and 1,000 nmi of lines (the caps of artifact_map.toml and replay.toml), arranged
the ways that cost the replay most: stacks and fans of lines at the cap of 200 candidate neighbours
per segment, dense parallel lines, long diagonals over the deepest water
(the widest swaths: most evaluation cells per segment), random short segments, and a
1,000-segment band layout. Wall and CPU (process) seconds are reported: on a machine
shared by other jobs the wall time can be a multiple of the CPU time.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

import numpy as np

from tbmm.bounds import Deadline
from tbmm.pipeline import evaluate
from tbmm.replay import multibeam_lines as mb
from tbmm.scoring import read_artifact
from tbmm.tasks import TASKS_ROOT, load_task

SLUG = "cumcm-2023-b-multibeam-lines"


def _doc(segs: list[tuple[float, float, float, float]]) -> dict[str, Any]:
    lines = [dict(zip(mb.KEYS, (round(float(v), 6) for v in s), strict=True)) for s in segs]
    return {
        "q4": {
            "lines": lines,
            "total_line_length_nmi": 0,
            "missed_area_pct": 0,
            "overlap_over_20pct_length_nmi": 0,
        },
        "q3": {"total_line_length_m": 125936, "line_count": 34},
    }


def largest_inputs() -> dict[str, list[tuple[float, float, float, float]]]:
    """Artifacts at the caps: 1,000 segments and/or 1,000 nmi, up to 200 candidate neighbours
    per segment (stacks and fans at that cap)."""
    rng = np.random.default_rng(7)
    diag = float(np.hypot(4, 5))
    starts = rng.uniform([0, 0], [4, 5], (1000, 2))
    ang = rng.uniform(0, 2 * np.pi, 1000)
    ends = np.clip(starts + 0.99 * np.c_[np.cos(ang), np.sin(ang)], [0, 0], [4, 5])
    ys = np.linspace(0, 5, 21)
    xs = (np.arange(50) + 0.5) * 4 / 50
    stacks = [(0.6 + 0.7 * i, 3.0) for i in range(5)]
    fans = [(0.8, 0.0), (3.2, 0.0), (0.8, 2.0), (3.2, 2.0)]
    return {
        "5 stacks of 200 x 1 nmi": [(x, y, x, y + 1.0) for x, y in stacks for _ in range(200)],
        f"stacked {int(1000 // diag)} full diagonals": [(0, 0, 4, 5)] * int(1000 // diag),
        "4 fans of 200 x 0.8 nmi": [
            (x, y, x + 0.8 * np.cos(a), y + 0.8 * np.sin(a))
            for x, y in fans
            for a in np.linspace(0.0, np.pi, 200, endpoint=False)
        ],
        "200 parallel N-S lines": [(x, 0, x, 5) for x in np.linspace(0.01, 3.99, 200)],
        "250 parallel E-W lines": [(0, y, 4, y) for y in np.linspace(0.01, 4.99, 250)],
        "random 1000 x <= 1 nmi": [tuple(np.r_[s, e]) for s, e in zip(starts, ends, strict=True)],
        "bands 20 x 50 (1000 segments)": [(x, ys[b], x, ys[b + 1]) for b in range(20) for x in xs],
    }


def _time(task: Any, text: str) -> tuple[float, float, Any]:
    t0, c0 = time.perf_counter(), time.process_time()
    ev = evaluate(task, read_artifact(text, task.caps), Deadline(600))  # measure, never stop
    return time.perf_counter() - t0, time.process_time() - c0, ev


def main(repeats: int = 3) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / SLUG)
    ref = json.loads((task.dir / "reference.json").read_text())["artifact"]
    cases = {"reference": ref} | {k: _doc(v) for k, v in largest_inputs().items()}
    print(
        f"{'artifact':34s} {'cold wall':>9s} {'cold cpu':>9s} {'warm wall':>9s} {'warm cpu':>9s}"
        f" {'max wall':>9s}  replayed (L nmi, missed %, E nmi)"
    )
    worst = 0.0
    for name, doc in cases.items():
        text = json.dumps(doc)
        cold, warm = [], []
        for _ in range(repeats):
            mb._grid_cached.cache_clear()
            mb.sample_offsets.cache_clear()
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
