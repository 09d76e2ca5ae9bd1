"""The `tbmm` command line's root: the app, its lazily mounted verb groups, `--version`,
the closed-pipe rule, and the helpers and option types every verb group shares.

The commands live by verb group (`tbmm.cli.verdict`, `cli_reports`, `cli_service`,
`cli_tasks`; the harness, Lean and Harbor CLIs elsewhere) and import this module; it names
them only in `_LazyGroup.LAZY`, so no verb module is imported before it is needed.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from tbmm.cli.help import HelpGroup, typer_app
from tbmm.suite.tasks import Task, TaskFormatError, find_task


class _LazyGroup(HelpGroup):
    """Every command is a (module, attribute) row, imported when named (or listed by --help,
    in this order): `tbmm run` (the harness), `tbmm lean` and `tbmm export`/`ingest` (Harbor)
    import a lot, so `tbmm score`/`gate`/`verify` start without them."""

    LAZY = {
        "score": ("tbmm.cli.verdict", "score"),
        "gate": ("tbmm.cli.verdict", "gate"),
        "replay": ("tbmm.cli.verdict", "replay"),
        "verify": ("tbmm.cli.verdict", "verify"),
        "leaderboard": ("tbmm.cli.reports", "leaderboard_cmd"),
        "report": ("tbmm.cli.reports", "report_cmd"),
        "view": ("tbmm.cli.reports", "view"),
        "serve": ("tbmm.cli.service", "serve"),
        "bench": ("tbmm.cli.service", "bench"),
        "tasks": ("tbmm.cli.tasks", "tasks_app"),
        "run": ("harness.cli.run", "run_command"),
        "lean": ("tbmm.cli.lean", "lean_app"),
        "export": ("tbmm.cli.harbor", "export_app"),
        "ingest": ("tbmm.cli.harbor", "ingest_app"),
        "runs": ("harness.cli.runs", "runs_app"),
        "agents": ("harness.cli.runs", "agents_app"),
        "docker": ("harness.cli.runs", "docker_app"),
    }

    # click turns a write to a closed stdout pipe into exit 1; tbmm.cli.entry's rule instead
    # (exit 0, quietly). Help and usage are written while the context is made.
    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            raise _closed_pipe() from None

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _closed_pipe() from None

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.LAZY if n not in self.commands)]

    def get_command(self, ctx: Any, name: str) -> Any:
        if name in self.LAZY and name not in self.commands:
            import importlib

            mod, attr = self.LAZY[name]
            obj = getattr(importlib.import_module(mod), attr)
            if not isinstance(obj, typer.Typer):
                single = typer_app(add_completion=False)
                single.command(name)(obj)
                obj = single
            cmd = typer.main.get_command(obj)
            cmd.name = name
            self.add_command(cmd, name)
        return super().get_command(ctx, name)


def _closed_pipe() -> SystemExit:
    from tbmm.cli.entry import stdout_closed

    stdout_closed()
    return SystemExit(0)


def _rich_closed_pipe(self: Console) -> None:
    self.quiet = True
    if self.file is sys.stderr:  # nobody reads the messages: the command goes on to its code
        from tbmm.cli.entry import stdout_closed

        stdout_closed(sys.stderr)
        return
    raise _closed_pipe()


def quiet_on_closed_pipe() -> None:
    """For the `tbmm` process (tbmm.cli.entry): every rich console, typer's help included, ends
    the command as tbmm.cli.entry does on a closed stdout pipe (rich's own hook exits 1); a
    closed stderr is silenced and the command keeps its exit code."""
    Console.on_broken_pipe = _rich_closed_pipe  # type: ignore[method-assign]


app = typer_app(
    cls=_LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    help="TB-MathModel: agentic, verifiable mathematical-modeling benchmark.",
)


def _print_version(value: bool) -> None:
    if value:
        from tbmm import __version__

        print(f"tbmm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print tbmm's version and exit.",
        ),
    ] = False,
) -> None:
    pass


console = Console()
err = Console(stderr=True)

TasksRoot = Annotated[
    Path, typer.Option("--tasks-root", help="Folder holding CUMCM/ and MCM/ task folders.")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _fail(msg: str, code: int = 2) -> typer.Exit:
    from rich.markup import escape

    err.print(f"[red]error:[/red] {escape(msg)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@contextlib.contextmanager
def _verification_errors() -> Iterator[None]:
    """What `tbmm verify` reports instead of a verdict: a malformed task file or no Lean
    toolchain (exit 2), a certificate the generator got wrong (exit 3, a bug: no verdict)."""
    from tbmm.lean.certify import CertificateError
    from tbmm.lean.runtime import ToolchainError

    try:
        yield
    except TaskFormatError as exc:
        raise _fail(str(exc)) from exc
    except ToolchainError as exc:
        raise _fail(f"{exc} (or pass --no-lean)") from exc
    except CertificateError as exc:
        raise _fail(f"the generated certificate left its grammar: {exc}", 3) from exc


def _task(slug: str, root: Path) -> Task:
    try:
        return find_task(slug, root)
    except (KeyError, TaskFormatError) as exc:
        raise _fail(str(exc).strip("'\"")) from exc


def main() -> None:  # pragma: no cover - console entry
    from tbmm.cli.entry import main as entry

    entry()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
