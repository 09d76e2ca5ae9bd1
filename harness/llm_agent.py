"""Built-in agent: a small tool-using loop over an OpenAI-compatible chat completions API.

The loop runs OUTSIDE the sandbox (it needs the model endpoint); every tool call runs
INSIDE the trial's sandbox, which keeps no network. Each command is a fresh sandbox over
the same /root/work and /root/results, so files persist and background processes do not.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from harness.agents import AgentContext, AgentOutcome
from harness.sandbox import DATA, RESULTS, WORK
from harness.usage import ResponseUsage

TOOL_OUTPUT_CAP = 12_000
DEFAULT_COMMAND_TIMEOUT = 600

SYSTEM_PROMPT = """You are solving a mathematical-modeling task on a Linux machine with no \
network. Work with the tools: run_command runs a bash command (cwd {work}; python3 has numpy, \
pandas, scipy, scikit-learn, matplotlib, openpyxl, xlrd), read_file reads a file, \
write_artifact writes your final JSON artifact to {output}. The task's data is read-only \
under {data}. Files you write under {work} and {results} persist between commands; \
processes do not. When the artifact is written, call finish."""

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "run_command",
            "description": "Run a bash command in the sandbox; returns exit code, stdout, stderr.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout_sec": {"type": "integer", "description": "default 600"},
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file in the sandbox (bytes offset..offset+limit).",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer"},
                    "limit": {"type": "integer"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_artifact",
            "description": "Write the final JSON artifact (the full file content).",
            "parameters": {
                "type": "object",
                "properties": {"content": {"type": "string"}},
                "required": ["content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish",
            "description": "Stop: the artifact is written.",
            "parameters": {"type": "object", "properties": {"summary": {"type": "string"}}},
        },
    },
]


class ModelError(RuntimeError):
    """The model endpoint failed after all retries."""


@dataclass
class ChatClient:
    """Minimal OpenAI-compatible client with retries on 429/5xx and connection errors."""

    base_url: str
    api_key: str | None
    max_retries: int = 6
    backoff_s: float = 1.0

    def complete(self, payload: dict[str, Any], *, timeout: float) -> dict[str, Any]:
        url = self.base_url.rstrip("/") + "/chat/completions"
        data = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(self.backoff_s * 2 ** (attempt - 1), 60.0))
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=max(timeout, 1.0)) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}: {exc.read()[:500].decode(errors='replace')}"
                if exc.code not in (408, 409, 429, 500, 502, 503, 504, 529):
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            except ValueError as exc:
                last = f"bad JSON from model endpoint: {exc}"
        raise ModelError(last)


