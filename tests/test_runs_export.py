"""`tbmm runs export` / `tbmm runs import`: one file per entry, read back byte for byte."""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.runs.export import LOCAL_COLUMNS, SCHEMA_VERSION, TRIAL_COLUMNS, _canonical
from harness.runs.store import SCHEMA, Store, trial_files
from tbmm.cli.root import app
from tests.conftest import DRAGON_SLUG
from tests.runs_store import ENTRY_A, ENTRY_B, FIGURE, PD_SLUG, build_store

runner = CliRunner()


@pytest.fixture(scope="module")
def tasks() -> dict[str, Any]:
    from tbmm.suite.tasks import load_suite

    return {t.slug: t for t in load_suite()}


@pytest.fixture
def src(tmp_path: Path, tasks: dict[str, Any]) -> Path:
    db = tmp_path / "src" / "tbmm.sqlite"
    build_store(db, tasks)
    return db


def _export(db: Path, entry: str, out: Path) -> Path:
    r = runner.invoke(app, ["runs", "export", entry, "--db", str(db), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


def _import(f: Path, db: Path) -> Any:
    r = runner.invoke(app, ["runs", "import", str(f), "--db", str(db)])
    r.text = " ".join(r.output.split())  # type: ignore[attr-defined]
    return r


def _rows(db: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    s = Store(db)
    try:
        return {(t["entry_id"], t["task"], t["seed"]): t for t in s.trials()}
    finally:
        s.close()


def _files(db: Path) -> dict[tuple[str, str, int], dict[str, bytes]]:
    s = Store(db)
    try:
        return {
            (t["entry_id"], t["task"], t["seed"]): {
                n: p.read_bytes() for n, p in trial_files(s.runs_dir, t).items()
            }
            for t in s.trials()
        }
    finally:
        s.close()


def _leaderboard(db: Path) -> Any:
    from tbmm.reports.leaderboard_render import to_json
    from tbmm.reports.results import leaderboard

    return to_json(leaderboard(db)[0])


def test_round_trip_is_byte_identical(src: Path, tmp_path: Path) -> None:
    """Every kind of trial (scored, gate_failed, missing artifact, infrastructure error):
    verdict text, artifact, every column but the local ids, every file; same leaderboard."""
    fa = _export(src, ENTRY_A, tmp_path / "a.json.gz")
    fb = _export(src, "oracle@", tmp_path / "b.json")  # a unique prefix names the entry too
    assert fa.read_bytes()[:2] == b"\x1f\x8b" and fb.read_bytes()[:1] == b"{"
    dst = tmp_path / "dst" / "fresh.sqlite"
    for f in (fa, fb):
        r = _import(f, dst)
        assert r.exit_code == 0, r.output
    before, after = _rows(src), _rows(dst)
    assert set(before) == set(after) and len(before) == 5
    statuses = {json.loads(t["verdict"])["status"] for t in before.values() if t["verdict"]}
    assert statuses == {"scored", "gate_failed", "missing_artifact"}
    assert any(t["status"] == "error" for t in before.values())
    for k, old in before.items():
        new = after[k]
        assert new["verdict"] == old["verdict"]  # the stored JSON text, byte for byte
        assert new["artifact"] == old["artifact"]
        for col in old:
            if col not in ("id", "blob_dir"):
                assert new[col] == old[col], (k, col)
    assert _files(dst) == _files(src)
    assert _files(dst)[(ENTRY_A, PD_SLUG, 0)]["figure.png"] == FIGURE
    assert _leaderboard(dst) == _leaderboard(src)
    s1, s2 = Store(src), Store(dst)
    assert s1.entries() == s2.entries()  # names, settings, created_at
    s1.close()
    s2.close()


def test_export_is_deterministic_and_reimport_is_a_no_op(src: Path, tmp_path: Path) -> None:
    f1 = _export(src, ENTRY_A, tmp_path / "1.json.gz")
    f2 = _export(src, ENTRY_A, tmp_path / "2.json.gz")
    assert f1.read_bytes() == f2.read_bytes()
    dst = tmp_path / "dst.sqlite"
    assert _import(f1, dst).exit_code == 0
    files = _files(dst)
    r = _import(f1, dst)
    assert r.exit_code == 0, r.output
    assert "imported 0 trial(s)" in r.text and "4 already present" in r.text
    assert len(_rows(dst)) == 4 and _files(dst) == files
    # importing into the store it came from is a no-op too
    r = _import(f1, src)
    assert r.exit_code == 0 and "4 already present" in r.text


def _doc(f: Path) -> dict[str, Any]:
    raw = f.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def _write(doc: dict[str, Any], f: Path, *, redigest: bool = True) -> Path:
    """An attacker who edits the file and recomputes the document digest."""
    if redigest:
        doc["digest"] = hashlib.sha256(_canonical(doc)).hexdigest()
    f.write_text(json.dumps(doc))
    return f


def _untouched(db: Path) -> None:
    """The target store holds nothing after a refused import (no rows, no blob folders)."""
    if not db.exists():
        return
    s = Store(db)
    assert s.entries() == [] and s.trials() == []
    leftovers = [p for p in s.runs_dir.rglob("*") if p.is_file()]
    s.close()
    assert leftovers == []


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d.update(schema_version=3), "schema_version 3; this tbmm reads"),
        (lambda d: d.update(schema_version=True), "schema_version True; this tbmm reads"),
        (
            lambda d: d["entry"].update(
                stopped={"reason": "x", "not_started": [["../x", 0]], "budget_usd": 1.0}
            ),
            "unsafe task slug",
        ),  # fmt: skip
        (
            lambda d: d["entry"].update(stopped={"reason": "x", "not_started": ["t"]}),
            "does not follow the export schema",
        ),
        (lambda d: d["entry"].pop("stopped"), "does not follow the export schema"),
        (
            lambda d: d.update(schema_version=1) or d["entry"].pop("spent_usd"),
            "schema_version 1 has no entry.stopped",
        ),
        (lambda d: d.update(format="other"), "not a tbmm runs export"),
        (lambda d: d["trials"][0].update(task="../../escape"), "unsafe task slug"),
        (
            lambda d: d["trials"][0]["files"].update(
                {"../x.txt": d["trials"][0]["files"]["stdout.txt"]}
            ),
            "unsafe file name",
        ),
        (
            lambda d: d["trials"][0]["files"]["stdout.txt"].update(data="forged"),
            "does not match its recorded size/sha256",
        ),
        (
            lambda d: d["trials"][0]["artifact"].update(data="{}"),
            "does not match its recorded size/sha256",
        ),
        (lambda d: d["trials"][1].update(verdict="{not json"), "verdict is not JSON"),
        (lambda d: d["trials"].append(d["trials"][0]), "appears twice"),
        (lambda d: d["trials"][0].update(seed="zero"), "does not follow the export schema"),
    ],
)
def test_import_refuses_a_bad_file(src: Path, tmp_path: Path, edit: Any, message: str) -> None:
    """Each edit, digest recomputed so only the deeper check can catch it: a clear error,
    exit 2, and the target store untouched."""
    doc = _doc(_export(src, ENTRY_A, tmp_path / "a.json.gz"))
    edit(doc)
    f = _write(doc, tmp_path / "bad.json")
    dst = tmp_path / "dst.sqlite"
    r = _import(f, dst)
    assert r.exit_code == 2, r.output
    assert message in r.text, r.output
    _untouched(dst)


