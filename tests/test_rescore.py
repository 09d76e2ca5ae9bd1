"""`tbmm runs rescore`: stale verdicts verified again from the stored artifacts, in place,
the previous verdict kept; current verdicts, error trials and verifier faults untouched."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from harness.runs.rescore import rescore
from harness.runs.runner import _verdict_fields
from harness.runs.store import STATUS_ERROR, Store
from tbmm.core import exact
from tbmm.reports.results import leaderboard
from tbmm.suite.tasks import Task, find_task, load_task
from tbmm.verify import verify_artifact

from .conftest import trial_record

SLUG = "mcm-2025-b-juneau-tourism"


def python_verifier(t: Task, data: bytes | None):  # noqa: ANN201 - the harness's Verifier
    return verify_artifact(t, data, lean=False)


def _commit(store: Store, t: Task, seed: int, data: bytes | None, *, error: bool = False) -> None:
    fields = {} if error else _verdict_fields(python_verifier(t, data))
    rec = trial_record(
        task=t.slug,
        suite=t.suite,
        seed=seed,
        started_at=1.7e9 + seed,
        finished_at=1.7e9 + seed + 3,
        turns=1,
        artifact_status="ok" if data is not None else "missing",
        artifact_size=None if data is None else len(data),
        artifact=data,
        cost_usd=0.0,
        status=STATUS_ERROR if error else "ok",
        error="endpoint_unreachable: test" if error else None,
        **fields,
    )
    blobs = store.scratch_dir()
    if fields:
        (blobs / "verdict.json").write_text(json.dumps(fields["verdict"]))
    store.commit(rec, blobs)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Task]:
    src = find_task(SLUG)
    root = tmp_path / "suite"
    shutil.copytree(src.dir, root / src.suite / SLUG)
    t = load_task(root / src.suite / SLUG)
    db = tmp_path / "r.sqlite"
    store = Store(db)
    _commit(store, t, 0, t.anchor_artifact_bytes())
    _commit(store, t, 1, None)
    _commit(store, t, 2, None, error=True)
    store.close()
    return db, root, t


def _rows(db: Path) -> dict[int, dict]:
    store = Store(db)
    try:
        return {r["seed"]: r for r in store.trials()}
    finally:
        store.close()


@pytest.mark.slow
def test_rescore_replaces_stale_verdicts_and_keeps_the_previous(
    setup: tuple[Path, Path, Task],
) -> None:
    db, root, t = setup
    s = rescore(db, tasks_root=root, verifier=python_verifier)
    assert (s.checked, s.current, s.rescored, s.failed) == (2, 2, [], [])
    before = _rows(db)
    assert before[0]["o_eval_exact"] == "1"
    # the task data changes: a planted check the anchor violates
    m = t.metrics[0]
    with (t.dir / "gate.toml").open("a") as fh:
        fh.write(
            f'\n[[check]]\nid = "planted"\nform = "threshold"\nfield = "{m.path}"\nop = "<="\n'
            f'bound = "{exact.fraction_to_text(m.anchor - 1)}"\n'
            'justification = "planted by the test: the anchor exceeds it"\n'
        )
    lb, _, _ = leaderboard(db, tasks_root=root)
    assert any("tbmm runs rescore" in n for n in lb.notes), lb.notes
    s = rescore(db, tasks_root=root, verifier=python_verifier)
    assert s.current == 0 and s.failed == []
    assert sorted((seed, old, new) for *_, seed, old, new in s.rescored) == [
        (0, "1", "0"),
        (1, "0", "0"),
    ]
    after = _rows(db)
    assert after[0]["gate"] == "fail" and after[0]["o_eval"] == 0.0
    assert after[2]["status"] == "error" and after[2]["verdict"] is None  # left to --resume
    blob = db.parent / "r.runs" / after[0]["blob_dir"]
    assert json.loads((blob / "verdict-previous-1.json").read_text()) == json.loads(
        before[0]["verdict"]
    )
    assert json.loads((blob / "verdict.json").read_text()) == json.loads(after[0]["verdict"])
    lb, _, _ = leaderboard(db, tasks_root=root)
    assert not any("rescore" in n for n in lb.notes), lb.notes
    # nothing stale any more; --all verifies again and keeps a second previous verdict
    assert rescore(db, tasks_root=root, verifier=python_verifier).rescored == []
    s = rescore(db, tasks_root=root, verifier=python_verifier, everything=True, task=SLUG)
    assert len(s.rescored) == 2 and (blob / "verdict-previous-2.json").is_file()


@pytest.mark.slow
def test_a_verifier_fault_keeps_the_stored_verdict(setup: tuple[Path, Path, Task]) -> None:
    db, root, _ = setup
    before = _rows(db)

    def broken(t: Task, data: bytes | None):  # noqa: ANN202
        raise RuntimeError("verifier fault")

    s = rescore(db, tasks_root=root, verifier=broken, everything=True)
    assert len(s.failed) == 2 and all("verifier fault" in f for f in s.failed)
    assert _rows(db) == before


def test_cli_rescore(setup: tuple[Path, Path, Task]) -> None:
    from typer.testing import CliRunner

    from tbmm.cli.root import app

    db, root, _ = setup
    args = ["runs", "rescore", "--db", str(db), "--tasks-root", str(root)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "rescored 0" in r.output and "2 already current" in r.output
    r = CliRunner().invoke(app, [*args, "nope"])
    assert r.exit_code == 2 and "unknown entry" in r.output


@pytest.mark.slow
def test_default_verifier_rescores_in_one_lean_batch(
    setup: tuple[Path, Path, Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default verifier (Lean included) checks a chunk of trials in one Lean run and
    stores what `tbmm.verify.verify_artifact` would."""
    verify_module = sys.modules["tbmm.verify"]  # `tbmm.verify` is also an API function
    db, root, t = setup
    calls: list[int] = []
    real = verify_module.verify_batch

    def counting(items, **kw):  # noqa: ANN001, ANN003, ANN202
        calls.append(len(items))
        return real(items, **kw)

    monkeypatch.setattr(verify_module, "verify_batch", counting)
    s = rescore(db, tasks_root=root, everything=True)
    assert s.failed == [] and len(s.rescored) == 2 and calls == [2]
    rows = _rows(db)
    want = verify_artifact(load_task(t.dir), t.anchor_artifact_bytes(), lean=True)
    got = json.loads(rows[0]["verdict"])
    assert (got["o_eval_exact"], got["gate"], got["lean"]) == (
        want.o_eval_exact,
        want.gate,
        want.lean,
    )
    assert got["lean"] not in (None, "skipped")


