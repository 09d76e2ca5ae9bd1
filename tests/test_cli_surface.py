"""The command line as a new user meets it: `--version`, a closed output pipe, help at 80
columns, and README's words about the commands kept true to what they print."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib

from typer.testing import CliRunner

import tbmm
from tbmm.cli import app

from .conftest import REPO

runner = CliRunner()


def test_version_agrees_with_the_package_metadata() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout == f"tbmm {declared['version']}\n"
    assert tbmm.__version__ == declared["version"]
    # the installed distribution's metadata (uv sync made it from pyproject.toml)
    assert importlib.metadata.version("tbmm") == declared["version"]
    # through the console entry (the lite dispatcher must hand it to the typer app)
    proc = subprocess.run(
        [sys.executable, "-c", "from tbmm.entry import main; main()", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == f"tbmm {declared['version']}\n", proc.stderr
