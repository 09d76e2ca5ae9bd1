"""Lite `tbmm verify` (`tbmm.cli.entry`, `tbmm.verify_plain`, `tbmm.cli.plain`): the same
stdout, stderr and exit code as the typer command, without importing typer, pydantic, rich
or numpy for a claims-only task."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tbmm.cli import entry, plain
from tbmm.suite.tasks import Task
from tbmm.verify import VerifyReport
from tbmm.verify_plain import FIELDS, REQUIRED, report_json

LITE = "import sys; from tbmm.cli.entry import main; sys.exit(main())"
TYPER = (
    "import sys; from tbmm.cli.root import app, quiet_on_closed_pipe; quiet_on_closed_pipe(); "
    "app(args=sys.argv[1:], prog_name='tbmm')"
)
HEAVY = ("typer", "pydantic", "rich", "numpy")
WATCH = (
    "import atexit, sys\n"
    f"atexit.register(lambda: print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules), "
    "file=sys.stderr))\n"
)


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")
    }
    return {**env, **extra}


def run(code: str, args: list[str], cwd: Path, **env: str) -> tuple[int, str, str]:
    p = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=_env(**env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    return p.returncode, p.stdout, p.stderr


# --- the report's fields -----------------------------------------------------------------


def test_fields_are_the_models_fields_with_its_defaults() -> None:
    model = VerifyReport.model_fields
    assert [name for name, _ in FIELDS] == list(model)
    for name, default in FIELDS:
        if default is REQUIRED:
            assert model[name].is_required(), name
        else:
            assert model[name].get_default(call_default_factory=True) == default, name


def test_report_json_is_the_models_json() -> None:
    samples: list[dict[str, Any]] = [
        {"task": "t", "exit_code": 2, "readable": False},
        {
            "task": "t",
            "exit_code": 0,
            "readable": True,
            "o_eval": 1,
            "skill": 0,
            "robust_bo_eval": -1,
        },
        {
            "task": "t",
            "exit_code": 3,
            "readable": True,
            "o_eval": 0.25,
            "lean_detail": {"verdict": {"python": "⟨⟩", "lean": ""}, "failing": ("a", "b")},
            "lean_scope": {"x": {"by": "python_replay", "precision": "exact"}},
            "failing": ["gate g (bound): q.x = 3 > 2"],
            "task_digest": "abc",
        },
    ]
    for fields in samples:
        want = VerifyReport(**fields).model_dump(mode="json")
        got = report_json(fields)
        assert json.dumps(got, indent=2, ensure_ascii=False) == json.dumps(
            want, indent=2, ensure_ascii=False
        )
    with pytest.raises(KeyError):
        report_json({"task": "t", "readable": True})


# --- rich's output without rich ----------------------------------------------------------


def _rich(markup: str, width: int) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width).print(markup, highlight=False)
    return buf.getvalue()


def _plain(markup: str) -> str:
    buf = io.StringIO()
    printer = plain.Printer(buf)
    printer.print(markup)
    assert printer._rich is None, f"fell back to rich for {markup!r}"
    return buf.getvalue()


def _words(rng: random.Random, width: int) -> str:
    alphabet = "abcxyz0189.,:;()|/-_=<>'\"%+*#@!?[]{}" + plain.EXTRA_SINGLE + "éßΩЖ─"
    out = []
    for _ in range(rng.randint(0, 30)):
        n = rng.choice([1, 2, 3, 5, 8, 13, width - 1, width, width + 1, 2 * width + 3])
        out.append("".join(rng.choice(alphabet) for _ in range(n)))
        out.append(" " * rng.choice([1, 1, 1, 2, 3, width]))
    return "".join(out)[: rng.choice([5, 60, 200, 400])]


def test_printer_prints_what_rich_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated lines (long words, runs of spaces, brackets, the marks `tbmm verify` prints),
    with and without colour tags, at several widths: the plain printer's bytes are rich's."""
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    rng = random.Random(20261202)
    plain_runs = 0
    for width in (20, 21, 37, 80, 81, 133):
        monkeypatch.setenv("COLUMNS", str(width))
        for _ in range(300):
            text = _words(rng, width)
            style = rng.choice(sorted(plain.STYLES))
            markup = rng.choice(
                [
                    text,
                    f"  [{style}]✗[/{style}] {text}",
                    f"[{style}]{text}[/{style}] tail",
                    text + " ",
                ]
            )
            if plain.text_of(markup) is None:
                continue  # rich prints it (e.g. brackets that read as a tag)
            plain_runs += 1
            assert _plain(markup) == _rich(markup, width), (width, markup)
    assert plain_runs > 1000  # the comparison is not vacuous


