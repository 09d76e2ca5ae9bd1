"""The HTML report: self-contained, escaped, and rendered by headless Chromium.

Chromium (Debian package `chromium`) loads the page from a file URL with the network
disabled; the page has no script, so any console message (a CSP violation, a blocked
resource, an error) fails the test. It is skipped only when Chromium is absent and
cannot be installed.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import pytest

from tbmm import leaderboard as L
from tbmm.exact import fraction_to_text
from tbmm.floor import baseline_f
from tbmm.leaderboard import TrialRow, compute, suite_config, trial_row
from tbmm.report import render_html, write_html
from tbmm.tasks import Task
from tbmm.verify import verify_artifact

from .conftest import infeasible_dragon

EVIL = '<script>alert("x")</script>'
ORACLE = f"oracle|{EVIL}|default"
BASE = "flash|ds|default"
DRAGON = "cumcm-2024-a-dragon-dance"
JUNEAU = "mcm-2025-b-juneau-tourism"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="session")
def chromium() -> str:
    exe = _find_chromium()
    if exe is None and shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
            subprocess.run(cmd, env=env, capture_output=True, timeout=900, check=False)
        exe = _find_chromium()
    if exe is None:
        reason = "chromium is not installed and could not be installed (apt-get as root failed or unavailable)"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    return exe


def run_chromium(exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run(
        [exe, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def console_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


def _poison(rep: dict[str, Any]) -> dict[str, Any]:
    """A real report with markup injected where artifact-derived text goes."""
    rep = {**rep, "score": {**rep["score"]}, "gate_report": {**rep["gate_report"]}}
    ms = [dict(m) for m in rep["score"]["metrics"]]
    ms[0]["reason"] = '<img src="x" onerror="alert(1)">'
    ms[0]["value"] = "<b>1</b>"
    rep["score"]["metrics"] = ms
    rep["gate_report"]["warnings"] = ["</details><script>alert(2)</script>"]
    rep["schema_issues"] = ['q.x: <a href="http://evil.example">expected number</a>']
    return rep


@pytest.fixture(scope="module")
def data(suite: list[Task]) -> tuple[L.Leaderboard, list[TrialRow], list[Task]]:
    """Oracle (anchors; Lean run for two tasks) over 2 seeds; a baseline with gaps and poison."""
    rows: list[TrialRow] = []
    for t in suite:
        lean = t.slug in (DRAGON, JUNEAU)
        # the dragon's oracle row carries the source release's infeasible values (a gate- and
        # kernel-rejected artifact for the drill-down); every other row is the task's anchor
        art = infeasible_dragon(t) if t.slug == DRAGON else t.anchor_artifact_bytes()
        rep = verify_artifact(t, art, lean=lean).model_dump()
        kw = dict(task=t.slug, suite=t.suite, literature_split=t.panel.literature_split)
        for s in (0, 1):
            rows.append(
                trial_row(
                    entry=ORACLE, agent="oracle", model=EVIL, seed=s, report=rep, cost_usd=0.0, **kw
                )
            )
        if t.slug == JUNEAU:
            rows.append(
                trial_row(
                    entry=BASE,
                    agent="flash",
                    model="ds",
                    seed=0,
                    report=_poison(rep),
                    cost_usd=0.01,
                    **kw,
                )
            )
        elif t.suite == "CUMCM":
            rows.append(
                trial_row(
                    entry=BASE, agent="flash", model="ds", seed=0, report=None, cost_usd=0.01, **kw
                )
            )
    lb = compute(rows, **suite_config(suite))
    return lb, rows, suite


@pytest.mark.slow
def test_html_is_self_contained_and_escaped(data: Any, tmp_path: Path) -> None:
    lb, rows, suite = data
    out = write_html(lb, rows, suite, tmp_path / "r" / "report.html")
    text = out.read_text(encoding="utf-8")
    assert text == render_html(lb, rows, suite)  # deterministic: no timestamp
    assert text.startswith("<!DOCTYPE html>")
    assert 'http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;' in text
    assert "<script" not in text.lower()
    assert '<img src="x"' not in text and "<b>1</b>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    assert "&lt;img src=&quot;x&quot; onerror=&quot;alert(1)&quot;&gt;" in text
    refs = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert refs and all(r.startswith(("data:image/png;base64,", "#")) for r in refs), refs
    imgs = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert len(imgs) == 3
    assert all(base64.b64decode(b)[:8] == b"\x89PNG\r\n\x1a\n" for b in imgs)
    # drill-down content: provenance, infeasible anchor evidence, metrics, gate, Lean
    assert 'id="task-cumcm-2024-a-dragon-dance"' in text
    assert "head_speed_limit" in text
    dragon = next(t for t in suite if t.slug == DRAGON)
    assert dragon.manifest.provenance.anchor_sha256 in text
    d_row = next(r for r in rows if r.task == DRAGON and r.entry == ORACLE)
    assert d_row.lean == "fail" and d_row.report["lean_detail"]["obligations"] > 0
    n = d_row.report["lean_detail"]["obligations"]
    assert f"{n} obligation(s) checked by the Lean kernel, 3 failing" in text
    assert "check_head_speed_limit (q5.max_head_speed_mps): the kernel proved" in text
    assert "literature split" in text and "mcm-2024-c-tennis-momentum" in text
    assert "Multi-BO against each task&#x27;s stored baseline F (floor.json)" in text
    juneau = next(t for t in suite if t.slug == JUNEAU)
    assert f"Baseline F = {fraction_to_text(baseline_f(juneau))} (floor.json" in text


@pytest.mark.slow
def test_html_in_chromium(data: Any, chromium: str, tmp_path: Path) -> None:
    lb, rows, suite = data
    page = write_html(lb, rows, suite, tmp_path / "report.html")
    url = page.resolve().as_uri()

    dom = run_chromium(chromium, tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert '<h2 id="leaderboard">Leaderboard</h2>' in html
    assert html.count("<img ") == 3
    assert "<script" not in html.lower()  # nothing injected became an element
    assert '&lt;script&gt;alert("x")&lt;/script&gt;' in html
    for t in lb.tasks:
        assert f'id="task-{t}"' in html
    assert "no_trial" in html and "missing_artifact" in html and "gate_failed" in html
    assert console_lines(dom.stderr) == [], console_lines(dom.stderr)

    shot = tmp_path / "shot.png"
    res = run_chromium(
        chromium,
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        "--hide-scrollbars",
        url,
    )
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
    img = mpimg.imread(shot)
    assert img.shape[:2] == (2000, 1280)
    rgb = img[..., :3]
    non_white = (rgb < 0.95).any(axis=-1).mean()
    assert rgb.std() > 0.05 and non_white > 0.05, (rgb.std(), non_white)
    assert console_lines(res.stderr) == []


@pytest.mark.slow
def test_console_check_catches_a_blocked_resource(chromium: str, tmp_path: Path) -> None:
    """Control: the console check is not vacuous (an external image under our CSP logs)."""
    from tbmm.report import CSP

    p = tmp_path / "bad.html"
    p.write_text(
        f'<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '</head><body><img src="http://example.invalid/x.png"></body></html>'
    )
    res = run_chromium(chromium, tmp_path, "--dump-dom", p.resolve().as_uri())
    assert any("Content Security Policy" in ln for ln in console_lines(res.stderr))


def test_empty_and_missing_baseline_pages(suite: list[Task], tmp_path: Path) -> None:
    cfg = suite_config(suite)
    empty = compute([], **cfg)
    text = write_html(empty, [], None, tmp_path / "e.html").read_text(encoding="utf-8")
    assert L.EMPTY_MESSAGE in text and "<img" not in text
    t = suite[0]
    r = trial_row(
        entry="a|b|c",
        agent="a",
        model="b",
        task=t.slug,
        suite=t.suite,
        seed=0,
        report=None,
        cost_usd=None,
        literature_split=False,
        error="agent <crashed>",
    )
    lb = compute([r, replace(r, seed=1)], **{**cfg, "baseline_f": None})
    text = render_html(lb, [r, replace(r, seed=1)], {t.slug: t})
    assert "Multi-BO n/a: no baseline F was given" in text
    assert "agent &lt;crashed&gt;" in text
    assert "No task information" in text  # tasks absent from tasks_info are said so
