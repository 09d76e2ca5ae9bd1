"""`tbmm view`: pages over a small store (TestClient), hostile strings inert, and a headless
Chromium screenshot of the served viewer checked for content."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from harness.runs.store import Store
from tests.ci import absent
from tests.conftest import DRAGON_SLUG
from tests.runs_store import ENTRY_A, ENTRY_B, FIGURE, HOSTILE, HOSTILE_IMG, PD_SLUG, build_store


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tbmm.suite.tasks import load_suite

    path = tmp_path_factory.mktemp("viewer") / "tbmm.sqlite"
    build_store(path, {t.slug: t for t in load_suite()})
    return path


@pytest.fixture(scope="module")
def client(db: Path) -> Any:
    from fastapi.testclient import TestClient

    from tbmm.reports.viewer import create_app

    return TestClient(create_app(db), base_url="http://127.0.0.1")


def _trials(db: Path) -> dict[tuple[str, str, int], int]:
    s = Store(db)
    try:
        return {(t["entry_id"], t["task"], t["seed"]): t["id"] for t in s.trials()}
    finally:
        s.close()


def _inert(html: str) -> None:
    """No hostile markup survives: no script or event-handler attribute anywhere, no
    external URL; the hostile text is there, escaped."""
    low = html.lower()
    assert "<script" not in low
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", low)
    assert not re.search(r"(src|href)\s*=\s*\"?(https?:)?//", low)
    assert "http://" not in low and "https://" not in low


def test_entries_page_lists_the_leaderboard_and_entries(client: Any) -> None:
    r = client.get("/")
    assert r.status_code == 200
    html = r.text
    _inert(html)
    assert "Leaderboard" in html and "Entries" in html
    for eid in (ENTRY_A, ENTRY_B):
        assert f"/entry?id={eid.replace('@', '%40').replace('#', '%23')}" in html
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in html  # the display name
    assert "partial" in html  # entry A has an infrastructure error
    assert "default-src 'none'" in r.headers["content-security-policy"]


@pytest.mark.slow
def test_entry_page_lists_every_trial_with_its_status(client: Any, db: Path) -> None:
    r = client.get("/entry", params={"id": ENTRY_A})
    assert r.status_code == 200
    html = r.text
    _inert(html)
    for status in ("scored", "gate_failed", "missing_artifact", "infra_error"):
        assert f'<span class="badge {status}">{status}</span>' in html
    for (eid, _, _), tid in _trials(db).items():
        assert (f'href="/trial/{tid}"' in html) == (eid == ENTRY_A)
    assert "endpoint_unreachable: connection refused" in html
    assert client.get("/entry", params={"id": "nobody"}).status_code == 404


@pytest.mark.slow
def test_scored_trial_page_shows_the_verdict(client: Any, db: Path) -> None:
    from tbmm.suite.tasks import find_task

    tid = _trials(db)[(ENTRY_A, PD_SLUG, 0)]
    r = client.get(f"/trial/{tid}")
    assert r.status_code == 200
    html = r.text
    _inert(html)
    verdict = json.loads(Store(db).trial(tid)["verdict"])
    task = find_task(PD_SLUG)
    # per-metric rewards, with each metric's reference source (provenance)
    for m in verdict["score"]["metrics"]:
        assert f"<td>{m['id']}</td>" in html
    ref = next(m.spec.reference for m in task.metrics if m.spec.reference is not None)
    assert ref.source.split("(")[0].strip()[:40].replace("'", "&#39;") in html
    # every gate check instance with its values
    for c in verdict["gate_report"]["checks"]:
        assert f"<td>{c['instance']}</td>" in html
    # every replayed value with Lean's scope
    assert verdict["replay"]["values"] and verdict["lean_scope"]
    from tbmm.reports.viewer import wrap_path

    for path, value in verdict["replay"]["values"].items():
        scope = verdict["lean_scope"][path]["by"]
        cell = f'<td class="path"><code>{wrap_path(path)}</code></td><td class="n">{value}</td>'
        assert f'{cell}<td><span class="badge {scope}">{scope}</span>' in html
    assert task.manifest.provenance.paper_id in html
    # the trajectory, step by step, with the hostile command and output escaped
    steps = json.loads(
        (Store(db).runs_dir / Store(db).trial(tid)["blob_dir"] / "trajectory.json").read_text()
    )["steps"]
    assert f"{len(steps)} step(s)" in html
    assert "sandbox_command" in html
    assert "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;" in html
    # the files: the figure inline, text previews escaped
    assert f'<img src="/trial/{tid}/file/figure.png"' in html
    assert "&lt;html&gt;&lt;body&gt;&lt;script&gt;" in html


@pytest.mark.slow
def test_other_trial_pages(client: Any, db: Path) -> None:
    ids = _trials(db)
    html = client.get(f"/trial/{ids[(ENTRY_A, DRAGON_SLUG, 0)]}").text
    _inert(html)
    assert '<span class="badge gate_failed">gate_failed</span>' in html
    assert '<span class="badge fail">fail</span>' in html  # the failing check instance
    assert "head_speed_limit" in html
    html = client.get(f"/trial/{ids[(ENTRY_A, DRAGON_SLUG, 1)]}").text
    _inert(html)
    assert "missing_artifact" in html and "timeout" in html
    html = client.get(f"/trial/{ids[(ENTRY_A, PD_SLUG, 1)]}").text
    _inert(html)
    assert "No score: an infrastructure error" in html
    assert "endpoint_unreachable: connection refused" in html
    assert client.get("/trial/999999").status_code == 404
    assert client.get("/trial/abc").status_code == 422


@pytest.mark.slow
def test_files_are_served_inert(client: Any, db: Path) -> None:
    tid = _trials(db)[(ENTRY_A, PD_SLUG, 0)]
    r = client.get(f"/trial/{tid}/file/figure.png")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.content == FIGURE
    r = client.get(f"/trial/{tid}/file/page.html")  # the agent's HTML is shown as text
    assert r.headers["content-type"].startswith("text/plain")
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in r.headers["content-security-policy"]
    assert HOSTILE in r.text
    for bad in ("..%2Ftbmm.sqlite", "%2E%2E", "nothing.txt", "..%2F..%2F..%2Ftbmm.sqlite"):
        assert client.get(f"/trial/{tid}/file/{bad}").status_code == 404


@pytest.mark.slow
def test_only_local_host_names_are_answered(db: Path) -> None:
    """A DNS-rebinding page (Host: attacker's name) gets nothing."""
    from fastapi.testclient import TestClient

    from tbmm.reports.viewer import create_app

    c = TestClient(create_app(db), base_url="http://evil.example")
    assert c.get("/").status_code == 400
    assert HOSTILE_IMG not in c.get(f"/trial/{min(_trials(db).values())}").text
    named = create_app(db, hosts=["viewer.lan"])  # `tbmm view --allow-host viewer.lan`
    assert TestClient(named, base_url="http://viewer.lan").get("/").status_code == 200
    assert TestClient(named, base_url="http://evil.example").get("/").status_code == 400


def test_viewer_has_no_docs_or_cdn(client: Any) -> None:
    assert client.get("/docs").status_code == 404
    assert client.get("/openapi.json").status_code == 404


def test_view_command_refuses_a_missing_store(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tbmm.cli.root import app

    r = CliRunner().invoke(app, ["view", "--db", str(tmp_path / "none.sqlite")])
    assert r.exit_code == 2 and "no results store" in r.output


# ------------------------------------------------------------------ headless Chromium


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _shot(chromium: str, url: str, out: Path, profile: Path) -> None:
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--screenshot={out}",
            "--window-size=1400,1000",
            url,
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )


def _content(png: Path) -> tuple[int, float]:
    """(distinct colours, share of non-white pixels) of a screenshot."""
    from matplotlib.image import imread

    img = imread(str(png))[:, :, :3]
    px = (img * 255).round().astype("uint8").reshape(-1, 3)
    distinct = len({tuple(p) for p in px[:: max(1, len(px) // 200_000)]})
    non_white = float((px.min(axis=1) < 245).mean())
    return distinct, non_white


def _chromium() -> str:
    chromium = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if chromium is None:
        absent("chromium is not installed (Debian package `chromium`)")
    return chromium


@contextlib.contextmanager
def _serving(db: Path) -> Iterator[str]:
    """The viewer over `db` on a free local port, for a real browser; yields its base URL."""
    import uvicorn

    from tbmm.reports.viewer import create_app

    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(db), host="127.0.0.1", port=port, log_level="warning")
    )
    th = threading.Thread(target=server.run, daemon=True)
    th.start()
    try:
        for _ in range(600):  # until it answers (a count of tries, not a time budget)
            if server.started:
                break
            time.sleep(0.1)
        assert server.started, "the viewer did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        th.join(timeout=60)


@pytest.mark.slow
def test_chromium_screenshots_show_populated_pages(db: Path, tmp_path: Path) -> None:
    chromium = _chromium()
    with _serving(db) as base:
        tid = _trials(db)[(ENTRY_A, PD_SLUG, 0)]
        shots = {}
        for name, path in (("entries", "/"), ("trial", f"/trial/{tid}")):
            out = tmp_path / f"{name}.png"
            _shot(chromium, f"{base}{path}", out, tmp_path / f"profile-{name}")
            shots[name] = _content(out)
        blank = tmp_path / "blank.png"
        _shot(chromium, "about:blank", blank, tmp_path / "profile-blank")
        assert _content(blank)[0] <= 2  # the check can fail: a blank page has one colour
    for name, (distinct, non_white) in shots.items():
        print(f"{name}: {distinct} distinct colours, {non_white:.1%} non-white")
        assert distinct >= 50, name  # text antialiasing, badges, the header bar
        assert non_white >= 0.03, name


def _dejavu_only(tmp: Path) -> dict[str, str]:
    """An environment whose fontconfig sees matplotlib's DejaVu fonts only: text widths
    as on any machine (tests/test_report.py's `bare_fonts` does the same)."""
    import os

    import matplotlib

    ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    conf = tmp / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">'
        f"<fontconfig><dir>{ttf}</dir><cachedir>{tmp / 'fc-cache'}</cachedir>"
        '<include ignore_missing="yes">/etc/fonts/conf.d</include></fontconfig>'
    )
    return {**os.environ, "FONTCONFIG_FILE": str(conf)}


@pytest.mark.slow
def test_viewer_pages_fit_1400_px_and_a_phone(db: Path, tmp_path: Path) -> None:
    """Every page of the viewer (entries, each entry, each trial with its details open)
    at 1400 px and at 390 px (a phone, mobile viewport emulation): no horizontal page
    scroll, nothing outside the viewport but inside a table's own scroll box (`.tw`),
    every table in such a box; at 1400 px no table needs its box (the metrics table, the
    widest, needs 1245 px of the 1300 the page gives it). Fonts: matplotlib's DejaVu and
    the viewer's own CJK font only, as on any machine. Control: the same probe catches a
    page wider than the viewport."""
    from tests.cdp import Chromium
    from tests.test_report import PROBE

    chromium = _chromium()
    ids = _trials(db)
    pages = ["/", *(f"/entry?id={quote(e)}" for e in (ENTRY_A, ENTRY_B))]
    pages += [f"/trial/{i}" for i in ids.values()]
    wide = tmp_path / "wide.html"
    wide.write_text(
        '<!DOCTYPE html><meta name="viewport" content="width=device-width">'
        '<div style="width:1800px">x</div>'
    )
    probe = PROBE.replace(
        "return {scroll:",
        "const loose = [...document.querySelectorAll('table')].filter(t => !t.closest('.tw'));"
        "\n    return {loose: loose.length, tables: document.querySelectorAll('table').length, scroll:",
    )
    with _serving(db) as base:
        for width in (1400, 390):
            c = Chromium(chromium, tmp_path / f"cdp-{width}", env=_dejavu_only(tmp_path))
            try:
                c.open("about:blank", width, 900)
                for page in pages:
                    c.navigate(base + page)
                    m = c.evaluate(probe)
                    print(width, page, {k: m[k] for k in ("scroll", "tables", "boxes",
                          "boxes_scrolling", "n_outside")})  # fmt: skip
                    assert m["inner"] == width and m["client"] == width, (page, m)
                    assert m["scroll"] <= width and m["n_outside"] == 0, (page, m)
                    assert m["loose"] == 0, (page, m)
                    if width == 1400:
                        assert m["boxes_scrolling"] == 0, (page, m)
                c.navigate(wide.resolve().as_uri())
                ctl = c.evaluate(probe)
                assert ctl["scroll"] > width and ctl["n_outside"] > 0, ctl
            finally:
                c.close()


@pytest.mark.slow
def test_html_report_points_to_the_viewer(db: Path) -> None:
    from tbmm.reports.report import render_html
    from tbmm.reports.results import leaderboard

    lb, rows, tasks = leaderboard(db)
    html = render_html(lb, rows, tasks)
    assert "<code>tbmm view --db DB</code>" in html
    assert "<code>tbmm runs export ENTRY --db DB</code>" in html


def test_readme_and_help_agree() -> None:
    """The README's commands name the options `--help` shows, with the same defaults."""
    import inspect

    from typer.testing import CliRunner

    from harness.cli.runs import runs_export
    from tbmm.cli.reports import view
    from tbmm.cli.root import app

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Viewing and sharing runs", 1)[1].split("\n## ", 1)[0]
    port = inspect.signature(view).parameters["port"].default
    host = inspect.signature(view).parameters["host"].default
    assert f"[--port {port}]" in section and f"[--host {host}]" in section
    assert f"http://{host}:{port}/" in section
    r = CliRunner().invoke(app, ["view", "--help"], terminal_width=200)
    assert r.exit_code == 0
    for opt in ("--db", "--host", "--port", "--allow-host"):
        assert opt in r.output and f"[{opt}" in section
    r = CliRunner().invoke(app, ["runs", "export", "--help"], terminal_width=200)
    assert "--schema" in r.output and "-o" in r.output and ".gz" in r.output
    assert "--schema" in section and "-o FILE.json.gz" in section
    assert inspect.signature(runs_export).parameters["output"].default is None
    assert "default `<entry>.json.gz`" in section


def test_trajectory_steps_render_images_and_survive_a_malformed_file(tmp_path: Path) -> None:
    """A hand-made ATIF with a message image the agent stored, hostile reasoning and tool
    arguments, and a malformed step: every step is shown, escaped; the image inline."""
    from fastapi.testclient import TestClient

    from tbmm.reports.viewer import create_app
    from tests.conftest import trial_record
    from tests.runs_store import png

    db = tmp_path / "t.sqlite"
    s = Store(db)
    s.ensure_entry("a@m", "a", "m", {})
    blob = s.scratch_dir()
    fig = png(8, 8, lambda x, y: (255, 0, 0))
    (blob / "plot.png").write_bytes(fig)
    doc = {
        "schema_version": "ATIF-v1.6",
        "session_id": "s",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {
                "step_id": 1,
                "source": "user",
                "message": [
                    {"type": "text", "text": f"look {HOSTILE}"},
                    {
                        "type": "image",
                        "source": {"media_type": "image/png", "path": "/root/results/plot.png"},
                    },
                    {
                        "type": "image",
                        "source": {"media_type": "image/png", "path": "/root/data/gone.png"},
                    },
                ],
            },
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "reasoning_content": HOSTILE_IMG,
                "tool_calls": [
                    {
                        "tool_call_id": "c1",
                        "function_name": "bash",
                        "arguments": {"cmd": "</pre><script>x()</script>"},
                    }
                ],
                "observation": {"results": [{"source_call_id": "c1", "content": HOSTILE}]},
                "metrics": {"prompt_tokens": 7},
            },
            "a bare string where a step should be",
            {"source": "system", "message": {"odd": ["shape"]}},
        ],
    }
    (blob / "trajectory.json").write_text(json.dumps(doc))
    s.commit(trial_record(entry_id="a@m", task=PD_SLUG, trajectory="trajectory.json"), blob)
    tid = s.trials()[0]["id"]
    s.close()
    html = TestClient(create_app(db), base_url="http://127.0.0.1").get(f"/trial/{tid}").text
    _inert(html)
    assert "4 step(s)" in html
    assert f'<img src="/trial/{tid}/file/plot.png" alt="/root/results/plot.png">' in html
    assert "image (not stored with the trial): <code>/root/data/gone.png</code>" in html
    assert "&lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;" in html
    assert "a bare string where a step should be" in html and "&#34;odd&#34;" in html
    assert "prompt_tokens 7" in html


