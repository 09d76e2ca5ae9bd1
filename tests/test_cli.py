"""The CLI's contracts: exit codes, one-line errors, JSON shapes."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tbmm import exact
from tbmm.cli import app
from tbmm.tasks import Task

from .conftest import infeasible_dragon

runner = CliRunner()


def anchor_file(t: Task, tmp_path: Path) -> Path:
    p = tmp_path / f"{t.slug}.json"
    p.write_bytes(t.anchor_artifact_bytes())
    return p


def by_slug(suite: list[Task], slug: str) -> Task:
    return next(t for t in suite if t.slug == slug)


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
