"""The sandbox really isolates: every probe of issue 14 runs for real inside bubblewrap.

Probes that need a kernel feature this machine lacks (root, cgroups, loop devices) skip
with the reason printed; the rest run everywhere bubblewrap runs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.runs.runner import read_artifact
from harness.sandbox import cgroups, trialfs
from harness.sandbox.bwrap import (
    OUTPUT_KEEP,
    Limits,
    SandboxBackend,
    SandboxSession,
    bwrap_path,
    probe_features,
)
from harness.sandbox.trialfs import mounts_under
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import make_fake_task

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")


def need(feature: str) -> None:
    """Skip (printing why) when this machine cannot enforce `feature`."""
    f = probe_features()
    why = {
        "root": None if f.root else "the harness is not root: no dedicated agent uid",
        "loop": None if f.root and f.loop else "no loop devices / mke2fs (or not root)",
        "pids": None if "pids" in f.cgroup else "no usable pids cgroup controller",
        "memory": None if "memory" in f.cgroup else "no usable memory cgroup controller",
        "cgroup": None if f.cgroup else "no usable cgroup controller",
    }[feature]
    if why:
        print(f"SKIP reason: {why}")
        pytest.skip(why)


@pytest.fixture(scope="session")
def venv() -> Path:
    return ensure_agent_venv()


def open_session(tmp_path: Path, venv: Path, **limits: object) -> SandboxSession:
    task = make_fake_task(tmp_path / "tasks")
    lim = Limits(**{"wall_sec": 30, "memory_mb": 2048, "storage_mb": 256, **limits})  # type: ignore[arg-type]
    s = SandboxBackend("bwrap", venv).open(
        data_dir=task.data_dir, trial_dir=tmp_path / "trial", limits=lim
    )
    s.task = task  # type: ignore[attr-defined]
    return s


@pytest.fixture
def session(tmp_path: Path, venv: Path) -> SandboxSession:
    s = open_session(tmp_path, venv)
    yield s
    s.close()


def py(session: SandboxSession, code: str, timeout: float = 30, **kw: object):
    return session.exec(["python", "-c", textwrap.dedent(code)], timeout=timeout, **kw)


@pytest.mark.slow
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


@pytest.mark.slow
def test_no_network_no_host_services(session: SandboxSession) -> None:
    """A TCP listener and an abstract unix socket on the host stay out of reach."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    abstract = f"\0tbmm-test-{os.getpid()}"
    usrv = socket.socket(socket.AF_UNIX)
    usrv.bind(abstract)
    usrv.listen()
    try:
        res = py(
            session,
            f"""
            import socket
            print(sorted(n for _, n in socket.if_nameindex()))
            for fam, addr in ((socket.AF_INET, ('127.0.0.1', {port})),
                              (socket.AF_INET, ('1.1.1.1', 53)),
                              (socket.AF_UNIX, {abstract!r})):
                s = socket.socket(fam)
                s.settimeout(3)
                try:
                    s.connect(addr); print('CONNECTED', addr)
                except OSError as e:
                    print('refused', type(e).__name__)
            """,
        )
    finally:
        srv.close()
        usrv.close()
    assert res.exit_code == 0, res.stderr
    assert b"CONNECTED" not in res.stdout
    assert res.stdout.splitlines()[0] == b"['lo']"  # no interface leads anywhere
    assert res.stdout.count(b"refused") == 3


