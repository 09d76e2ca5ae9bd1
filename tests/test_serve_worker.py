"""`tbmm serve`'s judging processes: the event loop only moves bytes.

The scan, the parse and the verdict run in processes of their own (serve_worker.Pool);
these tests check that they do, that their memory and CPU limits end a request as 503
(no verdict) and that the next request is judged by a fresh process, that a process dying
mid-request or a client leaving mid-body is survived, and that a body past the cap is
abandoned without costing the process. Then the attacker's bodies that pass the pre-scan
and would blow up later: many keys, long strings of escapes, lone surrogates, numbers
like 1e999999, nesting at the depth cap — each gets the verdict the Python API gives."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("fastapi", reason="the `serve` extra")

import tbmm  # noqa: E402
from tbmm.integrations.serve import create_app  # noqa: E402
from tbmm.integrations.serve_worker import OP_VERIFY, BodyTooLarge, Pool, WorkerGone  # noqa: E402

SLUG = "mcm-2025-b-juneau-tourism"


def _anchor() -> str:
    return tbmm.load_task(SLUG).anchor_artifact_bytes().decode().strip()


def _body(*artifacts: str) -> bytes:
    items = ",".join(f'{{"task": "{SLUG}", "artifact": {a}}}' for a in artifacts)
    return ('{"items": [' + items + "]}").encode("utf-8", "surrogatepass")


def _big_tree() -> str:
    """~3.3 MiB within every cap (5 unreferenced lists of 100,000 distinct numbers: the
    parser's literal memo cannot share them), which the pre-scan passes: its tree and memo
    take ~80 MiB."""
    lists = (
        f'"p{i}": [' + ",".join(str(100_000 * (i + 1) + j) for j in range(100_000)) + "]"
        for i in range(5)
    )
    return _anchor()[:-1] + "," + ",".join(lists) + "}"


async def _chunks(data: bytes, size: int = 1 << 16) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def test_requests_are_judged_in_another_process() -> None:
    from fastapi.testclient import TestClient

    with TestClient(create_app(Pool(1))) as client:
        health = client.get("/healthz").json()
        assert len(health["workers"]) == 1 and health["pid"] not in health["workers"]
        r = client.post("/v1/verify", content=_body(_anchor()))
        assert r.status_code == 200, r.text
        assert r.json()["verdicts"][0]["status"] == "scored"
        assert int(r.headers["x-tbmm-worker-peak-rss-kib"]) > 0
        assert client.get("/healthz").json()["workers"] == health["workers"]  # reused
    assert all(_gone(pid) for pid in health["workers"])  # ended with the server


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            return "zombie" in fh.read()
    except FileNotFoundError:
        return True


@pytest.mark.slow
def test_the_memory_limit_is_a_503_and_the_next_request_is_judged() -> None:
    from fastapi.testclient import TestClient

    with TestClient(create_app(Pool(1, memory_mib=64))) as client:
        before = client.get("/healthz").json()["workers"]
        r = client.post("/v1/verify", content=_body(_big_tree()))
        assert r.status_code == 503 and "more than 64 MiB" in r.json()["error"], r.text
        r = client.post("/v1/verify", content=_body(_anchor()))
        assert r.status_code == 200 and r.json()["verdicts"][0]["status"] == "scored"
        assert client.get("/healthz").json()["workers"] != before  # a fresh process
    with TestClient(create_app(Pool(1))) as client:  # the default limit: a verdict
        r = client.post("/v1/verify", content=_body(_big_tree()))
        assert r.status_code == 200, r.text
        assert r.json()["verdicts"][0] == tbmm.verify(tbmm.load_task(SLUG), _big_tree()).model_dump(
            mode="json"
        )


@pytest.mark.slow
def test_the_cpu_limit_is_a_503_and_the_next_request_is_judged() -> None:
    from fastapi.testclient import TestClient

    with TestClient(create_app(Pool(1, cpu_limit_s=1))) as client:
        big = _big_tree()  # ~0.5 s of CPU each: eight pass 1 s (the limit is 1-2 s on)
        r = client.post("/v1/verify", content=_body(*[big] * 8))
        assert r.status_code == 503 and "CPU limit of 1 s" in r.json()["error"], r.text
        r = client.post("/v1/verify", content=_body(_anchor()))
        assert r.status_code == 200 and r.json()["verdicts"][0]["status"] == "scored"


@pytest.mark.slow
def test_a_process_dying_mid_request_is_a_503_and_replaced() -> None:
    async def scenario() -> None:
        pool = Pool(1)
        try:
            body = _body(_anchor())

            async def killer() -> AsyncIterator[bytes]:
                yield body[:10]
                (w,) = pool.busy
                os.kill(w.pid, signal.SIGKILL)
                w.proc.wait()
                yield body[10:]

            with pytest.raises(WorkerGone, match="signal 9|ended"):
                await pool.run(OP_VERIFY, killer(), 1 << 20)
            status, answer, _ = await pool.run(OP_VERIFY, _chunks(body), 1 << 20)
            assert status == 200 and json.loads(answer)["verdicts"][0]["status"] == "scored"
        finally:
            pool.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_body_past_the_cap_is_abandoned_and_the_process_kept() -> None:
    async def scenario() -> None:
        pool = Pool(1)
        try:
            pool.start()
            (pid,) = pool.pids()
            with pytest.raises(BodyTooLarge):
                await pool.run(OP_VERIFY, _chunks(b"[" * 5000, 1000), 4096)
            status, answer, _ = await pool.run(OP_VERIFY, _chunks(_body(_anchor())), 1 << 20)
            assert status == 200 and pool.pids() == [pid]  # the same process judged it

            async def leaves() -> AsyncIterator[bytes]:  # the client goes away mid-body
                yield b'{"items": ['
                raise ConnectionResetError

            with pytest.raises(ConnectionResetError):
                await pool.run(OP_VERIFY, leaves(), 1 << 20)
            status, _, _ = await pool.run(OP_VERIFY, _chunks(_body(_anchor())), 1 << 20)
            assert status == 200 and pool.pids() != [pid]  # that one was not trusted again
        finally:
            pool.close()

    asyncio.run(scenario())


def _attacks() -> dict[str, str]:
    a = _anchor()
    head = a[:-1].rstrip()
    return {
        "many keys": head + "," + ",".join(f'"k{i}": {i}' for i in range(240_000)) + "}",
        "escapes": head + ', "s": "' + "\\u00e9\\\\\\n\\ud83d\\ude00" * 150_000 + '"}',
        "lone surrogates": head + ', "\\ud800": "\\udc00\\ud83d", "n": "\\udfff"}',
        "surrogate in a scored key": a.replace('"policy"', '"policy\\ud800"', 1),
        "1e999999 where a number is scored": a.replace(
            '"daily_cap": 11000', '"daily_cap": 1e999999', 1
        ),
        "-1e-999999 and NaN": a.replace('"daily_cap": 11000', '"daily_cap": -1e-999999', 1)[:-1]
        + ', "x": NaN}',
        "nested at the cap": head
        + ', "d": '
        + '{"a": [' * 15
        + "[1]"
        + "]}" * 15
        + "}",  # the root, then 31 containers: 32
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_attacks()))
def test_what_passes_the_prescan_gets_the_api_verdict_from_serve(name: str) -> None:
    from fastapi.testclient import TestClient

    from tbmm.core import bounds

    text = _attacks()[name]
    task = tbmm.load_task(SLUG)
    raw = text.encode("utf-8", "surrogatepass")
    assert len(raw) <= task.caps.max_bytes
    assert bounds.prescan(text, task.caps) is True  # within every cap: it reaches the parser
    api = tbmm.verify(task, raw).model_dump(mode="json")
    assert api["status"] in ("scored", "gate_failed"), api["error"]
    with TestClient(create_app(Pool(1))) as client:
        as_object = client.post("/v1/verify", content=_body(text))
        as_text = client.post(
            "/v1/verify",
            content=json.dumps({"items": [{"task": SLUG, "artifact": text}]}).encode(
                "utf-8", "surrogatepass"
            ),
        )
    for r in (as_object, as_text):
        assert r.status_code == 200, r.text[:300]
        assert r.json()["verdicts"][0] == api
