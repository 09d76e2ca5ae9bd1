"""Lite mode (`tbmm.suite.compiled`, `tbmm.cli.entry`): the fast `tbmm score`/`gate` path must reach
the verdicts of the pydantic path, see every edit of a task file, and import neither
pydantic, typer nor rich."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tbmm.cli import entry
from tbmm.core import exact
from tbmm.suite import compiled
from tbmm.suite.tasks import TASKS_ROOT, Task, find_task, load_task
from tbmm.tooling.bench import corpus
from tbmm.verdict.gate import run_gate
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import ArtifactError, read_artifact, score_task

TASKS = sys.modules["tbmm.suite.tasks"]


def verdicts(t: Task, data: bytes) -> tuple[dict, dict] | str:
    try:
        doc = read_artifact(data, t.caps)
    except ArtifactError as exc:
        return str(exc)
    ev = evaluate(t, doc)
    return ev.gate.to_json(), ev.score.to_json()


def lite_task(task_dir: Path) -> Task:
    TASKS.LITE = True
    try:
        t = load_task(task_dir)
        for name in ("artifact_map", "scoring", "gate", "replay_spec", "panel", "baseline"):
            getattr(t, name)  # every file read now, in lite mode
        return t
    finally:
        TASKS.LITE = False


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TBMM_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "compiled"


def stage_verdicts(t: Task, data: bytes, replayed: dict | None) -> tuple[dict, dict] | str:
    """Gate and score of an artifact whose replay outputs were computed once (`replayed`)."""
    try:
        doc = read_artifact(data, t.caps)
    except ArtifactError as exc:
        return str(exc)
    if replayed is not None and doc:
        doc["replayed"] = replayed
    g = run_gate(t, doc)
    s = score_task(t, doc, gate_failed=g.verdict == "fail", unverifiable=g.unverifiable)
    return g.to_json(), s.to_json()


@pytest.mark.slow
def test_lite_verdicts_equal_pydantic_on_every_task(suite: list[Task], cache: Path) -> None:
    """Every task: the anchor through the whole pipeline (replay included), and the mixed
    corpus (nudged metrics, doubled numbers, `{}`) plus a list cut below its minimum through
    gate and score on the anchor's replay outputs; the same JSON from the pydantic task,
    a cold lite one (validated now) and a warm one (read back without validation)."""
    cold = {t.slug: lite_task(t.dir) for t in suite}
    assert any(cache.glob("*.json")), "lite mode stored nothing"
    warm = {t.slug: lite_task(t.dir) for t in suite}
    assert isinstance(warm[suite[0].slug].gate.check[0], compiled.Lite)
    short = 0
    for t in suite:
        anchor = t.anchor_artifact_bytes()
        want = verdicts(t, anchor)
        assert verdicts(warm[t.slug], anchor) == want, t.slug
        items = [(data, replayed) for _, data, replayed in corpus([t])]
        for ls in t.artifact_map.lists:
            if ls.min_items > 0 and "[*]" not in ls.path:
                doc = json.loads(anchor)
                node = doc
                *parents, last = ls.path.split(".")
                for k in parents:
                    node = node[k]
                node[last] = node[last][: ls.min_items - 1]
                items.append((json.dumps(doc).encode(), t.anchor_artifact.get("replayed")))
                short += 1
        for data, replayed in items:
            want = stage_verdicts(t, data, replayed)
            assert stage_verdicts(cold[t.slug], data, replayed) == want, (t.slug, data[:80])
            assert stage_verdicts(warm[t.slug], data, replayed) == want, (t.slug, data[:80])
    assert short, "no task declares a list with a minimum: the short-list case went untested"


def test_an_edited_task_file_is_seen(cache: Path, tmp_path: Path) -> None:
    """A cached copy never outlives its file: tighten a gate bound in a copy of the task and
    the lite verdict follows (the anchor now fails, as in the pydantic path)."""
    src = find_task("mcm-2025-b-juneau-tourism")
    d = tmp_path / "t"
    shutil.copytree(src.dir, d)
    data = src.anchor_artifact_bytes()
    gate_before = verdicts(lite_task(d), data)[0]
    assert gate_before["verdict"] in ("pass", "warn")
    m = src.metrics[0]
    planted = (
        f'\n[[check]]\nid = "planted"\nform = "threshold"\nfield = "{m.path}"\nop = "<="\n'
        f'bound = "{exact.fraction_to_text(m.anchor - 1)}"\njustification = "planted by the test: the anchor exceeds it"\n'
    )
    text = (d / "gate.toml").read_text() + planted
    (d / "gate.toml").write_text(text)
    lite_after = verdicts(lite_task(d), data)
    assert lite_after == verdicts(load_task(d), data)
    assert lite_after[0]["verdict"] == "fail"


def test_damaged_cache_entries_are_misses(cache: Path) -> None:
    t = find_task("mcm-2025-b-juneau-tourism")
    data = t.anchor_artifact_bytes()
    want = verdicts(t, data)
    lite_task(t.dir)
    entries = sorted(cache.glob("*.json"))
    assert entries
    for i, e in enumerate(entries):
        e.write_text(["{", json.dumps({"format": "other"}), '{"format": "tbmm-compiled/1"}'][i % 3])
    assert verdicts(lite_task(t.dir), data) == want
    # rewritten by the validation that followed the miss
    assert all(json.loads(e.read_text()).get("format") == compiled.FORMAT for e in entries)


def test_unwritable_cache_still_validates(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TBMM_CACHE_DIR", str(blocker))
    t = find_task("mcm-2025-b-juneau-tourism")
    data = t.anchor_artifact_bytes()
    assert verdicts(lite_task(t.dir), data) == verdicts(t, data)


def test_entry_parse() -> None:
    p = entry.parse
    assert p(["score", "a.json", "--task", "x"]) == {
        "command": "score",
        "flags": set(),
        "artifact": "a.json",
        "--task": "x",
    }
    assert p(["gate", "--task=x", "a.json", "--json"])["flags"] == {"--json"}
    assert p(["score", "a.json", "--task", "x", "--tasks-root", "/r", "--gate-failed"])
    assert p(["verify", "a.json", "--task", "x", "--no-lean", "--json"])["flags"] == {
        "--no-lean",
        "--json",
    }
    for typer_decides in (
        [],
        ["verify", "--batch", "d", "--task", "x"],
        ["verify", "--manifest", "m.json"],
        ["verify", "a.json", "--task", "x", "--gate-failed"],
        ["replay", "a.json", "--task", "x"],
        ["score", "a.json"],
        ["score", "--task", "x"],
        ["score", "a.json", "--task"],
        ["score", "a.json", "b.json", "--task", "x"],
        ["score", "a.json", "--task", "x", "--help"],
        ["gate", "a.json", "--task", "x", "--gate-failed"],
        ["score", "a.json", "--task", "x", "--task", "y"],
        ["score", "a.json", "--task="],
        ["score", "-", "--task", "x"],
    ):
        assert p(typer_decides) is None, typer_decides


def _tbmm(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The console entry in a fresh process; stderr's last line lists which heavy modules
    were imported."""
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('HEAVY', sorted(m for m in ('pydantic', 'typer', 'rich') "
        "if m in sys.modules), file=sys.stderr))\n"
        "from tbmm.cli.entry import main\n"
        "main()\n"
    )
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=tmp_path
    )


