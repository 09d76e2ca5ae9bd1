"""The `tbmm` console entry: `tbmm score`, `gate` and `verify` without the CLI framework.

Why: importing typer, rich and pydantic costs about 0.4 s of CPU, several times the verdict
of a small artifact. A well-formed `score`, `gate` or single-artifact `verify` call (an
artifact, `--task`, optional `--tasks-root`, `--json`, `--gate-failed` for score,
`--no-lean` for verify) runs here in lite mode (`tbmm.suite.tasks.LITE`: task files as
validated plain copies, `tbmm.suite.compiled`; verify's report as plain fields,
`tbmm.verify_plain`) and prints what the typer command prints, byte for byte (verify's
rich output through `tbmm.cli.plain`). Everything else — other commands, `--help`, an
unknown option, `verify --batch`/`--manifest`, and every error the typer app reports
(unknown task, unreadable artifact file, malformed task file, no Lean toolchain) — goes
to the typer app (`tbmm.cli.root`), which reports it as it always does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_FLAGS = {
    "score": ("--json", "--gate-failed"),
    "gate": ("--json",),
    "verify": ("--json", "--no-lean"),
}
_VALUED = ("--task", "--tasks-root")


def parse(args: list[str]) -> dict[str, Any] | None:
    """The request of a well-formed `score`/`gate`/`verify` call, or None (the typer app
    decides)."""
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


def _tasks_module() -> Any:
    import tbmm.suite.tasks  # noqa: F401 - the module (the package's `tasks` is the API function)

    return sys.modules["tbmm.suite.tasks"]


def run(req: dict[str, Any]) -> int | None:
    """Run a parsed call in lite mode; its exit code, or None to let the typer app run it
    (an error it reports, with its own words and exit code)."""
    if req["command"] == "verify":
        return run_verify(req)
    tasks = _tasks_module()
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


def run_verify(req: dict[str, Any]) -> int | None:
    """`tbmm verify ARTIFACT --task T` in lite mode (`tbmm.verify_plain`): the report the
    typer command prints, or None for what it reports as an error (an unknown task, an
    unreadable or over-cap file, a malformed task file, no Lean toolchain, a certificate
    out of its grammar), which it then reports in its own words."""
    tasks = _tasks_module()
    from tbmm.core.bounds import BoundsError, read_capped
    from tbmm.verify_plain import report_json, verify_fields

    artifact = Path(req["artifact"])
    tasks.LITE = True
    try:
        try:
            root = Path(req["--tasks-root"]) if "--tasks-root" in req else tasks.TASKS_ROOT
            task = tasks.find_task(req["--task"], root)
            data = read_capped(artifact, task.caps)
        except (KeyError, OSError, BoundsError, tasks.TaskFormatError):
            return None
        try:
            fields = verify_fields(task, data, lean="--no-lean" not in req["flags"])
        except Exception as exc:
            if _typer_reports(exc, tasks.TaskFormatError):
                return None
            raise
    finally:
        tasks.LITE = False
    rep = report_json(fields)
    if "--json" in req["flags"]:
        print_json(rep)
        return int(rep["exit_code"])
    from tbmm.cli.plain import Printer, print_error

    if not rep["readable"] or rep["status"] == "budget_exceeded":
        print_error(f"{artifact}: {rep['error']}")
        return int(rep["exit_code"])
    out = Printer()
    for line in verify_lines(rep):
        out.print(line)
    return int(rep["exit_code"])


def _typer_reports(exc: Exception, task_format_error: type) -> bool:
    """Whether `tbmm verify`'s typer command reports `exc` as an error of its own
    (`tbmm.cli.root._verification_errors`) rather than as a verdict."""
    kinds: list[type] = [task_format_error]
    for module, name in (
        ("tbmm.lean.runtime", "ToolchainError"),
        ("tbmm.lean.certify", "CertificateError"),
    ):
        if module in sys.modules:
            kinds.append(getattr(sys.modules[module], name))
    return isinstance(exc, tuple(kinds))


def verify_lines(rep: dict[str, Any]) -> list[str]:
    """`tbmm verify`'s text output of a readable report (`VerifyReport` JSON): rich markup
    lines, each printed by `console.print(line, highlight=False)` (the typer command) or
    by `tbmm.cli.plain.Printer` (the lite path), which prints the same bytes."""
    lines = [f"[yellow]schema:[/yellow] {issue}" for issue in rep["schema_issues"]]
    code = rep["exit_code"]
    style = {0: "green", 1: "red"}.get(code, "magenta")
    verdict = {0: "FEASIBLE", 1: "INFEASIBLE"}.get(code, "NO VERDICT (Lean disagrees)")
    lean = rep["lean_detail"]
    lines.append(
        f"[{style}]{verdict}[/{style}] {rep['task']}: gate {rep['gate']}, Lean {rep['lean']}"
        + (
            f" ({lean.get('obligations', 0)} obligations over {lean.get('instances', 0)} check"
            f" instances, {lean.get('toolchain', '')})"
            if lean
            else ""
        )
    )
    lines += [f"  [red]✗[/red] {f}" for f in rep["failing"]]
    lines += [
        f"  [yellow]gap (not claimed):[/yellow] {g}" for g in (lean.get("gaps", []) if lean else [])
    ]
    scope = rep["lean_scope"]
    if scope:  # which replayed values the Lean kernel recomputed, which it took from Python
        by_kernel = [p for p, e in scope.items() if e.get("by") == "lean_kernel"]
        by_python = [p for p, e in scope.items() if e.get("by") != "lean_kernel"]
        lines.append(
            f"replayed values: {len(by_kernel)} recomputed by the Lean kernel, "
            f"{len(by_python)} taken from the Python replay (not recomputed by the kernel):"
        )
        for p in by_python:
            e = scope[p]
            tol = f"; agree {e['agree']}" if "agree" in e else ""
            lines.append(f"  [yellow]python[/yellow] replayed.{p}: {e['precision']}{tol}")
    lines.append(
        f"O-Eval {rep['o_eval']:.4f} [{rep['o_eval_exact']}] | raw {rep['raw_exact']} | "
        f"Robust BO-Eval {rep['robust_bo_eval']:.4f} | skill {rep['skill']:.4f} | "
        f"status {rep['status']}"
    )
    return lines


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
