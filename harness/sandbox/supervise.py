"""Per-command supervisor: puts the sandbox in the trial's cgroup and kills that cgroup.

Run as its own small process (`python -S supervise.py --ppid P --join F ... --cgroup D ...
-- argv`), stdlib only. It forks; the child writes itself into every `--join` file (the
trial cgroup's `cgroup.procs`) and only then execs `argv` (setpriv -> bwrap), so nothing of
the sandbox ever runs outside the cgroup. The supervisor itself stays outside and:

* gets SIGTERM when the harness dies (PR_SET_PDEATHSIG, armed before anything else and
  re-checked against `--ppid` so a harness that died first is not missed);
* on that signal, or when its child has exited, kills every process in the cgroup.

Why a supervisor and not bwrap's --die-with-parent alone: bwrap's child blocks on an eventfd
until bwrap's parent half has set it up, and arms its own parent-death signal only just
before exec. A bwrap killed in that window (its parent died at the wrong moment) left the
child blocked forever, with or without a user namespace (measured: about 1 in 10 kills
during start-up). Killing the cgroup takes every process of the sandbox, in whatever state.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1


def cgroup_pids(dirs: list[Path]) -> set[int]:
    """Every process currently in any of these cgroup dirs."""
    pids: set[int] = set()
    for d in dirs:
        with contextlib.suppress(OSError):
            pids.update(int(x) for x in (d / "cgroup.procs").read_text().split())
    return pids


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


def kill_cgroups(dirs: list[Path], *, timeout: float = 10.0) -> int:
    """SIGKILL every process in `dirs` until they are empty; returns how many were signalled.

    cgroup v2 `cgroup.kill` does it atomically. Otherwise the cgroup is frozen (v1
    freezer / v2 cgroup.freeze) so nothing can fork while it is being emptied; the kill
    takes effect when it is thawed. Without a freezer the loop still ends: the pids limit
    bounds how many processes a fork bomb can add between two rounds.
    """
    killed = 0
    deadline = time.monotonic() + timeout
    while True:
        pids = cgroup_pids(dirs)
        if not pids:
            return killed
        for d in dirs:
            if (d / "cgroup.kill").exists():
                _write(d / "cgroup.kill", "1")
        frozen = [d for d in dirs if _freeze(d, True)]
        for pid in cgroup_pids(dirs):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        for d in frozen:
            _freeze(d, False)
        if time.monotonic() > deadline:
            return killed
        time.sleep(0.01)


def _freeze(d: Path, on: bool) -> bool:
    if (d / "freezer.state").exists():
        return _write(d / "freezer.state", "FROZEN" if on else "THAWED")
    if (d / "cgroup.freeze").exists():
        return _write(d / "cgroup.freeze", "1" if on else "0")
    return False


def _parse(argv: list[str]) -> tuple[int, list[Path], list[Path], list[str]]:
    ppid, joins, dirs = -1, [], []
    i = 0
    while i < len(argv) and argv[i] != "--":
        key, value = argv[i], argv[i + 1]
        if key == "--ppid":
            ppid = int(value)
        elif key == "--join":
            joins.append(Path(value))
        elif key == "--cgroup":
            dirs.append(Path(value))
        else:
            raise SystemExit(f"supervise: unknown option {key}")
        i += 2
    return ppid, joins, dirs, argv[i + 1 :]


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


def main(argv: list[str]) -> int:
    ppid, joins, dirs, cmd = _parse(argv)
    if not cmd:
        raise SystemExit("supervise: no command")
    # Signals stay blocked and are taken with sigtimedwait: one that arrives at any point
    # (even before the child exists) is seen, never lost between a check and a fork.
    waited = {*STOP_SIGNALS, signal.SIGCHLD}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, waited)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != ppid:  # the harness died before the death signal was armed
        return 128 + signal.SIGTERM
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        for f in joins:
            if not _write(f, "0"):  # "0" = the writing process
                os.write(2, f"tbmm supervise: cannot join cgroup {f}\n".encode())
                os._exit(125)
        try:
            # An empty environment: the sandbox's pid 1 (bwrap) must hold nothing of the
            # host, and Python's locale coercion may have added LC_CTYPE to ours.
            os.execve(cmd[0], cmd, {})
        except OSError as exc:
            os.write(2, f"tbmm supervise: cannot run {cmd[0]}: {exc}\n".encode())
            os._exit(127)
    stopped = 0
    while True:
        info = signal.sigtimedwait(waited, 1.0)
        if info is not None and info.si_signo in STOP_SIGNALS:
            stopped = stopped or info.si_signo
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)  # not yet in the cgroup, or its first process
            kill_cgroups(dirs)
            continue
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
    kill_cgroups(dirs)  # leftovers (a stranded bwrap half, anything the pid namespace missed)
    if stopped:
        return 128 + stopped
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
