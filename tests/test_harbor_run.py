"""A real `harbor run` of the exported dataset, driven by `tbmm run --backend harbor`:
Harbor (PyPI, its own Python >= 3.12 venv) builds the agent's and the verifier's images on a
local Docker engine, runs its `oracle` agent (then its `nop` agent, which writes nothing),
runs our verifier in the separate verifier container, and tbmm ingests the job into the
results store and prints the leaderboard.

Needs what .ci/run sets up: a Docker engine (DOCKER_HOST), the `docker compose` v2 plugin
(DOCKER_CONFIG), a local Debian bookworm + Python 3.11 base image built with mmdebstrap
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

from tbmm.harbor.export import export_harbor
from tbmm.tasks import find_task
from tbmm.verify import verify_artifact

from .conftest import REPO
from .test_harbor import harbor_python

pytestmark = pytest.mark.slow

TASK = "mcm-2025-b-juneau-tourism"
BASE = os.environ.get("TBMM_HARBOR_BASE_IMAGE", "tbmm-local/bookworm-python:3.11")
LOCAL_ENV = "harbor_local_env:NoNetworkDocker"


def _missing() -> str | None:
    """Why a real `harbor run` cannot happen here (None: it can)."""
    if harbor_python() is None:
        return "Harbor is not installed (.ci/run makes .harbor-venv; or set TBMM_HARBOR_PYTHON)"
    docker = shutil.which("docker")
    if docker is None:
        return "no docker CLI"
    probe = [
        ([docker, "info", "--format", "{{.ServerVersion}}"], "no Docker engine answers"),
        ([docker, "compose", "version"], "no `docker compose` v2 plugin"),
        ([docker, "image", "inspect", BASE], f"no local base image {BASE} (.ci/run builds it)"),
    ]
    for cmd, why in probe:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
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


def _tbmm_run(agent: str, dataset: Path, db: Path) -> subprocess.CompletedProcess[str]:
    py = harbor_python()
    assert py is not None
    env = dict(os.environ)
    env["TBMM_HARBOR"] = str(py.parent / "harbor")
    env["PYTHONPATH"] = str(REPO / "tests")  # Harbor imports harbor_local_env from here
    return subprocess.run(
        ["uv", "run", "tbmm", "run", "--backend", "harbor", "--agent", agent, "--env", LOCAL_ENV,
         "--tasks", TASK, "--harbor-dataset", str(dataset), "--db", str(db)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=3000,
    )  # fmt: skip


def test_harbor_run_oracle_and_nop_scored_by_tbmm_and_ingested(
    engine: None, tmp_path: Path
) -> None:
    task = find_task(TASK)
    dataset = tmp_path / "dataset"
    export_harbor(dataset, [task], verifier_base=BASE, agent_image=BASE)
    db = tmp_path / "runs" / "tbmm.sqlite"
    expected: dict[str, tuple[str, str]] = {}
    for agent, status, o_eval in (("oracle", "scored", "1"), ("nop", "missing_artifact", "0")):
        r = _tbmm_run(agent, dataset, db)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
        (job,) = (tmp_path / "runs" / "harbor" / "jobs").glob(f"tbmm-{agent}-*")
        (trial,) = [p for p in job.iterdir() if (p / "result.json").is_file()]
        result = json.loads((trial / "result.json").read_text())
        assert result["exception_info"] is None, result["exception_info"]
        assert result["verifier_environment_mode"] == "separate"
        # Harbor's verifier ran ours, in the verifier container, and wrote both files
        reward = json.loads((trial / "verifier" / "reward.json").read_text())
        verdict = json.loads((trial / "verifier" / "verdict.json").read_text())["report"]
        assert result["verifier_result"]["rewards"] == reward
        art = trial / "artifacts" / task.manifest.output_path.lstrip("/")
        ours = verify_artifact(task, art.read_bytes() if art.is_file() else None, lean=True)
        assert (verdict["status"], verdict["o_eval_exact"]) == (ours.status, ours.o_eval_exact)
        assert (ours.status, ours.o_eval_exact) == (status, o_eval)
        assert reward["reward"] == ours.o_eval and reward["lean_ok"] == int(ours.lean == "ok")
        expected[f"harbor-{agent}"] = (status, o_eval)
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT agent, task, seed, o_eval_exact, backend, verdict FROM trials"
    ).fetchall()
    got = {a: (json.loads(v)["status"], o) for a, t, s, o, b, v in rows}
    assert got == expected
    assert {b for *_, b, _v in rows} == {f"harbor:{LOCAL_ENV}"}
    lb = subprocess.run(
        ["uv", "run", "tbmm", "leaderboard", "--db", str(db), "--format", "json"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    entries = {e["agent"]: e for e in json.loads(lb.stdout)["entries"]}
    assert entries["harbor-oracle"]["per_task"][TASK]["per_seed"]["0"]["o_eval_exact"] == "1"
    assert entries["harbor-nop"]["per_task"][TASK]["per_seed"]["0"]["status"] == "missing_artifact"