@pytest.mark.slow
def test_cannot_read_verifier_files_repo_host_etc(session: SandboxSession) -> None:
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
        Path("/etc/shadow"),
        Path("/etc/gshadow"),
        Path("/etc/ssh/ssh_host_ed25519_key"),
    ]
    probe = f"""
    import os, subprocess
    paths = {[str(p) for p in secrets]!r}
    for p in paths:
        try:
            open(p).read(); print('READ', p)
        except OSError:
            pass
    for d in ('/work', '/work/shared', {str(task.dir)!r}, {str(REPO)!r}, '/sys', '/run'):
        print('EXISTS', d) if os.path.exists(d) else None
    open('/root/work/control.txt', 'w').write('TBMMSECRET-7f3a9-control')  # grep must find this
    out = subprocess.run(['grep', '-rIl', 'TBMMSECRET-7f3a9', '/', '--exclude-dir=proc',
                          '--exclude-dir=usr', '--exclude-dir=site-packages'],
                         capture_output=True, text=True).stdout
    print('GREP', out.strip().replace(chr(10), ' '))
    print('ENV', sorted(k for k in os.environ if 'KEY' in k or 'TOKEN' in k))
    print('PASSWD', open('/etc/passwd').read().count(chr(10)))
    """
    os.environ["TBMM_TEST_API_KEY"] = "host-secret"
    try:
        res = py(session, probe, timeout=60)
    finally:
        del os.environ["TBMM_TEST_API_KEY"]
    assert res.exit_code == 0, res.stderr
    out = res.stdout.decode()
    assert "READ" not in out and "EXISTS" not in out, out
    assert out.split("GREP ", 1)[1].split("\n", 1)[0] == "/root/work/control.txt"
    assert "ENV []" in out
    host_users = Path("/etc/passwd").read_text().count("\n")
    assert "PASSWD 3" in out, (out, host_users)  # root, agent, nobody: not the host's


@pytest.mark.slow
def test_mountinfo_shows_no_project_or_runs_path(session: SandboxSession, tmp_path: Path) -> None:
    need("loop")
    res = session.exec(["cat", "/proc/self/mountinfo"], timeout=20)
    assert res.exit_code == 0, res.stderr
    text = res.stdout.decode()
    for leak in (str(REPO), "/work/", str(tmp_path), str(trialfs.RUNTIME_DIR)):
        assert leak not in text, (leak, text)
    roots = {line.split()[3] for line in text.splitlines()}
    assert {"/workdir", "/results", "/data", "/etc"} <= roots, roots


@pytest.mark.slow
def test_pid_1_environment_holds_nothing_of_the_host(session: SandboxSession) -> None:
    """bwrap is the sandbox's pid 1 and its environment is readable inside: it is empty, and
    no process in sight carries the host's PATH or the checkout's location."""
    res = py(
        session,
        """
        import json, os
        envs = {}
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                envs[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode()
            except OSError as e:
                envs[pid] = f'unreadable {e}'
        print(json.dumps(envs))
        """,
    )
    assert res.exit_code == 0, res.stderr
    envs = json.loads(res.stdout)
    assert envs["1"] == ""  # was the host's PATH (with the checkout's .venv) and LC_CTYPE
    text = json.dumps(envs)
    for needle in (str(REPO), os.environ.get("PATH", ""), "/.pyenv/", "/work/"):
        assert needle not in text, needle
    assert any(e.startswith("PATH=") or "\0PATH=" in e for e in envs.values())  # the command's


