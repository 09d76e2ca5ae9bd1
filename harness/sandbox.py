"""Daemon-less sandbox: bubblewrap (preferred) or plain `unshare` namespaces.

The agent sees a synthetic root built from explicit binds only: system dirs read-only
(/usr, /etc), the task data read-only at /root/data, a private workdir /root/work and the
results folder /root/results (both host dirs of this trial), the agent venv read-only,
a fresh /tmp, /proc and /dev. The repository, /work, anchors, panels, gates and tests are
never bound, so they cannot be read. Every command gets its own network namespace (no
interfaces but loopback), its own pid namespace (killing the sandbox's first process kills
every descendant, double-forked daemons included), and rlimits (address space, CPU time,
file size, core dumps) applied by `prlimit` just before the command.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.venv import venv_base_prefix

DATA = "/root/data"
WORK = "/root/work"
RESULTS = "/root/results"
MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed command (wall clock enforced by the caller)."""

    wall_sec: float
    cpus: int = 2
    memory_mb: int | None = 8192  # RLIMIT_AS; None for runtimes that reserve huge VA (node)
    cpu_sec: int | None = None  # default: wall * cpus + 5
    fsize_mb: int = 2048
    nofile: int = 4096

    def prlimit_argv(self, wall_sec: float | None = None) -> list[str]:
        wall = self.wall_sec if wall_sec is None else wall_sec
        cpu = self.cpu_sec if self.cpu_sec is not None else int(wall * max(self.cpus, 1)) + 5
        args = ["/usr/bin/prlimit", f"--cpu={cpu}", f"--fsize={self.fsize_mb * MiB}", "--core=0"]
        args.append(f"--nofile={self.nofile}")
        if self.memory_mb is not None:
            args.append(f"--as={self.memory_mb * MiB}")
        return [*args, "--"]


@dataclass(frozen=True)
class Bind:
    """One host path made visible inside the sandbox."""

    src: Path
    dest: str
    rw: bool = False


@dataclass(frozen=True)
class Layout:
    """What one trial's sandbox contains."""

    data_dir: Path
    work_dir: Path
    results_dir: Path
    venv: Path | None = None
    extra: tuple[Bind, ...] = ()

    def binds(self) -> list[Bind]:
        out = [Bind(self.data_dir, DATA), Bind(self.work_dir, WORK, True)]
        out.append(Bind(self.results_dir, RESULTS, True))
        if self.venv is not None:
            base = venv_base_prefix(self.venv)
            if not _under(base, "/usr"):
                out.append(Bind(base, str(base)))
            out.append(Bind(self.venv, str(self.venv)))
        out.extend(self.extra)
        return out


def _under(path: Path, root: str) -> bool:
    return path == Path(root) or Path(root) in path.parents


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
    bwrap: str = "bwrap",
) -> list[str]:
    """The full bubblewrap command line (pure: tests inspect it).

    As root, every namespace but the user namespace is unshared and every capability is
    dropped explicitly (the process is uid 0 with an empty capability set). A user namespace makes bwrap's child block on an
    eventfd until its parent has written the uid map, *before* --die-with-parent is armed:
    a sweep killed in that window left that child blocked forever. Without root, the user
    namespace is needed and --unshare-all keeps it.
    """
    unshare = (
        [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",  # root without a user namespace would otherwise keep every capability
        ]
        if os.geteuid() == 0
        else ["--unshare-all"]
    )
    cmd = [bwrap, *unshare, "--die-with-parent", "--new-session", "--clearenv"]
    cmd += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in ("bin", "lib", "lib64", "sbin", "lib32", "libx32"):
        link = Path("/") / name
        if link.is_symlink():
            cmd += ["--symlink", os.readlink(link), f"/{name}"]
        elif link.is_dir():
            cmd += ["--ro-bind", str(link), f"/{name}"]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/root"]
    for b in layout.binds():
        cmd += ["--bind" if b.rw else "--ro-bind", str(b.src), b.dest]
    cmd += ["--remount-ro", "/", "--chdir", WORK]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    return [*cmd, "--", *limits.prlimit_argv(wall_sec), *argv]


