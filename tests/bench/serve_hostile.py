"""`tbmm serve` under hostile bodies: peak worker memory and /healthz latency (a benchmark).

    uv run python tests/bench/serve_hostile.py [--mib 60] [--kinds numbers,nested,...]

For each kind of body (about `--mib` MiB each), starts a fresh `tbmm serve --workers 1` on
a free port, warms it with one small verification, then posts the hostile body while a
thread polls /healthz (0.5 s timeout, every 0.1 s, over one kept-alive connection: a new
client per poll measured mostly its own set-up on a loaded machine); 20 polls of the idle server just
before say what the machine's load alone costs. Prints, per kind: the answer's status
and a line of its message, the wall time of the request, the /healthz latencies seen
during it (max, p50, failed polls), the peak RSS (VmHWM from /proc) of the server's own
process (the event loop) before and after, and the judging process's peak RSS during the
request (its own VmHWM, sent back in the x-tbmm-worker-peak-rss-kib header, and sampled
from /proc while the request runs), with the machine's load average.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

SLUG = "mcm-2025-b-juneau-tourism"
MiB = 1024 * 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fill(unit: bytes, size: int) -> bytes:
    return unit * max(1, size // len(unit))


def hostile_body(kind: str, size: int) -> bytes:
    """A body of about `size` bytes that is expensive to materialise as a Python tree."""
    head = b'{"items": [{"task": "' + SLUG.encode() + b'", "artifact": '
    tail = b"}]}"
    if kind == "numbers":  # one artifact: a list of millions of numbers
        art = b'{"q": {}, "pad": [' + _fill(b"1.5,", size)[:-1] + b"]}"
    elif kind == "nested":  # one artifact nested millions of levels deep
        n = size // 2
        art = b'{"a": ' + b"[" * n + b"]" * n + b"}"
    elif kind == "lists":  # millions of empty lists
        art = b'{"a": [' + _fill(b"[],", size)[:-1] + b"]}"
    elif kind == "digits":  # one number with tens of millions of digits
        art = b'{"a": ' + b"9" * size + b"}"
    elif kind == "keys":  # one object with millions of keys
        n = size // 13
        art = b"{" + b",".join(b'"k%07d":1' % i for i in range(n)) + b"}"
    elif kind == "text":  # the artifact as one huge JSON string of numbers
        art = b'"{\\"pad\\": [' + _fill(b"1.5,", size)[:-1] + b']}"'
    elif kind == "items":  # millions of tiny items
        one = b'{"task": "' + SLUG.encode() + b'", "artifact": {}}'
        return b'{"items": [' + b",".join([one] * (size // (len(one) + 1))) + b"]}"
    elif kind == "completion":  # a completion holding a huge object
        comp = b'"{\\"pad\\": [' + _fill(b"1.5,", size)[:-1] + b']}"'
        return b'{"items": [{"task": "' + SLUG.encode() + b'", "completion": ' + comp + tail
    elif kind == "capped":  # items just within the byte cap, each a tree of 2 M numbers
        art = b'{"q": {}, "pad": [' + _fill(b"1,", 4 * MiB - 64)[:-1] + b"]}"
        one = b'{"task": "' + SLUG.encode() + b'", "artifact": ' + art + b"}"
        return b'{"items": [' + b",".join([one] * max(1, size // len(one))) + b"]}"
    elif kind == "junk":  # numbers under a key serve does not use
        return b'{"items": [], "junk": [' + _fill(b"1.5,", size)[:-1] + b"]}"
    else:
        raise SystemExit(f"unknown kind {kind}")
    return head + art + tail


def vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def start_server(extra: list[str] | None = None) -> tuple[subprocess.Popen, str, int]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tbmm.cli.root", "serve", "--port", str(port), "--workers", "1"]
        + (extra or []),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{url}/healthz", timeout=1)
            if r.status_code == 200:
                return proc, url, r.json()["pid"]
        except httpx.HTTPError:
            time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError("server exited")
    proc.kill()
    raise RuntimeError("server did not come up")


def post_with_polls(url: str, body: bytes, poll_timeout: float = 0.5) -> dict:
    """Post `body` while polling /healthz; latencies of the polls during the request."""
    out: dict = {}

    def post() -> None:
        t0 = time.monotonic()
        try:
            r = httpx.post(
                f"{url}/v1/verify",
                content=body,
                headers={"content-type": "application/json"},
                timeout=900,
            )
            out["status"] = r.status_code
            out["worker_peak_kib"] = int(r.headers.get("x-tbmm-worker-peak-rss-kib", 0))
            out["text"] = r.text
            out["message"] = r.text[:160]
        except httpx.HTTPError as exc:
            out["status"] = None
            out["message"] = f"{type(exc).__name__}: {exc}"[:160]
        out["seconds"] = time.monotonic() - t0

    th = threading.Thread(target=post)
    th.start()
    poller = httpx.Client(
        timeout=poll_timeout
    )  # kept alive: the server's latency, not the client's set-up
    lat: list[float] = []
    failed = 0
    sampled = 0.0  # the judging processes' VmHWM seen from /proc while the request runs
    time.sleep(0.05)
    while th.is_alive():
        t0 = time.monotonic()
        pids: list[int] = []
        try:
            r = poller.get(f"{url}/healthz")
            ok = r.status_code == 200
            pids = r.json().get("workers", []) if ok else []
        except httpx.HTTPError:
            ok = False
        dt = time.monotonic() - t0
        if ok:
            lat.append(dt)
        else:
            failed += 1
        for pid in pids:
            with contextlib.suppress(OSError, RuntimeError):  # it ended meanwhile
                sampled = max(sampled, vm_hwm_mib(pid))
        time.sleep(0.1)
    th.join()
    poller.close()
    out["latencies"] = lat
    out["failed_polls"] = failed
    out["worker_peak_mib"] = max(sampled, out.get("worker_peak_kib", 0) / 1024)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=60)
    ap.add_argument(
        "--kinds", default="numbers,nested,lists,digits,keys,text,items,completion,junk,capped"
    )
    args = ap.parse_args()
    size = int(args.mib * MiB)
    for kind in args.kinds.split(","):
        body = hostile_body(kind, size)
        proc, url, pid = start_server()
        try:
            small = {"items": [{"task": SLUG, "artifact": {"q": {}}}]}
            httpx.post(f"{url}/v1/verify", json=small, timeout=60).raise_for_status()
            before = vm_hwm_mib(pid)
            idle = []  # the same polls with nothing to judge: what the machine's load costs
            with httpx.Client(timeout=5) as poller:
                for _ in range(20):
                    t0 = time.monotonic()
                    poller.get(f"{url}/healthz").raise_for_status()
                    idle.append(time.monotonic() - t0)
                    time.sleep(0.1)
            idle.sort()
            res = post_with_polls(url, body)
            after = vm_hwm_mib(pid)
            alive = httpx.get(f"{url}/healthz", timeout=5).status_code == 200
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        lat = sorted(res["latencies"]) or [float("nan")]
        print(
            json.dumps(
                {
                    "kind": kind,
                    "body_mib": round(len(body) / MiB, 1),
                    "status": res["status"],
                    "message": res["message"],
                    "request_s": round(res["seconds"], 2),
                    "healthz_polls_ok": len(res["latencies"]),
                    "healthz_polls_failed": res["failed_polls"],
                    "healthz_max_ms": round(lat[-1] * 1000, 1),
                    "healthz_p50_ms": round(statistics.median(lat) * 1000, 1),
                    "idle_healthz_max_ms": round(idle[-1] * 1000, 1),
                    "idle_healthz_p50_ms": round(statistics.median(idle) * 1000, 1),
                    "server_peak_rss_mib_before": round(before, 1),
                    "server_peak_rss_mib_after": round(after, 1),
                    "worker_peak_rss_mib": round(res["worker_peak_mib"], 1),
                    "alive_after": alive,
                    "loadavg": os.getloadavg()[0],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
