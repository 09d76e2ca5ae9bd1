"""Backend choice and the interface agents program against (sandbox and docker alike)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from harness.sandbox.bwrap import Bind, ExecResult, Limits, SandboxBackend, bwrap_path
from harness.sandbox.isolation import Isolation


class Session(Protocol):
    """A trial's isolated environment. `results_dir` is the HOST dir behind /root/results."""

    results_dir: Path

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        stdout_path: Path | None = None,
        stderr_path: Path | None = None,
        capture_limit: int = ...,
        limit_memory: bool = True,
    ) -> ExecResult: ...

    def write_file(self, dest: str, data: bytes, *, timeout: float = 60.0) -> ExecResult: ...

    def close(self) -> None: ...


class Backend(Protocol):
    name: str

    def describe(self) -> str: ...

    def isolation(self, limits: Limits) -> Isolation:
        """What enforces each isolation property (harness.sandbox.isolation) for these limits."""
        ...

    def open(
        self,
        *,
        data_dir: Path,
        trial_dir: Path,
        limits: Limits,
        extra: Sequence[Bind] = (),
        env: Mapping[str, str] | None = None,
        task: Any = None,
    ) -> Session: ...


def choose_backend(name: str = "auto", venv: Path | None = None) -> tuple[Backend, str]:
    """The backend to use and a one-line reason to print.

    auto: docker if an engine answers, else the sandbox (bubblewrap).
    """
    from harness.sandbox.container import DockerBackend, docker_available

    if name in ("docker", "auto"):
        ok, why = docker_available()
        if ok:
            return DockerBackend(), f"backend: docker ({why})"
        if name == "docker":
            raise RuntimeError(f"--backend docker: {why}")
        auto_note = f"{why}; "
    else:
        auto_note = ""
    if name == "unshare":
        raise ValueError(
            "the unshare backend was removed (no user namespace of its own); "
            "use --backend sandbox (bubblewrap)"
        )
    if name not in ("auto", "sandbox", "bwrap"):
        raise ValueError(f"unknown backend {name!r} (docker|sandbox|bwrap|auto)")
    method = "bwrap" if name == "bwrap" else "auto"
    if not bwrap_path():
        raise RuntimeError("no sandbox available: install bubblewrap (apt-get install bubblewrap)")
    if venv is None:
        from harness.sandbox.venv import ensure_agent_venv

        venv = ensure_agent_venv()
    backend = SandboxBackend(method, venv)
    return backend, f"backend: {backend.describe()} ({auto_note}agent venv {venv})"
