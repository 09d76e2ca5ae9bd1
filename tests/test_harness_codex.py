"""The real CLI agents (pinned npm packages: codex, opencode, claude-code) solving a task
inside the sandbox, against a scripted model server that streams the Responses API the way
OpenAI does (codex, opencode) or the Messages API the way Anthropic does (claude-code). The
CLI sees only the in-sandbox forwarder and a placeholder key; the proxy outside injects the
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

from harness.agents import installed as cli_agents
from harness.agents.providers import resolve
from harness.agents.registry import CommandAgent
from harness.agents.usage import Pricing
from harness.runs.runner import run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import (
    ScriptedChatServer,
    function_outputs,
    make_fake_task,
    messages_reply,
    responses_call,
    responses_text,
    stand_in_verify,
    text_block,
    tool_results,
    tool_use,
)
from tbmm.suite.tasks import Task
from tbmm.verify import verify_artifact
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
@pytest.mark.parametrize("routed", [False, True], ids=["env", "provider-route"])
def test_codex_cli_writes_the_artifact_in_the_sandbox(
    tmp_path: Path, codex: cli_agents.CLIPackage, routed: bool
) -> None:
    """`routed`: `--model local/fake-model` through the provider table (harness.agents.providers),
    its key in a variable of its own; else a bare model name and the OPENAI_* variables."""
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
        if routed:
            env = {"TBMM_ROUTE_KEY": "real-key", "OPENAI_API_KEY": "not-this-one"}
            route = resolve(
                "local/fake-model",
                base_url=server.base_url,
                api="responses",
                api_key_env="TBMM_ROUTE_KEY",
                env=env,
            )
            agent = CommandAgent("codex", route=route, provider_env=env)
        else:
            agent = CommandAgent(
                "codex",
                provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "real-key"},
            )
        t0 = time.monotonic()
        summary = run_sweep(
            agent,
            "local/fake-model" if routed else "fake-model",
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


def test_claude_code_cli_writes_the_artifact_in_the_sandbox(tmp_path: Path) -> None:
    """claude-code (pinned npm package) driven the same way, against a scripted server that
    streams the Anthropic Messages API (SSE: message_start, content blocks with text and
    tool_use deltas, the tool input cut into several input_json_delta pieces, message_delta,
    message_stop). Its own tools do the work: `Bash` computes the mean from the attachment,
    `Write` writes the artifact; the proxy pins the model and injects the key."""
    claude = _installed("claude-code")
    task = make_fake_task(tmp_path / "tasks", agent_timeout_sec=240)
    out = task.output_path
    compute = (
        "python3 -c \"import pandas as pd; print('MEAN', "
        "float(pd.read_csv('/root/data/attachments/load.csv')['load'].mean()))\""
    )
    main_turns: list[dict[str, Any]] = []
    side: list[dict[str, Any]] = []

    def reply(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        assert hdrs.get("x-api-key") == "real-key", hdrs.get("x-api-key")
        assert "authorization" not in hdrs
        assert req["model"] == "fake-model", req["model"]  # never another (small) model
        assert req.get("stream") is True
        # the CLI's metadata.user_id (device id, account, session) was dropped by the proxy
        assert "metadata" not in req and "device_id" not in json.dumps(req), req.get("metadata")
        if not req.get("tools"):  # a side request of the CLI's own (none seen in 2.1.332)
            side.append(req)
            return 200, messages_reply([text_block("Mean load")], (40, 3))
        main_turns.append(req)
        names = {t.get("name") for t in req["tools"]}
        assert {"Bash", "Write"} <= names, sorted(names)
        if len(main_turns) == 1:
            assert "load.csv" in json.dumps(req["messages"])  # the instruction reached it
            blocks = [
                text_block("I will compute the mean first."),
                tool_use("toolu_cc1", "Bash", {"command": compute, "description": "Mean load"}),
            ]
            return 200, messages_reply(blocks, (900, 40), cache_write=2000)
        if len(main_turns) == 2:
            results = tool_results(req)
            assert "MEAN 12.5" in results.get("toolu_cc1", ""), results
            artifact = json.dumps({"q1": {"mean_load": 12.5}})
            args = {"file_path": out, "content": artifact}
            return 200, messages_reply(
                [tool_use("toolu_cc2", "Write", args)], (300, 30), cache_read=2900
            )
        results = tool_results(req)
        assert "toolu_cc2" in results, results
        return 200, messages_reply(
            [text_block("The artifact is written.")], (100, 8), cache_read=3200
        )

    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    with ScriptedChatServer([reply] * 8) as server:
        agent = CommandAgent(
            "claude-code",
            provider_env={
                "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1"),
                "ANTHROPIC_API_KEY": "real-key",
            },
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
            pricing=Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75),
        )
        print(f"claude-code trial: {time.monotonic() - t0:.1f} s wall for the sweep")
    assert server.errors == []
    (r,) = Store(db).trials()
    blob = runs_dir_for(db) / r["blob_dir"]
    assert (r["status"], r["exit_reason"], r["o_eval"]) == ("ok", "completed", 1.0), (
        r["detail"],
        (blob / "stderr.txt").read_text()[-2000:],
        (blob / "stdout.txt").read_text()[-2000:],
    )
    assert summary.errored == 0 and json.loads(r["artifact"]) == {"q1": {"mean_load": 12.5}}
    assert len(main_turns) == 3 and side == []
    assert set(server.paths) == {"/v1/messages?beta=true"}, server.paths
    # every request of the CLI went to the Messages endpoint and was relayed: nothing else
    # (telemetry, update checks, token counting, a model list) was asked of the proxy
    events = [json.loads(line) for line in (blob / "events.jsonl").read_text().splitlines()]
    assert [e for e in events if e["type"] == "http_refused"] == []
    assert [e["status"] for e in events if e["type"] == "http"] == [200, 200, 200]
    # Anthropic's input_tokens exclude the cache: 900+2000 (written), 300+2900, 100+3200
    assert (r["tokens_in"], r["tokens_cache_read"], r["tokens_out"]) == (9400, 6100, 78)
    expected = (
        (900 * 3.0 + 2000 * 3.75 + 40 * 15.0)
        + (300 * 3.0 + 2900 * 0.3 + 30 * 15.0)
        + (100 * 3.0 + 3200 * 0.3 + 8 * 15.0)
    ) / 1e6
    assert r["cost_usd"] == pytest.approx(expected)
    for name in ("events.jsonl", "trajectory.json", "stdout.txt", "stderr.txt"):
        assert "real-key" not in (blob / name).read_text(), name
    doc = json.loads((blob / "trajectory.json").read_text())
    assert doc["agent"]["name"] == "claude-code" and doc["agent"]["version"] == claude.version
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [[c["function_name"] for c in s.get("tool_calls") or []] for s in agent_steps] == [
        ["Bash"],
        ["Write"],
        [],
    ]
    assert agent_steps[0]["message"] == "I will compute the mean first."
    assert agent_steps[0]["tool_calls"][0]["arguments"]["command"] == compute
    (obs,) = agent_steps[0]["observation"]["results"]
    assert obs["source_call_id"] == "toolu_cc1" and "MEAN 12.5" in obs["content"]
    (obs,) = agent_steps[1]["observation"]["results"]
    assert obs["source_call_id"] == "toolu_cc2" and out in obs["content"]
    assert agent_steps[-1]["message"] == "The artifact is written."
    assert agent_steps[0]["metrics"]["extra"]["cache_write_tokens"] == 2000
    assert doc["final_metrics"]["total_cost_usd"] == pytest.approx(r["cost_usd"])
    assert_valid_atif([blob / "trajectory.json"])


@pytest.mark.slow  # 9 s with Lean's caches warm, 35 s cold (first verification)
def test_claude_code_on_a_real_task_web_tools_stay_in_the_sandbox(
    tmp_path: Path, suite: list[Task]
) -> None:
    """A real task, scored by the real verifier (replay, gate, Lean), and the attack on the
    previous test's setup: the model first asks claude-code's web tools to look the answer
    up. `WebSearch` makes claude-code send a request declaring Anthropic's server-side
    `web_search` tool: the proxy refuses it (400, the agent's own pin refusal) and it never
    reaches the provider. `WebFetch` fetches from inside the sandbox, which has no network.
    Both come back as failed tool results; the model then writes the task's reference
    artifact with `Write`, and the stored verdict is the one `tbmm.verify` gives those bytes
    directly."""
    _installed("claude-code")
    task = next(t for t in suite if t.slug == "cumcm-2024-a-dragon-dance")
    artifact = task.anchor_artifact_bytes()
    turns: list[dict[str, Any]] = []

    def reply(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        kinds = {t.get("type") for t in req.get("tools", [])}
        assert kinds <= {None, "custom"}, kinds  # no provider-side tool ever got here
        assert req["model"] == "fake-model"
        turns.append(req)
        if len(turns) == 1:
            assert task.output_path in json.dumps(req["messages"])  # the real instruction
            blocks = [
                tool_use("toolu_ws", "WebSearch", {"query": "CUMCM 2024 A bench dragon answer"}),
                tool_use(
                    "toolu_wf", "WebFetch", {"url": "https://example.com/", "prompt": "answer"}
                ),
            ]
            return 200, messages_reply(blocks, (500, 30))
        if len(turns) == 2:
            results = tool_results(req)
            assert set(results) == {"toolu_ws", "toolu_wf"}, results
            assert "web_search" in results["toolu_ws"] and "sandbox" in results["toolu_ws"]
            assert "example.com" in results["toolu_wf"], results["toolu_wf"]
            args = {"file_path": task.output_path, "content": artifact.decode()}
            return 200, messages_reply([tool_use("toolu_w", "Write", args)], (700, 300))
        return 200, messages_reply([text_block("Written.")], (900, 5))

    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    with ScriptedChatServer([reply] * 8) as server:
        agent = CommandAgent(
            "claude-code",
            provider_env={
                "ANTHROPIC_BASE_URL": server.base_url.removesuffix("/v1"),
                "ANTHROPIC_API_KEY": "real-key",
            },
        )
        t0 = time.monotonic()
        run_sweep(agent, "fake-model", [task], 1, backend, 1, db, False, progress=False)
        print(f"claude-code real-task trial: {time.monotonic() - t0:.1f} s wall for the sweep")
    assert server.errors == []
    (r,) = Store(db).trials()
    blob = runs_dir_for(db) / r["blob_dir"]
    assert (r["status"], r["exit_reason"]) == ("ok", "completed"), (
        r["detail"],
        (blob / "stderr.txt").read_text()[-2000:],
    )
    assert len(turns) == 3
    assert r["artifact"] == artifact  # byte for byte what the script wrote
    direct = verify_artifact(task, artifact)
    stored = json.loads(r["verdict"])
    assert direct.status == "scored" and direct.gate == "pass" and direct.lean == "ok"
    for key in ("status", "gate", "lean", "o_eval_exact", "skill_exact", "failing"):
        assert stored[key] == getattr(direct, key), key
    assert r["o_eval_exact"] == direct.o_eval_exact
    events = [json.loads(line) for line in (blob / "events.jsonl").read_text().splitlines()]
    refused = [e for e in events if e["type"] == "http_refused"]
    assert refused and {e["refused_by"] for e in refused} == {"feature_pin"}, refused
    assert "refused by the proxy's pin" in r["detail"]
    doc = json.loads((blob / "trajectory.json").read_text())
    calls = [c["function_name"] for s in doc["steps"] for c in s.get("tool_calls") or []]
    assert calls == ["WebSearch", "WebFetch", "Write"]
    assert_valid_atif([blob / "trajectory.json"])
