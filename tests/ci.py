"""Skips for something absent on the machine, which CI (.ci/run) must not take.

`.ci/run` installs every tool these tests need (npm packages, dockerd, a Python 3.12 for
Harbor's models) and sets TBMM_CI=1; there a missing tool is a broken CI setup, so the test
fails with the reason instead of skipping. Elsewhere it skips, printing why.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def absent(reason: str) -> NoReturn:
    """Skip (or, under .ci/run, fail) because `reason` is missing on this machine."""
    if os.environ.get("TBMM_CI") == "1":
        pytest.fail(f"TBMM_CI=1 but {reason}: .ci/run should have provided it", pytrace=False)
    print(f"SKIP reason: {reason}")
    pytest.skip(reason)
