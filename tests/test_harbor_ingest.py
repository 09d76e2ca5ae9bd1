"""`tbmm ingest harbor`: a Harbor job directory into the results store, then the leaderboard.

The job directory here is a fixture built to Harbor's layout with Harbor's OWN models (its
TrialResult, TrialConfig, ExceptionInfo with its error policy, and an ATIF Trajectory,
serialised by Harbor in its Python >= 3.12 venv), around artifacts we write: a completed
trial, an agent timeout, an environment that never started, an unreachable model API, a
verifier-side failure, a lying reward file, a symlinked artifact and a foreign task. A job
produced by a real `harbor run` of the exported dataset is ingested by
tests/test_harbor_run.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness.harbor.ingest import IngestError, ingest_job, read_collected
from tbmm.integrations.harbor.layout import artifact_host_path
from tbmm.reports.leaderboard_render import to_json
from tbmm.reports.results import leaderboard
from tbmm.suite.tasks import Task, load_suite

from .test_harbor import harbor_python

T0 = "2026-11-01T10:00:00Z"
MAKE_JOB = r"""
import json, sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from harbor.models.agent.context import AgentContext
from harbor.models.task.id import LocalTaskId
from harbor.models.trajectories.agent import Agent
from harbor.models.trajectories.step import Step
from harbor.models.trajectories.trajectory import Trajectory
from harbor.models.trial.config import TaskConfig, TrialConfig, AgentConfig
from harbor.models.trial.result import (AgentInfo, ExceptionInfo, ModelInfo, TimingInfo,
    TrialResult)
from harbor.models.verifier.result import VerifierResult

