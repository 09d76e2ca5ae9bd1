"""Agents: oracle, replay, command (CLI harnesses), llm (built-in loop, see llm_agent.py).

An agent only acts through its `Session` (the sandbox); the runner collects the artifact
from the results folder afterwards and verifies it outside.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.agents import installed as cli_agents
from harness.agents.errors import InfraError
from harness.agents.preflight import check_endpoint, probe_endpoint
from harness.agents.proxy import (
    FORWARDER_MAX_CONNECTIONS,
    FORWARDER_NAME,
    SANDBOX_DIR,
    SOCKET_NAME,
    ModelProxy,
    Upstream,
)
from harness.agents.trajectory import Trajectory
from harness.agents.usage import TrialCaps, UsageTotals
from harness.sandbox.backends import Session
from harness.sandbox.bwrap import ABORT, Bind


class TaskLike(Protocol):
    """What the harness needs of a task (tbmm.suite.tasks.Task satisfies it)."""

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
    model_error | budget_exceeded (a per-trial cap of the proxy) | no_artifact_source | harness_error | agent_request_rejected (set by the
    runner: an upstream rejection its own probe did not confirm). `infra` = "<kind>:
    <detail>" when the infrastructure failed (harness.agents.errors): the trial is then `error`,
    not a score."""

    exit_reason: str
    detail: str = ""
    turns: int = 0
    infra: str | None = None
    rejected_paths: tuple[str, ...] = ()  # upstream paths that answered 401/403/404


class Agent(Protocol):
    """An agent. Optional attributes the runner reads: `uses_model` (False: costs $0),
    `cost_known` (False: the cost was paid elsewhere, unknown here),
    `version` and `atif_name` (for the trajectory), `check_config(tasks, seeds) ->
    [problems]` (configuration refused before anything is opened or stored),
    `preflight(open_session, model) -> [problems]` (checks before the sweep;
    `open_session(extra_binds, env)` opens a sandbox like a trial's), `probe(model) ->
    problem | None` (the harness's own request to the model endpoint, made before an upstream
    rejection of the agent's request is called an infrastructure error)."""

    name: str

    def settings(self) -> dict[str, Any]:
        """Everything that changes behaviour: part of the entry identity."""
        ...

    def run(self, ctx: AgentContext) -> AgentOutcome: ...


Opener = Callable[..., Session]


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
    cost_known = False  # the artifacts were produced elsewhere: what they cost is unknown here

    def __init__(self, source_dir: Path, *, allow_missing: bool = False) -> None:
        self.source_dir = Path(source_dir)
        self.allow_missing = allow_missing  # which trials may lack a source, not how they run

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

    def check_config(self, tasks: Sequence[TaskLike], seeds: Sequence[int]) -> list[str]:
        """The folder exists and is readable, and holds a readable artifact for every
        selected (task, seed) (with `allow_missing`, for at least one of them: the others
        are scored as missing artifacts). A configuration mistake is refused before any
        trial, never stored as a row of zeros."""
        d = self.source_dir
        if not d.exists():
            return [f"--replay-dir {d}: no such folder"]
        if not d.is_dir():
            return [f"--replay-dir {d}: not a folder"]
        try:
            next(os.scandir(d), None)
        except OSError as exc:
            return [f"--replay-dir {d}: unreadable ({exc.strerror})"]
        problems: list[str] = []
        absent: list[str] = []
        found = 0
        for task in tasks:
            for seed in seeds:
                path = self.find(task.slug, seed)
                if path is None:
                    absent.append(f"{task.slug} seed {seed}")
                    continue
                found += 1
                try:
                    with open(path, "rb") as fh:
                        fh.read(1)
                except OSError as exc:
                    problems.append(f"{path}: unreadable ({exc.strerror})")
        if absent and (not self.allow_missing or not found):
            shown = ", ".join(absent[:10]) + (
                f" (+{len(absent) - 10} more)" if len(absent) > 10 else ""
            )
            problems.append(
                f"--replay-dir {d} has no artifact (<slug>/<seed>/<slug>_result.json or "
                f"<slug>_result.json) for {len(absent)} of {len(absent) + found} selected "
                f"trial(s): {shown}"
                + ("" if self.allow_missing else "; --replay-allow-missing scores those as missing")
            )
        return problems

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
    package: str | None = None  # key of harness.agents.installed.PACKAGES: installed and bound


