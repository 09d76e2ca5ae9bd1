"""Shared fixtures: the real suite, and a small synthetic task for hand-computed edge cases."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tbmm.suite.tasks import TASKS_ROOT, Task, load_suite, load_task
from tests.docker_engine import docker_engine  # noqa: F401 - one session-wide private engine

# Tests replay afresh: a cached result would hide what a test changes in a replay module's
# globals (monkeypatch) and repeat a first replay's result. tests/test_replay_cache.py turns
# the cache on where it is the subject; `TBMM_REPLAY_CACHE=memory pytest` runs all with it.
os.environ.setdefault("TBMM_REPLAY_CACHE", "off")

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO.parent / "shared" / "tbmm-source"

SYN_SLUG = "cumcm-2099-a-synthetic"
SYN_ANCHOR = {
    "q": {
        "speed": "2.0",
        "ratio": "1.25",
        "cost": "100",
        "corr": "0.5",
        "count": "7",
        "share": "0.3",
        "big": "1000",
        "raw_index": "1080",
    },
    "rows": [{"p": "0.2", "d": "10"}, {"p": "0.5", "d": "4"}],
}

SCORING = """
[[metric]]
id = "speed"
path = "q.speed"
direction = "higher_is_better"
weight = "2"
band = "0.5"
unit = "m/s"
domain = "nonneg"
rationale = "maximise the speed (synthetic)"

[[metric]]
id = "cost"
path = "q.cost"
direction = "lower_is_better"
weight = "1"
band = "50"
unit = "yuan"
rationale = "minimise the cost (synthetic)"

[[metric]]
id = "corr"
path = "q.corr"
direction = "target_value"
weight = "1"
band = "0.25"
unit = ""
domain = "correlation"
rationale = "estimate the correlation (synthetic)"

[[metric]]
id = "count"
path = "q.count"
direction = "exact_value"
weight = "1"
band = "0"
unit = ""
domain = "count"
rationale = "a discrete choice (synthetic)"

[[metric]]
id = "big"
path = "q.big"
direction = "target_value"
weight = "1"
band = "1"
unit = "t"
rationale = "degenerate band: 1 < 2% of 1000 (synthetic)"

[[metric]]
id = "raw_index"
path = "q.raw_index"
direction = "target_value"
weight = "1"
band = "100"
unit = ""
rationale = "an index with no unit pinned (synthetic)"
exclude = "unit-incomparable: raw index vs normalised [0,1] are both valid"
"""

GATE = """
[anchor]
feasible = true

[[check]]
id = "ratio_ge_one"
form = "threshold"
field = "q.ratio"
op = ">="
bound = "1"
justification = "the head is one of the handles, so the ratio is >= 1"

[[check]]
id = "speed_cap"
form = "product"
factors = ["q.speed", "q.ratio"]
op = "<="
bound = "2.5"
unit = "m/s"
justification = "every handle speed <= 2.5 m/s (synthetic)"

[[check]]
id = "corr_range"
form = "interval"
field = "q.corr"
lo = "-1"
hi = "1"
justification = "a correlation lies in [-1, 1]"

[[check]]
id = "count_int"
form = "count"
field = "q.count"
justification = "a count is a non-negative integer"

[[check]]
id = "probs"
form = "interval"
field = "rows[*].p"
lo = "0"
hi = "1"
justification = "probabilities lie in [0, 1]"

[[check]]
id = "shares"
form = "sum_to"
fields = ["rows[*].p", "q.share"]
total = "1"
tol = "0"
justification = "the shares of a partition sum to 1"

[[check]]
id = "order_cost"
form = "order"
lhs = ["q.speed"]
rhs = ["q.cost"]
op = "<="
justification = "synthetic order between two fields"

