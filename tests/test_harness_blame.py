"""Failures classified by who caused them. An upstream 401/403/404 to a request the agent
shaped is checked with the harness's own probe of the endpoint: probe passes -> the agent's
failure (`agent_request_rejected`, scored as a missing artifact, not rerun by --resume);
probe fails -> infrastructure `error`. 429/5xx keep the retry policy: retried, then `error`
(`endpoint_overloaded`) with no probe. A verification without a verdict (exit code 3) is an
`error` (`no_verdict`), never an O-Eval 0. Before this, one request the upstream answered 404
made the trial an `error`: an agent could turn a losing seed into a retry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agents.builtin import LLMAgent
from harness.agents.errors import AGENT_REJECTED, PreflightError
from harness.agents.preflight import check_endpoint, check_request
from harness.agents.proxy import Upstream
from harness.agents.registry import AgentOutcome, CommandAgent, OracleAgent
from harness.agents.trajectory import Trajectory, read_trajectory
from harness.runs.runner import classify_rejection, no_verdict_cause, run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import (
    ScriptedChatServer,
    make_fake_task,
    responses_text,
    stand_in_verify,
    text_reply,
)
from tbmm.reports import leaderboard as L
from tests.atif_check import assert_valid_atif

needs_sandbox = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")
MODEL = "fake-model"

# The agent asks for something the upstream refuses (here: a previous response that does not
# exist), ignores the refusal, and writes a perfect artifact anyway. The model in the body is
# the entry's, so the request is the same whether or not the proxy pins the model.
AGENT_SCRIPT = f"""\
python3 - <<'EOF'
import json, os, urllib.error, urllib.request
body = {{"model": "{MODEL}", "input": "hi", "previous_response_id": "resp_does_not_exist"}}
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/responses",
    data=json.dumps(body).encode(), headers={{"Content-Type": "application/json"}})
try:
    urllib.request.urlopen(req, timeout=60).read()
except urllib.error.HTTPError as exc:
    print("upstream answered", exc.code)
json.dump({{"q1": {{"mean_load": 12.5}}}}, open(os.environ["TBMM_OUTPUT_PATH"], "w"))
EOF
"""


def probe_ok(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """The harness's own minimal request (the entry's model, nothing of the agent's)."""
    assert req.get("model") == MODEL and "previous_response_id" not in req, req
    assert hdrs.get("user-agent") == "tbmm-probe", hdrs
    if "input" in req:
        return 200, responses_text("OK", (5, 1))
    return 200, text_reply("OK", (5, 1))


def refuse(status: int) -> Any:
    def answer(req: dict[str, Any], hdrs: dict[str, str]) -> tuple[int, dict[str, Any]]:
        return status, {"error": {"message": f"scripted {status} for resp_does_not_exist"}}

    return answer


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend("bwrap", ensure_agent_venv())


