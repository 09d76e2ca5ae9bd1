"""Trial trajectories in ATIF (Harbor's Agent Trajectory Interchange Format, v1.6).

Each trial keeps its raw event log (`events.jsonl`: every model message of the built-in
agent, every HTTP exchange the proxy relayed, every sandbox command) and, built from it
when the trial ends, `trajectory.json` in ATIF, the format Harbor's viewers and training
pipelines read. The mapping:

* system/developer prompt -> a `system` step; a user message (the task instruction, with its
  figures as image parts when they were sent) -> a `user` step;
* one model response -> one `agent` step: its text as `message`, its reasoning as
  `reasoning_content`, its tool calls as `tool_calls`, token counts and cost as `metrics`
  (`prompt_tokens` includes cached tokens, `cached_tokens` is the cache-read subset);
* a tool result (the llm agent's tool message, or a CLI's `function_call_output` in its
  next request) -> an `observation` result on the agent step that made the call
  (`source_call_id`);
* an agent that calls no model (oracle, replay) -> `agent` steps with `llm_call_count` 0,
  one per sandbox command, the command as a tool call and its output as the observation;
* a CLI agent's own process (exit code, stdout tail), refused or failed model requests,
  harness errors -> `system` steps.

Trial-level facts (tbmm entry, task, seed, backend, exit reason, status, infrastructure
error) go in `extra["tbmm"]`. The output is validated against Harbor's own pydantic models
in the tests (a Harbor install in a separate Python 3.12 environment).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from harness.agents.exchanges import api_of, arguments_dict, request_items, response_turn
from harness.agents.trajectory import read_trajectory

SCHEMA_VERSION = "ATIF-v1.6"
OBS_CAP = 64 * 1024  # observation text kept per result
MEDIA_TYPES = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}


def _iso(started_at: float | None, t: float | None) -> str | None:
    if started_at is None:
        return None
    return datetime.fromtimestamp(started_at + float(t or 0.0), UTC).isoformat()


def _cap(text: str, cap: int = OBS_CAP) -> str:
    if len(text) <= cap:
        return text
    return text[: cap // 2] + f"\n...[{len(text) - cap} chars omitted]...\n" + text[-cap // 2 :]


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """ATIF message content: a plain string, or ContentParts when there are images."""
    if not any(p.get("type") == "image" for p in parts):
        return "\n".join(str(p.get("text", "")) for p in parts)
    out: list[dict[str, Any]] = []
    for p in parts:
        if p.get("type") == "image":
            ref = str(p.get("ref", ""))
            media = MEDIA_TYPES.get(ref.rsplit(".", 1)[-1].lower()) if "." in ref else None
            if media and not ref.startswith("inline "):
                out.append({"type": "image", "source": {"media_type": media, "path": ref}})
            else:  # an inline image whose bytes were not kept: say what it was
                out.append({"type": "text", "text": f"[image: {ref}]"})
        else:
            out.append({"type": "text", "text": str(p.get("text", ""))})
    return out


def _chat_parts(content: Any) -> list[dict[str, Any]]:
    """The llm agent's message content (str or OpenAI parts) as exchange parts."""
    items = request_items("chat", {"messages": [{"role": "user", "content": content}]}) or []
    return items[0]["parts"] if items and items[0].get("kind") == "message" else []


class _Builder:
    def __init__(self, started_at: float | None, model: str | None) -> None:
        self.steps: list[dict[str, Any]] = []
        self.started_at = started_at
        self.model = model
        self.notes: list[str] = []
        self._said: set[str] = set()  # system/user messages already in the trajectory

    def say(self, source: str, message: Any, t: float | None) -> None:
        """A system or user step, once: a CLI that opens a second conversation (a session
        title, a summary) resends the same prompts, which are not new steps."""
        key = json.dumps([source, message], sort_keys=True)
        if key not in self._said:
            self._said.add(key)
            self.add(source, message, t)

    def add(self, source: str, message: Any, t: float | None, **fields: Any) -> dict[str, Any]:
        step: dict[str, Any] = {
            "step_id": len(self.steps) + 1,
            "source": source,
            "message": message,
        }
        ts = _iso(self.started_at, t)
        if ts is not None:
            step["timestamp"] = ts
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        return step

    def agent_turn(
        self, turn: dict[str, Any], t: float | None, metrics: dict[str, Any] | None
    ) -> None:
        calls = [
            {
                "tool_call_id": str(c.get("id") or f"call_{len(self.steps) + 1}_{i}"),
                "function_name": str(c.get("name") or "unknown"),
                "arguments": arguments_dict(c.get("arguments")),
            }
            for i, c in enumerate(turn.get("tool_calls") or [])
        ]
        model = turn.get("model")
        self.add(
            "agent",
            str(turn.get("text") or ""),
            t,
            model_name=model if model and model != self.model else None,
            reasoning_content=turn.get("reasoning") or None,
            tool_calls=calls or None,
            metrics=metrics,
            llm_call_count=1,
        )

    def observe(self, call_id: str, content: str, t: float | None) -> None:
        """Attach a tool result to the agent step that made the call (latest first)."""
        result = {"source_call_id": call_id, "content": _cap(content)}
        for step in reversed(self.steps):
            ids = {c["tool_call_id"] for c in step.get("tool_calls") or []}
            if call_id in ids:
                step.setdefault("observation", {"results": []})["results"].append(result)
                return
        self.add(
            "system",
            "tool result for a call not in this trajectory",
            t,
            observation={"results": [{"content": _cap(content), "extra": {"call_id": call_id}}]},
        )


