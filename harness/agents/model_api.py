"""The built-in agent's model client: three API styles over httpx, retried with tenacity.

`ModelClient` posts one JSON request and returns the decoded response: 408/409/429/5xx/529
and connection failures are retried (exponential backoff from `backoff_s`, doubling, at most
60 s, or the server's Retry-After when it gives one), up to `max_retries` times; what still
fails raises `ModelError`, whose `infra` says whether the infrastructure is to blame
(harness.agents.errors kinds) or the request itself was refused (400/413/422: the agent's doing).

A `Conversation` keeps one dialogue in its API's own shape, so what is sent back each turn
is what that API returned (Anthropic thinking blocks with their signatures, Responses
function calls with their call ids):
* `ChatConversation`: OpenAI Chat Completions (`POST {base}/chat/completions`);
* `ResponsesConversation`: OpenAI Responses (`POST {base}/responses`, `store: false`, the
  whole input resent each turn; reasoning items are not resent, since without storage they
  cannot be referred to);
* `AnthropicConversation`: Anthropic Messages (`POST {base}/v1/messages`, `max_tokens`
  required).
Each turn is also given back as one OpenAI-chat-shaped assistant message, which is what the
trajectory records whatever the style (harness.runs.atif reads that shape).
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
)

from harness.agents.errors import RETRIED_STATUS, status_kind

MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # as the proxy: far above any real response
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MAX_TOKENS = 8192  # Messages requires a cap; every Claude model from 3.5 on takes it
PATHS = {"chat": "/chat/completions", "responses": "/responses", "anthropic": "/v1/messages"}


class ModelError(RuntimeError):
    """The model endpoint failed after all retries. `infra` is the harness.agents.errors kind when
    the failure is the infrastructure's (unreachable, 429/5xx to the end, 401/403/404);
    None when the request itself was refused (400, 413, 422: the agent's doing)."""

    def __init__(self, message: str, infra: str | None = None) -> None:
        super().__init__(message)
        self.infra = infra


class _Retry(Exception):
    """A failure worth another attempt (carries what to report if it is the last)."""

    def __init__(self, message: str, infra: str | None, retry_after: float | None = None):
        super().__init__(message)
        self.infra = infra
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float | None:
    try:
        return max(float(value), 0.0) if value else None
    except ValueError:
        return None


@dataclass
class ModelClient:
    """One endpoint (base URL, key, API style); `post` sends one request with retries."""

    base_url: str
    api_key: str | None
    api: str = "chat"
    max_retries: int = 6
    backoff_s: float = 1.0
    _http: httpx.Client | None = field(default=None, repr=False)

    @property
    def path(self) -> str:
        """The absolute upstream path requests go to (what the runner's probe asks again)."""
        return urllib.parse.urlsplit(self.base_url).path.rstrip("/") + PATHS[self.api]

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + PATHS[self.api]

    def headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api == "anthropic":
            out["anthropic-version"] = ANTHROPIC_VERSION
            if self.api_key:
                out["x-api-key"] = self.api_key
        elif self.api_key:
            out["Authorization"] = f"Bearer {self.api_key}"
        return out

    def _client(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(follow_redirects=False)  # env proxies honoured, as urllib did
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hint = getattr(exc, "retry_after", None)
        if hint is not None:
            return min(hint, 60.0)
        return min(self.backoff_s * 2 ** (state.attempt_number - 1), 60.0)

    def post(self, payload: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        """The decoded JSON response; ModelError once the retries are spent (or at once for
        a status that is not retried)."""
        retrying = Retrying(
            retry=retry_if_exception_type(_Retry),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            reraise=True,
        )
        body = json.dumps(payload).encode()
        try:
            return retrying(self._once, body, max(timeout, 1.0))
        except _Retry as exc:
            raise ModelError(str(exc), exc.infra) from exc

    def _once(self, body: bytes, timeout: float) -> dict[str, Any]:
        try:
            with self._client().stream(
                "POST", self.url, content=body, headers=self.headers(), timeout=timeout
            ) as resp:
                data = bytearray()
                for chunk in resp.iter_bytes():
                    data += chunk
                    if len(data) > MAX_RESPONSE_BYTES:
                        raise _Retry(f"response over {MAX_RESPONSE_BYTES} bytes", None)
        except httpx.TransportError as exc:  # refused, DNS, TLS, timeouts, broken streams
            raise _Retry(f"{type(exc).__name__}: {exc}", "endpoint_unreachable") from exc
        if resp.status_code >= 400:
            text = bytes(data[:500]).decode(errors="replace")
            why = f"HTTP {resp.status_code}: {text}"
            if resp.status_code in RETRIED_STATUS:
                raise _Retry(
                    why,
                    status_kind(resp.status_code),
                    _retry_after(resp.headers.get("retry-after")),
                )
            raise ModelError(why, status_kind(resp.status_code))
        try:
            doc = json.loads(bytes(data))
        except ValueError as exc:  # a cut or garbled body: worth another attempt
            raise _Retry(f"bad JSON from model endpoint: {exc}", None) from exc
        if not isinstance(doc, dict):
            raise _Retry("the model endpoint answered JSON that is not an object", None)
        return doc


# ---------------------------------------------------------------------------- dialogues


@dataclass
class Turn:
    """One model response: its tool calls as (id, name, arguments JSON text), and the
    OpenAI-chat-shaped message the trajectory records."""

    calls: list[tuple[str, str, str]]
    message: dict[str, Any]


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args if args is not None else {})


def _chat_message(text: str, reasoning: str, calls: list[tuple[str, str, str]]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if reasoning:
        msg["reasoning_content"] = reasoning
    if calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return msg


class BadResponse(ValueError):
    """A response this API's shape does not fit (no message, no output)."""


class Conversation:
    """A dialogue in one API's shape. `user` is the instruction as OpenAI content parts
    (text and `image_url` parts) or a string. `max_output` caps each response's tokens
    (`max_completion_tokens`, `max_output_tokens`, `max_tokens`; None: the API's default,
    ANTHROPIC_MAX_TOKENS for Messages, which requires one)."""

    api = "chat"
    max_output: int | None = None

    def payload(
        self, model: str, tools: list[dict[str, Any]], *, seed: int, temperature: float | None
    ) -> dict[str, Any]:
        raise NotImplementedError

    def take(self, resp: dict[str, Any]) -> Turn:
        raise NotImplementedError

    def results(self, results: list[tuple[str, str]]) -> None:
        """The outputs of the turn's tool calls, as (call id, text), in call order."""
        raise NotImplementedError


class ChatConversation(Conversation):
    api = "chat"

    def __init__(self, system: str, user: str | list[dict[str, Any]]) -> None:
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]

    def payload(self, model, tools, *, seed, temperature):  # type: ignore[no-untyped-def]
        out: dict[str, Any] = {"model": model, "messages": self.messages, "tools": tools}
        out["seed"] = seed
        if temperature is not None:
            out["temperature"] = temperature
        if self.max_output is not None:
            out["max_completion_tokens"] = self.max_output
        return out

    def take(self, resp: dict[str, Any]) -> Turn:
        try:
            msg = resp["choices"][0]["message"]
            if not isinstance(msg, dict):
                raise TypeError
        except (KeyError, IndexError, TypeError) as exc:
            raise BadResponse("no choices[0].message") from exc
        msg = {k: v for k, v in msg.items() if v is not None}
        msg.setdefault("content", "")
        msg["role"] = "assistant"
        self.messages.append(msg)
        calls = []
        for c in msg.get("tool_calls") or []:
            fn = (c.get("function") if isinstance(c, dict) else None) or {}
            calls.append(
                (str(c.get("id", "")), str(fn.get("name", "")), _args_text(fn.get("arguments")))
            )
        return Turn(calls, msg)

    def results(self, results: list[tuple[str, str]]) -> None:
        for call_id, text in results:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})