def test_import_refuses_an_altered_file_by_its_digest(src: Path, tmp_path: Path) -> None:
    doc = _doc(_export(src, ENTRY_A, tmp_path / "a.json.gz"))
    v = json.loads(doc["trials"][1]["verdict"])
    v["status"] = "scored"  # promote the gate-failed trial, leave the digest as it was
    doc["trials"][1]["verdict"] = json.dumps(v)
    dst = tmp_path / "dst.sqlite"
    r = _import(_write(doc, tmp_path / "bad.json", redigest=False), dst)
    assert r.exit_code == 2 and "digest mismatch" in r.text
    _untouched(dst)
    (tmp_path / "cut.json.gz").write_bytes((tmp_path / "a.json.gz").read_bytes()[:-100])
    r = _import(tmp_path / "cut.json.gz", dst)
    assert r.exit_code == 2 and "cannot read" in r.text
    _untouched(dst)


def test_a_conflicting_trial_aborts_the_whole_import(src: Path, tmp_path: Path) -> None:
    """The target holds the same (entry, task, seed) with another result: nothing of the
    file goes in (one transaction), and the target's own trial and files are kept."""
    f = _export(src, ENTRY_A, tmp_path / "a.json.gz")
    doc = _doc(f)
    # the last trial of the file conflicts, so the earlier ones were already inserted
    other = dict(doc)
    other["trials"] = [t for t in doc["trials"] if (t["task"], t["seed"]) == (PD_SLUG, 1)]
    other["trials"][0] = {**other["trials"][0], "started_at": 1.0}
    dst = tmp_path / "dst.sqlite"
    assert _import(_write(other, tmp_path / "other.json"), dst).exit_code == 0
    before_rows, before_files = _rows(dst), _files(dst)
    r = _import(f, dst)
    assert r.exit_code == 2 and "already stored with another result" in r.text
    assert _rows(dst) == before_rows and _files(dst) == before_files
    s = Store(dst)
    dirs = sorted(p.relative_to(s.runs_dir) for p in s.runs_dir.glob("*/*/*") if p.is_dir())
    s.close()
    assert [str(d) for d in dirs] == [f"llm@model-x_0badf00d/{PD_SLUG}/1"]


