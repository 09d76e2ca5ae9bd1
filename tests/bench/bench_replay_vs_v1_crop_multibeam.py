"""CPU ratio of the crop-planting and multibeam replays against their frozen v1 copies
(tests/reference_replays), in one run, on `tbmm bench`'s largest legal artifacts (a script,
not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_vs_v1_crop_multibeam.py
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tbmm import bench as B  # noqa: E402
from tbmm import exact  # noqa: E402
from tbmm.replay import CpuBudget  # noqa: E402
from tbmm.replay import crop_planting as C  # noqa: E402
from tbmm.replay import multibeam_lines as M  # noqa: E402
from tbmm.scoring import read_artifact  # noqa: E402
from tbmm.tasks import find_task  # noqa: E402
from tests.reference_replays import crop_planting_v1 as CR  # noqa: E402
from tests.reference_replays import multibeam_lines_v1 as MR  # noqa: E402


def cpu(fn, docs, t, n):
    """Each replay on a freshly parsed copy (as an artifact arrives: no Num value cached)."""
    texts = [exact.dumps(d, indent=None) for d in docs]
    fn(read_artifact(texts[0], t.caps), t, t.replay_spec, CpuBudget(600))
    total, outs = 0.0, []
    for _ in range(n):
        outs = []
        for x in texts:
            d = read_artifact(x, t.caps)
            c0 = time.process_time()
            outs.append(fn(d, t, t.replay_spec, CpuBudget(600)))
            total += time.process_time() - c0
    return total / n, outs


t = find_task("cumcm-2024-c-crop-planting")
docs = [B.crop_planting_largest(t)]
for _ in range(2):
    a, oa = cpu(CR.replay, docs, t, 3)
    b, ob = cpu(C.replay, docs, t, 3)
    print(
        f"crop planting largest: v1 {a:.3f} s new {b:.3f} s ratio {a / b:.2f} same {[o.values for o in oa] == [o.values for o in ob]}"
    )
t = find_task("cumcm-2023-b-multibeam-lines")
docs = [B.multibeam_lines_artifact(t, s) for s in B.multibeam_lines_largest().values()]
a, oa = cpu(MR.replay, docs, t, 1)
b, ob = cpu(M.replay, docs, t, 1)
print(
    f"multibeam 8 largest: v1 {a:.3f} s new {b:.3f} s ratio {a / b:.2f} same {[o.values for o in oa] == [o.values for o in ob]}"
)
