"""A Docker engine for the Docker backend's tests, private to the tests.

In order:
1. `$TBMM_TEST_DOCKER_HOST` (what `.ci/run` sets after starting dockerd on its own socket);
2. as root with `dockerd` installed: start one on `unix:///run/tbmm-docker-test.sock` with
   its own data root (images persist between runs), or, when another test run holds that
   one, a throw-away daemon of this process; stopped when the session ends;
3. otherwise the tests skip, saying why (no engine on this machine).

The engine is never the default one and DOCKER_HOST is never set, so `--backend auto` in
other tests (and other sessions on the machine) keeps choosing the sandbox.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ci import absent

SHARED = "tbmm-docker-test"
STORAGE_DRIVERS = ("overlay2", "vfs")  # overlay2 when the kernel allows it: ~15x faster here


def _client(url: str, timeout: int = 300) -> Any:
    import docker

    c = docker.DockerClient(base_url=url, timeout=timeout)
    c.ping()
    return c


def _start(name: str) -> tuple[subprocess.Popen[bytes], str, list[Path]]:
    sock = f"/run/{name}.sock"
    data, run = Path(f"/var/lib/{name}"), Path(f"/run/{name}")
    log = open(f"/tmp/{name}.log", "ab")  # noqa: SIM115 - lives as long as the daemon
    last = ""
    for driver in STORAGE_DRIVERS:
        data.mkdir(parents=True, exist_ok=True)
        run.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(
            [
                "dockerd",
                "-H",
                f"unix://{sock}",
                "--data-root",
                str(data),
                "--exec-root",
                str(run),
                "--pidfile",
                f"/run/{name}.pid",
                "--iptables=false",
                "--bridge=none",
                "--ip-masq=false",
                f"--storage-driver={driver}",
            ],
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                _client(f"unix://{sock}", timeout=5)
                return proc, f"unix://{sock}", [data, run]
            except Exception as exc:  # not up yet
                last = str(exc)
                time.sleep(0.5)
        _stop(proc, [])
        last = f"dockerd ({driver}) did not answer: {last}"
    raise RuntimeError(last)


def _stop(proc: subprocess.Popen[bytes], dirs: list[Path], remove: bool = False) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for d in dirs:
        # dockerd leaves its network namespace mount under the exec root, and (overlay2)
        # its data root bind-mounted onto itself
        for ns in d.glob("netns/*"):
            subprocess.run(["umount", str(ns)], capture_output=True)
        if os.path.ismount(d):
            subprocess.run(["umount", str(d)], capture_output=True)
        if remove:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Any]:
    """A docker.DockerClient on a private engine (see the module docstring)."""
    url = os.environ.get("TBMM_TEST_DOCKER_HOST")
    if url:
        yield _client(url)
        return
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        why = "not root" if os.geteuid() != 0 else "dockerd is not installed"
        absent(f"no Docker engine for the tests ({why}; .ci/run installs docker.io)")
    lock = open(f"/run/{SHARED}.lock", "w")  # noqa: SIM115
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        name, private = SHARED, False
    except BlockingIOError:  # another test run uses the shared engine: start our own
        lock.close()
        name, private = f"{SHARED}-{os.getpid()}", True
    try:
        proc, url, dirs = _start(name)
    except (RuntimeError, OSError) as exc:
        absent(f"dockerd could not start here: {exc}")
    try:
        yield _client(url)
    finally:
        _stop(proc, dirs, remove=private)
        if not private:
            lock.close()
