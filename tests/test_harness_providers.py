"""`--model PROVIDER/NAME` through the provider table, the built-in agent's three API styles
(each against a scripted local server), `--limit`, the entry budget `--max-cost`, and the
cost and token totals per entry."""

from __future__ import annotations

import csv
import io
import json
import socket
import tomllib
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harness.agents import providers
from harness.agents.builtin import LLMAgent
from harness.agents.model_api import (
    AnthropicConversation,
    ChatConversation,
    ModelClient,
    ModelError,
    ResponsesConversation,
)
from harness.agents.model_table import lookup
from harness.agents.providers import ProviderError, resolve
from harness.agents.trajectory import read_trajectory
from harness.agents.usage import Pricing
from harness.cli import run as cli
from harness.runs.atif import build
from harness.runs.runner import run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import (
    ScriptedChatServer,
    function_outputs,
    make_fake_task,
    responses_call,
    responses_text,
    stand_in_verify,
    text_reply,
    tool_call_reply,
)
from tbmm.reports import leaderboard as L
from tbmm.reports import leaderboard_render as R

needs_sandbox = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")
NO_ENV: dict[str, str] = {}


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend("auto", ensure_agent_venv())


# ---------------------------------------------------------------------------- the table


def test_the_shipped_table_has_the_documented_providers() -> None:
    doc = tomllib.loads(providers.TABLE.read_text())
    table = providers.providers()
    assert set(doc["provider"]) == set(table)
    for name in ("openai", "anthropic", "openrouter", "local"):
        assert name in table, name
    assert table["anthropic"].api == "anthropic" and table["anthropic"].key_required
    assert table["local"].key_required is False
    # every provider named in the README's table is a row, and every row is named there
    readme = (Path(__file__).parents[1] / "harness" / "README.md").read_text()
    rows = {
        line.split("|")[1].strip(): line
        for line in readme.splitlines()
        if line.startswith("| `") and line.count("|") == 5
    }
    assert set(rows) == {f"`{n}`" for n in table}, "harness/README.md's provider table"
    for name, row in table.items():
        line = rows[f"`{name}`"]
        assert row.base_url in line and row.key_env in line, line
        assert ", ".join(row.apis) in line.replace(" (default first)", ""), line


def test_a_malformed_user_table_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "p.toml"
    bad.write_text(
        '[provider.x]\nbase_url = "ftp://h"\nkey_env = "K"\napi = "chat"\napis = ["chat"]\n'
    )
    monkeypatch.setenv("TBMM_PROVIDERS", str(bad))
    with pytest.raises(ProviderError, match="not an http"):
        providers.providers()
    bad.write_text(
        '[provider.x]\nbase_url = "http://h"\nkey_env = "K"\napi = "anthropic"\napis = ["chat"]\n'
    )
    providers._table.cache_clear()
    with pytest.raises(ProviderError, match="not in apis"):
        providers.providers()
    good = tmp_path / "q.toml"
    good.write_text(
        '[provider.mine]\nbase_url = "http://10.0.0.5:9000/v1"\nkey_env = "MINE_KEY"\n'
        'api = "chat"\napis = ["chat"]\n'
    )
    monkeypatch.setenv("TBMM_PROVIDERS", str(good))
    r = resolve("mine/m-1", env={"MINE_KEY": "k"})
    assert (r.provider, r.name, r.base_url, r.key_env) == (
        "mine",
        "m-1",
        "http://10.0.0.5:9000/v1",
        "MINE_KEY",
    )