def _sweep(
    server: ScriptedChatServer, tmp_path: Path, backend: Any, *, check: bool = True, **kw: Any
) -> dict[str, Any]:
    agent = CommandAgent.from_shell(
        AGENT_SCRIPT,
        provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "real-key"},
        backoff_s=0.05,
        **kw,
    )
    task = make_fake_task(tmp_path / "tasks")
    db = tmp_path / "r.sqlite"
    run_sweep(
        agent, MODEL, [task], 1, backend, 1, db, False,
        verifier=stand_in_verify, progress=False, check=check,
    )  # fmt: skip
    store = Store(db)
    (row,) = store.trials()
    row["_done"] = store.done(row["entry_id"])
    row["_blob"] = runs_dir_for(db) / row["blob_dir"]
    row["_events"] = read_trajectory(row["_blob"] / "events.jsonl")
    store.close()
    return row


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("status", [401, 403, 404])
def test_rejection_of_the_agents_request_is_its_own_failure(
    status: int, tmp_path: Path, backend: SandboxBackend
) -> None:
    with ScriptedChatServer([refuse(status), probe_ok], models=[MODEL]) as server:
        r = _sweep(server, tmp_path, backend)
    assert server.errors == []
    # the probe: the key (model list), the entry's model, then the same endpoint, its own body
    assert server.paths == ["/v1/responses", "/v1/responses"]
    assert server.requests[1] == {
        "model": MODEL,
        "input": "Reply with OK.",
        "max_output_tokens": 16,
    }
    assert (r["status"], r["error"], r["exit_reason"]) == ("ok", None, AGENT_REJECTED), r
    want = f"{AGENT_REJECTED}: POST /v1/responses answered HTTP {status}: "
    assert r["detail"].startswith(want), r["detail"]
    assert f"scripted {status} for resp_does_not_exist" in r["detail"]  # the upstream's words
    assert "probe of the endpoint passed" in r["detail"]
    # scored as a missing artifact, although the artifact it wrote is the right answer
    assert r["artifact_status"] == "ok" and json.loads(r["artifact"])["q1"]["mean_load"] == 12.5
    assert (r["o_eval"], r["verify_exit"]) == (0.0, 2)
    assert (r["task"], r["seed"]) in r["_done"]  # --resume does not run it again
    (probe,) = [e for e in r["_events"] if e["type"] == "endpoint_probe"]
    assert probe["finding"] == "passed"
    assert_valid_atif([r["_blob"] / "trajectory.json"])
    steps = json.loads((r["_blob"] / "trajectory.json").read_text())["steps"]
    assert any("the harness probed the model endpoint" in str(x.get("message")) for x in steps)
    assert server.get_paths[-2:] == ["/v1/models", f"/v1/models/{MODEL}"]
    row = L.row_from_record(r, task_suites={r["task"]: "CUMCM"})
    assert row.status != L.INFRA and row.o_eval == 0  # a score (the agent's failure)
    lb = L.compute([row], baseline=None, tasks=[r["task"]], task_suites={r["task"]: "CUMCM"})
    assert lb.entries[0].errors == 0 and not lb.entries[0].partial
    assert lb.entries[0].o_eval.mean == 0


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize(
    ("server_kw", "cause"),
    [
        # the key was revoked: the probe's model list is refused too
        ({"get_status": 401}, "harness probe: endpoint_rejected: the model endpoint"),
        # the entry's model is gone from the endpoint (listed models do not name it)
        ({"models": ["another-model"]}, f"does not know model '{MODEL}'"),
        # the endpoint is gone by the time the harness probes it
        ({"models": [MODEL], "drop_gets_after": 0}, "harness probe: endpoint_unreachable"),
        # the probe gets a 503: it vouches for nothing
        ({"get_status": 503}, "harness probe: endpoint_overloaded"),
        # no model list (a server without one, or a wrong base URL): nothing confirmed
        ({}, "did not confirm the key: HTTP 404"),
    ],
)
def test_rejection_with_a_failing_probe_is_infrastructure(
    server_kw: dict[str, Any], cause: str, tmp_path: Path, backend: SandboxBackend
) -> None:
    with ScriptedChatServer([refuse(404)], **server_kw) as server:
        r = _sweep(server, tmp_path, backend, check=False)
    assert r["status"] == "error" and r["error"].startswith("endpoint_rejected: POST"), r
    assert "HTTP 404" in r["error"] and cause in r["error"], r["error"]
    assert r["o_eval"] is None and (r["task"], r["seed"]) not in r["_done"]  # rerun by --resume
    row = L.row_from_record(r, task_suites={r["task"]: "CUMCM"})
    assert row.status == L.INFRA


