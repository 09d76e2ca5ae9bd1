"""Model exchanges in one provider-neutral shape, for the trajectory (harness.runs.atif).

The proxy sees raw HTTP: OpenAI Responses (`/responses`, streamed as SSE by codex), OpenAI
Chat Completions (`/chat/completions`, JSON or SSE chunks) and Anthropic Messages
(`/v1/messages`, JSON or SSE). This module turns a request body into a list of *items* and
a response body into one *turn*, whatever the API:

* item: {"kind": "message", "role": "system"|"user"|"assistant", "parts": [...]} where a
  part is {"type": "text", "text": s} or {"type": "image", "ref": s} (a URL, or
  "inline image/png, N bytes" for a data URI: the bytes are not kept);
  {"kind": "tool_call", "id", "name", "arguments"}; {"kind": "tool_result", "id",
  "content"}; {"kind": "other", "type"} for anything else (reasoning blobs, ...).
* turn: {"text", "reasoning", "tool_calls": [{"id", "name", "arguments"}], "model",
  "status"}; `arguments` is the raw string the model produced (or a dict for Anthropic).

Consecutive requests of an agent repeat the whole conversation, so `RequestLog` keeps only
what is new since the previous request (`prefix` = number of items repeated), which keeps
the log linear in the conversation's length. Everything here is best effort on untrusted
input: a body that does not parse gives `None`, never an exception.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

TEXT_CAP = 256 * 1024  # per text field kept in a trajectory


def api_of(path: str) -> str | None:
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith("/responses"):
        return "responses"
    if bare.endswith("/chat/completions"):
        return "chat"
    if bare.endswith("/v1/messages") or bare.endswith("/messages"):
        return "anthropic"
    return None


def _cap(text: str, cap: int = TEXT_CAP) -> str:
    if len(text) <= cap:
        return text
    return text[: cap // 2] + f"\n...[{len(text) - cap} chars omitted]...\n" + text[-cap // 2 :]


def _image_ref(url: Any) -> str:
    if isinstance(url, dict):
        url = url.get("url")
    if not isinstance(url, str):
        return "image"
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        media = head[5:].split(";", 1)[0] or "image"
        return f"inline {media}, {len(data) * 3 // 4} bytes"
    return _cap(url, 2048)


def _text_of(content: Any) -> str:
    """Plain text of a content value (string or list of parts); images as placeholders."""
    return "\n".join(
        p["text"] if p["type"] == "text" else f"[image: {p['ref']}]" for p in _parts(content)
    )


def _parts(content: Any) -> list[dict[str, str]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": _cap(content)}]
    out: list[dict[str, str]] = []
    if not isinstance(content, list):
        return [{"type": "text", "text": _cap(json.dumps(content, ensure_ascii=False))}]
    for part in content:
        if isinstance(part, str):
            out.append({"type": "text", "text": _cap(part)})
            continue
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind in ("text", "input_text", "output_text", "summary_text"):
            out.append({"type": "text", "text": _cap(str(part.get("text", "")))})
        elif kind in ("image_url", "input_image"):
            out.append({"type": "image", "ref": _image_ref(part.get("image_url"))})
        elif kind == "image":  # Anthropic
            src = part.get("source") or {}
            ref = (
                src.get("url")
                if src.get("type") == "url"
                else f"inline {src.get('media_type', 'image')}, {len(str(src.get('data', ''))) * 3 // 4} bytes"
            )
            out.append({"type": "image", "ref": str(ref)})
        elif kind == "refusal":
            out.append({"type": "text", "text": _cap(str(part.get("refusal", "")))})
        else:
            out.append({"type": "text", "text": f"[{kind}]"})
    return out


def _role(role: Any) -> str:
    role = str(role or "user")
    return "system" if role in ("system", "developer") else role


# ---------------------------------------------------------------------------- requests


def request_items(api: str, body: Any) -> list[dict[str, Any]] | None:
    """The conversation a request carries, as items (None: not a request we understand)."""
    if not isinstance(body, dict):
        return None
    try:
        if api == "responses":
            return _responses_items(body)
        if api == "chat":
            return _chat_items(body)
        if api == "anthropic":
            return _anthropic_items(body)
    except (TypeError, ValueError, AttributeError):
        return None
    return None


def _responses_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        out.append({"kind": "message", "role": "system", "parts": _parts(body["instructions"])})
    inp = body.get("input")
    if isinstance(inp, str):
        return [*out, {"kind": "message", "role": "user", "parts": _parts(inp)}]
    for item in inp or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            out.append(
                {
                    "kind": "message",
                    "role": _role(item.get("role")),
                    "parts": _parts(item.get("content")),
                }
            )
        elif kind in ("function_call", "custom_tool_call"):
            args = item.get("arguments") if kind == "function_call" else item.get("input")
            out.append(
                {
                    "kind": "tool_call",
                    "id": str(item.get("call_id") or item.get("id") or ""),
                    "name": str(item.get("name", "")),
                    "arguments": args,
                }
            )
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append(
                {
                    "kind": "tool_result",
                    "id": str(item.get("call_id", "")),
                    "content": _cap(_text_of(item.get("output"))),
                }
            )
        else:
            out.append({"kind": "other", "type": str(kind)})
    return out


def _chat_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        if role == "tool":
            out.append(
                {
                    "kind": "tool_result",
                    "id": str(m.get("tool_call_id", "")),
                    "content": _cap(_text_of(m.get("content"))),
                }
            )
            continue
        if m.get("content") not in (None, "", []):
            out.append({"kind": "message", "role": _role(role), "parts": _parts(m.get("content"))})
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append(
                {
                    "kind": "tool_call",
                    "id": str(call.get("id", "")),
                    "name": str(fn.get("name", "")),
                    "arguments": fn.get("arguments"),
                }
            )
        if role == "assistant" and m.get("content") in (None, "", []) and not m.get("tool_calls"):
            out.append({"kind": "message", "role": "assistant", "parts": []})
    return out


def _anthropic_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if body.get("system"):
        out.append({"kind": "message", "role": "system", "parts": _parts(body["system"])})
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        plain = []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                out.append(
                    {
                        "kind": "tool_call",
                        "id": str(b.get("id", "")),
                        "name": str(b.get("name", "")),
                        "arguments": b.get("input"),
                    }
                )
            elif b.get("type") == "tool_result":
                out.append(
                    {
                        "kind": "tool_result",
                        "id": str(b.get("tool_use_id", "")),
                        "content": _cap(_text_of(b.get("content"))),
                    }
                )
            elif b.get("type") in ("thinking", "redacted_thinking"):
                continue
            else:
                plain.append(b)
        if plain:
            out.append({"kind": "message", "role": _role(m.get("role")), "parts": _parts(plain)})
    return out


class RequestLog:
    """Remembers the previous request's items so that each log line holds only new ones."""

    def __init__(self) -> None:
        self._prev: list[str] = []

    def delta(self, items: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
        """(number of leading items equal to the previous request's, the rest)."""
        keys = [hashlib.sha256(json.dumps(i, sort_keys=True).encode()).hexdigest() for i in items]
        n = len(self._prev)
        prefix = n if n <= len(keys) and keys[:n] == self._prev else 0
        self._prev = keys
        return prefix, items[prefix:]


# ---------------------------------------------------------------------------- responses


def _sse_events(text: str) -> list[Any]:
    out = []
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload and payload != "[DONE]":
                try:
                    out.append(json.loads(payload))
                except ValueError:
                    continue
    return out


def response_turn(api: str, body: bytes) -> dict[str, Any] | None:
    """The model's turn in a response body (JSON or SSE); None if nothing parses."""
    text = body.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
        events = None
    except ValueError:
        doc, events = None, _sse_events(text)
        if not events:
            return None
    try:
        if api == "responses":
            return _responses_turn(doc, events)
        if api == "chat":
            return _chat_turn(doc, events)
        if api == "anthropic":
            return _anthropic_turn(doc, events)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        return None
    return None


def _turn() -> dict[str, Any]:
    return {"text": "", "reasoning": "", "tool_calls": [], "model": None, "status": None}


def _responses_output(turn: dict[str, Any], output: list[Any]) -> None:
    texts, reasoning = [], []
    for item in output:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            texts.append(_text_of(item.get("content")))
        elif kind in ("function_call", "custom_tool_call"):
            turn["tool_calls"].append(
                {
                    "id": str(item.get("call_id") or item.get("id") or ""),
                    "name": str(item.get("name", "")),
                    "arguments": item.get("arguments")
                    if kind == "function_call"
                    else {"input": item.get("input")},
                }
            )
        elif kind == "reasoning":
            reasoning.append(_text_of(item.get("summary")) or _text_of(item.get("content")))
    turn["text"] = _cap("\n".join(t for t in texts if t))
    turn["reasoning"] = _cap("\n".join(r for r in reasoning if r))


def _responses_turn(doc: Any, events: list[Any] | None) -> dict[str, Any] | None:
    turn = _turn()
    if doc is not None:
        if not isinstance(doc, dict) or "output" not in doc:
            return None
        turn["model"], turn["status"] = doc.get("model"), doc.get("status")
        _responses_output(turn, doc.get("output") or [])
        return turn
    done_items: list[Any] = []
    final: dict[str, Any] | None = None
    deltas: list[str] = []
    for ev in events or []:
        if not isinstance(ev, dict):
            continue
        kind = ev.get("type", "")
        if kind == "response.output_item.done":
            done_items.append(ev.get("item"))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            final = ev.get("response") or {}
        elif kind == "response.output_text.delta":
            deltas.append(str(ev.get("delta", "")))
    if final is not None:
        turn["model"], turn["status"] = final.get("model"), final.get("status")
    _responses_output(turn, (final or {}).get("output") or done_items)
    if not turn["text"] and not turn["tool_calls"] and deltas:
        turn["text"] = _cap("".join(deltas))
    if final is None and not done_items and not deltas:
        return None
    return turn


def _chat_turn(doc: Any, events: list[Any] | None) -> dict[str, Any] | None:
    turn = _turn()
    if doc is not None:
        if not isinstance(doc, dict) or not doc.get("choices"):
            return None
        choice = doc["choices"][0]
        msg = choice.get("message") or {}
        turn["model"], turn["status"] = doc.get("model"), choice.get("finish_reason")
        turn["text"] = _cap(_text_of(msg.get("content")))
        turn["reasoning"] = _cap(str(msg.get("reasoning_content") or msg.get("reasoning") or ""))
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") or {}
            turn["tool_calls"].append(
                {
                    "id": str(call.get("id", "")),
                    "name": str(fn.get("name", "")),
                    "arguments": fn.get("arguments"),
                }
            )
        return turn
    text, reasoning = [], []
    calls: dict[int, dict[str, Any]] = {}
    seen = False
    for ev in events or []:
        if not isinstance(ev, dict):
            continue
        turn["model"] = ev.get("model") or turn["model"]
        for choice in ev.get("choices") or []:
            seen = True
            delta = choice.get("delta") or {}
            if choice.get("finish_reason"):
                turn["status"] = choice["finish_reason"]
            if isinstance(delta.get("content"), str):
                text.append(delta["content"])
            r = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(r, str):
                reasoning.append(r)
            for tc in delta.get("tool_calls") or []:
                slot = calls.setdefault(
                    int(tc.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                )
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
    if not seen:
        return None
    turn["text"], turn["reasoning"] = _cap("".join(text)), _cap("".join(reasoning))
    turn["tool_calls"] = [calls[i] for i in sorted(calls)]
    return turn


def _anthropic_turn(doc: Any, events: list[Any] | None) -> dict[str, Any] | None:
    turn = _turn()
    blocks: list[dict[str, Any]] = []
    if doc is not None:
        if not isinstance(doc, dict) or "content" not in doc:
            return None
        turn["model"], turn["status"] = doc.get("model"), doc.get("stop_reason")
        blocks = [b for b in doc.get("content") or [] if isinstance(b, dict)]
    else:
        by_index: dict[int, dict[str, Any]] = {}
        for ev in events or []:
            if not isinstance(ev, dict):
                continue
            kind = ev.get("type")
            if kind == "message_start":
                turn["model"] = (ev.get("message") or {}).get("model")
            elif kind == "content_block_start":
                b = dict(ev.get("content_block") or {})
                b["_json"] = ""
                by_index[int(ev.get("index", 0))] = b
            elif kind == "content_block_delta":
                b = by_index.setdefault(int(ev.get("index", 0)), {"type": "text", "_json": ""})
                d = ev.get("delta") or {}
                if d.get("type") == "text_delta":
                    b["text"] = b.get("text", "") + str(d.get("text", ""))
                elif d.get("type") == "thinking_delta":
                    b["thinking"] = b.get("thinking", "") + str(d.get("thinking", ""))
                elif d.get("type") == "input_json_delta":
                    b["_json"] += str(d.get("partial_json", ""))
            elif kind == "message_delta":
                turn["status"] = (ev.get("delta") or {}).get("stop_reason") or turn["status"]
        if not by_index:
            return None
        for i in sorted(by_index):
            b = by_index[i]
            if b.get("type") == "tool_use" and b["_json"]:
                try:
                    b["input"] = json.loads(b["_json"])
                except ValueError:
                    b["input"] = {"partial_json": b["_json"]}
            blocks.append(b)
    text, reasoning = [], []
    for b in blocks:
        if b.get("type") == "text":
            text.append(str(b.get("text", "")))
        elif b.get("type") == "thinking":
            reasoning.append(str(b.get("thinking", "")))
        elif b.get("type") == "tool_use":
            turn["tool_calls"].append(
                {
                    "id": str(b.get("id", "")),
                    "name": str(b.get("name", "")),
                    "arguments": b.get("input"),
                }
            )
    turn["text"], turn["reasoning"] = _cap("".join(text)), _cap("".join(reasoning))
    return turn


def arguments_dict(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict (ATIF wants one): parsed JSON, else {"raw": ...}."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            doc = json.loads(arguments)
        except ValueError:
            return {"raw": _cap(arguments)}
        return doc if isinstance(doc, dict) else {"value": doc}
    if arguments is None:
        return {}
    return {"value": arguments}