# ------------------------------------------------------------- the entry's budget state

STOP = {
    "reason": "budget: the entry had spent 0.2000 USD, reaching --max-cost 0.2 USD; "
    "2 of 6 planned trial(s) not started",
    "not_started": [[DRAGON_SLUG, 2], [PD_SLUG, 2]],
    "budget_usd": 0.2,
}


def _stop_entry_a(db: Path, spent: float = 0.2) -> None:
    """Entry A as a --max-cost budget leaves it: the spend recorded (above the stored
    trials' 0.125: a replaced error trial was paid for too) and the stop record."""
    s = Store(db)
    s.set_stopped(ENTRY_A, STOP)
    s.close()
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE entries SET spent_usd = ? WHERE entry_id = ?", (spent, ENTRY_A))
    con.close()


def _cli(*args: str) -> str:
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.stdout


def _partial_everywhere(db: Path) -> None:
    """Entry A is partial with its reason in `runs show` (text, JSON) and the leaderboard
    (JSON, CSV, Markdown); entry B is complete."""
    shown = json.loads(_cli("runs", "show", ENTRY_A, "--db", str(db), "--json"))
    assert shown["partial"] is True and shown["stopped"]["reason"] == STOP["reason"]
    assert shown["stopped"]["not_started"] == STOP["not_started"]
    assert shown["spent_usd"] == pytest.approx(0.2)
    text = " ".join(_cli("runs", "show", ENTRY_A, "--db", str(db)).split())
    assert f"partial: {STOP['reason']}; 2 trial(s) still not run" in text
    assert "replaced error trials included: $0.2000" in text
    board = json.loads(_cli("leaderboard", "--db", str(db), "--format", "json"))
    rows = {e["entry"]: e for e in board["entries"]}
    assert rows[ENTRY_A]["partial"] and rows[ENTRY_A]["stopped"] == STOP["reason"]
    assert rows[ENTRY_B]["stopped"] is None
    assert any(n.startswith(f"{ENTRY_A} is partial: {STOP['reason']}") for n in board["notes"])
    import csv
    import io

    recs = {r["entry"]: r for r in csv.DictReader(io.StringIO(_cli(
        "leaderboard", "--db", str(db), "--format", "csv")))}  # fmt: skip
    assert recs[ENTRY_A]["partial"] == "yes" and recs[ENTRY_A]["stopped"] == STOP["reason"]
    assert recs[ENTRY_B]["stopped"] == ""
    md = _cli("leaderboard", "--db", str(db), "--format", "md")
    assert "(partial)" in md and f"{ENTRY_A} is partial: {STOP['reason']}" in md


def test_budget_state_round_trips(src: Path, tmp_path: Path) -> None:
    """An entry a --max-cost budget stopped: its spend and stop record travel with it, so
    the imported entry is partial with the reason everywhere the source shows it."""
    _stop_entry_a(src)
    _partial_everywhere(src)
    f = _export(src, ENTRY_A, tmp_path / "a.json.gz")
    doc = _doc(f)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["entry"]["spent_usd"] == 0.2 and doc["entry"]["stopped"] == STOP
    assert _doc(_export(src, ENTRY_B, tmp_path / "b.json"))["entry"]["stopped"] is None
    dst = tmp_path / "dst.sqlite"
    r = _import(f, dst)
    assert r.exit_code == 0, r.output
    assert f"partial: {STOP['reason']}; 2 trial(s) still not run" in r.text
    assert _import(tmp_path / "b.json", dst).exit_code == 0
    _partial_everywhere(dst)
    s1, s2 = Store(src), Store(dst)
    assert s1.entries() == s2.entries() and s2.spent(ENTRY_A) == pytest.approx(0.2)
    assert s2.stopped() == {ENTRY_A: STOP}
    s1.close()
    s2.close()
    assert _leaderboard(dst) == _leaderboard(src)
    from fastapi.testclient import TestClient

    from tbmm.reports.viewer import create_app

    page = TestClient(create_app(dst), base_url="http://127.0.0.1").get(
        "/entry", params={"id": ENTRY_A}
    )
    assert page.status_code == 200
    assert f"partial: {STOP['reason']}; 2 trial(s) not started" in page.text
    # importing it again changes nothing
    assert _import(f, dst).exit_code == 0
    s2 = Store(dst)
    assert s2.spent(ENTRY_A) == pytest.approx(0.2) and s2.stopped() == {ENTRY_A: STOP}
    s2.close()


