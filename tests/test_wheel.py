"""The installable package: a wheel built from this checkout, installed into a clean venv,
works from any directory (task folders and Lean sources inside it, bundled Lean runtime),
and a plain install pulls in neither the AGPL PDF library nor the plotting stack."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tbmm.suite.tasks import Task

from .conftest import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH (the README's commands need it: pip install uv)")
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [uv, "build", "--wheel", "-o", str(tmp / "dist"), str(REPO)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = (tmp / "dist").glob("tbmm-*.whl")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(tmp / "venv")], check=True, timeout=300)
    py = tmp / "venv" / "bin" / "python"
    subprocess.run(
        [uv, "pip", "install", "--python", str(py), str(wheel)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return tmp


def _run(tmp: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{tmp / 'venv' / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp),
        "TBMM_CACHE": str(tmp / "cache"),
    }
    work = tmp / "elsewhere"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        list(args), cwd=work, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_tasks_list_from_any_directory(installed: Path, suite: list[Task]) -> None:
    r = _run(installed, "tbmm", "tasks", "list", "--json")
    assert r.returncode == 0, r.stderr
    assert [x["slug"] for x in json.loads(r.stdout)] == [t.slug for t in suite]


def test_verify_with_the_bundled_lean_runtime(installed: Path, suite: list[Task]) -> None:
    t = next(x for x in suite if x.slug == "mcm-2025-b-juneau-tourism")
    art = installed / "elsewhere" / "a.json"
    art.parent.mkdir(exist_ok=True)
    art.write_bytes(t.anchor_artifact_bytes())
    r = _run(installed, "tbmm", "verify", str(art), "--task", t.slug, "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads(r.stdout)
    assert rep["lean"] == "ok" and rep["o_eval_exact"] == "1"
    # the Lean build went to the user's cache, not into site-packages
    assert any((installed / "cache" / "lean-build").iterdir())


def test_score_and_gate_from_the_wheel(installed: Path, suite: list[Task]) -> None:
    """The short command lines (lite mode) from an installed wheel: the first call validates
    and stores the task files under $HOME/.cache/tbmm/compiled, the second reads them."""
    t = next(x for x in suite if x.slug == "mcm-2025-b-juneau-tourism")
    art = installed / "elsewhere" / "s.json"
    art.parent.mkdir(exist_ok=True)
    art.write_bytes(t.anchor_artifact_bytes())
    for _ in range(2):
        r = _run(installed, "tbmm", "score", str(art), "--task", t.slug, "--json")
        assert r.returncode == 0, r.stderr[-2000:]
        assert json.loads(r.stdout)["o_eval_exact"] == "1"
    assert any((installed / ".cache" / "tbmm" / "compiled").glob("*.json"))
    r = _run(installed, "tbmm", "gate", str(art), "--task", t.slug)
    assert r.returncode == 0 and f"gate PASS for {t.slug}" in r.stdout, r.stdout + r.stderr


def test_plain_install_has_no_agpl_or_plotting_code(installed: Path) -> None:
    probe = (
        "import importlib.util, json, sys, tbmm; "
        "t = tbmm.load_task('mcm-2025-b-juneau-tourism'); "
        "v = tbmm.verify(t, t.anchor_artifact_bytes()); "
        "print(json.dumps([v.o_eval, [m for m in ('pymupdf', 'fitz', 'matplotlib', 'docker', 'fastapi') "
        "if importlib.util.find_spec(m) is not None]]))"
    )
    r = _run(installed, "python", "-c", probe)
    assert r.returncode == 0, r.stderr
    o_eval, present = json.loads(r.stdout)
    assert o_eval == 1.0 and present == []


def test_extras_say_what_to_install(installed: Path) -> None:
    r = _run(installed, "tbmm", "serve", "--port", "1")
    assert r.returncode == 2 and "tbmm[serve]" in r.stderr


def test_view_says_what_to_install(installed: Path) -> None:
    """`tbmm view` without the serve extra (FastAPI, uvicorn, Jinja2): exit 2 and the hint;
    `tbmm runs export --schema` needs no extra."""
    r = _run(installed, "python", "-c", "from harness.runs.store import Store; Store('s.sqlite')")
    assert r.returncode == 0, r.stderr
    r = _run(installed, "tbmm", "view", "--db", "s.sqlite", "--port", "1")
    assert r.returncode == 2 and "tbmm[serve]" in r.stderr, r.stderr
    r = _run(installed, "tbmm", "runs", "export", "--schema")
    assert r.returncode == 0 and '"schema_version"' in r.stdout, r.stderr


def test_report_from_a_plain_install(installed: Path) -> None:
    """`tbmm report` needs no extra: its templates ship in the wheel (Jinja2 is a core
    dependency); without `tbmm[report]` the page names the extra for its CJK text."""
    r = _run(installed, "python", "-c", "from harness.runs.store import Store; Store('r.sqlite')")
    assert r.returncode == 0, r.stderr
    r = _run(installed, "tbmm", "report", "--html", "out/r.html", "--db", "r.sqlite")
    assert r.returncode == 0, r.stderr[-2000:]
    html = (installed / "elsewhere" / "out" / "r.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and '<h2 id="leaderboard">Leaderboard</h2>' in html
    probe = (
        "from tbmm.reports import fonts, report; from tbmm.reports.leaderboard import compute; "
        "lb = compute([], tasks=['t'], task_suites={'t': 'CUMCM'}); "
        "print(fonts.font_path(), 'tbmm[report]' in report.render_html(lb, [], {}, title='报告'))"
    )
    r = _run(installed, "python", "-c", probe)
    assert r.returncode == 0 and r.stdout.split() == ["None", "True"], r.stdout + r.stderr
