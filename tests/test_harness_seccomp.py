"""The sandbox's seccomp filter (harness.sandbox.seccomp): the program is read back with a BPF
interpreter, then every denied system call is made for real inside a sandbox, with and
without the filter, so each test shows the filter (not the kernel's own checks) refusing."""

from __future__ import annotations

import json
import re
import signal
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness.sandbox import seccomp
from harness.sandbox.bwrap import Limits, SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import make_fake_task

EPERM_RET = seccomp.SECCOMP_RET_ERRNO | 1
ALLOWED = {"read": 0, "write": 1, "mmap": 9, "clone": 56, "execve": 59, "getpid": 39,
           "socket": 41, "connect": 42, "futex": 202, "openat": 257, "clone3": 435,
           "unshare": 272, "setns": 308}  # fmt: skip
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_AARCH64 = 0xC00000B7
HEADER = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


@pytest.mark.slow
def test_the_program_denies_exactly_the_table_and_checks_the_architecture() -> None:
    prog = seccomp.build()
    for name, nr in seccomp.DENIED.items():
        assert seccomp.run(prog, nr) == EPERM_RET, name
    for name, nr in ALLOWED.items():
        assert seccomp.run(prog, nr) == seccomp.SECCOMP_RET_ALLOW, name
    # every other number up to the highest denied one is allowed
    denied = set(seccomp.DENIED.values())
    for nr in range(max(denied) + 8):
        want = EPERM_RET if nr in denied else seccomp.SECCOMP_RET_ALLOW
        assert seccomp.run(prog, nr) == want, nr
    # x32 calls (the x32 bit set) are denied; other ABIs' calls kill the process
    assert seccomp.run(prog, seccomp.X32_SYSCALL_BIT | 39) == EPERM_RET
    assert seccomp.run(prog, seccomp.X32_SYSCALL_BIT | 101) == EPERM_RET
    for arch in (AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64, 0):
        assert seccomp.run(prog, 20, arch) == seccomp.SECCOMP_RET_KILL_PROCESS
        assert seccomp.run(prog, 26, arch) == seccomp.SECCOMP_RET_KILL_PROCESS  # ptrace, i386
    assert seccomp.program("aarch64") is None and seccomp.program("x86_64") == prog


def test_the_table_matches_the_systems_syscall_numbers() -> None:
    if not HEADER.exists():
        print(f"SKIP reason: no {HEADER} to compare with")
        pytest.skip(f"no {HEADER}")
    known = dict(re.findall(r"#define __NR_(\w+) (\d+)", HEADER.read_text()))
    checked = {n: nr for n, nr in seccomp.DENIED.items() if n in known}
    assert {n: int(known[n]) for n in checked} == checked
    print(f"checked {len(checked)} of {len(seccomp.DENIED)} numbers against {HEADER}")
    assert len(checked) >= len(seccomp.DENIED) - 1  # open_tree_attr is newer than some headers


