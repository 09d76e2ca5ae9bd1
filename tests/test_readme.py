"""README's commands and examples are true: the two commands open it, and its Python API
example runs as written."""

from __future__ import annotations

import re

from .conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.S)
    assert first is not None
    lines = [ln.split("#")[0].strip() for ln in first.group(1).strip().splitlines()]
    assert lines == ["uv run tbmm run --agent oracle --resume", "uv run pytest"]


def test_python_api_example_runs() -> None:
    section = README.split("## Python API and RL rewards", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    exec(compile(code.group(1), "README.md", "exec"), {})  # noqa: S102 - our own README
