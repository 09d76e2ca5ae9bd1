"""Agents: oracle, replay, command (CLI harnesses), llm (built-in loop, see llm_agent.py).

An agent only acts through its `Session` (the sandbox); the runner collects the artifact
from the results folder afterwards and verifies it outside.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.backends import Session
from harness.proxy import FORWARDER_NAME, SANDBOX_DIR, SOCKET_NAME, ModelProxy, Upstream
from harness.sandbox import ABORT, Bind
from harness.trajectory import Trajectory
from harness.usage import UsageTotals


class TaskLike(Protocol):
    """What the harness needs of a task (tbmm.tasks.Task satisfies it)."""

    @property
    def slug(self) -> str: ...
    @property
    def suite(self) -> str: ...
    @property
    def dir(self) -> Path: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def output_path(self) -> str: ...
    @property
    def agent_timeout_sec(self) -> float: ...
    @property
    def cpus(self) -> int: ...
    @property
    def memory_mb(self) -> int: ...
    @property
    def storage_mb(self) -> int: ...
    @property
    def instruction(self) -> str: ...

    def anchor_artifact_bytes(self) -> bytes: ...


@dataclass
class AgentContext:
    """Everything one agent run gets. `deadline` is a time.monotonic() value."""

    task: TaskLike
    seed: int
    model: str | None
    opener: Callable[[tuple[Bind, ...], dict[str, str]], Session]
    deadline: float
    trajectory: Trajectory
    stdout_path: Path
    stderr_path: Path
    artifact_max_bytes: int
    totals: UsageTotals = field(default_factory=UsageTotals)
    _session: Session | None = None

    def remaining(self) -> float:
        """Seconds left for the agent; negative once the sweep is being aborted."""
        if ABORT.is_set():
            return -1.0
        return self.deadline - time.monotonic()

    def open(self, extra: tuple[Bind, ...] = (), env: dict[str, str] | None = None) -> Session:
        """Open the trial's sandbox (once), with extra binds such as a proxy socket dir."""
        if self._session is not None:
            raise RuntimeError("the session is already open")
        self._session = self.opener(extra, dict(env or {}))
        return self._session

    @property
    def results_dir(self) -> Path | None:
        """Host dir behind /root/results, once the sandbox has been opened."""
        return self._session.results_dir if self._session is not None else None

    @property
    def session(self) -> Session:
        return self._session if self._session is not None else self.open()

    def close(self) -> None:
        if self._session is not None:
            self._session.close()


@dataclass
class AgentOutcome:
    """How the agent stopped. exit_reason: completed | timeout | error | max_turns |
    model_error | no_artifact_source."""

    exit_reason: str
    detail: str = ""
    turns: int = 0


class Agent(Protocol):
    name: str

    def settings(self) -> dict[str, Any]:
        """Everything that changes behaviour: part of the entry identity."""
        ...

    def run(self, ctx: AgentContext) -> AgentOutcome: ...


def _write_bytes(ctx: AgentContext, data: bytes, what: str) -> AgentOutcome:
    res = ctx.session.write_file(ctx.task.output_path, data, timeout=max(ctx.remaining(), 5.0))
    ctx.trajectory.command(
        f"write {ctx.task.output_path} ({len(data)} bytes, {what})",
        exit_code=res.exit_code,
        stdout=res.stdout,
        stderr=res.stderr,
        duration_s=res.duration_s,
        timed_out=res.timed_out,
    )
    ctx.stderr_path.write_bytes(res.stderr)
    if res.timed_out:
        return AgentOutcome("timeout", "writing the artifact timed out")
    if res.exit_code != 0:
        return AgentOutcome("error", f"write failed: {res.stderr[-500:].decode(errors='replace')}")
    return AgentOutcome("completed")


class OracleAgent:
    """Writes the task's anchor artifact. The bytes come from the runner (outside); inside
    the sandbox they arrive on stdin only, so the anchor file itself is never visible."""

    name = "oracle"
    uses_model = False  # writes a stored artifact: no model call, so its cost is exactly $0

    def settings(self) -> dict[str, Any]:
        return {}

    def run(self, ctx: AgentContext) -> AgentOutcome:
        return _write_bytes(ctx, ctx.task.anchor_artifact_bytes(), "anchor")


