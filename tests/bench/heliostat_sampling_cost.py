"""What a coarser sampling scheme would buy and cost for the heliostat replay (a script, not
a test: timings are noisy here).

    uv run python tests/bench/heliostat_sampling_cost.py [rounds]

Per scheme (shading grid k x k, truncation rays per mirror and moment): the CPU of
`simulate` on both reference designs (all mirrors), as a ratio to the replay's scheme
(8 x 8, 64 rays), the two alternating per round (median of the per-round ratios); and the
largest relative deviation of an annual figure from a fine reference (16 x 16, 1024 rays)
on every 15th mirror (all mirrors shade and block), as
test_discretisation_error_is_below_one_percent measures it. A scheme is a change of the
verdict's meaning (every replayed value moves), not an optimisation.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tbmm.replay import heliostat_field as H  # noqa: E402
from tbmm.suite.tasks import TASKS_ROOT, load_task  # noqa: E402
from tbmm.verdict.scoring import read_artifact  # noqa: E402

SCHEMES = ((8, 64), (8, 32), (8, 16), (6, 32), (4, 16))


def main(rounds: int) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / "cumcm-2023-a-heliostat-field")
    doc = read_artifact(task.anchor_artifact_bytes().decode(), task.caps)
    fields = [H.parse_design(doc, q, 10**6).field for q in ("q2", "q3")]  # type: ignore[union-attr]
    fine = H.Numerics(grid=16, rays=1024)
    targets = [np.arange(0, f.n, 15) for f in fields]
    ref = [H.simulate(f, num=fine, targets=t).annual for f, t in zip(fields, targets, strict=True)]
    base = H.Numerics()
    print(f"{'grid':>4s} {'rays':>4s} {'CPU vs 8x8/64':>14s} {'max dev. from 16x16/1024':>25s}")
    for grid, rays in SCHEMES:
        num = H.Numerics(grid=grid, rays=rays)
        dev = 0.0
        for f, t, r in zip(fields, targets, ref, strict=True):
            a = H.simulate(f, num=num, targets=t).annual
            dev = max(dev, max(abs(a[k] - r[k]) / abs(r[k]) for k in r))
        ratios = []
        for _ in range(rounds):
            c0 = time.process_time()
            for f in fields:
                H.simulate(f, num=base)
            c1 = time.process_time()
            for f in fields:
                H.simulate(f, num=num)
            c2 = time.process_time()
            ratios.append((c2 - c1) / (c1 - c0))
        print(f"{grid:4d} {rays:4d} {statistics.median(ratios):14.2f} {dev:25.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
