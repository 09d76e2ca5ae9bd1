"""The CLI's root mounts its verb groups lazily and the leaderboard's computation stands
without its renderers: imports point one way (verb module -> root, renderers ->
computation), and no command is defined in a verb module without being mounted."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

from typer.testing import CliRunner

from tbmm.cli.root import _LazyGroup, app

VERB_MODULES = ("tbmm.cli.tasks", "tbmm.cli.verdict", "tbmm.cli.reports", "tbmm.cli.service")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (imports only)."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return set(out.split())


def test_the_root_imports_no_verb_module() -> None:
    loaded = _modules_after("import tbmm.cli.root")
    assert not loaded & set(VERB_MODULES), loaded & set(VERB_MODULES)
    # a verb module imports the root without a cycle, on its own
    for mod in VERB_MODULES:
        assert mod in _modules_after(f"import {mod}")


def test_every_command_of_a_verb_module_is_mounted_and_listed() -> None:
    mounted = {(m, a) for m, a in _LazyGroup.LAZY.values()}
    for mod in ("tbmm.cli.verdict", "tbmm.cli.reports", "tbmm.cli.service"):
        m = importlib.import_module(mod)
        commands = {
            name
            for name, fn in inspect.getmembers(m, inspect.isfunction)
            if fn.__module__ == mod and not name.startswith("_")
        }
        assert commands, mod
        missing = {(mod, c) for c in commands} - mounted
        assert not missing, f"defined but not in _LazyGroup.LAZY: {missing}"
    assert ("tbmm.cli.tasks", "tasks_app") in mounted
    r = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert r.exit_code == 0
    listed = [
        ln.split()[0] for ln in r.output.split("Commands:", 1)[1].splitlines() if ln[:3].strip()
    ]
    assert listed == list(_LazyGroup.LAZY), listed


def test_leaderboard_computation_stands_without_its_renderers() -> None:
    loaded = _modules_after("import tbmm.reports.leaderboard")
    assert "tbmm.reports.leaderboard_render" not in loaded
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}
    loaded = _modules_after("import tbmm.reports.results")
    assert "tbmm.reports.leaderboard_render" not in loaded
