"""Replay time of the largest legal smoke-screen answer (a benchmark, not a test).

    uv run python tests/bench/bench_smoke_screen.py [seconds]

Prints the CPU time per replay of Problem 5 with 5 UAVs x 3 drops against 3
missiles plus Problems 2-4 (tbmm.tooling.bench.largest_smoke_screen_input). Target: <= 2 s.
"""

from __future__ import annotations

import sys

from tbmm.suite.tasks import TASKS_ROOT, load_task
from tbmm.tooling.bench import bench_replay_smoke_screen, largest_smoke_screen_input


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    task = load_task(TASKS_ROOT / "CUMCM" / "cumcm-2025-a-smoke-screen")
    n = len(largest_smoke_screen_input(task)["q5"]["drops"])
    res = bench_replay_smoke_screen(task, seconds)
    print(
        f"{res.name} on {res.task}: {n} Problem-5 drops x 3 missiles + Problems 2-4; "
        f"{res.seconds / res.count:.3f} s CPU per replay ({res.count} replays)"
    )


if __name__ == "__main__":
    main()
