"""ATIF trajectories: every agent kind writes one that Harbor's own models accept, figures
sent to a vision model appear as image parts, old stores are converted, and the HTML
report links each trial's files."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harness.agents.builtin import LLMAgent, instruction_content
from harness.agents.exchanges import RequestLog, request_items, response_turn
from harness.agents.registry import CommandAgent, OracleAgent
from harness.cli.runs import runs_app
from harness.runs.atif import build
from harness.runs.runner import run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import (
    ScriptedChatServer,
    chat_chunks,
    make_fake_task,
    responses_call,
    responses_events,
    sse,
    stand_in_verify,
    text_reply,
    tool_call_reply,
)
from tests.atif_check import assert_valid_atif, validate
from tests.conftest import trial_record

needs_sandbox = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")

# a 1x1 PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend("bwrap", ensure_agent_venv())


def figure_task(root: Path) -> Any:
    task = make_fake_task(root)
    (task.data_dir / "figures").mkdir()
    (task.data_dir / "figures" / "fig-1.png").write_bytes(PNG)
    text = task.instruction + (
        "\n![图 1 负荷曲线](/root/data/figures/fig-1.png)\n"
        "![escape](/root/data/../../../etc/passwd.png) and the end.\n"
    )
    (task.dir / "instruction.md").write_text(text)
    return task


def test_instruction_content_puts_each_figure_after_its_reference(tmp_path: Path) -> None:
    task = figure_task(tmp_path / "tasks")
    parts, n = instruction_content(task.instruction, task.data_dir, inline=True)
    assert n == 1  # the reference outside the data folder is not read
    kinds = [p["type"] for p in parts]
    assert kinds == ["text", "image_url", "text", "text"]
    assert parts[0]["text"].endswith("(/root/data/figures/fig-1.png)")
    url = parts[1]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == PNG
    shown, _ = instruction_content(task.instruction, task.data_dir, inline=False)
    assert shown[1]["image_url"]["url"] == "/root/data/figures/fig-1.png"


@pytest.mark.slow
@needs_sandbox
def test_vision_llm_trial_sends_figures_and_its_trajectory_is_valid_atif(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    task = figure_task(tmp_path / "tasks")

    def first(req: dict[str, Any], _: dict[str, str]) -> tuple[int, dict[str, Any]]:
        user = req["messages"][1]["content"]
        assert isinstance(user, list) and user[1]["type"] == "image_url", user
        assert base64.b64decode(user[1]["image_url"]["url"].split(",", 1)[1]) == PNG
        cmd = f'echo \'{{"q1": {{"mean_load": 12.5}}}}\' > {task.output_path}'
        return 200, tool_call_reply("c1", "run_command", {"command": cmd}, (900, 20))

    script = [first, tool_call_reply("c2", "finish", {"summary": "ok"}, (1000, 5))]
    db = tmp_path / "r.sqlite"
    with ScriptedChatServer(script) as server:
        agent = LLMAgent(base_url=server.base_url, vision=True)
        run_sweep(
            agent,
            "gpt-4o",
            [task],
            1,
            backend,
            1,
            db,
            False,
            verifier=stand_in_verify,
            progress=False,
        )
    assert server.errors == []
    (r,) = Store(db).trials()
    assert (r["status"], r["o_eval"]) == ("ok", 1.0)
    path = runs_dir_for(db) / r["blob_dir"] / "trajectory.json"
    assert base64.b64encode(PNG).decode() not in path.read_text()  # bytes not kept
    doc = json.loads(path.read_text())
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent"]
    user = doc["steps"][1]["message"]
    assert {
        "type": "image",
        "source": {"media_type": "image/png", "path": "/root/data/figures/fig-1.png"},
    } in user
    first_agent = doc["steps"][2]
    assert first_agent["tool_calls"][0]["function_name"] == "run_command"
    assert first_agent["observation"]["results"][0]["source_call_id"] == "c1"
    assert first_agent["observation"]["results"][0]["content"].startswith("exit code 0")
    assert doc["final_metrics"]["total_prompt_tokens"] == 1900
    assert doc["extra"]["tbmm"]["task"] == task.slug
    assert_valid_atif([path])


@pytest.mark.slow
@needs_sandbox
def test_oracle_and_chat_cli_trajectories_are_valid_atif(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    db = tmp_path / "r.sqlite"
    run_sweep(
        OracleAgent(),
        None,
        [task],
        1,
        backend,
        1,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    # a CLI streaming Chat Completions through the proxy
    cli = (
        "python3 - <<'EOF'\n"
        "import json, os, urllib.request as u\n"
        "req = u.Request(os.environ['OPENAI_BASE_URL'] + '/chat/completions', data=json.dumps("
        "{'model': 'm', 'stream': True, 'messages': [{'role': 'system', 'content': 'be brief'},"
        " {'role': 'user', 'content': 'mean?'}]}).encode(), headers={'Content-Type': "
        "'application/json', 'Authorization': 'Bearer ' + os.environ['OPENAI_API_KEY']})\n"
        "body = u.urlopen(req, timeout=30).read().decode()\n"
        "print(body[:200])\n"
        f"json.dump({{'q1': {{'mean_load': 12.5}}}}, open('{task.output_path}', 'w'))\n"
        "EOF\n"
    )
    with ScriptedChatServer([text_reply("12.5", (40, 3))]) as server:
        agent = CommandAgent.from_shell(
            cli, provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"}
        )
        run_sweep(
            agent,
            "m",
            [task],
            1,
            backend,
            1,
            db,
            False,
            verifier=stand_in_verify,
            progress=False,
        )
    files = {
        r["agent"]: runs_dir_for(db) / r["blob_dir"] / "trajectory.json" for r in Store(db).trials()
    }
    oracle = json.loads(files["oracle"].read_text())
    assert all(s["source"] == "agent" and s["llm_call_count"] == 0 for s in oracle["steps"])
    assert oracle["final_metrics"]["total_cost_usd"] == 0.0
    shell = json.loads(files["shell"].read_text())
    sources = [s["source"] for s in shell["steps"]]
    assert sources[:3] == ["system", "user", "agent"] and sources[-1] == "system"
    assert shell["steps"][2]["message"] == "12.5"  # assembled from the streamed chunks
    assert shell["steps"][2]["metrics"]["prompt_tokens"] == 40
    assert_valid_atif(list(files.values()))


def test_exchanges_parse_all_three_apis() -> None:
    chat = sse(chat_chunks(tool_call_reply("c9", "run", {"x": 1}, (5, 1))), done=True)
    turn = response_turn("chat", chat)
    assert turn is not None and turn["tool_calls"] == [
        {"id": "c9", "name": "run", "arguments": '{"x": 1}'}
    ]
    resp = sse(responses_events(responses_call("c1", "exec_command", {"cmd": "ls"}, (9, 2))))
    turn = response_turn("responses", resp)
    assert turn is not None and turn["tool_calls"][0]["name"] == "exec_command"
    anthropic = (
        b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-x"}}\n\n'
        b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
        b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n'
        b'data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"bash"}}\n\n'
        b'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"command\\": \\"ls\\"}"}}\n\n'
    )
    turn = response_turn("anthropic", anthropic)
    assert turn is not None and turn["text"] == "Hi"
    assert turn["tool_calls"] == [{"id": "t1", "name": "bash", "arguments": {"command": "ls"}}]
    assert response_turn("chat", b"not json, no events") is None
    items = request_items(
        "anthropic",
        {
            "system": "s",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "out"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                        },
                    ],
                }
            ],
        },
    )
    assert items is not None and items[1] == {"kind": "tool_result", "id": "t1", "content": "out"}
    assert items[2]["parts"][0] == {"type": "image", "ref": "inline image/png, 3 bytes"}
    log = RequestLog()
    a = [{"kind": "message", "role": "user", "parts": []}]
    b = a + [{"kind": "tool_result", "id": "x", "content": "y"}]
    assert log.delta(a) == (0, a) and log.delta(b) == (1, b[1:]) and log.delta(a) == (0, a)


def test_old_store_is_converted(tmp_path: Path) -> None:
    """A store written before ATIF: raw `trajectory.jsonl` with full, unparsed HTTP
    bodies. `tbmm runs convert-trajectories` writes trajectory.json for each trial."""
    db = tmp_path / "r.sqlite"
    store = Store(db)
    store.ensure_entry("codex@m", "codex", "m", {"harness": "codex"})
    blob = store.runs_dir / "codex@m" / "t" / "0"
    blob.mkdir(parents=True)
    req1 = {
        "model": "m",
        "stream": True,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "solve"}],
            }
        ],
    }
    r1 = responses_call("call_1", "exec_command", {"cmd": "ls"}, (10, 2))
    req2 = {
        **req1,
        "input": req1["input"]
        + [
            r1["output"][0],
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
        ],
    }
    events = [
        {"t": 0, "type": "trial", "entry": "codex@m", "task": "t", "seed": 0},
        {"t": 0.1, "type": "start", "argv": ["codex", "exec"]},
        {
            "t": 1,
            "type": "http",
            "method": "POST",
            "path": "/v1/responses",
            "status": 200,
            "request": json.dumps(req1),
            "response": sse(responses_events(r1)).decode(),
        },
        {
            "t": 2,
            "type": "http",
            "method": "POST",
            "path": "/v1/responses",
            "status": 200,
            "request": json.dumps(req2),
            "response": sse(
                responses_events(
                    responses_call("c2", "exec_command", {"cmd": "cat a.txt"}, (20, 2))
                )
            ).decode(),
        },
        {
            "t": 3,
            "type": "command",
            "argv": ["codex"],
            "exit_code": 0,
            "stdout": "",
            "stderr": "",
            "duration_s": 3,
        },
        {"t": 3.1, "type": "end", "exit_reason": "completed"},
    ]
    (blob / "trajectory.jsonl").write_text("\n".join(json.dumps(e) for e in events) + "\n")
    rec = trial_record(
        entry_id="codex@m", agent="codex", model="m", tokens_in=30, tokens_out=4, requests=2
    )
    tmp_blob = store.scratch_dir()
    (tmp_blob / "trajectory.jsonl").write_text((blob / "trajectory.jsonl").read_text())
    import shutil

    shutil.rmtree(blob)
    store.commit(rec, tmp_blob)
    store.close()
    app = typer.Typer()
    app.add_typer(runs_app, name="runs")
    res = CliRunner().invoke(app, ["runs", "convert-trajectories", "--db", str(db)])
    assert res.exit_code == 0 and "wrote 1 trajectory file(s)" in res.output, res.output
    path = runs_dir_for(db) / "codex@m" / "t" / "0" / "trajectory.json"
    doc = json.loads(path.read_text())
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    assert len(agent) == 2 and agent[0]["observation"]["results"][0]["content"] == "a.txt"
    assert [s["source"] for s in doc["steps"]].count("user") == 1  # not repeated per request
    (t,) = Store(db).trials()
    assert t["trajectory"] == "trajectory.json"
    res = CliRunner().invoke(app, ["runs", "convert-trajectories", "--db", str(db)])
    assert "wrote 0" in res.output
    assert_valid_atif([path])


@pytest.mark.slow
def test_harbor_rejects_what_it_should(tmp_path: Path) -> None:
    """The validator is not a rubber stamp: a broken step order and a dangling
    observation are refused by Harbor's models."""
    good = build(
        [{"t": 0, "type": "message", "message": {"role": "user", "content": "hi"}}],
        agent_name="a",
        agent_version="1",
        model=None,
        session_id="s",
    )
    bad_order = {**good, "steps": [{**good["steps"][0], "step_id": 2}]}
    dangling = {
        **good,
        "steps": [
            {
                "step_id": 1,
                "source": "agent",
                "message": "",
                "observation": {"results": [{"source_call_id": "nope", "content": "x"}]},
            }
        ],
    }
    paths = []
    for i, doc in enumerate((good, bad_order, dangling)):
        p = tmp_path / f"{i}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    got = validate(paths)
    assert [got[str(p)]["ok"] for p in paths] == [True, False, False]


