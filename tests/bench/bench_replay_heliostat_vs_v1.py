"""CPU-time ratio of the heliostat replay against its frozen pre-rewrite copy, in one run,
and the cost of a replay-cache hit (a script, not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_heliostat_vs_v1.py [--largest] [--runs N]

The anchor (both reference designs) and, with --largest, the benchmark corpus of
bench_replay_heliostat_field.py (the densest legal fields, both designs each). On each
parsed artifact the copy and the production replay alternate N times (default 3); the
figure is the median of the per-round CPU ratios (`tbmm.tooling.bench.replay_speedup`, which
`tbmm bench` runs on the anchor). Values must be equal: the rewrite is bit-identical.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_replay_heliostat_field as B  # noqa: E402

from tbmm.replay import cache as C  # noqa: E402
from tbmm.replay import run_replay  # noqa: E402
from tbmm.suite.tasks import TASKS_ROOT, load_task  # noqa: E402
from tbmm.tooling.bench import replay_speedup  # noqa: E402
from tbmm.verdict.scoring import read_artifact  # noqa: E402


def main(largest: bool, runs: int) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / B.SLUG)
    texts = {"reference (both designs)": task.anchor_artifact_bytes().decode()}
    if largest:
        texts.update(B.largest_fields())
    print(
        f"{'artifact':40s} {'v1 cpu':>7s} {'new cpu':>7s} {'ratio':>6s}  same values "
        f"(medians of {runs} interleaved rounds)"
    )
    for name, text in texts.items():
        doc = read_artifact(text, task.caps)
        r = replay_speedup(task, doc, name, runs)
        assert r is not None
        print(f"{name:40s} {r.reference_cpu:7.2f} {r.cpu:7.2f} {r.ratio:6.2f}  {r.same_values}")
    os.environ["TBMM_REPLAY_CACHE"] = "memory"
    doc = read_artifact(texts["reference (both designs)"], task.caps)
    c0 = time.process_time()
    run_replay(task, doc)  # a miss: replayed and stored
    c1 = time.process_time()
    n = 20
    for _ in range(n):
        _, rep = run_replay(task, doc)
        assert rep is not None and rep.cached
    c2 = time.process_time()
    miss, hit = c1 - c0, (c2 - c1) / n
    print(
        f"cache: miss {miss:.3f} s, hit {hit * 1000:.1f} ms of CPU ({miss / hit:.0f}x); {C.CACHE.nbytes} bytes held"
    )
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    n_runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 3
    sys.exit(main("--largest" in args, n_runs))
