"""The real codex CLI (pinned npm package) solving a task inside the sandbox, against a
scripted model server that speaks the streamed Responses API the way OpenAI does. The CLI
sees only the in-sandbox forwarder and a placeholder key; the proxy outside injects the
real key, counts tokens (cached ones at the cache price) and logs the exchanges that become
the trial's ATIF trajectory."""

from __future__ import annotations

import json
import shutil
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from harness import cli_agents
from harness.agents import CommandAgent
from harness.runner import run_sweep
from harness.sandbox import SandboxBackend, bwrap_path
from harness.store import Store, runs_dir_for
from harness.testing import (
    ScriptedChatServer,
    function_outputs,
    make_fake_task,
    responses_call,
    responses_text,
    stand_in_verify,
)
from harness.usage import Pricing
from harness.venv import ensure_agent_venv
from tests.atif_check import assert_valid_atif
from tests.ci import absent

pytestmark = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")


def _installed(name: str) -> cli_agents.CLIPackage:
    """The pinned package, installed by `tbmm agents install` (.ci/run does it); installed
    here when missing, which needs npm and the npm registry."""
    pkg = cli_agents.PACKAGES[name]
    if not cli_agents.is_installed(pkg):
        if shutil.which("npm") is None:
            absent(f"npm is not installed, {name} cannot be installed")
        try:
            cli_agents.ensure_installed(pkg)
        except cli_agents.InstallError as exc:
            absent(f"{name} could not be installed: {str(exc)[:300]}")
    return pkg


@pytest.fixture(scope="module")
def codex() -> cli_agents.CLIPackage:
    return _installed("codex")


