"""The command line as a new user meets it: `--version`, a closed output pipe, help at 80
columns, and README's words about the commands kept true to what they print."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tbmm
from tbmm.cli.root import app
from tbmm.cli.tasks import tasks_list
from tbmm.suite.tasks import find_task, load_suite

from .conftest import REPO, infeasible_dragon, trial_record

runner = CliRunner()
README = (REPO / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_version_agrees_with_the_package_metadata() -> None:
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout == f"tbmm {declared['version']}\n"
    assert tbmm.__version__ == declared["version"]
    # the installed distribution's metadata (uv sync made it from pyproject.toml)
    assert importlib.metadata.version("tbmm") == declared["version"]
    # through the console entry (the lite dispatcher must hand it to the typer app)
    proc = subprocess.run(
        [sys.executable, "-c", "from tbmm.cli.entry import main; main()", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout == f"tbmm {declared['version']}\n", proc.stderr


# ---------------------------------------------------------------------------- closed pipe


def _tbmm_into_closed_pipe(args: list[str], read_first_line: bool = False) -> tuple[int, str]:
    """`tbmm ARGS | head -1` made deterministic: stdout is a pipe whose only reader closes it
    at once (or after one line), so every write after that finds it closed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from tbmm.cli.entry import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    if read_first_line:
        proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), err


def _store(tmp_path: Path) -> Path:
    """A results store with every task of the suite for three entries, two seeds each: a
    leaderboard of several kB in every format."""
    from harness.runs.store import Store

    db = tmp_path / "r.sqlite"
    store = Store(db)
    for e in ("a", "b", "c"):
        for t in load_suite():
            for s in range(2):
                rec = trial_record(entry_id=f"{e}@m", agent=e, task=t.slug, suite=t.suite, seed=s)
                store.commit(rec, store.scratch_dir())
    store.close()
    return db


@pytest.mark.slow
def test_a_closed_stdout_pipe_ends_quietly(tmp_path: Path) -> None:
    db = _store(tmp_path)
    full = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tbmm.cli.entry import main; main()",
            "leaderboard",
            "--db",
            str(db),
        ],
        capture_output=True,
        timeout=300,
    )
    assert full.returncode == 0 and full.stdout.count(b"\n") > 20, full.stderr
    cases = [
        (["leaderboard", "--db", str(db)], False),  # rich console writes
        (["leaderboard", "--db", str(db)], True),  # as `| head -1`
        (["leaderboard", "--db", str(db), "--format", "json"], False),  # print(), > 8 kB
        (["--help"], False),  # typer's help, written while the context is made
        (["tasks", "list", "--json"], False),  # print() under 8 kB: the exit flush
    ]
    for args, head in cases:
        code, err = _tbmm_into_closed_pipe(args, head)
        assert (code, err) == (0, ""), (args, head, code, err)


@pytest.mark.slow
def test_a_closed_pipe_after_a_verdict_is_exit_0_and_an_error_keeps_its_code(
    tmp_path: Path,
) -> None:
    """The lite `gate` path: a gate failure (exit 1 on an open pipe) whose report found the
    pipe closed ends with 0 like any other cut output; an error that wrote nothing to stdout
    (an unknown task, exit 2) keeps its code and its message on stderr."""
    t = find_task("cumcm-2024-a-dragon-dance")
    bad = tmp_path / "bad.json"
    bad.write_bytes(infeasible_dragon(t))
    entry = [sys.executable, "-c", "from tbmm.cli.entry import main; main()"]
    opened = subprocess.run([*entry, "gate", str(bad), "--task", t.slug], capture_output=True)
    assert opened.returncode == 1 and b"gate FAIL" in opened.stdout
    assert _tbmm_into_closed_pipe(["gate", str(bad), "--task", t.slug]) == (0, "")
    code, err = _tbmm_into_closed_pipe(["gate", str(bad), "--task", "no-such-task"])
    assert code == 2 and "unknown task" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- README claims


def _claimed_columns(text: str) -> tuple[list[str], list[str]]:
    """("contest, slug, ...; totals, references by kind") -> (table columns, lines below)."""
    cols, _, below = " ".join(text.split()).partition(";")
    return [c.strip() for c in cols.split(",")], [b.strip() for b in below.split(",")]