class ReplayAgent:
    """Replays artifacts produced elsewhere. Looks for, in order:
    `<dir>/<slug>/<seed>/<slug>_result.json`, then `<dir>/<slug>_result.json` (all seeds)."""

    name = "replay"

    def __init__(self, source_dir: Path) -> None:
        self.source_dir = Path(source_dir)

    def settings(self) -> dict[str, Any]:
        return {"source": str(self.source_dir.resolve())}

    def find(self, slug: str, seed: int) -> Path | None:
        for cand in (
            self.source_dir / slug / str(seed) / f"{slug}_result.json",
            self.source_dir / f"{slug}_result.json",
        ):
            if cand.is_file():
                return cand
        return None

    def run(self, ctx: AgentContext) -> AgentOutcome:
        path = self.find(ctx.task.slug, ctx.seed)
        if path is None:
            return AgentOutcome("no_artifact_source", f"nothing to replay under {self.source_dir}")
        return _write_bytes(ctx, path.read_bytes(), f"replay of {path}")


@dataclass(frozen=True)
class CommandTemplate:
    """How to run one CLI agent harness. `{model}`, `{instruction}`, `{base_url}`, `{seed}`,
    `{output_path}` are substituted in argv and env values."""

    argv: tuple[str, ...]
    provider: str  # "openai" | "anthropic" | "none"
    env: tuple[tuple[str, str], ...] = ()
    instruction_on_stdin: bool = False
    limit_memory: bool = False  # node-based CLIs reserve far more address space than they use
    files: tuple[tuple[str, str], ...] = ()  # (sandbox path, content) written before the run


OPENCODE_CONFIG = (
    '{"$schema": "https://opencode.ai/config.json", "provider": {"openai": {"options": '
    '{"baseURL": "{base_url}", "apiKey": "tbmm-proxy"}}}}'
)