@pytest.mark.parametrize(
    "markup",
    [
        "[/red] closes nothing",  # rich raises MarkupError: rich must be the one to raise it
        "[bold red]x[/bold red]",  # a tag this package does not write
        "a :smile: b",  # an emoji code
        "a\\[red] b",  # an escaped bracket
        "tab\there",
        "two\nlines",
        "wide 漢字",
        "[link=x]y[/link]",
    ],
)
def test_what_the_printer_cannot_vouch_for_goes_to_rich(markup: str) -> None:
    assert plain.text_of(markup) is None


def test_error_line_is_the_typer_commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """`print_error` against `tbmm.cli.root._fail`'s rich line (no wrap, markup escaped)."""
    from rich.console import Console
    from rich.markup import escape

    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setenv("COLUMNS", "30")
    long = "/tmp/" + "x" * 90 + ".json: not valid JSON: Expecting value: line 1 column 1 (char 0)"
    for msg in (
        long,
        "a [red]b[/red] c",
        "[/red]",
        "ends with \\",
        "tab\there",
        "bell\x07",
        "wide 漢字 ⟨⟩",
        ":smile:",
    ):
        buf = io.StringIO()
        plain.print_error(msg, buf)
        want = io.StringIO()
        Console(file=want).print(
            f"[red]error:[/red] {escape(msg)}", highlight=False, soft_wrap=True
        )
        assert buf.getvalue() == want.getvalue(), msg


def test_every_extra_character_is_one_cell_for_rich() -> None:
    from rich.cells import cell_len

    for c in plain.EXTRA_SINGLE:
        assert cell_len(c) == 1, c
        assert not c.isspace(), c


def test_width_and_terminal_follow_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    for columns in (None, "100", "abc", "", "20"):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert plain.console_width() == Console(file=io.StringIO()).width, columns
    for env, value in (
        (None, None),
        ("FORCE_COLOR", "1"),
        ("FORCE_COLOR", ""),
        ("TTY_COMPATIBLE", "1"),
    ):
        monkeypatch.delenv("FORCE_COLOR", raising=False)
        monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
        if env is not None:
            monkeypatch.setenv(env, value)
        buf = io.StringIO()
        assert plain.is_terminal(buf) == Console(file=buf).is_terminal, (env, value)


def test_verify_lines_of_a_disagreement_and_a_replay() -> None:
    """Every kind of line `tbmm verify` prints, through the plain printer and rich alike."""
    rep = report_json(
        {
            "task": "t",
            "exit_code": 3,
            "readable": True,
            "schema_issues": ["q.x: missing"],
            "lean": "disagreement",
            "lean_detail": {
                "obligations": 4,
                "instances": 9,
                "toolchain": "x",
                "gaps": ["q.y [2] missing"],
            },
            "failing": ["lean disagreement: verdict: Python ⟨feasible⟩, Lean kernel differs"],
            "lean_scope": {
                "a": {"by": "lean_kernel", "precision": "exact"},
                "b": {
                    "by": "python_replay",
                    "precision": "floating",
                    "agree": "q.b: |claim - replayed| <= 0.01",
                },
            },
            "status": "lean_disagreement",
        }
    )
    lines = entry.verify_lines(rep)
    assert lines[1].startswith("[magenta]NO VERDICT (Lean disagrees)[/magenta] t: gate skipped")
    for line in lines:
        assert _plain(line) == _rich(line, 80)


