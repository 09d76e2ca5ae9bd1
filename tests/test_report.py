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

from tbmm.core.exact import fraction_to_text
from tbmm.reports import leaderboard as L
from tbmm.reports import leaderboard_render as R
from tbmm.reports.leaderboard import TrialRow, compute, suite_config, trial_row
from tbmm.reports.report import render_html, write_html
from tbmm.suite.tasks import Task
from tbmm.verdict.floor import baseline_f
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
    assert 'http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;' in text
    assert "<script" not in text.lower()
    assert '<img src="x"' not in text and "<b>1</b>" not in text
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in text
    assert "&lt;img src=&#34;x&#34; onerror=&#34;alert(1)&#34;&gt;" in text
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
    assert "Multi-BO against each task&#39;s stored baseline F (floor.json)" in text
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
    from tbmm.reports.report import CSP

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
    assert R.EMPTY_MESSAGE in text and "<img" not in text
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


# ------------------------------------------------- renders anywhere: CJK font, widths, plots

CJK_TITLE = "定日镜场优化设计报告"
HELIOSTAT = "cumcm-2023-a-heliostat-field"


@pytest.fixture(scope="module")
def bare_fonts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose fontconfig sees only matplotlib's DejaVu fonts: no CJK font, on
    this machine or any other, so a Chinese glyph on screen can only come from the page."""
    import matplotlib

    d = tmp_path_factory.mktemp("fontconfig")
    ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    (d / "fonts.conf").write_text(
        '<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">'
        f"<fontconfig><dir>{ttf}</dir><cachedir>{d / 'cache'}</cachedir>"
        '<include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>'
    )
    env = {**os.environ, "FONTCONFIG_FILE": str(d / "fonts.conf")}
    if shutil.which("fc-list"):
        mine = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True).stdout
        print(f"this machine's fontconfig: {len(mine.splitlines())} font(s) for :lang=zh")
        seen = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, env=env)
        assert seen.stdout.strip() == "", seen.stdout  # the test's Chromium sees none
        assert (
            "DejaVu" in subprocess.run(["fc-list"], capture_output=True, text=True, env=env).stdout
        )
    return env


def _cdp(chromium: str, tmp: Path, env: dict[str, str]) -> Any:
    from .cdp import Chromium

    return Chromium(chromium, tmp / f"cdp-{len(list(tmp.glob('cdp-*')))}", env=env)


def _first_line_glyphs(png: Path) -> tuple[int, int, int]:
    """(ink segments, distinct bitmaps, hollow boxes) on the page's first line of text (the
    h1). The title has no character drawn as an empty box (no 口), so a box is tofu."""
    import numpy as np

    ink = mpimg.imread(png)[:120, :, :3].mean(axis=2) < 0.5
    rows = np.flatnonzero(ink.any(axis=1))
    assert rows.size, "no text on the screenshot"
    top = end = rows[0]
    while end + 1 < ink.shape[0] and ink[end + 1].any():
        end += 1
    line = ink[top : end + 1]
    cols = line.any(axis=0)
    segs, x = [], 0
    while x < cols.size:
        if cols[x]:
            x0 = x
            while x < cols.size and cols[x]:
                x += 1
            segs.append(line[:, x0:x])
        x += 1
    # a missing glyph is drawn as a hollow box: inked outline, nothing inside
    tofu = sum(
        1
        for g in segs
        if g.shape[1] >= 6 and not g[3:-3, 3:-3].any() and g[0].mean() > 0.6 and g[-1].mean() > 0.6
    )
    return len(segs), len({(g.shape, g.tobytes()) for g in segs}), tofu


def _one_task_report(suite: list[Task], out: Path) -> tuple[Path, str]:
    lb, rows, tasks = _lb_rows(suite)
    page = write_html(lb, rows, tasks, out, title=CJK_TITLE)
    return page, page.read_text(encoding="utf-8")


def test_embedded_font_covers_every_cjk_character(suite: list[Task], tmp_path: Path) -> None:
    """The page's @font-face is a Noto Sans SC subset with a glyph for each CJK character on
    the page (and only those), its license in the page; same input, same bytes."""
    import io

    from fontTools.pens.boundsPen import BoundsPen
    from fontTools.ttLib import TTFont

    from tbmm.reports import fonts

    page, text = _one_task_report(suite, tmp_path / "r.html")
    body = re.sub(r"<style>.*?</style>", "", text, flags=re.S)
    chars = fonts.cjk_chars(body)
    assert set(CJK_TITLE) <= set(chars)
    heliostat = next(x for x in suite if x.slug == HELIOSTAT)
    assert set(fonts.cjk_chars(heliostat.manifest.provenance.paper_title)) <= set(chars)
    (b64,) = re.findall(r"url\(data:font/woff;base64,([A-Za-z0-9+/=]+)\)", text)
    font = TTFont(io.BytesIO(base64.b64decode(b64)))
    cmap = font.getBestCmap()
    assert {chr(c) for c in cmap if fonts.is_cjk(chr(c))} == set(chars)
    glyphs = font.getGlyphSet()
    for c in chars:  # a real outline, not an empty glyph
        pen = BoundsPen(glyphs)
        glyphs[cmap[ord(c)]].draw(pen)
        assert pen.bounds is not None, c
    names = {r.nameID: r.toUnicode() for r in font["name"].names}
    assert "Open Font License" in names[13] and "Adobe" in names[0]
    assert "SIL OPEN FONT LICENSE Version 1.1" in text  # the license travels with the page
    assert f"{len(chars)} glyphs embedded" in text
    assert text == render_html(*_lb_rows(suite), title=CJK_TITLE, base=page.parent.resolve())


def _lb_rows(suite: list[Task]) -> tuple[Any, list[TrialRow], list[Task]]:
    t = next(x for x in suite if x.slug == HELIOSTAT)
    rep = verify_artifact(t, t.anchor_artifact_bytes(), lean=False).model_dump()
    r = trial_row(
        entry="oracle|o|default",
        agent="oracle",
        model="o",
        task=t.slug,
        suite=t.suite,
        seed=0,
        report=rep,
        cost_usd=0.0,
        literature_split=False,
    )
    return compute([r], **suite_config([t])), [r], [t]


def test_without_the_font_the_page_says_so(suite: list[Task], monkeypatch: Any) -> None:
    from tbmm.reports import fonts

    monkeypatch.setattr(fonts, "font_path", lambda: None)
    text = render_html(*_lb_rows(suite), title=CJK_TITLE)
    assert "@font-face" not in text
    assert "install &#34;tbmm[report]&#34; to embed Noto Sans SC" in text
    monkeypatch.setenv(fonts.ENV, "/nonexistent/font.otf")
    monkeypatch.undo()
    monkeypatch.setenv(fonts.ENV, "/nonexistent/font.otf")
    with pytest.raises(fonts.FontError, match="no such font file"):
        fonts.font_path()


def test_cjk_renders_in_chromium_without_system_cjk_fonts(
    suite: list[Task], chromium: str, bare_fonts: dict[str, str], tmp_path: Path
) -> None:
    """Screenshots under a fontconfig with no CJK font: the report's Chinese title is drawn
    as distinct glyphs; the same page with its @font-face removed shows tofu (one shape)."""
    page, text = _one_task_report(suite, tmp_path / "r.html")
    stripped = tmp_path / "stripped.html"
    stripped.write_text(re.sub(r"@font-face\{[^}]*\}", "", text), encoding="utf-8")
    got = {}
    for name, p in (("embedded", page), ("stripped", stripped)):
        c = _cdp(chromium, tmp_path, bare_fonts)
        try:
            c.open(p.resolve().as_uri(), 1400, 400)
            assert c.evaluate("document.fonts.ready.then(() => document.fonts.size)") >= 0
            got[name] = _first_line_glyphs(c.screenshot(tmp_path / f"{name}.png"))
        finally:
            c.close()
    print(f"(ink segments, distinct bitmaps, tofu boxes) of the h1: {got}")
    segs, shapes, tofu = got["embedded"]
    assert segs >= len(CJK_TITLE) and shapes >= len(CJK_TITLE) - 1 and tofu == 0, got
    segs0, _, tofu0 = got["stripped"]
    assert segs0 == tofu0 == len(CJK_TITLE), got  # control: every character tofu without it


PROBE = """(() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  return document.fonts.ready.then(() => {
    const w = document.documentElement.clientWidth;
    const out = [];
    for (const el of document.querySelectorAll('body *')) {
      const r = el.getBoundingClientRect();
      if (r.right > w + 0.5 && !el.closest('.tw'))
        out.push(el.tagName + ' ' + Math.round(r.right) + ' ' + (el.textContent || '').slice(0, 60));
    }
    const boxes = [...document.querySelectorAll('.tw')];
    const paths = [...document.querySelectorAll('td.path')].map(e => e.getBoundingClientRect().width);
    return {scroll: document.scrollingElement.scrollWidth, inner: innerWidth, client: w,
            outside: out.slice(0, 10), n_outside: out.length, boxes: boxes.length,
            boxes_scrolling: boxes.filter(e => e.scrollWidth > e.clientWidth + 1).length,
            path_cells: paths.length, narrowest_path: paths.length ? Math.min(...paths) : null};
  });
})()"""


def _measure(chromium: str, tmp: Path, env: dict[str, str], url: str, width: int) -> Any:
    c = _cdp(chromium, tmp, env)
    try:
        c.open(url, width, 900)
        return c.evaluate(PROBE)
    finally:
        c.close()


@pytest.mark.slow
def test_layout_fits_1400_px_and_a_phone(
    data: Any, chromium: str, bare_fonts: dict[str, str], tmp_path: Path
) -> None:
    """Every trial opened: no horizontal page scroll at 1400 px nor at 390 px (a phone, with
    mobile viewport emulation); at 1400 px no table needs its own scroll box and path cells
    keep a readable width. Control: a page wider than the viewport is caught."""
    lb, rows, suite = data
    url = write_html(lb, rows, suite, tmp_path / "report.html").resolve().as_uri()
    wide = tmp_path / "wide.html"
    wide.write_text(
        '<!DOCTYPE html><meta name="viewport" content="width=device-width">'
        '<div style="width:1800px">x</div>'
    )
    for width in (1400, 390):
        m = _measure(chromium, tmp_path, bare_fonts, url, width)
        print(width, m)
        assert m["inner"] == width and m["client"] == width, m
        assert m["scroll"] <= width and m["n_outside"] == 0, m
        assert m["path_cells"] > 0 and m["boxes"] > 0
        if width == 1400:
            assert m["boxes_scrolling"] == 0, m
            assert m["narrowest_path"] >= 100, m  # not squeezed to a few letters
        ctl = _measure(chromium, tmp_path, bare_fonts, wide.resolve().as_uri(), width)
        assert ctl["scroll"] > width and ctl["n_outside"] > 0, ctl


def test_plots_draw_cjk_entry_names(monkeypatch: Any) -> None:
    """A Chinese entry name is drawn with the CJK font (matplotlib warns of any glyph it
    lacks); control: without the font the same plot warns."""
    import warnings

    from tbmm.reports import fonts, plots

    r = trial_row(
        entry="a|b|c",
        agent="a",
        model="b",
        task="t",
        suite="CUMCM",
        seed=0,
        report={"status": "scored", "o_eval_exact": "0", "robust_bo_eval_exact": "-1"},
        cost_usd=0.0,
        literature_split=False,
    )
    lb = compute([r], tasks=["t"], task_suites={"t": "CUMCM"}, names={"a|b|c": "模型丙"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for p in plots.figures(lb):
            assert plots.png_bytes(p.figure)[:4] == b"\x89PNG"
    monkeypatch.setattr(fonts, "matplotlib_family", lambda: None)
    with pytest.warns(UserWarning, match="missing from font"):
        for p in plots.figures(lb):
            plots.png_bytes(p.figure)
