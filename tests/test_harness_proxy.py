"""The model proxy over real HTTP on its Unix socket: only model endpoints, bounded bodies,
bounded connections, the real key injected upstream and never handed back."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from harness.agents.builtin import LLMAgent
from harness.agents.proxy import ENDPOINTS, SOCKET_NAME, ModelProxy, Upstream
from harness.agents.registry import CommandAgent
from harness.agents.trajectory import Trajectory, read_trajectory
from harness.agents.usage import Pricing, TrialCaps, UsageTotals
from harness.runs.runner import run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import (
    ScriptedChatServer,
    make_fake_task,
    stand_in_verify,
    text_reply,
    tool_call_reply,
)
from tests.atif_check import assert_valid_atif

M = b'{"model": "m"}'  # the smallest body the pinned proxy relays (entry model "m")


def send(proxy: ModelProxy, raw: bytes, *, shut: bool = True, timeout: float = 10) -> bytes:
    """Send raw bytes to the proxy's socket; return everything it answers."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(str(proxy.dir / SOCKET_NAME))
    try:
        try:
            s.sendall(raw)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the proxy answered and closed before taking everything: that is the point
        out = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := s.recv(65536):
                out += chunk
        return out
    finally:
        s.close()


def request(
    method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    hdrs = {"Host": "x", "Content-Type": "application/json", **(headers or {})}
    if "Content-Length" not in hdrs and "Transfer-Encoding" not in hdrs:
        hdrs["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
    return head.encode() + b"\r\n" + body


def status(resp: bytes) -> int:
    return int(resp.split(b" ", 2)[1])


@pytest.fixture
def upstream() -> Any:
    replies = [text_reply(f"r{i}", (1, 1)) for i in range(20)]
    with ScriptedChatServer(replies) as server:  # type: ignore[arg-type]
        yield server


def test_endpoints_are_data_and_only_they_pass(upstream: Any, tmp_path: Path) -> None:
    traj = Trajectory(tmp_path / "t.jsonl")
    up = Upstream(upstream.base_url, "real-key", provider="openai")
    body = json.dumps({"model": "m", "messages": []}).encode()
    with ModelProxy(up, trajectory=traj, max_retries=0, model="m") as px:
        ok = send(px, request("POST", "/v1/chat/completions", body))
        ok_q = send(px, request("POST", "/v1/responses?stream=true", body))
        refused = [
            send(px, request(m, p, body))
            for m, p in [
                ("GET", "/v1/models"),
                ("POST", "/v1/files"),
                ("PUT", "/v1/chat/completions"),
                ("DELETE", "/v1/responses"),
                ("POST", "/v1/chat/completions/../files"),
                ("POST", "/v1//chat/completions"),
                ("POST", "/v1/chat%2Fcompletions"),
                ("POST", "http://evil.example/v1/chat/completions"),
                ("POST", "/v1/messages"),  # an Anthropic endpoint on an OpenAI upstream
            ]
        ]
    traj.close()
    assert status(ok) == 200 and b"r0" in ok
    assert status(ok_q) == 200
    assert [status(r) for r in refused] == [403] * len(refused)
    assert len(upstream.requests) == 2  # nothing refused reached the provider
    assert all(h["authorization"] == "Bearer real-key" for h in upstream.headers)
    events = read_trajectory(tmp_path / "t.jsonl")
    assert sum(e["type"] == "http_refused" for e in events) == len(refused)
    assert "real-key" not in (tmp_path / "t.jsonl").read_text()
    assert set(ENDPOINTS) == {"openai", "anthropic"}
    assert Upstream("https://api.anthropic.com", None, provider="anthropic").allowed(
        "POST", "/v1/messages?beta=true"
    )


def test_oversize_content_length_refused_before_reading(upstream: Any) -> None:
    up = Upstream(upstream.base_url, "k")
    with ModelProxy(up, max_request_bytes=1000) as px:
        t0 = time.monotonic()
        # 1 TB announced, nothing sent, connection left open: the answer must come anyway
        resp = send(
            px,
            request("POST", "/v1/chat/completions", headers={"Content-Length": str(10**12)}),
            shut=False,
        )
        elapsed = time.monotonic() - t0
        negative = send(
            px, request("POST", "/v1/chat/completions", headers={"Content-Length": "-5"})
        )
        missing = send(
            px, request("POST", "/v1/chat/completions", headers={"Transfer-Encoding": "chunked"})
        )
    assert status(resp) == 413 and elapsed < 5, (resp, elapsed)
    assert status(negative) == 400
    assert status(missing) == 411
    assert upstream.requests == []


def test_lying_content_length_cannot_make_it_read_more(upstream: Any) -> None:
    up = Upstream(upstream.base_url, "k")
    with ModelProxy(
        up, max_request_bytes=1 << 20, read_timeout=1.0, max_retries=0, model="m"
    ) as px:
        # says 1000, sends 10: the read stops at the timeout, nothing goes upstream
        short = send(
            px,
            request("POST", "/v1/chat/completions", b"0123456789", {"Content-Length": "1000"}),
            shut=False,
        )
        # says 20, sends 5 MB: exactly 20 bytes are read and relayed
        long = send(
            px,
            request(
                "POST",
                "/v1/chat/completions",
                b'{"model": "m"}      ' + b"x" * (5 << 20),
                {"Content-Length": "20"},
            ),
        )
    assert status(short) == 408
    assert status(long) == 200
    assert upstream.requests == [{"model": "m"}]


def test_response_is_cut_at_its_cap(tmp_path: Path) -> None:
    big = {"choices": [], "blob": "y" * 50_000, "usage": {"prompt_tokens": 1}}
    with ScriptedChatServer([big]) as server:
        traj = Trajectory(tmp_path / "t.jsonl")
        up = Upstream(server.base_url, "k")
        with ModelProxy(up, trajectory=traj, max_response_bytes=4096, model="m") as px:
            resp = send(px, request("POST", "/v1/chat/completions", M))
        traj.close()
    head, _, body = resp.partition(b"\r\n\r\n")
    assert status(head) == 200 and len(body) == 4096
    (event,) = [e for e in read_trajectory(tmp_path / "t.jsonl") if e["type"] == "http"]
    assert "cut" in event


def test_connection_count_is_bounded(upstream: Any) -> None:
    up = Upstream(upstream.base_url, "k")
    with ModelProxy(up, max_connections=3, read_timeout=5.0, model="m") as px:
        idle = []
        for _ in range(3):  # hold every slot with a connection that sends nothing
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(px.dir / SOCKET_NAME))
            idle.append(s)
        time.sleep(0.2)
        busy = send(px, request("POST", "/v1/chat/completions", M))
        for s in idle:
            s.close()
        time.sleep(0.3)
        again = send(px, request("POST", "/v1/chat/completions", M))
    assert status(busy) == 503
    assert status(again) == 200


# -- the proxy pins the entry (issue 23 item 2) -------------------------------------------
# (provider, request path, body of a well-formed request for `model`)
STYLES: dict[str, tuple[str, str, Any]] = {
    "chat": (
        "openai",
        "/v1/chat/completions",
        lambda model: {"model": model, "messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": ("openai", "/v1/responses", lambda model: {"model": model, "input": "hi"}),
    "messages": (
        "anthropic",
        "/v1/messages",
        lambda model: {
            "model": model,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}],
        },
    ),
}


def upstream_for(server: Any, provider: str, key: str = "real-key") -> Upstream:
    if provider == "anthropic":  # Anthropic's base URL carries no version
        return Upstream(server.base_url.removesuffix("/v1"), key, "x-api-key", "anthropic")
    return Upstream(server.base_url, key, "bearer", "openai")


@pytest.mark.parametrize("style", sorted(STYLES))
def test_a_request_for_another_model_never_reaches_the_upstream(
    style: str, upstream: Any, tmp_path: Path
) -> None:
    provider, path, make = STYLES[style]
    good = json.dumps(make("m")).encode()
    other = json.dumps(make("o1-pro"))
    bodies = {
        "another model": other.encode(),
        "no model": json.dumps({k: v for k, v in make("m").items() if k != "model"}).encode(),
        "model not a string": json.dumps(make(["m"])).encode(),
        "model in another case": json.dumps(make("M")).encode(),
        # a duplicate key: Python keeps the last, another parser may keep the first
        "duplicate, other last": other.replace(
            '{"model": "o1-pro"', '{"model": "m", "model": "o1-pro"'
        ).encode(),
        "duplicate, other first": other.replace(
            '{"model": "o1-pro"', '{"model": "o1-pro", "model": "m"'
        ).encode(),
        "duplicate nested": json.dumps(make("m")).replace('"hi"', '{"a": 1, "a": 2}').encode(),
        "escaped key": other.replace('"model"', '"mod\\u0065l"').encode(),
        "array at the top": json.dumps([make("m")]).encode(),
        "NaN": json.dumps({**make("m"), "temperature": float("nan")}).encode(),
        "huge number": good[:-1] + b', "temperature": 1e999}',
        "byte order mark": b"\xef\xbb\xbf" + good,
        "UTF-16": json.dumps(make("m")).encode("utf-16"),
        "not JSON": b"model=m",
        "deep nesting": b'{"model": "m", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    }
    traj = Trajectory(tmp_path / "t.jsonl")
    with ModelProxy(upstream_for(upstream, provider), trajectory=traj, model="m") as px:
        answers = {what: send(px, request("POST", path, body)) for what, body in bodies.items()}
        ok = send(px, request("POST", path, good))
    traj.close()
    refused = {what: status(a) for what, a in answers.items()}
    assert refused == dict.fromkeys(bodies, 400), refused
    assert status(ok) == 200
    # only the one well-formed request went upstream, naming the entry's model
    assert [r.get("model") for r in upstream.requests] == ["m"]
    assert upstream.requests == [make("m")]
    assert len(px.refusals) == len(bodies)
    events = read_trajectory(tmp_path / "t.jsonl")
    pins = [e for e in events if e["type"] == "http_refused" and e["refused_by"] == "model_pin"]
    assert len(pins) == len(bodies)
    assert any("o1-pro" in e["error"] for e in pins)


def test_an_entry_without_a_model_relays_nothing(upstream: Any) -> None:
    with ModelProxy(Upstream(upstream.base_url, "k"), model=None) as px:
        resp = send(px, request("POST", "/v1/chat/completions", M))
    assert status(resp) == 400 and b"names no model" in resp
    assert upstream.requests == []


FORBIDDEN = {
    "Authorization": "Bearer agent-key",
    "x-api-key": "agent-key",
    "OpenAI-Organization": "org-elsewhere",
    "OpenAI-Project": "proj-elsewhere",
    "Cookie": "session=1",
    "X-Forwarded-For": "10.0.0.1",
    "X-Stainless-Lang": "python",
    "Proxy-Authorization": "Basic eA==",
    "anthropic-dangerous-direct-browser-access": "true",
}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_only_allowed_headers_and_query_reach_the_upstream(style: str, upstream: Any) -> None:
    provider, path, make = STYLES[style]
    needed = {
        "openai": {"OpenAI-Beta": "responses=experimental"},
        "anthropic": {
            "anthropic-version": "2023-06-01",
            "anthropic-beta": "x-2025-01-01, context-1m-2025-08-07,y-1",
        },
    }[provider]
    wrong_style = {"openai": {"anthropic-version": "2023-06-01"}, "anthropic": {"OpenAI-Beta": "a"}}
    headers = {
        **FORBIDDEN,
        **needed,
        **wrong_style[provider],
        "Accept": "text/event-stream",
        "User-Agent": "cli/1.0",
        "Content-Type": "text/plain",
    }
    body = json.dumps(make("m")).encode()
    with ModelProxy(upstream_for(upstream, provider), model="m") as px:
        resp = send(px, request("POST", path + "?beta=true&model=o1-pro&project=p", body, headers))
    assert status(resp) == 200
    (got,) = upstream.headers
    for name in (*FORBIDDEN, *wrong_style[provider]):
        if name.lower() in ("authorization", "x-api-key"):
            continue
        assert name.lower() not in got, name
    if provider == "anthropic":
        assert got["x-api-key"] == "real-key" and "authorization" not in got
    else:
        assert got["authorization"] == "Bearer real-key" and "x-api-key" not in got
    if provider == "anthropic":  # the 1M context is billed at a premium: dropped
        needed["anthropic-beta"] = "x-2025-01-01,y-1"
    for name, value in {**needed, "Accept": "text/event-stream", "User-Agent": "cli/1.0"}.items():
        assert got[name.lower()] == value
    assert got["content-type"] == "application/json"  # the body we send is JSON we wrote
    (sent_path,) = upstream.paths
    assert sent_path == path + ("?beta=true" if provider == "anthropic" else "")


IDENTITY = {
    "chat": {"user": "alice@example.org", "safety_identifier": "sha-of-alice"},
    "responses": {"user": "alice@example.org", "safety_identifier": "sha-of-alice"},
    # what claude-code 2.1.332 sends: a device id, the OAuth account, the session
    "messages": {
        "metadata": {
            "user_id": json.dumps(
                {"device_id": "1e18" * 16, "account_uuid": "acct-1", "session_id": "s-1"}
            )
        }
    },
}
KEPT = {
    "chat": {"prompt_cache_key": "session-1", "metadata": {"tag": "x"}, "seed": 3},
    "responses": {"prompt_cache_key": "session-1", "store": False},
    "messages": {"temperature": 0.5, "stop_sequences": ["END"]},
}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_end_user_identifiers_never_reach_the_upstream(style: str, upstream: Any) -> None:
    """The fields that name an end user (claude-code's metadata.user_id with its device id
    and account, OpenAI's user and safety_identifier) are dropped, whatever their value;
    everything else of the body goes upstream as sent."""
    provider, path, make = STYLES[style]
    bodies = [
        {**make("m"), **IDENTITY[style], **KEPT[style]},
        {**make("m"), **{k: "not an object" for k in IDENTITY[style]}},  # malformed: still out
        {**make("m"), **KEPT[style]},
    ]
    with ModelProxy(upstream_for(upstream, provider), model="m") as px:
        got = [status(send(px, request("POST", path, json.dumps(b).encode()))) for b in bodies]
    assert got == [200, 200, 200]
    first, second, third = upstream.requests
    assert first == {**make("m"), **KEPT[style]} == third
    assert second == make("m")
    for raw in upstream.requests:
        assert "alice" not in json.dumps(raw) and "device_id" not in json.dumps(raw)


PRICING = Pricing(input=1e6, output=1e6)  # 1 USD per token: 2 USD per scripted response


@pytest.mark.parametrize(
    ("style", "caps"),
    [
        ("chat", {"requests": 3}),
        ("responses", {"tokens": 5}),
        ("messages", {"cost_usd": 5.0}),
        ("chat", {"cost_usd": 5.0}),
        ("responses", {"requests": 3}),
        ("messages", {"tokens": 6}),
    ],
)
def test_caps_end_the_trial_as_the_agents_failure(
    style: str, caps: dict[str, Any], upstream: Any, tmp_path: Path
) -> None:
    """Each scripted response uses 2 tokens and costs 2 USD: every cap above is spent after
    3 responses; the 4th request is refused, never reaches the upstream, and ends the run."""
    provider, path, make = STYLES[style]
    stops: list[str] = []
    traj = Trajectory(tmp_path / "t.jsonl")
    totals = UsageTotals(pricing=PRICING)
    with ModelProxy(
        upstream_for(upstream, provider),
        trajectory=traj,
        totals=totals,
        model="m",
        caps=TrialCaps(**caps),
        on_stop=lambda: stops.append("stop"),
    ) as px:
        codes = [
            status(send(px, request("POST", path, json.dumps(make("m")).encode())))
            for _ in range(6)
        ]
    traj.close()
    assert codes == [200, 200, 200, 403, 403, 403]
    assert len(upstream.requests) == 3 and totals.requests == 3
    assert stops == ["stop"]  # the run is ended once
    assert px.stopped is not None and "cap reached" in px.stopped
    (event,) = [e for e in read_trajectory(tmp_path / "t.jsonl") if e["type"] == "budget_exceeded"]
    assert event["cause"] == px.stopped


def test_caps_are_checked_and_part_of_the_entry() -> None:
    for bad in ({"requests": 0}, {"tokens": -1}, {"cost_usd": 0.0}, {"cost_usd": float("nan")}):
        with pytest.raises(ValueError, match="must be positive"):
            TrialCaps(**bad)
    plain = CommandAgent.from_shell("true").settings()
    capped = CommandAgent.from_shell("true", caps=TrialCaps(requests=5)).settings()
    assert "caps" not in plain and capped["caps"] == {"requests": 5}
    assert LLMAgent(caps=TrialCaps(cost_usd=2.5)).settings()["caps"] == {"cost_usd": 2.5}
    assert "caps" not in LLMAgent().settings()


RUNAWAY_CLI = """\
python3 - <<'EOF'
import json, os, time, urllib.error, urllib.request
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "more"}]}).encode()
n = 0
while True:  # a runaway: asks again and again, whatever the answer
    try:
        urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=30).read()
        n += 1
        print("answer", n, flush=True)
        if n == 1:
            json.dump({"q1": {"mean_load": 12.5}}, open(os.environ["TBMM_OUTPUT_PATH"], "w"))
    except urllib.error.HTTPError as exc:
        print("refused", exc.code, flush=True)
    time.sleep(0.05)
EOF
"""


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_a_runaway_cli_is_stopped_at_its_request_cap(upstream: Any, tmp_path: Path) -> None:
    """End to end in the sandbox: the 4th request of a capped CLI ends its run (long before
    its timeout); the trial is the agent's failure, recorded, and what it wrote is scored."""
    task = make_fake_task(tmp_path / "tasks", agent_timeout_sec=120.0)
    agent = CommandAgent.from_shell(
        RUNAWAY_CLI,
        provider_env={"OPENAI_BASE_URL": upstream.base_url, "OPENAI_API_KEY": "k"},
        caps=TrialCaps(requests=3),
    )
    db = tmp_path / "r.sqlite"
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    run_sweep(
        agent, "m", [task], 1, backend, 1, db, False, verifier=stand_in_verify, progress=False
    )
    (r,) = Store(db).trials()
    assert r["status"] == "ok" and r["exit_reason"] == "budget_exceeded", r
    assert "request cap reached: 3 of 3" in r["detail"]
    assert (r["requests"], len(upstream.requests)) == (3, 3)
    assert r["o_eval"] == 1.0  # the artifact written within the budget is scored
    events = read_trajectory(runs_dir_for(db) / r["blob_dir"] / "events.jsonl")
    (cmd,) = [e for e in events if e["type"] == "command"]
    assert cmd["timed_out"] is False  # ended by the cap, not by the clock
    assert [e["type"] for e in events].count("budget_exceeded") == 1
    assert r["trajectory"] == "trajectory.json"  # the ATIF file was written, and says why
    doc = json.loads((runs_dir_for(db) / r["blob_dir"] / "trajectory.json").read_text())
    said = [s["message"] for s in doc["steps"] if s["source"] == "system"]
    assert any(m.startswith("budget_exceeded: request cap reached") for m in said), said
    assert_valid_atif([runs_dir_for(db) / r["blob_dir"] / "trajectory.json"])


def test_cli_refuses_unpinned_or_unpriced_budgets_before_any_trial(tmp_path: Path) -> None:
    """`tbmm run` of a proxied agent without --model, or with a cost budget (the entry's
    --max-cost, or --max-trial-cost) but no prices, exits 2 and stores nothing."""
    import typer
    from typer.testing import CliRunner

    from harness.cli import run as cli

    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    db = tmp_path / "r.sqlite"
    base = ["run", "--backend", "sandbox", "--db", str(db)]
    cases = {
        "needs --model": ["--agent", "codex"],
        "needs --model ": ["--agent", "command", "--agent-cmd", "true"],
        "needs --model  ": ["--agent", "llm"],
        "--max-cost needs prices": [
            "--agent", "codex", "--model", "tbmm-unpriced-model", "--max-cost", "1",
        ],
        "must be positive": ["--agent", "codex", "--model", "m", "--max-cost", "-1"],
        "--max-trial-cost needs prices": [
            "--agent", "codex", "--model", "tbmm-unpriced-model", "--max-trial-cost", "1",
        ],
        "cost_usd cap must be positive": [
            "--agent", "codex", "--model", "m", "--max-trial-cost", "-1",
        ],
    }  # fmt: skip
    for why, args in cases.items():
        res = CliRunner().invoke(app, [*base, *args])
        assert res.exit_code == cli.EXIT_USAGE, (args, res.output)
        assert why.strip() in res.output.replace("\n", " "), res.output
    assert not db.exists()
    # without a proxy there is nothing to pin
    assert cli.model_refusal("command", None, "none", TrialCaps(), None) is None
    assert cli.model_refusal("oracle", None, "openai", TrialCaps(requests=1), None) is None


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_the_llm_agent_keeps_the_same_caps(tmp_path: Path) -> None:
    task = make_fake_task(tmp_path / "tasks")
    calls = [tool_call_reply(f"c{i}", "run_command", {"command": "true"}, (1, 1)) for i in range(5)]
    db = tmp_path / "r.sqlite"
    with ScriptedChatServer(calls) as server:  # type: ignore[arg-type]
        agent = LLMAgent(base_url=server.base_url, max_retries=0, caps=TrialCaps(tokens=4))
        backend = SandboxBackend("bwrap", ensure_agent_venv())
        run_sweep(
            agent, "m", [task], 1, backend, 1, db, False, verifier=stand_in_verify, progress=False
        )
    (r,) = Store(db).trials()
    assert (r["exit_reason"], r["requests"], len(server.requests)) == ("budget_exceeded", 2, 2)
    assert "token cap reached: 4 tokens used, cap 4" in r["detail"]


HOLDER = """\
python3 {fwd} 18080 {sock} /tmp/.ready {cap} >/tmp/fwd.log 2>&1 &
i=0; while [ ! -e /tmp/.ready ] && [ $i -lt 400 ]; do i=$((i+1)); sleep 0.05; done
python3 - <<'EOF'
import socket, time, urllib.error, urllib.request

def ask():
    # the proxy may still be freeing the slots of connections just closed: a 503 (busy) is
    # asked again, a bounded number of times
    for _ in range(50):
        req = urllib.request.Request(
            "http://127.0.0.1:18080/v1/chat/completions", data=b'{{"model": "m"}}',
            headers={{"Content-Type": "application/json"}})
        try:
            return str(urllib.request.urlopen(req, timeout=30).status)
        except urllib.error.HTTPError as exc:
            if exc.code != 503:
                return str(exc.code)
        except OSError as exc:
            return "down:" + type(exc).__name__
        time.sleep(0.1)
    return "busy"

for hold in ({few}, {many}):
    held = [socket.create_connection(("127.0.0.1", 18080), timeout=10) for _ in range(hold)]
    print("held", hold, "ask", ask() if hold == {few} else "-", flush=True)
    for s in held:
        s.close()
    print("released", hold, "ask", ask(), flush=True)
EOF
"""


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_forwarder_survives_held_connections_under_small_limits(
    upstream: Any, tmp_path: Path
) -> None:
    """The in-sandbox forwarder under a pids limit of 64 and 512 MiB: 30 held connections
    (a thread each way per connection used to exhaust the pids limit and kill it, cutting
    the agent off for the rest of its trial), then 100 (over its own cap of 64: the rest
    wait in the backlog). It keeps answering throughout and after."""
    from harness.agents.proxy import FORWARDER_MAX_CONNECTIONS, FORWARDER_NAME, SANDBOX_DIR
    from harness.sandbox.bwrap import Bind, Limits

    few, many = 30, 100
    assert many > FORWARDER_MAX_CONNECTIONS
    need_pids = 64
    task = make_fake_task(tmp_path / "tasks")
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    if "pids" not in backend.features.cgroup:
        print("SKIP reason: no usable pids cgroup controller")
        pytest.skip("no usable pids cgroup controller")
    up = Upstream(upstream.base_url, "k")
    with ModelProxy(up, model="m", read_timeout=5.0) as px:
        session = backend.open(
            data_dir=task.data_dir,
            trial_dir=tmp_path / "trial",
            limits=Limits(wall_sec=120, pids=need_pids, memory_mb=512, storage_mb=256),
            extra=(Bind(px.dir, SANDBOX_DIR, grant=True),),
        )
        try:
            script = HOLDER.format(
                fwd=f"{SANDBOX_DIR}/{FORWARDER_NAME}",
                sock=f"{SANDBOX_DIR}/{SOCKET_NAME}",
                cap=FORWARDER_MAX_CONNECTIONS,
                few=few,
                many=many,
            )
            res = session.exec(["/bin/sh", "-c", script], timeout=120)
        finally:
            session.close()
    out = res.stdout.decode()
    print(out, res.stderr.decode()[-2000:])
    assert res.exit_code == 0, res.stderr
    assert out.split() == [
        *("held", str(few), "ask", "200", "released", str(few), "ask", "200"),
        *("held", str(many), "ask", "-", "released", str(many), "ask", "200"),
    ]


FN_TOOL = {
    "chat": {"type": "function", "function": {"name": "run", "parameters": {}}},
    "responses": {"type": "function", "name": "run", "parameters": {}},
    "messages": {"name": "run", "input_schema": {"type": "object"}},
}
HOSTED = {
    "chat": [
        {"tools": [{"type": "web_search"}]},
        {"web_search_options": {}},
        {"service_tier": "priority"},
    ],
    "responses": [
        {"tools": [{"type": "web_search"}]},
        {"tools": [{"type": "web_search_preview"}]},
        {"tools": [{"type": "mcp", "server_url": "https://example.org/mcp"}]},
        {"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]},
        {"tools": [{"type": "image_generation", "model": "gpt-image-1"}]},
        {"tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]},
        {"tools": [{"type": "namespace", "name": "n", "tools": [{"type": "web_search"}]}]},
        {"tools": [{"name": "untyped"}]},
        {"tools": "web_search"},
        {"service_tier": "flex"},
    ],
    "messages": [
        {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
        {"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]},
        {"tools": [{"type": "code_execution_20250825", "name": "code_execution"}]},
        {"mcp_servers": [{"type": "url", "url": "https://example.org/mcp", "name": "m"}]},
        {"container": "container_1"},
        {"tools": [7]},
        {"service_tier": "priority"},
    ],
}
CLIENT = {
    "chat": [[FN_TOOL["chat"], {"type": "custom", "name": "patch"}]],
    "responses": [
        [FN_TOOL["responses"], {"type": "custom", "name": "apply_patch"}],
        [{"type": "namespace", "name": "agents", "tools": [FN_TOOL["responses"]]}],
        [{"type": "local_shell"}],
    ],
    "messages": [
        [FN_TOOL["messages"], {"type": "custom", "name": "c", "input_schema": {}}],
        [{"type": "bash_20250124", "name": "bash"}, {"type": "text_editor_20250728", "name": "e"}],
    ],
}


@pytest.mark.parametrize("style", sorted(STYLES))
def test_tools_the_provider_would_run_never_reach_it(style: str, tmp_path: Path) -> None:
    """A web search, web fetch, remote MCP server or code container run by the provider is
    network access the sandbox does not have: refused; tools the agent runs pass."""
    provider, path, make = STYLES[style]
    replies = [text_reply(f"r{i}", (1, 1)) for i in range(10)]
    traj = Trajectory(tmp_path / "t.jsonl")
    with ScriptedChatServer(replies) as server:  # type: ignore[arg-type]
        with ModelProxy(upstream_for(server, provider), trajectory=traj, model="m") as px:
            bad = [
                status(send(px, request("POST", path, json.dumps({**make("m"), **extra}).encode())))
                for extra in HOSTED[style]
            ]
            good = [
                status(
                    send(px, request("POST", path, json.dumps({**make("m"), "tools": t}).encode()))
                )
                for t in CLIENT[style]
            ]
        traj.close()
        sent = server.requests
    assert bad == [400] * len(HOSTED[style])
    assert good == [200] * len(CLIENT[style])
    assert [r["tools"] for r in sent] == CLIENT[style]  # only the client tools went upstream
    refused = [e for e in read_trajectory(tmp_path / "t.jsonl") if e["type"] == "http_refused"]
    assert [e["refused_by"] for e in refused] == ["feature_pin"] * len(HOSTED[style])


def test_a_rejection_is_recorded_whole_before_close_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent can read a 404's body and exit before the proxy's thread has recorded the
    failure (the upstream's words come after the relay): `close()` waits for the exchanges in
    flight, and a failure is only listed once whole. Slowed here where the words are clipped;
    without the wait the trial was left with no cause, or one without the upstream's words."""
    import harness.agents.proxy as P

    clip = P._clip

    def slow_clip(*a: Any, **kw: Any) -> str:
        time.sleep(2.0)  # longer than serve_forever's 0.5 s poll, which close() waits out
        return clip(*a, **kw)

    monkeypatch.setattr(P, "_clip", slow_clip)

    def answer(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        return 404, {"error": {"message": "scripted 404 for resp_missing"}}

    with ScriptedChatServer([answer]) as server:  # type: ignore[list-item]
        up = Upstream(server.base_url, "sk-test", provider="openai")
        px = ModelProxy(up, max_retries=0, model="m")
        with px:  # a client that stops reading once it has the answer, not at EOF
            conn = socket.socket(socket.AF_UNIX)
            conn.settimeout(10)
            conn.connect(str(px.dir / SOCKET_NAME))
            conn.sendall(request("POST", "/v1/chat/completions", M))
            resp = b""
            while b"\r\n\r\n" not in resp:
                resp += conn.recv(65536)
            body = resp.partition(b"\r\n\r\n")[2]
            while b"}}" not in body:  # the whole error object: the client is done
                body += conn.recv(65536)
            conn.close()
            assert status(resp) == 404 and b"resp_missing" in body
        assert [f.kind for f in px.failures] == ["endpoint_rejected"]
        assert "scripted 404 for resp_missing" in px.failures[0].detail
