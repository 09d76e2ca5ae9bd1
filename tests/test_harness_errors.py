"""Infrastructure failures are not scores: an unreachable endpoint, a missing program, a
sandbox that cannot start or a harness fault end the trial `error` (stored with its cause,
never verified), the leaderboard leaves it out of its means with a count, `tbmm run` exits
4, and `--resume` runs it again. A pre-flight check stops a sweep before any trial when the
endpoint or the program is missing (exit 3)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harness.agents.errors import PreflightError
from harness.agents.registry import AgentOutcome, CommandAgent, CommandTemplate, OracleAgent
from harness.cli import run as cli
from harness.runs.runner import run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import (
    ScriptedChatServer,
    make_fake_task,
    stand_in_verify,
    tool_call_reply,
)
from tbmm.reports import leaderboard as L
from tests.atif_check import assert_valid_atif

pytestmark = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend("bwrap", ensure_agent_venv())


class DeadPOST:
    """Answers GET (so the pre-flight check passes) but drops every POST without a reply:
    the model endpoint went away after the sweep started."""

    def __init__(self) -> None:
        self.posts = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                return

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                outer.posts += 1
                self.close_connection = True
                self.connection.close()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def dead() -> Iterator[DeadPOST]:
    d = DeadPOST()
    yield d
    d.close()


def _app(tasks: list[Any], monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    monkeypatch.setattr(cli, "select_tasks", lambda spec, root=None, **kw: tasks)
    monkeypatch.setattr(
        "harness.runs.runner.default_verifier", lambda: (stand_in_verify, "verification: stand-in")
    )
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    return app


@pytest.mark.slow
def test_unreachable_endpoint_is_an_error_not_a_zero_and_resume_retries_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dead: DeadPOST
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    app = _app([task], monkeypatch)
    db = tmp_path / "r.sqlite"
    base = ["run", "--agent", "llm", "--model", "m", "--backend", "sandbox", "--db", str(db)]
    base += ["--price-in", "1", "--price-out", "2"]  # "m" is in no model table
    res = CliRunner().invoke(app, [*base, "--base-url", dead.base_url, "--retries", "1"])
    assert res.exit_code == cli.EXIT_TRIAL_ERRORS, res.output
    assert dead.posts == 2  # the request and its one retry
    assert "1 trial(s) ended with an infrastructure error" in res.output
    (r,) = Store(db).trials()
    assert r["status"] == "error" and r["error"].startswith("endpoint_unreachable:")
    assert r["o_eval"] is None and r["verdict"] is None  # never verified, never scored
    row = L.row_from_record(r, task_suites={task.slug: "CUMCM"})
    assert row.status == L.INFRA
    lb = L.compute([row], tasks=[task.slug], task_suites={task.slug: "CUMCM"})
    (x,) = lb.entries
    assert x.errors == 1 and x.o_eval.mean is None  # not a 0: no score at all
    assert x.partial and any("is partial" in n and "endpoint_unreachable" in n for n in lb.notes)
    blob = runs_dir_for(db) / r["blob_dir"]
    assert_valid_atif([blob / "trajectory.json"])

    # the endpoint is back: --resume reruns the errored trial and replaces it
    out = task.output_path
    script = [
        tool_call_reply(
            "c1",
            "run_command",
            {"command": f'echo \'{{"q1": {{"mean_load": 12.5}}}}\' > {out}'},
            (100, 10),
        ),
        tool_call_reply("c2", "finish", {}, (120, 5)),
    ]
    with ScriptedChatServer(script) as server:
        res = CliRunner().invoke(
            app, [*base, "--base-url", server.base_url, "--retries", "1", "--resume"]
        )
    assert res.exit_code == 0, res.output
    assert "ran 1 (failed 0, errors 0)" in res.output
    (r2,) = Store(db).trials()
    assert (r2["status"], r2["error"], r2["o_eval"]) == ("ok", None, 1.0)
    assert (runs_dir_for(db) / r2["blob_dir"] / "trajectory.json").is_file()
    # and a third --resume has nothing left to do
    res = CliRunner().invoke(app, [*base, "--base-url", server.base_url, "--resume"])
    assert res.exit_code == 0 and "ran 0" in res.output


@pytest.mark.slow
def test_proxy_sees_the_endpoint_die_mid_trial(
    tmp_path: Path, backend: SandboxBackend, dead: DeadPOST
) -> None:
    """A CLI agent behind the proxy: the upstream drops the request; after the retries the
    proxy answers 502 and records the failure, and the trial is an error whatever the CLI
    did with that 502."""
    task = make_fake_task(tmp_path / "tasks")
    script = (
        'python3 -c "import os, urllib.request as u; u.urlopen(u.Request('
        "os.environ['OPENAI_BASE_URL'] + '/chat/completions', data=b'{\\\"model\\\": \\\"m\\\"}', "
        "headers={'Content-Type': 'application/json'}), timeout=30)\"; "
        f'echo \'{{"q1": {{"mean_load": 1}}}}\' > {task.output_path}'
    )
    agent = CommandAgent.from_shell(
        script,
        provider_env={"OPENAI_BASE_URL": dead.base_url, "OPENAI_API_KEY": "k"},
        max_retries=1,
        backoff_s=0.1,
    )
    db = tmp_path / "r.sqlite"
    summary = run_sweep(
        agent, "m", [task], 1, backend, 1, db, False, verifier=stand_in_verify, progress=False
    )
    assert summary.errored == 1 and summary.failed == 0
    (r,) = Store(db).trials()
    assert r["status"] == "error" and "endpoint_unreachable" in r["error"]
    assert r["artifact_status"] == "ok" and r["o_eval"] is None  # kept, not scored


def test_preflight_refuses_an_unreachable_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    app = _app([task], monkeypatch)
    db = tmp_path / "r.sqlite"
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--agent",
            "llm",
            "--model",
            "m",
            "--price-in",
            "1",
            "--price-out",
            "2",
            "--backend",
            "sandbox",
            "--db",
            str(db),
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
    )
    assert res.exit_code == cli.EXIT_PREFLIGHT, res.output
    assert "pre-flight check failed, no trial ran" in res.output
    assert "endpoint_unreachable" in res.output
    assert not db.exists() or (Store(db).trials() == [] and Store(db).entries() == [])


@pytest.mark.slow
def test_preflight_finds_a_missing_program_inside_the_sandbox(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    tpl = CommandTemplate(argv=("tbmm-no-such-agent", "--go"), provider="none")
    db = tmp_path / "r.sqlite"
    with pytest.raises(PreflightError, match="binary_missing: `tbmm-no-such-agent --version`"):
        run_sweep(
            CommandAgent(tpl, label="ghost"),
            None,
            [task],
            2,
            backend,
            1,
            db,
            False,
            verifier=stand_in_verify,
            progress=False,
        )
    assert Store(db).trials() == []
    # without the check, each trial finds out by itself: exit 127 is an error, not a zero
    summary = run_sweep(
        CommandAgent(tpl, label="ghost"),
        None,
        [task],
        1,
        backend,
        1,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
        check=False,
    )
    (r,) = Store(db).trials()
    assert summary.errored == 1 and r["status"] == "error"
    assert r["error"].startswith("binary_missing: tbmm-no-such-agent exited 127")


class BrokenBackend:
    """A backend whose sandbox never starts (say, bubblewrap lost its user namespace)."""

    name = "broken"

    def __init__(self, inner: SandboxBackend) -> None:
        self.inner = inner

    def describe(self) -> str:
        return "broken"

    def isolation(self, limits: Any) -> dict[str, str | None]:
        return self.inner.isolation(limits)

    def open(self, **kw: Any) -> Any:
        raise OSError("bwrap: setting up uid map: Permission denied")


class Exploding:
    name = "exploding"

    def settings(self) -> dict[str, Any]:
        return {}

    def run(self, ctx: Any) -> AgentOutcome:
        ctx.session  # noqa: B018 - open the sandbox
        raise RuntimeError("a bug in the harness")


@pytest.mark.slow
def test_sandbox_start_and_harness_faults_are_errors(
    tmp_path: Path, backend: SandboxBackend
) -> None:
    task = make_fake_task(tmp_path / "tasks")
    db = tmp_path / "r.sqlite"
    s1 = run_sweep(
        OracleAgent(),
        None,
        [task],
        1,
        BrokenBackend(backend),
        1,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    s2 = run_sweep(
        Exploding(),
        None,
        [task],
        1,
        backend,
        1,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    assert (s1.errored, s2.errored) == (1, 1)
    got = {r["agent"]: r for r in Store(db).trials()}
    assert got["oracle"]["error"].startswith("sandbox_start: OSError: bwrap: setting up uid map")
    assert got["exploding"]["error"] == "harness_fault: RuntimeError: a bug in the harness"
    assert got["exploding"]["exit_reason"] == "harness_error"
    files = [runs_dir_for(db) / r["blob_dir"] / "trajectory.json" for r in got.values()]
    assert_valid_atif(files)
    # resume with a working backend replaces the oracle's error with a score
    s3 = run_sweep(
        OracleAgent(),
        None,
        [task],
        1,
        backend,
        1,
        db,
        True,
        verifier=stand_in_verify,
        progress=False,
    )
    assert (s3.retried, s3.errored, s3.records[0].o_eval) == (1, 0, 1.0)
    assert len(Store(db).trials()) == 2


OLD_SCHEMA = """
CREATE TABLE entries (entry_id TEXT PRIMARY KEY, agent TEXT NOT NULL, model TEXT,
    settings TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE trials (id INTEGER PRIMARY KEY, entry_id TEXT NOT NULL REFERENCES entries(entry_id),
    agent TEXT NOT NULL, model TEXT, task TEXT NOT NULL, suite TEXT, seed INTEGER NOT NULL,
    backend TEXT, started_at REAL, finished_at REAL, duration_s REAL, setup_s REAL,
    agent_s REAL, verify_s REAL, exit_reason TEXT NOT NULL, detail TEXT, turns INTEGER,
    artifact_status TEXT NOT NULL, artifact_size INTEGER, artifact_sha256 TEXT, artifact BLOB,
    tokens_in INTEGER, tokens_out INTEGER, requests INTEGER, cost_usd REAL, o_eval REAL,
    o_eval_exact TEXT, gate TEXT, lean TEXT, verify_exit INTEGER, verdict TEXT, blob_dir TEXT,
    UNIQUE (entry_id, task, seed));
"""


def test_a_store_from_the_previous_release_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    con = sqlite3.connect(db)
    con.executescript(OLD_SCHEMA)
    con.execute("INSERT INTO entries VALUES ('oracle', 'oracle', NULL, '{}', 1.0)")
    con.execute(
        "INSERT INTO trials (entry_id, agent, task, seed, exit_reason, artifact_status, "
        "o_eval, verdict, blob_dir) VALUES ('oracle', 'oracle', 't', 0, 'completed', 'ok', 1.0,"
        " ?, 'oracle/t/0')",
        (json.dumps({"status": "scored", "o_eval_exact": "1"}),),
    )
    con.commit()
    con.close()
    store = Store(db)
    (r,) = store.trials()
    assert (r["status"], r["error"], r["trajectory"]) == ("ok", None, None)
    assert store.done("oracle") == {("t", 0)} and store.errored("oracle") == set()
    assert store.entries()[0]["name"] is None and store.set_name("oracle", "The oracle")
    store.close()
    Store(db).close()  # idempotent
    assert L.row_from_record(r, task_suites={"t": "CUMCM"}).status == "scored"