OPENCODE_CONFIG = (
    '{"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled", '
    '"model": "openai/{model}", "small_model": "openai/{model}", '
    '"provider": {"openai": {"options": {"baseURL": "{base_url}", "apiKey": "tbmm-proxy"}, '
    '"models": {"{model}": {"name": "{model}"}}}}}'
)

# codex >= 0.16x reads neither OPENAI_BASE_URL for its built-in provider nor a chat
# wire API: a custom provider speaking the Responses API (streamed, SSE) is the way to
# point it at our proxy. Its own sandbox (landlock/seccomp, nested namespaces) cannot work
# inside ours (nested user namespaces are disabled) and is redundant: it is bypassed.
CODEX_PROVIDER = (
    "-c",
    "model_provider=tbmm",
    "-c",
    "model_providers.tbmm.name=tbmm-proxy",
    "-c",
    "model_providers.tbmm.base_url={base_url}",
    "-c",
    "model_providers.tbmm.env_key=OPENAI_API_KEY",
    "-c",
    "model_providers.tbmm.wire_api=responses",
    "-c",
    "model_providers.tbmm.request_max_retries=0",  # the proxy retries
    "-c",
    "model_providers.tbmm.stream_max_retries=0",
    "-c",
    'web_search="disabled"',  # else a provider-side (live, with its sandbox bypassed) search
)