def test_resolution_of_provider_names() -> None:
    r = resolve("openai/gpt-5", env=NO_ENV)
    assert (r.label, r.name, r.provider, r.api, r.key_env) == (
        "openai/gpt-5", "gpt-5", "openai", "chat", "OPENAI_API_KEY",
    )  # fmt: skip
    assert r.base_url == "https://api.openai.com/v1" and r.auth == "bearer"
    # the provider SDK's own variable overrides the table's base URL; --base-url both
    assert resolve("openai/gpt-5", env={"OPENAI_BASE_URL": "http://x/v1"}).base_url == "http://x/v1"
    assert (
        resolve(
            "openai/gpt-5", base_url="http://y/v1", env={"OPENAI_BASE_URL": "http://x/v1"}
        ).base_url
        == "http://y/v1"
    )
    a = resolve("anthropic/claude-sonnet-4-5", env=NO_ENV)
    assert (a.name, a.api, a.family, a.auth) == (
        "claude-sonnet-4-5",
        "anthropic",
        "anthropic",
        "x-api-key",
    )
    # OpenRouter names keep their own slash
    o = resolve("openrouter/anthropic/claude-sonnet-4", env=NO_ENV)
    assert (o.provider, o.name, o.base_url) == (
        "openrouter",
        "anthropic/claude-sonnet-4",
        "https://openrouter.ai/api/v1",
    )
    local = resolve("local/qwen", base_url="http://127.0.0.1:8080/v1", env=NO_ENV)
    assert (local.name, local.base_url, local.key_required) == (
        "qwen",
        "http://127.0.0.1:8080/v1",
        False,
    )
    assert resolve("local/qwen", env=NO_ENV).base_url == "http://127.0.0.1:8000/v1"
    assert resolve("openai/gpt-5", api="responses", env=NO_ENV).api == "responses"
    # a bare name is what it always was: OpenAI-compatible, key optional
    b = resolve("gpt-5", env=NO_ENV)
    assert (b.provider, b.name, b.label, b.key_required, b.api) == (
        None,
        "gpt-5",
        "gpt-5",
        False,
        "chat",
    )
    # an unknown prefix is a served model name only at a given --base-url
    hf = resolve("Qwen/Qwen2.5-7B", base_url="http://127.0.0.1:8000/v1", env=NO_ENV)
    assert (hf.provider, hf.name) == (None, "Qwen/Qwen2.5-7B")


@pytest.mark.parametrize(
    ("model", "kw", "why"),
    [
        ("opnai/gpt-5", {}, "unknown provider 'opnai'"),
        ("openai/", {}, "no model name after the provider"),
        ("anthropic/claude-sonnet-4", {"api": "chat"}, "does not serve the 'chat' API"),
        ("openrouter/x", {"api": "responses"}, "does not serve the 'responses' API"),
        ("openai/gpt-5", {"api": "soap"}, "--api 'soap'"),
    ],
)
def test_unroutable_models_are_refused(model: str, kw: dict[str, Any], why: str) -> None:
    with pytest.raises(ProviderError, match=why):
        resolve(model, env=NO_ENV, **kw)


def test_key_requirement() -> None:
    r = resolve("anthropic/claude-sonnet-4", env=NO_ENV)
    assert "$ANTHROPIC_API_KEY" in (r.key_problem(NO_ENV) or "")
    assert "$ANTHROPIC_API_KEY" in (r.key_problem({"ANTHROPIC_API_KEY": ""}) or "")
    assert r.key_problem({"ANTHROPIC_API_KEY": "k"}) is None
    assert resolve("local/q", env=NO_ENV).key_problem(NO_ENV) is None
    other = resolve("anthropic/claude-sonnet-4", api_key_env="MY_KEY", env=NO_ENV)
    assert other.key_problem({"ANTHROPIC_API_KEY": "k"}) is not None
    assert other.key_problem({"MY_KEY": "k"}) is None


def test_prices_are_found_behind_provider_prefixes() -> None:
    row = lookup("openrouter/anthropic/claude-sonnet-4")
    assert row is not None and "claude-sonnet-4*" in row.match
    assert lookup("openai/gpt-5") is lookup("gpt-5")
    assert lookup("local/some-unknown-model") is None


# ---------------------------------------------------------------------------- the client


def test_client_headers_and_paths_per_style() -> None:
    chat = ModelClient("http://h:1/v1", "k", "chat")
    assert (chat.url, chat.path) == ("http://h:1/v1/chat/completions", "/v1/chat/completions")
    assert chat.headers()["Authorization"] == "Bearer k" and "x-api-key" not in chat.headers()
    resp = ModelClient("http://h:1/v1", "k", "responses")
    assert resp.url == "http://h:1/v1/responses"
    ant = ModelClient("http://h:1", "k", "anthropic")
    assert ant.url == "http://h:1/v1/messages"
    h = ant.headers()
    assert h["x-api-key"] == "k" and h["anthropic-version"] and "Authorization" not in h
    assert "Authorization" not in ModelClient("http://h:1/v1", None, "chat").headers()


def _status(code: int, body: dict[str, Any] | None = None) -> Any:
    return lambda req, hdrs: (code, body or {"error": {"message": f"scripted {code}"}})


