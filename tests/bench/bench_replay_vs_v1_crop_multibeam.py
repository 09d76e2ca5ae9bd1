"""CPU ratio of the crop-planting and multibeam replays against their frozen v1 copies
(tests/reference_replays), in one run, on `tbmm bench`'s largest legal artifacts (a script,
not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_vs_v1_crop_multibeam.py [repeats]

The multibeam line also gives each design's ratio (minimum over the repeats) and the anchor's.
Each replay runs on a freshly parsed copy of the artifact (as an artifact arrives: no exact
value cached on its numbers); v1 and the production replay alternate, and the figures are
the minimum and the median CPU seconds over the repeats (the machine is shared: the
minimum is the least disturbed run).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tbmm.core import exact  # noqa: E402
from tbmm.replay import CpuBudget, strip_replayed  # noqa: E402
from tbmm.replay import crop_planting as C  # noqa: E402
from tbmm.replay import multibeam_lines as M  # noqa: E402
from tbmm.suite.tasks import Task, find_task  # noqa: E402
from tbmm.tooling import bench as B  # noqa: E402
from tbmm.verdict.scoring import read_artifact  # noqa: E402
from tests.reference_replays import crop_planting_v1 as CR  # noqa: E402
from tests.reference_replays import multibeam_lines_v1 as MR  # noqa: E402


def compare(
    name: str,
    task: Task,
    docs: list[dict[str, Any]],
    old: Any,
    new: Any,
    n: int,
    labels: list[str] | None = None,
) -> None:
    """Print the CPU ratio v1 / new over `docs` in all (and per artifact, given `labels`)."""
    texts = [exact.dumps(d, indent=None) for d in docs]
    spec = task.replay_spec
    times: dict[str, list[float]] = {"v1": [], "new": []}
    each: dict[str, list[list[float]]] = {"v1": [[] for _ in texts], "new": [[] for _ in texts]}
    same = True
    for fn in (old, new):  # warm-up: imports, the task data
        fn(read_artifact(texts[0], task.caps), task, spec, CpuBudget(600))
    for _ in range(n):
        outs: dict[str, list[Any]] = {}
        for label, fn in (("v1", old), ("new", new)):
            total, outs[label] = 0.0, []
            for a, x in enumerate(texts):
                d = read_artifact(x, task.caps)
                c0 = time.process_time()
                outs[label].append(fn(d, task, spec, CpuBudget(600)))
                dt = time.process_time() - c0
                each[label][a].append(dt)
                total += dt
            times[label].append(total)
        same &= [(o.values, o.details, o.notes) for o in outs["v1"]] == [
            (o.values, o.details, o.notes) for o in outs["new"]
        ]
    lo = {k: min(v) for k, v in times.items()}
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"{name}: v1 {lo['v1']:.3f} s, new {lo['new']:.3f} s CPU (min of {n}): "
        f"{lo['v1'] / lo['new']:.2f}x; medians {med['v1']:.3f} / {med['new']:.3f} s: "
        f"{med['v1'] / med['new']:.2f}x; same outcome: {same}"
    )
    for a, lab in enumerate(labels or []):
        v1, nw = min(each["v1"][a]), min(each["new"][a])
        print(f"  {lab:34s} v1 {v1:.3f} s, new {nw:.3f} s (min): {v1 / nw:.2f}x")


def main(n: int) -> int:
    t = find_task("cumcm-2024-c-crop-planting")
    compare(
        "crop planting, largest legal plan", t, [B.crop_planting_largest(t)], CR.replay, C.replay, n
    )
    t = find_task("cumcm-2023-b-multibeam-lines")
    largest = B.multibeam_lines_largest()
    docs = [B.multibeam_lines_artifact(t, s) for s in largest.values()]
    compare(
        f"multibeam, the {len(docs)} largest designs",
        t,
        docs,
        MR.replay,
        M.replay,
        max(1, n // 3),
        list(largest),
    )
    anchor = strip_replayed(t.anchor_artifact)[0]
    compare("multibeam, the anchor", t, [anchor], MR.replay, M.replay, n)
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 9))
