"""Test doubles shared by the harness tests and their subprocesses: a fake task folder, a
stand-in verifier with the `tbmm.verify` interface, and a scripted model server on
127.0.0.1 that speaks OpenAI Chat Completions and Responses and Anthropic Messages, as JSON
or, when the request asks for `stream`, as server-sent events the way the real APIs frame
them (what the codex CLI needs: it only speaks the streamed Responses API; claude-code
streams Messages)."""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ANCHOR_ARTIFACT = {"q1": {"mean_load": "12.5"}, "note": "anchor"}
ATTACHMENT_CSV = "t,load\n0,10\n1,12\n2,15.5\n3,12.5\n"


@dataclass
class FakeTask:
    """Has every attribute the harness reads from tbmm.suite.tasks.Task."""

    slug: str
    dir: Path
    suite: str = "CUMCM"
    agent_timeout_sec: float = 60.0
    cpus: int = 2
    memory_mb: int = 4096
    storage_mb: int = 1024

    @property
    def data_dir(self) -> Path:
        return self.dir / "environment" / "data"

    @property
    def output_path(self) -> str:
        return f"/root/results/{self.slug}_result.json"

    @property
    def instruction(self) -> str:
        return (self.dir / "instruction.md").read_text()

    def anchor_artifact_bytes(self) -> bytes:
        doc = json.loads((self.dir / "anchor.json").read_text())
        return (json.dumps(doc["artifact"], sort_keys=True) + "\n").encode()


def make_fake_task(root: Path, slug: str = "cumcm-2099-a-fake", **kw: Any) -> FakeTask:
    """A task folder laid out as tasks/FORMAT.md says, with verifier-only files present
    (so tests can prove the sandbox does not expose them)."""
    d = root / "CUMCM" / slug
    (d / "environment" / "data" / "attachments").mkdir(parents=True, exist_ok=True)
    (d / "environment" / "data" / "attachments" / "load.csv").write_text(ATTACHMENT_CSV)
    (d / "environment" / "data" / "problem.md").write_text("Compute the mean load.\n")
    (d / "tests").mkdir(exist_ok=True)
    (d / "tests" / "test.sh").write_text("#!/bin/sh\necho TBMMSECRET-7f3a9-TEST\n")
    (d / "instruction.md").write_text(
        "Read /root/data/attachments/load.csv, compute the mean of column load and write "
        f'{{"q1": {{"mean_load": <mean>}}}} to /root/results/{slug}_result.json\n'
    )
    (d / "anchor.json").write_text(
        json.dumps(
            {"provenance": {"secret": "TBMMSECRET-7f3a9-ANCHOR"}, "artifact": ANCHOR_ARTIFACT}
        )
    )
    for name in ("scoring.toml", "gate.toml"):
        (d / name).write_text('# TBMMSECRET-7f3a9-PANEL\n[[metric]]\nid = "mean_load"\n')
    (d / "panel.json").write_text('{"papers": [], "note": "TBMMSECRET-7f3a9-PANEL"}')
    return FakeTask(slug=slug, dir=d, **kw)


class StandInVerdict(BaseModel):
    """Same fields as tbmm.verify's verdict, for tests until the real one lands."""

    o_eval: float
    o_eval_exact: str
    gate: str
    lean: str
    exit_code: int
    reasons: list[str] = []
    # the status a real verdict carries (a stored verdict without one reads as a verifier
    # that raised: no verdict); "scored" unless the artifact was missing or unreadable
    status: str = "scored"


def stand_in_verify(task: Any, artifact: bytes | None) -> StandInVerdict:
    """1.0 when q1.mean_load equals 12.5, 0 otherwise; missing/unreadable -> exit code 2."""
    if artifact is None:
        return StandInVerdict(
            o_eval=0.0,
            o_eval_exact="0",
            gate="skipped",
            lean="skipped",
            exit_code=2,
            reasons=["missing"],
            status="missing_artifact",
        )
    try:
        doc = json.loads(artifact)
    except ValueError:
        return StandInVerdict(
            o_eval=0.0,
            o_eval_exact="0",
            gate="fail",
            lean="skipped",
            exit_code=2,
            reasons=["json"],
            status="unreadable",
        )
    try:
        good = float(doc["q1"]["mean_load"]) == 12.5
    except (KeyError, TypeError, ValueError):
        good = False
    return StandInVerdict(
        o_eval=1.0 if good else 0.0,
        o_eval_exact="1" if good else "0",
        gate="pass" if good else "warn",
        lean="ok" if good else "skipped",
        exit_code=0,
    )


Responder = Callable[[dict[str, Any], dict[str, str]], tuple[int, dict[str, Any]]]


def sse(events: list[dict[str, Any]], *, done: bool = False) -> bytes:
    """Server-sent events: `event: <type>` + `data: <json>` per event (Responses style);
    `done` ends with `data: [DONE]` (Chat Completions style, whose events carry no type)."""
    out = b""
    for ev in events:
        head = f"event: {ev['type']}\n" if "type" in ev else ""
        out += f"{head}data: {json.dumps(ev)}\n\n".encode()
    if done:
        out += b"data: [DONE]\n\n"
    return out


