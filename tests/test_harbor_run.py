"""A real `harbor run` of the exported dataset, driven by `tbmm run --backend harbor`:
Harbor (PyPI, its own Python >= 3.12 venv) builds the agent's and the verifier's images on a
local Docker engine, runs its `oracle` agent (and an oracle whose solution forges the reward files),
runs our verifier in the separate verifier container, and tbmm ingests the job into the
results store and prints the leaderboard.

Needs what .ci/run sets up (.ci/harbor-setup): a private Docker engine
(TBMM_TEST_DOCKER_HOST; DOCKER_HOST is never exported to the whole test run, so other tests'
`--backend auto` keep the sandbox), the `docker compose` v2 plugin (TBMM_HARBOR_DOCKER_CONFIG),
a local Debian bookworm + Python 3.11 base image built with mmdebstrap
(TBMM_HARBOR_BASE_IMAGE; no registry is reachable here), and Harbor (.harbor-venv or
TBMM_HARBOR_PYTHON). Harbor's own `docker` environment enforces no-network through a sidecar
image from Docker Hub; tests/harbor_local_env.py enforces it with `network_mode: none`."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tbmm.integrations.harbor.export import content_digest, export_harbor
from tbmm.suite.tasks import find_task
from tbmm.verify import verify_artifact

from .conftest import REPO
from .test_harbor import harbor_python

pytestmark = pytest.mark.slow

TASK = "mcm-2025-b-juneau-tourism"
BASE = os.environ.get("TBMM_HARBOR_BASE_IMAGE", "tbmm-local/bookworm-python:3.11")
LOCAL_ENV = "harbor_local_env:NoNetworkDocker"


def docker_env() -> dict[str, str] | None:
    """The environment for the docker CLI and Harbor: the private engine and compose plugin
    (None when no engine was named)."""
    host = os.environ.get("TBMM_TEST_DOCKER_HOST")
    if not host:
        return None
    env = dict(os.environ, DOCKER_HOST=host)
    cfg = os.environ.get("TBMM_HARBOR_DOCKER_CONFIG") or str(REPO / ".harbor-docker-config")
    env["DOCKER_CONFIG"] = cfg
    return env


def _missing() -> str | None:
    """Why a real `harbor run` cannot happen here (None: it can)."""
    if harbor_python() is None:
        return "Harbor is not installed (.ci/run makes .harbor-venv; or set TBMM_HARBOR_PYTHON)"
    docker = shutil.which("docker")
    if docker is None:
        return "no docker CLI"
    env = docker_env()
    if env is None:
        return "no private Docker engine named (TBMM_TEST_DOCKER_HOST; .ci/run starts one)"
    probe = [
        ([docker, "info", "--format", "{{.ServerVersion}}"], "no Docker engine answers"),
        ([docker, "compose", "version"], "no `docker compose` v2 plugin"),
        ([docker, "image", "inspect", BASE], f"no local base image {BASE} (.ci/run builds it)"),
    ]
    for cmd, why in probe:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30, env=env)
        except subprocess.TimeoutExpired:
            return f"{why} (timed out)"
        if r.returncode != 0:
            return f"{why}: {(r.stderr or r.stdout).strip()[:200]}"
    return None


@pytest.fixture(scope="module")
def engine() -> None:
    why = _missing()
    if why is not None:
        pytest.skip(f"real harbor run not possible here: {why}")


@pytest.fixture(scope="module")
def dataset(engine: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The task exported once, agent and verifier images on the local base image."""
    out = tmp_path_factory.mktemp("harbor-run") / "dataset"
    export_harbor(out, [find_task(TASK)], verifier_base=BASE, agent_image=BASE)
    return out