def _metrics(usage: dict[str, Any] | None, cost: float | None) -> dict[str, Any] | None:
    if not usage and cost is None:
        return None
    usage = usage or {}
    out: dict[str, Any] = {}
    if "input_tokens" in usage or "prompt_tokens" in usage:
        out["prompt_tokens"] = int(usage.get("input_tokens", usage.get("prompt_tokens")) or 0)
    if "output_tokens" in usage or "completion_tokens" in usage:
        out["completion_tokens"] = int(
            usage.get("output_tokens", usage.get("completion_tokens")) or 0
        )
    cached = usage.get("cached_tokens")
    if cached is None:
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is not None:
        out["cached_tokens"] = int(cached)
    if usage.get("cache_write_tokens"):
        out["extra"] = {"cache_write_tokens": int(usage["cache_write_tokens"])}
    if cost is not None:
        out["cost_usd"] = float(cost)
    return out or None


def _http(b: _Builder, ev: dict[str, Any]) -> None:
    t = ev.get("t")
    api = ev.get("api") or api_of(str(ev.get("path", "")))
    items = ev.get("items")
    if items is None and api is not None and isinstance(ev.get("request"), str):
        # a log from before exchanges were parsed at relay time: parse the raw request
        try:
            items = request_items(api, json.loads(ev["request"]))
        except ValueError:
            b.notes.append(f"request at t={t} was clipped in the raw log; its messages are missing")
        if items is not None and b.steps:
            items = _new_since_last_agent(items)
    for item in items or []:
        kind = item.get("kind")
        if kind == "message":
            role = item.get("role")
            if role == "assistant":
                if ev.get("prefix", 0) == 0 and not any(s["source"] == "agent" for s in b.steps):
                    b.add(
                        "agent",
                        _content(item.get("parts") or []),
                        t,
                        llm_call_count=0,
                        extra={"from_request_history": True},
                    )
                continue
            b.say("system" if role == "system" else "user", _content(item.get("parts") or []), t)
        elif kind == "tool_result":
            b.observe(str(item.get("id", "")), str(item.get("content", "")), t)
    status = int(ev.get("status") or 0)
    turn = ev.get("turn")
    if turn is None and status < 400 and api is not None and isinstance(ev.get("response"), str):
        turn = response_turn(api, ev["response"].encode())
    if status >= 400 or turn is None:
        why = ev.get("error") or str(ev.get("response", ""))[:2000]
        b.add(
            "system",
            f"model request {ev.get('method', 'POST')} {ev.get('path')} -> HTTP {status}: {why}",
            t,
            extra={"retries": ev.get("retries")},
        )
        return
    b.agent_turn(turn, t, _metrics(ev.get("usage"), ev.get("cost_usd")))


