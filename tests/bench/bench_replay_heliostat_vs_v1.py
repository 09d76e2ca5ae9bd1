"""CPU-time ratio of the heliostat replay against its frozen pre-rewrite copy, in one run,
and the cost of a replay-cache hit (a script, not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_heliostat_vs_v1.py [--largest]

The anchor (both reference designs) and, with --largest, the benchmark corpus of
bench_replay_heliostat_field.py; old and new alternate on the same parsed artifact.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_replay_heliostat_field as B  # noqa: E402

from tbmm.replay import CpuBudget, run_replay  # noqa: E402
from tbmm.replay import cache as C  # noqa: E402
from tbmm.replay import heliostat_field as H  # noqa: E402
from tbmm.scoring import read_artifact  # noqa: E402
from tbmm.tasks import TASKS_ROOT, load_task  # noqa: E402
from tests.reference_replays import heliostat_field_v1 as R  # noqa: E402


def main(largest: bool) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / B.SLUG)
    texts = {"reference (both designs)": task.anchor_artifact_bytes().decode()}
    if largest:
        texts.update(B.largest_fields())
    print(f"{'artifact':40s} {'v1 cpu':>7s} {'new cpu':>7s} {'ratio':>6s}  same values")
    for name, text in texts.items():
        doc = read_artifact(text, task.caps)
        c0 = time.process_time()
        old = R.replay(doc, task, task.replay_spec, CpuBudget(600))
        c1 = time.process_time()
        new = H.replay(doc, task, task.replay_spec, CpuBudget(600))
        c2 = time.process_time()
        same = old.values == new.values
        print(f"{name:40s} {c1 - c0:7.2f} {c2 - c1:7.2f} {(c1 - c0) / (c2 - c1):6.2f}  {same}")
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
    sys.exit(main("--largest" in sys.argv[1:]))
