"""Replay the source release's strategies (paper A196 reproduction) under this task's model.

    uv run python tasks/CUMCM/cumcm-2025-a-smoke-screen/reference/replay_source_anchor.py

Evidence for scoring.toml's reference history. Those strategies cannot be flown (one UAV
changes heading and speed between its drops), so each drop is replayed on its own track,
which is more than the statement allows; even so, the shielding times fall well short of
the claimed ones, which counted a cloud as shielding when 25% of 27 target sample points
were hidden (expected_result.json: target_sampling.coverage_threshold).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tbmm.replay import smoke_screen as ss

TASK = Path(__file__).resolve().parents[1]
SOURCE = TASK.parents[2].parent / "shared" / "tbmm-source" / "tasks" / "CUMCM" / TASK.name


def main() -> None:
    scene = ss.scene_from_params(
        tomllib.loads((TASK / "replay.toml").read_text(encoding="utf-8"))["params"]
    )
    src = json.loads((SOURCE / "tests" / "expected_result.json").read_text(encoding="utf-8"))
    for qid in ("q2", "q3", "q4", "q5"):
        block = src[qid]
        strategies = block.get("strategies") or [block["strategy"]]
        drops = [
            ss.make_drop(
                scene,
                i,
                s["uav"],
                ss.uav_velocity(s["heading_deg"], s["speed_mps"]),
                s["drop_time_s"],
                s["fuse_time_s"],
            )
            for i, s in enumerate(strategies)
        ]
        tracks = {(s["uav"], s["heading_deg"], s["speed_mps"]) for s in strategies}
        missiles = ("M1", "M2", "M3") if qid == "q5" else ("M1",)
        pairs = [(m, d) for m in missiles for d in drops]
        res = ss.blocked_intervals(scene, pairs)
        per = {
            m: ss.union_length(
                [iv for (mm, _), r in zip(pairs, res, strict=True) if mm == m for iv in r.intervals]
            )
            for m in missiles
        }
        claimed = src["experiment_result"].get(f"{qid}_union_duration_s") or src[
            "experiment_result"
        ].get(f"{qid}_duration_s")
        print(
            f"{qid}: {len(drops)} drops on {len(tracks)} tracks of "
            f"{len({s['uav'] for s in strategies})} UAVs; replayed "
            + ", ".join(f"{m} {v:.4f} s" for m, v in per.items())
            + f", total {sum(per.values()):.4f} s; claimed {claimed}"
        )


if __name__ == "__main__":
    main()