def test_report_links_each_trials_files(tmp_path: Path) -> None:
    from fractions import Fraction

    from tbmm.reports import leaderboard as L
    from tbmm.reports.report import write_html

    runs = tmp_path / "r.runs" / "e" / "t" / "0"
    runs.mkdir(parents=True)
    for name in ("trajectory.json", "events.jsonl", "stdout.txt"):
        (runs / name).write_text("{}")
    files = {n: str(runs / n) for n in ("trajectory.json", "events.jsonl", "stdout.txt")}
    ok = L.trial_row(
        entry="e",
        agent="a",
        model=None,
        task="t",
        suite="CUMCM",
        seed=0,
        report={"status": "scored", "o_eval_exact": "1", "robust_bo_eval_exact": "1"},
        cost_usd=0.0,
        literature_split=False,
    )
    ok.report["files"] = files
    err = L.trial_row(
        entry="e",
        agent="a",
        model=None,
        task="t",
        suite="CUMCM",
        seed=1,
        report=None,
        cost_usd=None,
        literature_split=False,
        infra_error="endpoint_unreachable: refused",
    )
    err.report["files"] = files
    lb = L.compute([ok, err], tasks=["t"], task_suites={"t": "CUMCM"}, names={"e": "My entry"})
    (x,) = lb.entries
    assert x.o_eval.mean == Fraction(1) and x.errors == 1 and x.shown == "My entry"
    out = write_html(lb, [ok, err], {}, tmp_path / "site" / "report.html")
    html = out.read_text()
    assert 'href="../r.runs/e/t/0/trajectory.json">trajectory (ATIF)</a>' in html
    assert "endpoint_unreachable: refused" in html and "infra_error" in html
    assert "My entry" in html