def _clip(text: str, cap: int = TOOL_OUTPUT_CAP) -> str:
    if len(text) <= cap:
        return text
    return text[: cap // 2] + f"\n...[{len(text) - cap} chars omitted]...\n" + text[-cap // 2 :]


class LLMAgent:
    """OpenAI-compatible tool loop. Settings that change behaviour form the entry id."""

    name = "llm"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_turns: int = 60,
        temperature: float | None = None,
        command_timeout: int = DEFAULT_COMMAND_TIMEOUT,
        price_per_mtok: tuple[float, float] | None = None,
        max_retries: int = 6,
    ) -> None:
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self.api_key_env = api_key_env
        self.max_turns = max_turns
        self.temperature = temperature
        self.command_timeout = command_timeout
        self.price = price_per_mtok
        self.max_retries = max_retries

    def settings(self) -> dict[str, Any]:
        return {
            "max_turns": self.max_turns,
            "temperature": self.temperature,
            "command_timeout": self.command_timeout,
        }

    def run(self, ctx: AgentContext) -> AgentOutcome:
        if self.price is not None:
            ctx.totals.price_in_per_mtok, ctx.totals.price_out_per_mtok = self.price
        client = ChatClient(self.base_url, os.environ.get(self.api_key_env), self.max_retries)
        system = SYSTEM_PROMPT.format(
            work=WORK, output=ctx.task.output_path, data=DATA, results=RESULTS
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": ctx.task.instruction},
        ]
        for m in messages:
            ctx.trajectory.add("message", message=m)
        ctx.session  # noqa: B018 - open the sandbox before the first model call
        for turn in range(1, self.max_turns + 1):
            if ctx.remaining() <= 0:
                return AgentOutcome("timeout", "agent time limit reached", turn - 1)
            payload: dict[str, Any] = {
                "model": ctx.model,
                "messages": messages,
                "tools": TOOLS,
                "seed": ctx.seed,
            }
            if self.temperature is not None:
                payload["temperature"] = self.temperature
            start = time.monotonic()
            try:
                resp = client.complete(payload, timeout=min(ctx.remaining(), 600.0))
            except ModelError as exc:
                ctx.trajectory.add("model_error", error=str(exc))
                return AgentOutcome("model_error", str(exc)[:500], turn - 1)
            usage = ResponseUsage()
            usage.absorb_doc({"usage": resp.get("usage") or {}})
            ctx.totals.add(usage)
            try:
                msg = resp["choices"][0]["message"]
            except (KeyError, IndexError, TypeError):
                ctx.trajectory.add("model_error", error="no choices[0].message", response=resp)
                return AgentOutcome("model_error", "response without a message", turn - 1)
            msg = {k: v for k, v in msg.items() if v is not None}
            msg.setdefault("content", "")
            ctx.trajectory.add(
                "message",
                message=msg,
                usage=resp.get("usage"),
                latency_s=round(time.monotonic() - start, 3),
            )
            messages.append(msg)
            calls = msg.get("tool_calls") or []
            if not calls:
                return AgentOutcome("completed", "model stopped calling tools", turn)
            finished = False
            for call in calls:
                fn = call.get("function") or {}
                name = fn.get("name", "")
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                    if not isinstance(args, dict):
                        raise ValueError("arguments must be a JSON object")
                except ValueError as exc:
                    result = f"error: bad arguments: {exc}"
                else:
                    if name == "finish":
                        finished = True
                        result = "ok"
                    else:
                        result = self._tool(ctx, name, args)
                tool_msg = {"role": "tool", "tool_call_id": call.get("id", ""), "content": result}
                ctx.trajectory.add("message", message=tool_msg)
                messages.append(tool_msg)
            if finished:
                return AgentOutcome("completed", "finish called", turn)
        return AgentOutcome("max_turns", f"stopped after {self.max_turns} turns", self.max_turns)

    def _tool(self, ctx: AgentContext, name: str, args: dict[str, Any]) -> str:
        session = ctx.session
        remaining = ctx.remaining()
        if remaining <= 0:
            return "error: agent time limit reached"
        if name == "run_command":
            command = str(args.get("command", ""))
            want = int(args.get("timeout_sec") or self.command_timeout)
            res = session.exec(["/bin/bash", "-c", command], timeout=min(want, remaining))
            ctx.trajectory.command(
                command,
                exit_code=res.exit_code,
                stdout=res.stdout,
                stderr=res.stderr,
                duration_s=res.duration_s,
                timed_out=res.timed_out,
            )
            head = (
                f"timed out after {res.duration_s:.0f}s"
                if res.timed_out
                else f"exit code {res.exit_code}"
            )
            out = res.stdout.decode(errors="replace")
            err = res.stderr.decode(errors="replace")
            return f"{head}\n--- stdout ---\n{_clip(out)}\n--- stderr ---\n{_clip(err)}"
        if name == "read_file":
            path = str(args.get("path", ""))
            offset = max(int(args.get("offset") or 0), 0)
            limit = min(max(int(args.get("limit") or TOOL_OUTPUT_CAP), 1), 100_000)
            script = 'tail -c +"$2" -- "$1" | head -c "$3"'
            argv = ["/bin/sh", "-c", script, "sh", path, str(offset + 1), str(limit)]
            res = session.exec(argv, timeout=min(60.0, remaining))
            ctx.trajectory.command(
                f"read_file {path} [{offset}:{offset + limit}]",
                exit_code=res.exit_code,
                stdout=res.stdout,
                stderr=res.stderr,
                duration_s=res.duration_s,
            )
            if res.exit_code != 0 or res.stderr:
                return f"error: {res.stderr.decode(errors='replace')[:2000]}"
            return res.stdout.decode(errors="replace")
        if name == "write_artifact":
            data = str(args.get("content", "")).encode()
            if len(data) > ctx.artifact_max_bytes:
                return f"error: artifact is {len(data)} bytes, over the {ctx.artifact_max_bytes}-byte limit"
            try:
                json.loads(data)
                valid = "valid JSON"
            except ValueError as exc:
                valid = f"NOT valid JSON ({exc})"
            res = session.write_file(ctx.task.output_path, data, timeout=min(60.0, remaining))
            ctx.trajectory.command(
                f"write_artifact {ctx.task.output_path} ({len(data)} bytes)",
                exit_code=res.exit_code,
                stdout=res.stdout,
                stderr=res.stderr,
                duration_s=res.duration_s,
            )
            if res.exit_code != 0:
                return f"error: {res.stderr.decode(errors='replace')[:2000]}"
            return f"wrote {len(data)} bytes to {ctx.task.output_path}; {valid}"
        return f"error: unknown tool {name!r}"