# Arguments that make the kernel itself answer something other than EPERM wherever it can
# (a NULL pointer, a bad descriptor, an unknown operation), so a refusal is the filter's.
PROBE = """
import ctypes, json, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ARGS = {
    "ptrace": (2, 0, 0, 0), "perf_event_open": (0, 0, -1, -1, 0), "keyctl": (9999, 0, 0, 0, 0),
    "io_uring_enter": (-1, 0, 0, 0, 0, 0), "io_uring_register": (-1, 0, 0, 0),
    "open_tree": (-1, 0, 0xFFFFFFFF), "bpf": (9999, 0, 0), "userfaultfd": (0xFFFF,),
}
out = {}
for name, nr in json.loads(sys.argv[1]).items():
    ctypes.set_errno(0)
    r = libc.syscall(nr, *[ctypes.c_long(x) for x in ARGS.get(name, (0,) * 6)])
    out[name] = 0 if r >= 0 else ctypes.get_errno()
status = [ln.split(":")[1].strip() for ln in open("/proc/self/status") if ln.startswith("Seccomp")]
print(json.dumps({"calls": out, "seccomp": status}), flush=True)
if sys.argv[2] == "i386":  # mov eax, 20 (getpid on i386); int 0x80; ret
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes.fromhex("b814000000cd80c3"))
    addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    print("i386 getpid returned", ctypes.CFUNCTYPE(ctypes.c_int)(addr)(), flush=True)
"""


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Any]:
    """The probe's results in a sandbox with the filter (True) and without (False)."""
    if not bwrap_path():
        pytest.skip("bubblewrap not installed")
    if seccomp.program() is None:
        print("SKIP reason: no seccomp table for this machine's architecture")
        pytest.skip("not x86_64")
    tmp = tmp_path_factory.mktemp("seccomp")
    task = make_fake_task(tmp / "tasks")
    backend = SandboxBackend("bwrap", ensure_agent_venv())
    out: dict[bool, Any] = {}
    for on in (False, True):
        s = backend.open(
            data_dir=task.data_dir,
            trial_dir=tmp / f"trial-{on}",
            limits=Limits(wall_sec=60, memory_mb=1024, storage_mb=256),
        )
        s.seccomp = on
        try:
            calls = s.exec(["python", "-c", PROBE, json.dumps(seccomp.DENIED), "-"], timeout=60)
            i386 = s.exec(["python", "-c", PROBE, "{}", "i386"], timeout=60)
        finally:
            s.close()
        assert calls.exit_code == 0, calls.stderr
        out[on] = {"doc": json.loads(calls.stdout.splitlines()[0]), "i386": i386}
    print({name: (out[False]["doc"]["calls"][name], out[True]["doc"]["calls"][name])
           for name in seccomp.DENIED})  # fmt: skip
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(seccomp.DENIED))
def test_denied_inside_the_sandbox(name: str, probes: dict[bool, Any]) -> None:
    filtered, plain = probes[True]["doc"], probes[False]["doc"]
    assert filtered["seccomp"] == ["2", "1"]  # filter mode, one filter
    assert plain["seccomp"] == ["0", "0"]
    assert filtered["calls"][name] == 1  # EPERM
    # Without the filter the kernel answers otherwise (the call reached it), except where
    # it refuses by itself a process without capabilities (the mount API's new calls).
    if plain["calls"][name] == 1:
        assert name in {"pivot_root", "move_mount", "fsopen", "fsmount", "fspick"}, name


@pytest.mark.slow
def test_a_call_through_another_abi_kills_the_process(probes: dict[bool, Any]) -> None:
    plain, filtered = probes[False]["i386"], probes[True]["i386"]
    if plain.exit_code != 0:
        print(f"SKIP reason: no i386 emulation here ({plain.exit_code}: {plain.stderr[-200:]})")
        pytest.skip("the kernel does not run i386 calls")
    assert b"i386 getpid returned" in plain.stdout
    assert filtered.exit_code in (-signal.SIGSYS, 128 + signal.SIGSYS), filtered
    assert b"i386 getpid returned" not in filtered.stdout


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_the_scientific_stack_runs_under_the_filter(tmp_path: Path) -> None:
    task = make_fake_task(tmp_path / "tasks")
    s = SandboxBackend("bwrap", ensure_agent_venv()).open(
        data_dir=task.data_dir,
        trial_dir=tmp_path / "trial",
        limits=Limits(wall_sec=60, memory_mb=2048, storage_mb=256),
    )
    code = textwrap.dedent(
        """
        import multiprocessing as mp, numpy, pandas, scipy.optimize, subprocess
        with mp.Pool(2) as pool:
            print(sum(pool.map(abs, range(-5, 5))))
        print(subprocess.run(["sh", "-c", "echo sub"], capture_output=True, text=True).stdout)
        print(scipy.optimize.minimize_scalar(lambda x: (x - 2) ** 2).x.round(3))
        """
    )
    try:
        res = s.exec(["python", "-c", code], timeout=60)
    finally:
        s.close()
    assert res.exit_code == 0, res.stderr
    assert res.stdout.split() == [b"25", b"sub", b"2.0"]