@pytest.mark.slow
def test_rescore_never_scores_a_rejected_request_nor_replaces_with_no_verdict(
    tmp_path: Path,
) -> None:
    """A trial that ended `agent_request_rejected` is verified as missing (its stored artifact,
    the right answer here, is not scored); a verification that reaches no verdict (exit
    code 3) keeps the stored verdict and is listed as not rescored."""
    src = find_task(SLUG)
    root = tmp_path / "suite"
    shutil.copytree(src.dir, root / src.suite / SLUG)
    t = load_task(root / src.suite / SLUG)
    db = tmp_path / "r.sqlite"
    store = Store(db)
    good = t.anchor_artifact_bytes()
    fields = _verdict_fields(python_verifier(t, None))
    rec = trial_record(
        task=t.slug, suite=t.suite, seed=0, exit_reason="agent_request_rejected",
        artifact_status="ok", artifact=good, artifact_size=len(good), **fields,
    )  # fmt: skip
    store.commit(rec, store.scratch_dir())
    store.close()
    seen: list[bytes | None] = []

    def recording(task: Task, data: bytes | None):  # noqa: ANN202
        seen.append(data)
        return python_verifier(task, data)

    s = rescore(db, tasks_root=root, verifier=recording, everything=True)
    assert seen == [None] and len(s.rescored) == 1 and s.rescored[0][-1] == "0"

    def no_verdict(task: Task, data: bytes | None) -> dict:
        return {"exit_code": 3, "status": "budget_exceeded", "error": "over budget"}

    before = _rows(db)[0]["verdict"]
    s = rescore(db, tasks_root=root, verifier=no_verdict, everything=True)
    assert s.rescored == [] and len(s.failed) == 1
    assert "no_verdict: budget_exceeded: over budget" in s.failed[0]
    assert _rows(db)[0]["verdict"] == before