def _responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # strict said outright: the Responses API's strict mode (its default for function tools)
    # wants every property required and no other, which optional arguments are not
    return [{"type": "function", **t["function"], "strict": False} for t in tools]


def _responses_parts(user: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(user, str):
        return [{"type": "input_text", "text": user}]
    out = []
    for p in user:
        if p.get("type") == "image_url":
            out.append({"type": "input_image", "image_url": p["image_url"]["url"]})
        else:
            out.append({"type": "input_text", "text": str(p.get("text", ""))})
    return out


class ResponsesConversation(Conversation):
    api = "responses"

    def __init__(self, system: str, user: str | list[dict[str, Any]]) -> None:
        self.instructions = system
        self.items: list[dict[str, Any]] = [
            {"type": "message", "role": "user", "content": _responses_parts(user)}
        ]

    def payload(self, model, tools, *, seed, temperature):  # type: ignore[no-untyped-def]
        out: dict[str, Any] = {
            "model": model,
            "instructions": self.instructions,
            "input": self.items,
            "tools": _responses_tools(tools),
            "store": False,
        }
        if temperature is not None:
            out["temperature"] = temperature
        if self.max_output is not None:
            out["max_output_tokens"] = self.max_output
        return out  # the Responses API takes no seed

    def take(self, resp: dict[str, Any]) -> Turn:
        output = resp.get("output")
        if not isinstance(output, list):
            raise BadResponse("no output list")
        texts, reasoning, calls = [], [], []
        for item in output:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind == "message":
                parts = [
                    str(c.get("text", ""))
                    for c in item.get("content") or []
                    if isinstance(c, dict) and c.get("type") in ("output_text", "text")
                ]
                text = "".join(parts)
                texts.append(text)
                self.items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                )
            elif kind == "function_call":
                call = (
                    str(item.get("call_id") or item.get("id") or ""),
                    str(item.get("name", "")),
                    _args_text(item.get("arguments")),
                )
                calls.append(call)
                self.items.append(
                    {
                        "type": "function_call",
                        "call_id": call[0],
                        "name": call[1],
                        "arguments": call[2],
                    }
                )
            elif kind == "reasoning":
                for s in item.get("summary") or []:
                    if isinstance(s, dict):
                        reasoning.append(str(s.get("text", "")))
        return Turn(
            calls, _chat_message("\n".join(t for t in texts if t), "\n".join(reasoning), calls)
        )

    def results(self, results: list[tuple[str, str]]) -> None:
        for call_id, text in results:
            self.items.append({"type": "function_call_output", "call_id": call_id, "output": text})


