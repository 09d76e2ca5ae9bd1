"""A verdict is a function of (task, artifact) alone: never of the machine's load.

Budgets count CPU time (the verifying thread's, and RLIMIT_CPU on the Lean child), not the
wall clock, so the anchors and the adversarial corpus verified on a quiet machine and
again beside many busy processes must give byte-identical reports, none of them
budget_exceeded. Under the wall-clock budgets this replaced, the SiC anchor (2 s) ended
budget_exceeded at O-Eval 0 on a busy machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tbmm.core import exact
from tbmm.suite.tasks import Task
from tbmm.verdict import exploits
from tbmm.verify import verify_artifact, verify_batch

pytestmark = pytest.mark.slow

# the heliostat replay costs ~1 s of CPU per design: its anchor is in the corpus, its
# generated attempts (each another full field, ~2 s of CPU) are not, to keep the test's cost
HEAVY = {"cumcm-2023-a-heliostat-field"}
SPINNERS_PER_CORE = 3  # a load average of about 4 per core: the loads that flipped verdicts


def corpus(suite: list[Task]) -> list[tuple[Task, str, bytes]]:
    """Every task's anchor and its generated adversarial artifacts (`tbmm tasks exploits`)."""
    out = []
    for t in suite:
        out.append((t, "anchor", t.anchor_artifact_bytes()))
        if t.slug in HEAVY:
            continue
        for kind, name, doc in exploits.attempts(t):
            out.append((t, f"{kind}:{name}", exact.dumps(doc).encode()))
    return out


def canonical(rep: object) -> str:
    return json.dumps(rep.model_dump(mode="json"), sort_keys=True)  # type: ignore[attr-defined]


@contextlib.contextmanager
def busy(n: int) -> Iterator[None]:
    """`n` processes spinning on the CPU at our own priority for the duration."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(n)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _python_verdicts(items: list[tuple[Task, str, bytes]]) -> dict[str, str]:
    return {
        f"{t.slug}/{name}": canonical(verify_artifact(t, b, lean=False)) for t, name, b in items
    }


def test_verdicts_are_the_same_idle_and_under_heavy_load(suite: list[Task]) -> None:
    items = corpus(suite)
    quiet = _python_verdicts(items)
    with busy(SPINNERS_PER_CORE * (os.cpu_count() or 1)):
        loaded = _python_verdicts(items)
    over = [k for k, v in quiet.items() if '"budget_exceeded"' in v]
    assert not over, over
    differ = [k for k in quiet if quiet[k] != loaded[k]]
    assert not differ, differ[:5]


# anchors whose Lean checks are cheap (a second or less of CPU each), one of them replayed
# with a 2 s budget that a loaded machine used to exceed (SiC); the costly Lean replays
# (crop planting, heliostat) are covered by the CPU-limit test in test_lean_verdict.py
LEAN_SAMPLE = 5


def test_lean_verdicts_are_the_same_idle_and_under_heavy_load(suite: list[Task]) -> None:
    """Anchors through the Lean kernel (one batch run) quiet and loaded: the kernel
    check's limit is its own CPU time, so load cannot turn a verdict into no verdict."""
    sic = [t for t in suite if t.slug == "cumcm-2025-b-sic-thickness"]
    cheap = [t for t in suite if t.replay_spec is None][: LEAN_SAMPLE - len(sic)]
    items = [(t, t.anchor_artifact_bytes()) for t in sic + cheap]
    quiet = [canonical(r) for r in verify_batch(items)]
    with busy(SPINNERS_PER_CORE * (os.cpu_count() or 1)):
        loaded = [canonical(r) for r in verify_batch(items)]
    assert all('"status": "scored"' in q for q in quiet), [
        t.slug for (t, _), q in zip(items, quiet, strict=True) if '"status": "scored"' not in q
    ]
    assert quiet == loaded