[[replay]]
id = "collision"
description = "no collision along the path: needs a kinematic replay"
"""


def make_task(
    root: Path,
    *,
    scoring: str = SCORING,
    gate: str = GATE,
    panel: dict | None = None,
    baseline: dict | None = None,
) -> Task:
    """Write a complete synthetic task folder under root/CUMCM/<slug> and load it."""
    d = root / "CUMCM" / SYN_SLUG
    d.mkdir(parents=True)

    def to_num(x):  # noqa: ANN001, ANN202
        if isinstance(x, dict):
            return "{" + ", ".join(f'"{k}": {to_num(v)}' for k, v in x.items()) + "}"
        if isinstance(x, list):
            return "[" + ", ".join(to_num(v) for v in x) + "]"
        return x

    prov = {
        "paper_id": "SYN1",
        "paper_title": "Synthetic paper",
        "reproduction_level": "algorithmic",
        "reproduction_scope": "synthetic",
        "anchor_source": "none",
        "anchor_sha256": "0" * 64,
    }
    (d / "anchor.json").write_text(
        '{"provenance": ' + json.dumps(prov) + ', "artifact": ' + to_num(SYN_ANCHOR) + "}"
    )
    manifest = {
        "slug": SYN_SLUG,
        "suite": "CUMCM",
        "year": 2025,
        "problem": "A",
        "title": "synthetic",
        "output_path": f"/root/results/{SYN_SLUG}_result.json",
        "attachments": [],
        "figures": [],
        "provenance": prov,
    }
    (d / "manifest.json").write_text(json.dumps(manifest))
    (d / "scoring.toml").write_text(scoring)
    (d / "gate.toml").write_text(gate)
    fields = "\n".join(
        f'[[field]]\npath = "{p}"\ntype = "number"\nunit = ""\nsource = "x.{p}"\ndescription = "synthetic"\n'
        for p in [
            "q.speed",
            "q.ratio",
            "q.cost",
            "q.corr",
            "q.count",
            "q.share",
            "q.big",
            "q.raw_index",
            "rows[0].p",
            "rows[0].d",
            "rows[1].p",
            "rows[1].d",
        ]
    )
    (d / "artifact_map.toml").write_text('final_question = "q"\n' + fields)
    (d / "panel.json").write_text(
        json.dumps(
            panel
            or {
                "papers": [
                    {
                        "paper_id": "SYN1",
                        "title": "Synthetic paper",
                        "source": "synthetic",
                        "role": "anchor",
                        "values": {
                            "speed": "2.0",
                            "cost": "100",
                            "corr": "0.5",
                            "count": "7",
                            "big": "1000",
                        },
                    }
                ]
            }
        )
    )
    (d / "baseline.json").write_text(
        json.dumps(
            baseline
            or {
                "default_pipeline": "p",
                "pipelines": {"p": {"speed": {"value": "1.5", "source": "synthetic"}}},
                "unmapped": {
                    "p": {
                        "cost": "not reported",
                        "corr": "not reported",
                        "count": "not reported",
                        "big": "not reported",
                        "raw_index": "not reported",
                    }
                },
            }
        )
    )
    return load_task(d)


@pytest.fixture
def syn(tmp_path: Path) -> Task:
    return make_task(tmp_path)


@pytest.fixture(scope="session", autouse=True)
def _compiled_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Lite-mode task copies (`tbmm.suite.compiled`) go to a session folder, not ~/.cache (child
    processes inherit it)."""
    import os

    os.environ.setdefault("TBMM_CACHE_DIR", str(tmp_path_factory.mktemp("tbmm-cache")))


@pytest.fixture(scope="session")
def suite() -> list[Task]:
    tasks = load_suite(TASKS_ROOT)
    assert tasks, f"no tasks under {TASKS_ROOT}"
    return tasks


DRAGON_SLUG = "cumcm-2024-a-dragon-dance"


def infeasible_dragon(t: Task) -> bytes:
    """The bench-dragon reference with the source release's old Problem 2/5 values put back
    (head speed 2.00002 > 2 m/s, ratio 0.99999 < 1, stop at 464 s past the spiral centre):
    the suite's standard infeasible artifact, now that every anchor is feasible."""
    doc = json.loads(t.anchor_artifact_bytes())
    doc["q5"] = {"max_head_speed_mps": 2.00002, "max_speed_ratio_when_head_1mps": 0.99999}
    doc["q2"] = {"terminal_time_s": 464.0}
    return (json.dumps(doc, indent=2) + "\n").encode()


def trial_record(**fields: object) -> object:
    """A `harness.runs.store.TrialRecord` of a finished trial with neutral defaults (a run of
    3 s, no artifact, no verdict); `fields` override any of them."""
    from harness.runs.store import TrialRecord

    base: dict[str, object] = {
        "entry_id": "agent@model",
        "agent": "agent",
        "model": "model",
        "task": "t",
        "suite": "CUMCM",
        "seed": 0,
        "backend": "sandbox",
        "started_at": 1.7e9,
        "finished_at": 1.7e9 + 3,
        "duration_s": 3,
        "setup_s": 0,
        "agent_s": 3,
        "verify_s": 0,
        "exit_reason": "completed",
        "detail": "",
        "turns": 0,
        "artifact_status": "missing",
        "artifact_size": None,
        "artifact_sha256": None,
        "artifact": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "requests": 0,
        "cost_usd": None,
    }
    return TrialRecord(**{**base, **fields})


def lean_project_with(tasks: list[Task], dst: Path) -> Path:
    """A copy of the Lean project (its build included) at `dst` holding the certificate
    modules of `tasks` too: a verify certificate imports its task's term from there, so a
    task outside the committed suite (a synthetic one) is verified against a copy."""
    from tbmm.lean.build import copy_project
    from tbmm.lean.certify import install_task_modules

    root = copy_project(dst)
    install_task_modules(tasks, root)
    return root
