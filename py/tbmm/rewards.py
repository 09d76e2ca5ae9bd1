"""Reward functions in the conventions RL frameworks use, on top of `tbmm.api`.

The default reward of a completion is the **skill** of the JSON answer found in it over the
task's naive floor (`reward="skill"`, in [0, 1]): clip((R − F_t)/(O − F_t), 0, 1), F_t the
stronger of the baseline F and the best naive answer's raw score (`tbmm.verdict.naive`, stored in
the task's floor.json), so an answer a modeller writes without modelling (the statement's
numbers, data means, persistence, uniform splits, p = 0.5) earns 0. The paper's O-Eval
(`reward="o_eval"`, in [0, 1]) and Robust BO-Eval (`reward="robust_bo"`, in [−1, 1]) stay
selectable. An answer that cannot be found or read, fails the gate (including a claim that
disagrees with its replay) or exceeds the input caps gets the floor: 0 for skill and O-Eval,
−1 for Robust BO-Eval. The task is named by its slug (the dataset's
`ground_truth`/`label`/`task` column).

* verl: `compute_score(data_source, solution_str, ground_truth, extra_info=None) -> float`
* TRL (GRPOTrainer `reward_funcs`): `trl_reward(prompts, completions, task, **kwargs)`
* OpenRLHF remote reward (`--remote_rm_url`): `openrlhf_reward({"query", "prompts",
  "labels"}) -> {"rewards", "scores", "extra_logs"}`, served by `tbmm serve` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from tbmm.api import Verdict, verify_completion

Reward = Literal["skill", "o_eval", "robust_bo"]
DEFAULT: Reward = "skill"
FLOOR = {"skill": 0.0, "o_eval": 0.0, "robust_bo": -1.0}


def reward_of(v: Verdict, reward: Reward = DEFAULT) -> float:
    """The reward of a verdict: its skill, O-Eval or Robust BO-Eval; the floor unless scored."""
    if reward not in FLOOR:
        raise ValueError(f"unknown reward {reward!r}: use skill, o_eval or robust_bo")
    if v.status not in ("scored",):
        return FLOOR[reward]
    return {"skill": v.skill, "o_eval": v.o_eval, "robust_bo": v.robust_bo}[reward]


def _slug(ground_truth: Any, data_source: str = "") -> str:
    if isinstance(ground_truth, dict) and isinstance(ground_truth.get("task"), str):
        return ground_truth["task"]
    if isinstance(ground_truth, str) and ground_truth:
        return ground_truth
    if data_source.startswith("tbmm/"):
        return data_source.removeprefix("tbmm/")
    raise ValueError("name the task: ground_truth = its slug (or data_source = 'tbmm/<slug>')")


def _text(completion: Any) -> str:
    """A completion's text: a string, or a conversation's last message content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion:
        last = completion[-1]
        if isinstance(last, dict):
            content = last.get("content", "")
            if isinstance(content, list):  # content parts
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
) -> float:
    """verl's custom reward function signature. `extra_info={"reward": "o_eval"}` (or
    "robust_bo") selects the paper's O-Eval (Robust BO-Eval) instead of the default skill; `extra_info={"lean": True}` adds the Lean kernel check (slower)."""
    info = extra_info or {}
    v = verify_completion(
        _slug(ground_truth, data_source), solution_str, lean=bool(info.get("lean", False))
    )
    return reward_of(v, info.get("reward", DEFAULT))


def trl_reward(
    prompts: Sequence[Any] | None,
    completions: Sequence[Any],
    task: Sequence[str] | None = None,
    reward: Reward = DEFAULT,
    **kwargs: Any,
) -> list[float]:
    """A TRL reward function: one float per completion; the dataset's `task` column names
    each completion's task (TRL passes dataset columns as keyword arguments)."""
    if task is None:
        raise ValueError("trl_reward needs the dataset's `task` column (the task slugs)")
    if len(task) != len(completions):
        raise ValueError(f"{len(completions)} completions but {len(task)} task slugs")
    return [
        reward_of(verify_completion(t, _text(c)), reward)
        for t, c in zip(task, completions, strict=True)
    ]


def batch_rewards(
    completions: Sequence[str], tasks: Sequence[str], reward: Reward = DEFAULT
) -> tuple[list[float], list[Verdict]]:
    """Rewards and verdicts of a batch of (completion, task slug) pairs."""
    if len(completions) != len(tasks):
        raise ValueError(f"{len(completions)} completions but {len(tasks)} task slugs")
    verdicts = [verify_completion(t, c) for t, c in zip(tasks, completions, strict=True)]
    return [reward_of(v, reward) for v in verdicts], verdicts


def openrlhf_reward(payload: dict[str, Any], reward: Reward = DEFAULT) -> dict[str, Any]:
    """OpenRLHF's remote reward protocol: `query` (prompt + response texts), `prompts`,
    `labels` (the task slugs) in; `rewards` (and `scores`, `extra_logs`) out."""
    queries = payload.get("query") or []
    prompts = payload.get("prompts") or [""] * len(queries)
    labels = payload.get("labels")
    if not isinstance(labels, list) or len(labels) != len(queries):
        raise ValueError("the payload needs `labels`: one task slug per query")
    responses = [
        q[len(p) :] if isinstance(q, str) and isinstance(p, str) and q.startswith(p) else q
        for q, p in zip(queries, prompts, strict=False)
    ]
    rewards, verdicts = batch_rewards(responses, labels, reward)
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {
            "status": [v.status for v in verdicts],
            "skill": [v.skill for v in verdicts],
            "o_eval": [v.o_eval for v in verdicts],
            "robust_bo": [v.robust_bo for v in verdicts],
        },
    }
