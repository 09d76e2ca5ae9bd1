"""`tbmm serve` under 60 MiB hostile bodies: bounded memory, a live /healthz, and the
verdict `tbmm verify` gives for the same artifact.

One real server (`tbmm serve --workers 1`: the uvicorn process runs the event loop, one
judging process the verification) receives, one after the other, bodies of about 60 MiB whose Python tree would be GiBs:
numbers, deep nesting, one huge number, many keys, the artifact as one JSON string, a
huge completion, and fifteen artifacts just within the byte cap (each a tree of two
million numbers, refused by the list cap once built: one tree at a time). While each is judged a thread polls /healthz with a generous timeout;
no poll may fail. The judging process's peak RSS (its VmHWM, sent back with each answer)
must be below the bound the README states (before the body scanner: 2-3.4 GiB for the
numbers body alone), and the loop's process, which only streams bodies through, must stay
small.
`tests/bench/serve_hostile.py` prints the latencies and peaks per kind."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

httpx = pytest.importorskip("httpx", reason="httpx is in the dev group (uv sync)")

import tbmm  # noqa: E402

pytestmark = pytest.mark.slow

PEAK_RSS_BOUND_MIB = 384  # the README's figure (tbmm serve: a judging process's peak RSS)
LOOP_RSS_BOUND_MIB = 128  # the server's own process: no body is ever held whole
KINDS = ["numbers", "nested", "digits", "keys", "text", "completion", "capped"]
POLL_TIMEOUT_S = 10.0  # generous: a failed poll means the loop was blocked for seconds


def _bench() -> ModuleType:
    path = Path(__file__).parent / "bench" / "serve_hostile.py"
    spec = importlib.util.spec_from_file_location("serve_hostile", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ModuleType, str, int]]:
    bench = _bench()
    proc, url, pid = bench.start_server()
    try:
        yield bench, url, pid
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _expected_error(bench: ModuleType, kind: str, body: bytes) -> str:
    """What `tbmm verify` says about the (first) artifact the body carries."""
    t = tbmm.load_task(bench.SLUG)
    if kind == "capped":  # many items of one artifact
        art = body[body.index(b'"artifact": ') + len(b'"artifact": ') : body.index(b"]}}") + 2]
        v = tbmm.verify(t, art)
    elif kind == "completion":
        text = body[body.index(b'"completion": ') + len(b'"completion": ') : -3]
        v = tbmm.verify_completion(t, json.loads(text))
    elif kind == "text":
        text = body[body.index(b'"artifact": ') + len(b'"artifact": ') : -3]
        v = tbmm.verify(t, json.loads(text))
    else:
        art = body[body.index(b'"artifact": ') + len(b'"artifact": ') : -3]
        v = tbmm.verify(t, art)
    return v.error


def test_hostile_bodies_keep_health_memory_and_verdicts(
    served: tuple[ModuleType, str, int],
) -> None:
    bench, url, pid = served
    small = {"items": [{"task": bench.SLUG, "artifact": {"q": {}}}]}
    assert httpx.post(f"{url}/v1/verify", json=small, timeout=60).status_code == 200
    for kind in KINDS:
        body = bench.hostile_body(kind, 60 * bench.MiB)
        res = bench.post_with_polls(url, body, poll_timeout=POLL_TIMEOUT_S)
        assert res["status"] == 200, (kind, res["message"])
        assert res["failed_polls"] == 0, (kind, res)
        assert res["latencies"], (kind, "no /healthz poll completed during the request")
        expected = _expected_error(bench, kind, body)
        assert expected  # refused by a cap, with a reason
        verdict = json.loads(res["text"])["verdicts"][0]
        assert verdict["status"] == "unreadable" and verdict["error"] == expected, kind
        assert 0 < res["worker_peak_mib"] < PEAK_RSS_BOUND_MIB, (kind, res["worker_peak_mib"])
    peak = bench.vm_hwm_mib(pid)
    assert peak < LOOP_RSS_BOUND_MIB, f"the loop's process peaked at {peak:.0f} MiB"
