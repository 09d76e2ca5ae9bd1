"""The harness README states the defaults the code has: each documented figure is read from
the README's text and compared with the value the code (or the CLI) actually uses, so a
change to either without the other fails here."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import pytest

from harness.agents import proxy
from harness.cli import run as cli
from harness.sandbox import bwrap as sandbox

from .conftest import REPO

README = " ".join((REPO / "harness" / "README.md").read_text(encoding="utf-8").split())
MiB = 1024 * 1024


def cli_default(param: str) -> Any:
    """The default of a `tbmm run` option, as typer sees it."""
    option = inspect.signature(cli.run_command).parameters[param].default
    return option.default


# documented figure (a regex on the README with its whitespace folded; group 1 is the
# number) -> how the figure maps to the code's unit, and the code's value
DOCUMENTED: dict[str, tuple[str, Callable[[int], Any], Callable[[], Any]]] = {
    "--artifact-max-bytes": (
        r"`--artifact-max-bytes`, default the verifier's own (\d+) MiB cap",
        lambda n: n * MiB,
        lambda: cli_default("artifact_max_bytes"),
    ),
    "--retries": (r"`--retries`, default (\d+),", int, lambda: cli_default("retries")),
    "request body cap": (
        r"Content-Length of at most (\d+) MiB",
        lambda n: n * MiB,
        lambda: proxy.MAX_REQUEST_BYTES,
    ),
    "request read timeout": (
        r"must arrive within (\d+) s",
        float,
        lambda: proxy.READ_TIMEOUT_S,
    ),
    "response cap": (
        r"Responses are cut at (\d+) MiB",
        lambda n: n * MiB,
        lambda: proxy.MAX_RESPONSE_BYTES,
    ),
    "proxy connections": (
        r"at most (\d+) connections at a time \(503",
        int,
        lambda: proxy.MAX_CONNECTIONS,
    ),
    "forwarder connections": (
        r"at most (\d+) connections at a time \(more wait",
        int,
        lambda: proxy.FORWARDER_MAX_CONNECTIONS,
    ),
    "pids.max": (
        r"`pids.max` \(`Limits.pids`, (\d+)\)",
        int,
        lambda: sandbox.Limits(wall_sec=1).pids,
    ),
    "output kept": (r"`OUTPUT_KEEP` = (\d+) MiB", lambda n: n * MiB, lambda: sandbox.OUTPUT_KEEP),
    "/root tmpfs": (
        r"`/root` \((\d+) MiB\)",
        int,
        lambda: sandbox.Limits(wall_sec=1).home_mb,
    ),
}


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_documented_default_is_the_codes(name: str) -> None:
    pattern, unit, actual = DOCUMENTED[name]
    found = re.findall(pattern, README)
    assert found, f"harness/README.md no longer states {name} ({pattern})"
    assert {unit(int(x)) for x in found} == {actual()}, (name, found, actual())
