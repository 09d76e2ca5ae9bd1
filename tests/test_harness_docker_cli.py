"""Docker run configuration (pure, no daemon needed), backend choice, and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import run as cli
from harness.runs.store import Store
from harness.sandbox.backends import choose_backend
from harness.sandbox.bwrap import DATA, RESULTS, Limits, bwrap_path
from harness.sandbox.container import DockerBackend, docker_available, docker_run_kwargs, image_tag
from harness.testing import make_fake_task, stand_in_verify


def test_docker_run_kwargs_isolate(tmp_path: Path) -> None:
    task = make_fake_task(tmp_path / "tasks")
    results = tmp_path / "results"
    kw = docker_run_kwargs(
        image="tbmm-task/x:1",
        data_dir=task.data_dir,
        results_dir=results,
        limits=Limits(wall_sec=14400, cpus=2, memory_mb=8192),
        name="tbmm-x",
    )
    assert kw["network_disabled"] is True and kw["network_mode"] == "none"
    assert kw["nano_cpus"] == 2_000_000_000
    assert kw["mem_limit"] == "8192m" and kw["memswap_limit"] == "8192m"
    assert kw["volumes"] == {
        str(task.data_dir.resolve()): {"bind": DATA, "mode": "ro"},
        str(results.resolve()): {"bind": RESULTS, "mode": "rw"},
    }
    assert kw["cap_drop"] == ["ALL"] and kw["detach"] is True
    assert not any(k.startswith(str(task.dir / "anchor")) for k in kw["volumes"])


def test_image_tag_follows_dockerfile(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("FROM python:3.11-slim\n")
    a = image_tag("s", env)
    (env / "Dockerfile").write_text("FROM python:3.12-slim\n")
    assert a != image_tag("s", env) and a.startswith("tbmm-task/s:")


def test_offline_image_tags_follow_the_lock_the_base_and_the_recipe(tmp_path: Path) -> None:
    """Images are built once per content: a task image's tag changes with its lock and its
    base, the offline base's with the lock (so a stale image is never reused)."""
    from harness.sandbox import images as di

    env = tmp_path / "environment"
    env.mkdir()
    (env / "Dockerfile").write_text("ARG TBMM_BASE\nFROM ${TBMM_BASE}\n")
    a = di.task_image_tag("s", env, "tbmm-base:x")
    assert a == di.task_image_tag("s", env, "tbmm-base:x")
    assert a != di.task_image_tag("s", env, "tbmm-base:y")
    (env / "requirements.lock").write_text("numpy==1\n")
    assert a != di.task_image_tag("s", env, "tbmm-base:x")
    assert di.base_tag().startswith(f"{di.BASE_REPO}:py3.")
    assert di.rootfs_tag() == f"{di.ROOTFS_REPO}:{di.SUITE}-{di.recipe_hash()}"


@pytest.mark.slow
def test_docker_oracle_trial_on_a_real_engine(tmp_path: Path, docker_engine: Any) -> None:
    """A fake task's own Dockerfile on the offline base (tests.docker_engine's engine)."""
    from harness.agents.registry import OracleAgent
    from harness.runs.runner import run_sweep
    from harness.sandbox.images import ensure_local_base

    base = ensure_local_base(docker_engine)
    task = make_fake_task(tmp_path / "tasks")
    (task.dir / "environment" / "Dockerfile").write_text(
        "ARG TBMM_BASE\nFROM ${TBMM_BASE}\nRUN mkdir -p /root/results /root/work\n"
    )
    db = tmp_path / "r.sqlite"
    run_sweep(
        OracleAgent(),
        None,
        [task],
        1,
        DockerBackend(docker_engine, base=base),
        1,
        db,
        False,
        verifier=stand_in_verify,
        progress=False,
    )
    (r,) = Store(db).trials()
    assert r["o_eval"] == 1.0 and r["status"] == "ok"


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_auto_backend_says_what_it_chose() -> None:
    backend, why = choose_backend("auto")
    assert why.startswith("backend: ")
    if not docker_available()[0]:
        assert backend.name == "sandbox" and "no Docker engine" in why


@pytest.mark.slow
@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_cli_run_oracle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks = [make_fake_task(tmp_path / "tasks", f"cumcm-2099-{c}-fake") for c in "ab"]
    monkeypatch.setattr(
        cli,
        "select_tasks",
        lambda spec, root=None, **kw: [t for t in tasks if spec in ("all", t.slug)],
    )
    monkeypatch.setattr(
        "harness.runs.runner.default_verifier", lambda: (stand_in_verify, "verification: stand-in")
    )
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    db = tmp_path / "r.sqlite"
    args = ["run", "--agent", "oracle", "--backend", "sandbox", "--db", str(db), "--timeout", "30"]
    res = CliRunner().invoke(app, [*args, "--seeds", "2", "--concurrency", "2"])
    assert res.exit_code == 0, res.output
    assert "backend: sandbox" in res.output and "ran 4 (failed 0, errors 0)" in res.output
    res = CliRunner().invoke(app, [*args, "--seeds", "2", "--resume"])
    assert res.exit_code == 0, res.output
    assert "ran 0" in res.output and "skipped 4" in res.output
    assert len(Store(db).trials()) == 4


@pytest.mark.skipif(not bwrap_path(), reason="bubblewrap not installed")
def test_cli_prints_isolation_and_refuses_weaker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tbmm run` says what enforces each property; a missing one stops the sweep unless
    --allow-weaker-isolation is given."""
    tasks = [make_fake_task(tmp_path / "tasks")]
    monkeypatch.setattr(cli, "select_tasks", lambda spec, root=None, **kw: tasks)
    monkeypatch.setattr(
        "harness.runs.runner.default_verifier", lambda: (stand_in_verify, "verification: stand-in")
    )
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    db = tmp_path / "r.sqlite"
    args = ["run", "--agent", "oracle", "--backend", "sandbox", "--db", str(db), "--timeout", "30"]
    full, _ = choose_backend("sandbox")
    iso = full.isolation(Limits(wall_sec=30))
    if any(v is None for v in iso.values()):
        print(f"SKIP reason: this machine enforces less: {iso}")
        pytest.skip("isolation is incomplete on this machine")
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "pids.max=" in res.output and "NOT ENFORCED" not in res.output
    assert res.output.count("cgroup v") >= 3  # pids, memory, cpu rows

    weaker = {**iso, "storage": None}
    monkeypatch.setattr(type(full), "isolation", lambda self, limits: weaker)
    db2 = tmp_path / "r2.sqlite"
    args2 = ["run", "--agent", "oracle", "--backend", "sandbox", "--db", str(db2)]
    res = CliRunner().invoke(app, args2)
    assert res.exit_code == 2 and "refusing to run" in res.output and "storage" in res.output
    assert not db2.exists() or Store(db2).trials() == []
    res = CliRunner().invoke(app, [*args2, "--allow-weaker-isolation", "--timeout", "30"])
    assert res.exit_code == 0, res.output
    assert "NOT ENFORCED" in res.output and len(Store(db2).trials()) == 1