def test_tasks_list_shows_the_columns_readme_and_help_name() -> None:
    line = next(ln for ln in README.splitlines() if ln.startswith("uv run tbmm tasks list "))
    readme_cols, readme_below = _claimed_columns(line.split("#", 1)[1])
    doc = tasks_list.__doc__ or ""
    help_cols, help_below = _claimed_columns(doc.split(":", 1)[1].split("(", 1)[0])
    assert (readme_cols, readme_below) == (help_cols, help_below)
    r = runner.invoke(app, ["tasks", "list"])  # not a terminal: Markdown, every column
    assert r.exit_code == 0
    header = next(ln for ln in r.stdout.splitlines() if ln.startswith("| "))
    assert [c.strip() for c in header.strip("| ").split("|")] == readme_cols
    assert readme_below == ["totals", "references by kind"]
    assert re.search(r"^\d+ metrics, \d+ figures, \d+ gate checks$", r.stdout, re.M)
    assert re.search(r"^references by kind: \w+ \d+", r.stdout, re.M)


# ---------------------------------------------------------------------------- help width

WIDTH = 80
MIN_DESCRIPTION = 40  # columns left for an option's or command's description at 80


def _command_paths() -> list[list[str]]:
    """Every command and group of `tbmm`, the lazily loaded ones included."""
    from typer.main import get_command

    out: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        out.append(path)
        if hasattr(cmd, "list_commands"):  # a group (typer's own copy of click's)
            for name in cmd.list_commands(None):
                sub = cmd.get_command(None, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name])

    walk(get_command(app), [])
    return out


def _description_columns(text: str) -> list[tuple[int, str]]:
    """(column where the description starts, line) for each line of the Options, Arguments
    and Commands lists: after the term's two-space gap, or a continuation line's indent."""
    cols = []
    in_list = False
    for line in text.splitlines():
        if line.rstrip().endswith(":") and not line.startswith(" "):
            in_list = line.strip() in ("Options:", "Arguments:", "Commands:")
            continue
        if not in_list or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= 2:  # a term ("  --db <path>  SQLite ..."): its description, if any
            gap = re.search(r"\S( {2,})\S", line)
            if gap:
                cols.append((gap.end(1), line))
        else:
            cols.append((indent, line))
    return cols


@pytest.mark.slow
def test_every_help_reads_at_80_columns() -> None:
    """No help line of any command is wider than 80 columns, none is cut ("…"), every option
    name is printed whole, every description starts by column 40 (40+ columns of text), and
    a group lists each command's whole first paragraph."""
    from tbmm.cli.help import summary

    paths = _command_paths()
    assert len(paths) > 10 and ["run"] in paths and ["export", "harbor"] in paths
    for path in paths:
        r = runner.invoke(app, [*path, "--help"], terminal_width=WIDTH, env={"COLUMNS": "80"})
        assert r.exit_code == 0, (path, r.output)
        text = r.stdout
        assert all(len(ln) <= WIDTH for ln in text.splitlines()), (path, text)
        assert "…" not in text and "╭" not in text, (path, text)
        cols = _description_columns(text)
        assert cols or path == [], (path, text)
        narrow = [ln for c, ln in cols if c > WIDTH - MIN_DESCRIPTION]
        assert not narrow, (path, narrow)
        from typer.main import get_command

        cmd = get_command(app)
        for name in path:
            cmd = cmd.get_command(None, name)
        flat = " ".join(text.split())
        for p in cmd.params:
            for opt in [*p.opts, *p.secondary_opts]:
                if opt.startswith("--"):
                    assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text), (path, opt)
        if hasattr(cmd, "list_commands"):
            for name in cmd.list_commands(None):
                sub = cmd.get_command(None, name)
                assert sub is not None and summary(sub) in flat, (path, name, flat)


@pytest.mark.slow
def test_a_closed_stderr_pipe_keeps_the_exit_code() -> None:
    """Nobody reads the messages: they go nowhere and the command ends with its own code (an
    unknown task: 2), where rich's own hook would exit 1 and tbmm's stdout rule 0."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from tbmm.cli.entry import main; main()", "tasks", "show", "nope"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stderr.close()
    assert proc.stdout.read() == b""
    assert proc.wait(timeout=300) == 2
