"""How much can an answer gain by choosing, per mirror, which truncation ray sets it gets?

    uv run python tests/bench/heliostat_rayset_selection.py [shifts]

Until 2026-11-29 the replay's truncation rays depended on each mirror's position (in
millimetres), so an optimiser that moved every mirror by a few millimetres could keep, per
mirror, the shift whose ray sets happened to count the most rays in (+0.41 %); the rays are
now one set per moment for every mirror, and this measures what is left. This script replays the reference's
Problem 3 design with every mirror shifted east by 0..shifts-1 mm and reports the field's
power with each mirror at its own best shift (an upper bound of that attack: it ignores
the shifts' tiny effect on neighbours' shading) against the unshifted replay. A script,
not a test: it measures a residual of the numerics, nothing here can fail.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from tbmm.replay import heliostat_field as H
from tbmm.suite.tasks import find_task


def main(shifts: int = 8) -> int:
    task = find_task("cumcm-2023-a-heliostat-field")
    design = H.parse_design(task.anchor_artifact, "q3", 10**6)
    assert design is not None
    kw = []
    for s in range(shifts):
        shifted = dataclasses.replace(design.field, x=design.field.x + s * 0.001)
        p = H.simulate(shifted, per_mirror=True)
        assert p.per_mirror_kw is not None
        kw.append(p.per_mirror_kw)
        print(f"shift {s} mm: {p.annual['annual_thermal_power_mw']:.4f} MW", flush=True)
    k = np.array(kw)
    base, best = k[0].sum() / 1000, k.max(axis=0).sum() / 1000
    spread = (k.sum(1).max() - k.sum(1).min()) / k.sum(1).mean()
    print(
        f"unshifted {base:.4f} MW; each mirror at its best of {shifts} shifts {best:.4f} MW: "
        f"+{100 * (best / base - 1):.3f} %; whole-field shifts differ by {100 * spread:.3f} %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8))
