"""Tables for the terminal (fitted to its width) or as Markdown (when output is piped).

Why: rich shrinks every column of a too-wide table, which splits numbers and identifiers
mid-token ("1.246266\\n358", "cumcm-20…"). Here each column says what it holds:
* `num`: a number or short code: right-aligned, never wrapped or cut;
* `id`: an identifier (slug, path, entry): never cut; wraps only at `-`, `_`, `.`, `/`
  when it alone is wider than the screen;
* `text`: prose: wraps at spaces.
When the columns do not fit, `optional` columns are dropped (lowest `keep` first) and the
caption says which; text columns wrap. Markdown output (stdout not a terminal, or
`--format md`) has every column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

_BREAK = re.compile(r"(?<=[-_./])")


@dataclass(frozen=True)
class Col:
    header: str
    kind: str = "text"  # num | id | text
    keep: int = 100  # lower = dropped first when the table does not fit; 100 = never
    min_width: int = 8  # for text columns


def _id_wrap(value: str, width: int) -> str:
    """Break an identifier after -, _, . or / so that no line exceeds `width` cells."""
    if cell_len(value) <= width:
        return value
    lines, line = [], ""
    for piece in _BREAK.split(value):
        if line and cell_len(line) + cell_len(piece) > width:
            lines.append(line)
            line = ""
        while cell_len(piece) > width:  # no break point: hard split (rare)
            lines.append(piece[:width])
            piece = piece[width:]
        line += piece
    if line:
        lines.append(line)
    return "\n".join(lines)


def _natural(col: Col, cells: list[str]) -> int:
    """Width in terminal cells (CJK characters take two) the column wants."""
    longest_line = max((cell_len(line) for c in cells for line in c.split("\n")), default=0)
    if col.kind == "text":
        head = max((cell_len(w) for w in col.header.split()), default=0)
        return max(min(longest_line, 60), head, col.min_width)
    return max(longest_line, cell_len(col.header))  # num/id headers do not wrap either


def _chrome(n: int) -> int:
    """Cells a SIMPLE_HEAD table adds to its columns: a space of padding on each side of
    every cell, a (blank) separator between columns, and the two (blank) edges."""
    return 2 * n + (n - 1) + 2


def fit(
    cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int
) -> tuple[list[int], list[str]]:
    """(indices of the columns kept, headers of those dropped) for a screen `width`."""
    keep = list(range(len(cols)))
    dropped: list[str] = []
    cells = [[r[i] for r in rows] for i in range(len(cols))]

    def need(idx: list[int]) -> int:
        total = 0
        for i in idx:
            c = cols[i]
            total += c.min_width if c.kind == "text" else _natural(c, cells[i])
        return total + _chrome(len(idx))

    for i in sorted(range(len(cols)), key=lambda j: cols[j].keep):
        if need(keep) <= width or cols[i].keep >= 100:
            continue
        keep.remove(i)
        dropped.append(cols[i].header)
    return keep, dropped


def render(
    cols: Sequence[Col],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    caption: str = "",
    width: int = 80,
) -> Table:
    """A rich table for a terminal of `width` columns (see the module docstring)."""
    keep, dropped = fit(cols, rows, width)
    cells = {i: [r[i] for r in rows] for i in keep}
    fixed = sum(_natural(cols[i], cells[i]) for i in keep if cols[i].kind != "text")
    room = width - _chrome(len(keep)) - fixed
    n_text = sum(1 for i in keep if cols[i].kind == "text")
    if dropped:
        note = (
            f"columns left out at this width: {', '.join(dropped)} (wider terminal or --format md)"
        )
        caption = f"{caption}\n{note}" if caption else note
    t = Table(
        title=title or None,
        caption=Text(caption) if caption else None,
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        title_justify="left",
        caption_justify="left",
        expand=False,
    )
    id_room = {}
    for i in keep:
        c = cols[i]
        if c.kind == "num":
            t.add_column(Text(c.header), justify="right", no_wrap=True)
        elif c.kind == "id":
            nat = _natural(c, cells[i])
            text_min = sum(cols[j].min_width for j in keep if cols[j].kind == "text")
            limit = max(min(nat, width - _chrome(len(keep)) - (fixed - nat) - text_min), 8)
            id_room[i] = limit
            t.add_column(Text(c.header), no_wrap=True, min_width=min(nat, limit))
        else:
            share = max(room // max(n_text, 1), c.min_width)
            t.add_column(Text(c.header), overflow="fold", max_width=share, min_width=c.min_width)
    for r in rows:
        t.add_row(*(Text(_id_wrap(r[i], id_room[i]) if i in id_room else r[i]) for i in keep))
    return t


def markdown(cols: Sequence[Col], rows: Sequence[Sequence[str]], *, title: str = "") -> str:
    """A GitHub-flavoured Markdown table with every column."""

    def cell(s: str) -> str:
        return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = [f"### {title}", ""] if title else []
    lines.append("| " + " | ".join(cell(c.header) for c in cols) + " |")
    lines.append("|" + "|".join("---:" if c.kind == "num" else "---" for c in cols) + "|")
    lines += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)


def emit(
    console: Console,
    cols: Sequence[Col],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    caption: str = "",
    markdown_out: bool | None = None,
) -> None:
    """Print a table: fitted to the terminal, or Markdown when the console is not one."""
    as_md = (not console.is_terminal) if markdown_out is None else markdown_out
    if as_md:
        text = markdown(cols, rows, title=title)
        if caption:
            text += f"\n\n{caption}"
        console.print(text, markup=False, highlight=False, soft_wrap=True)
        console.print()
        return
    console.print(render(cols, rows, title=title, caption=caption, width=console.width))


def renderable(
    cols: Sequence[Col],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    caption: str = "",
    width: int = 80,
) -> RenderableType:
    return render(cols, rows, title=title, caption=caption, width=width)