def test_client_retries_what_is_worth_retrying() -> None:
    ok = text_reply("hi", (1, 1))
    with ScriptedChatServer([_status(429), _status(503), ok]) as server:
        c = ModelClient(server.base_url, "k", "chat", max_retries=2, backoff_s=0.01)
        assert c.post({"model": "m"}, timeout=10)["choices"][0]["message"]["content"] == "hi"
        assert len(server.requests) == 3
    with ScriptedChatServer([_status(429), _status(429), ok]) as server:
        c = ModelClient(server.base_url, "k", "chat", max_retries=1, backoff_s=0.01)
        with pytest.raises(ModelError) as err:
            c.post({"model": "m"}, timeout=10)
        assert err.value.infra == "endpoint_overloaded" and len(server.requests) == 2
    for code, infra in (
        (401, "endpoint_rejected"),
        (404, "endpoint_rejected"),
        (400, None),
        (422, None),
    ):
        with ScriptedChatServer([_status(code), ok]) as server:
            c = ModelClient(server.base_url, "k", "chat", max_retries=3, backoff_s=0.01)
            with pytest.raises(ModelError) as err:
                c.post({"model": "m"}, timeout=10)
            assert err.value.infra == infra, code
            assert len(server.requests) == 1, f"HTTP {code} must not be retried"


def test_client_reports_an_unreachable_endpoint() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = ModelClient(f"http://127.0.0.1:{port}/v1", None, "chat", max_retries=1, backoff_s=0.01)
    with pytest.raises(ModelError) as err:
        c.post({"model": "m"}, timeout=5)
    assert err.value.infra == "endpoint_unreachable"


def test_client_retries_a_body_that_is_not_json() -> None:
    calls = {"n": 0}

    def garbled(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, Any]:
        calls["n"] += 1
        return 200, ["not", "an", "object"]

    with ScriptedChatServer([garbled, text_reply("ok", (1, 1))]) as server:
        c = ModelClient(server.base_url, None, "chat", max_retries=1, backoff_s=0.01)
        assert c.post({"model": "m"}, timeout=10)["choices"][0]["message"]["content"] == "ok"
    assert calls["n"] == 1


# ---------------------------------------------------------------------------- dialogues


def test_each_style_sends_back_what_it_received() -> None:
    from harness.agents.builtin import TOOLS

    # Responses: function calls resent with their call ids, then the outputs; no seed
    r = ResponsesConversation("sys", "do it")
    p = r.payload("m", TOOLS, seed=3, temperature=None)
    assert p["instructions"] == "sys" and p["store"] is False and "seed" not in p
    assert p["tools"][0] == {"type": "function", **TOOLS[0]["function"], "strict": False}
    turn = r.take(responses_call("call_1", "run_command", {"command": "ls"}, (5, 1)))
    assert turn.calls == [("call_1", "run_command", '{"command": "ls"}')]
    r.results([("call_1", "exit code 0")])
    again = r.payload("m", TOOLS, seed=3, temperature=0.5)
    assert again["temperature"] == 0.5
    assert again["input"][1] == {
        "type": "function_call", "call_id": "call_1", "name": "run_command",
        "arguments": '{"command": "ls"}',
    }  # fmt: skip
    assert function_outputs(again) == {"call_1": "exit code 0"}
    assert r.take(responses_text("done", (1, 1))).calls == []
    # Anthropic: blocks resent as returned (a thinking block keeps its signature)
    a = AnthropicConversation("sys", [{"type": "text", "text": "look"},
                                      {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}])  # fmt: skip
    p = a.payload("m", TOOLS, seed=0, temperature=None)
    assert p["system"] == "sys" and p["max_tokens"] > 0 and "seed" not in p
    assert p["messages"][0]["content"][1] == {
        "type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"},
    }  # fmt: skip
    assert p["tools"][0]["input_schema"] == TOOLS[0]["function"]["parameters"]
    blocks = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "tool_use", "id": "tu_1", "name": "finish", "input": {"summary": "x"}},
    ]
    turn = a.take({"content": blocks, "usage": {}})
    assert turn.calls == [("tu_1", "finish", '{"summary": "x"}')]
    assert turn.message["reasoning_content"] == "hmm"
    a.results([("tu_1", "")])
    p = a.payload("m", TOOLS, seed=0, temperature=None)
    assert p["messages"][1] == {"role": "assistant", "content": blocks}
    assert p["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "tu_1", "content": "(no output)"}
    ]
    # Chat: the seed goes along, as before
    c = ChatConversation("sys", "u")
    assert c.payload("m", TOOLS, seed=7, temperature=None)["seed"] == 7
    assert "max_completion_tokens" not in c.payload("m", TOOLS, seed=7, temperature=None)
    # --max-output-tokens, in each style's own field
    from harness.agents.model_api import ANTHROPIC_MAX_TOKENS, conversation

    fields = {
        "chat": "max_completion_tokens",
        "responses": "max_output_tokens",
        "anthropic": "max_tokens",
    }
    for style, name in fields.items():
        assert (
            conversation(style, "s", "u", 123).payload("m", TOOLS, seed=0, temperature=None)[name]
            == 123
        )
    assert (
        conversation("anthropic", "s", "u").payload("m", TOOLS, seed=0, temperature=None)[
            "max_tokens"
        ]
        == ANTHROPIC_MAX_TOKENS
    )
    assert "max_output_tokens" not in conversation("responses", "s", "u").payload(
        "m", TOOLS, seed=0, temperature=None
    )
    agent = LLMAgent(max_output_tokens=500)
    assert (
        agent.settings()["max_output_tokens"] == 500
        and "max_output_tokens" not in LLMAgent().settings()
    )


