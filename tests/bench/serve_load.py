"""Load test of `tbmm serve` with a real HTTP client (a benchmark, not a test).

    uv run python tests/bench/serve_load.py [--workers 2] [--batch 64] [--concurrency 4] [--seconds 10] [--mix all|claims]

Starts `tbmm serve` on a free port, then keeps `concurrency` requests in flight, each a
batch of `batch` artifacts drawn from every task (anchors and perturbed copies, so that the
mix has passing, failing and zeroed verdicts), without Lean. Prints verdicts/s and the
p50/p99 request latency, and the server's own CPU time (every worker process, from /proc):
verdicts per server CPU-second does not depend on what else runs on the machine, and
times the worker count it is what the server sustains with its cores to itself. The
client runs on the same machine and takes CPU from the server: the wall figure is a floor.

`--mix claims` keeps only the tasks without a replay (their verdict is the gate and the
scorer); `--mix all` (default) includes the replayed tasks, whose replays dominate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time

import httpx

import tbmm
from tbmm.core import exact


def corpus(mix: str = "all") -> list[dict]:
    items = []
    for info in tbmm.tasks():
        t = tbmm.load_task(info.slug)
        if mix == "claims" and t.replay_spec is not None:
            continue
        text = exact.dumps(t.anchor_artifact, indent=None)
        items.append({"task": t.slug, "artifact": text})
        for m in t.metrics[:2]:  # perturbed copies: the metric's anchor text changed
            items.append(
                {"task": t.slug, "artifact": text.replace(m.anchor_text, m.anchor_text + "1", 1)}
            )
        items.append({"task": t.slug, "artifact": "{}"})
    return items


def tree_cpu(pid: int) -> float:
    """User+system CPU seconds of `pid` and all its descendants (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, float] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(d))
        stats[int(d)] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, 0.0)
        todo.extend(children.get(p, []))
    return total


async def run(url: str, items: list[dict], batch: int, conc: int, seconds: float) -> int:
    rng = random.Random(0)
    latencies: list[float] = []
    done = 0
    stop = time.monotonic() + seconds

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal done
        while time.monotonic() < stop:
            body = json.dumps({"items": rng.sample(items, min(batch, len(items)))})
            t0 = time.perf_counter()
            r = await client.post(f"{url}/v1/verify", content=body)
            latencies.append(time.perf_counter() - t0)
            r.raise_for_status()
            done += len(r.json()["verdicts"])

    t0 = time.monotonic()
    async with httpx.AsyncClient(timeout=60) as client:
        await asyncio.gather(*(worker(client) for _ in range(conc)))
    wall = time.monotonic() - t0
    lat = sorted(latencies)
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    print(
        f"{done} verdicts in {wall:.1f} s = {done / wall:,.0f} verdicts/s "
        f"(batch {batch}, {conc} in flight); request latency p50 {statistics.median(lat) * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms ({len(lat)} requests)"
    )
    return done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--mix", choices=["all", "claims"], default="all")
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tbmm.cli.root",
            "serve",
            "--port",
            str(port),
            "--workers",
            str(a.workers),
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        items = corpus(a.mix)
        # warm every worker's task cache before measuring
        asyncio.run(run(url, items, len(items), a.workers * 2, 1.0))
        cpu0 = tree_cpu(proc.pid)
        done = asyncio.run(run(url, items, a.batch, a.concurrency, a.seconds))
        cpu = tree_cpu(proc.pid) - cpu0
        print(
            f"server CPU {cpu:.1f} s over {a.workers} worker(s): {done / cpu:,.0f} verdicts per "
            f"server CPU-second (x{a.workers} workers = {a.workers * done / cpu:,.0f}/s with the "
            f"cores to itself); mix {a.mix}, {len(items)} distinct items"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
