"""The agent's Python: one cached venv with the locked scientific stack, bound read-only
into every sandbox so that trials never install anything and all see the same versions.

The venv installs `tbmm.suite.stack`'s lock file (`uv pip install --require-hashes`), the same
file every task image installs, on the host's /usr/bin/python3.11 (the Docker images run
Python 3.11 too). Its default path carries the lock's digest, so sweeps of checkouts with
different locks on one machine never rebuild each other's venv."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tbmm.suite.stack import (
    LOCK_FILE,
    PYTHON_MINOR,
    SCIENTIFIC_STACK,
    lock_digest,
    requirement_lines,
)

AGENT_PYTHON = PYTHON_MINOR  # the task images' Python minor version too
AGENT_PINS: dict[str, str] = SCIENTIFIC_STACK  # top-level pins; the lock has the rest
_MARKER = ".tbmm-agent-venv.json"


def pin_lines() -> list[str]:
    """`name==version` of the top-level pins (the lock file holds the full, hashed set)."""
    return requirement_lines()


def default_venv_path() -> Path:
    """`$TBMM_AGENT_VENV`, else `~/.cache/tbmm/agent-venv-<lock digest>`."""
    env = os.environ.get("TBMM_AGENT_VENV")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "tbmm" / f"agent-venv-{lock_digest()}"


def _wanted_marker(python: str) -> dict[str, object]:
    digest = hashlib.sha256(LOCK_FILE.read_bytes()).hexdigest()[:16]
    return {"pins": digest, "python": python}


def _base_python() -> str:
    """Prefer the system interpreter: it lives under /usr, which every sandbox binds anyway."""
    for cand in (f"/usr/bin/python{AGENT_PYTHON}", "/usr/bin/python3"):
        if Path(cand).exists():
            return cand
    return sys.executable


def venv_is_ready(path: Path) -> bool:
    marker = path / _MARKER
    if not marker.is_file() or not (path / "bin" / "python").exists():
        return False
    try:
        got = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return got.get("pins") == _wanted_marker("")["pins"]


def ensure_agent_venv(path: Path | None = None, python: str | None = None) -> Path:
    """Build the venv once (uv venv + uv pip install --require-hashes of the lock,
    --compile-bytecode) and reuse it.

    Bytecode is precompiled because the venv is read-only inside the sandbox: without .pyc
    files every `import pandas` would recompile (measured 3.4 s vs 1.3 s per import).
    A file lock makes concurrent callers wait for one build instead of racing.
    """
    path = (path or default_venv_path()).expanduser()
    if venv_is_ready(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.parent / (path.name + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if venv_is_ready(path):
            return path
        uv = shutil.which("uv")
        if uv is None:
            raise RuntimeError("uv is needed to build the agent venv (pip install uv)")
        base = python or _base_python()
        tmp = path.parent / (path.name + ".building")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(path, ignore_errors=True)
        # Build at the final path: venv scripts carry absolute shebangs.
        subprocess.run([uv, "venv", "--python", base, str(path)], check=True, capture_output=True)
        env = {**os.environ, "VIRTUAL_ENV": str(path)}
        proc = subprocess.run(
            [
                uv,
                "pip",
                "install",
                "--python",
                str(path / "bin" / "python"),
                "--compile-bytecode",
                "--require-hashes",
                "--no-deps",
                "-r",
                str(LOCK_FILE),
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            shutil.rmtree(path, ignore_errors=True)
            raise RuntimeError(f"agent venv install failed:\n{proc.stderr[-4000:]}")
        (path / _MARKER).write_text(json.dumps(_wanted_marker(base)))
    return path


def venv_base_prefix(venv: Path) -> Path:
    """The base interpreter's prefix (from pyvenv.cfg `home`), which the sandbox must also see."""
    cfg = venv / "pyvenv.cfg"
    for line in cfg.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    raise RuntimeError(f"{cfg}: no home= line")
