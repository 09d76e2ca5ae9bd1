"""Modules the other tests reach only by path, as a script or in a subprocess (`python -m`,
a Lean launch, `harbor run`), exercised here in-process so that the fast tier imports them
too (tests/test_fast_tier.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.harbor import run as harbor_run
from tbmm.core import bounds
from tbmm.lean import launch
from tbmm.suite.tasks import Task
from tbmm.tooling import bounds_bench


def test_lean_launch_without_a_library_prints_its_usage() -> None:
    """launch.py is run by path (never imported by tbmm): with no library it exits 2."""
    r = subprocess.run(
        [sys.executable, launch.__file__], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 2 and "usage: launch.py" in r.stderr
    assert launch.main([]) == 2


def test_bounds_bench_artifacts_reach_the_caps_without_passing_them(suite: list[Task]) -> None:
    """What `python -m tbmm.tooling.bounds_bench` times is the largest input the caps admit: both
    artifacts pass the bounds check, and the padded one fills the byte cap."""
    t = min(suite, key=lambda t: len(t.anchor_artifact_bytes()))
    caps = t.caps
    fat = bounds_bench.worst_bytes(t)
    bounds.check(fat, caps)
    assert caps.max_bytes - len(fat) < 200, (len(fat), caps.max_bytes)
    long = bounds_bench.worst_lists(t)
    bounds.check(long, caps)
    with pytest.raises(bounds.BoundsError):  # one more byte of padding is refused
        bounds.check(fat[:-2] + b" " * (caps.max_bytes - len(fat) + 1) + fat[-2:], caps)


def test_harbor_run_needs_harbor(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`tbmm run --backend harbor` without Harbor is HarborUnavailable (an error, not a
    score); its command line carries the model only when one is given."""
    monkeypatch.setenv(harbor_run.HARBOR_ENV_VAR, str(tmp_path / "no-harbor"))
    with pytest.raises(harbor_run.HarborUnavailable):
        harbor_run.harbor_executable()
    kw = dict(dataset=tmp_path, agent="oracle", env="docker", attempts=1, concurrency=2,
              jobs_dir=tmp_path / "jobs", job_name="j")  # fmt: skip
    cmd = harbor_run.harbor_command("harbor", model=None, **kw)  # type: ignore[arg-type]
    assert cmd[:2] == ["harbor", "run"] and "-m" not in cmd and cmd[cmd.index("-n") + 1] == "2"
    cmd = harbor_run.harbor_command("harbor", model="m/x", **kw)  # type: ignore[arg-type]
    assert cmd[-2:] == ["-m", "m/x"]


def test_python_m_tbmm_cli_is_the_tbmm_command() -> None:
    """`python -m tbmm.cli` (tbmm/cli/__main__.py) runs the console entry: `--version`."""
    import tbmm

    r = subprocess.run(
        [sys.executable, "-m", "tbmm.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and tbmm.__version__ in r.stdout, (r.stdout, r.stderr)
