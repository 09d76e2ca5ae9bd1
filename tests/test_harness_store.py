"""Every store error names the database file, including `tbmm run` on a corrupt store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from harness.cli import run as cli
from harness.runs.store import Store, StoreError
from harness.sandbox.bwrap import bwrap_path
from harness.testing import make_fake_task


def test_corrupt_database_is_named(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=str(db)) as info:
        Store(db)
    assert "file is not a database" in str(info.value)
    assert isinstance(info.value, sqlite3.DatabaseError)  # callers catching sqlite still do


def test_failing_statement_is_named(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    store = Store(db)
    store._conn.execute("DROP TABLE trials")  # a store damaged after it was opened
    with pytest.raises(StoreError, match=f"results store {db}: no such table"):
        store.trials()
    with pytest.raises(StoreError, match=str(db)):
        store.done("x")
    store.close()


@pytest.mark.skipif(
    not bwrap_path(), reason="bubblewrap not installed (the run picks a backend first)"
)
def test_tbmm_run_on_corrupt_store_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tasks = [make_fake_task(tmp_path / "tasks")]
    monkeypatch.setattr(cli, "select_tasks", lambda spec, root=None, **kw: tasks)
    monkeypatch.setattr(cli, "check_isolation", lambda *a, **k: None)  # not what is tested
    db = tmp_path / "corrupt.sqlite"
    db.write_bytes(b"garbage" * 1000)
    app = typer.Typer()
    app.command("run")(cli.run_command)
    app.command("noop")(lambda: None)
    res = CliRunner().invoke(
        app, ["run", "--agent", "oracle", "--backend", "sandbox", "--db", str(db)]
    )
    assert res.exit_code == 2, res.output
    assert str(db) in res.output.replace("\n", "") and "not a database" in res.output
    assert "Traceback" not in res.output
