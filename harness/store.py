"""Results store: SQLite (WAL) for trial records, files for large blobs.

Crash safety: a trial's blobs are written into a temp dir, renamed into place
(`<runs>/<entry>/<task>/<seed>/`), and only then is the trial's row committed in ONE
transaction. A process killed at any moment leaves either a committed trial (row + blobs)
or nothing that counts: an orphan blob dir without a row is replaced when the trial reruns.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    entry_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    model TEXT,
    settings TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    entry_id TEXT NOT NULL REFERENCES entries(entry_id),
    agent TEXT NOT NULL,
    model TEXT,
    task TEXT NOT NULL,
    suite TEXT,
    seed INTEGER NOT NULL,
    backend TEXT,
    started_at REAL,
    finished_at REAL,
    duration_s REAL,
    setup_s REAL,
    agent_s REAL,
    verify_s REAL,
    exit_reason TEXT NOT NULL,
    detail TEXT,
    turns INTEGER,
    artifact_status TEXT NOT NULL,
    artifact_size INTEGER,
    artifact_sha256 TEXT,
    artifact BLOB,
    tokens_in INTEGER,
    tokens_out INTEGER,
    requests INTEGER,
    cost_usd REAL,
    o_eval REAL,
    o_eval_exact TEXT,
    gate TEXT,
    lean TEXT,
    verify_exit INTEGER,
    verdict TEXT,
    blob_dir TEXT,
    UNIQUE (entry_id, task, seed)
);
"""


@dataclass
class TrialRecord:
    """One finished trial, as stored. Blob files live under `blob_dir` (relative to runs)."""

    entry_id: str
    agent: str
    model: str | None
    task: str
    suite: str | None
    seed: int
    backend: str
    started_at: float
    finished_at: float
    duration_s: float
    setup_s: float
    agent_s: float
    verify_s: float
    exit_reason: str
    detail: str
    turns: int
    artifact_status: str  # ok | missing | too_large | not_regular_file | unreadable
    artifact_size: int | None
    artifact_sha256: str | None
    artifact: bytes | None
    tokens_in: int
    tokens_out: int
    requests: int
    cost_usd: float | None
    o_eval: float | None = None
    o_eval_exact: str | None = None
    gate: str | None = None
    lean: str | None = None
    verify_exit: int | None = None
    verdict: dict[str, Any] | None = None
    blob_dir: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("extra")
        d["verdict"] = json.dumps(self.verdict) if self.verdict is not None else None
        return d


class StoreError(sqlite3.DatabaseError):
    """A database failure of the results store; the message names the file."""


@contextlib.contextmanager
def _named(db_path: Path) -> Iterator[None]:
    """Re-raise SQLite errors with the database file in the message (sqlite's own messages,
    e.g. 'file is not a database', do not say which file)."""
    try:
        yield
    except StoreError:
        raise
    except sqlite3.Error as exc:
        raise StoreError(f"results store {db_path}: {exc}") from exc


class Store:
    """Thread-safe: one connection, one lock; each trial is one transaction. Every SQLite
    error leaves as a StoreError naming the database file."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = Path(db_path)
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self.runs_dir = runs_dir_for(self.db_path)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        with _named(self.db_path):
            self._conn = sqlite3.connect(str(self.db_path), check_same_thread=False, timeout=60)
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=FULL")
                self._conn.executescript(SCHEMA)
            except sqlite3.Error:
                self._conn.close()
                raise

    def close(self) -> None:
        with self._lock, _named(self.db_path):
            self._conn.close()

    def ensure_entry(
        self, entry_id: str, agent: str, model: str | None, settings: dict[str, Any]
    ) -> None:
        with self._lock, _named(self.db_path), self._conn:
            self._conn.execute(
                "INSERT OR IGNORE INTO entries VALUES (?, ?, ?, ?, ?)",
                (entry_id, agent, model, json.dumps(settings, sort_keys=True), time.time()),
            )

    def done(self, entry_id: str) -> set[tuple[str, int]]:
        """(task, seed) pairs already committed for this entry."""
        with self._lock, _named(self.db_path):
            cur = self._conn.execute(
                "SELECT task, seed FROM trials WHERE entry_id = ?", (entry_id,)
            )
            return {(t, int(s)) for t, s in cur.fetchall()}

    def scratch_dir(self) -> Path:
        """A fresh temp dir on the same filesystem as the blobs (so rename is atomic)."""
        d = self.runs_dir / "_tmp" / uuid.uuid4().hex
        d.mkdir(parents=True)
        return d

    def blob_rel(self, entry_id: str, task: str, seed: int) -> str:
        return f"{_safe(entry_id)}/{task}/{seed}"

    def commit(self, rec: TrialRecord, blob_src: Path) -> None:
        """Move `blob_src` into place, then insert the row (one transaction)."""
        rel = self.blob_rel(rec.entry_id, rec.task, rec.seed)
        dest = self.runs_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            if dest.exists():  # orphan of a run killed between rename and commit
                shutil.rmtree(dest)
            blob_src.rename(dest)
            rec.blob_dir = rel
            row = rec.row()
            cols = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            with _named(self.db_path), self._conn:
                self._conn.execute(
                    f"INSERT INTO trials ({cols}) VALUES ({marks})", list(row.values())
                )

    def trials(self, entry_id: str | None = None) -> list[dict[str, Any]]:
        with self._lock, _named(self.db_path):
            self._conn.row_factory = sqlite3.Row
            try:
                if entry_id is None:
                    cur = self._conn.execute("SELECT * FROM trials ORDER BY id")
                else:
                    cur = self._conn.execute(
                        "SELECT * FROM trials WHERE entry_id = ? ORDER BY id", (entry_id,)
                    )
                return [dict(r) for r in cur.fetchall()]
            finally:
                self._conn.row_factory = None

    def clean_tmp(self) -> None:
        """Remove scratch dirs of trials that never committed (a previous killed run)."""
        shutil.rmtree(self.runs_dir / "_tmp", ignore_errors=True)


def runs_dir_for(db_path: Path) -> Path:
    """Blobs live next to the DB: `results.sqlite` -> `results.runs/`."""
    db_path = Path(db_path)
    return db_path.parent / f"{db_path.stem}.runs"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@+" else "_" for c in name)