def test_a_version_1_file_imports_without_budget_state(src: Path, tmp_path: Path) -> None:
    """A file written before the budget state was exported: it still imports, the entry's
    spend is its trials' costs and it is not stopped, and the import says so."""
    _stop_entry_a(src)
    doc = _doc(_export(src, ENTRY_A, tmp_path / "a.json.gz"))
    doc["schema_version"] = 1
    for key in ("spent_usd", "stopped"):
        del doc["entry"][key]
    dst = tmp_path / "dst.sqlite"
    r = _import(_write(doc, tmp_path / "v1.json"), dst)
    assert r.exit_code == 0, r.output
    assert "schema_version 1, which carries no budget state" in r.text
    assert "partial:" not in r.text
    s = Store(dst)
    assert s.stopped() == {} and s.spent(ENTRY_A) == pytest.approx(0.125)
    (meta,) = s.entries()
    assert meta["stopped"] is None
    s.close()
    shown = json.loads(_cli("runs", "show", ENTRY_A, "--db", str(dst), "--json"))
    assert shown["stopped"] is None and shown["errors"] == 1  # partial by its error only


def test_budget_states_join_on_import(src: Path, tmp_path: Path) -> None:
    """Importing into a store that holds the entry already: a trial the stop record says
    was not started clears that pair once it is stored; the spend never goes down and
    never below the stored trials' costs."""
    _stop_entry_a(src)
    doc = _doc(_export(src, ENTRY_A, tmp_path / "a.json.gz"))
    dst = tmp_path / "dst.sqlite"
    assert _import(_write(doc, tmp_path / "a.json"), dst).exit_code == 0
    # a second file of the same entry: seed 2 of production-decision, run elsewhere
    extra = json.loads(json.dumps(doc))
    (t,) = [t for t in extra["trials"] if (t["task"], t["seed"]) == (PD_SLUG, 0)]
    extra["trials"] = [{**t, "seed": 2, "started_at": 1.8e9}]
    extra["entry"].update(spent_usd=0.05, stopped=None)
    r = _import(_write(extra, tmp_path / "extra.json"), dst)
    assert r.exit_code == 0, r.output
    assert "1 trial(s) still not run" in r.text
    s = Store(dst)
    assert s.stopped()[ENTRY_A]["not_started"] == [[DRAGON_SLUG, 2]]
    assert s.stopped()[ENTRY_A]["reason"] == STOP["reason"]
    assert s.spent(ENTRY_A) == pytest.approx(0.2)  # max(0.2, 0.05, 0.1375 stored)
    s.close()
    # the spend recorded elsewhere is larger: it wins; the last pair stored: not partial
    (d,) = [t for t in doc["trials"] if (t["task"], t["seed"]) == (DRAGON_SLUG, 0)]
    extra["trials"] = [{**d, "seed": 2, "started_at": 1.8e9, "cost_usd": 0.5}]
    extra["entry"].update(spent_usd=0.3)
    r = _import(_write(extra, tmp_path / "extra2.json"), dst)
    assert r.exit_code == 0 and "partial:" not in r.text, r.output
    s = Store(dst)
    assert s.stopped() == {} and s.spent(ENTRY_A) == pytest.approx(0.6375)  # stored costs
    s.close()


def test_export_covers_every_trial_column() -> None:
    """A column added to the store must be added to the export schema (or declared local)."""
    con = sqlite3.connect(":memory:")
    con.executescript(SCHEMA)
    cols = {r[1] for r in con.execute("PRAGMA table_info(trials)")}
    assert cols == set(TRIAL_COLUMNS) | LOCAL_COLUMNS