TEMPLATES: dict[str, CommandTemplate] = {
    "codex": CommandTemplate(
        argv=(
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--json",
            "--model",
            "{model}",
            *CODEX_PROVIDER,
            "-",
        ),
        provider="openai",
        env=(("OPENAI_API_KEY", "tbmm-proxy"),),
        instruction_on_stdin=True,
        package="codex",
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
            # every model claude-code may pick by itself (background "small fast" calls,
            # subagents, aliases) is the entry's model: the proxy refuses any other
            ("ANTHROPIC_MODEL", "{model}"),
            ("ANTHROPIC_SMALL_FAST_MODEL", "{model}"),
            ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "{model}"),
            ("ANTHROPIC_DEFAULT_SONNET_MODEL", "{model}"),
            ("ANTHROPIC_DEFAULT_OPUS_MODEL", "{model}"),
            ("CLAUDE_CODE_SUBAGENT_MODEL", "{model}"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ),
        instruction_on_stdin=True,
        package="claude-code",
    ),
    "opencode": CommandTemplate(
        argv=("opencode", "run", "--model", "openai/{model}", "{instruction}"),
        provider="openai",
        env=(("OPENCODE_CONFIG", "/tmp/opencode.json"), ("OPENAI_API_KEY", "tbmm-proxy")),
        files=(("/tmp/opencode.json", OPENCODE_CONFIG),),
        package="opencode",
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
FORWARDER_FAILED = 125  # exit code of the launcher when the in-sandbox forwarder never started
FORWARDER_MARK = "tbmm: the model forwarder did not start"
_LAUNCH = (
    f"python3 {SANDBOX_DIR}/{FORWARDER_NAME} {FORWARD_PORT} {SANDBOX_DIR}/{SOCKET_NAME} /tmp/.tbmm-fwd-ready {FORWARDER_MAX_CONNECTIONS} >/tmp/.tbmm-fwd.log 2>&1 &\n"
    "i=0; while [ ! -e /tmp/.tbmm-fwd-ready ] && [ $i -lt 400 ]; do i=$((i+1)); sleep 0.05; done\n"
    f'if [ ! -e /tmp/.tbmm-fwd-ready ]; then echo "{FORWARDER_MARK}:" >&2; '
    f"cat /tmp/.tbmm-fwd.log >&2; exit {FORWARDER_FAILED}; fi\n"
    'exec "$@"'
)
BINARY_MISSING = 127  # the shell's "command not found"
BINARY_NOT_EXECUTABLE = 126


def _fill(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


class CommandAgent:
    """Runs a CLI agent harness inside the sandbox, model traffic through `ModelProxy`.

    API keys are read from the host environment by the proxy; the sandbox gets placeholders.
    A template with a `package` runs the pinned install from harness.agents.installed (bound
    read-only, first on PATH) when there is one, else whatever the host has under /usr.
    A custom harness: `CommandAgent.from_shell("my-agent --task-file ...")` (provider none
    or openai).
    """

    name = "command"

    def __init__(
        self,
        template: str | CommandTemplate,
        *,
        provider_env: Mapping[str, str] | None = None,
        label: str | None = None,
        max_retries: int = 6,
        backoff_s: float = 1.0,
        caps: TrialCaps | None = None,
        route: Any = None,
    ) -> None:
        self.caps = caps or TrialCaps()
        # a harness.agents.providers.ModelRoute (`--model PROVIDER/NAME`): the endpoint and key the
        # proxy uses instead of the provider's environment variables
        self.route = route
        if isinstance(template, str):
            if template not in TEMPLATES:
                raise ValueError(f"unknown command template {template!r}: {sorted(TEMPLATES)}")
            self.label = label or template
            template = TEMPLATES[template]
        else:
            self.label = label or "custom"
        self.name = self.label
        self.atif_name = self.label
        self.template = template
        self.provider_env = dict(os.environ if provider_env is None else provider_env)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.package = cli_agents.PACKAGES.get(template.package) if template.package else None
        self.version = self.package.version if self.package is not None else None

    @classmethod
    def from_shell(
        cls,
        command: str,
        *,
        provider: str = "openai",
        provider_env: Mapping[str, str] | None = None,
        label: str = "shell",
        **kw: Any,
    ) -> CommandAgent:
        env = {
            "openai": (("OPENAI_BASE_URL", "{base_url}"), ("OPENAI_API_KEY", "tbmm-proxy")),
            "anthropic": (
                ("ANTHROPIC_BASE_URL", "{base_url}"),
                ("ANTHROPIC_API_KEY", "tbmm-proxy"),
            ),
            "none": (),
        }[provider]
        tpl = CommandTemplate(
            argv=("/bin/sh", "-c", command), provider=provider, env=env, limit_memory=True
        )
        return cls(tpl, provider_env=provider_env, label=label, **kw)

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {"harness": self.label, "argv": list(self.template.argv)}
        if self.package is not None:
            out["package"] = self.package.spec
        if self.caps.settings():  # only when set: entries run without caps keep their id
            out["caps"] = self.caps.settings()
        return out

    def upstream(self) -> Upstream | None:
        if self.template.provider == "none":
            return None
        if self.route is not None and self.route.family == self.template.provider:
            return Upstream(
                base_url=self.route.base_url,
                api_key=self.route.api_key(self.provider_env),
                auth=self.route.auth,
                provider=self.route.family,
            )
        url_var, default, key_var, auth = PROVIDERS[self.template.provider]
        base = self.provider_env.get(url_var) or default
        return Upstream(
            base_url=base,
            api_key=self.provider_env.get(key_var),
            auth=auth,
            provider=self.template.provider,
        )

    # -- the program: where it is, and how the sandbox sees it ---------------------------
    def _install(self) -> Path | None:
        """The managed install dir if the pinned package is installed there."""
        if self.package is not None and cli_agents.is_installed(self.package):
            return cli_agents.install_dir(self.package)
        return None

    def _binds_path(self) -> tuple[tuple[Bind, ...], str]:
        """Binds for the pinned install, and a shell line putting it first on PATH (the
        sandbox's PATH keeps the agent venv, so the CLI's commands get its python)."""
        install = self._install()
        if install is None:
            return (), ""
        bin_dir = install / "node_modules" / ".bin"
        return (
            Bind(install, str(install)),
        ), f'PATH={shlex.quote(str(bin_dir))}:"$PATH"; export PATH\n'

    def probe(self, model: str | None, paths: Sequence[str] = ()) -> str | None:
        """The harness's own requests to the endpoint (key and the entry's model, then a
        minimal request to each path the agent was refused on): None if they pass. Strict:
        a probe that does not get through vouches for nothing."""
        upstream = self.upstream()
        if upstream is None:
            return "no model endpoint to probe"
        return probe_endpoint(upstream, model, paths)

    def preflight(self, open_session: Opener, model: str | None = None) -> list[str]:
        """The endpoint answers (and knows the model) and the program runs inside a sandbox
        like the trials'."""
        problems: list[str] = []
        upstream = self.upstream()
        if upstream is not None:
            why = check_endpoint(upstream, model=model)
            if why:
                problems.append(why)
        program = self.template.argv[0]
        if program.startswith("/") or "{" in program:
            return problems
        binds, path_line = self._binds_path()
        session = open_session(binds)
        res = session.exec(
            [
                "/bin/sh",
                "-c",
                path_line + 'command -v "$1" >/dev/null || exit 127; "$1" --version',
                "sh",
                program,
            ],
            timeout=60.0,
            limit_memory=False,
        )
        out = (res.stdout + res.stderr).decode(errors="replace").strip()
        if res.exit_code != 0 or res.timed_out:
            where = (
                f"the pinned install {cli_agents.install_dir(self.package)}"
                if self._install() is not None and self.package is not None
                else "PATH (/usr/local/bin:/usr/bin:/bin)"
            )
            hint = (
                f"; install it with `tbmm agents install {self.package.name}`"
                if self.package is not None and self._install() is None
                else ""
            )
            problems.append(
                f"binary_missing: `{program} --version` failed inside the sandbox "
                f"(exit {res.exit_code}{', timed out' if res.timed_out else ''}; looked in "
                f"{where}){hint}: {out[-500:]}"
            )
        elif self.package is not None and self._install() is None:
            self.version = out.splitlines()[-1][:100] if out else None  # unpinned host install
        return problems

    def run(self, ctx: AgentContext) -> AgentOutcome:
        upstream = self.upstream()
        if upstream is None:
            return self._run(ctx, None)
        try:
            proxy = ModelProxy(
                upstream,
                trajectory=ctx.trajectory,
                totals=ctx.totals,
                max_retries=self.max_retries,
                backoff_s=self.backoff_s,
                model=ctx.model,
                caps=self.caps,
            )
        except OSError as exc:
            raise InfraError("proxy_failure", f"the model proxy could not start: {exc}") from exc
        with proxy:
            outcome = self._run(ctx, proxy)
        if proxy.stopped is not None:
            # The agent asked for more than its budget: its run was ended, its own failure.
            outcome = AgentOutcome("budget_exceeded", proxy.stopped, outcome.turns, outcome.infra)
        if proxy.refusals:
            n = len(proxy.refusals)
            note = f"{n} request(s) refused by the proxy's pin, first: {proxy.refusals[0]}"
            outcome.detail = "; ".join(x for x in (outcome.detail, note[:500]) if x)
        if proxy.failures and outcome.infra is None:
            # an unreachable or overloaded endpoint outranks a rejection (which the runner
            # checks with its own probe before it calls it infrastructure)
            worst = [f for f in proxy.failures if f.kind != "endpoint_rejected"]
            first = (worst or proxy.failures)[0]
            more = f" (+{len(proxy.failures) - 1} more)" if len(proxy.failures) > 1 else ""
            outcome.infra = first.cause + more
            outcome.rejected_paths = tuple(
                dict.fromkeys(
                    f.path for f in proxy.failures if f.kind == "endpoint_rejected" and f.path
                )
            )
        return outcome

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
        binds, path_line = self._binds_path()
        files_prelude = path_line
        for dest, content in tpl.files:
            files_prelude += (
                f"cat > {shlex.quote(dest)} <<'TBMM_EOF'\n{_fill(content, values)}\nTBMM_EOF\n"
            )
        script = files_prelude + _LAUNCH if proxy is not None else files_prelude + 'exec "$@"'
        full = ["/bin/sh", "-c", script, "sh", *argv]
        stdin = ctx.task.instruction.encode() if tpl.instruction_on_stdin else None
        ctx.trajectory.add("start", argv=argv, env=env, version=self.version)
        extra = binds + ((Bind(proxy.dir, SANDBOX_DIR, grant=True),) if proxy is not None else ())
        session = ctx.open(extra)
        if proxy is not None:
            stop = getattr(session, "stop", None)  # ends the run when the budget is spent
            proxy.on_stop = stop
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
        err_tail = res.stderr[-2000:].decode(errors="replace")
        if res.exit_code == FORWARDER_FAILED and FORWARDER_MARK in err_tail:
            return AgentOutcome("error", err_tail[-500:], infra=f"proxy_failure: {err_tail[-300:]}")
        if res.exit_code in (BINARY_MISSING, BINARY_NOT_EXECUTABLE) and argv[0] != "/bin/sh":
            return AgentOutcome(
                "error",
                f"exit code {res.exit_code}",
                infra=f"binary_missing: {argv[0]} exited {res.exit_code}: {err_tail[-300:]}",
            )
        if res.exit_code != 0:
            return AgentOutcome("error", f"exit code {res.exit_code}")
        return AgentOutcome("completed")
