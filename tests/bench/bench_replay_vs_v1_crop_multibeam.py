"""CPU ratio of the crop-planting and multibeam replays against their frozen v1 copies
(tests/reference_replays), in one run, on `tbmm bench`'s largest legal artifacts (a script,
not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_vs_v1_crop_multibeam.py [repeats]

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

from tbmm import bench as B  # noqa: E402
from tbmm import exact  # noqa: E402
from tbmm.replay import CpuBudget  # noqa: E402
from tbmm.replay import crop_planting as C  # noqa: E402
from tbmm.replay import multibeam_lines as M  # noqa: E402
from tbmm.scoring import read_artifact  # noqa: E402
from tbmm.tasks import Task, find_task  # noqa: E402
from tests.reference_replays import crop_planting_v1 as CR  # noqa: E402
from tests.reference_replays import multibeam_lines_v1 as MR  # noqa: E402


def compare(name: str, task: Task, docs: list[dict[str, Any]], old: Any, new: Any, n: int) -> None:
    texts = [exact.dumps(d, indent=None) for d in docs]
    spec = task.replay_spec
    times: dict[str, list[float]] = {"v1": [], "new": []}
    same = True
    for fn in (old, new):  # warm-up: imports, the task data
        fn(read_artifact(texts[0], task.caps), task, spec, CpuBudget(600))
    for _ in range(n):
        outs: dict[str, list[Any]] = {}
        for label, fn in (("v1", old), ("new", new)):
            total, outs[label] = 0.0, []
            for x in texts:
                d = read_artifact(x, task.caps)
                c0 = time.process_time()
                outs[label].append(fn(d, task, spec, CpuBudget(600)))
                total += time.process_time() - c0
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


def main(n: int) -> int:
    t = find_task("cumcm-2024-c-crop-planting")
    compare(
        "crop planting, largest legal plan", t, [B.crop_planting_largest(t)], CR.replay, C.replay, n
    )
    t = find_task("cumcm-2023-b-multibeam-lines")
    docs = [B.multibeam_lines_artifact(t, s) for s in B.multibeam_lines_largest().values()]
    compare("multibeam, the 8 largest designs", t, docs, MR.replay, M.replay, max(1, n // 3))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 9))
