"""Benchmark of the CUMCM 2023 A replay (a script, not a test: timings are noisy here).

    uv run python tests/bench/bench_replay_heliostat_field.py [repeats]

Times `evaluate` (parse + replay + gate + score) of whole artifacts, both questions
replayed: the reference, and the largest legal fields. The work grows with the number of
mirrors and with the neighbours that can shade or block one another, so the candidates are
the densest lattices the statement allows: 2 m mirrors 7 m apart (the most mirrors, about
8700 with the tower on the field's edge, which also makes the reflected rays flattest and
the blocking corridors longest), the same with one 8 m mirror at 6 m height among them (it
widens every neighbour search window and lengthens every shadow) and 8 m mirrors 13 m apart
(the largest mirrors, the most occlusion per mirror); and one illegal field at the list cap
(its optics are skipped: the exact rules fail). Wall time on a shared machine depends
on its load; CPU time (this process) is the steadier figure.
"""

from __future__ import annotations

import math
import statistics
import sys
import time

import numpy as np

from tbmm.core import exact
from tbmm.suite.tasks import TASKS_ROOT, load_task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact

SLUG = "cumcm-2023-a-heliostat-field"


def lattice(w: float, tower_y: float) -> tuple[np.ndarray, np.ndarray]:
    """The hexagonal lattice at the minimum spacing w + 5 m (+ 1 cm) inside the legal field."""
    pitch = w + 5.01  # the minimum spacing + 1 cm: legal after rounding to 1 mm
    m = int(350 / pitch) + 2
    jj, ii = np.meshgrid(np.arange(-m, m + 1), np.arange(-2 * m, 2 * m + 1))
    x = np.round(((jj + 0.5 * (ii % 2)) * pitch).ravel(), 3)
    y = np.round((ii * pitch * math.sqrt(3) / 2).ravel(), 3)
    ok = (x * x + y * y <= 350**2) & (x * x + (y - tower_y) ** 2 >= 100**2)
    return x[ok], y[ok]


def q3_section(x, y, w, h, z, tower_y: float) -> dict:  # noqa: ANN001
    return {
        "tower_x_m": 0,
        "tower_y_m": tower_y,
        "mirrors": [
            {
                "x_m": float(a),
                "y_m": float(b),
                "width_m": float(c),
                "height_m": float(d),
                "installation_height_m": float(e),
            }
            for a, b, c, d, e in zip(x, y, w, h, z, strict=True)
        ],
    }


def q2_section(x, y, w: float, z: float, tower_y: float) -> dict:  # noqa: ANN001
    return {
        "tower_x_m": 0,
        "tower_y_m": tower_y,
        "mirror_width_m": w,
        "mirror_height_m": w,
        "installation_height_m": z,
        "mirrors": [{"x_m": float(a), "y_m": float(b)} for a, b in zip(x, y, strict=True)],
    }


def largest_fields() -> dict[str, str]:
    """Artifacts (JSON text) of the largest legal fields, both questions the same field."""
    out = {}
    ty = -350.0
    x, y = lattice(2.0, ty)
    n = x.shape[0]
    out[f"2 m mirrors, {n} per question"] = {
        "q2": q2_section(x, y, 2.0, 2.0, ty),
        "q3": q3_section(x, y, np.full(n, 2.0), np.full(n, 2.0), np.full(n, 2.0), ty),
    }
    # one 8 m mirror at 6 m among them (its neighbours within 13 m removed)
    cx, cy = 0.0, 150.0
    keep = (x - cx) ** 2 + (y - cy) ** 2 >= 13.0**2
    xb, yb = np.r_[x[keep], cx], np.r_[y[keep], cy]
    nb = xb.shape[0]
    w = np.r_[np.full(nb - 1, 2.0), 8.0]
    z = np.r_[np.full(nb - 1, 2.0), 6.0]
    out[f"2 m mirrors + one 8 m, {nb} in q3"] = {
        "q2": q2_section(x, y, 2.0, 2.0, ty),
        "q3": q3_section(xb, yb, w, w, z, ty),
    }
    x8, y8 = lattice(8.0, ty)
    n8 = x8.shape[0]
    out[f"8 m mirrors, {n8} per question"] = {
        "q2": q2_section(x8, y8, 8.0, 6.0, ty),
        "q3": q3_section(x8, y8, np.full(n8, 8.0), np.full(n8, 8.0), np.full(n8, 6.0), ty),
    }
    return {k: exact.dumps(v, indent=None) for k, v in out.items()}


def illegal_field() -> tuple[str, str]:
    """At the list cap, 20 m mirrors 25 m apart over 2.5 km (beyond the circle, oversized):
    its optics would outrun the verification budget (measured before the replay skipped the
    optics of rule-breaking designs); now only its exact rules are decided."""
    jj, ii = np.meshgrid(np.arange(101) - 50, np.arange(101) - 50)
    x, y = (25.0 * ii).ravel(), (25.0 * jj).ravel()
    n = x.shape[0]
    f = np.full(n, 20.0)
    doc = {"q3": q3_section(x, y, f, f, f, 0.0)}
    return f"illegal: 20 m mirrors over 2.5 km, {n} in q3", exact.dumps(doc, indent=None)


def main(repeats: int = 3) -> int:
    task = load_task(TASKS_ROOT / "CUMCM" / SLUG)
    cases = {"reference (both designs)": task.anchor_artifact_bytes().decode()}
    cases.update(largest_fields())
    illegal, illegal_text = illegal_field()
    cases[illegal] = illegal_text
    print(f"{'artifact':40s} {'wall median':>11s} {'wall max':>9s} {'cpu median':>11s}  (s)")
    for name, text in cases.items():
        walls, cpus = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            ev = evaluate(task, read_artifact(text, task.caps))
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
            assert ev.replay is not None and ev.replay.status == "ok", ev.replay
            skipped = any("not replayed" in n for n in ev.replay.notes)
            assert skipped == (name == illegal), ev.replay.notes
        print(
            f"{name:40s} {statistics.median(walls):11.2f} {max(walls):9.2f} "
            f"{statistics.median(cpus):11.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 3))
