"""The Jinja2 environment shared by the HTML report and `tbmm view`: one page skeleton
(`templates/common/layout.html`), one style, one set of partials (verdicts, badges), so the
two show a verdict the same way. Autoescaping is on: every `{{ }}` is HTML-escaped, in text
and attribute values; only the generated @font-face rule is marked safe."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

TEMPLATES = Path(__file__).parent / "templates"
WRAP_AFTER = ("/", ".", "_", "]")


def wrap_path(s: Any) -> Any:
    """A field path or file path that may break after its separators: escaped first, then
    <wbr> (so a table column is as narrow as the longest segment, never one letter)."""
    from markupsafe import Markup, escape

    out = str(escape("" if s is None else s))
    for sep in WRAP_AFTER:
        out = out.replace(sep, sep + "<wbr>")
    return Markup(out)


def badge_class(state: Any) -> str:
    """A CSS class from a status word: lower-case letters and underscores only."""
    return re.sub(r"[^a-z_]", "", str(state).lower()) or "skipped"


@cache
def environment() -> Any:
    """The shared environment (templates are looked up by path under `templates/`)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=False,
        keep_trailing_newline=True,
    )
    env.filters["q"] = lambda s: quote(str(s), safe="")
    env.filters["wrap"] = wrap_path
    env.filters["badge_class"] = badge_class
    return env
