"""Batch paths amortise Lean's start-up: one Lean process per batch, counted where processes
start (`subprocess.Popen`, which `subprocess.run` uses too), never timed.

The batch paths: `tbmm verify --batch` (`tbmm.verify.verify_batch`), `tbmm serve`
(`verify_items`: artifacts and completions asking for Lean share one run), `tbmm.verify_many`,
and the harness's `verify_each` (what `tbmm runs rescore` and Harbor ingest call per chunk).
Each is given N artifacts, some feasible and one gate-breaking, and must start exactly one
Lean certificate check (and no library compilation once the library is built) — as many
as a single artifact takes.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

import tbmm
from tbmm.suite.tasks import Task
from tbmm.tooling.bench import nudged

pytestmark = pytest.mark.slow  # each case is a real Lean run (10-40 s on a loaded machine)

SLUG = "mcm-2025-b-juneau-tourism"


class Launches:
    """The argument lists of every child process started while installed."""

    def __init__(self) -> None:
        self.args: list[list[str]] = []

    def checks(self) -> int:
        """Lean certificate checks (`tbmm.lean.build.check_module`: `-DmaxErrors=0`)."""
        return sum(1 for a in self.args if "-DmaxErrors=0" in a)

    def compiles(self) -> int:
        """Lean module compilations (`-o X.olean`)."""
        return sum(1 for a in self.args if "-o" in a)


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Iterator[Launches]:
    seen = Launches()
    real = subprocess.Popen

    class Counting(real):  # type: ignore[misc,valid-type]
        def __init__(self, args, *a, **k) -> None:  # noqa: ANN001, ANN002, ANN003
            seen.args.append([args] if isinstance(args, str) else [str(x) for x in args])
            super().__init__(args, *a, **k)

    monkeypatch.setattr(subprocess, "Popen", Counting)
    yield seen


@pytest.fixture(scope="module")
def task() -> Task:
    t = tbmm.load_task(SLUG)
    # build whatever the certificate imports once, outside the counted calls
    assert tbmm.verify(t, t.anchor_artifact_bytes(), lean=True).lean == "ok"
    return t


def _artifacts(t: Task, n: int) -> list[bytes]:
    """n distinct artifacts: the anchor nudged (feasible) and one breaking the gate."""
    out = nudged(t, n - 1)
    doc = json.loads(t.anchor_artifact_bytes())
    doc["policy"]["daily_cap"] = -5  # outside the statement's range: the gate fails
    return [*out, json.dumps(doc).encode()]


@pytest.mark.parametrize("n", [1, 4])
def test_verify_batch_starts_one_lean_run(task: Task, launches: Launches, n: int) -> None:
    from tbmm.verify import verify_batch

    reports = verify_batch([(task, a) for a in _artifacts(task, n)])
    assert [r.lean for r in reports] == ["ok"] * (n - 1) + ["fail"]
    assert (launches.checks(), launches.compiles()) == (1, 0), launches.args


def test_serve_checks_artifacts_and_completions_in_one_lean_run(
    task: Task, launches: Launches
) -> None:
    """A request mixing artifacts and completions that ask for Lean: one run (these were
    two runs, one per kind, before)."""
    from tbmm.integrations.bodyscan import verify_body
    from tbmm.integrations.serve import verify_items

    arts = _artifacts(task, 3)
    items = [
        {"task": task.slug, "artifact": json.loads(arts[0]), "lean": True},
        {"task": task.slug, "completion": "```json\n" + arts[1].decode() + "\n```", "lean": True},
        {"task": task.slug, "artifact": json.loads(arts[2]), "lean": True},
        {"task": task.slug, "artifact": json.loads(arts[0])},  # no Lean asked: no Lean run
    ]
    body = json.dumps({"items": items}).encode()
    scanned, reward = verify_body(body, max_items=10)
    out = verify_items(body, scanned, reward)
    assert [v["lean"] for v in out["verdicts"]] == ["ok", "ok", "fail", "skipped"]
    assert (launches.checks(), launches.compiles()) == (1, 0), launches.args


def test_verify_many_mixed_completion_flags_match_one_at_a_time(task: Task) -> None:
    """Per-item completion flags give each item the verdict its own call gives."""
    arts = _artifacts(task, 2)
    items = [(task, arts[0].decode()), (task, "```json\n" + arts[1].decode() + "\n```")]
    many = tbmm.verify_many(items, completions=[False, True])
    alone = [tbmm.verify(task, items[0][1]), tbmm.verify_completion(task, items[1][1])]
    assert [v.model_dump() for v in many] == [v.model_dump() for v in alone]
    with pytest.raises(ValueError, match="flags"):
        tbmm.verify_many(items, completions=[True])


def test_harness_verify_each_starts_one_lean_run(task: Task, launches: Launches) -> None:
    """`verify_each` with the default verifier: what `tbmm runs rescore` and Harbor ingest
    run per chunk of trials."""
    from harness.runs.runner import verify_each
    from tbmm.verify import verify_artifact

    reports = verify_each([(task, a) for a in _artifacts(task, 3)], verify_artifact)
    assert [r.lean for r in reports] == ["ok", "ok", "fail"]
    assert (launches.checks(), launches.compiles()) == (1, 0), launches.args