def test_scripted_messages_stream_reads_back_as_the_message() -> None:
    """The scripted server's Anthropic stream (what claude-code is driven with) is the
    message it was made from: the proxy's parser joins the tool input's JSON pieces back,
    and the usage read from message_start + message_delta is the message's."""
    from harness.agents.usage import ResponseUsage
    from harness.testing import messages_events, messages_reply, text_block, tool_use

    args = {"command": "echo 'a \"quoted\" ünïcode' > /root/results/x.json", "n": [1, 2]}
    msg = messages_reply(
        [text_block("Working on it."), tool_use("toolu_1", "Bash", args)],
        (120, 33),
        cache_read=1000,
        cache_write=50,
    )
    events = messages_events(msg)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    pieces = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"
              and e["delta"]["type"] == "input_json_delta"]  # fmt: skip
    assert len(pieces) > 1 and json.loads("".join(pieces)) == args
    assert events[0]["message"]["content"] == [] and msg["stop_reason"] == "tool_use"
    turn = response_turn("anthropic", sse(events))
    assert turn is not None and (turn["text"], turn["status"]) == ("Working on it.", "tool_use")
    assert turn["tool_calls"] == [{"id": "toolu_1", "name": "Bash", "arguments": args}]
    usage = ResponseUsage()
    usage.absorb_body(sse(events))
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens) == (1170, 1000, 50)
    assert usage.output_tokens == 33
    assert messages_reply([text_block("done")], (1, 1))["stop_reason"] == "end_turn"
