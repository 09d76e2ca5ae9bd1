"""How every `tbmm` command prints its help: click's plain formatter, not typer's rich panels.

Why: at 80 columns typer's rich option table gives the option names, a column for their
`--no-` forms, the types and the description one row each, so the description shrinks to a
narrow column and long option names are cut ("--allow-weaker-i…"). Click's formatter puts
the description after at most 30 columns of option (or on the next line), so it keeps
about 44 columns at 80, and wraps prose paragraphs instead of keeping the docstring's line
breaks. Group listings show each command's whole first paragraph (click would cut it at
the first sentence or "..."). tests/test_cli_surface.py checks every command at 80 columns.
"""

from __future__ import annotations

import inspect
from typing import Any

import typer
from typer.core import TyperGroup


def summary(cmd: Any) -> str:
    """A command's first help paragraph on one line (what a group's listing shows)."""
    if cmd.short_help:
        return " ".join(cmd.short_help.split())
    text = inspect.cleandoc(cmd.help or "").partition("\f")[0]
    return " ".join(text.split("\n\n", 1)[0].split())


class HelpGroup(TyperGroup):
    """A typer group whose listing shows each command's whole first paragraph, wrapped."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, summary(cmd)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def typer_app(**kwargs: Any) -> typer.Typer:
    """A typer app with tbmm's help (plain, fits 80 columns) and no shell-completion flags."""
    kwargs.setdefault("cls", HelpGroup)
    kwargs.setdefault("add_completion", False)
    return typer.Typer(rich_markup_mode=None, **kwargs)