def responses_events(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API response object as its stream: created, each output item added and
    done (text items with their text deltas), then completed with usage."""
    rid = resp.get("id", "resp_1")
    head = {k: v for k, v in resp.items() if k not in ("output", "usage")}
    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "response": {**head, "id": rid, "status": "in_progress", "output": []},
        }
    ]
    for i, item in enumerate(resp.get("output", [])):
        events.append({"type": "response.output_item.added", "output_index": i, "item": item})
        if item.get("type") == "message":
            for part in item.get("content", []):
                if part.get("type") == "output_text":
                    events.append(
                        {
                            "type": "response.output_text.delta",
                            "output_index": i,
                            "item_id": item.get("id"),
                            "content_index": 0,
                            "delta": part.get("text", ""),
                        }
                    )
        events.append({"type": "response.output_item.done", "output_index": i, "item": item})
    events.append(
        {"type": "response.completed", "response": {**resp, "id": rid, "status": "completed"}}
    )
    return events


def chat_chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat.completion as its stream of chat.completion.chunk deltas (+ a usage chunk)."""
    msg = reply["choices"][0]["message"]
    base = {
        "id": reply.get("id", "chatcmpl"),
        "object": "chat.completion.chunk",
        "model": reply.get("model", "m"),
    }
    delta: dict[str, Any] = {"role": "assistant"}
    if msg.get("content"):
        delta["content"] = msg["content"]
    if msg.get("tool_calls"):
        delta["tool_calls"] = [
            {"index": i, "id": c["id"], "type": "function", "function": c["function"]}
            for i, c in enumerate(msg["tool_calls"])
        ]
    finish = reply["choices"][0].get("finish_reason", "stop")
    return [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**base, "choices": [], "usage": reply.get("usage")},
    ]


