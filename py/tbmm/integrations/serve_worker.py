"""The judging processes of `tbmm serve`: the event loop only moves bytes.

A hostile body (60 MiB of numbers, a 4 MiB artifact the JSON scanner takes in one C call)
holds the GIL of whichever process scans it; a thread of the server's own process competes
with the event loop for it, and /healthz waits. So the scan, the parse and the verdict run in
separate processes, one request at a time each, started by the server and fed through a
pipe: the server streams the body into the pipe chunk by chunk as it arrives (never holding
it whole) and reads the answer back, all with non-blocking I/O on the loop.

Each judging process limits itself:
* memory: RLIMIT_AS at its size after start-up plus `memory_mib` (an allocation past it is
  a MemoryError: 503, no verdict); lifted only while the Lean kernel runs (Lean's children
  reserve address space they never touch, and have their own CPU limit);
* CPU: RLIMIT_CPU's soft limit at what it has used plus the request's budget
  (REQUEST_CPU_BUDGET_S of serve, checked between items as well) plus a margin; past it
  the kernel signals every second until the request ends with 503;
* priority: nice 10, so that on a loaded CPU the event loop is scheduled first;
* after a request that left it above `recycle_mib` of RSS, or ended at a limit, it exits,
  so that no request inherits another's heap (a verdict, or a 503, must not depend on
  what came before); the server starts another.

Wire format (all integers big-endian): a request is one op byte (`v` verify, `o` OpenRLHF)
then frames of a 4-byte length and that many bytes; length 0 ends the body, 0xFFFFFFFF
abandons it (the client left or the body passed the cap; nothing is answered). The answer
is a 2-byte HTTP status, a 4-byte length, the process's peak RSS in KiB (4 bytes), a byte
saying whether it exits now (1) or takes another request (0), then the JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import struct
import sys
import weakref
from collections.abc import Iterator
from typing import Any

OP_VERIFY, OP_OPENRLHF = b"v", b"o"
END, ABORT = 0, 0xFFFFFFFF
FRAME = struct.Struct(">I")
ANSWER = struct.Struct(">HIIB")
MEMORY_MIB = 448  # address space a judging process may add to its start-up size
RECYCLE_MIB = 192  # RSS above which a judging process is replaced after its request
NICE = 10  # judging processes yield the CPU to the server's event loop
CPU_MARGIN_S = 30  # RLIMIT_CPU above the request's budget (the budget itself answers 503)
MiB = 1024 * 1024


def cpu_limit() -> int:
    """CPU seconds one request may use: serve's budget (checked between items, 503) plus a
    margin for one item that runs past it."""
    from tbmm.integrations.serve import REQUEST_CPU_BUDGET_S

    return int(REQUEST_CPU_BUDGET_S) + CPU_MARGIN_S


class CpuLimit(BaseException):
    """SIGXCPU: the request used its CPU limit (a BaseException: no handler of the
    verification code may turn it into a verdict)."""


def _read_exact(fd: int, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        b = os.read(fd, min(n - got, 1 << 20))
        if not b:
            raise EOFError
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


@contextlib.contextmanager
def unlimited_memory() -> Iterator[None]:
    """Lift RLIMIT_AS (its soft limit) while children that need their own address space
    run (the Lean kernel); restored after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def judge(op: bytes, body: bytearray) -> tuple[int, bytes]:
    """One request's answer: (HTTP status, JSON bytes)."""
    from tbmm.integrations import bodyscan, serve

    try:
        if op == OP_VERIFY:
            items, reward = bodyscan.verify_body(body, serve.MAX_ITEMS)
            out: Any = serve.verify_items(body, items, reward, lean_guard=unlimited_memory)
        elif op == OP_OPENRLHF:
            from tbmm.rewards import openrlhf_reward

            payload = bodyscan.string_lists(body, ("query", "prompts", "labels"), serve.MAX_ITEMS)
            try:
                out = openrlhf_reward(payload)
            except (ValueError, KeyError) as exc:
                raise serve.HttpError(422, str(exc)) from exc
        else:
            raise serve.HttpError(400, f"unknown operation {op!r}")
    except bodyscan.BodyError as exc:
        return exc.status, _error(exc.detail)
    except serve.HttpError as exc:
        return exc.status, _error(exc.detail)
    return 200, json.dumps(out, separators=(",", ":")).encode()


