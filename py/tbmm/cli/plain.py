"""rich's console output, byte for byte, without importing rich where it prints no style.

Why: `tbmm verify` prints its verdict through `rich.console.Console.print` (markup, and
lines wrapped at the console's width), and importing rich costs more CPU than a claims-only
verdict. When the output is no terminal (by rich's own rule), rich writes no escape codes,
so what it prints is the markup's text wrapped by its word-wrap rule, which `wrap` restates
for the text it can vouch for: printable characters rich counts as one cell each, no
markup tag but the plain colour ones this package writes, no emoji code, no backslash, tab
or newline. Anything else — a terminal, odd text, an odd width — is printed by rich itself,
so the output never depends on which path ran (tests/test_verify_lite.py compares the two
on generated text).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, TextIO

# rich.markup's tag syntax and rich._emoji_replace's emoji code syntax
_RE_TAGS = re.compile(r"((\\*)\[([a-z#/@][^[]*?)])")
_RE_EMOJI = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
_RE_WORD = re.compile(r"\s*\S+\s*")  # rich._wrap.words
_RE_TRAILING = re.compile(r"\s+$")  # rich.text's rstrip_end
# the colour tags this package writes (a tag rich would style, and text never shows)
STYLES = frozenset(("red", "green", "yellow", "magenta", "dim", "bold"))
# characters rich measures as one cell without its Unicode tables (rich.cells'
# _SINGLE_CELL_UNICODE_RANGES), and a few more it measures as one cell from them
# (tests/test_verify_lite.py checks every one against rich.cells.cell_len)
_RANGES = ((0x20, 0x7E), (0xA0, 0xAC), (0xAE, 0x2FF), (0x370, 0x482), (0x2500, 0x25FC))
EXTRA_SINGLE = "✓✗—–≤≥≠±×÷…→←·−≈∞′″‘’“”⟨⟩•∀∃∈∉⊂⊆∩∪≡√∑∏⊥⁰⁴⁵⁶⁷⁸⁹"
_SINGLE = frozenset([chr(c) for lo, hi in _RANGES for c in range(lo, hi + 1)] + list(EXTRA_SINGLE))
MIN_WIDTH = 20  # below this, rich wraps (rare: a set COLUMNS)


def is_terminal(stream: TextIO) -> bool:
    """Whether rich's Console on `stream` would write escape codes (`Console.is_terminal`
    for a command-line process: TTY_COMPATIBLE, then FORCE_COLOR, then isatty)."""
    env = os.environ
    tty = env.get("TTY_COMPATIBLE", "")
    if tty in ("0", "1"):
        return tty == "1"
    force = env.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False


def console_width() -> int | None:
    """rich's Console width for a command-line process: COLUMNS if all digits, else the
    size of the first terminal among stdin, stdout and stderr, else 80. None where rich's
    own rule has more to it than this (a COLUMNS it would read differently)."""
    columns = os.environ.get("COLUMNS")
    if columns is not None:
        if not (columns.isascii() and columns.isdigit()):
            return None if columns.isdigit() else _terminal_width()
        return int(columns)
    return _terminal_width()


def _terminal_width() -> int:
    for fd in (0, 1, 2):
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        return width or 80
    return 80


def text_of(markup: str) -> str | None:
    """The text rich's markup renders `markup` to, when it is plain enough to vouch for."""
    parts = []
    opened: list[str] = []
    pos = 0
    for m in _RE_TAGS.finditer(markup):
        backslashes, tag = m.group(2), m.group(3)
        name = tag.removeprefix("/")
        if backslashes or name not in STYLES:
            return None
        if tag.startswith("/"):  # rich refuses a closing tag with no open one (MarkupError)
            if name not in opened:
                return None
            del opened[len(opened) - 1 - opened[::-1].index(name)]
        else:
            opened.append(name)
        parts.append(markup[pos : m.start()])
        pos = m.end()
    parts.append(markup[pos:])
    text = "".join(parts)
    if "\\" in text or not _SINGLE.issuperset(text):
        return None
    if any(m.group(2) for m in _RE_EMOJI.finditer(text)):
        return None
    return text


def wrap(text: str, width: int) -> list[str]:
    """rich's word wrap (`Text.wrap` with justify "default", overflow "fold") of one line
    of one-cell characters: break before a word that does not fit, fold a word longer
    than the width, drop trailing whitespace past the width, crop to the width."""
    breaks: list[int] = []
    offset = 0
    for m in _RE_WORD.finditer(text):
        start, word = m.start(), m.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            chunks = [word[i : i + width] for i in range(0, len(word), width)]
            for k, chunk in enumerate(chunks):
                if start:
                    breaks.append(start)
                if k == len(chunks) - 1:
                    offset = len(chunk)
                else:
                    start += len(chunk)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    lines = []
    for a, b in zip([0, *breaks], [*breaks, len(text)], strict=True):
        line = text[a:b]
        if len(line) > width:
            trailing = _RE_TRAILING.search(line)
            if trailing is not None:
                line = line[: len(line) - min(len(trailing.group(0)), len(line) - width)]
        lines.append(line[:width])
    return lines


class Printer:
    """`console.print(markup, highlight=False)` of each line, as rich would print it, to
    stdout; rich itself (imported on first need) for whatever `wrap` cannot vouch for."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.width = None if is_terminal(self.stream) else console_width()
        self._rich: Any = None

    def print(self, markup: str) -> None:
        text = text_of(markup) if self.width is not None and self.width >= MIN_WIDTH else None
        if text is None:
            self._rich_print(markup)
            return
        self.stream.write("".join(line + "\n" for line in wrap(text, self.width or 80)))

    def _rich_print(self, markup: str) -> None:
        if self._rich is None:
            from rich.console import Console

            self._rich = Console(file=self.stream) if self.stream is not sys.stdout else Console()
            self._rich.on_broken_pipe = _closed_pipe  # tbmm.cli.entry.main's rule: exit 0
        self._rich.print(markup, highlight=False)


def _closed_pipe() -> None:
    raise BrokenPipeError


def print_error(msg: str, stream: TextIO | None = None) -> None:
    """`tbmm.cli.root._fail`'s line ("error: MSG" on stderr, red on a terminal, never
    wrapped), printed plainly where rich would print it so."""
    stream = stream or sys.stderr
    # rich drops some control characters, expands tabs and doubles a final backslash
    plain = not is_terminal(stream) and msg.isprintable() and "\\" not in msg
    if plain and not any(m.group(2) for m in _RE_EMOJI.finditer(msg)):
        try:
            stream.write(f"error: {msg}\n")
            stream.flush()
        except BrokenPipeError:  # nobody reads the messages: the command keeps its exit code
            from tbmm.cli.entry import stdout_closed

            stdout_closed(stream)
        return
    from rich.console import Console
    from rich.markup import escape

    err = Console(stderr=True) if stream is sys.stderr else Console(file=stream)

    def closed() -> None:  # as tbmm.cli.root's rule for stderr: quiet, exit code kept
        from tbmm.cli.entry import stdout_closed

        err.quiet = True
        stdout_closed(stream)

    err.on_broken_pipe = closed  # type: ignore[method-assign]
    err.print(f"[red]error:[/red] {escape(msg)}", highlight=False, soft_wrap=True)
