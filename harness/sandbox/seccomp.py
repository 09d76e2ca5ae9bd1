"""The sandbox's seccomp filter: a classic BPF program generated here, loaded by bubblewrap
(`bwrap --seccomp FD`) into every process of the sandbox before the command runs.

Why: the agent runs unprivileged with no capability, but a few system calls open kernel
surface it never needs and that has a history of privilege escalations (io_uring, eBPF,
perf events, userfaultfd, keyrings), let it inspect or steer other processes of the sandbox
(ptrace, process_vm_*), or reach mount machinery (the mount family, including the new mount
API) and kernel loading (kexec, modules). Each is answered EPERM before the kernel sees it;
every other call is allowed (an allow-list would break the scientific stack and the CLIs).

The program checks the architecture first: only x86_64 system calls are filtered by number
(`DENIED`), so a call made through another ABI (i386 `int 0x80` from a 64-bit process) or
with the x32 bit set could dodge the table; an i386 call kills the process, an x32 one is
denied. Other machines get no filter (`program()` is None) and the isolation table says so.

Why not libseccomp: its Python bindings (Debian python3-seccomp) are not importable from
the project's venv, and the program is small enough to write with the classic BPF opcodes.
"""

from __future__ import annotations

import errno
import platform
import struct

# x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl); name -> number.
DENIED: dict[str, int] = {
    "ptrace": 101,
    "pivot_root": 155,
    "mount": 165,
    "umount2": 166,
    "init_module": 175,
    "delete_module": 176,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "perf_event_open": 298,
    "open_by_handle_at": 304,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "open_tree_attr": 467,
}

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
# offsets in struct seccomp_data
NR_OFFSET, ARCH_OFFSET = 0, 4
# classic BPF opcodes
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    """One `struct sock_filter` (u16 code, u8 jt, u8 jf, u32 k), native (little) endian."""
    return struct.pack("<HBBI", code, jt, jf, k)


def build(denied: dict[str, int] | None = None) -> bytes:
    """The filter program: arch check, x32 check, one comparison per denied call."""
    numbers = sorted(set((DENIED if denied is None else denied).values()))
    m = len(numbers)
    if m > 250:
        raise ValueError("too many denied system calls for 8-bit jump offsets")
    deny, kill = 5 + m, 6 + m  # indices of two of the returns (allow is at 4 + m)
    prog = [
        _insn(LD_W_ABS, 0, 0, ARCH_OFFSET),
        _insn(JEQ_K, 0, kill - 2, AUDIT_ARCH_X86_64),
        _insn(LD_W_ABS, 0, 0, NR_OFFSET),
        _insn(JGE_K, deny - 4, 0, X32_SYSCALL_BIT),
    ]
    for j, nr in enumerate(numbers):
        prog.append(_insn(JEQ_K, deny - (5 + j), 0, nr))
    prog += [
        _insn(RET_K, 0, 0, SECCOMP_RET_ALLOW),
        _insn(RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM),
        _insn(RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    assert len(prog) == kill + 1
    return b"".join(prog)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine, or None where the table does not apply."""
    if (machine or platform.machine()) != "x86_64":
        return None
    return build()


def run(prog: bytes, nr: int, arch: int = AUDIT_ARCH_X86_64) -> int:
    """What the kernel would return for call `nr` under `prog` (a classic BPF interpreter for
    the opcodes `build` uses; for tests and for reading the program back)."""
    data = struct.pack("<iI", nr, arch) + bytes(56)
    insns = [struct.unpack_from("<HBBI", prog, i) for i in range(0, len(prog), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == LD_W_ABS:
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code in (JEQ_K, JGE_K):
            hit = acc == k if code == JEQ_K else acc >= k
            pc += 1 + (jt if hit else jf)
        elif code == RET_K:
            return k
        else:
            raise ValueError(f"opcode {code:#x} not supported")