def _error(detail: str) -> bytes:
    return json.dumps({"error": detail}).encode()


def serve_forever(
    in_fd: int, out_fd: int, memory_mib: int, recycle_mib: int, cpu_limit_s: int
) -> None:
    """Answer requests from `in_fd` on `out_fd` until EOF, a limit, or `recycle_mib`."""

    def on_xcpu(signum: int, frame: Any) -> None:
        raise CpuLimit

    signal.signal(signal.SIGXCPU, on_xcpu)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server stops us by closing the pipe
    # loaded before the size is taken: not charged to any request
    import tbmm.api  # noqa: F401
    import tbmm.rewards  # noqa: F401
    from tbmm.integrations import bodyscan, serve  # noqa: F401

    base = _status_kib("VmSize") * 1024
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    limit = base + memory_mib * MiB
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    budget = cpu_limit_s
    while True:
        try:
            op = os.read(in_fd, 1)
        except OSError:
            return
        if not op:
            return
        body = bytearray()
        try:
            while True:
                (n,) = FRAME.unpack(_read_exact(in_fd, 4))
                if n in (END, ABORT):
                    break
                body += _read_exact(in_fd, n)
        except EOFError:
            return
        if n == ABORT:
            continue
        used = resource.getrusage(resource.RUSAGE_SELF)
        spent = int(used.ru_utime + used.ru_stime) + 1
        cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        limited = False
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (spent + budget, cpu_hard))
            status, answer = judge(op, body)
        except MemoryError:
            limited = True
            status, answer = 503, _error(f"the request needed more than {memory_mib} MiB")
        except CpuLimit:
            limited = True
            status, answer = 503, _error(f"the request used its CPU limit of {budget} s")
        finally:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_hard, cpu_hard))
        del body
        last = limited or _status_kib("VmRSS") > recycle_mib * 1024
        head = ANSWER.pack(status, len(answer), _status_kib("VmHWM"), int(last))
        _write_all(out_fd, head + answer)
        if last:
            return  # a fresh process for the next request


# -- the server's side: processes, and non-blocking pipe I/O on whichever loop runs --------


class WorkerGone(Exception):
    """The judging process ended during a request (a limit, or a crash)."""


async def _ready(fd: int, *, reading: bool) -> None:
    """Wait, on the running loop, until `fd` can be read (or written) without blocking."""
    import asyncio

    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def ready() -> None:
        if not fut.done():
            fut.set_result(None)

    if reading:
        loop.add_reader(fd, ready)
    else:
        loop.add_writer(fd, ready)
    try:
        await fut
    finally:
        if reading:
            loop.remove_reader(fd)
        else:
            loop.remove_writer(fd)


class Worker:
    """One judging process and its pipes (non-blocking: the loop never waits on them)."""

    def __init__(self, memory_mib: int, recycle_mib: int, cpu_limit_s: int) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tbmm.integrations.serve_worker",
                str(memory_mib),
                str(recycle_mib),
                str(cpu_limit_s),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd, self.rfd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.wfd, False)
        os.set_blocking(self.rfd, False)
        self.last = False  # it said it exits after its answer

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return not self.last and self.proc.poll() is None

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.wfd, view) :]
                continue
            except BlockingIOError:
                pass
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise WorkerGone(self.why()) from exc
            await _ready(self.wfd, reading=False)

    async def read_exact(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            try:
                b = os.read(self.rfd, min(n - got, 1 << 20))
            except BlockingIOError:
                await _ready(self.rfd, reading=True)
                continue
            if not b:
                raise WorkerGone(self.why())
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def why(self) -> str:
        try:
            code = self.proc.wait(timeout=1)  # its pipe closed: it is exiting
        except Exception:  # noqa: BLE001 - still running: say so
            return "the judging process stopped answering"
        if code == -signal.SIGXCPU or code == -signal.SIGKILL:
            return f"the judging process was stopped at its CPU or memory limit (signal {-code})"
        return f"the judging process ended (exit {code})"

    def close(self, wait: bool = False) -> None:
        """End it, without blocking the loop: closing its stdin ends an idle one (it reads
        EOF); one that may be busy is killed. Reaped by `reaped()` (or here, if `wait`)."""
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]
        if wait:
            with contextlib.suppress(Exception):  # a busy one: killed below
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            if wait:
                self.proc.wait()

    def reaped(self) -> bool:
        return self.proc.poll() is not None