@pytest.mark.slow
def test_codex_cli_writes_the_artifact_in_the_sandbox(
    tmp_path: Path, codex: cli_agents.CLIPackage
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    out = task.output_path
    solve = textwrap.dedent(
        f"""\
        python3 - <<'EOF'
        import json, pandas as pd
        m = float(pd.read_csv('/root/data/attachments/load.csv')['load'].mean())
        json.dump({{"q1": {{"mean_load": m}}}}, open('{out}', 'w'))
        print('MEAN', m)
        EOF"""
    )

    def first(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        assert hdrs["authorization"] == "Bearer real-key", hdrs.get("authorization")
        assert req["stream"] is True and req["model"] == "fake-model"
        text = json.dumps(req["input"])
        assert "load.csv" in text  # the task instruction reached the model
        return 200, responses_call("call_1", "exec_command", {"cmd": solve}, (1000, 50), cached=0)

    def second(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        outputs = function_outputs(req)
        assert "MEAN 12.5" in outputs.get("call_1", ""), outputs
        return 200, responses_text("The artifact is written.", (1600, 20), cached=1000)

    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    with ScriptedChatServer([first, second]) as server:
        agent = CommandAgent(
            "codex",
            provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "real-key"},
        )
        t0 = time.monotonic()
        summary = run_sweep(
            agent,
            "fake-model",
            [task],
            1,
            backend,
            1,
            db,
            False,
            verifier=stand_in_verify,
            progress=False,
            pricing=Pricing(input=2.0, output=8.0, cache_read=0.5),
        )
        wall = time.monotonic() - t0
    print(f"codex trial: {wall:.1f} s wall for the sweep (pre-flight + trial + verify)")
    assert server.errors == []
    assert server.paths == ["/v1/responses", "/v1/responses"]
    # no provider-side tool (codex declares a live web search unless configured not to)
    kinds = {t.get("type") for q in server.requests for t in q.get("tools", [])}
    assert kinds and kinds <= {"function", "namespace", "custom"}, kinds
    (r,) = Store(db).trials()
    print(
        f"codex trial: {r['duration_s']:.1f} s (agent {r['agent_s']:.1f} s, "
        f"verify {r['verify_s']:.2f} s)"
    )
    blob = runs_dir_for(db) / r["blob_dir"]
    assert (r["status"], r["exit_reason"], r["o_eval"]) == ("ok", "completed", 1.0), (
        r["detail"],
        (blob / "stderr.txt").read_text()[-2000:],
    )
    assert summary.errored == 0 and json.loads(r["artifact"]) == {"q1": {"mean_load": 12.5}}
    assert (r["tokens_in"], r["tokens_cache_read"], r["tokens_out"]) == (2600, 1000, 70)
    # 1600 uncached input at $2, 1000 cached at $0.5, 70 output at $8 (per 1M tokens)
    assert r["cost_usd"] == pytest.approx((1600 * 2.0 + 1000 * 0.5 + 70 * 8.0) / 1e6)
    for name in ("events.jsonl", "trajectory.json", "stdout.txt", "stderr.txt"):
        assert "real-key" not in (blob / name).read_text(), name
    doc = json.loads((blob / "trajectory.json").read_text())
    assert doc["agent"]["name"] == "codex" and doc["agent"]["version"] == codex.version
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [c["function_name"] for c in agent_steps[0]["tool_calls"]] == ["exec_command"]
    (obs,) = agent_steps[0]["observation"]["results"]
    assert obs["source_call_id"] == "call_1" and "MEAN 12.5" in obs["content"]
    assert agent_steps[-1]["message"] == "The artifact is written."
    assert agent_steps[-1]["metrics"]["cached_tokens"] == 1000
    assert doc["final_metrics"]["total_cost_usd"] == pytest.approx(r["cost_usd"])
    assert_valid_atif([blob / "trajectory.json"])


@pytest.mark.slow
def test_opencode_cli_writes_the_artifact_in_the_sandbox(tmp_path: Path) -> None:
    """opencode (pinned npm package) driven the same way: its `openai` provider pointed at
    the proxy, the model declared in its config, its small model (session titles) set to
    the same model so that no other model is ever called."""
    _installed("opencode")
    task = make_fake_task(tmp_path / "tasks", agent_timeout_sec=240)
    out = task.output_path
    solve = (
        'python3 -c "import json, pandas as pd; m = float(pd.read_csv('
        "'/root/data/attachments/load.csv')['load'].mean()); json.dump({'q1': "
        f"{{'mean_load': m}}}}, open('{out}', 'w')); print('MEAN', m)\""
    )
    main_turns: list[int] = []

    def reply(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        assert hdrs["authorization"] == "Bearer real-key"
        assert req["model"] == "fake-model", req["model"]  # never another (small) model
        if not req.get("tools"):  # the session title
            return 200, responses_text("Mean load of the attachment", (50, 5))
        main_turns.append(1)
        if len(main_turns) == 1:
            args = {"command": solve, "description": "compute the mean and write the artifact"}
            return 200, responses_call("call_oc1", "bash", args, (3000, 60))
        outputs = function_outputs(req)
        assert "MEAN 12.5" in outputs.get("call_oc1", ""), outputs
        return 200, responses_text("Done.", (3200, 10), cached=3000)

    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    with ScriptedChatServer([reply] * 8) as server:
        agent = CommandAgent(
            "opencode",
            provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "real-key"},
        )
        t0 = time.monotonic()
        run_sweep(
            agent,
            "fake-model",
            [task],
            1,
            backend,
            1,
            db,
            False,
            verifier=stand_in_verify,
            progress=False,
            pricing=Pricing(input=1.0, output=4.0),
        )
        print(f"opencode trial: {time.monotonic() - t0:.1f} s wall for the sweep")
    assert server.errors == []
    (r,) = Store(db).trials()
    blob = runs_dir_for(db) / r["blob_dir"]
    assert (r["status"], r["o_eval"]) == ("ok", 1.0), (
        r["detail"],
        (blob / "stderr.txt").read_text()[-2000:],
    )
    assert len(main_turns) == 2
    for name in ("events.jsonl", "trajectory.json", "stdout.txt", "stderr.txt"):
        assert "real-key" not in (blob / name).read_text(), name
    doc = json.loads((blob / "trajectory.json").read_text())
    calls = [c for s in doc["steps"] for c in s.get("tool_calls") or []]
    assert [c["function_name"] for c in calls] == ["bash"]
    assert_valid_atif([blob / "trajectory.json"])
