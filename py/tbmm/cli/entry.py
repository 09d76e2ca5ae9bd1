"""The `tbmm` console entry: `tbmm score` and `tbmm gate` without the CLI framework.

Why: importing typer, rich and pydantic costs about 0.4 s of CPU, several times the verdict
of a small artifact. A well-formed `score` or `gate` call (an artifact, `--task`, optional
`--tasks-root`, `--json`, `--gate-failed`) runs here in lite mode (`tbmm.suite.tasks.LITE`: task
files as validated plain copies, `tbmm.suite.compiled`) and prints plain text. Everything else —
other commands, `--help`, an unknown option, and every error (unknown task, unreadable
artifact, malformed task file) — goes to the typer app (`tbmm.cli.root`), which reports it as it
always does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_FLAGS = {"score": ("--json", "--gate-failed"), "gate": ("--json",)}
_VALUED = ("--task", "--tasks-root")


def parse(args: list[str]) -> dict[str, Any] | None:
    """The request of a well-formed `score`/`gate` call, or None (the typer app decides)."""
    if not args or args[0] not in _FLAGS:
        return None
    req: dict[str, Any] = {"command": args[0], "flags": set(), "artifact": None}
    rest = args[1:]
    i = 0
    while i < len(rest):
        a = rest[i]
        name, eq, value = a.partition("=")
        if name in _VALUED:
            if not eq:
                if i + 1 >= len(rest):
                    return None
                i += 1
                value = rest[i]
            if name in req or not value:
                return None
            req[name] = value
        elif a in _FLAGS[args[0]]:
            req["flags"].add(a)
        elif a.startswith("-") or req["artifact"] is not None:
            return None
        else:
            req["artifact"] = a
        i += 1
    if req["artifact"] is None or "--task" not in req:
        return None
    return req


def score_of(task: Any, ev: Any, gate_failed: bool) -> Any:
    """The task score of an evaluation; `gate_failed` scores as if the gate had failed."""
    from tbmm.verdict.scoring import score_task

    result = ev.score
    if gate_failed and result.status != "gate_failed":
        result = score_task(task, ev.doc, gate_failed=True, unverifiable=ev.gate.unverifiable)
    return result


def run(req: dict[str, Any]) -> int | None:
    """Run a parsed call in lite mode; its exit code, or None to let the typer app run it
    (an error it reports, with its own words and exit code)."""
    import tbmm.suite.tasks  # noqa: F401 - the module (the package's `tasks` is the API function)

    tasks = sys.modules["tbmm.suite.tasks"]
    from tbmm.core.bounds import BoundsError, read_capped
    from tbmm.verdict.pipeline import evaluate
    from tbmm.verdict.scoring import ArtifactError, read_artifact

    tasks.LITE = True
    try:
        root = Path(req["--tasks-root"]) if "--tasks-root" in req else tasks.TASKS_ROOT
        task = tasks.find_task(req["--task"], root)
        doc = read_artifact(read_capped(Path(req["artifact"]), task.caps), task.caps)
        ev = evaluate(task, doc)
        result = score_of(task, ev, "--gate-failed" in req["flags"])
    except (KeyError, OSError, BoundsError, ArtifactError, tasks.TaskFormatError):
        return None
    finally:
        tasks.LITE = False
    # printed outside the fallback: an error while writing is not a reason to run it twice
    as_json = "--json" in req["flags"]
    if req["command"] == "score":
        print_json(result.to_json()) if as_json else print_score(result)
        return 0
    print_json(ev.gate.to_json()) if as_json else print_gate(ev.gate)
    return 1 if ev.gate.verdict == "fail" else 0


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


_ANSI = {"green": "32", "yellow": "33", "red": "31", "dim": "2", "bold": "1"}


def _paint(text: str, style: str) -> str:
    """ANSI colour on a terminal (unless NO_COLOR is set); plain text otherwise."""
    import os

    if not sys.stdout.isatty() or os.environ.get("NO_COLOR"):
        return text
    return f"\033[{_ANSI[style]}m{text}\033[0m"


def print_score(result: Any) -> None:
    """A TaskScore: one block per metric (reward, value against anchor, path, reason) and
    the summary line. Plain text: rich alone would cost more CPU than the verdict."""
    from tbmm.core.exact import fraction_to_text

    print(_paint(f"{result.task} — {len(result.metrics)} metrics", "bold"))
    for m in result.metrics:
        reward = "excluded" if m.reward is None else f"{float(m.reward):.4f}"
        print(
            f"  {m.id}: reward {reward} | value {m.value_text or '—'} | anchor {m.anchor_text}"
            f" | {m.direction}"
        )
        print(_paint(f"      path {m.path}", "dim"))
        if m.reason:
            print(f"      {m.reason}")
    print(
        f"status {result.status} | raw R = {fraction_to_text(result.raw)} | O-Eval (panel) = "
        f"{float(result.o_eval):.4f} [{fraction_to_text(result.o_eval)}] | O-Eval (anchor) = "
        f"{float(result.o_eval_anchor):.4f} | Robust BO-Eval = {float(result.robust_bo):.4f} | "
        f"skill (default reward) = {float(result.skill):.4f} over F_t = "
        f"{float(result.floor_raw):.4f}"
    )
    for n in result.notes:
        print(f"note: {n}")


_MARKS = {"pass": ("✓", "green"), "fail": ("✗", "red"), "bad": ("✗", "red")}


def print_gate(report: Any) -> None:
    """A GateReport: the verdict, every instance, warnings, unverifiable metrics."""
    style = {"pass": "green", "warn": "yellow", "fail": "red"}[report.verdict]
    print(
        f"gate {_paint(report.verdict.upper(), style)} for {report.task}: "
        f"{len(report.instances)} instance(s)"
    )
    for i in report.instances:
        mark, colour = _MARKS.get(i.status, ("?", "yellow"))
        print(f" {_paint(mark, colour)} {i.name} ({i.check.form.value}) {i.message}")
    for w in report.warnings:
        print(f" {_paint('warning:', 'yellow')} {w}")
    for mid, why in report.unverifiable.items():
        print(f" {_paint(f'metric {mid} scores 0:', 'yellow')} {why}")
    for r in report.replay:
        print(
            _paint(
                f" replay-only (whole-task penalty, not field-checkable): {r['id']}: "
                f"{r['description']}",
                "dim",
            )
        )


def stdout_closed(stream: Any = None) -> None:
    """The reader of stdout (or of `stream`) went away (`tbmm leaderboard | head`): point it
    at /dev/null so that nothing further (the interpreter's last flush included) fails or
    prints a traceback about it."""
    import os

    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, (stream or sys.stdout).fileno())
        os.close(null)
    except (OSError, ValueError):  # no file descriptor (a test's captured stdout)
        pass


def main(argv: list[str] | None = None) -> None:
    """Console entry point (`tbmm`). A closed stdout pipe (`tbmm leaderboard | head`) ends
    the command quietly with exit 0 whether a write or the final flush found it closed (the
    reader chose to stop; with PYTHONUNBUFFERED every print is a write, so "ran to its end"
    is no stable distinction): never click's or rich's exit 1, a traceback or Python's
    "Exception ignored" line. A command that wrote nothing keeps its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        req = parse(args)
        if req is not None:
            code = run(req)
            if code is not None:
                raise SystemExit(code)
        from tbmm.cli.root import app, quiet_on_closed_pipe

        quiet_on_closed_pipe()
        app(args=args, prog_name="tbmm")
    except BrokenPipeError:
        stdout_closed()
        raise SystemExit(0) from None
    except SystemExit:
        _flush()
        raise
    _flush()


def _flush() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_closed()
        raise SystemExit(0) from None