class Pool:
    """At most `size` judging processes, each judging one request at a time; requests
    beyond wait unread (their bytes stay in the socket: backpressure)."""

    def __init__(
        self,
        size: int,
        memory_mib: int = MEMORY_MIB,
        recycle_mib: int = RECYCLE_MIB,
        cpu_limit_s: int | None = None,
    ) -> None:
        import asyncio

        self.size, self.memory_mib, self.recycle_mib = size, memory_mib, recycle_mib
        self.cpu_limit_s = cpu_limit() if cpu_limit_s is None else cpu_limit_s
        self.gate = asyncio.Semaphore(size)
        self.idle: list[Worker] = []
        self.busy: set[Worker] = set()
        self.dying: list[Worker] = []  # closed, not yet reaped
        # an app dropped without a shutdown (a test's client) takes its processes with it
        weakref.finalize(self, _close_all, self.idle, self.busy, self.dying)

    def _retire(self, w: Worker) -> None:
        w.close()
        self.dying[:] = [d for d in self.dying if not d.reaped()]
        if not w.reaped():
            self.dying.append(w)

    def pids(self) -> list[int]:
        return sorted(w.pid for w in [*self.idle, *self.busy] if w.proc.poll() is None)

    def start(self) -> None:
        """Start the processes ahead of the first request."""
        while len(self.idle) + len(self.busy) < self.size:
            self.idle.append(Worker(self.memory_mib, self.recycle_mib, self.cpu_limit_s))

    async def run(self, op: bytes, chunks: Any, max_bytes: int) -> tuple[int, bytes, int]:
        """Stream a body (an async iterator of chunks, at most `max_bytes`) to a judging
        process; (HTTP status, JSON answer, the process's peak RSS in KiB). Past the cap the
        body is abandoned: BodyTooLarge. A process that ends mid-request: WorkerGone."""
        async with self.gate:
            w = None
            while self.idle and w is None:
                cand = self.idle.pop()
                if cand.alive():
                    w = cand
                else:
                    self._retire(cand)
            if w is None:
                w = Worker(self.memory_mib, self.recycle_mib, self.cpu_limit_s)
            self.busy.add(w)
            ok = False
            try:
                await w.write(op)
                total = 0
                async for chunk in chunks:
                    if not chunk:
                        continue
                    total += len(chunk)
                    if total > max_bytes:
                        await w.write(FRAME.pack(ABORT))
                        ok = True
                        raise BodyTooLarge(max_bytes)
                    await w.write(FRAME.pack(len(chunk)) + chunk)
                await w.write(FRAME.pack(END))
                status, length, hwm, last = ANSWER.unpack(await w.read_exact(ANSWER.size))
                answer = await w.read_exact(length)
                w.last = bool(last)
                ok = True
                return status, answer, hwm
            finally:
                self.busy.discard(w)
                if ok and w.alive():
                    self.idle.append(w)
                else:  # mid-request (the client left, the process died): never reused
                    self._retire(w)

    def close(self) -> None:
        _close_all(self.idle, self.busy, self.dying)


def _close_all(*groups: Any) -> None:
    for group in groups:
        for w in list(group):
            w.close(wait=True)
        group.clear()


class BodyTooLarge(Exception):
    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"the body exceeds {max_bytes} bytes")


def main() -> None:
    memory_mib = int(sys.argv[1]) if len(sys.argv) > 1 else MEMORY_MIB
    recycle_mib = int(sys.argv[2]) if len(sys.argv) > 2 else RECYCLE_MIB
    cpu_limit_s = int(sys.argv[3]) if len(sys.argv) > 3 else cpu_limit()
    with contextlib.suppress(OSError):
        os.nice(NICE)  # the loop, which only moves bytes, goes first on a busy CPU
    # the protocol owns the pipes: anything printed goes to stderr
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    serve_forever(in_fd, out_fd, memory_mib, recycle_mib, cpu_limit_s)


if __name__ == "__main__":
    main()