def test_wrapped_paths_are_escaped_first() -> None:
    from tbmm.reports.viewer import wrap_path

    assert str(wrap_path("q2.cases[0]_x")) == "q2.<wbr>cases[0]<wbr>_<wbr>x"
    assert str(wrap_path("<script>a.b</script>")) == "&lt;script&gt;a.<wbr>b&lt;/<wbr>script&gt;"


@pytest.mark.slow
def test_entry_download_is_the_export_file(client: Any, db: Path, tmp_path: Path) -> None:
    """The entry page's download is byte for byte `tbmm runs export ENTRY -o X.json.gz`."""
    from typer.testing import CliRunner

    from tbmm.cli.root import app

    html = client.get("/entry", params={"id": ENTRY_A}).text
    assert 'href="/export?id=llm%40model-x%230badf00d"' in html
    r = client.get("/export", params={"id": ENTRY_A})
    assert r.status_code == 200 and r.headers["content-type"] == "application/gzip"
    assert "attachment" in r.headers["content-disposition"]
    out = tmp_path / "cli.json.gz"
    c = CliRunner().invoke(app, ["runs", "export", ENTRY_A, "--db", str(db), "-o", str(out)])
    assert c.exit_code == 0, c.output
    assert r.content == out.read_bytes()
    assert client.get("/export", params={"id": "nobody"}).status_code == 404


def test_pages_name_the_served_cjk_font(client: Any) -> None:
    """Every page's @font-face points at /font/cjk, which serves the CJK font (tbmm.reports.fonts);
    the CSP lets the page load fonts from the viewer only."""
    from tbmm.reports import fonts

    path = fonts.font_path()
    assert path is not None  # the dev environment has the `report` extra's font
    html = client.get("/").text
    assert '@font-face{font-family:"tbmm CJK";font-display:swap;src:url(/font/cjk);' in html
    r = client.get("/font/cjk")
    assert r.status_code == 200 and r.content == path.read_bytes()
    assert r.headers["content-type"] == fonts.font_media_type(path)
    assert "font-src 'self'" in client.get("/").headers["content-security-policy"]
