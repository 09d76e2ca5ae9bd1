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

from harness.proxy import ENDPOINTS, SOCKET_NAME, ModelProxy, Upstream
from harness.testing import ScriptedChatServer, text_reply
from harness.trajectory import Trajectory, read_trajectory


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
    with ModelProxy(up, trajectory=traj, max_retries=0) as px:
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
    with ModelProxy(up, max_request_bytes=1 << 20, read_timeout=1.0, max_retries=0) as px:
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
        with ModelProxy(up, trajectory=traj, max_response_bytes=4096) as px:
            resp = send(px, request("POST", "/v1/chat/completions", b"{}"))
        traj.close()
    head, _, body = resp.partition(b"\r\n\r\n")
    assert status(head) == 200 and len(body) == 4096
    (event,) = [e for e in read_trajectory(tmp_path / "t.jsonl") if e["type"] == "http"]
    assert "cut" in event


def test_connection_count_is_bounded(upstream: Any) -> None:
    up = Upstream(upstream.base_url, "k")
    with ModelProxy(up, max_connections=3, read_timeout=5.0) as px:
        idle = []
        for _ in range(3):  # hold every slot with a connection that sends nothing
            s = socket.socket(socket.AF_UNIX)
            s.connect(str(px.dir / SOCKET_NAME))
            idle.append(s)
        time.sleep(0.2)
        busy = send(px, request("POST", "/v1/chat/completions", b"{}"))
        for s in idle:
            s.close()
        time.sleep(0.3)
        again = send(px, request("POST", "/v1/chat/completions", b"{}"))
    assert status(busy) == 503
    assert status(again) == 200
