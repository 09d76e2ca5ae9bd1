"""Harbor's verifier entry point: verify the agent's artifact and write Harbor's reward files.

`tests/test.sh` of every task runs, inside the separate verifier environment that
`tbmm export harbor` defines (tbmm, the task data and the Lean runtime; never the agent's
container)::

    python -m tbmm.integrations.harbor.reward --task SLUG --artifact /root/results/SLUG_result.json

It runs the same verification as `tbmm verify` (schema, replay, gate, score, Lean kernel
check) and writes into `/logs/verifier`:

* `verdict.json` — the full report (`tbmm.verify.VerifyReport`), exact values as text;
* `reward.json` — Harbor reads only flat finite numbers, so verdicts are numbers too:
  `reward` (the reward `--reward` selects: by default `skill`, skill over the task's naive
  floor, the reward of tbmm's RL adapters and `tbmm serve`; or `o_eval`, the paper's
  O-Eval; or `robust_bo`), then `skill`, `o_eval`, `robust_bo` whatever was selected, and
  0/1 flags (`feasible`, `scored`, `readable`, `gate_pass`, `gate_warn`, `gate_fail`,
  `lean_ok`, `replay_failed`). Every task writes every key, so Harbor's per-key means are
  rates over all trials;
* `reward.txt` — `reward` alone (Harbor uses it only when `reward.json` is absent).

A verification that gives no verdict (budget exceeded, Lean disagreeing with Python, no
Lean runtime, a crash) writes `verdict.json` with the cause and NO reward file, so Harbor
records a verifier error for the trial instead of a score of 0: an infrastructure failure
is not a score. Exit code 0 when rewards were written, 3 when there is no verdict, 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import traceback
from pathlib import Path
from typing import Any

from tbmm.integrations.harbor import layout

# Report statuses that are a verdict on the agent's artifact (O-Eval may be 0).
VERDICT_STATUSES = frozenset(
    {"scored", "gate_failed", "missing_artifact", "unreadable", "over_caps"}
)
# The rewards `--reward` can put in `reward` (tbmm.rewards.Reward; a test keeps them equal).
REWARDS = ("skill", "o_eval", "robust_bo")
DEFAULT_REWARD = "skill"
REWARD_KEYS = (
    "reward",
    "skill",
    "o_eval",
    "robust_bo",
    "feasible",
    "scored",
    "readable",
    "gate_pass",
    "gate_warn",
    "gate_fail",
    "lean_ok",
    "replay_failed",
)


def read_agent_artifact(path: Path, max_bytes: int) -> bytes | None:
    """The artifact's bytes (at most `max_bytes + 1`, so the verifier's own cap refuses a
    larger one), or None when there is no regular file there. A symlink is never
    followed: the agent chose it. A file over the cap is not read: BoundsError, with its
    size in the reason as `tbmm verify` states it."""
    from tbmm.core.bounds import Caps, check_size

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        check_size(st.st_size, Caps(max_bytes=max_bytes))
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(max_bytes + 1)
    finally:
        os.close(fd)


def rewards(
    report: dict[str, Any], replayed_task: bool, reward: str = DEFAULT_REWARD
) -> dict[str, float | int] | None:
    """Harbor's reward.json for a verify report, `reward` naming the headline; None when
    the report is not a verdict."""
    if reward not in REWARDS:
        raise ValueError(f"unknown reward {reward!r}: use {', '.join(REWARDS)}")
    status = report.get("status")
    if status not in VERDICT_STATUSES:
        return None
    values = {
        "skill": float(report["skill"]) if status == "scored" else 0.0,
        "o_eval": float(report["o_eval"]),
        "robust_bo": float(report["robust_bo_eval"]),
    }
    gate = report.get("gate")
    replay = report.get("replay") or {}
    return {
        "reward": values[reward],
        **values,
        "feasible": int(report.get("exit_code") == 0),
        "scored": int(status == "scored"),
        "readable": int(bool(report.get("readable"))),
        "gate_pass": int(gate == "pass"),
        "gate_warn": int(gate == "warn"),
        "gate_fail": int(gate == "fail"),
        "lean_ok": int(report.get("lean") == "ok"),
        "replay_failed": int(
            replayed_task and bool(report.get("readable")) and replay.get("status") != "ok"
        ),
    }


def verify_for_harbor(slug: str, artifact: Path, tasks_root: Path | None = None) -> dict[str, Any]:
    """`{"report": VerifyReport JSON or None, "error": str}` for one artifact, never raising."""
    from tbmm.core.bounds import BoundsError
    from tbmm.suite.tasks import TASKS_ROOT, find_task
    from tbmm.verify import _unreadable, verify_artifact

    try:
        task = find_task(slug, tasks_root or TASKS_ROOT)
        try:
            data = read_agent_artifact(artifact, task.caps.max_bytes)
        except BoundsError as exc:  # over the byte cap: refused unread, as by tbmm verify
            rep = _unreadable(task, str(exc), "over_caps")
            rep.task_digest = task.verdict_digest
        else:
            rep = verify_artifact(task, data, lean=True)
    except Exception as exc:  # no verdict: a missing runtime, a generator bug, a crash
        tb = traceback.format_exc(limit=8)
        return {"report": None, "replayed": False, "error": f"{type(exc).__name__}: {exc}\n{tb}"}
    return {
        "report": rep.model_dump(mode="json"),
        "replayed": task.replay_spec is not None,
        "error": "",
    }


def write_outputs(result: dict[str, Any], out: Path, reward: str = DEFAULT_REWARD) -> int:
    """Write verdict.json and, for a verdict, reward.json and reward.txt; the exit code."""
    out.mkdir(parents=True, exist_ok=True)
    for name in (layout.REWARD_JSON, layout.REWARD_TXT):
        (out / name).unlink(missing_ok=True)  # a stale reward must never survive
    report = result["report"]
    doc = {"tbmm_verdict": 1, "error": result["error"], "report": report}
    (out / layout.VERDICT_JSON).write_text(json.dumps(doc, indent=1, ensure_ascii=False))
    r = rewards(report, result["replayed"], reward) if report is not None else None
    if r is None:
        why = result["error"].splitlines()[0] if result["error"] else ""
        if report is not None:
            why = f"status {report.get('status')}: {report.get('error') or '; '.join(report.get('failing', [])[:3])}"
        print(f"tbmm: no verdict, no reward written ({why})")
        return 3
    (out / layout.REWARD_JSON).write_text(json.dumps(r, sort_keys=True) + "\n")
    (out / layout.REWARD_TXT).write_text(repr(r["reward"]) + "\n")
    print(
        f"tbmm: {report['task']} status {report['status']} reward ({reward}) {r['reward']!r} "
        f"O-Eval {report['o_eval_exact']} skill {report['skill_exact']} "
        f"gate {report['gate']} Lean {report['lean']}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tbmm.integrations.harbor.reward", description=__doc__)
    ap.add_argument("--task", required=True, help="task slug")
    ap.add_argument("--artifact", required=True, type=Path, help="the agent's artifact")
    ap.add_argument("--out", type=Path, default=Path(str(layout.VERIFIER_DIR)))
    ap.add_argument("--tasks-root", type=Path, default=None)
    ap.add_argument(
        "--reward",
        choices=REWARDS,
        default=DEFAULT_REWARD,
        help="what reward.json's `reward` and reward.txt hold (default: %(default)s)",
    )
    args = ap.parse_args(argv)
    result = verify_for_harbor(args.task, args.artifact, args.tasks_root)
    return write_outputs(result, args.out, args.reward)


if __name__ == "__main__":
    sys.exit(main())
