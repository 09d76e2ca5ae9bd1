"""fetch-assets: offline it names what is missing; a download is checked before it lands."""

from __future__ import annotations

import shutil
import urllib.error
from pathlib import Path

import pytest

from tbmm.suite.tasks import Task, load_task
from tbmm.tooling import fetch


def _copy(t: Task, tmp_path: Path) -> Task:
    dst = tmp_path / t.suite / t.slug
    shutil.copytree(t.dir, dst)
    return load_task(dst)


def test_offline_says_which_are_missing(
    suite: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(url: str, timeout: float) -> bytes:
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(fetch, "_download", offline)
    t = _copy(next(t for t in suite if t.slug == "mcm-2025-c-olympic-medals"), tmp_path)
    res = fetch.fetch_task(t, timeout=1)
    assert [r.status for r in res] == ["missing", "missing"]
    assert all("download failed" in r.detail and "upstream" in r.detail for r in res)
    assert {Path(r.path).name for r in res} == {"2025_MCM_Problem_C.pdf", "summerOly_athletes.csv"}


def test_download_is_type_checked_and_atomic(
    suite: list[Task], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "_download", lambda url, timeout: b"<html>an error page</html>")
    veg = _copy(next(t for t in suite if t.slug == "cumcm-2023-c-vegetable-pricing"), tmp_path)
    res = fetch.fetch_task(veg)  # the xlsx is a member of a zip: the page is not a zip
    assert res[0].status == "missing" and "BadZipFile" in res[0].detail
    assert not (veg.dir / "environment/data/attachments/附件2.xlsx").exists()
    oly = _copy(next(t for t in suite if t.slug == "mcm-2025-c-olympic-medals"), tmp_path)
    pdf = next(r for r in fetch.fetch_task(oly) if r.path.endswith(".pdf"))
    assert pdf.status == "missing" and "expected type" in pdf.detail
    assert not (oly.dir / pdf.path).exists()  # nothing half-written