def test_schema_is_printable_and_versioned(tmp_path: Path) -> None:
    r = runner.invoke(app, ["runs", "export", "--schema"])
    assert r.exit_code == 0
    schema = json.loads(r.stdout)
    assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    entry = schema["$defs"]["EntryExport"]
    assert {"spent_usd", "stopped"} <= set(entry["required"])
    assert (
        "TrialExport" in schema["$defs"]
        and "verdict" in schema["$defs"]["TrialExport"]["properties"]
    )
    r = runner.invoke(app, ["runs", "export", "nope", "--db", str(tmp_path / "none.sqlite")])
    assert r.exit_code == 2 and "no results store" in r.output


@pytest.mark.slow
def test_a_forged_verdict_is_undone_by_rescore(src: Path, tmp_path: Path) -> None:
    """The digest detects damage, not forgery: a sender can promote a verdict and recompute
    it. The artifact travels with it, so `tbmm runs rescore --all` verifies it again."""
    from harness.runs.rescore import rescore
    from tbmm.verify import verify_artifact

    doc = _doc(_export(src, ENTRY_A, tmp_path / "a.json.gz"))
    t = next(
        t for t in doc["trials"] if json.loads(t["verdict"] or "{}").get("status") == "gate_failed"
    )
    v = json.loads(t["verdict"])
    v.update(status="scored", o_eval_exact="1", o_eval=1.0)
    t["verdict"] = json.dumps(v)
    dst = tmp_path / "dst.sqlite"
    assert _import(_write(doc, tmp_path / "forged.json"), dst).exit_code == 0
    key = (ENTRY_A, t["task"], t["seed"])
    assert json.loads(_rows(dst)[key]["verdict"])["status"] == "scored"
    rescore(
        dst,
        entry=ENTRY_A,
        everything=True,
        verifier=lambda task, b: verify_artifact(task, b, lean=False),
    )
    assert json.loads(_rows(dst)[key]["verdict"])["status"] == "gate_failed"


def test_a_gzip_bomb_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.runs.export as rx

    monkeypatch.setattr(rx, "MAX_FILE_BYTES", 10_000)
    f = tmp_path / "bomb.json.gz"
    f.write_bytes(gzip.compress(b" " * 1_000_000))
    dst = tmp_path / "dst.sqlite"
    r = _import(f, dst)
    assert r.exit_code == 2 and "larger than 10000 bytes decompressed" in r.text
    _untouched(dst)


@pytest.mark.slow
def test_a_real_sandboxed_run_round_trips_and_views(tmp_path: Path) -> None:
    """Trials written by the runner itself (oracle agent in the sandbox, real task, real
    verifier without Lean): export -> import -> the same rows, files and leaderboard, and
    the viewer shows the imported trial with its trajectory."""
    from fastapi.testclient import TestClient

    from harness.agents.registry import OracleAgent
    from harness.runs.runner import run_sweep
    from harness.sandbox.bwrap import SandboxBackend, bwrap_path
    from harness.sandbox.venv import ensure_agent_venv
    from tbmm.reports.viewer import create_app
    from tbmm.suite.tasks import find_task
    from tbmm.verify import verify_artifact
    from tests.ci import absent

    if not bwrap_path():
        absent("bubblewrap (bwrap) is not installed")
    db = tmp_path / "run.sqlite"
    run_sweep(
        OracleAgent(),
        None,
        [find_task(PD_SLUG)],
        1,
        SandboxBackend("auto", ensure_agent_venv()),
        1,
        db,
        False,
        verifier=lambda t, b: verify_artifact(t, b, lean=False),
        progress=False,
    )
    (eid,) = {k[0] for k in _rows(db)}
    f = _export(db, eid, tmp_path / "run.json.gz")
    dst = tmp_path / "dst.sqlite"
    assert _import(f, dst).exit_code == 0
    old, new = _rows(db), _rows(dst)
    assert {k: {c: v for c, v in r.items() if c != "id"} for k, r in old.items()} == {
        k: {c: v for c, v in r.items() if c != "id"} for k, r in new.items()
    }
    assert json.loads(next(iter(new.values()))["verdict"])["status"] == "scored"
    assert _files(dst) == _files(db) and {"trajectory.json", "events.jsonl"} <= set(
        next(iter(_files(dst).values()))
    )
    assert _leaderboard(dst) == _leaderboard(db)
    tid = next(iter(new.values()))["id"]
    html = TestClient(create_app(dst), base_url="http://127.0.0.1").get(f"/trial/{tid}").text
    assert "sandbox_command" in html and "Replayed values (production_decision, ok)" in html