# --- the command line: lite against typer ------------------------------------------------


def _cases(suite: list[Task], tmp_path: Path) -> list[list[str]]:
    from tests.conftest import infeasible_dragon

    claims = [t for t in suite if t.replay_spec is None]
    dragon = next(t for t in suite if t.slug == "cumcm-2024-a-dragon-dance")
    cases = []
    for t in claims:
        art = tmp_path / f"{t.slug}.json"
        art.write_bytes(t.anchor_artifact_bytes())
        cases.append([str(art), "--task", t.slug])
    bad_dragon = tmp_path / "infeasible.json"
    bad_dragon.write_bytes(infeasible_dragon(dragon))
    cases.append([str(bad_dragon), "--task", dragon.slug])
    t = claims[0]
    other = claims[1]
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "list.json").write_text("[1, 2]")
    over = tmp_path / "over.json"
    over.write_text('{"x": "' + "a" * (t.caps.max_bytes + 10) + '"}')
    cases += [
        [str(tmp_path / "bad.json"), "--task", t.slug],  # invalid JSON: a report, exit 2
        [str(tmp_path / "list.json"), "--task", t.slug],  # not an object
        [str(tmp_path / "absent.json"), "--task", t.slug],  # missing file: the typer app's error
        [str(over), "--task", t.slug],  # over the byte cap
        [str(tmp_path / "empty.json"), "--task", "no-such-task"],
        [str(tmp_path / "empty.json"), "--task", t.slug],  # empty: gaps, schema issues
        [cases[0][0], "--task", other.slug],  # another task's artifact
        [cases[0][0], f"--task={t.slug}", "--tasks-root", str(tmp_path / "nowhere")],
    ]
    return cases


@pytest.mark.slow
def test_lite_verify_prints_what_the_typer_command_prints(
    suite: list[Task], tmp_path: Path
) -> None:
    """Every claims-only anchor, an infeasible artifact and bad inputs, as text and --json,
    with Lean and with --no-lean: identical stdout, stderr and exit code."""
    for args in _cases(suite, tmp_path):
        for extra in ([], ["--json"], ["--no-lean"], ["--no-lean", "--json"]):
            cmd = ["verify", *args, *extra]
            lite = run(LITE, cmd, tmp_path)
            typer_ = run(TYPER, cmd, tmp_path)
            assert lite == typer_, cmd
    # a narrow console and a wide one (rich's wrapping, reproduced)
    for columns in ("43", "200"):
        cmd = ["verify", *_cases(suite, tmp_path)[0]]
        assert run(LITE, cmd, tmp_path, COLUMNS=columns) == run(
            TYPER, cmd, tmp_path, COLUMNS=columns
        )


@pytest.mark.slow
def test_lite_verify_imports_no_framework_for_a_claims_only_task(
    suite: list[Task], tmp_path: Path
) -> None:
    t = next(t for t in suite if t.replay_spec is None)
    art = tmp_path / "a.json"
    art.write_bytes(t.anchor_artifact_bytes())
    for extra in ([], ["--json"], ["--no-lean"], ["--no-lean", "--json"]):
        cmd = ["verify", str(art), "--task", t.slug, *extra]
        run(WATCH + LITE, cmd, tmp_path)  # the first run may validate and store the task files
        code, out, err = run(WATCH + LITE, cmd, tmp_path)
        assert code == 0 and "HEAVY []" in err, (cmd, err[-400:])
        assert ("FEASIBLE" in out) if "--json" not in extra else json.loads(out)["exit_code"] == 0
    # the same watch sees the typer command import them (the check can fail)
    code, _, err = run(WATCH + TYPER, ["verify", str(art), "--task", t.slug, "--no-lean"], tmp_path)
    assert code == 0 and "'pydantic'" in err and "'typer'" in err