def _anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "input_schema": t["function"]["parameters"],
        }
        for t in tools
    ]


def _anthropic_blocks(user: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(user, str):
        return [{"type": "text", "text": user}]
    out: list[dict[str, Any]] = []
    for p in user:
        if p.get("type") == "image_url":
            url = str(p["image_url"]["url"])
            head, _, data = url.partition(",")
            media = head[5:].split(";", 1)[0] if head.startswith("data:") else ""
            if media and head.endswith(";base64"):
                out.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": media, "data": data},
                    }
                )
            else:
                out.append({"type": "image", "source": {"type": "url", "url": url}})
        else:
            out.append({"type": "text", "text": str(p.get("text", ""))})
    return out


class AnthropicConversation(Conversation):
    api = "anthropic"

    def __init__(
        self, system: str, user: str | list[dict[str, Any]], max_tokens: int = ANTHROPIC_MAX_TOKENS
    ) -> None:
        self.system = system
        self.max_tokens = max_tokens
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": _anthropic_blocks(user)}]

    def payload(self, model, tools, *, seed, temperature):  # type: ignore[no-untyped-def]
        out: dict[str, Any] = {
            "model": model,
            "system": self.system,
            "messages": self.messages,
            "tools": _anthropic_tools(tools),
            "max_tokens": self.max_output or self.max_tokens,
        }
        if temperature is not None:
            out["temperature"] = temperature
        return out  # Messages takes no seed

    def take(self, resp: dict[str, Any]) -> Turn:
        content = resp.get("content")
        if not isinstance(content, list):
            raise BadResponse("no content list")
        blocks = [b for b in content if isinstance(b, dict)]
        texts, reasoning, calls = [], [], []
        for b in blocks:
            if b.get("type") == "text":
                texts.append(str(b.get("text", "")))
            elif b.get("type") == "thinking":
                reasoning.append(str(b.get("thinking", "")))
            elif b.get("type") == "tool_use":
                calls.append(
                    (str(b.get("id", "")), str(b.get("name", "")), _args_text(b.get("input")))
                )
        # sent back as returned (thinking blocks must keep their signatures); an empty turn
        # cannot be: Messages refuses an assistant message without content
        self.messages.append(
            {"role": "assistant", "content": blocks or [{"type": "text", "text": "(empty)"}]}
        )
        return Turn(calls, _chat_message("".join(texts), "".join(reasoning), calls))

    def results(self, results: list[tuple[str, str]]) -> None:
        if results:
            self.messages.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": t or "(no output)"}
                        for i, t in results
                    ],
                }
            )


def conversation(
    api: str, system: str, user: str | list[dict[str, Any]], max_output: int | None = None
) -> Conversation:
    talk: Conversation
    if api == "responses":
        talk = ResponsesConversation(system, user)
    elif api == "anthropic":
        talk = AnthropicConversation(system, user)
    else:
        talk = ChatConversation(system, user)
    talk.max_output = max_output
    return talk