def unshare_argv(
    layout: Layout,
    limits: Limits,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    root_dir: Path,
    wall_sec: float | None = None,
) -> list[str]:
    """Fallback without bubblewrap: unshare(1) plus a setup script that builds the same
    root under `root_dir` (an empty host dir) and chroots into it. Needs root or user
    namespaces (then `--map-root-user`)."""
    q = shlex.quote
    r = q(str(root_dir))
    lines = [
        "set -eu",
        f"R={r}",
        'mount -t tmpfs -o mode=755 tbmm-root "$R"',
        'mkdir -p "$R/usr" "$R/etc" "$R/proc" "$R/dev" "$R/tmp" "$R/root"',
        'mount --bind /usr "$R/usr"; mount -o remount,bind,ro "$R/usr"',
        'mount --bind /etc "$R/etc"; mount -o remount,bind,ro "$R/etc"',
    ]
    for name in ("bin", "lib", "lib64", "sbin", "lib32", "libx32"):
        link = Path("/") / name
        if link.is_symlink():
            lines.append(f'ln -s {q(os.readlink(link))} "$R/{name}"')
        elif link.is_dir():
            lines.append(f'mkdir -p "$R/{name}"; mount --bind /{name} "$R/{name}"')
            lines.append(f'mount -o remount,bind,ro "$R/{name}"')
    lines += [
        'mount -t proc -o nosuid,nodev,noexec proc "$R/proc"',
        'mount -t tmpfs -o mode=755 tbmm-dev "$R/dev"',
        "for d in null zero full random urandom tty; do",
        '  touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done',
        'mkdir -p "$R/dev/shm" "$R/dev/pts"; mount -t tmpfs tbmm-shm "$R/dev/shm"',
        'ln -s /proc/self/fd "$R/dev/fd"',
        'mount -t tmpfs -o mode=1777 tbmm-tmp "$R/tmp"',
        'mount -t tmpfs -o mode=700 tbmm-home "$R/root"',
    ]
    for b in layout.binds():
        dest = q(b.dest)
        kind = "mkdir -p" if b.src.is_dir() else "touch"
        if not b.src.is_dir():
            lines.append(f'mkdir -p "$R"/$(dirname {dest})')
        lines.append(f'{kind} "$R"{dest}; mount --bind {q(str(b.src))} "$R"{dest}')
        if not b.rw:
            lines.append(f'mount -o remount,bind,ro "$R"{dest}')
    lines += [
        'mount -o remount,ro "$R"',
        "if command -v ip >/dev/null 2>&1; then ip link set lo up || true;",
        f"else python3 -c {q(_LO_UP)} || true; fi",
    ]
    envs = [f"{k}={v}" for k, v in env.items()]
    inner = [
        "/usr/sbin/chroot",
        str(root_dir),
        # Drop every capability (empty bounding set: the exec below leaves uid 0 with none),
        # so the agent cannot undo the read-only mounts or leave the chroot.
        "/usr/bin/setpriv",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--ambient-caps=-all",
        "--no-new-privs",
        "--",
        "/usr/bin/env",
        "-i",
        f"--chdir={WORK}",
        *envs,
        *limits.prlimit_argv(wall_sec),
        *argv,
    ]
    lines.append("exec " + shlex.join(inner))
    cmd = ["unshare", "--mount", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
    cmd += ["--propagation", "private"]
    if os.geteuid() != 0:
        cmd += ["--user", "--map-root-user"]
    return [*cmd, "--", "/bin/sh", "-c", "\n".join(lines)]


# Bring loopback up without iproute2 (SIOCGIFFLAGS / SIOCSIFFLAGS, IFF_UP).
_LO_UP = (
    "import fcntl, socket, struct\n"
    "s = socket.socket()\n"
    "r = fcntl.ioctl(s, 0x8913, struct.pack('16sH14x', b'lo', 0))\n"
    "f = struct.unpack('16sH14x', r)[1]\n"
    "fcntl.ioctl(s, 0x8914, struct.pack('16sH14x', b'lo', f | 1))\n"
)


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


def run_killable(
    cmd: Sequence[str],
    *,
    timeout: float,
    stdin: bytes | None = None,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    capture_limit: int = MiB,
    env: Mapping[str, str] | None = None,
) -> ExecResult:
    """Run `cmd` in its own process group; on timeout SIGKILL the whole group.

    With a pid namespace inside, the killed sandbox's init takes every descendant with it.
    Output goes to files (not pipes) so a chatty command cannot exhaust our memory.
    """
    tmp = Path(tempfile.mkdtemp(prefix="tbmm-exec-"))
    if _SETPRIV:
        # If this process dies (even by SIGKILL), the kernel kills the sandbox too.
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
                env=dict(env) if env is not None else {"PATH": os.environ.get("PATH", "")},
            )
            with _LIVE_LOCK:
                _LIVE.add(proc)
            feeder = None
            if stdin is not None:
                feeder = threading.Thread(target=_feed, args=(proc, stdin), daemon=True)
                feeder.start()
            try:
                try:
                    proc.wait(timeout=max(timeout, 0.0))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill_group(proc)
                    proc.wait()
            finally:
                with _LIVE_LOCK:
                    _LIVE.discard(proc)
            if feeder is not None:
                feeder.join(timeout=5)
        duration = time.monotonic() - start
        out, out_trunc = _read_capped(out_p, capture_limit)
        err, err_trunc = _read_capped(err_p, capture_limit)
        code = proc.returncode
        return ExecResult(
            exit_code=None if timed_out else code,
            stdout=out,
            stderr=err,
            duration_s=duration,
            timed_out=timed_out,
            stdout_truncated=out_trunc,
            stderr_truncated=err_trunc,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_SETPRIV = shutil.which("setpriv")
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
ABORT = threading.Event()  # set on Ctrl-C: agents stop, running sandboxes are killed


def kill_all_sandboxes() -> int:
    """SIGKILL every sandbox this process is running (Ctrl-C of a sweep); returns how many."""
    with _LIVE_LOCK:
        live = [p for p in _LIVE if p.returncode is None]
        for proc in live:
            _kill_group(proc)
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


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def unshare_works() -> bool:
    """Whether `unshare` can create the namespaces we need (root or user namespaces)."""
    if shutil.which("unshare") is None:
        return False
    probe = ["unshare", "--mount", "--net", "--pid", "--fork"]
    if os.geteuid() != 0:
        probe += ["--user", "--map-root-user"]
    try:
        proc = subprocess.run([*probe, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@dataclass
class SandboxSession:
    """One trial's sandbox. Every `exec` is a fresh sandbox over the same work and results
    dirs: files persist between commands, processes do not (the pid namespace dies with
    the command)."""

    layout: Layout
    limits: Limits
    method: str  # "bwrap" | "unshare"
    scratch: Path
    env: dict[str, str] = field(default_factory=dict)
    _count: int = 0

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
    ) -> list[str]:
        limits = self.limits if limit_memory else _no_as(self.limits)
        full_env = sandbox_env(self.layout, limits, {**self.env, **(env or {})})
        if self.method == "bwrap":
            return bwrap_argv(self.layout, limits, argv, full_env, wall_sec=wall_sec)
        self._count += 1
        root = self.scratch / f"root{self._count}"
        root.mkdir(parents=True, exist_ok=True)
        return unshare_argv(self.layout, limits, argv, full_env, root_dir=root, wall_sec=wall_sec)

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
        cmd = self.command_line(argv, wall_sec=timeout, env=env, limit_memory=limit_memory)
        return run_killable(
            cmd,
            timeout=timeout,
            stdin=stdin,
            stdout_path=stdout_path,
            stderr_path=stderr_path,
            capture_limit=capture_limit,
        )

    def write_file(self, dest: str, data: bytes, *, timeout: float = 60.0) -> ExecResult:
        """Write bytes at a sandbox path from inside (the agent's own permissions apply)."""
        return self.exec(
            ["/bin/sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", dest],
            stdin=data,
            timeout=timeout,
        )

    def close(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)


def _no_as(limits: Limits) -> Limits:
    return Limits(
        wall_sec=limits.wall_sec,
        cpus=limits.cpus,
        memory_mb=None,
        cpu_sec=limits.cpu_sec,
        fsize_mb=limits.fsize_mb,
        nofile=limits.nofile,
    )


class SandboxBackend:
    """Daemon-less backend; `method` is "bwrap", "unshare" or "auto" (bwrap if installed)."""

    name = "sandbox"

    def __init__(self, method: str = "auto", venv: Path | None = None) -> None:
        if method == "auto":
            method = "bwrap" if bwrap_path() else "unshare"
        if method not in ("bwrap", "unshare"):
            raise ValueError(f"unknown sandbox method {method!r}")
        self.method = method
        self.venv = venv

    def describe(self) -> str:
        return f"sandbox ({self.method})"

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
        work = trial_dir / "work"
        results = trial_dir / "results"
        scratch = trial_dir / "scratch"
        for d in (work, results, scratch):
            d.mkdir(parents=True, exist_ok=True)
        layout = Layout(
            data_dir=Path(data_dir).resolve(),
            work_dir=work.resolve(),
            results_dir=results.resolve(),
            venv=self.venv,
            extra=tuple(extra),
        )
        return SandboxSession(layout, limits, self.method, scratch.resolve(), dict(env or {}))