def _tbmm_run(agent: str, dataset: Path, db: Path) -> subprocess.CompletedProcess[str]:
    py = harbor_python()
    assert py is not None
    env = docker_env()
    assert env is not None
    env["TBMM_HARBOR"] = str(py.parent / "harbor")
    env["PYTHONPATH"] = str(REPO / "tests")  # Harbor imports harbor_local_env from here
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network: skip litellm's fetch retries
    return subprocess.run(
        ["uv", "run", "tbmm", "run", "--backend", "harbor", "--agent", agent, "--env", LOCAL_ENV,
         "--tasks", TASK, "--harbor-dataset", str(dataset), "--db", str(db)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=3000,
    )  # fmt: skip


def test_harbor_run_oracle_scored_by_tbmm_and_ingested(dataset: Path, tmp_path: Path) -> None:
    task = find_task(TASK)
    db = tmp_path / "runs" / "tbmm.sqlite"
    r = _tbmm_run("oracle", dataset, db)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    (job,) = (tmp_path / "runs" / "harbor" / "jobs").glob("tbmm-oracle-*")
    (trial,) = [p for p in job.iterdir() if (p / "result.json").is_file()]
    result = json.loads((trial / "result.json").read_text())
    assert result["exception_info"] is None, result["exception_info"]
    assert result["verifier_environment_mode"] == "separate"
    # Harbor's verifier ran ours, in the verifier container, and wrote both files
    reward = json.loads((trial / "verifier" / "reward.json").read_text())
    verdict = json.loads((trial / "verifier" / "verdict.json").read_text())["report"]
    assert result["verifier_result"]["rewards"] == reward
    art = trial / "artifacts" / task.manifest.output_path.lstrip("/")
    ours = verify_artifact(task, art.read_bytes(), lean=True)
    assert (verdict["status"], verdict["o_eval_exact"]) == (ours.status, ours.o_eval_exact)
    assert (ours.status, ours.o_eval_exact) == ("scored", "1")
    assert reward["reward"] == ours.skill and reward["o_eval"] == ours.o_eval
    assert reward["lean_ok"] == int(ours.lean == "ok")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT agent, seed, o_eval_exact, backend, verdict FROM trials").fetchall()
    assert [(a, s, o, b, json.loads(v)["status"]) for a, s, o, b, v in rows] == [
        ("harbor-oracle", 0, "1", f"harbor:{LOCAL_ENV}", "scored")
    ]
    lb = subprocess.run(
        ["uv", "run", "tbmm", "leaderboard", "--db", str(db), "--format", "json"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    entries = {e["agent"]: e for e in json.loads(lb.stdout)["entries"]}
    assert entries["harbor-oracle"]["per_task"][TASK]["per_seed"]["0"]["o_eval_exact"] == "1"


def _edited_copy(src: Path, dst: Path, rel: str, text: str) -> None:
    """A copy of a one-task export with one file replaced and its digest in dataset.toml
    recomputed (what `harbor sync` does)."""
    shutil.copytree(src, dst)
    (task_dir,) = [p for p in dst.iterdir() if (p / "task.toml").is_file()]
    old = content_digest(task_dir)
    (task_dir / rel).write_text(text)
    manifest = dst / "dataset.toml"
    manifest.write_text(manifest.read_text().replace(old, content_digest(task_dir)))


def test_harbor_run_forged_rewards_and_a_broken_environment(dataset: Path, tmp_path: Path) -> None:
    """An agent that forges Harbor's reward files (and leaves a lying verdict) gets tbmm's
    verdict of its artifact, from Harbor and from the store; an environment that cannot be
    built is an error of the run, not a score."""
    task = find_task(TASK)
    base = dataset
    out = task.manifest.output_path
    forger = (
        "#!/usr/bin/env bash\n"
        f'mkdir -p "$(dirname {out})" /logs/verifier /logs/agent\n'
        f"echo '{{}}' > {out}\n"
        "for d in /logs/verifier /logs/agent; do\n"
        "  echo 1 > $d/reward.txt\n"
        '  echo \'{"reward": 1, "o_eval": 1, "scored": 1}\' > $d/reward.json\n'
        "done\n"
    )
    _edited_copy(base, tmp_path / "forged", "solution/solve.sh", forger)
    broken = "FROM tbmm-local/no-such-image:0\nCOPY data /root/data\n"
    _edited_copy(base, tmp_path / "broken", "environment/Dockerfile", broken)
    db = tmp_path / "runs" / "tbmm.sqlite"

    r = _tbmm_run("oracle", tmp_path / "forged", db)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    (trial,) = (tmp_path / "runs" / "harbor" / "jobs").glob("tbmm-oracle-*/*/result.json")
    result = json.loads(trial.read_text())
    ours = verify_artifact(task, b"{}\n", lean=True)
    assert ours.o_eval_exact == "0"  # the forged files claim 1
    # the forgery landed where the agent's logs go, and Harbor took tbmm's reward instead
    assert json.loads((trial.parent / "agent" / "reward.json").read_text())["reward"] == 1
    assert result["verifier_result"]["rewards"]["reward"] == ours.skill
    assert result["verifier_result"]["rewards"]["o_eval"] == ours.o_eval
    verdict = json.loads((trial.parent / "verifier" / "verdict.json").read_text())["report"]
    assert (verdict["status"], verdict["o_eval_exact"]) == (ours.status, ours.o_eval_exact)
    con = sqlite3.connect(db)
    (row,) = con.execute("SELECT o_eval_exact, verdict FROM trials").fetchall()
    assert row[0] == ours.o_eval_exact and json.loads(row[1])["status"] == ours.status

    r = _tbmm_run("oracle", tmp_path / "broken", db)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-5000:]
    assert "error, not scored" in r.stderr and "never ran" in r.stderr, r.stderr[-3000:]
    # stored as an infrastructure error, not a score (no verdict, out of the means)
    rows = con.execute("SELECT status, error, verdict FROM trials ORDER BY id").fetchall()
    assert len(rows) == 2 and rows[0][0] == "ok"
    status, error, verdict = rows[1]
    assert status == "error" and "never ran" in error and verdict is None