@pytest.mark.slow
@needs_sandbox
def test_an_endpoint_that_refuses_the_harness_own_request_is_infrastructure(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    """The key and the model are known (GETs pass) but the endpoint does not serve the model
    (a Responses-only model on chat completions, say): the harness's own minimal request is
    refused as the agent's was, so nothing says the agent caused it."""
    not_served = refuse(404)
    with ScriptedChatServer([refuse(404), not_served], models=[MODEL]) as server:
        r = _sweep(server, tmp_path, backend, check=False)
    assert r["status"] == "error" and server.paths == ["/v1/responses", "/v1/responses"], r
    assert (
        "harness probe: endpoint_rejected: the harness's own request (model 'fake-model')"
        in r["error"]
    )
    assert "was refused too: HTTP 404" in r["error"]


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("status", [429, 503])
def test_overload_keeps_the_retry_policy_and_no_probe(
    status: int, tmp_path: Path, backend: SandboxBackend
) -> None:
    """429/5xx: retried (`--retries`), then infrastructure `error` whoever sent the request;
    the harness does not probe (a probe passing now says nothing about the load then)."""
    with ScriptedChatServer([refuse(status)] * 3, models=[MODEL]) as server:
        r = _sweep(server, tmp_path, backend, check=False, max_retries=2)
    assert len(server.requests) == 3  # the request and its two retries
    assert r["status"] == "error" and r["error"].startswith("endpoint_overloaded:"), r
    assert f"HTTP {status} after 2 retries" in r["error"]
    assert server.get_paths == [] and not any(e["type"] == "endpoint_probe" for e in r["_events"])


@pytest.mark.slow
@needs_sandbox
def test_an_outage_in_the_same_trial_outranks_a_rejection(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    """First request rejected (404), second still 503 after the retries: the outage decides
    (infrastructure), whichever came first; no probe is needed."""
    twice = (
        AGENT_SCRIPT.replace("try:\n", "for _ in range(2):\n  try:\n")
        .replace(
            "urllib.request.urlopen(req, timeout=60).read()\nexcept",
            "  urllib.request.urlopen(req, timeout=60).read()\n  except",
        )
        .replace('    print("upstream answered"', '      print("upstream answered"')
    )
    assert "for _ in range(2)" in twice
    script = [refuse(404), refuse(503), refuse(503)]
    with ScriptedChatServer(script, models=[MODEL]) as server:  # type: ignore[arg-type]
        agent = CommandAgent.from_shell(
            twice,
            provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"},
            backoff_s=0.05,
            max_retries=1,
        )
        task = make_fake_task(tmp_path / "tasks")
        db = tmp_path / "r.sqlite"
        run_sweep(
            agent, MODEL, [task], 1, backend, 1, db, False,
            verifier=stand_in_verify, progress=False, check=False,
        )  # fmt: skip
    assert len(server.requests) == 3
    (r,) = Store(db).trials()
    assert r["status"] == "error" and r["error"].startswith("endpoint_overloaded:"), r
    assert "(+1 more)" in r["error"] and server.get_paths == []


@pytest.mark.slow
@needs_sandbox
def test_llm_agent_rejection_is_classified_the_same_way(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    got = {}
    for models in ([MODEL], ["other"]):
        db = tmp_path / f"{models[0]}.sqlite"
        with ScriptedChatServer([refuse(404), probe_ok], models=models) as server:
            agent = LLMAgent(base_url=server.base_url, max_retries=0)
            run_sweep(
                agent, MODEL, [task], 1, backend, 1, db, False,
                verifier=stand_in_verify, progress=False, check=False,
            )  # fmt: skip
        (got[models[0]],) = Store(db).trials()
    ok, err = got[MODEL], got["other"]
    assert (ok["status"], ok["exit_reason"], ok["o_eval"]) == ("ok", AGENT_REJECTED, 0.0)
    assert "HTTP 404" in ok["detail"]
    assert err["status"] == "error" and f"does not know model '{MODEL}'" in err["error"]


@pytest.mark.slow
def test_preflight_refuses_a_model_the_endpoint_does_not_know(tmp_path: Path) -> None:
    task = make_fake_task(tmp_path / "tasks")
    db = tmp_path / "r.sqlite"
    with ScriptedChatServer([], models=["another-model"]) as server:
        agent = CommandAgent.from_shell(
            "true", provider_env={"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "k"}
        )
        with pytest.raises(PreflightError, match=f"does not know model '{MODEL}'"):
            run_sweep(agent, MODEL, [task], 1, None, 1, db, False, progress=False)  # type: ignore[arg-type]
    assert Store(db).trials() == []


def test_check_endpoint_answers() -> None:
    def probe(server: ScriptedChatServer, model: str | None, strict: bool = True) -> str | None:
        return check_endpoint(Upstream(server.base_url, "k"), model=model, strict=strict)

    with ScriptedChatServer([]) as s:  # no model list (or a wrong base URL): unconfirmed
        assert probe(s, MODEL, strict=False) is None  # the pre-flight lets it run
        assert "did not confirm the key: HTTP 404" in str(probe(s, MODEL))
    with ScriptedChatServer([], models=[MODEL]) as s:
        assert probe(s, MODEL) is None and probe(s, None) is None
        assert "does not know model 'gpt-x'" in str(probe(s, "gpt-x"))
        assert s.get_paths[-1] == "/v1/models/gpt-x"
        # a name with a slash or a dot-dot stays one path segment
        assert "does not know" in str(probe(s, "../../etc/passwd"))
        assert s.get_paths[-1] == "/v1/models/..%2F..%2Fetc%2Fpasswd"
    with ScriptedChatServer([], models=[MODEL], model_lookup=False) as s:  # vLLM-like
        assert probe(s, MODEL) is None
        assert "does not know" in str(probe(s, "gpt-x"))
    with ScriptedChatServer([], get_status=403) as s:
        assert str(probe(s, MODEL)).startswith("endpoint_rejected: ")
    with ScriptedChatServer([], get_status=500) as s:
        assert str(probe(s, MODEL)).startswith("endpoint_overloaded: ")
        assert probe(s, MODEL, strict=False) is None  # the pre-flight is lenient there
    with ScriptedChatServer([], drop_gets_after=0) as s:
        assert str(probe(s, MODEL)).startswith("endpoint_unreachable: ")
    with ScriptedChatServer([], models=["claude-x"]) as s:  # Anthropic: /v1 not in the base
        up = Upstream(s.base_url.removesuffix("/v1"), "k", auth="x-api-key", provider="anthropic")
        assert check_endpoint(up, model="claude-x", strict=True) is None
        assert s.get_paths == ["/v1/models", "/v1/models/claude-x"]
        assert "does not know model 'claude-y'" in str(check_endpoint(up, model="claude-y"))


class _Probed:
    def __init__(self, finding: str | None | Exception) -> None:
        self.finding = finding
        self.asked: list[str | None] = []

    def probe(self, model: str | None, paths: tuple[str, ...] = ()) -> str | None:
        self.asked.append(model)
        self.paths = paths
        if isinstance(self.finding, Exception):
            raise self.finding
        return self.finding


def test_classify_rejection(tmp_path: Path) -> None:
    traj = Trajectory(tmp_path / "t.jsonl")
    rejected = "endpoint_rejected: POST /v1/chat/completions answered HTTP 404"
    a = _Probed(None)
    outcome = AgentOutcome("completed", "", 3, infra=rejected, rejected_paths=("/v1/x",))
    out = classify_rejection(a, "m", outcome, traj)
    assert (out.exit_reason, out.infra, out.turns) == (AGENT_REJECTED, None, 3)
    assert out.detail.startswith(f"{AGENT_REJECTED}: {rejected.split(': ', 1)[1]}")
    assert a.asked == ["m"] and a.paths == ("/v1/x",)
    for agent, found in (
        (_Probed("endpoint_unreachable: gone"), "endpoint_unreachable: gone"),
        (_Probed(RuntimeError("boom")), "harness_fault: the probe raised RuntimeError: boom"),
        (object(), "the agent has no endpoint probe"),
    ):
        out = classify_rejection(agent, "m", AgentOutcome("completed", infra=rejected), traj)
        assert out.infra == f"{rejected}; harness probe: {found}"
    traj.close()


def _no_verdict(task: Any, data: bytes | None) -> dict[str, Any]:
    return {
        "task": task.slug,
        "exit_code": 3,
        "status": "budget_exceeded",
        "error": "verification budget of 1 s exceeded after the gate",
        "o_eval": 0.0,
        "o_eval_exact": "0",
        "gate": "skipped",
        "lean": "skipped",
    }


def test_no_verdict_cause() -> None:
    assert no_verdict_cause({"exit_code": 0, "status": "scored"}) is None
    assert no_verdict_cause({"exit_code": 2, "status": "budget_exceeded"}) is None
    got = no_verdict_cause(
        {"exit_code": 3, "status": "lean_disagreement", "error": "", "failing": ["lean x"]}
    )
    assert got == "no_verdict: lean_disagreement: lean x"


@pytest.mark.slow
@needs_sandbox
def test_a_verification_without_verdict_is_an_error_and_resume_reruns_it(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    db = tmp_path / "r.sqlite"
    s = run_sweep(
        OracleAgent(), None, [task], 1, backend, 1, db, False,
        verifier=_no_verdict, progress=False,
    )  # fmt: skip
    assert s.errored == 1
    (r,) = Store(db).trials()
    assert r["status"] == "error"
    assert r["error"] == (
        "no_verdict: budget_exceeded: verification budget of 1 s exceeded after the gate"
    )
    assert (r["o_eval"], r["o_eval_exact"], r["verify_exit"]) == (None, None, 3)
    assert json.loads(r["verdict"])["status"] == "budget_exceeded"  # kept for diagnosis
    row = L.row_from_record(r, task_suites={task.slug: "CUMCM"})
    assert row.status == L.INFRA and row.report["infra_error"].startswith("no_verdict:")
    s = run_sweep(
        OracleAgent(), None, [task], 1, backend, 1, db, True,
        verifier=stand_in_verify, progress=False,
    )  # fmt: skip
    assert (s.retried, s.errored) == (1, 0)
    (r,) = Store(db).trials()
    assert (r["status"], r["o_eval"]) == ("ok", 1.0)


def test_runs_list_and_show_count_errors_by_cause(tmp_path: Path) -> None:
    """Per entry: trials without a score by cause (an infrastructure error; a stored report
    with no verdict, e.g. from an ingest), the agent's scored failures by reason, partial."""
    import typer
    from typer.testing import CliRunner

    from harness.cli.runs import runs_app
    from tests.conftest import trial_record

    db = tmp_path / "r.sqlite"
    store = Store(db)
    store.ensure_entry("agent@model", "agent", "model", {})
    scored = {"status": "scored", "exit_code": 0, "o_eval_exact": "1"}
    budget = {"status": "budget_exceeded", "exit_code": 3, "error": "over budget"}
    for seed, fields in enumerate(
        [
            {"status": "error", "error": "endpoint_unreachable: gone"},
            {"verdict": budget, "verify_exit": 3, "artifact_status": "ok"},
            {"exit_reason": AGENT_REJECTED, "detail": f"{AGENT_REJECTED}: HTTP 404"},
            {"verdict": scored, "o_eval": 1.0, "artifact_status": "ok"},
            {"exit_reason": "timeout"},
        ]
    ):
        blobs = store.scratch_dir()
        store.commit(trial_record(seed=seed, **fields), blobs)  # type: ignore[arg-type]
    store.close()
    app = typer.Typer()
    app.add_typer(runs_app, name="runs")
    res = CliRunner().invoke(app, ["runs", "show", "agent@model", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert (doc["errors"], doc["partial"], doc["agent_failures"]) == (2, True, 2)
    assert doc["error_causes"] == {"endpoint_unreachable": 1, "no_verdict": 1}
    assert doc["agent_failure_reasons"] == {AGENT_REJECTED: 1, "timeout": 1}
    res = CliRunner().invoke(app, ["runs", "show", "agent@model", "--db", str(db)])
    text = " ".join(res.output.split())
    assert "partial: 2 trial(s) without a score (endpoint_unreachable, no_verdict)" in text
    assert f"agent failures (scored): 2 ({AGENT_REJECTED}, timeout)" in text
    res = CliRunner().invoke(app, ["runs", "list", "--db", str(db), "--json"])
    (entry,) = json.loads(res.output)
    assert (entry["errors"], entry["partial"]) == (2, True)
    res = CliRunner().invoke(app, ["runs", "list", "--db", str(db)])
    assert "2 (partial)" in res.output


@pytest.mark.slow
@needs_sandbox
def test_a_verifier_that_raises_is_no_verdict_not_a_zero(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    """Before: stored `ok` with the traceback as verdict, which the leaderboard counted 0."""

    def broken(task: Any, data: bytes | None) -> Any:
        raise RuntimeError("lean toolchain vanished")

    task = make_fake_task(tmp_path / "tasks")
    db = tmp_path / "r.sqlite"
    s = run_sweep(
        OracleAgent(), None, [task], 1, backend, 1, db, False, verifier=broken, progress=False
    )
    assert s.errored == 1
    (r,) = Store(db).trials()
    assert r["status"] == "error" and r["o_eval"] is None
    assert r["error"] == "no_verdict: verifier_fault: RuntimeError: lean toolchain vanished"
    assert "lean toolchain vanished" in json.loads(r["verdict"])["error"]  # the traceback
    assert L.row_from_record(r, task_suites={task.slug: "CUMCM"}).status == L.INFRA


def test_check_request_sends_the_smallest_request_of_each_api() -> None:
    def answer(status: int) -> Any:
        return lambda req, hdrs: (status, {"error": {"message": f"scripted {status}"}})

    with ScriptedChatServer([answer(200), answer(400), answer(404), answer(503)]) as s:
        up = Upstream(s.base_url.removesuffix("/v1"), "k", auth="x-api-key", provider="anthropic")
        assert check_request(up, "claude-x", "/v1/messages") is None
        assert s.requests[0] == {
            "model": "claude-x",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "Reply with OK."}],
        }
        assert s.headers[0]["x-api-key"] == "k" and s.paths == ["/v1/messages"]
        assert check_request(up, "claude-x", "/v1/messages?beta=true") is None  # 400: served
        assert s.paths[-1] == "/v1/messages"  # the agent's query string is not replayed
        assert "was refused too: HTTP 404: " in str(check_request(up, "claude-x", "/v1/messages"))
        assert str(check_request(up, "claude-x", "/v1/messages")).startswith("endpoint_overloaded")
        # nothing is sent without a model, or to a path that is no model endpoint
        assert check_request(up, None, "/v1/messages") is None
        assert check_request(up, "claude-x", "/v1/files") is None
        assert check_request(up, "claude-x", "/v1/chat/completions") is None  # not Anthropic's
        assert len(s.requests) == 4
    with ScriptedChatServer([answer(200)]) as s:
        chat = Upstream(s.base_url, "k")
        assert check_request(chat, MODEL, "/v1/chat/completions") is None
        assert s.requests[0]["max_completion_tokens"] == 16
        assert s.headers[0]["authorization"] == "Bearer k"