spec = json.loads(Path(sys.argv[1]).read_text())
job = Path(spec["job"])
t0 = datetime(2026, 11, 1, 10, 0, tzinfo=timezone.utc)
for i, tr in enumerate(spec["trials"]):
    d = job / tr["name"]
    for sub in ("agent", "verifier", "artifacts"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    start = t0 + timedelta(minutes=10 * i)
    timing = lambda a, b: TimingInfo(started_at=start + timedelta(seconds=a),
                                     finished_at=start + timedelta(seconds=b))
    exc = None
    if tr.get("exception"):
        try:
            raise RuntimeError(tr["exception"][1])
        except RuntimeError as e:
            exc = ExceptionInfo.from_exception(e)
        exc.exception_type = tr["exception"][0]
    ran = tr.get("agent_ran", True)
    res = TrialResult(
        task_name=tr["task"], trial_name=tr["name"], trial_uri=d.as_uri(),
        task_id=LocalTaskId(path=Path("/datasets/tbmm") / tr["task"].split("/")[-1]),
        task_checksum="0" * 64,
        config=TrialConfig(task=TaskConfig(path=Path("/datasets/tbmm")), trial_name=tr["name"],
                           trials_dir=job, agent=AgentConfig(name="codex", model_name="openai/gpt-x")),
        agent_info=AgentInfo(name="codex", version="0.99.0",
                             model_info=ModelInfo(name="gpt-x", provider="openai")),
        agent_result=AgentContext(n_input_tokens=1200, n_cache_tokens=200, n_output_tokens=300,
                                  cost_usd=0.25) if ran else None,
        verifier_result=VerifierResult(rewards=tr["rewards"]) if tr.get("rewards") else None,
        exception_info=exc,
        started_at=start, finished_at=start + timedelta(seconds=100),
        environment_setup=timing(0, 10), agent_setup=timing(10, 12),
        agent_execution=timing(12, 80) if ran else None,
        verifier=timing(80, 100) if ran else None,
    )
    (d / "result.json").write_text(res.model_dump_json(indent=2))
    if ran:
        traj = Trajectory(session_id=tr["name"], agent=Agent(name="codex", version="0.99.0",
                          model_name="gpt-x"),
                          steps=[Step(step_id=1, source="user", message="solve the task"),
                                 Step(step_id=2, source="agent", message="wrote the artifact")])
        (d / "agent" / "trajectory.json").write_text(traj.model_dump_json(indent=2))
        (d / "agent" / "codex.txt").write_text("codex log\n")
"""


def _write(job: Path, trial: str, task: Task, data: bytes | None = None) -> None:
    if data is not None:
        p = Path(artifact_host_path(str(job / trial), task.manifest.output_path))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


@pytest.fixture(scope="module")
def suite_tasks() -> list[Task]:
    return load_suite()


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, suite_tasks: list[Task]) -> dict[str, Any]:
    py = harbor_python()
    if py is None:
        pytest.skip(
            "Harbor is not installed: .ci/run makes .harbor-venv (Python >= 3.12, harbor from "
            "PyPI); or set TBMM_HARBOR_PYTHON"
        )
    tmp = tmp_path_factory.mktemp("hjob")
    a, b, c = suite_tasks[0], suite_tasks[1], suite_tasks[2]
    good = {"reward": 1.0, "o_eval": 1.0}
    trials = [
        {"name": "t1-ok", "task": f"tbmm/{a.slug}", "rewards": good},
        {"name": "t2-timeout", "task": f"tbmm/{a.slug}", "rewards": {"reward": 0.0},
         "exception": ["AgentTimeoutError", "agent timed out after 14400 s"]},
        {"name": "t3-envfail", "task": f"tbmm/{b.slug}", "agent_ran": False,
         "exception": ["EnvironmentStartTimeoutError", "environment start timed out"]},
        {"name": "t4-api", "task": f"tbmm/{b.slug}",
         "exception": ["ApiConnectionError", "connection refused"]},
        {"name": "t5-verifier", "task": f"tbmm/{c.slug}",
         "exception": ["RewardFileNotFoundError", "no reward file"]},
        {"name": "t6-liar", "task": f"tbmm/{c.slug}", "rewards": {"reward": 1.0}},
        {"name": "t7-symlink", "task": f"tbmm/{b.slug}", "rewards": {"reward": 0.0}},
        {"name": "t8-foreign", "task": "other/hello-world", "rewards": {"reward": 1.0}},
    ]  # fmt: skip
    spec = tmp / "spec.json"
    jobdir = tmp / "jobs" / "j1"
    spec.write_text(json.dumps({"job": str(jobdir), "trials": trials}))
    r = subprocess.run([str(py), "-c", MAKE_JOB, str(spec)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    _write(jobdir, "t1-ok", a, a.anchor_artifact_bytes())
    _write(jobdir, "t2-timeout", a, b'{"q": {}}\n')
    _write(jobdir, "t5-verifier", c, c.anchor_artifact_bytes())
    _write(jobdir, "t6-liar", c, b"{}\n")
    link = Path(artifact_host_path(str(jobdir / "t7-symlink"), b.manifest.output_path))
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(b.dir / "anchor.json")  # the agent left a link to the anchor
    return {"dir": jobdir, "tasks": (a, b, c)}


def _rows(db: Path) -> list[dict[str, Any]]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    return [dict(r) for r in con.execute("SELECT * FROM trials ORDER BY task, seed")]


@pytest.mark.slow
def test_ingest_stores_our_verdicts_and_feeds_the_leaderboard(
    job: dict[str, Any], tmp_path: Path
) -> None:
    a, b, c = job["tasks"]
    db = tmp_path / "r.sqlite"
    s = ingest_job(job["dir"], db)
    assert s.entries == ["harbor-codex@openai/gpt-x#" + s.entries[0].split("#")[1]]
    # infrastructure failures are listed and stored as errors, not scores; the foreign task
    # is skipped
    assert sorted(e.split(" ")[0] for e in s.errors) == ["t3-envfail", "t4-api"]
    assert "never ran" in next(e for e in s.errors if e.startswith("t3"))
    assert [x.split(":")[0] for x in s.skipped] == ["t8-foreign"]
    assert [m.split(":")[0] for m in s.reward_mismatches] == ["t6-liar"]
    rows = {(r["task"], r["seed"]): r for r in _rows(db)}
    scored = [(a.slug, 0), (a.slug, 1), (b.slug, 2), (c.slug, 0), (c.slug, 1)]
    assert sorted(rows) == sorted([*scored, (b.slug, 0), (b.slug, 1)])
    for seed, cause in ((0, "never ran"), (1, "ApiConnectionError")):
        err = rows[(b.slug, seed)]
        assert err["status"] == "error" and cause in err["error"], err
        assert err["verdict"] is None and err["o_eval_exact"] is None
    assert all(rows[k]["status"] == "ok" for k in scored)
    ok = rows[(a.slug, 0)]
    assert ok["o_eval_exact"] == "1" and ok["exit_reason"] == "completed"
    assert (ok["tokens_in"], ok["tokens_out"], ok["cost_usd"]) == (1200, 300, 0.25)
    assert ok["backend"] == "harbor:docker"
    assert rows[(a.slug, 1)]["exit_reason"] == "timeout"
    assert rows[(a.slug, 1)]["o_eval_exact"] == "0"
    # the verifier-side failure is scored by our verification of the collected artifact
    assert rows[(c.slug, 0)]["o_eval_exact"] == "1"
    # the lying reward file is not the score: ours is
    liar = rows[(c.slug, 1)]
    assert json.loads(liar["verdict"])["status"] == "scored" and liar["o_eval_exact"] == "0"
    # the symlinked artifact is never followed
    assert rows[(b.slug, 2)]["artifact_status"] == "not_regular_file"
    assert json.loads(rows[(b.slug, 2)]["verdict"])["status"] == "missing_artifact"
    # blobs: Harbor's record, the ATIF trajectory as it was, the agent's log
    blob = db.parent / "r.runs" / ok["blob_dir"]
    traj = json.loads((blob / "trajectory.json").read_text())
    assert traj["schema_version"].startswith("ATIF-") and len(traj["steps"]) == 2
    assert (blob / "agent-codex.txt").read_text() == "codex log\n"
    assert json.loads((blob / "harbor_result.json").read_text())["trial_name"] == "t1-ok"
    assert json.loads((blob / "harbor_reward.json").read_text())["reward"] == 1.0
    # the leaderboard reads it
    lb, _, _ = leaderboard(db)
    doc = to_json(lb)
    (entry,) = doc["entries"]
    assert entry["entry"] == s.entries[0]
    # task b: two infrastructure errors (seeds 0, 1: counted, out of the means), then a score
    assert entry["seeds"] == [0, 1, 2]
    assert entry["errors"] == 2 and entry["error_causes"] == ["harbor_infrastructure ×2"]
    # 0.25 per trial whose agent ran (the API failure too); 0 for the one that never ran
    assert entry["cost_usd"]["per_seed"] == {"0": "0.5", "1": "0.75", "2": "0.25"}
    seeds_a = entry["per_task"][a.slug]["per_seed"]
    assert seeds_a == {
        "0": {"status": "scored", "o_eval_exact": "1"},
        "1": {"status": "scored", "o_eval_exact": "0"},
        "2": {"status": "no_trial", "o_eval_exact": "0"},
    }
    per_b = entry["per_task"][b.slug]["per_seed"]
    assert per_b["0"]["status"] == per_b["1"]["status"] == "infra_error"
    assert entry["per_task"][b.slug]["per_seed"]["2"]["status"] == "missing_artifact"


@pytest.mark.slow
def test_ingest_is_idempotent_and_jobs_add_up(job: dict[str, Any], tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    first = ingest_job(job["dir"], db)
    again = ingest_job(job["dir"], db)
    assert again.stored == [] and again.errors == []
    assert again.already == len(first.stored) + len(first.errors)
    before = _rows(db)
    # a second job of the same agent and model (its own trial names): its trials take the
    # next seeds, its infrastructure failures too
    import shutil

    second = job["dir"].parent / "j2"
    shutil.copytree(job["dir"], second, symlinks=True)
    for f in second.glob("*/result.json"):
        doc = json.loads(f.read_text())
        doc["id"] = doc["id"][:-4] + "beef"
        doc["trial_name"] += "-j2"
        f.write_text(json.dumps(doc))
    more = ingest_job(second, db)
    a = job["tasks"][0]
    assert sorted((t, s) for _, t, s in more.stored if t == a.slug) == [(a.slug, 2), (a.slug, 3)]
    assert len(_rows(db)) == 2 * len(before)


@pytest.mark.slow
def test_a_retried_trial_replaces_its_stored_error(job: dict[str, Any], tmp_path: Path) -> None:
    """Harbor retries a failed trial in place (same trial name, new result id), also when a
    job is resumed: the retry takes the error row's seed; untouched trials stay as stored."""
    import shutil

    a, b, c = job["tasks"]
    db = tmp_path / "r.sqlite"
    ingest_job(job["dir"], db)
    errors = {r["seed"]: r for r in _rows(db) if r["status"] == "error"}
    assert sorted(errors) == [0, 1]
    resumed = tmp_path / "j1"
    shutil.copytree(job["dir"], resumed, symlinks=True)
    f = resumed / "t3-envfail" / "result.json"
    doc = json.loads(f.read_text())
    doc["id"] = doc["id"][:-4] + "cafe"
    doc["exception_info"] = None
    doc["agent_execution"] = {"started_at": doc["started_at"], "finished_at": doc["finished_at"]}
    doc["agent_result"] = {"n_input_tokens": 10, "n_output_tokens": 5, "cost_usd": 0.125}
    doc["verifier_result"] = {"rewards": {"reward": 1.0}}
    f.write_text(json.dumps(doc))
    _write(resumed, "t3-envfail", b, b.anchor_artifact_bytes())
    s = ingest_job(resumed, db)
    assert s.retried == 1 and s.errors == []
    assert [(t, seed) for _, t, seed in s.stored] == [(b.slug, 0)]
    rows = {(r["task"], r["seed"]): r for r in _rows(db)}
    assert rows[(b.slug, 0)]["status"] == "ok" and rows[(b.slug, 0)]["o_eval_exact"] == "1"
    assert rows[(b.slug, 1)]["status"] == "error"  # t4 was not retried: still its error
    assert len(rows) == len(errors) + 5
    lb, _, _ = leaderboard(db)
    (entry,) = to_json(lb)["entries"]
    assert entry["errors"] == 1


@pytest.mark.slow
def test_ingest_names_the_entry(job: dict[str, Any], tmp_path: Path) -> None:
    s = ingest_job(job["dir"], tmp_path / "r.sqlite", name="codex-gpt-x-run1")
    assert s.entries == ["codex-gpt-x-run1"]
    assert {r["entry_id"] for r in _rows(tmp_path / "r.sqlite")} == {"codex-gpt-x-run1"}


def test_not_a_job_directory(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no trial results"):
        ingest_job(tmp_path, tmp_path / "r.sqlite")
    with pytest.raises(IngestError, match="not a directory"):
        ingest_job(tmp_path / "nope", tmp_path / "r.sqlite")


@pytest.mark.slow
def test_collected_artifact_behind_a_symlinked_directory_is_not_read(
    tmp_path: Path, suite_tasks: list[Task]
) -> None:
    t = suite_tasks[0]
    trial = tmp_path / "trial"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / Path(t.manifest.output_path).name).write_bytes(t.anchor_artifact_bytes())
    results = Path(artifact_host_path(str(trial), t.manifest.output_path)).parent
    results.parent.mkdir(parents=True)
    results.symlink_to(outside, target_is_directory=True)
    assert read_collected(trial, t.manifest.output_path, 1 << 20) == ("not_regular_file", None)
    results.unlink()
    results.mkdir()
    (results / Path(t.manifest.output_path).name).write_bytes(b"x" * 100)
    assert read_collected(trial, t.manifest.output_path, 10)[0] == "too_large"


@pytest.mark.slow
def test_cli_ingest(job: dict[str, Any], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tbmm.cli.root import app

    db = tmp_path / "r.sqlite"
    r = CliRunner().invoke(app, ["ingest", "harbor", str(job["dir"]), "--db", str(db)])
    assert r.exit_code == 1, r.output  # infrastructure errors were listed
    assert "error, not scored" in r.output and "stored 5 trial(s)" in r.output
    r = CliRunner().invoke(app, ["ingest", "harbor", str(job["dir"]), "--db", str(db)])
    # the two infrastructure errors were stored (as errors) the first time: nothing new
    assert r.exit_code == 0, r.output
    assert "stored 0 trial(s)" in r.output and "7 already stored" in r.output


def test_agent_logs_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent writes its log folder: what ingest keeps of it is bounded in files and bytes,
    the trajectory is kept first, links and folders are not followed."""
    from harness.harbor import ingest as hi

    monkeypatch.setattr(hi, "AGENT_FILES_CAP", 5)
    monkeypatch.setattr(hi, "AGENT_BYTES_CAP", 1000)
    monkeypatch.setattr(hi, "LOG_CAP", 300)
    agent, blobs = tmp_path / "agent", tmp_path / "blobs"
    agent.mkdir()
    blobs.mkdir()
    for i in range(8):
        (agent / f"a{i}.txt").write_bytes(b"x" * 500)
    (agent / "trajectory.json").write_text("{}")
    (tmp_path / "secret").write_text("not yours")
    notes = hi.copy_agent_logs(agent, blobs)
    kept = sorted(p.name for p in blobs.iterdir())
    assert kept[-1] == "trajectory.json" and len(kept) <= 5
    assert sum(p.stat().st_size for p in blobs.iterdir()) <= 1000
    assert all(p.stat().st_size <= 300 for p in blobs.iterdir())
    assert notes and "not kept" in notes[0]
    only = tmp_path / "only"
    only.mkdir()
    (only / "link.txt").symlink_to(tmp_path / "secret")
    (only / "sub").mkdir()
    os.mkfifo(only / "fifo")  # opened without blocking, never read
    out = tmp_path / "out"
    out.mkdir()
    assert hi.copy_agent_logs(only, out) == [] and list(out.iterdir()) == []


@pytest.mark.slow
def test_a_verifier_fault_stays_with_its_trial(job: dict[str, Any], tmp_path: Path) -> None:
    """A verification that raises stores that trial with the error as its verdict (no
    score); the other trials of the job are verified and stored as usual."""
    from tbmm.verify import verify_artifact

    a, b, c = job["tasks"]

    def flaky(task: Task, data: bytes | None):  # noqa: ANN202
        if task.slug == c.slug:
            raise RuntimeError("verifier fault")
        return verify_artifact(task, data, lean=False)

    db = tmp_path / "r.sqlite"
    s = ingest_job(job["dir"], db, verifier=flaky)
    assert len(s.stored) == 5
    rows = {(r["task"], r["seed"]): r for r in _rows(db)}
    for seed in (0, 1):
        bad = rows[(c.slug, seed)]
        assert "verifier fault" in json.loads(bad["verdict"])["error"]
        assert bad["o_eval_exact"] is None and "verification raised" in bad["detail"]
    assert rows[(a.slug, 0)]["o_eval_exact"] == "1"
