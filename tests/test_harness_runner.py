"""Sweeps, store and resume, with real sandboxed trials (oracle, replay, shell command)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.agents.errors import ConfigError
from harness.agents.registry import CommandAgent, OracleAgent, ReplayAgent
from harness.agents.trajectory import read_trajectory
from harness.runs.runner import Entry, run_sweep
from harness.runs.store import Store, runs_dir_for
from harness.sandbox.bwrap import SandboxBackend, bwrap_path
from harness.sandbox.venv import ensure_agent_venv
from harness.testing import ANCHOR_ARTIFACT, make_fake_task, stand_in_verify
from tbmm.core.bounds import DEFAULT_CAPS

pytestmark = pytest.mark.skipif(not bwrap_path(), reason="no sandbox (bubblewrap) available")


@pytest.fixture(scope="module")
def backend() -> SandboxBackend:
    return SandboxBackend("auto", ensure_agent_venv())


def rows(db: Path) -> list[dict]:
    return Store(db).trials()


@pytest.mark.slow
def test_oracle_sweep_stores_everything(tmp_path: Path, backend: SandboxBackend) -> None:
    tasks = [make_fake_task(tmp_path / "tasks", f"cumcm-2099-{c}-fake") for c in "ab"]
    db = tmp_path / "r.sqlite"
    summary = run_sweep(
        OracleAgent(),
        None,
        tasks,
        2,
        backend,
        2,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    assert (summary.planned, summary.done, summary.failed) == (4, 4, 0)
    got = rows(db)
    assert sorted((r["task"], r["seed"]) for r in got) == [
        (t.slug, s) for t in tasks for s in (0, 1)
    ]
    for r in got:
        assert r["exit_reason"] == "completed" and r["artifact_status"] == "ok"
        assert json.loads(r["artifact"]) == ANCHOR_ARTIFACT
        assert (r["o_eval"], r["gate"], r["lean"], r["verify_exit"]) == (1.0, "pass", "ok", 0)
        assert json.loads(r["verdict"])["o_eval_exact"] == "1"
        blob = runs_dir_for(db) / r["blob_dir"]
        kinds = [e["type"] for e in read_trajectory(blob / "events.jsonl")]
        assert kinds[0] == "trial" and "command" in kinds and kinds[-1] == "end"
        assert (blob / f"{r['task']}_result.json").read_bytes() == r["artifact"]
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # the same entry again without --resume is refused; with it, nothing is re-run
    with pytest.raises(RuntimeError, match="--resume"):
        run_sweep(
            OracleAgent(),
            None,
            tasks,
            2,
            backend,
            1,
            db,
            False,
            verifier=stand_in_verify,
            progress=False,
        )
    again = run_sweep(
        OracleAgent(),
        None,
        tasks,
        3,
        backend,
        1,
        db,
        True,
        verifier=stand_in_verify,
        progress=False,
    )
    assert (again.skipped, again.done) == (4, 2)
    assert len(rows(db)) == 6


@pytest.mark.slow
def test_replay_layouts_and_missing(tmp_path: Path, backend: SandboxBackend) -> None:
    tasks = [make_fake_task(tmp_path / "tasks", f"mcm-2099-{c}-fake") for c in "abc"]
    src = tmp_path / "replay"
    (src / tasks[0].slug / "1").mkdir(parents=True)
    (src / f"{tasks[0].slug}_result.json").write_text('{"q1": {"mean_load": 12.5}}')
    (src / tasks[0].slug / "1" / f"{tasks[0].slug}_result.json").write_text(
        '{"q1": {"mean_load": 3}}'
    )
    (src / f"{tasks[1].slug}_result.json").write_text("not json")
    db = tmp_path / "r.sqlite"
    with pytest.raises(ConfigError, match=f"{tasks[2].slug} seed 0, {tasks[2].slug} seed 1"):
        run_sweep(ReplayAgent(src), None, tasks, 2, backend, 2, db, False, progress=False)
    assert not db.exists()  # refused before the store
    run_sweep(
        ReplayAgent(src, allow_missing=True),
        None,
        tasks,
        2,
        backend,
        2,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    got = {(r["task"], r["seed"]): r for r in rows(db)}
    assert got[(tasks[0].slug, 0)]["o_eval"] == 1.0
    assert got[(tasks[0].slug, 1)]["o_eval"] == 0.0  # the per-seed file wins
    assert got[(tasks[1].slug, 0)]["verify_exit"] == 2  # unreadable, still stored
    missing = got[(tasks[2].slug, 0)]
    assert missing["exit_reason"] == "no_artifact_source"
    assert missing["artifact_status"] == "missing"
    assert (missing["o_eval"], missing["verify_exit"]) == (0.0, 2)  # scored as missing


@pytest.mark.slow
def test_oversized_artifact_rejected_with_reason(tmp_path: Path, backend: SandboxBackend) -> None:
    task = make_fake_task(tmp_path / "tasks")
    agent = CommandAgent.from_shell(
        'head -c 5000000 /dev/zero | tr "\\0" " " > "$TBMM_OUTPUT_PATH"', provider="none"
    )
    db = tmp_path / "r.sqlite"
    run_sweep(
        agent, None, [task], 1, backend, 1, db, False, verifier=stand_in_verify, progress=False
    )
    (r,) = rows(db)
    assert r["exit_reason"] == "completed"
    assert r["artifact_status"] == "too_large" and r["artifact"] is None
    assert r["artifact_size"] == 5_000_000 > DEFAULT_CAPS.max_bytes
    assert f"over the {DEFAULT_CAPS.max_bytes}-byte limit" in r["detail"]
    assert (r["o_eval"], r["verify_exit"]) == (0.0, 2)  # scored as missing


@pytest.mark.slow
def test_agent_timeout_is_recorded(tmp_path: Path, backend: SandboxBackend) -> None:
    task = make_fake_task(tmp_path / "tasks")
    agent = CommandAgent.from_shell("sleep 30", provider="none")
    db = tmp_path / "r.sqlite"
    t0 = time.monotonic()
    run_sweep(
        agent,
        None,
        [task],
        1,
        backend,
        1,
        db,
        False,
        timeout=1.0,
        verifier=stand_in_verify,
        progress=False,
    )
    assert time.monotonic() - t0 < 10
    (r,) = rows(db)
    assert r["exit_reason"] == "timeout" and r["artifact_status"] == "missing"


def test_entry_id_depends_on_settings() -> None:
    assert Entry("oracle").entry_id == "oracle"
    a = Entry("llm", "m", {"max_turns": 5}).entry_id
    assert a.startswith("llm@m#") and a != Entry("llm", "m", {"max_turns": 6}).entry_id


SWEEP_SCRIPT = """
import sys
from pathlib import Path
from harness.agents.registry import CommandAgent
from harness.runs.runner import run_sweep
from harness.sandbox.bwrap import SandboxBackend
from harness.testing import make_fake_task, stand_in_verify
from harness.sandbox.venv import ensure_agent_venv
root, db = Path(sys.argv[1]), Path(sys.argv[2])
tasks = [make_fake_task(root, f"cumcm-2099-{c}-fake") for c in "abc"]
cmd = 'sleep ' + sys.argv[4] + '; echo \\'{"q1": {"mean_load": 12.5}}\\' > "$TBMM_OUTPUT_PATH"'
agent = CommandAgent.from_shell(cmd, provider="none")
run_sweep(agent, None, tasks, 3, SandboxBackend("auto", ensure_agent_venv()), 2, db,
          sys.argv[3] == "resume", verifier=stand_in_verify, progress=False)
