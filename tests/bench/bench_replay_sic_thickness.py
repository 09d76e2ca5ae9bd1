"""Benchmark of the CUMCM 2025 B replay (a script, not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_sic_thickness.py [repeats]

Cold = the first replay in a process (reads the four xlsx attachments and extracts their
extrema; cached afterwards per file version); warm = every later artifact. The artifact
has no lists, so the largest legal input is the reference's shape with the largest values
the replay accepts (thickness 1000 um): the work per fit is one pass over the band's
samples plus at most 7 order offsets, independent of the values.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from tbmm.replay import sic_thickness as st
from tbmm.suite.tasks import TASKS_ROOT, load_task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact

SLUG = "cumcm-2025-b-sic-thickness"


def main(repeats: int = 5) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / SLUG)
    ref = json.loads((task.dir / "reference.json").read_text())["artifact"]
    big = json.loads(json.dumps(ref))
    for f in big["fits"].values():
        f["thickness_um"] = 1000
    rows = []
    for name, doc in (("reference", ref), ("largest values (d = 1000 um)", big)):
        text = json.dumps(doc)
        cold, warm = [], []
        for _ in range(repeats):
            st._spectrum_cached.cache_clear()
            t0 = time.perf_counter()
            ev = evaluate(task, read_artifact(text))
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            evaluate(task, read_artifact(text))
            warm.append(time.perf_counter() - t0)
        assert ev.replay is not None and ev.replay.status == "ok", ev.replay
        rows.append((name, statistics.median(cold), max(cold), statistics.median(warm)))
    print(
        f"{'artifact':32s} {'cold median':>12s} {'cold max':>9s} {'warm median':>12s}  (s, replay+gate+score)"
    )
    for name, cm, cx, wm in rows:
        print(f"{name:32s} {cm:12.3f} {cx:9.3f} {wm:12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