TEMPLATES: dict[str, CommandTemplate] = {
    "codex": CommandTemplate(
        argv=(
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--model",
            "{model}",
            "-",
        ),
        provider="openai",
        env=(("OPENAI_BASE_URL", "{base_url}"), ("OPENAI_API_KEY", "tbmm-proxy")),
        instruction_on_stdin=True,
    ),
    "claude-code": CommandTemplate(
        argv=(
            "claude",
            "-p",
            "--model",
            "{model}",
            "--dangerously-skip-permissions",
            "--output-format",
            "stream-json",
            "--verbose",
        ),
        provider="anthropic",
        env=(
            ("ANTHROPIC_BASE_URL", "{base_url}"),
            ("ANTHROPIC_API_KEY", "tbmm-proxy"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ),
        instruction_on_stdin=True,
    ),
    "opencode": CommandTemplate(
        argv=("opencode", "run", "--model", "openai/{model}", "{instruction}"),
        provider="openai",
        env=(("OPENCODE_CONFIG", "/tmp/opencode.json"), ("OPENAI_API_KEY", "tbmm-proxy")),
        files=(("/tmp/opencode.json", OPENCODE_CONFIG),),
    ),
}

PROVIDERS: dict[str, tuple[str, str, str, str]] = {
    # provider: (base-url env var, default base url, key env var, auth style)
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1", "OPENAI_API_KEY", "bearer"),
    "anthropic": (
        "ANTHROPIC_BASE_URL",
        "https://api.anthropic.com",
        "ANTHROPIC_API_KEY",
        "x-api-key",
    ),
}

FORWARD_PORT = 18080
_LAUNCH = (
    f"python3 {SANDBOX_DIR}/{FORWARDER_NAME} {FORWARD_PORT} {SANDBOX_DIR}/{SOCKET_NAME} /tmp/.tbmm-fwd-ready >/tmp/.tbmm-fwd.log 2>&1 &\n"
    "i=0; while [ ! -e /tmp/.tbmm-fwd-ready ] && [ $i -lt 200 ]; do i=$((i+1)); sleep 0.05; done\n"
    'exec "$@"'
)


def _fill(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


class CommandAgent:
    """Runs a CLI agent harness inside the sandbox, model traffic through `ModelProxy`.

    API keys are read from the host environment by the proxy; the sandbox gets placeholders.
    A custom harness: `CommandAgent.from_shell("my-agent --task-file ...")` (provider none
    or openai).
    """

    name = "command"

    def __init__(
        self,
        template: str | CommandTemplate,
        *,
        provider_env: Mapping[str, str] | None = None,
        price_per_mtok: tuple[float, float] | None = None,
        label: str | None = None,
    ) -> None:
        if isinstance(template, str):
            if template not in TEMPLATES:
                raise ValueError(f"unknown command template {template!r}: {sorted(TEMPLATES)}")
            self.label = label or template
            template = TEMPLATES[template]
        else:
            self.label = label or "custom"
        self.name = self.label
        self.template = template
        self.provider_env = dict(os.environ if provider_env is None else provider_env)
        self.price = price_per_mtok

    @classmethod
    def from_shell(
        cls,
        command: str,
        *,
        provider: str = "openai",
        provider_env: Mapping[str, str] | None = None,
        label: str = "shell",
    ) -> CommandAgent:
        tpl = CommandTemplate(
            argv=("/bin/sh", "-c", command),
            provider=provider,
            env=(("OPENAI_BASE_URL", "{base_url}"), ("OPENAI_API_KEY", "tbmm-proxy")),
            limit_memory=True,
        )
        return cls(tpl, provider_env=provider_env, label=label)

    def settings(self) -> dict[str, Any]:
        return {"harness": self.label, "argv": list(self.template.argv)}

    def upstream(self) -> Upstream | None:
        if self.template.provider == "none":
            return None
        url_var, default, key_var, auth = PROVIDERS[self.template.provider]
        base = self.provider_env.get(url_var) or default
        return Upstream(
            base_url=base,
            api_key=self.provider_env.get(key_var),
            auth=auth,
            provider=self.template.provider,
        )

    def run(self, ctx: AgentContext) -> AgentOutcome:
        if self.price is not None:
            ctx.totals.price_in_per_mtok, ctx.totals.price_out_per_mtok = self.price
        upstream = self.upstream()
        if upstream is None:
            return self._run(ctx, None)
        with ModelProxy(upstream, trajectory=ctx.trajectory, totals=ctx.totals) as proxy:
            return self._run(ctx, proxy)

    def _run(self, ctx: AgentContext, proxy: ModelProxy | None) -> AgentOutcome:
        tpl = self.template
        base_url = f"http://127.0.0.1:{FORWARD_PORT}"
        if proxy is not None:
            base_url += proxy.upstream.prefix
        values = {
            "model": ctx.model or "",
            "base_url": base_url,
            "seed": str(ctx.seed),
            "output_path": ctx.task.output_path,
            "instruction": ctx.task.instruction,
        }
        argv = [_fill(a, values) for a in tpl.argv]
        env = {k: _fill(v, values) for k, v in tpl.env}
        env["TBMM_SEED"] = str(ctx.seed)
        env["TBMM_OUTPUT_PATH"] = ctx.task.output_path
        files_prelude = ""
        for dest, content in tpl.files:
            files_prelude += (
                f"cat > {shlex.quote(dest)} <<'TBMM_EOF'\n{_fill(content, values)}\nTBMM_EOF\n"
            )
        script = files_prelude + _LAUNCH if proxy is not None else files_prelude + 'exec "$@"'
        full = ["/bin/sh", "-c", script, "sh", *argv]
        stdin = ctx.task.instruction.encode() if tpl.instruction_on_stdin else None
        ctx.trajectory.add("start", argv=argv, env=env)
        extra = (Bind(proxy.dir, SANDBOX_DIR, grant=True),) if proxy is not None else ()
        session = ctx.open(extra)
        res = session.exec(
            full,
            timeout=max(ctx.remaining(), 1.0),
            stdin=stdin,
            env=env,
            stdout_path=ctx.stdout_path,
            stderr_path=ctx.stderr_path,
            limit_memory=tpl.limit_memory,
            capture_limit=64 * 1024,
        )
        ctx.trajectory.command(
            argv,
            exit_code=res.exit_code,
            stdout=res.stdout,
            stderr=res.stderr,
            duration_s=res.duration_s,
            timed_out=res.timed_out,
            note="stdout/stderr here are capped; full text in stdout.txt / stderr.txt",
        )
        if res.timed_out:
            return AgentOutcome("timeout", f"killed after {res.duration_s:.1f}s")
        if res.exit_code != 0:
            return AgentOutcome("error", f"exit code {res.exit_code}")
        return AgentOutcome("completed")