@pytest.mark.slow
def test_fast_commands_import_no_framework_and_match_the_typer_path(
    suite: list[Task], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from tbmm.cli.root import app
    from tests.conftest import infeasible_dragon

    dragon = next(t for t in suite if t.slug == "cumcm-2024-a-dragon-dance")
    cases = [(t, t.anchor_artifact_bytes()) for t in suite if t.replay_spec is None][:3]
    cases.append((dragon, infeasible_dragon(dragon)))
    runner = CliRunner()
    for t, data in cases:
        art = tmp_path / f"{t.slug}.json"
        art.write_bytes(data)
        for cmd in (["score", "--json"], ["score", "--json", "--gate-failed"], ["gate", "--json"]):
            args = [cmd[0], str(art), "--task", t.slug, *cmd[1:]]
            # twice: the first run may validate and store the task files
            _tbmm(args, tmp_path)
            fast = _tbmm(args, tmp_path)
            assert "HEAVY []" in fast.stderr, (args, fast.stderr[-300:])
            slow = runner.invoke(app, args)
            assert fast.returncode == slow.exit_code, args
            assert json.loads(fast.stdout) == json.loads(slow.stdout), args
        human = _tbmm(["gate", str(art), "--task", t.slug], tmp_path)
        assert "HEAVY []" in human.stderr and f"for {t.slug}" in human.stdout
        human = _tbmm(["score", str(art), "--task", t.slug], tmp_path)
        assert "HEAVY []" in human.stderr and "O-Eval (panel)" in human.stdout


@pytest.mark.slow
def test_errors_and_help_go_to_the_typer_app(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = _tbmm(["score", str(bad), "--task", "mcm-2025-b-juneau-tourism"], tmp_path)
    assert r.returncode == 2 and "not valid JSON" in r.stderr
    r = _tbmm(["score", str(bad), "--task", "no-such-task"], tmp_path)
    assert r.returncode == 2 and "unknown task" in r.stderr
    r = _tbmm(
        ["gate", str(tmp_path / "absent.json"), "--task", "mcm-2025-b-juneau-tourism"], tmp_path
    )
    assert r.returncode == 2 and "cannot read" in r.stderr
    r = _tbmm(["score", "--help"], tmp_path)
    assert r.returncode == 0 and "--gate-failed" in r.stdout
    r = _tbmm(["tasks", "list", "--json", "--tasks-root", str(TASKS_ROOT)], tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)
