"""The CLI's contracts: exit codes, one-line errors, JSON shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tbmm.cli.root import app
from tbmm.core import exact
from tbmm.suite.tasks import Task

from .conftest import infeasible_dragon

runner = CliRunner()


def anchor_file(t: Task, tmp_path: Path) -> Path:
    p = tmp_path / f"{t.slug}.json"
    p.write_bytes(t.anchor_artifact_bytes())
    return p


def by_slug(suite: list[Task], slug: str) -> Task:
    return next(t for t in suite if t.slug == slug)


@pytest.mark.slow
def test_tasks_list_show_validate(suite: list[Task]) -> None:
    r = runner.invoke(app, ["tasks", "list", "--json"])
    assert r.exit_code == 0
    rows = json.loads(r.stdout)
    assert len(rows) == len(suite) and all(2 <= x["metrics"] <= 6 for x in rows)
    r = runner.invoke(app, ["tasks", "show", "cumcm-2024-a-dragon-dance"])
    assert r.exit_code == 0 and "max_head_speed" in r.stdout
    r = runner.invoke(app, ["tasks", "validate", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["ok"] is True


def test_score_json_shape_and_exit_codes(suite: list[Task], tmp_path: Path) -> None:
    t = by_slug(suite, "mcm-2025-b-juneau-tourism")
    r = runner.invoke(app, ["score", str(anchor_file(t, tmp_path)), "--task", t.slug, "--json"])
    assert r.exit_code == 0
    j = json.loads(r.stdout)
    assert {"task", "o_eval", "o_eval_exact", "raw_exact", "robust_bo_eval", "metrics"} <= set(j)
    assert j["o_eval_exact"] == "1" and j["raw_exact"] == "1"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = runner.invoke(app, ["score", str(bad), "--task", t.slug])
    assert r.exit_code == 2 and "not valid JSON" in r.stderr
    r = runner.invoke(app, ["score", str(bad), "--task", "no-such-task"])
    assert r.exit_code == 2 and "unknown task" in r.stderr
    r = runner.invoke(app, ["score", str(tmp_path / "absent.json"), "--task", t.slug])
    assert r.exit_code == 2 and "cannot read" in r.stderr


def test_gate_exit_codes(suite: list[Task], tmp_path: Path) -> None:
    ok = by_slug(suite, "mcm-2025-b-juneau-tourism")
    assert (
        runner.invoke(app, ["gate", str(anchor_file(ok, tmp_path)), "--task", ok.slug]).exit_code
        == 0
    )
    dragon = by_slug(suite, "cumcm-2024-a-dragon-dance")
    bad_dragon = tmp_path / "dragon_bad.json"
    bad_dragon.write_bytes(infeasible_dragon(dragon))
    r = runner.invoke(app, ["gate", str(bad_dragon), "--task", dragon.slug, "--json"])
    assert r.exit_code == 1
    assert "head_speed_limit" in json.loads(r.stdout)["failed"]
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    assert (
        runner.invoke(app, ["gate", str(empty), "--task", ok.slug]).exit_code == 0
    )  # warning only
    arr = tmp_path / "arr.json"
    arr.write_text("[1, 2]")
    assert runner.invoke(app, ["gate", str(arr), "--task", ok.slug]).exit_code == 2


def test_verify_exit_codes_and_names(suite: list[Task], tmp_path: Path) -> None:
    ok = by_slug(suite, "mcm-2025-b-juneau-tourism")
    r = runner.invoke(app, ["verify", str(anchor_file(ok, tmp_path)), "--task", ok.slug, "--json"])
    assert r.exit_code == 0, r.stdout
    j = json.loads(r.stdout)
    assert j["lean"] == "ok" and j["gate"] == "pass" and j["o_eval_exact"] == "1"
    dragon = by_slug(suite, "cumcm-2024-a-dragon-dance")
    bad_dragon = tmp_path / "dragon_bad.json"
    bad_dragon.write_bytes(infeasible_dragon(dragon))
    r = runner.invoke(app, ["verify", str(bad_dragon), "--task", dragon.slug])
    assert r.exit_code == 1
    assert (
        "INFEASIBLE" in r.stdout
        and "q5.max_head_speed_mps" in r.stdout
        and "check_head_speed_limit" in r.stdout
    )
    nan = tmp_path / "nan.json"
    nan.write_text(exact.dumps(ok.anchor_artifact).replace("11000", "NaN", 1))
    r = runner.invoke(app, ["verify", str(nan), "--task", ok.slug, "--json"])
    assert r.exit_code == 1 and json.loads(r.stdout)["o_eval"] == 0
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\xff\xfe\x00")
    r = runner.invoke(app, ["verify", str(garbage), "--task", ok.slug])
    assert r.exit_code == 2


@pytest.mark.slow
def test_verify_batch_and_manifest(suite: list[Task], tmp_path: Path) -> None:
    """`tbmm verify --batch DIR --task T` and `--manifest FILE`: each artifact reported
    apart (its own exit code and verdict), the exit code the highest of theirs."""
    ok = by_slug(suite, "mcm-2025-b-juneau-tourism")
    dragon = by_slug(suite, "cumcm-2024-a-dragon-dance")
    folder = tmp_path / "batch"
    folder.mkdir()
    (folder / "a_anchor.json").write_bytes(ok.anchor_artifact_bytes())
    r = runner.invoke(app, ["verify", "--batch", str(folder), "--task", ok.slug])
    assert r.exit_code == 0 and "1 artifacts in" in r.stdout, r.stdout  # a batch of one
    (folder / "b_empty.json").write_text("{}")
    r = runner.invoke(app, ["verify", "--batch", str(folder), "--task", ok.slug, "--json"])
    assert r.exit_code == 0, r.stdout
    rows = json.loads(r.stdout)
    assert [Path(x["file"]).name for x in rows] == ["a_anchor.json", "b_empty.json"]
    assert [(x["exit_code"], x["lean"]) for x in rows] == [(0, "ok"), (0, "ok")]
    assert rows[0]["o_eval_exact"] == "1" and rows[1]["o_eval_exact"] == "0"
    (folder / "c_garbage.json").write_bytes(b"\xff\xfe\x00")
    r = runner.invoke(app, ["verify", "--batch", str(folder), "--task", ok.slug, "--json"])
    assert r.exit_code == 2 and [x["exit_code"] for x in json.loads(r.stdout)] == [0, 0, 2]

    (tmp_path / "bad_dragon.json").write_bytes(infeasible_dragon(dragon))
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps({"batch/a_anchor.json": ok.slug, "bad_dragon.json": dragon.slug})
    )
    r = runner.invoke(app, ["verify", "--manifest", str(manifest)])
    assert r.exit_code == 1, r.stdout
    assert "FEASIBLE a_anchor.json" in r.stdout and "INFEASIBLE bad_dragon.json" in r.stdout
    assert "check_head_speed_limit" in r.stdout  # the failing check, kernel-confirmed
    assert "2 artifacts in" in r.stdout

    for args, why in [
        (["--batch", str(folder)], "--batch needs --task"),
        (["--batch", str(tmp_path / "nowhere"), "--task", ok.slug], "not a folder"),
        (["--manifest", str(folder / "c_garbage.json")], "cannot read the manifest"),
    ]:
        r = runner.invoke(app, ["verify", *args])
        assert r.exit_code == 2 and why in r.stderr, (args, r.stderr)


def test_verify_without_a_lean_toolchain_is_one_line_exit_2(
    suite: list[Task], tmp_path: Path
) -> None:
    ok = by_slug(suite, "mcm-2025-b-juneau-tourism")
    art = anchor_file(ok, tmp_path)
    env = {"TBMM_LEAN_KIND": "elan", "PATH": "/nonexistent"}
    for args in (
        ["verify", str(art), "--task", ok.slug],
        ["verify", "--batch", str(tmp_path), "--task", ok.slug],
    ):
        r = runner.invoke(app, args, env=env)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert r.stderr.count("\n") == 1 and "no Lean toolchain" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr + r.stdout
    r = runner.invoke(app, ["verify", str(art), "--task", ok.slug, "--no-lean"], env=env)
    assert r.exit_code == 0 and "Lean skipped" in r.stdout
