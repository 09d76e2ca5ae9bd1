"""`tbmm serve` over real HTTP: a uvicorn process on a free port, driven with httpx."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

httpx = pytest.importorskip("httpx", reason="httpx is in the dev group (uv sync)")

import tbmm  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tbmm.cli.root", "serve", "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
        if proc.poll() is not None:
            pytest.fail(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
    else:
        proc.kill()
        pytest.fail("server did not come up in 60 s")
    # the judging process imports tbmm while the loop already answers /healthz: one
    # request with a generous timeout waits for it, so no test pays for its start-up
    warm = {"items": [{"task": "mcm-2025-b-juneau-tourism", "artifact": {}}]}
    assert httpx.post(f"{url}/v1/verify", json=warm, timeout=300).status_code == 200
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.slow
def test_health_tasks_and_docs(server: str) -> None:
    assert httpx.get(f"{server}/healthz").json()["ok"] is True
    slugs = [t["slug"] for t in httpx.get(f"{server}/v1/tasks").json()]
    assert slugs == [t.slug for t in tbmm.tasks()]
    spec = httpx.get(f"{server}/openapi.json").json()
    assert "/v1/verify" in spec["paths"] and "/v1/openrlhf" in spec["paths"]


@pytest.mark.slow
def test_verify_batch_exact_and_mixed(server: str) -> None:
    t = tbmm.load_task("mcm-2025-b-juneau-tourism")
    anchor_text = t.anchor_artifact_bytes().decode()
    body = (
        '{"items": ['
        f'{{"task": "{t.slug}", "artifact": {anchor_text}}},'
        f'{{"task": "{t.slug}", "artifact": {json.dumps(anchor_text)}}},'
        f'{{"task": "{t.slug}", "completion": {json.dumps("ok:```json" + chr(10) + anchor_text + "```")}}},'
        f'{{"task": "{t.slug}", "completion": "no answer"}},'
        '{"task": "no-such-task", "artifact": {}}'
        '], "reward": "robust_bo"}'
    )
    r = httpx.post(
        f"{server}/v1/verify", content=body, headers={"content-type": "application/json"}
    )
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["rewards"] == [1.0, 1.0, 1.0, -1.0, -1.0]
    assert [v["status"] for v in out["verdicts"]] == [
        "scored",
        "scored",
        "scored",
        "unreadable",
        "unknown_task",
    ]
    assert out["verdicts"][0]["o_eval_exact"] == "1"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ("not json", 400, "not JSON"),
        ('{"nope": 1}', 422, "items"),
        ('{"items": [{"task": "x"}]}', 422, "exactly one"),
        ('{"items": [{"task": "x", "artifact": 5}]}', 422, "object"),
        ('{"items": [], "reward": "max"}', 422, "reward"),
    ],
)
def test_bad_requests_get_clear_errors(server: str, body: str, status: int, words: str) -> None:
    r = httpx.post(f"{server}/v1/verify", content=body)
    assert r.status_code == status and words in r.json()["error"]


@pytest.mark.slow
def test_oversize_body_is_refused_before_reading(server: str) -> None:
    """A lying Content-Length (1 TB declared, 2 bytes sent) is refused at once, not awaited."""
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000000000000\r\n\r\n{}"
        )
        reply = s.recv(4096).decode("latin-1")
    assert reply.startswith("HTTP/1.1 413"), reply[:200]


@pytest.mark.slow
def test_openrlhf_protocol(server: str) -> None:
    t = tbmm.load_task("mcm-2025-b-juneau-tourism")
    good = t.anchor_artifact_bytes().decode()
    r = httpx.post(
        f"{server}/v1/openrlhf",
        json={"query": ["P" + good, "Pnothing"], "prompts": ["P", "P"], "labels": [t.slug, t.slug]},
    )
    assert r.status_code == 200 and r.json()["rewards"] == [1.0, 0.0]


@pytest.mark.slow
def test_lean_items_are_kernel_checked(server: str) -> None:
    """Items asking for Lean come back kernel-checked (one Lean run per request); the
    others are not, and the order of the verdicts is the order of the items."""
    t = tbmm.load_task("mcm-2025-b-juneau-tourism")
    text = t.anchor_artifact_bytes().decode()
    doc = json.loads(text)
    doc["policy"]["daily_cap"] = -5
    items = [
        {"task": t.slug, "artifact": text, "lean": True},
        {"task": t.slug, "artifact": text},
        {"task": t.slug, "artifact": json.dumps(doc), "lean": True},
        {"task": t.slug, "completion": "```json\n" + text + "\n```", "lean": True},
    ]
    r = httpx.post(f"{server}/v1/verify", json={"items": items}, timeout=120)
    assert r.status_code == 200, r.text
    out = r.json()
    assert [v["lean"] for v in out["verdicts"]] == ["ok", "skipped", "fail", "ok"]
    assert out["rewards"] == [1.0, 1.0, 0.0, 1.0]


@pytest.mark.slow
def test_healthz_answers_while_a_large_request_is_judged(server: str) -> None:
    """Scanning and verification run off the event loop: /healthz is answered while a
    large batch (thousands of artifacts within their caps) is judged. Ordering, not
    timing: several health checks must complete before the large answer does. (Bodies
    over the caps: tests/test_serve_hostile.py.)"""
    import threading

    t = tbmm.load_task("mcm-2025-b-juneau-tourism")
    anchor = t.anchor_artifact_bytes().decode().strip()
    one = f'{{"task": "{t.slug}", "artifact": {anchor}}}'
    body = '{"items": [' + ",".join([one] * 4000) + "]}"
    done: dict[str, float] = {}

    def big() -> None:
        r = httpx.post(f"{server}/v1/verify", content=body, timeout=600)
        done["status"] = r.status_code
        done["at"] = time.monotonic()

    th = threading.Thread(target=big)
    th.start()
    answered: list[float] = []
    while th.is_alive():
        try:
            if httpx.get(f"{server}/healthz", timeout=30).status_code == 200:
                answered.append(time.monotonic())
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    th.join()
    assert done["status"] == 200
    during = [t for t in answered if t < done["at"]]
    # a loop blocked by the request answers at most the checks sent before its body arrived
    assert len(during) >= 5, f"{len(during)} health checks answered during the request"


def test_a_token_guards_the_v1_endpoints() -> None:
    """With a token, /v1/* needs `Authorization: Bearer TOKEN`; /healthz stays open."""
    from fastapi.testclient import TestClient

    from tbmm.integrations.serve import TOKEN_ENV, create_app

    mp = pytest.MonkeyPatch()
    mp.setenv(TOKEN_ENV, "s3cret")
    try:
        client = TestClient(create_app())
    finally:
        mp.undo()
    body = json.dumps({"items": [{"task": "mcm-2025-b-juneau-tourism", "artifact": {}}]})
    assert client.get("/healthz").status_code == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
        r = client.post("/v1/verify", content=body, headers=headers)
        assert r.status_code == 401 and "bearer token" in r.json()["error"]
    assert client.get("/v1/tasks").status_code == 401
    ok = client.post("/v1/verify", content=body, headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and ok.json()["verdicts"][0]["task"] == "mcm-2025-b-juneau-tourism"
    assert TestClient(create_app()).get("/v1/tasks").status_code == 200  # no token: open


def test_a_request_past_its_cpu_budget_is_refused_whole() -> None:
    """Past the request's CPU budget (checked between items) the request ends with 503
    and no verdicts at all, never a partial list or a guessed one."""
    from tbmm.integrations.bodyscan import verify_body
    from tbmm.integrations.serve import HttpError, verify_items

    t = tbmm.load_task("mcm-2025-b-juneau-tourism")
    one = f'{{"task": "{t.slug}", "artifact": {t.anchor_artifact_bytes().decode().strip()}}}'
    body = ('{"items": [' + ",".join([one] * 3) + "]}").encode()
    items, reward = verify_body(body, max_items=10)
    assert len(verify_items(body, items, reward)["verdicts"]) == 3
    with pytest.raises(HttpError) as err:
        verify_items(body, items, reward, budget_s=0.0)
    assert err.value.status == 503 and "CPU budget" in err.value.detail


def test_an_over_long_completion_is_unreadable_unsearched() -> None:
    """A completion longer than twice the artifact byte cap is not searched for an
    answer (the search would build a tree of it): unreadable, with the reason; the API
    and the batch API say the same."""
    t = tbmm.load_task("mcm-2025-b-juneau-tourism")
    cap = tbmm.api.completion_cap(t)
    anchor = t.anchor_artifact_bytes().decode()
    long = "x" * (cap - len(anchor)) + anchor
    assert tbmm.verify_completion(t, long).status == "scored"  # at the cap: searched
    v = tbmm.verify_completion(t, long + " ")
    assert v.status == "unreadable" and f"over the cap of {cap}" in v.error
    assert tbmm.verify_many([(t, long + " ")], completions=True)[0] == v