"""


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(db, timeout=5)
        try:
            return con.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume(tmp_path: Path) -> None:
    """SIGKILL the sweep process mid-run: nothing committed is lost, resume completes the
    rest exactly once, and no sandboxed process outlives the killed sweep."""
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(SWEEP_SCRIPT))
    db = tmp_path / "r.sqlite"
    root = tmp_path / "tasks"
    short = f"0.4{os.getpid() % 1000:03d}1"  # unique: other sessions may run this test too
    proc = subprocess.Popen(
        [sys.executable, str(script), str(root), str(db), "fresh", short], start_new_session=True
    )
    deadline = time.monotonic() + 60
    while _count(db) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _count(db)
    assert 3 <= before < 9, before
    # bwrap --die-with-parent tears the sandbox down; on a loaded machine that can take a moment
    deadline = time.monotonic() + 10
    while True:
        lingering = [
            p for p in os.listdir("/proc") if p.isdigit() and _cmd(p).find(f"sleep {short}") >= 0
        ]
        if not lingering or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert lingering == []
    first_ids = {(r["task"], r["seed"]): r["id"] for r in rows(db)}
    subprocess.run(
        [sys.executable, str(script), str(root), str(db), "resume", short],
        check=True,
        timeout=120,
    )
    after = rows(db)
    combos = [(r["task"], r["seed"]) for r in after]
    assert len(after) == 9 and len(set(combos)) == 9
    after_ids = {(r["task"], r["seed"]): r["id"] for r in after}
    assert all(after_ids[k] == v for k, v in first_ids.items())  # committed rows untouched
    assert all(r["o_eval"] == 1.0 for r in after)
    runs = runs_dir_for(db)
    for r in after:
        assert (runs / r["blob_dir"] / "events.jsonl").is_file()
    assert not (runs / "_tmp").exists() or not any((runs / "_tmp").iterdir())


def _cmd(pid: str) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


@pytest.mark.slow
def test_ctrl_c_aborts_quickly_and_commits_nothing_partial(tmp_path: Path) -> None:
    long = f"97.{os.getpid() % 1000:03d}1"  # unique: other sessions may run this test too
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent(SWEEP_SCRIPT))
    db = tmp_path / "r.sqlite"
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "tasks"), str(db), "fresh", long],
        start_new_session=True,
        stderr=subprocess.PIPE,
    )
    # both agents' own `sleep` runs (not merely a sandbox command line that mentions it);
    # a generous wait (a loaded machine starts sandboxes slowly), then a clear failure
    deadline = time.monotonic() + 180
    running = 0
    while time.monotonic() < deadline and running < 2:
        time.sleep(0.05)
        running = sum(
            _cmd(p).startswith(f"sleep {long}") for p in os.listdir("/proc") if p.isdigit()
        )
    assert running == 2, f"only {running} of 2 sandboxes started within 180 s"
    os.kill(proc.pid, signal.SIGINT)
    # liveness, not speed: well under the agents' own sleeps (so it did not wait for them),
    # generous for a loaded machine (20 s timed out at a load average of 14)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert b"aborting: killed 2 running sandbox(es)" in err
    assert _count(db) == 0
    time.sleep(0.3)
    assert not any(f"sleep {long}" in _cmd(p) for p in os.listdir("/proc") if p.isdigit())
