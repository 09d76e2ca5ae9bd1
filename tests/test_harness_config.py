"""Configuration refused up front: `tbmm run` exits 2 with a clear message before any trial,
and nothing is stored (no results store, no lock file, no row), for a replay folder that is
missing or lacks the selected trials' artifacts, a model the model table does not know, and
unusable paths. Before this, `--replay-dir <missing>` exited 0 and stored O-Eval 0 trials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from harness.agents.builtin import LLMAgent
from harness.agents.errors import ConfigError
from harness.agents.registry import CommandAgent, ReplayAgent
from harness.cli import run as cli
from harness.runs.runner import run_sweep
from harness.testing import make_fake_task, stand_in_verify


def _app(tasks: list[Any], monkeypatch: pytest.MonkeyPatch) -> typer.Typer:
    monkeypatch.setattr(cli, "select_tasks", lambda spec, root=None, **kw: tasks)
    monkeypatch.setattr(
        "harness.runs.runner.default_verifier", lambda: (stand_in_verify, "verification: stand-in")
    )

    def no_backend(name: str) -> Any:  # a refusal must come before any backend is chosen
        raise AssertionError("a backend was chosen for a refused configuration")

    monkeypatch.setattr(cli, "choose_backend", no_backend)
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    return app


def _nothing_stored(db: Path) -> None:
    assert not db.exists(), "a results store was created for a refused configuration"
    assert not Path(str(db) + ".lock").exists()
    assert not db.parent.joinpath(f"{db.stem}.runs").exists()


@pytest.fixture
def tasks(tmp_path: Path) -> list[Any]:
    root = tmp_path / "tasks"
    return [make_fake_task(root, "cumcm-2099-a-one"), make_fake_task(root, "cumcm-2099-b-two")]


def _replay(app: typer.Typer, db: Path, replay: Path, *extra: str) -> Any:
    args = ["run", "--agent", "replay", "--replay-dir", str(replay), "--db", str(db)]
    return CliRunner().invoke(app, [*args, "--seeds", "2", *extra])


def test_missing_replay_folder_is_refused(
    tmp_path: Path, tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "out" / "r.sqlite"
    res = _replay(_app(tasks, monkeypatch), db, tmp_path / "no-such-folder")
    assert res.exit_code == cli.EXIT_USAGE, res.output
    assert "configuration refused, no trial ran" in res.output
    assert "no-such-folder: no such folder" in res.output
    _nothing_stored(db)
    # a file where the folder should be
    (tmp_path / "a-file").write_text("x")
    res = _replay(_app(tasks, monkeypatch), db, tmp_path / "a-file")
    assert res.exit_code == cli.EXIT_USAGE and "not a folder" in res.output
    _nothing_stored(db)


def test_replay_folder_without_the_selected_artifacts_is_refused(
    tmp_path: Path, tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / "unrelated_result.json").write_text("{}")
    db = tmp_path / "r.sqlite"
    res = _replay(_app(tasks, monkeypatch), db, replay)
    assert res.exit_code == cli.EXIT_USAGE, res.output
    assert "has no artifact" in res.output and "for 4 of 4 selected trial(s)" in res.output
    _nothing_stored(db)
    # --replay-allow-missing needs at least one artifact: an empty match is still refused
    res = _replay(_app(tasks, monkeypatch), db, replay, "--replay-allow-missing")
    assert res.exit_code == cli.EXIT_USAGE and "for 4 of 4" in res.output, res.output
    _nothing_stored(db)
    # one task for every seed, the other only for seed 0: the gaps are named
    (replay / f"{tasks[0].slug}_result.json").write_text("{}")
    (replay / tasks[1].slug / "0").mkdir(parents=True)
    (replay / tasks[1].slug / "0" / f"{tasks[1].slug}_result.json").write_text("{}")
    res = _replay(_app(tasks, monkeypatch), db, replay)
    assert res.exit_code == cli.EXIT_USAGE, res.output
    assert f"for 1 of 4 selected trial(s): {tasks[1].slug} seed 1" in res.output
    assert "--replay-allow-missing" in res.output
    _nothing_stored(db)


@pytest.mark.slow
def test_allow_missing_and_a_complete_folder_pass_the_check(tmp_path: Path) -> None:
    root = tmp_path / "tasks"
    a, b = make_fake_task(root, "cumcm-2099-a-one"), make_fake_task(root, "cumcm-2099-b-two")
    replay = tmp_path / "replay"
    replay.mkdir()
    (replay / f"{a.slug}_result.json").write_text("{}")
    assert ReplayAgent(replay, allow_missing=True).check_config([a, b], [0, 1]) == []
    assert ReplayAgent(replay).check_config([a], [0, 1]) == []
    assert len(ReplayAgent(replay).check_config([a, b], [0])) == 1
    # a symlink to nothing, a folder named like the artifact: neither is an artifact
    (replay / f"{b.slug}_result.json").symlink_to(tmp_path / "gone")
    assert len(ReplayAgent(replay).check_config([b], [0])) == 1
    (replay / f"{b.slug}_result.json").unlink()
    (replay / f"{b.slug}_result.json").mkdir()
    assert len(ReplayAgent(replay).check_config([b], [0])) == 1
    # the API refuses too, before the store exists
    db = tmp_path / "r.sqlite"
    with pytest.raises(ConfigError, match="has no artifact"):
        run_sweep(ReplayAgent(replay), None, [a, b], 1, None, 1, db, False)  # type: ignore[arg-type]
    assert not db.exists()


def test_unknown_model_is_refused_unless_priced(
    tmp_path: Path, tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TBMM_MODELS", raising=False)
    db = tmp_path / "r.sqlite"
    base = ["run", "--db", str(db), "--base-url", "http://127.0.0.1:9/v1"]
    res = CliRunner().invoke(
        _app(tasks, monkeypatch), [*base, "--agent", "llm", "--model", "gpt-5-typo-xyz"]
    )
    assert res.exit_code == cli.EXIT_USAGE, res.output
    assert "--model 'gpt-5-typo-xyz' is not in the model table" in res.output
    _nothing_stored(db)
    res = CliRunner().invoke(_app(tasks, monkeypatch), [*base, "--agent", "codex"])
    assert res.exit_code == cli.EXIT_USAGE and "--agent codex needs --model" in res.output
    _nothing_stored(db)
    res = CliRunner().invoke(_app(tasks, monkeypatch), [*base, "--agent", "llm"])
    assert res.exit_code == cli.EXIT_USAGE and "--agent llm needs --model" in res.output
    _nothing_stored(db)
    # a command agent behind the proxy with a model: the same rule
    res = CliRunner().invoke(
        _app(tasks, monkeypatch),
        [*base, "--agent", "command", "--agent-cmd", "true", "--model", "nope-1"],
    )
    assert res.exit_code == cli.EXIT_USAGE and "'nope-1' is not in the model table" in res.output
    _nothing_stored(db)
    # what passes: a known model, an unknown one with both prices, a command agent that
    # calls no model, a command agent without a model (its own choice)
    llm = LLMAgent(base_url="http://127.0.0.1:9/v1")
    assert cli.model_problems(llm, "llm", "gpt-5", None, None) == []
    assert cli.model_problems(llm, "llm", "gpt-5-typo-xyz", 1.0, 2.0) == []
    assert len(cli.model_problems(llm, "llm", "gpt-5-typo-xyz", 1.0, None)) == 1
    none = CommandAgent.from_shell("true", provider="none")
    assert cli.model_problems(none, "command", "whatever", None, None) == []
    shell = CommandAgent.from_shell("true", provider="openai")
    assert cli.model_problems(shell, "command", None, None, None) == []
    # a user model table that cannot be read is refused as before
    monkeypatch.setenv("TBMM_MODELS", str(tmp_path / "missing.toml"))
    from harness.agents import model_table

    model_table._rows.cache_clear()
    res = CliRunner().invoke(
        _app(tasks, monkeypatch), [*base, "--agent", "llm", "--model", "gpt-5"]
    )
    model_table._rows.cache_clear()
    assert res.exit_code == cli.EXIT_USAGE and "missing.toml" in res.output, res.output
    _nothing_stored(db)


@pytest.mark.slow
def test_unusable_paths_are_refused(
    tmp_path: Path, tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    replay = tmp_path / "replay"
    replay.mkdir()
    for t in tasks:
        (replay / f"{t.slug}_result.json").write_text("{}")
    app = _app(tasks, monkeypatch)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = _replay(app, blocker / "sub" / "r.sqlite", replay)
    assert res.exit_code == cli.EXIT_USAGE, res.output
    assert "is not a folder" in res.output
    assert not (blocker.parent / "sub").exists()
    as_dir = tmp_path / "dir.sqlite"
    as_dir.mkdir()
    res = _replay(app, as_dir, replay)
    assert res.exit_code == cli.EXIT_USAGE and "not a regular file" in res.output, res.output
    assert list(as_dir.iterdir()) == []
    db = tmp_path / "r.sqlite"
    res = _replay(app, db, replay, "--tasks-root", str(tmp_path / "no-tasks"))
    assert res.exit_code == cli.EXIT_USAGE and "no-tasks: no such folder" in res.output
    _nothing_stored(db)
    assert cli.path_problems(db, None) == []


@pytest.mark.slow
def test_limits_that_would_zero_every_trial_are_refused(
    tmp_path: Path, tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    replay = tmp_path / "replay"
    replay.mkdir()
    for t in tasks:
        (replay / f"{t.slug}_result.json").write_text("{}")
    db = tmp_path / "r.sqlite"
    for flag, value, why in (
        ("--timeout", "0", "--timeout 0: must be above 0 seconds"),
        ("--timeout", "-5", "--timeout -5: must be above 0 seconds"),
        ("--artifact-max-bytes", "0", "--artifact-max-bytes 0: must be at least 1"),
    ):
        res = _replay(_app(tasks, monkeypatch), db, replay, flag, value)
        assert res.exit_code == cli.EXIT_USAGE and why in res.output, res.output
        _nothing_stored(db)
