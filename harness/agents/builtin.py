"""Built-in agent: a small tool-using loop over a model API, in one of three styles.

The model is reached through a route of the provider table (harness.agents.providers: base URL,
key variable, API style) and spoken to with harness.agents.model_api (httpx, retried with
tenacity): OpenAI Chat Completions, OpenAI Responses or Anthropic Messages. The loop runs
OUTSIDE the sandbox (it needs the model endpoint); every tool call runs
INSIDE the trial's sandbox, which keeps no network. Each command is a fresh sandbox over
the same /root/work and /root/results, so files persist and background processes do not.

With `vision`, the statement's figures (the `![caption](/root/data/figures/...)` references
of the instruction) are sent as image parts right after their reference, as data URIs read
from the task's data folder (the files the agent can read anyway). `tbmm run` turns it on
when the model's row in the model table declares `vision = true` (harness.agents.model_table), or
with `--vision`; the trajectory records the images by their sandbox path, not their bytes.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.agents.model_api import BadResponse, ModelClient, ModelError, conversation
from harness.agents.preflight import check_endpoint, probe_endpoint
from harness.agents.providers import ModelRoute, bare_route
from harness.agents.proxy import Upstream
from harness.agents.registry import AgentContext, AgentOutcome, Opener
from harness.agents.usage import ResponseUsage, TrialCaps
from harness.sandbox.bwrap import DATA, RESULTS, WORK

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


def _clip(text: str, cap: int = TOOL_OUTPUT_CAP) -> str:
    if len(text) <= cap:
        return text
    return text[: cap // 2] + f"\n...[{len(text) - cap} chars omitted]...\n" + text[-cap // 2 :]


FIGURE_REF = re.compile(r"!\[([^\]]*)\]\((/root/data/[^)\s]+\.(png|jpe?g|gif|webp))\)", re.I)
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGES = 32
_MEDIA = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
}


def instruction_content(
    instruction: str, data_dir: Path, *, inline: bool
) -> tuple[list[dict[str, Any]], int]:
    """The instruction as OpenAI content parts with each referenced figure as an image
    part after its reference, and how many images were attached. `inline`: data URIs (what
    is sent); else the sandbox path (what the trajectory records). A reference outside the
    data folder, missing, or over MAX_IMAGE_BYTES stays text only."""
    parts: list[dict[str, Any]] = []
    pos = n = 0
    root = data_dir.resolve()
    for m in FIGURE_REF.finditer(instruction):
        parts.append({"type": "text", "text": instruction[pos : m.end()]})
        pos = m.end()
        if n >= MAX_IMAGES:
            continue
        rel = m.group(2)[len(DATA) + 1 :]
        host = (root / rel).resolve()
        if root not in host.parents or not host.is_file() or host.stat().st_size > MAX_IMAGE_BYTES:
            continue
        media = _MEDIA[m.group(3).lower()]
        url = (
            f"data:{media};base64,{base64.b64encode(host.read_bytes()).decode('ascii')}"
            if inline
            else m.group(2)
        )
        parts.append({"type": "image_url", "image_url": {"url": url}})
        n += 1
    if pos < len(instruction):
        parts.append({"type": "text", "text": instruction[pos:]})
    return parts, n


class LLMAgent:
    """Tool loop over the route's API style. Settings that change behaviour form the entry
    id (the API style only when it is not Chat Completions, so older entries keep theirs)."""

    name = "llm"
    atif_name = "tbmm-llm"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_turns: int = 60,
        temperature: float | None = None,
        command_timeout: int = DEFAULT_COMMAND_TIMEOUT,
        max_retries: int = 6,
        vision: bool = False,
        caps: TrialCaps | None = None,
        route: ModelRoute | None = None,
        backoff_s: float = 1.0,
        max_output_tokens: int | None = None,
    ) -> None:
        self.caps = caps or TrialCaps()
        # without a route (a bare model name, or a caller that predates routes): an
        # OpenAI-compatible server, as before
        self.route = route or bare_route("", base_url=base_url, api_key_env=api_key_env)
        self.base_url = self.route.base_url
        self.api_key_env = self.route.key_env
        self.max_turns = max_turns
        self.temperature = temperature
        self.command_timeout = command_timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.vision = vision
        self.max_output_tokens = max_output_tokens

    @property
    def api(self) -> str:
        return self.route.api

    def api_model(self, model: str | None) -> str | None:
        """The model name the requests carry for the entry's `model` (the route's name when
        the entry's model is the route's label, e.g. openai/gpt-5 -> gpt-5)."""
        return self.route.name if model == self.route.label else model

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "max_turns": self.max_turns,
            "temperature": self.temperature,
            "command_timeout": self.command_timeout,
        }
        if self.vision:  # only when on: entries run before the option keep their id
            out["vision"] = True
        if self.caps.settings():  # likewise
            out["caps"] = self.caps.settings()
        if self.api != "chat":  # likewise
            out["api"] = self.api
        if self.max_output_tokens is not None:  # likewise
            out["max_output_tokens"] = self.max_output_tokens
        return out

    def _client(self) -> ModelClient:
        return ModelClient(
            self.base_url,
            self.route.api_key(),
            self.api,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
        )

    def _upstream(self) -> Upstream:
        return Upstream(self.base_url, self.route.api_key(), self.route.auth, self.route.family)

    def preflight(self, open_session: Opener, model: str | None = None) -> list[str]:
        """The model endpoint answers (does not reject the key, knows the model) before any
        trial."""
        why = check_endpoint(self._upstream(), model=self.api_model(model))
        return [why] if why else []

    def probe(self, model: str | None, paths: Sequence[str] = ()) -> str | None:
        """The harness's own requests to the endpoint, before a rejection is infrastructure."""
        return probe_endpoint(self._upstream(), self.api_model(model), paths)

    def run(self, ctx: AgentContext) -> AgentOutcome:
        client = self._client()
        try:
            return self._loop(ctx, client)
        finally:
            client.close()

    def _loop(self, ctx: AgentContext, client: ModelClient) -> AgentOutcome:
        model = self.api_model(ctx.model)
        system = SYSTEM_PROMPT.format(
            work=WORK, output=ctx.task.output_path, data=DATA, results=RESULTS
        )
        user: str | list[dict[str, Any]] = ctx.task.instruction
        logged_user: str | list[dict[str, Any]] = user
        if self.vision:
            data_dir = Path(ctx.task.data_dir)
            parts, n = instruction_content(ctx.task.instruction, data_dir, inline=True)
            if n:
                user = parts
                logged_user = instruction_content(ctx.task.instruction, data_dir, inline=False)[0]
        talk = conversation(self.api, system, user, self.max_output_tokens)
        ctx.trajectory.add("message", message={"role": "system", "content": system})
        ctx.trajectory.add("message", message={"role": "user", "content": logged_user})
        ctx.session  # noqa: B018 - open the sandbox before the first model call
        for turn in range(1, self.max_turns + 1):
            if ctx.remaining() <= 0:
                return AgentOutcome("timeout", "agent time limit reached", turn - 1)
            spent = self.caps.spent(ctx.totals, turn - 1)
            if spent is not None:
                ctx.trajectory.add("budget_exceeded", cause=spent)
                return AgentOutcome("budget_exceeded", spent, turn - 1)
            payload = talk.payload(model or "", TOOLS, seed=ctx.seed, temperature=self.temperature)
            start = time.monotonic()
            try:
                resp = client.post(payload, timeout=min(ctx.remaining(), 600.0))
            except ModelError as exc:
                ctx.trajectory.add("model_error", error=str(exc), infra=exc.infra, api=self.api)
                return AgentOutcome(
                    "model_error",
                    str(exc)[:500],
                    turn - 1,
                    infra=f"{exc.infra}: {str(exc)[:300]}" if exc.infra else None,
                    rejected_paths=(client.path,) if exc.infra == "endpoint_rejected" else (),
                )
            usage = ResponseUsage()
            usage.absorb_doc({"usage": resp.get("usage") or {}})
            cost = ctx.totals.add(usage)
            try:
                got = talk.take(resp)
            except BadResponse as exc:
                ctx.trajectory.add("model_error", error=str(exc), response=resp, api=self.api)
                return AgentOutcome("model_error", f"response without a message ({exc})", turn - 1)
            ctx.trajectory.add(
                "message",
                message=got.message,
                usage=resp.get("usage"),
                cost_usd=cost,
                model=resp.get("model"),
                api=self.api,
                latency_s=round(time.monotonic() - start, 3),
            )
            if not got.calls:
                return AgentOutcome("completed", "model stopped calling tools", turn)
            finished = False
            results: list[tuple[str, str]] = []
            for call_id, name, raw in got.calls:
                try:
                    args = json.loads(raw or "{}")
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
                tool_msg = {"role": "tool", "tool_call_id": call_id, "content": result}
                ctx.trajectory.add("message", message=tool_msg)
                results.append((call_id, result))
            talk.results(results)
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