@pytest.mark.slow
def test_cannot_write_outside_its_folders(session: SandboxSession) -> None:
    res = py(
        session,
        """
        import os
        for p in ('/usr/x', '/etc/x', '/etc/passwd', '/root/data/x', '/x', '/bin/x',
                  '/root/data/problem.md'):
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
    assert (session.results_dir / "r.txt").read_text() == "res"
    assert not Path("/x").exists()
    task = session.task  # type: ignore[attr-defined]
    assert (task.data_dir / "problem.md").read_text() == "Compute the mean load.\n"
    # files persist across commands in work/results; /tmp and /root are per command
    again = py(
        session,
        "import os; print(os.path.exists('/root/work/w.txt'), os.path.exists('/tmp/t.txt'))",
    )
    assert again.stdout.split() == [b"True", b"False"]


@pytest.mark.slow
def test_kernel_knobs_unwritable(session: SandboxSession) -> None:
    """core_pattern would run a program as host root on the next crash: it must not move."""
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    res = py(
        session,
        """
        import os
        for p in ('/proc/sys/kernel/core_pattern', '/proc/sys/vm/drop_caches',
                  '/proc/sys/kernel/hostname', '/proc/sys/net/ipv4/ip_forward',
                  '/proc/sysrq-trigger', '/proc/sys/kernel/modprobe'):
            try:
                with open(p, 'w') as fh:
                    fh.write('|/tmp/x' if 'core' in p else '1')
                print('WROTE', p)
            except OSError as e:
                print('denied', p, e.errno)
        """,
    )
    assert res.exit_code == 0, res.stderr
    assert b"WROTE" not in res.stdout, res.stdout
    assert res.stdout.count(b"denied") == 6
    assert Path("/proc/sys/kernel/core_pattern").read_text() == before


@pytest.mark.slow
def test_no_capabilities_no_new_privs_no_nested_userns(session: SandboxSession) -> None:
    res = session.exec(
        [
            "sh",
            "-c",
            "grep -E '^(CapEff|CapBnd|CapPrm|NoNewPrivs)' /proc/self/status; id -u; "
            "mount -o remount,rw / 2>&1; echo mount=$?; unshare -U true 2>&1; echo userns=$?",
        ],
        timeout=20,
    )
    out = res.stdout.decode()
    fields = dict(line.split(":\t") for line in out.splitlines() if ":\t" in line)
    assert all(int(fields[k], 16) == 0 for k in ("CapEff", "CapBnd", "CapPrm")), out
    assert fields["NoNewPrivs"].strip() == "1", out
    assert out.splitlines()[4] == "1000", out
    assert "mount=0" not in out and "userns=0" not in out, out


@pytest.mark.slow
def test_agent_uid_on_the_host_is_not_root(session: SandboxSession) -> None:
    need("root")
    res = session.exec(["touch", "/root/results/mine"], timeout=20)
    assert res.exit_code == 0, res.stderr
    st = os.stat(session.results_dir / "mine")
    assert st.st_uid == session.ids.uid != 0 and st.st_gid != 0  # type: ignore[union-attr]
    assert st.st_uid >= trialfs.AGENT_UID_BASE


@pytest.mark.slow
def test_agent_process_uid_seen_from_host(session: SandboxSession) -> None:
    """/proc/<pid>/status of a live sandboxed process, read on the host."""
    need("cgroup")
    import threading

    out: dict[str, object] = {}
    t = threading.Thread(
        target=lambda: out.update(res=session.exec(["sleep", "5"], timeout=10)), daemon=True
    )
    t.start()
    deadline = time.monotonic() + 10
    uids: set[str] = set()
    while time.monotonic() < deadline and not uids:
        for pid in session.cgroup.pids():  # type: ignore[union-attr]
            try:
                # the agent's own process: the cgroup also holds the harness's supervisor
                # and bwrap's setup stages (host root by design, before the command starts)
                if Path(f"/proc/{pid}/comm").read_text().strip() != "sleep":
                    continue
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            uids |= {ln.split()[1] for ln in status.splitlines() if ln.startswith("Uid:")}
        time.sleep(0.05)
    t.join()
    assert uids and "0" not in uids, uids


def test_fork_bomb_stops_at_pids_limit(tmp_path: Path, venv: Path) -> None:
    need("pids")
    s = open_session(tmp_path, venv, pids=64)
    try:
        res = py(
            s,
            """
            import os, time
            n = 0
            while True:
                try:
                    pid = os.fork()
                except OSError as e:
                    print('stopped', n, e.errno, flush=True)
                    break
                if pid == 0:
                    time.sleep(60)
                    os._exit(0)
                n += 1
            """,
            timeout=30,
        )
        peak = s.cgroup.read("pids", "pids.peak")  # type: ignore[union-attr]
    finally:
        s.close()
    assert res.exit_code == 0, res.stderr
    _, n, errno = res.stdout.split()
    print(f"fork bomb stopped after {int(n)} forks (pids.max 64, peak {peak})")
    assert int(errno) == 11 and 40 <= int(n) < 64  # EAGAIN, at the limit
    assert peak is None or int(peak) <= 64


@pytest.mark.slow
def test_three_processes_cannot_exceed_memory_limit(tmp_path: Path, venv: Path) -> None:
    """RLIMIT_AS is per process; the cgroup caps the sum. Three 150 MiB processes under a
    256 MiB limit: they cannot all hold their memory."""
    need("memory")
    s = open_session(tmp_path, venv, memory_mb=256)
    try:
        res = s.exec(
            [
                "sh",
                "-c",
                "for i in 1 2 3; do python -c \"import time; b = b'x' * (150 << 20); "
                "time.sleep(3); print('held', len(b) >> 20)\" & done; wait",
            ],
            timeout=60,
            limit_memory=False,  # no per-process cap: only the cgroup stands in the way
        )
        peak = s.cgroup.read("memory", "memory.max_usage_in_bytes") or s.cgroup.read(  # type: ignore[union-attr]
            "memory", "memory.peak"
        )
        limit = 256 << 20
    finally:
        s.close()
    held = res.stdout.count(b"held")
    print(f"memory: {held} of 3 processes held 150 MiB under 256 MiB; peak {peak}")
    assert held < 3, res.stdout
    assert peak is None or int(peak) <= limit


def test_tmp_and_results_stop_at_their_caps(tmp_path: Path, venv: Path) -> None:
    need("loop")
    s = open_session(tmp_path, venv, tmp_mb=16, storage_mb=64)
    try:
        tmp = s.exec(
            ["sh", "-c", "dd if=/dev/zero of=/tmp/f bs=1M count=32 2>&1; stat -c %s /tmp/f"],
            timeout=30,
        )
        first = s.exec(
            ["sh", "-c", "dd if=/dev/zero of=/root/work/a bs=1M count=40 2>&1; echo rc=$?"],
            timeout=30,
        )
        # a second command over the same disk: the cap holds across commands
        second = s.exec(
            ["sh", "-c", "dd if=/dev/zero of=/root/results/b bs=1M count=40 2>&1; echo rc=$?"],
            timeout=30,
        )
        used = sum(f.stat().st_size for f in (s.layout.work_dir / "a", s.results_dir / "b"))
    finally:
        s.close()
    assert b"No space left on device" in tmp.stdout
    assert int(tmp.stdout.split()[-1]) <= 16 << 20
    assert b"rc=0" in first.stdout, first.stdout
    assert b"No space left on device" in second.stdout and b"rc=0" not in second.stdout
    assert used <= 64 << 20


def test_chatty_output_is_bounded_by_the_trial_disk(tmp_path: Path, venv: Path) -> None:
    """stdout goes to the trial's own disk, not the host's: 100 MiB of output under a 32 MiB
    cap stops at the cap, and the caller's copy keeps at most OUTPUT_KEEP of it."""
    need("loop")
    s = open_session(tmp_path, venv, storage_mb=32)
    blob = tmp_path / "stdout.txt"
    try:
        res = s.exec(
            ["sh", "-c", "head -c 100000000 /dev/zero; echo rc=$? >&2"],
            timeout=60,
            stdout_path=blob,
            capture_limit=1024,
        )
        left = list(s.fs.io.iterdir())  # type: ignore[union-attr]
    finally:
        s.close()
    assert b"rc=0" not in res.stderr, res.stderr  # the write failed at the disk cap
    assert blob.stat().st_size <= OUTPUT_KEEP + 100
    assert res.stdout_truncated and len(res.stdout) < 2048
    assert left == []


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


@pytest.mark.slow
def test_sigterm_ignoring_tree_killed_at_timeout(session: SandboxSession) -> None:
    marker = f"{os.getpid() % 1000}77.{int(time.time()) % 1000}"
    script = (
        "trap '' TERM; "
        f"sleep {marker} & (setsid sleep {marker} &) ; "
        f"nohup sh -c 'trap \"\" TERM; sleep {marker}' >/dev/null 2>&1 & "
        "python -c 'import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass'"
    )
    t0 = time.monotonic()
    res = session.exec(["/bin/sh", "-c", script], timeout=1.5)
    elapsed = time.monotonic() - t0
    assert res.timed_out and res.exit_code is None
    assert elapsed < 60  # the sleeps run for hours: not waited for (generous under load)
    deadline = time.monotonic() + 5
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(marker) == []
    if session.cgroup is not None:
        assert session.cgroup.pids() == set()


@pytest.mark.slow
def test_memory_rlimit_per_process(session: SandboxSession) -> None:
    res = py(session, "b = bytearray(3 * 1024**3); print('ALLOCATED')")
    assert b"ALLOCATED" not in res.stdout
    assert b"MemoryError" in res.stderr


@pytest.mark.slow
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


def test_close_removes_cgroup_mounts_and_uid(tmp_path: Path, venv: Path) -> None:
    need("loop")
    s = open_session(tmp_path, venv)
    s.exec(["sh", "-c", "sleep 100 & echo started"], timeout=2)
    root = s.fs.root  # type: ignore[union-attr]
    dirs = s.cgroup.unique_dirs if s.cgroup else []  # type: ignore[union-attr]
    assert mounts_under(root)
    s.close()
    assert mounts_under(root) == [] and not root.exists()
    assert not any(d.exists() for d in dirs)
    assert not (tmp_path / "trial" / "disk.img").exists()


def test_bwrap_command_line_binds_nothing_of_the_repo(tmp_path: Path, venv: Path) -> None:
    s = open_session(tmp_path, venv)
    try:
        cmd = s.command_line(["true"], wall_sec=5)
    finally:
        s.close()
    task = s.task  # type: ignore[attr-defined]
    sources = [cmd[i + 1] for i, a in enumerate(cmd) if a in ("--bind", "--ro-bind")]
    assert not any(src == "/" or src.startswith(("/work", str(REPO))) for src in sources)
    assert str(task.dir) not in " ".join(sources)
    assert "/etc" not in sources  # the host /etc is never bound
    assert {"--clearenv", "--die-with-parent", "--unshare-all", "--unshare-user"} <= set(cmd)
    assert "--disable-userns" in cmd
    assert any(a.startswith("--as=") for a in cmd)


HARNESS_DIES = """
import sys, time
from pathlib import Path
from harness.sandbox.bwrap import Limits, SandboxBackend
from harness.testing import make_fake_task
from harness.sandbox.venv import ensure_agent_venv
tmp = Path(sys.argv[1])
task = make_fake_task(tmp / "tasks")
s = SandboxBackend("bwrap", ensure_agent_venv()).open(
    data_dir=task.data_dir, trial_dir=tmp / "trial", limits=Limits(wall_sec=60))
print("go", flush=True)
s.exec(["sleep", sys.argv[2]], timeout=60)
"""


@pytest.mark.slow
def test_killed_harness_strands_nothing(tmp_path: Path) -> None:
    """SIGKILL the harness at random moments of a sandbox's start-up, many times: no part of
    the sandbox survives (bwrap alone leaves ~1 in 10 children blocked on its eventfd)."""
    need("cgroup")
    script = tmp_path / "h.py"
    script.write_text(HARNESS_DIES)
    marker = f"{os.getpid() % 1000}.{int(time.time()) % 100000}"
    for i in range(12):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / str(i)), marker],
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"go\n"
        time.sleep(0.004 * i)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while _alive(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(marker) == []
    # what they left (cgroups, mounts) is reaped by the next sweep
    cgroups.reap_stale()
    trialfs.reap_stale()


UNPRIVILEGED_HARNESS = """
import json, tempfile
from pathlib import Path
from harness.sandbox.bwrap import Limits, SandboxBackend
from harness.testing import make_fake_task
tmp = Path(tempfile.mkdtemp())
task = make_fake_task(tmp / "tasks")
b = SandboxBackend("bwrap", None)
iso = b.isolation(Limits(wall_sec=10))
s = b.open(data_dir=task.data_dir, trial_dir=tmp / "t", limits=Limits(wall_sec=10))
r = s.exec(["sh", "-c", "id -u; wc -l < /etc/passwd; cat /etc/shadow 2>&1 | head -c 0; echo ok"],
           timeout=20)
s.close()
print(json.dumps({"missing": sorted(k for k, v in iso.items() if not v),
                  "out": r.stdout.decode().split(), "code": r.exit_code}))
"""


@pytest.mark.slow
def test_without_root_it_still_runs_and_says_what_is_missing() -> None:
    """A harness that is not root (here: uid 65534) gets a user-namespace sandbox and an
    isolation report that names every property it cannot enforce."""
    need("root")  # to play the non-root harness
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-c",
            UNPRIVILEGED_HARNESS,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/tmp",
    )
    if proc.returncode != 0 and "Permission denied" in proc.stderr:
        why = f"the project is not readable by uid 65534: {proc.stderr[-200:]}"
        print(f"SKIP reason: {why}")
        pytest.skip(why)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["code"] == 0 and got["out"] == ["1000", "3", "ok"], got
    assert {"pids", "memory", "cpu", "storage", "timeout", "host_paths"} <= set(got["missing"])
    assert "unprivileged" not in got["missing"] and "network" not in got["missing"]
