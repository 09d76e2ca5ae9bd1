"""The sandbox really isolates: run for real with bubblewrap and with the unshare fallback."""

from __future__ import annotations

import os
import socket
import textwrap
import time
from pathlib import Path

import pytest

from harness.runner import read_artifact
from harness.sandbox import Limits, SandboxBackend, SandboxSession, bwrap_path, unshare_works
from harness.testing import make_fake_task
from harness.venv import ensure_agent_venv

REPO = Path(__file__).resolve().parents[1]
METHODS = [
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed"),
    ),
    pytest.param(
        "unshare",
        marks=pytest.mark.skipif(not unshare_works(), reason="unshare namespaces unavailable"),
    ),
]


@pytest.fixture(scope="session")
def venv() -> Path:
    return ensure_agent_venv()


@pytest.fixture(params=METHODS)
def session(request: pytest.FixtureRequest, tmp_path: Path, venv: Path) -> SandboxSession:
    task = make_fake_task(tmp_path / "tasks")
    backend = SandboxBackend(request.param, venv)
    s = backend.open(
        data_dir=task.data_dir,
        trial_dir=tmp_path / "trial",
        limits=Limits(wall_sec=30, memory_mb=2048),
    )
    s.task = task  # type: ignore[attr-defined]
    yield s
    s.close()


def py(session: SandboxSession, code: str, timeout: float = 30, **kw: object):
    return session.exec(["python", "-c", textwrap.dedent(code)], timeout=timeout, **kw)


def test_scientific_stack_and_layout(session: SandboxSession) -> None:
    res = py(
        session,
        """
        import os, numpy, pandas, scipy, sklearn, matplotlib, openpyxl, xlrd
        df = pandas.read_csv('/root/data/attachments/load.csv')
        print(df['load'].mean(), os.getcwd(), sorted(os.listdir('/root')))
        """,
    )
    assert res.exit_code == 0, res.stderr
    assert res.stdout.split()[:2] == [b"12.5", b"/root/work"]


def test_no_network(session: SandboxSession) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    try:
        res = py(
            session,
            f"""
            import socket
            print(sorted(n for _, n in socket.if_nameindex()))
            try:
                socket.create_connection(('127.0.0.1', {port}), timeout=3)
                print('CONNECTED')
            except OSError as e:
                print('refused', type(e).__name__)
            """,
        )
    finally:
        srv.close()
    assert res.exit_code == 0, res.stderr
    assert b"CONNECTED" not in res.stdout
    assert res.stdout.splitlines()[0] == b"['lo']"  # no interface leads anywhere


def test_cannot_read_verifier_files_repo_or_shared(session: SandboxSession) -> None:
    task = session.task  # type: ignore[attr-defined]
    secrets = [
        task.dir / "anchor.json",
        task.dir / "scoring.toml",
        task.dir / "gate.toml",
        task.dir / "panel.json",
        task.dir / "tests" / "test.sh",
        REPO / "pyproject.toml",
        REPO / "tasks" / "FORMAT.md",
        Path("/work/shared/DESIGN.md"),
    ]
    probe = f"""
    import os, subprocess
    paths = {[str(p) for p in secrets]!r}
    for p in paths:
        try:
            open(p).read(); print('READ', p)
        except OSError:
            pass
    for d in ('/work', '/work/shared', {str(task.dir)!r}, {str(REPO)!r}):
        print('EXISTS', d) if os.path.exists(d) else None
    open('/root/work/control.txt', 'w').write('TBMMSECRET-7f3a9-control')  # grep must find this
    out = subprocess.run(['grep', '-rIl', 'TBMMSECRET-7f3a9', '/', '--exclude-dir=proc',
                          '--exclude-dir=sys', '--exclude-dir=usr', '--exclude-dir=site-packages'],
                         capture_output=True, text=True).stdout
    print('GREP', out.strip().replace(chr(10), ' '))
    print('ENV', sorted(k for k in os.environ if 'KEY' in k or 'TOKEN' in k))
    """
    os.environ["TBMM_TEST_API_KEY"] = "host-secret"
    try:
        res = py(session, probe, timeout=60)
    finally:
        del os.environ["TBMM_TEST_API_KEY"]
    assert res.exit_code == 0, res.stderr
    out = res.stdout.decode()
    assert "READ" not in out and "EXISTS" not in out
    assert out.split("GREP ", 1)[1].split("\n", 1)[0] == "/root/work/control.txt"
    assert "ENV []" in out


