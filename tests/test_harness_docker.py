"""The Docker backend on a real engine (tests.docker_engine): the offline base built from
Debian packages and the locked wheels, task images built with no network, an oracle sweep
on real tasks verified for real, and the container limits enforced."""

from __future__ import annotations

import json
import subprocess
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from harness.agents.registry import OracleAgent
from harness.runs.runner import run_sweep
from harness.runs.store import Store
from harness.sandbox import images as docker_images
from harness.sandbox.bwrap import Limits
from harness.sandbox.container import DockerBackend
from harness.sandbox.venv import ensure_agent_venv
from tbmm.suite.stack import PYTHON_MINOR, locked
from tbmm.suite.tasks import load_suite
from tbmm.verdict.scoring import score_task


@pytest.fixture(scope="module")
def base(docker_engine: Any) -> str:
    t0 = time.monotonic()
    tag = docker_images.ensure_local_base(docker_engine, log=print)
    print(f"offline base {tag} ready in {time.monotonic() - t0:.1f} s")
    return tag


def _freeze(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if "==" in line:
            name, _, version = line.partition("==")
            out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


@pytest.mark.slow
def test_both_backends_run_the_same_locked_stack(docker_engine: Any, base: str) -> None:
    """The image's venv and the sandbox's agent venv hold exactly the lock's versions, on
    the same Python minor version."""
    image = _freeze(docker_images.packages_in(docker_engine, base))
    venv = ensure_agent_venv()
    proc = subprocess.run(
        ["uv", "pip", "freeze", "--python", str(venv / "bin" / "python")],
        capture_output=True,
        text=True,
        check=True,
    )
    sandbox = _freeze(proc.stdout)
    want = locked()
    assert {k: image.get(k) for k in want} == want
    assert {k: sandbox.get(k) for k in want} == want
    out = docker_engine.containers.run(
        base,
        ["python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        remove=True,
        network_mode="none",
    )
    assert out.decode().strip() == PYTHON_MINOR
    host = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert host.stdout.strip() == PYTHON_MINOR


@pytest.mark.slow
def test_oracle_sweep_on_real_tasks_in_docker(
    tmp_path: Path, docker_engine: Any, base: str
) -> None:
    """Real task images (their own Dockerfile, built offline on the local base), the oracle
    writing each anchor inside the container, verified for real (gate, score, Lean)."""
    # tasks whose anchor passes its own gate (an infeasible anchor is recorded as such)
    suite = [t for t in load_suite() if not t.incomplete and t.gate.anchor.feasible]
    tasks = suite[:: max(1, len(suite) // 3)][:3]
    backend = DockerBackend(docker_engine, base=base)
    assert backend.base == base
    db = tmp_path / "r.sqlite"
    t0 = time.monotonic()
    summary = run_sweep(OracleAgent(), None, tasks, 1, backend, 1, db, False, progress=False)
    print(f"docker oracle sweep, {len(tasks)} tasks: {time.monotonic() - t0:.1f} s")
    assert (summary.done, summary.failed, summary.errored) == (len(tasks), 0, 0)
    rows = Store(db).trials()
    for r in rows:
        assert r["backend"].startswith("docker") and r["status"] == "ok"
        # the anchor is the single reference (O-Eval 1 against it); under eq. 1 it scores
        # what scoring it directly against the panel gives (below 1 where papers differ)
        t = next(x for x in tasks if x.slug == r["task"])
        want = score_task(t, t.anchor_artifact).o_eval
        got = Fraction(r["o_eval_exact"])
        assert (got, r["gate"], r["lean"]) == (want, "pass", "ok"), (r["task"], r["detail"])
        verdict = json.loads(r["verdict"])
        assert verdict["score"]["o_eval_anchor_exact"] == "1", r["task"]
    # each image was built from the task's own Dockerfile on the offline base
    for t in tasks:
        tag = docker_images.task_image_tag(t.slug, t.dir / "environment", base)
        docker_engine.images.get(tag)


@pytest.mark.slow
def test_container_limits_are_enforced(tmp_path: Path, docker_engine: Any, base: str) -> None:
    suite = [t for t in load_suite() if not t.incomplete]
    task = suite[0]
    backend = DockerBackend(docker_engine, base=base)
    limits = Limits(wall_sec=60, cpus=1, memory_mb=256, pids=64)
    session = backend.open(
        data_dir=task.data_dir, trial_dir=tmp_path / "trial", limits=limits, task=task
    )
    try:

        def run(cmd: str, timeout: float = 60) -> Any:
            return session.exec(["/bin/sh", "-c", cmd], timeout=timeout)

        probe = run(
            "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max;"
            "cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max;"
            "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cat /sys/fs/cgroup/cpu.max;"
            "ls /sys/class/net"
        )
        mem, pids, cpu, *nets = probe.stdout.decode().split()
        assert (int(mem), pids, nets) == (256 * 1024 * 1024, "64", ["lo"])
        assert cpu.startswith("100000")  # 1 CPU = one full period of 100 ms
        # no network: nothing outside answers
        net = run(
            "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\""
        )
        assert net.exit_code != 0 and b"unreachable" in net.stderr.lower()
        # memory: a process that wants 400 MiB under a 256 MiB limit is killed
        hog = run("python3 -c \"b = bytearray(400 * 1024 * 1024); print('survived')\"")
        assert b"survived" not in hog.stdout and hog.exit_code in (137, -9), (
            hog.exit_code,
            hog.stderr,
        )
        # processes: far fewer than 200 can exist at once (the children are reaped before
        # the next exec, which would otherwise find the pids limit still full)
        fork = run(
            'python3 -c "import os, time\nn = 0\ntry:\n  for _ in range(200):\n'
            "    if os.fork() == 0:\n      time.sleep(5); os._exit(0)\n    n += 1\n"
            'except OSError:\n  pass\nfor _ in range(n):\n  os.wait()\nprint(n)"'
        )
        assert int(fork.stdout.decode().split()[0]) < 64, fork.stdout
        # the task data is read-only, the results folder is writable
        ro = run("touch /root/data/x")
        assert ro.exit_code != 0
        assert run("echo ok > /root/results/probe && cat /root/results/probe").stdout == b"ok\n"
        assert (
            json.loads(
                run('python3 -c "import json, numpy; print(json.dumps(numpy.__version__))"').stdout
            )
            == locked()["numpy"]
        )
    finally:
        session.close()
