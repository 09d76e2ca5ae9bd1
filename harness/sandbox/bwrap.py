"""Daemon-less sandbox: bubblewrap in a user namespace, as a dedicated unprivileged uid.

What the agent gets (root harness; see harness/README.md for the table):
* a synthetic root built from explicit binds only: /usr (read-only), its own generated /etc,
  the task data (a read-only copy) at /root/data, /root/work and /root/results (one
  size-capped loop filesystem per trial, see `harness.sandbox.trialfs`), the agent venv read-only,
  sized tmpfs at /tmp, /dev/shm and /root, a fresh /proc of its own pid namespace, a minimal
  /dev. No /sys, nothing of the project, /work, anchors, panels, gates or tests;
* a dedicated host uid/gid (setpriv), uid 1000 inside a user namespace in which nested user
  namespaces are disabled; every capability dropped (bounding set included), no_new_privs;
* own pid, network (loopback only), ipc, uts and cgroup namespaces, a clean environment
  (pid 1, bwrap itself, gets an empty one);
* a seccomp filter (`harness.sandbox.seccomp`, x86_64) answering EPERM to io_uring, bpf, perf
  events, userfaultfd, keyrings, ptrace and process_vm_*, the mount family, kexec and module
  loading, and killing a process that calls through another ABI;
* a per-trial cgroup (`harness.sandbox.cgroups`): pids, memory (the whole tree, tmpfs included) and
  CPU quota, plus per-process rlimits (address space, CPU time, file size, no core dumps);
* a supervisor (`harness.sandbox.supervise`) that kills the cgroup at the timeout, when the command
  ends and when the harness dies.
Each command is a fresh sandbox over the same work/results dirs: files persist, processes
do not. Without root (no cgroups, no loop mount, no dedicated uid) the sandbox still runs,
as the invoking user in a user namespace, and `isolation()` reports what is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from harness.sandbox import cgroups, seccomp, trialfs
from harness.sandbox.cgroups import CgroupLimits, TrialCgroup
from harness.sandbox.isolation import Isolation
from harness.sandbox.trialfs import INSIDE_UID, AgentIds, TrialFS
from harness.sandbox.venv import venv_base_prefix

DATA = "/root/data"
WORK = "/root/work"
RESULTS = "/root/results"
MiB = 1024 * 1024
DEFAULT_PIDS = 1024
OUTPUT_KEEP = 16 * MiB  # of a command's stdout (and of its stderr) kept in the trial's blobs
SUPERVISOR = Path(__file__).with_name("supervise.py")
SYSTEM_DIRS = ("bin", "lib", "lib64", "sbin", "lib32", "libx32")


@dataclass(frozen=True)
class Limits:
    """Resource limits of one trial (from the task's task.toml; wall clock per command).

    `memory_mb` caps the whole process tree (cgroup) and, unless a command opts out with
    `limit_memory=False` (node reserves far more address space than it uses), each
    process's address space too. tmpfs sizes default to a share of `memory_mb`; tmpfs
    pages are charged to the cgroup as well.
    """

    wall_sec: float
    cpus: int = 2
    memory_mb: int = 8192
    storage_mb: int = 20480
    pids: int = DEFAULT_PIDS
    cpu_sec: int | None = None  # default: wall * cpus + 5
    fsize_mb: int = 2048
    nofile: int = 4096
    tmp_mb: int | None = None  # default memory_mb // 4
    shm_mb: int | None = None  # default memory_mb // 8
    home_mb: int = 256

    @property
    def tmp_bytes(self) -> int:
        return (self.tmp_mb if self.tmp_mb is not None else self.memory_mb // 4) * MiB

    @property
    def shm_bytes(self) -> int:
        return (self.shm_mb if self.shm_mb is not None else self.memory_mb // 8) * MiB

    def prlimit_argv(self, wall_sec: float | None = None, address_space: bool = True) -> list[str]:
        wall = self.wall_sec if wall_sec is None else wall_sec
        cpu = self.cpu_sec if self.cpu_sec is not None else int(wall * max(self.cpus, 1)) + 5
        args = ["/usr/bin/prlimit", f"--cpu={cpu}", f"--fsize={self.fsize_mb * MiB}", "--core=0"]
        args.append(f"--nofile={self.nofile}")
        if address_space:
            args.append(f"--as={self.memory_mb * MiB}")
        return [*args, "--"]

    def cgroup_limits(self) -> CgroupLimits:
        return CgroupLimits(pids=self.pids, memory_bytes=self.memory_mb * MiB, cpus=self.cpus)


@dataclass(frozen=True)
class Bind:
    """One host path made visible inside the sandbox. `grant`: the agent's group gets
    access to the directory and its entries (a proxy socket it must connect to)."""

    src: Path
    dest: str
    rw: bool = False
    grant: bool = False


@dataclass(frozen=True)
class Layout:
    """Where each sandbox path comes from on the host (after staging)."""

    data_dir: Path
    work_dir: Path
    results_dir: Path
    etc_dir: Path
    venv: Path | None = None  # its path inside the sandbox (= its real path: shebangs)
    extra: tuple[Bind, ...] = ()  # venv binds and the agent's own extras, sources staged

    def binds(self) -> list[Bind]:
        out = [Bind(self.etc_dir, "/etc"), Bind(self.data_dir, DATA)]
        out += [Bind(self.work_dir, WORK, True), Bind(self.results_dir, RESULTS, True)]
        return out + list(self.extra)


@dataclass
class ExecResult:
    """Outcome of one sandboxed command; output is capped (see `capture_limit`)."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def sandbox_env(
    layout: Layout, limits: Limits, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A clean environment: nothing of the host's leaks in except OpenBLAS safety knobs."""
    path = "/usr/local/bin:/usr/bin:/bin"
    if layout.venv is not None:
        path = f"{layout.venv}/bin:{path}"
    threads = str(max(limits.cpus, 1))
    env = {
        "PATH": path,
        "HOME": "/root",
        "USER": "agent",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
        "TBMM_DATA": DATA,
        "TBMM_RESULTS": RESULTS,
    }
    if layout.venv is not None:
        env["VIRTUAL_ENV"] = str(layout.venv)
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if key in os.environ:
            env[key] = os.environ[key]
    env.update(extra or {})
    return env


def bwrap_argv(
    layout: Layout,
    limits: Limits,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    wall_sec: float | None = None,
    address_space: bool = True,
    bwrap: str = "bwrap",
    seccomp_fd: int | None = None,
) -> list[str]:
    """The bubblewrap command line (pure: tests inspect it). It runs as the agent's uid.

    --unshare-user maps the caller (the dedicated agent uid) to uid 1000 and leaves the
    sandbox no capability; --disable-userns forbids nested user namespaces (the kernel
    surface they open). Every other namespace is unshared too. `seccomp_fd`: a descriptor
    holding the filter of `harness.sandbox.seccomp`, loaded by bwrap before the command runs.
    """
    cmd = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns"]
    cmd += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--hostname", trialfs.HOSTNAME]
    cmd += ["--die-with-parent", "--new-session", "--clearenv", "--ro-bind", "/usr", "/usr"]
    cmd += [*_system_dir_args(), "--proc", "/proc", "--dev", "/dev"]
    for dest, size, perms in (
        ("/dev/shm", limits.shm_bytes, "1777"),
        ("/tmp", limits.tmp_bytes, "1777"),
        ("/root", limits.home_mb * MiB, "0700"),
    ):
        cmd += ["--perms", perms, "--size", str(size), "--tmpfs", dest]
    for b in layout.binds():
        cmd += ["--bind" if b.rw else "--ro-bind", str(b.src), b.dest]
    cmd += ["--remount-ro", "/", "--chdir", WORK]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    return [*cmd, "--", *limits.prlimit_argv(wall_sec, address_space), *argv]


def _system_dir_args() -> list[str]:
    """/bin, /lib, ... as the host has them: symlinks into /usr, or read-only binds."""
    out: list[str] = []
    for name in SYSTEM_DIRS:
        link = Path("/") / name
        if link.is_symlink():
            out += ["--symlink", os.readlink(link), f"/{name}"]
        elif link.is_dir():
            out += ["--ro-bind", str(link), f"/{name}"]
    return out


def setpriv_argv(ids: AgentIds) -> list[str]:
    """Drop from root to the trial's agent uid before bubblewrap runs: no supplementary
    groups, empty bounding/inheritable/ambient sets, no_new_privs."""
    return [
        "/usr/bin/setpriv",
        f"--reuid={ids.uid}",
        f"--regid={ids.gid}",
        "--clear-groups",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--no-new-privs",
        "--",
    ]


def _read_capped(path: Path, limit: int) -> tuple[bytes, bool]:
    """Head and tail of a file when it exceeds `limit` (the middle is the least useful)."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if size <= limit:
            return fh.read(), False
        head = fh.read(limit // 2)
        fh.seek(size - limit // 2)
        tail = fh.read()
    note = f"\n...[{size - len(head) - len(tail)} bytes omitted]...\n".encode()
    return head + note + tail, True


def supervised(cmd: Sequence[str], cgroup: TrialCgroup) -> list[str]:
    """`cmd` run by the supervisor inside `cgroup` (see harness.sandbox.supervise)."""
    out = [sys.executable, "-S", str(SUPERVISOR), "--ppid", str(os.getpid())]
    for f in cgroup.join_files():
        out += ["--join", str(f)]
    for d in cgroup.unique_dirs:
        out += ["--cgroup", str(d)]
    return [*out, "--", *cmd]


def run_killable(
    cmd: Sequence[str],
    *,
    timeout: float,
    stdin: bytes | None = None,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    capture_limit: int = MiB,
    env: Mapping[str, str] | None = None,
    cgroup: TrialCgroup | None = None,
    group: _Group | None = None,
    pass_fds: Sequence[int] = (),
) -> ExecResult:
    """Run `cmd` in its own session; at `timeout` kill everything it started (and at once
    when `group` is stopped, see `SandboxSession.stop`).

    With a cgroup, the supervisor keeps the command inside it and the kill empties the
    cgroup (every descendant, whatever its session or state). Without one: SIGKILL of the
    process group, the pid namespace takes the rest, and `setpriv --pdeathsig` kills the
    sandbox if this process dies. Output goes to files, so a chatty command cannot exhaust
    our memory. `cmd` runs with `env`, by default an EMPTY environment: bwrap is the
    sandbox's pid 1 and its environment is readable inside (/proc/1/environ), so it gets
    nothing of the host (the command itself gets bwrap's --clearenv/--setenv environment).
    """
    tmp = Path(tempfile.mkdtemp(prefix="tbmm-exec-"))
    if cgroup is not None:
        cmd = supervised(cmd, cgroup)
    elif _SETPRIV:
        cmd = [_SETPRIV, "--pdeathsig", "KILL", "--", *cmd]
    out_p = stdout_path or tmp / "stdout"
    err_p = stderr_path or tmp / "stderr"
    start = time.monotonic()
    timed_out = False
    try:
        with open(out_p, "wb") as fo, open(err_p, "wb") as fe:
            proc = subprocess.Popen(
                list(cmd),
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=fo,
                stderr=fe,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
                env=dict(env) if env is not None else {},
            )
            live = _Live(proc, cgroup)
            with _LIVE_LOCK:
                _LIVE.add(live)
                if group is not None:
                    group.live.add(live)
                # the sweep is aborting, or the trial stopped: they may have swept already
                if ABORT.is_set() or (group is not None and group.stopped):
                    live.kill()
            feeder = None
            if stdin is not None:
                feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
                feeder.start()
            try:
                try:
                    proc.wait(timeout=max(timeout, 0.0))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    live.kill()
                    proc.wait()
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(live)
                    if group is not None:
                        group.live.discard(live)
            if feeder is not None:
                feeder.join(timeout=5)
        duration = time.monotonic() - start
        out, out_trunc = _read_capped(out_p, capture_limit)
        err, err_trunc = _read_capped(err_p, capture_limit)
        return ExecResult(
            exit_code=None if timed_out else proc.returncode,
            stdout=out,
            stderr=err,
            duration_s=duration,
            timed_out=timed_out,
            stdout_truncated=out_trunc,
            stderr_truncated=err_trunc,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(eq=False)
class _Live:
    proc: subprocess.Popen[bytes]
    cgroup: TrialCgroup | None

    def kill(self) -> None:
        if self.cgroup is not None:
            self.cgroup.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


@dataclass(eq=False)
class _Group:
    """The commands of one session, so that the session can end them all (`stop`)."""

    live: set[_Live] = field(default_factory=set)
    stopped: bool = False


_SETPRIV = shutil.which("setpriv")
_LIVE: set[_Live] = set()
_LIVE_LOCK = threading.Lock()
ABORT = threading.Event()  # set on Ctrl-C: agents stop, running sandboxes are killed


def kill_all_sandboxes() -> int:
    """SIGKILL every sandbox this process is running (Ctrl-C of a sweep); returns how many."""
    with _LIVE_LOCK:
        live = [x for x in _LIVE if x.proc.returncode is None]
        for x in live:
            x.kill()
    return len(live)


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def reap_stale() -> str:
    """Remove what killed sweeps left behind (trial cgroups, mounts); a line to print."""
    if os.geteuid() != 0:
        return ""
    n_cg = cgroups.reap_stale()
    n_fs = trialfs.reap_stale()
    return (
        f"reaped {n_cg} stale trial cgroup(s), {n_fs} stale trial mount(s)" if n_cg or n_fs else ""
    )


@dataclass(frozen=True)
class Features:
    """What this machine lets the sandbox enforce (probed once per process)."""

    root: bool
    bwrap: str | None
    userns: bool
    cgroup: tuple[str, ...]  # usable controllers among pids, memory, cpu
    loop: bool
    userns_error: str = ""


@cache
def probe_features() -> Features:
    root = os.geteuid() == 0
    bw = bwrap_path()
    userns, why = False, "bubblewrap not installed"
    if bw:
        probe = [bw, "--unshare-all", "--unshare-user", "--disable-userns"]
        probe += ["--ro-bind", "/usr", "/usr", *_system_dir_args(), "--", "/usr/bin/true"]
        if root:
            probe = [
                *setpriv_argv(AgentIds(trialfs.AGENT_UID_BASE, trialfs.AGENT_UID_BASE)),
                *probe,
            ]
        try:
            proc = subprocess.run(probe, capture_output=True, text=True, timeout=20)
            userns, why = proc.returncode == 0, proc.stderr.strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            why = str(exc)
    return Features(
        root=root,
        bwrap=bw,
        userns=userns,
        cgroup=cgroups.usable() if root else (),
        loop=trialfs.loop_supported(),
        userns_error=why,
    )


@dataclass
class SandboxSession:
    """One trial's sandbox. Every `exec` is a fresh sandbox over the same work and results
    dirs: files persist between commands, processes do not."""

    layout: Layout
    limits: Limits
    scratch: Path
    env: dict[str, str] = field(default_factory=dict)
    ids: AgentIds | None = None
    cgroup: TrialCgroup | None = None
    fs: TrialFS | None = None
    _closed: bool = False
    _count: int = 0
    _group: _Group = field(default_factory=_Group)
    seccomp: bool = True  # load harness.sandbox.seccomp's filter (where the machine has one)

    @property
    def results_dir(self) -> Path:
        return self.layout.results_dir

    def command_line(
        self,
        argv: Sequence[str],
        *,
        wall_sec: float,
        env: Mapping[str, str] | None = None,
        limit_memory: bool = True,
        seccomp_fd: int | None = None,
    ) -> list[str]:
        full_env = sandbox_env(self.layout, self.limits, {**self.env, **(env or {})})
        cmd = bwrap_argv(
            self.layout,
            self.limits,
            argv,
            full_env,
            wall_sec=wall_sec,
            address_space=limit_memory,
            bwrap=bwrap_path() or "bwrap",
            seccomp_fd=seccomp_fd,
        )
        return [*setpriv_argv(self.ids), *cmd] if self.ids is not None else cmd

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
        """Run one command inside a fresh sandbox, killed (with all descendants) at `timeout`."""
        if self._closed:
            raise RuntimeError("the sandbox session is closed")
        prog = seccomp.program() if self.seccomp else None
        if prog is None:
            return self._exec(argv, timeout, stdin, env, stdout_path, stderr_path,
                              capture_limit, limit_memory, None)  # fmt: skip
        fd = os.memfd_create("tbmm-seccomp")  # close-on-exec here; passed to bwrap only
        try:
            os.write(fd, prog)
            os.lseek(fd, 0, os.SEEK_SET)
            return self._exec(argv, timeout, stdin, env, stdout_path, stderr_path,
                              capture_limit, limit_memory, fd)  # fmt: skip
        finally:
            os.close(fd)

    def _exec(
        self,
        argv: Sequence[str],
        timeout: float,
        stdin: bytes | None,
        env: Mapping[str, str] | None,
        stdout_path: Path | None,
        stderr_path: Path | None,
        capture_limit: int,
        limit_memory: bool,
        seccomp_fd: int | None,
    ) -> ExecResult:
        cmd = self.command_line(
            argv, wall_sec=timeout, env=env, limit_memory=limit_memory, seccomp_fd=seccomp_fd
        )
        fds = () if seccomp_fd is None else (seccomp_fd,)
        if self.fs is None:
            return run_killable(
                cmd,
                timeout=timeout,
                stdin=stdin,
                stdout_path=stdout_path,
                stderr_path=stderr_path,
                capture_limit=capture_limit,
                cgroup=self.cgroup,
                group=self._group,
                pass_fds=fds,
            )
        # Output is written on the trial's own disk (so the storage cap bounds it, not the
        # host's disk); the caller's files get at most OUTPUT_KEEP bytes of it, head and tail.
        self._count += 1
        out_tmp, err_tmp = (self.fs.io / f"{self._count}.{n}" for n in ("out", "err"))
        try:
            res = run_killable(
                cmd,
                timeout=timeout,
                stdin=stdin,
                stdout_path=out_tmp,
                stderr_path=err_tmp,
                capture_limit=capture_limit,
                cgroup=self.cgroup,
                group=self._group,
                pass_fds=fds,
            )
            for tmp, dest in ((out_tmp, stdout_path), (err_tmp, stderr_path)):
                if dest is not None:
                    dest.write_bytes(_read_capped(tmp, OUTPUT_KEEP)[0])
        finally:
            for tmp in (out_tmp, err_tmp):
                tmp.unlink(missing_ok=True)
        return res

    def stop(self) -> None:
        """Kill every command of this session now, and any started later (the agent's model
        budget is spent: its run ends here). Callable from any thread."""
        with _LIVE_LOCK:
            self._group.stopped = True
            for live in self._group.live:
                live.kill()

    def write_file(self, dest: str, data: bytes, *, timeout: float = 60.0) -> ExecResult:
        """Write bytes at a sandbox path from inside (the agent's own permissions apply)."""
        return self.exec(
            ["/bin/sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", dest],
            stdin=data,
            timeout=timeout,
        )

    def close(self) -> None:
        """Kill every process of the trial, remove its cgroup, unmount and remove its disk."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.cgroup is not None:
                self.cgroup.remove()
            if self.fs is not None:
                self.fs.close()
        finally:
            if self.ids is not None:
                self.ids.release()
            shutil.rmtree(self.scratch, ignore_errors=True)


class SandboxBackend:
    """Daemon-less backend (bubblewrap). `method`: "auto" or "bwrap"; the old `unshare`
    fallback is gone (it could not give the agent a user namespace of its own)."""

    name = "sandbox"

    def __init__(self, method: str = "auto", venv: Path | None = None) -> None:
        if method not in ("auto", "bwrap"):
            raise ValueError(
                f"unknown sandbox method {method!r}: only bubblewrap is supported "
                "(apt-get install bubblewrap)"
            )
        self.method = "bwrap"
        self.venv = venv
        self.features = probe_features()

    def describe(self) -> str:
        return "sandbox (bwrap)"

    def isolation(self, limits: Limits) -> Isolation:
        """What enforces each property of harness.sandbox.isolation.PROPERTIES here (None: nothing)."""
        f = self.features
        priv = f.root and f.userns
        cg = dict.fromkeys(f.cgroup, True)
        v = {c: ctrl.version for c, ctrl in cgroups.discover().items()}
        uns = "bwrap --unshare-user (uid 1000 inside), --disable-userns"
        filt = (
            f"; seccomp denies {len(seccomp.DENIED)} calls (io_uring, bpf, perf, ptrace, "
            "keyrings, mount family, kexec, modules)"
            if seccomp.program() is not None
            else "; no seccomp filter (no table for this architecture)"
        )
        return {
            "unprivileged": (
                f"dedicated host uid {trialfs.AGENT_UID_BASE}+slot (setpriv); {uns}"
                if priv
                else (f"the invoking uid {os.getuid()}; {uns}" if f.userns and not f.root else None)
            ),
            "capabilities": (
                "setpriv: empty bounding set, no_new_privs; bwrap keeps no capability" + filt
                if priv
                else (
                    "bwrap keeps no capability, no_new_privs" + filt
                    if f.userns and not f.root
                    else None
                )
            ),
            "kernel_knobs": (
                "/proc/sys owned by host root, unmapped in the agent's user namespace; "
                "/sys not mounted"
                if f.userns
                else None
            ),
            "etc": "generated per trial (harness.sandbox.trialfs.write_etc)" if f.bwrap else None,
            "network": "bwrap --unshare-net (loopback only)" if f.bwrap else None,
            "processes": "bwrap --unshare-pid" if f.bwrap else None,
            "host_paths": (
                "binds come from the trial's loop filesystem and a staging dir" if priv else None
            ),
            "pids": f"cgroup v{v['pids']} pids.max={limits.pids}" if cg.get("pids") else None,
            "memory": (
                f"cgroup v{v['memory']} memory limit {limits.memory_mb} MiB (+ rlimit AS)"
                if cg.get("memory")
                else None
            ),
            "cpu": (
                f"cgroup v{v['cpu']} CFS quota {limits.cpus} CPU(s)" if cg.get("cpu") else None
            ),
            "tmpfs": (
                f"bwrap --size: /tmp {limits.tmp_bytes // MiB} MiB, /dev/shm "
                f"{limits.shm_bytes // MiB} MiB, /root {limits.home_mb} MiB"
                if f.bwrap
                else None
            ),
            "storage": (
                f"ext4 loop file of {limits.storage_mb} MiB per trial" if priv and f.loop else None
            ),
            "timeout": (
                "supervisor freezes and kills the trial cgroup"
                if cg
                else None  # process-group kill alone can miss bwrap's half-started child
            ),
        }

    def open(
        self,
        *,
        data_dir: Path,
        trial_dir: Path,
        limits: Limits,
        extra: Sequence[Bind] = (),
        env: Mapping[str, str] | None = None,
        task: object | None = None,
    ) -> SandboxSession:
        if not self.features.bwrap:
            raise RuntimeError("bubblewrap is not installed (apt-get install bubblewrap)")
        if not self.features.userns:
            raise RuntimeError(
                f"bubblewrap cannot create a user namespace: {self.features.userns_error}"
            )
        trial_dir.mkdir(parents=True, exist_ok=True)
        scratch = (trial_dir / "scratch").resolve()
        scratch.mkdir(exist_ok=True)
        session = SandboxSession(
            Layout(data_dir, data_dir, data_dir, data_dir), limits, scratch, dict(env or {})
        )
        try:
            if self.features.root:
                self._open_privileged(session, Path(data_dir), trial_dir, limits, extra)
            else:
                self._open_plain(session, Path(data_dir), trial_dir, extra)
        except BaseException:
            session.close()
            raise
        return session

    def _venv_binds(self) -> list[Bind]:
        if self.venv is None:
            return []
        out = []
        base = venv_base_prefix(self.venv)
        if not (base == Path("/usr") or Path("/usr") in base.parents):
            out.append(Bind(base, str(base)))
        return [*out, Bind(self.venv, str(self.venv))]

    def _open_privileged(
        self,
        s: SandboxSession,
        data_dir: Path,
        trial_dir: Path,
        limits: Limits,
        extra: Sequence[Bind],
    ) -> None:
        s.ids = AgentIds.acquire()
        if self.features.cgroup:
            s.cgroup = TrialCgroup.create(limits.cgroup_limits())
        s.fs = TrialFS.create(
            scratch=trial_dir,
            storage_mb=limits.storage_mb if self.features.loop else None,
            data_src=data_dir.resolve(),
            uid=s.ids.uid,
            gid=s.ids.gid,
        )
        staged = []
        for b in [*self._venv_binds(), *extra]:
            if b.grant:
                _grant(b.src, s.ids.gid)
            staged.append(replace(b, src=s.fs.stage(b.src.resolve(), rw=b.rw)))
        s.layout = Layout(
            data_dir=s.fs.data,
            work_dir=s.fs.work,
            results_dir=s.fs.results,
            etc_dir=s.fs.etc,
            venv=self.venv,
            extra=tuple(staged),
        )

    def _open_plain(
        self, s: SandboxSession, data_dir: Path, trial_dir: Path, extra: Sequence[Bind]
    ) -> None:
        """Without root: host dirs of the trial, bwrap as the invoking user."""
        dirs = {n: (trial_dir / n).resolve() for n in ("work", "results", "etc")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        trialfs.write_etc(dirs["etc"])
        s.layout = Layout(
            data_dir=data_dir.resolve(),
            work_dir=dirs["work"],
            results_dir=dirs["results"],
            etc_dir=dirs["etc"],
            venv=self.venv,
            extra=(*self._venv_binds(), *extra),
        )


def _grant(path: Path, gid: int) -> None:
    """Give group `gid` access to a directory and its entries (rwx for sockets: connect)."""
    os.chown(path, -1, gid)
    os.chmod(path, 0o750)
    for entry in path.iterdir():
        os.chown(entry, -1, gid, follow_symlinks=False)
        os.chmod(entry, 0o770 if entry.is_socket() else 0o640)