class ScriptedChatServer:
    """Fake model server on 127.0.0.1: the n-th POST gets the n-th scripted reply.

    Each script item is either a response body (status 200) or a callable that gets the
    request JSON and headers and returns (status, body) — so a test can assert what the
    agent sent back (e.g. that a tool result contains real command output). The body is a
    chat.completion for `/chat/completions`, a response object for `/responses` and a
    message for `/v1/messages`; a request with `"stream": true` gets it as SSE (see
    `responses_events`, `chat_chunks`, `messages_events`).
    GET answers 404 (the pre-flight check only needs an HTTP answer) unless `models` is
    given: then GET `.../models` lists them and GET `.../models/<id>` answers 200 for a listed
    id, else 404 (what the harness's endpoint probe asks; `model_lookup=False`: always 404,
    a server that lists its models but has no lookup route). `get_status` makes every GET
    answer that status instead; `drop_gets_after` N drops every GET after the first N
    without an answer (the endpoint went away). `paths` records the path of every POST,
    `get_paths` of every GET.
    """

    def __init__(
        self,
        script: list[dict[str, Any] | Responder],
        *,
        models: list[str] | None = None,
        get_status: int | None = None,
        drop_gets_after: int | None = None,
        model_lookup: bool = True,
    ) -> None:
        self.script = list(script)
        self.models = models
        self.get_status = get_status
        self.drop_gets_after = drop_gets_after
        self.model_lookup = model_lookup
        self.get_paths: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.gets = 0
        self.errors: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                outer.gets += 1
                outer.get_paths.append(self.path)
                if outer.drop_gets_after is not None and outer.gets > outer.drop_gets_after:
                    self.close_connection = True
                    self.connection.close()
                    return
                status, data = 404, b'{"error": {"message": "no model list here"}}'
                path = self.path.split("?", 1)[0].rstrip("/")
                if outer.get_status is not None:
                    status, data = outer.get_status, b'{"error": {"message": "scripted"}}'
                elif outer.models is not None and path.endswith("/models"):
                    listed = [{"id": m, "object": "model"} for m in outer.models]
                    status, data = 200, json.dumps({"object": "list", "data": listed}).encode()
                elif outer.models is not None and "/models/" in path:
                    name = urllib.parse.unquote(path.rsplit("/models/", 1)[1])
                    if outer.model_lookup and name in outer.models:
                        status, data = 200, json.dumps({"id": name, "object": "model"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    req = json.loads(body)
                except ValueError:
                    req = {"_raw": body.decode(errors="replace")}
                hdrs = {k.lower(): v for k, v in self.headers.items()}
                with outer._lock:
                    idx = len(outer.requests)
                    outer.requests.append(req)
                    outer.headers.append(hdrs)
                    outer.paths.append(self.path)
                if idx >= len(outer.script):
                    status, reply = 500, {"error": {"message": "script exhausted"}}
                else:
                    item = outer.script[idx]
                    try:
                        status, reply = item(req, hdrs) if callable(item) else (200, item)
                    except AssertionError as exc:
                        outer.errors.append(f"request {idx}: {exc}")
                        status, reply = 400, {"error": {"message": str(exc)}}
                kind = "application/json"
                data = json.dumps(reply).encode()
                if status == 200 and isinstance(req, dict) and req.get("stream"):
                    kind = "text/event-stream"
                    bare = self.path.split("?", 1)[0].rstrip("/")
                    if bare.endswith("/responses"):
                        data = sse(responses_events(reply))
                    elif bare.endswith("/messages"):
                        data = sse(messages_events(reply))
                    else:
                        data = sse(chat_chunks(reply), done=True)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def tool_call_reply(
    call_id: str, name: str, args: dict[str, Any], tokens: tuple[int, int]
) -> dict[str, Any]:
    """A chat.completion whose message asks for one tool call."""
    return {
        "id": f"chatcmpl-{call_id}",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
    }


def text_reply(text: str, tokens: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-final",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
    }


def responses_usage(tokens: tuple[int, int], cached: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": tokens[0],
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": tokens[1],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens[0] + tokens[1],
    }


def responses_call(
    call_id: str, name: str, args: dict[str, Any], tokens: tuple[int, int], cached: int = 0
) -> dict[str, Any]:
    """A Responses API response whose output is one function call."""
    return {
        "id": f"resp_{call_id}",
        "object": "response",
        "model": "fake-model",
        "output": [
            {
                "type": "function_call",
                "id": f"fc_{call_id}",
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        ],
        "usage": responses_usage(tokens, cached),
    }


def responses_text(text: str, tokens: tuple[int, int], cached: int = 0) -> dict[str, Any]:
    """A Responses API response whose output is one assistant message."""
    return {
        "id": "resp_final",
        "object": "response",
        "model": "fake-model",
        "output": [
            {
                "type": "message",
                "id": "msg_final",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "usage": responses_usage(tokens, cached),
    }


def function_outputs(req: dict[str, Any]) -> dict[str, str]:
    """call_id -> output of the function results a Responses request carries."""
    return {
        str(i.get("call_id")): str(i.get("output"))
        for i in req.get("input", [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


# ---------------------------------------------------------------- Anthropic Messages


def messages_usage(
    tokens: tuple[int, int], cache_read: int = 0, cache_write: int = 0
) -> dict[str, Any]:
    """Anthropic's usage object: `input_tokens` excludes the cached prompt tokens."""
    return {
        "input_tokens": tokens[0],
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "output_tokens": tokens[1],
    }


def messages_reply(
    blocks: list[dict[str, Any]],
    tokens: tuple[int, int],
    *,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = "fake-model",
) -> dict[str, Any]:
    """A Messages API response (a `message` object) with these content blocks; its stop
    reason is `tool_use` when a block asks for a tool, else `end_turn`."""
    stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_" + hashlib.sha256(json.dumps(blocks, sort_keys=True).encode()).hexdigest()[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": messages_usage(tokens, cache_read, cache_write),
    }


def tool_use(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A `tool_use` content block."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _pieces(text: str, n: int) -> list[str]:
    """`text` cut into about `n` pieces (at least one), the way a stream delivers it."""
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def messages_events(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """A Messages API `message` as the stream Anthropic sends: message_start (usage so far,
    no content), a ping, per block content_block_start / deltas / content_block_stop (text in
    `text_delta`s; a tool's input as its JSON text cut into several `input_json_delta`s,
    which the client must join before parsing), message_delta (stop reason, final output
    tokens) and message_stop."""
    usage = dict(msg.get("usage") or {})
    start_usage = {**usage, "output_tokens": min(1, int(usage.get("output_tokens", 0)))}
    head = {**msg, "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": head},
        {"type": "ping"},
    ]
    for i, block in enumerate(msg.get("content", [])):
        kind = block.get("type")
        if kind == "text":
            events.append(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            for piece in _pieces(block.get("text", ""), 3):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "text_delta", "text": piece},
                    }
                )
        elif kind == "tool_use":
            events.append(
                {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}}
            )
            for piece in _pieces(json.dumps(block.get("input", {})), 4):
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    }
                )
        else:
            raise ValueError(f"no stream form for a {kind!r} block here")
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": msg.get("stop_reason"), "stop_sequence": None},
            "usage": {"output_tokens": int(usage.get("output_tokens", 0))},
        }
    )
    events.append({"type": "message_stop"})
    return events


def tool_results(req: dict[str, Any]) -> dict[str, str]:
    """tool_use_id -> text of the `tool_result` blocks in a Messages request's last user turn."""
    msgs = req.get("messages") or []
    last = msgs[-1] if msgs else {}
    out: dict[str, str] = {}
    content = last.get("content") if isinstance(last, dict) else None
    for b in content if isinstance(content, list) else []:
        if isinstance(b, dict) and b.get("type") == "tool_result":
            c = b.get("content")
            if isinstance(c, list):
                c = "\n".join(str(p.get("text", "")) for p in c if isinstance(p, dict))
            out[str(b.get("tool_use_id"))] = str(c)
    return out
