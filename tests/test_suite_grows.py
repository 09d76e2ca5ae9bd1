"""Adding a task is data plus `tbmm tasks build` (and `tbmm lean certify` for its Lean
module): a synthetic extra task, in a new contest
folder the code has never heard of, goes through build, validate, a kernel-checked
certificate and an oracle trial in the sandbox with zero code changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tbmm.lean.certify import check_artifact
from tbmm.suite.tasks import TASKS_ROOT, load_suite
from tbmm.tooling.build import build_all
from tbmm.tooling.validate import validate_all

from .conftest import lean_project_with

SLUG = "xcm-2031-d-toy-tank"

INSTRUCTION = """<!-- synthetic -->

# Original Contest Problem

## Statement
A tank of volume 10 m³ is filled at a constant rate. Find the fill time at 2 m³/min and
the fastest rate that keeps the pressure below its limit.

# Required Benchmark Artifact
(old block, replaced by the build)
"""

TASK_TOML = """[task]
name = "old/xcm-2031-d"
description = "XCM 2031 D: toy tank filling"
"""

EXPECTED = {"result": {"fill_time_min": 5.0, "max_rate_m3_min": 2.5, "volume_m3": 10}}

ARTIFACT_MAP = """final_question = "q2"

[[field]]
path = "q1.fill_time_min"
type = "number"
unit = "min"
source = "result.fill_time_min"
description = "time to fill the tank at 2 m3/min"

[[field]]
path = "q2.max_rate_m3_min"
type = "number"
unit = "m3/min"
source = "result.max_rate_m3_min"
description = "fastest admissible fill rate"

[[field]]
path = "q1.volume_m3"
type = "number"
unit = "m3"
source = "result.volume_m3"
description = "tank volume"
"""

SCORING = """[[metric]]
id = "fill_time"
path = "q1.fill_time_min"
direction = "target_value"
weight = "1"
band = "1"
unit = "min"
rationale = "a computed quantity: closest wins"

[metric.reference]
kind = "computed"
source = "volume / rate = 10 / 2"

[[metric]]
id = "max_rate"
path = "q2.max_rate_m3_min"
direction = "higher_is_better"
weight = "1"
band = "0.5"
unit = "m3/min"
domain = "nonneg"
rationale = "the fastest admissible rate: more is better, bounded by the gate"

[metric.reference]
kind = "computed"
source = "the pressure limit of the statement"
"""

GATE = """[anchor]
feasible = true

[[check]]
id = "rate_limit"
form = "threshold"
field = "q2.max_rate_m3_min"
op = "<="
bound = "2.5"
unit = "m3/min"
justification = "the statement's pressure limit caps the rate at 2.5 m3/min"

[[check]]
id = "fill_time_consistent"
form = "product"
factors = ["q1.fill_time_min"]
coef = "2"
op = "<="
bound_factors = ["q1.volume_m3"]
unit = "m3"
justification = "at 2 m3/min the fill time times the rate cannot exceed the volume"
"""


def _source_release(root: Path) -> Path:
    src = root / "tasks" / "XCM" / SLUG
    (src / "environment" / "data" / "repo").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "instruction.md").write_text(INSTRUCTION, encoding="utf-8")
    (src / "task.toml").write_text(TASK_TOML, encoding="utf-8")
    (src / "environment" / "data" / "repo" / "tank.csv").write_text("volume_m3\n10\n")
    (src / "tests" / "expected_result.json").write_text(json.dumps(EXPECTED))
    return root


def _suite_copy(tmp: Path) -> Path:
    out = tmp / "tasks"
    shutil.copytree(TASKS_ROOT, out)
    dst = out / "XCM" / SLUG
    dst.mkdir(parents=True)
    for name, text in (
        ("artifact_map.toml", ARTIFACT_MAP),
        ("scoring.toml", SCORING),
        ("gate.toml", GATE),
    ):
        (dst / name).write_text(text, encoding="utf-8")
    panel = {
        "papers": [
            {
                "paper_id": "T1",
                "title": "toy",
                "source": "synthetic",
                "role": "anchor",
                "values": {"fill_time": "5.0", "max_rate": "2.5"},
            }
        ]
    }
    (dst / "panel.json").write_text(json.dumps(panel))
    baseline = {
        "default_pipeline": "p",
        "pipelines": {"p": {"fill_time": {"value": "4", "source": "synthetic"}}},
        "unmapped": {"p": {"max_rate": "not reported"}},
    }
    (dst / "baseline.json").write_text(json.dumps(baseline))
    return out


@pytest.mark.slow
def test_a_new_task_in_a_new_suite_needs_no_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _source_release(tmp_path / "source")
    tasks_root = _suite_copy(tmp_path)
    built = build_all(source, tasks_root, only={SLUG})
    assert [b.slug for b in built] == [SLUG]

    n, problems = validate_all(tasks_root)
    suite = load_suite(tasks_root)
    assert n == len(suite) and SLUG in {t.slug for t in suite}
    assert not problems, "\n".join(f"{p.task} [{p.check}] {p.message}" for p in problems)

    task = next(t for t in suite if t.slug == SLUG)
    assert task.suite == "XCM" and task.manifest.year == 2031 and task.manifest.problem == "D"
    assert "tank of volume" in task.instruction and task.output_path in task.instruction

    # `tbmm lean certify` writes the new task's module (here into a copy of the project,
    # which every verification of this test then uses)
    from tbmm.lean import build

    lean_root = lean_project_with([task], tmp_path / "lean")
    monkeypatch.setattr(build, "project_root", lambda start=None: lean_root)
    lean = check_artifact(task, task.anchor_artifact)
    assert lean.ok, lean.failing

    if shutil.which("bwrap") is None:
        pytest.skip("bwrap (Debian package bubblewrap) is not installed: .ci/run installs it")
    from harness.agents.registry import OracleAgent
    from harness.runs.runner import run_sweep
    from harness.sandbox.backends import choose_backend
    from tbmm.reports.results import load_rows

    backend, _ = choose_backend("sandbox")
    db = tmp_path / "oracle.sqlite"
    summary = run_sweep(OracleAgent(), None, [task], 1, backend, 1, db, False, progress=False)
    assert (summary.done, summary.failed) == (1, 0)
    rows, _, _ = load_rows(db, tasks_root)
    (row,) = rows
    assert row.task == SLUG and row.status == "scored" and row.o_eval == 1