def _anthropic_reply(
    blocks: list[dict[str, Any]], tokens: tuple[int, int], cached: int = 0
) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "fake-model",
        "content": blocks,
        "stop_reason": "tool_use",
        "usage": {
            "input_tokens": tokens[0],
            "output_tokens": tokens[1],
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
        },
    }


def _write_artifact_args(task: Any) -> dict[str, Any]:
    return {"content": json.dumps({"q1": {"mean_load": 12.5}})}


@needs_sandbox
@pytest.mark.parametrize("style", ["chat", "responses", "anthropic"])
def test_the_agent_solves_a_task_in_each_style(
    style: str, tmp_path: Path, backend: SandboxBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One trial per API style against a scripted server: a real command in the sandbox, the
    artifact written, finish; what each request carries is checked in that style's shape."""
    task = make_fake_task(tmp_path / "tasks")
    mean_cmd = "python3 -c \"print('MEAN', sum([10,12,15.5,12.5])/4)\""
    seen: dict[str, Any] = {}

    def check_key(hdrs: dict[str, str]) -> None:
        if style == "anthropic":
            assert hdrs.get("x-api-key") == "sk-test" and hdrs.get("anthropic-version")
            assert "authorization" not in hdrs
        else:
            assert hdrs.get("authorization") == "Bearer sk-test"

    def result_of(req: dict[str, Any], call_id: str) -> str:
        if style == "chat":
            msg = req["messages"][-1]
            assert msg["role"] == "tool" and msg["tool_call_id"] == call_id
            return msg["content"]
        if style == "responses":
            return function_outputs(req)[call_id]
        block = req["messages"][-1]["content"][0]
        assert block["type"] == "tool_result" and block["tool_use_id"] == call_id
        return block["content"]

    def reply(
        call_id: str, name: str, args: dict[str, Any], tokens: tuple[int, int]
    ) -> dict[str, Any]:
        if style == "chat":
            return tool_call_reply(call_id, name, args, tokens)
        if style == "responses":
            return responses_call(call_id, name, args, tokens, cached=tokens[0] // 2)
        return _anthropic_reply(
            [{"type": "text", "text": "working"},
             {"type": "tool_use", "id": call_id, "name": name, "input": args}],
            tokens, cached=tokens[0] // 2,
        )  # fmt: skip

    def first(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        check_key(hdrs)
        seen["first"] = req
        return 200, reply("c1", "run_command", {"command": mean_cmd}, (100, 10))

    def second(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        out = result_of(req, "c1")
        assert out.startswith("exit code 0") and "MEAN 12.5" in out, out
        return 200, reply("c2", "write_artifact", _write_artifact_args(task), (200, 20))

    def third(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        assert "valid JSON" in result_of(req, "c2")
        return 200, reply("c3", "finish", {"summary": "done"}, (300, 5))

    monkeypatch.setenv("TBMM_KEY_" + style.upper(), "sk-test")
    db = tmp_path / "r.sqlite"
    with ScriptedChatServer([first, second, third]) as server:
        base = server.base_url if style != "anthropic" else server.base_url.removesuffix("/v1")
        route = resolve(
            "local/fake-model" if style != "anthropic" else "anthropic/fake-model",
            base_url=base,
            api=style,
            api_key_env="TBMM_KEY_" + style.upper(),
        )
        agent = LLMAgent(route=route, max_retries=0)
        summary = run_sweep(
            agent, route.label, [task], 1, backend, 1, db, False,
            verifier=stand_in_verify, progress=False, pricing=Pricing(input=2.0, output=8.0),
        )  # fmt: skip
    assert server.errors == []
    want = {
        "chat": "/v1/chat/completions",
        "responses": "/v1/responses",
        "anthropic": "/v1/messages",
    }
    assert server.paths == [want[style]] * 3
    # the provider prefix stays in the entry; only the name goes upstream
    assert all(r["model"] == "fake-model" for r in server.requests)
    assert summary.entry_id.startswith(f"llm@{route.label}")
    first_req = seen["first"]
    if style == "chat":
        assert first_req["seed"] == 0 and first_req["messages"][0]["role"] == "system"
    elif style == "responses":
        assert first_req["store"] is False and first_req["input"][0]["role"] == "user"
    else:
        assert first_req["max_tokens"] > 0 and first_req["messages"][0]["role"] == "user"
    (rec,) = Store(db).trials()
    assert (rec["exit_reason"], rec["artifact_status"], rec["o_eval"]) == ("completed", "ok", 1.0)
    cached = 0 if style == "chat" else 50 + 100 + 150
    # Anthropic counts cache reads apart from input_tokens: the harness adds them back
    tin = 600 + (cached if style == "anthropic" else 0)
    assert (rec["tokens_in"], rec["tokens_out"], rec["tokens_cache_read"], rec["requests"]) == (
        tin, 35, cached, 3,
    )  # fmt: skip
    uncached = tin - cached
    assert rec["cost_usd"] == pytest.approx((uncached * 2.0 + cached * 2.0 + 35 * 8.0) / 1e6)
    events = read_trajectory(runs_dir_for(db) / rec["blob_dir"] / "events.jsonl")
    atif = build(
        events, agent_name="tbmm-llm", agent_version="t", model=route.label, session_id="s"
    )
    agent_steps = [s for s in atif["steps"] if s["source"] == "agent"]
    assert [c["function_name"] for s in agent_steps for c in s["tool_calls"]] == [
        "run_command", "write_artifact", "finish",
    ]  # fmt: skip
    assert any("MEAN 12.5" in json.dumps(s.get("observation")) for s in agent_steps)
    settings = Store(db).entries()[0]["settings"]
    assert settings.get("api") == (None if style == "chat" else style)


# ---------------------------------------------------------------------------- CLI


def _app(
    tasks: list[Any], monkeypatch: pytest.MonkeyPatch, *, backend_ok: bool = False
) -> typer.Typer:
    monkeypatch.setattr(cli, "select_tasks", lambda spec, root=None, **kw: tasks)
    monkeypatch.setattr(
        "harness.runs.runner.default_verifier", lambda: (stand_in_verify, "verification: stand-in")
    )
    if not backend_ok:

        def no_backend(name: str) -> Any:
            raise AssertionError("a backend was chosen for a refused configuration")

        monkeypatch.setattr(cli, "choose_backend", no_backend)
    monkeypatch.setattr(cli, "_print_leaderboard", lambda db, root: None)
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    return app


def _nothing_stored(db: Path) -> None:
    assert not db.exists() and not Path(str(db) + ".lock").exists()
    assert not runs_dir_for(db).exists()


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["--agent", "llm", "--model", "nope/x"], "unknown provider 'nope'"),
        (["--agent", "llm", "--model", "anthropic/claude-sonnet-4"], "$ANTHROPIC_API_KEY"),
        (
            ["--agent", "llm", "--model", "openrouter/anthropic/claude-sonnet-4"],
            "$OPENROUTER_API_KEY",
        ),
        (["--agent", "codex", "--model", "nope/x"], "unknown provider 'nope'"),
        (
            ["--agent", "codex", "--model", "anthropic/claude-sonnet-4"],
            "codex speaks the responses API",
        ),
        (
            ["--agent", "claude-code", "--model", "openai/gpt-5"],
            "claude-code speaks the anthropic API",
        ),
        (
            ["--agent", "codex", "--model", "openai/gpt-5", "--api", "chat"],
            "--api applies to --agent llm only",
        ),
        (["--agent", "llm", "--model", "openai/gpt-5", "--api", "soap"], "--api 'soap'"),
        (
            ["--agent", "llm", "--model", "local/unpriced-xyz", "--max-cost", "1"],
            "--max-cost needs prices",
        ),
        (["--agent", "llm", "--model", "gpt-5", "--max-cost", "0"], "budget must be positive"),
        (
            ["--agent", "llm", "--model", "gpt-5", "--max-trial-cost", "1", "--max-cost", "-2"],
            "budget must be positive",
        ),
        (
            ["--agent", "codex", "--model", "m", "--backend", "harbor", "--limit", "1"],
            "do not apply to --backend harbor",
        ),
    ],
)
def test_cli_refuses_unroutable_models_before_any_trial(
    args: list[str], why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # so only the case's own problem is left
    tasks = [make_fake_task(tmp_path / "tasks")]
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(_app(tasks, monkeypatch), ["run", *args, "--db", str(db)])
    assert res.exit_code == cli.EXIT_USAGE, res.output
    assert why in res.output.replace("\n", " ") or why in " ".join(res.output.split()), res.output
    _nothing_stored(db)


@needs_sandbox
def test_cli_runs_a_local_provider_with_limit_and_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tbmm run --agent llm --model local/NAME --base-url URL` end to end: --limit starts
    only some trials; --max-cost stops the entry once its cost reaches the budget, records
    why, and the entry is partial (runs show, leaderboard) until a --resume with a larger
    budget runs the rest."""
    tasks = [
        make_fake_task(tmp_path / "tasks", s) for s in ("cumcm-2099-a-one", "cumcm-2099-b-two")
    ]
    db = tmp_path / "r.sqlite"
    script = [text_reply("nothing to do", (1000, 100)) for _ in range(8)]
    app = _app(tasks, monkeypatch, backend_ok=True)
    monkeypatch.setattr("harness.agents.preflight.DEFAULT_TIMEOUT", 5.0)
    with ScriptedChatServer(script) as server:
        base = [
            "run", "--agent", "llm", "--model", "local/fake-model", "--base-url", server.base_url,
            "--price-in", "1", "--price-out", "1", "--db", str(db), "--seeds", "2",
            "--backend", "sandbox", "--allow-weaker-isolation",
        ]  # fmt: skip
        res = CliRunner().invoke(app, [*base, "--limit", "1"])
        assert res.exit_code == 0, res.output
        assert "3 left for later by --limit 1" in res.output, res.output
        store = Store(db)
        assert len(store.trials()) == 1 and store.stopped() == {}
        store.close()
        # each trial costs (1000 + 100) / 1e6 = 0.0011 USD: a 0.002 budget lets one more
        # start (0.0011 < 0.002), then stops the entry with 0.0022 spent
        res = CliRunner().invoke(app, [*base, "--resume", "--max-cost", "0.002"])
        assert res.exit_code == 0, res.output
        assert "budget reached" in res.output and "partial:" in res.output, res.output
        assert all(r["model"] == "fake-model" for r in server.requests)
        store = Store(db)
        trials = store.trials()
        (eid,) = [e["entry_id"] for e in store.entries()]
        stop = store.stopped()[eid]
        assert eid.startswith("llm@local/fake-model")
        assert len(trials) == 2 and len(stop["not_started"]) == 2
        assert "reaching --max-cost 0.002 USD" in stop["reason"]
        assert store.spent(eid) == pytest.approx(0.0022)
        store.close()
        # runs show: totals and the partial mark, text and JSON
        from harness.cli.runs import runs_app

        shown = CliRunner().invoke(runs_app, ["show", eid, "--db", str(db), "--json"])
        doc = json.loads(shown.stdout)
        assert doc["partial"] is True and doc["stopped"]["reason"] == stop["reason"]
        assert doc["tokens"] == {
            "input": 2000,
            "cached": 0,
            "cache_write": 0,
            "output": 200,
            "requests": 2,
        }
        assert doc["cost_usd"] == pytest.approx(0.0022)
        text = CliRunner().invoke(runs_app, ["show", eid, "--db", str(db)]).stdout
        assert "2000 in" in text and "200 out" in text and "partial:" in text
        listed = json.loads(
            CliRunner().invoke(runs_app, ["list", "--db", str(db), "--json"]).stdout
        )
        assert listed[0]["partial"] is True and listed[0]["tokens"]["output"] == 200
        # the leaderboard: partial, with the reason, totals in text and JSON
        lb = _board(db, tasks)
        (row,) = lb.entries
        assert row.partial and row.stopped == stop["reason"] and not row.pareto
        assert row.spent == Fraction(22, 10000)
        assert any("is partial" in n and "0.002" in n for n in lb.notes)
        j = R.to_json(lb)["entries"][0]
        assert j["partial"] and j["tokens"]["input"] == 2000 and j["spent_usd"]["exact"] == "0.0022"
        rec = next(csv.DictReader(io.StringIO(R.to_csv(lb))))
        assert (rec["spent_usd"], rec["tokens_in"], rec["tokens_out"]) == ("0.0022", "2000", "200")
        assert rec["partial"] == "yes"
        md = R.to_markdown(lb)
        assert "Spent ($)" in md and "$0.00" in md and "2k / 200" in md
        # a larger budget runs the rest; the stop record is cleared once they are stored
        res = CliRunner().invoke(app, [*base, "--resume", "--max-cost", "1"])
        assert res.exit_code == 0, res.output
        store = Store(db)
        assert len(store.trials()) == 4 and store.stopped() == {}
        store.close()
        assert not _board(db, tasks).entries[0].partial


def test_the_budget_counts_the_trials_running() -> None:
    """`_Budget.exhausted` (asked before each trial starts) adds, for each trial running, the
    larger of its live cost and the per-trial estimate (--max-trial-cost, or the costliest
    trial stored so far) to what the entry spent; a finished trial's cost moves to spent
    once, and a trial that runs past its estimate is counted at its live cost."""
    import tempfile

    from harness.agents.usage import ResponseUsage, UsageTotals
    from harness.runs.runner import _Budget
    from tests.conftest import trial_record

    with tempfile.TemporaryDirectory() as d:
        store = Store(Path(d) / "r.sqlite")
        store.ensure_entry("e", "llm", "m", {})
        blobs = store.scratch_dir()
        store.commit(trial_record(entry_id="e", cost_usd=0.25), blobs)  # type: ignore[arg-type]
        price = Pricing(input=1.0, output=1.0)

        def live(usd: float) -> UsageTotals:
            t = UsageTotals(pricing=price)
            if usd:
                t.add(ResponseUsage(input_tokens=round(usd * 1e6)))
            return t

        capped = _Budget(store, "e", 1.0, trial_cap=0.2)
        assert (capped.spent, capped.largest, capped.per_trial) == (0.25, 0.25, 0.25)
        a, b = capped.start(live(0)), capped.start(live(0))
        assert capped.running_estimate() == 0.5 and not capped.exhausted()  # 0.75 < 1
        c = capped.start(live(0))
        assert capped.exhausted() and capped.spent_at_stop == 0.25  # 0.25 + 3 x 0.25
        assert capped.running_at_stop == 0.75
        capped.finish(a, 0.1)
        capped.finish(b, None)  # an unknown cost adds nothing (as the store records it)
        assert capped.spent == pytest.approx(0.35) and capped.largest == 0.25
        assert not capped.exhausted()  # 0.35 + 0.25
        big = live(0.7)  # a running trial past every estimate counts at its live cost
        capped.start(big)
        assert capped.running_estimate() == pytest.approx(0.95) and capped.exhausted()
        capped.finish(c, 0.05)
        # no per-trial cap, nothing stored: the first trials are estimated at 0
        store.ensure_entry("fresh", "llm", "m", {})
        fresh = _Budget(store, "fresh", 0.01)
        for _ in range(5):
            fresh.start(live(0))
        assert fresh.per_trial == 0 and not fresh.exhausted()
        # no budget: never exhausted
        assert not _Budget(store, "e", None).exhausted()
        store.close()


@needs_sandbox
def test_concurrent_trials_do_not_overshoot_the_budget(
    tmp_path: Path, backend: SandboxBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--concurrency 3, six trials planned, each costing c = 0.0011 USD, budget 0.0025.
    The three first trials start together (the server answers none before all three asked);
    the first is answered and finishes, the other two are held until the sweep has decided
    what to start next. Spent c plus two running trials estimated at c each reaches the
    budget: nothing more starts, so the entry spends 3c. Checking the spend alone (the
    previous rule) started a fourth trial there (c < 0.0025), and a fifth when the next
    record came alone (4 and 5 requests in two runs)."""
    import threading

    import harness.runs.runner as runner_mod

    task = make_fake_task(tmp_path / "tasks")
    c = 0.0011
    together = threading.Barrier(3, timeout=300)  # liveness only: a hung trial fails the test
    decided = threading.Event()

    def answer(first: bool) -> Any:
        def handler(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
            together.wait()
            if not first:
                decided.wait(300)
            return 200, text_reply("nothing to do", (1000, 100))

        return handler

    calls = 0
    real_wait = runner_mod.wait

    def wait_and_tell(*args: Any, **kw: Any) -> Any:
        """The sweep's main thread waits again: it has taken the first record and decided."""
        nonlocal calls
        calls += 1
        if calls >= 2:
            decided.set()
        return real_wait(*args, **kw)

    monkeypatch.setattr(runner_mod, "wait", wait_and_tell)
    monkeypatch.setenv("TBMM_KEY_CHAT", "sk-test")
    db = tmp_path / "r.sqlite"
    script = [answer(True), answer(False), answer(False)]
    script += [text_reply("nothing to do", (1000, 100)) for _ in range(3)]
    with ScriptedChatServer(script) as server:
        route = resolve(
            "local/fake-model", base_url=server.base_url, api="chat", api_key_env="TBMM_KEY_CHAT"
        )
        summary = run_sweep(
            LLMAgent(route=route, max_retries=0), route.label, [task], 6, backend, 3, db,
            False, verifier=stand_in_verify, progress=False, check=False,
            pricing=Pricing(input=1.0, output=1.0), budget_usd=0.0025,
        )  # fmt: skip
    assert server.errors == [] and len(server.requests) == 3
    assert (summary.done, summary.not_started, summary.errored) == (3, 3, 0)
    assert summary.stopped is not None
    assert (
        "spent 0.0011 USD with 0.0022 USD estimated for the trials still running, reaching "
        "--max-cost 0.0025 USD; 3 of 6 planned trial(s) not started" in summary.stopped
    ), summary.stopped
    store = Store(db)
    spent = store.spent(summary.entry_id)
    stop = store.stopped()[summary.entry_id]
    store.close()
    assert spent == pytest.approx(3 * c) and spent < 0.0025 + c
    assert len(stop["not_started"]) == 3


def _board(db: Path, tasks: list[Any]) -> L.Leaderboard:
    store = Store(db)
    try:
        rows = [
            L.row_from_record(r, task_suites={t.slug: "CUMCM" for t in tasks})
            for r in store.trials()
        ]
        stopped = store.stopped()
    finally:
        store.close()
    return L.compute(
        rows,
        tasks=[t.slug for t in tasks],
        task_suites={t.slug: "CUMCM" for t in tasks},
        stopped=stopped,
    )


def test_cli_agents_use_the_route_through_the_proxy() -> None:
    """A CLI agent given PROVIDER/NAME: the proxy's upstream is the provider's (URL, key
    variable, auth) and the model pinned and filled into the program's argv is NAME."""
    from harness.agents.registry import CommandAgent
    from harness.runs.runner import api_model

    env = {"OPENROUTER_API_KEY": "or-key", "OPENAI_API_KEY": "oa-key", "ANTHROPIC_API_KEY": "a"}
    route = resolve("openai/gpt-5", api="responses", base_url="http://10.1.2.3:9/v1", env=env)
    codex = CommandAgent("codex", route=route, provider_env=env)
    up = codex.upstream()
    assert up is not None
    assert (up.base_url, up.api_key, up.auth, up.provider) == (
        "http://10.1.2.3:9/v1", "oa-key", "bearer", "openai",
    )  # fmt: skip
    assert api_model(codex, "openai/gpt-5") == "gpt-5"
    assert api_model(codex, "something-else") == "something-else"
    ant = resolve("anthropic/claude-sonnet-4-5", env=env)
    claude = CommandAgent("claude-code", route=ant, provider_env=env)
    up = claude.upstream()
    assert up is not None and (up.base_url, up.api_key, up.auth) == (
        "https://api.anthropic.com", "a", "x-api-key",
    )  # fmt: skip
    # a bare name: the environment's endpoint, as before
    plain = CommandAgent("codex", provider_env={"OPENAI_BASE_URL": "http://e/v1"})
    assert plain.upstream() is not None and plain.upstream().base_url == "http://e/v1"  # type: ignore[union-attr]
    assert api_model(plain, "gpt-5") == "gpt-5"
    # the CLI builds the route only when the provider serves the program's style
    assert cli.model_route("codex", "gpt-5", base_url=None, api=None, api_key_env=None) is None
    assert cli.model_route("oracle", "x/y", base_url=None, api=None, api_key_env=None) is None


def test_a_stopped_entry_is_partial_and_ranks_after_complete_ones() -> None:
    """Leaving trials unstarted can only help a mean if they would have scored low, so an
    entry its budget stopped ranks after every complete entry, as an entry with errors."""
    tasks = ["t1", "t2"]
    suites = {t: "CUMCM" for t in tasks}

    def row(entry: str, task: str, o: str) -> L.TrialRow:
        rep = {"status": "scored", "o_eval_exact": o, "robust_bo_eval_exact": "0", "gate": "pass"}
        return L.trial_row(
            entry=entry, agent="llm", model="m", task=task, suite="CUMCM", seed=0,
            report=rep, cost_usd=0.5, literature_split=False,
            harness={"tokens_in": 10, "tokens_out": 2, "requests": 1},
        )  # fmt: skip

    rows = [
        row("stopped", "t1", "1"),
        row("stopped", "t2", "1"),
        row("low", "t1", "0.1"),
        row("low", "t2", "0.1"),
    ]
    stop = {"stopped": {"reason": "budget: reached", "not_started": [["t3", 0]]}}
    lb = L.compute(rows, tasks=tasks, task_suites=suites, stopped=stop)
    assert [x.entry for x in lb.entries] == ["low", "stopped"]
    assert lb.entries[1].partial and not lb.entries[1].pareto and lb.entries[0].pareto
    assert lb.entries[1].tokens["tokens_in"] == 20 and lb.entries[1].spent == 1
    assert "(partial)" in R.main_rows(lb)[1][1]
    # without the record it would rank first
    assert L.compute(rows, tasks=tasks, task_suites=suites).entries[0].entry == "stopped"