def test_cannot_write_outside_its_folders(session: SandboxSession) -> None:
    res = py(
        session,
        """
        import os
        for p in ('/usr/x', '/etc/x', '/root/data/x', '/x', '/bin/x', '/root/data/problem.md'):
            try:
                open(p, 'a').write('x'); print('WROTE', p)
            except OSError:
                pass
        open('/root/work/w.txt', 'w').write('work')
        open('/root/results/r.txt', 'w').write('res')
        open('/tmp/t.txt', 'w').write('tmp')
        open('/root/scratch.txt', 'w').write('home')
        """,
    )
    assert res.exit_code == 0, res.stderr
    assert b"WROTE" not in res.stdout
    assert (session.layout.work_dir / "w.txt").read_text() == "work"
    assert (session.layout.results_dir / "r.txt").read_text() == "res"
    assert not Path("/x").exists()
    task = session.task  # type: ignore[attr-defined]
    assert (task.data_dir / "problem.md").read_text() == "Compute the mean load.\n"
    # files persist across commands in work/results; /tmp and /root are per command
    again = py(
        session,
        "import os; print(os.path.exists('/root/work/w.txt'), os.path.exists('/tmp/t.txt'))",
    )
    assert again.stdout.split() == [b"True", b"False"]


def _alive(marker: str) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmd:
                out.append(int(pid))
    return out


def test_runaway_process_tree_killed_at_timeout(session: SandboxSession) -> None:
    marker = f"{os.getpid() % 1000}77.{int(time.time()) % 1000}"
    script = (
        f"sleep {marker} & (setsid sleep {marker} &) ; "
        f"nohup sh -c 'sleep {marker}' >/dev/null 2>&1 & "
        "python -c 'while True: pass'"
    )
    t0 = time.monotonic()
    res = session.exec(["/bin/sh", "-c", script], timeout=1.5)
    elapsed = time.monotonic() - t0
    assert res.timed_out and res.exit_code is None
    assert elapsed < 6
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(marker) == []


def test_memory_limit(session: SandboxSession) -> None:
    res = py(session, "b = bytearray(3 * 1024**3); print('ALLOCATED')")
    assert b"ALLOCATED" not in res.stdout
    assert b"MemoryError" in res.stderr


def test_artifact_symlink_is_not_followed(session: SandboxSession) -> None:
    task = session.task  # type: ignore[attr-defined]
    # A link to the anchor's HOST path: the sandbox cannot read it, but the host could.
    res = session.exec(
        ["ln", "-s", str(task.dir / "anchor.json"), f"/root/results/{task.slug}_result.json"],
        timeout=10,
    )
    assert res.exit_code == 0, res.stderr
    status, data, _, reason = read_artifact(session.results_dir, task.output_path, 5 << 20)
    assert status == "not_regular_file" and data is None, reason


def test_bwrap_command_line_binds_nothing_of_the_repo(tmp_path: Path, venv: Path) -> None:
    task = make_fake_task(tmp_path / "tasks")
    backend = SandboxBackend("bwrap", venv)
    s = backend.open(data_dir=task.data_dir, trial_dir=tmp_path / "t", limits=Limits(wall_sec=5))
    cmd = s.command_line(["true"], wall_sec=5)
    sources = [cmd[i + 1] for i, a in enumerate(cmd) if a in ("--bind", "--ro-bind")]
    assert not any(src == "/" or src.startswith(("/work", str(REPO))) for src in sources)
    assert str(task.data_dir) in sources and str(task.dir) not in sources
    assert "--clearenv" in cmd and "--die-with-parent" in cmd
    if os.geteuid() == 0:  # every namespace but the user one (see bwrap_argv)
        assert {"--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"} <= set(cmd)
    else:
        assert "--unshare-all" in cmd
    assert any(a.startswith("--as=") for a in cmd)


def test_no_capabilities_and_no_remount(session: SandboxSession) -> None:
    """The sandboxed process holds no capability: it cannot remount its read-only views."""
    res = session.exec(
        ["sh", "-c", "grep CapEff /proc/self/status; mount -o remount,rw / 2>&1; echo rc=$?"],
        timeout=20,
    )
    out = res.stdout.decode()
    eff = next(line for line in out.splitlines() if line.startswith("CapEff"))
    assert int(eff.split()[1], 16) == 0, out
    assert "rc=0" not in out, out
