"""Docker backend: the task's own image, no network, 2 CPUs / 8 GB, data (ro) + results (rw).

The container configuration is a pure function (`docker_run_kwargs`) so that tests can
check it on machines without a Docker engine. Images: see harness.sandbox.images (the task's
Dockerfile on a digest-pinned Python 3.11 base, or on the offline base built from Debian
packages and the locked wheels; with the offline base, builds need no network either).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import posixpath
import tarfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.sandbox.bwrap import DATA, RESULTS, WORK, Bind, ExecResult, Limits, MiB
from harness.sandbox.isolation import Isolation

IMAGE_PREFIX = "tbmm-task"


def docker_client(timeout: int = 5) -> Any:
    """A client whose engine answered a ping, else raise with the reason."""
    import docker

    client = docker.from_env(timeout=timeout)
    client.ping()
    return client


def docker_available() -> tuple[bool, str]:
    try:
        docker_client(timeout=3)
    except Exception as exc:  # any failure means: no usable engine
        return False, f"no Docker engine answered ({type(exc).__name__}: {exc})"
    return True, "Docker engine answered"


def resolve_base(client: Any, base: str | None = "auto") -> str | None:
    """The TBMM_BASE a task image is built on: `base` if given, else $TBMM_DOCKER_BASE,
    else the offline base when this engine has it (`tbmm docker base`), else None (the
    Dockerfile's own digest-pinned default, which needs a registry)."""
    from harness.sandbox.images import _image_exists, base_tag

    if base not in (None, "auto"):
        return base
    env = os.environ.get("TBMM_DOCKER_BASE")
    if env:
        return env
    if base == "auto" and _image_exists(client, base_tag()):
        return base_tag()
    return None


def image_tag(slug: str, env_dir: Path) -> str:
    """Tag derived from the Dockerfile's bytes, so an edited Dockerfile means a rebuild."""
    dockerfile = env_dir / "Dockerfile"
    digest = (
        hashlib.sha256(dockerfile.read_bytes()).hexdigest()[:12] if dockerfile.exists() else "none"
    )
    return f"{IMAGE_PREFIX}/{slug}:{digest}"


def container_env(limits: Limits, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    threads = str(max(limits.cpus, 1))
    env = {
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "TBMM_DATA": DATA,
        "TBMM_RESULTS": RESULTS,
    }
    env.update(extra or {})
    return env


def docker_run_kwargs(
    *,
    image: str,
    data_dir: Path,
    results_dir: Path,
    limits: Limits,
    name: str,
    extra: Sequence[Bind] = (),
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Exactly the keyword arguments given to `client.containers.run` (pure)."""
    volumes: dict[str, dict[str, str]] = {
        str(Path(data_dir).resolve()): {"bind": DATA, "mode": "ro"},
        str(Path(results_dir).resolve()): {"bind": RESULTS, "mode": "rw"},
    }
    for b in extra:
        volumes[str(b.src)] = {"bind": b.dest, "mode": "rw" if b.rw else "ro"}
    mem = f"{limits.memory_mb}m"
    return {
        "image": image,
        "command": ["sleep", "infinity"],
        "name": name,
        "detach": True,
        "init": True,
        "network_disabled": True,
        "network_mode": "none",
        "nano_cpus": int(limits.cpus * 1_000_000_000),
        "mem_limit": mem,
        "memswap_limit": mem,
        "pids_limit": limits.pids,
        "shm_size": limits.shm_bytes,
        "tmpfs": {"/tmp": f"size={limits.tmp_bytes},mode=1777"},
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "volumes": volumes,
        "working_dir": "/root",
        "environment": container_env(limits, env),
        "labels": {"tbmm": "trial"},
    }


@dataclass
class DockerSession:
    """One running container per trial; commands run through `exec` with a kill timeout."""

    container: Any
    limits: Limits
    results_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    _n: int = 0

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: bytes | None = None,
        env: Mapping[str, str] | None = None,
        stdout_path: Path | None = None,
        stderr_path: Path | None = None,
        capture_limit: int = MiB,
        limit_memory: bool = True,
    ) -> ExecResult:
        argv = list(argv)
        if stdin is not None:
            # put_archive writes into the container's own filesystem, under a tmpfs mount
            # (/tmp) it would be hidden: stage in /root, open it as stdin, delete it, exec.
            self._n += 1
            tmp = f"/root/.tbmm-stdin-{self._n}"
            self._put(tmp, stdin)
            argv = ["/bin/sh", "-c", 'exec 0<"$0" && rm -f "$0" && exec "$@"', tmp, *argv]
        secs = max(int(timeout + 0.999), 1)
        cmd = ["timeout", "-s", "KILL", str(secs), *argv]
        start = time.monotonic()
        res = self.container.exec_run(
            cmd, workdir=WORK, environment={**self.env, **(env or {})}, demux=True
        )
        duration = time.monotonic() - start
        out, err = res.output if res.output else (b"", b"")
        out, err = out or b"", err or b""
        if stdout_path is not None:
            stdout_path.write_bytes(out)
        if stderr_path is not None:
            stderr_path.write_bytes(err)
        timed_out = res.exit_code == 137 and duration >= secs - 0.5
        return ExecResult(
            exit_code=None if timed_out else res.exit_code,
            stdout=out[:capture_limit],
            stderr=err[:capture_limit],
            duration_s=duration,
            timed_out=timed_out,
            stdout_truncated=len(out) > capture_limit,
            stderr_truncated=len(err) > capture_limit,
        )

    def _put(self, dest: str, data: bytes) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(posixpath.basename(dest))
            info.size = len(data)
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
        self.container.put_archive(posixpath.dirname(dest), buf.getvalue())

    def write_file(self, dest: str, data: bytes, *, timeout: float = 60.0) -> ExecResult:
        return self.exec(
            ["/bin/sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", dest],
            stdin=data,
            timeout=timeout,
        )

    def stop(self) -> None:
        """End every command of the trial now (its model budget is spent): the container
        is killed; the results folder is a bind mount and stays for collection."""
        with contextlib.suppress(Exception):
            self.container.kill()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.container.remove(force=True)


class DockerBackend:
    """Builds the task's image from `environment/` (cached by Dockerfile hash) and runs it."""

    name = "docker"

    def __init__(self, client: Any | None = None, base: str | None = "auto") -> None:
        self.client = client or docker_client()
        self.base = resolve_base(self.client, base)

    def describe(self) -> str:
        return f"docker (base {self.base or 'from the Dockerfile'})"

    def isolation(self, limits: Limits) -> Isolation:
        """What the container configuration enforces (None: not enforced by it)."""
        try:
            security = " ".join(self.client.info().get("SecurityOptions") or [])
        except Exception:  # an engine that cannot say: assume no remapping
            security = ""
        remap = "name=userns" in security
        return {
            # Without userns-remap, uid 0 in the container is uid 0 on the host.
            "unprivileged": "daemon userns-remap" if remap else None,
            "capabilities": "cap_drop ALL, no-new-privileges",
            "kernel_knobs": "docker: /proc/sys and /sys read-only in the container",
            "etc": "the task image's own /etc",
            "network": "network_mode none",
            "processes": "container pid namespace",
            "host_paths": None,  # bind mounts show the host paths of the data/results dirs
            "pids": f"pids_limit={limits.pids}",
            "memory": f"mem_limit = memswap_limit = {limits.memory_mb} MiB",
            "cpu": f"nano_cpus = {limits.cpus} CPU(s)",
            "tmpfs": f"tmpfs /tmp {limits.tmp_bytes // MiB} MiB, shm_size {limits.shm_bytes // MiB} MiB",
            "storage": None,  # needs storage-opt size (overlay2 on xfs with pquota)
            "timeout": None,  # `timeout -s KILL` kills the command, not what it left running
        }

    def ensure_image(self, slug: str, env_dir: Path) -> str:
        """The task's image (built once per Dockerfile + lock + base). On the offline base
        the build has no network; on the registry base pip fetches the locked wheels."""
        from harness.sandbox.images import _image_exists, build, task_image_tag

        tag = task_image_tag(slug, env_dir, self.base or "dockerfile-default")
        if _image_exists(self.client, tag):
            return tag
        if self.base is None:
            build(self.client, env_dir, tag, {}, network="default")
        else:
            build(self.client, env_dir, tag, {"TBMM_BASE": self.base}, network="none")
        return tag

    def open(
        self,
        *,
        data_dir: Path,
        trial_dir: Path,
        limits: Limits,
        extra: Sequence[Bind] = (),
        env: Mapping[str, str] | None = None,
        task: Any = None,
    ) -> DockerSession:
        if task is None:
            raise ValueError("docker backend needs the task (to build its image)")
        results = trial_dir / "results"
        results.mkdir(parents=True, exist_ok=True)
        image = self.ensure_image(task.slug, Path(task.dir) / "environment")
        name = f"tbmm-{task.slug}-{trial_dir.name}"[:63]
        kwargs = docker_run_kwargs(
            image=image,
            data_dir=data_dir,
            results_dir=results,
            limits=limits,
            name=name,
            extra=extra,
            env=env,
        )
        container = self.client.containers.run(**kwargs)
        container.exec_run(["mkdir", "-p", WORK, RESULTS])
        return DockerSession(container, limits, results, container_env(limits, env))
