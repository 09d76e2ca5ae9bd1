"""Validate trajectories with Harbor's own ATIF models (pydantic), in a subprocess.

Harbor needs Python >= 3.12 and the project runs on 3.11, so Harbor lives in its own venv
(`~/.cache/tbmm/harbor-venv-<version>`, or $TBMM_HARBOR_VENV), built once with uv from
PyPI; the one .ci/run installs ($TBMM_HARBOR_PYTHON) serves when it holds this version. A file
lock makes concurrent test processes (pytest-xdist workers) wait for one build. Validation = `harbor.models.trajectories.Trajectory.model_validate_json` of each file,
plus a round trip through Harbor's own JSON export (what its viewers read).
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

from tests.ci import absent

HARBOR_VERSION = "0.26.0"

VALIDATE = """
import json, sys
from harbor.models.trajectories import Trajectory
out = {}
for path in sys.argv[1:]:
    try:
        t = Trajectory.model_validate_json(open(path, encoding="utf-8").read())
        again = Trajectory.model_validate(t.to_json_dict())
        out[path] = {"ok": True, "steps": len(again.steps), "version": t.schema_version}
    except Exception as exc:
        out[path] = {"ok": False, "error": str(exc)[:3000]}
print(json.dumps(out))
"""


def _python312() -> str | None:
    """A working 3.12 interpreter (a pyenv shim may exist and still refuse to run)."""
    cands = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")))
    cands.append(shutil.which("python3.12"))
    uv = shutil.which("uv")
    if uv:
        proc = subprocess.run(
            [uv, "python", "find", "--no-python-downloads", "3.12"], capture_output=True, text=True
        )
        if proc.returncode == 0:
            cands.append(proc.stdout.strip())
    for c in cands:
        if not c or not Path(c).exists():
            continue
        probe = subprocess.run(
            [c, "-c", "import sys; print(sys.version_info[:2] == (3, 12))"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            return c
    return None


@cache
def harbor_python() -> str:
    """A Python with harbor==HARBOR_VERSION installed (built once); skips, saying why, when
    no 3.12 interpreter or no PyPI is available."""
    venv = Path(
        os.environ.get("TBMM_HARBOR_VENV")
        or Path.home() / ".cache" / "tbmm" / f"harbor-venv-{HARBOR_VERSION}"
    )
    given = os.environ.get("TBMM_HARBOR_PYTHON")
    if given and _has_harbor(given):
        return given
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(venv)


def _has_harbor(python: str) -> bool:
    """`python` runs and has harbor==HARBOR_VERSION."""
    probe = "import importlib.metadata as m; print(m.version('harbor'))"
    try:
        r = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and r.stdout.strip() == HARBOR_VERSION


def _build(venv: Path) -> str:
    """The venv's python, built unless a previous build finished (the caller holds the lock)."""
    py = venv / "bin" / "python"
    ok = venv / ".tbmm-ready"
    if ok.is_file() and py.exists():
        return str(py)
    base = _python312()
    uv = shutil.which("uv")
    if base is None or uv is None:
        why = "no Python 3.12 interpreter" if base is None else "uv is not installed"
        absent(f"{why}: Harbor's models cannot be installed")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([uv, "venv", "-q", "--python", base, str(venv)], check=True)
    proc = subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(py), f"harbor=={HARBOR_VERSION}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        absent(f"harbor=={HARBOR_VERSION} could not be installed: {proc.stderr[-500:]}")
    ok.write_text(HARBOR_VERSION)
    return str(py)


def validate(paths: list[Path]) -> dict[str, dict]:
    proc = subprocess.run(
        [harbor_python(), "-c", VALIDATE, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def assert_valid_atif(paths: list[Path]) -> None:
    """Every file parses as Harbor's Trajectory (and survives its own export)."""
    got = validate(paths)
    bad = {p: r["error"] for p, r in got.items() if not r["ok"]}
    assert not bad, bad
