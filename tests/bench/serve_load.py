"""Load test of `tbmm serve` with a real HTTP client (a benchmark, not a test).

    uv run python tests/bench/serve_load.py [--workers 2] [--batch 64] [--concurrency 4] [--seconds 10]

Starts `tbmm serve` on a free port, then keeps `concurrency` requests in flight, each a
batch of `batch` artifacts drawn from every task (anchors and perturbed copies, so that the
mix has passing, failing and zeroed verdicts), without Lean. Prints verdicts/s and the
p50/p99 request latency. The client runs on the same machine and takes CPU from the
server: the figure is a floor.
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
from tbmm import exact


def corpus() -> list[dict]:
    items = []
    for info in tbmm.tasks():
        t = tbmm.load_task(info.slug)
        text = exact.dumps(t.anchor_artifact, indent=None)
        items.append({"task": t.slug, "artifact": text})
        for m in t.metrics[:2]:  # perturbed copies: the metric's anchor text changed
            items.append(
                {"task": t.slug, "artifact": text.replace(m.anchor_text, m.anchor_text + "1", 1)}
            )
        items.append({"task": t.slug, "artifact": "{}"})
    return items


async def run(url: str, items: list[dict], batch: int, conc: int, seconds: float) -> None:
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tbmm.cli",
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
        items = corpus()
        # warm every worker's task cache before measuring
        asyncio.run(run(url, items, len(items), a.workers * 2, 1.0))
        asyncio.run(run(url, items, a.batch, a.concurrency, a.seconds))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