def _new_since_last_agent(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For an old raw log (full requests): the items after the last assistant item."""
    last = max(
        (
            i
            for i, it in enumerate(items)
            if it.get("kind") == "tool_call" or it.get("role") == "assistant"
        ),
        default=-1,
    )
    return items[last + 1 :]


def _llm_message(b: _Builder, ev: dict[str, Any]) -> None:
    msg = ev.get("message") or {}
    t = ev.get("t")
    role = msg.get("role")
    if role in ("system", "developer"):
        b.add("system", _content(_chat_parts(msg.get("content"))), t)
    elif role == "user":
        b.add("user", _content(_chat_parts(msg.get("content"))), t)
    elif role == "assistant":
        turn = {
            "text": msg.get("content") if isinstance(msg.get("content"), str) else "",
            "reasoning": msg.get("reasoning_content") or msg.get("reasoning") or "",
            "tool_calls": [
                {
                    "id": c.get("id"),
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments"),
                }
                for c in msg.get("tool_calls") or []
            ],
            "model": None,
        }
        from harness.agents.usage import ResponseUsage

        usage = ResponseUsage()
        usage.absorb_doc({"usage": ev.get("usage") or {}})
        b.agent_turn(
            turn, t, _metrics(usage.as_dict() if ev.get("usage") else None, ev.get("cost_usd"))
        )
    elif role == "tool":
        b.observe(str(msg.get("tool_call_id", "")), str(msg.get("content", "")), t)


def _command_text(ev: dict[str, Any]) -> str:
    head = "timed out" if ev.get("timed_out") else f"exit code {ev.get('exit_code')}"
    out = [head, f"duration {ev.get('duration_s')} s"]
    if ev.get("stdout"):
        out.append("--- stdout ---\n" + _cap(str(ev["stdout"])))
    if ev.get("stderr"):
        out.append("--- stderr ---\n" + _cap(str(ev["stderr"])))
    return "\n".join(out)


def build(
    events: Iterable[dict[str, Any]],
    *,
    agent_name: str,
    agent_version: str,
    model: str | None,
    session_id: str,
    started_at: float | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An ATIF trajectory (a JSON-ready dict) from a trial's raw events."""
    events = list(events)
    b = _Builder(started_at, model)
    uses_model = any(e.get("type") in ("http", "message") for e in events)
    cli = any(e.get("type") == "start" for e in events)
    trial: dict[str, Any] = {}
    end: dict[str, Any] = {}
    for ev in events:
        kind = ev.get("type")
        t = ev.get("t")
        if kind == "trial":
            trial = {k: v for k, v in ev.items() if k not in ("t", "type")}
        elif kind == "end":
            end = {k: v for k, v in ev.items() if k not in ("t", "type")}
        elif kind == "message":
            _llm_message(b, ev)
        elif kind == "http":
            _http(b, ev)
        elif kind == "http_refused":
            b.add(
                "system",
                f"the model proxy refused {ev.get('method')} {ev.get('path')}: HTTP {ev.get('status')} {ev.get('error')}",
                t,
            )
        elif kind == "command":
            argv = ev.get("argv")
            shown = argv if isinstance(argv, str) else " ".join(map(str, argv or []))
            if cli:
                b.add(
                    "system", f"agent process `{_cap(shown, 2000)}` ended: {_command_text(ev)}", t
                )
            elif not uses_model:
                call_id = f"cmd_{len(b.steps) + 1}"
                b.add(
                    "agent",
                    "",
                    t,
                    tool_calls=[
                        {
                            "tool_call_id": call_id,
                            "function_name": "sandbox_command",
                            "arguments": {"command": shown},
                        }
                    ],
                    observation={
                        "results": [{"source_call_id": call_id, "content": _command_text(ev)}]
                    },
                    llm_call_count=0,
                )
        elif kind == "endpoint_probe":
            b.add(
                "system",
                f"the harness probed the model endpoint after an upstream rejection "
                f"({_cap(str(ev.get('rejected') or ''), 2000)}): "
                f"{_cap(str(ev.get('finding') or ''), 2000)}",
                t,
            )
        elif kind in ("model_error", "harness_error", "infra_error", "budget_exceeded"):
            b.add(
                "system",
                f"{kind}: {_cap(str(ev.get('error') or ev.get('traceback') or ev.get('cause') or ''), 8000)}",
                t,
            )
    if not b.steps:
        b.add(
            "system",
            f"no agent activity was recorded ({end.get('detail') or end.get('exit_reason') or 'no events'})",
            None,
        )
    metrics = [s.get("metrics") or {} for s in b.steps]
    costs = [m.get("cost_usd") for m in metrics if m]
    final: dict[str, Any] = {
        "total_prompt_tokens": sum(int(m.get("prompt_tokens") or 0) for m in metrics),
        "total_completion_tokens": sum(int(m.get("completion_tokens") or 0) for m in metrics),
        "total_cached_tokens": sum(int(m.get("cached_tokens") or 0) for m in metrics),
        "total_steps": len(b.steps),
    }
    if costs and all(c is not None for c in costs):
        final["total_cost_usd"] = float(sum(costs))
    elif not uses_model:
        final["total_cost_usd"] = 0.0
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": session_id,
        "agent": {
            "name": agent_name,
            "version": agent_version,
            **({"model_name": model} if model else {}),
        },
        "steps": b.steps,
        "final_metrics": final,
        "extra": {"tbmm": {**trial, **{f"end_{k}": v for k, v in end.items()}, **(extra or {})}},
    }
    if b.notes:
        doc["notes"] = "; ".join(b.notes)
    return doc


def write_trajectory(
    events_path: Path,
    out_path: Path,
    **kw: Any,
) -> dict[str, Any]:
    """Build the ATIF trajectory of one trial from its raw events file and write it."""
    doc = build(read_trajectory(events_path) if events_path.is_file() else [], **kw)
    tmp = out_path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out_path)
    return doc
