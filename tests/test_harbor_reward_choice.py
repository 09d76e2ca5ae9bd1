"""Harbor's `reward` is the reward tbmm's RL adapters and `tbmm serve` give (skill over the
naive floor) unless the export selects another, and reward.json always carries all three."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tbmm import rewards as rl
from tbmm.core import exact
from tbmm.integrations.harbor import export as hx
from tbmm.integrations.harbor import reward as hr
from tbmm.suite.tasks import find_task
from tbmm.verdict.naive import Generator


def test_harbor_rewards_are_the_rl_rewards() -> None:
    assert set(hr.REWARDS) == set(rl.FLOOR) and hr.DEFAULT_REWARD == rl.DEFAULT


def test_a_naive_answer_earns_o_eval_but_no_skill_reward(tmp_path: Path) -> None:
    """The statement's midpoints score O-Eval > 0 on this task and are its best naive answer:
    a Harbor RL run must not pay them unless it asked for O-Eval."""
    task = find_task("mcm-2023-a-plant-community")
    (mid,) = [a for a in Generator(task).answers() if a.name == "midpoint"]
    art = tmp_path / "result.json"
    art.write_text(exact.dumps(mid.doc) + "\n")
    result = hr.verify_for_harbor(task.slug, art)
    assert result["report"]["status"] == "scored", result
    got = {}
    for choice in hr.REWARDS:
        out = tmp_path / choice
        assert hr.write_outputs(result, out, choice) == 0
        got[choice] = json.loads((out / "reward.json").read_text())
        assert float((out / "reward.txt").read_text()) == got[choice]["reward"]
        assert set(got[choice]) == set(hr.REWARD_KEYS)
    o, s = got["o_eval"]["o_eval"], got["skill"]["skill"]
    assert o > 0 and s == 0
    assert [got[c]["reward"] for c in hr.REWARDS] == [s, o, got["robust_bo"]["robust_bo"]]
    # the default (no --reward) is skill
    assert hr.main(["--task", task.slug, "--artifact", str(art), "--out", str(tmp_path / "d")]) == 0
    assert json.loads((tmp_path / "d" / "reward.json").read_text())["reward"] == s


def test_unscored_verdicts_pay_no_skill() -> None:
    report = {"status": "gate_failed", "o_eval": 0.0, "skill": 0.7, "robust_bo_eval": -1.0}
    r = hr.rewards(report, replayed_task=False)
    assert r is not None and r["reward"] == r["skill"] == 0.0
    with pytest.raises(ValueError, match="unknown reward"):
        hr.rewards(report, replayed_task=False, reward="o-eval")


def test_export_writes_the_selected_reward_into_test_sh() -> None:
    task = find_task("mcm-2023-a-plant-community")
    sh = task.dir / "tests" / "test.sh"
    text = hx._select_reward(sh, "o_eval")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("exec ")]
    assert line.endswith(" --reward o_eval")
    assert text.replace(" --reward o_eval", "") == sh.read_text()


def test_export_refuses_an_unknown_reward(tmp_path: Path) -> None:
    with pytest.raises(hx.ExportError, match="unknown reward"):
        hx.export_harbor(tmp_path / "out", [find_task("mcm-2023-a-plant-community")], reward="x")
