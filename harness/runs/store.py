"""Results store: SQLite (WAL) for trial records, files for large blobs.

Crash safety: a trial's blobs are written into a temp dir, renamed into place
(`<runs>/<entry>/<task>/<seed>/`), and only then is the trial's row committed in ONE
transaction. A process killed at any moment leaves either a committed trial (row + blobs)
or nothing that counts: an orphan blob dir without a row is replaced when the trial reruns.

A trial's `status` is `ok` (the agent ran; its artifact, good or bad, was verified) or
`error` (the infrastructure failed: endpoint unreachable or failing the harness's probe,
proxy failure, binary missing, sandbox start failure, harness fault; or the verification
reached no verdict; `error` says which). An `error` trial is not a score: it is never
scored, the leaderboard leaves it out of its means (with a count, the entry marked
partial), and the next `--resume` replaces it. Stores written before these columns existed are
migrated in place when opened (ALTER TABLE ADD COLUMN; old rows are `ok`).

An entry records what its trials cost, every trial ever committed included (`spent_usd`: an
`error` trial that a later `--resume` replaced was paid for all the same), which is what
`tbmm run --max-cost` compares with its budget; and, when that budget stopped a sweep before
every planned trial started, why and which trials did not start (`stopped`, JSON): the
entry is then partial until those trials are stored.
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
    created_at REAL NOT NULL,
    name TEXT,
    spent_usd REAL,
    stopped TEXT
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
    status TEXT NOT NULL DEFAULT 'ok',
    error TEXT,
    tokens_cache_read INTEGER,
    tokens_cache_write INTEGER,
    trajectory TEXT,
    UNIQUE (entry_id, task, seed)
);
"""

# Columns added after the first release: (table, column, declaration) for the migration.
MIGRATIONS: tuple[tuple[str, str, str], ...] = (
    ("entries", "name", "TEXT"),
    ("trials", "status", "TEXT NOT NULL DEFAULT 'ok'"),
    ("trials", "error", "TEXT"),
    ("trials", "tokens_cache_read", "INTEGER"),
    ("trials", "tokens_cache_write", "INTEGER"),
    ("trials", "trajectory", "TEXT"),
    ("entries", "spent_usd", "REAL"),
    ("entries", "stopped", "TEXT"),
)
STATUS_OK = "ok"
STATUS_ERROR = "error"
TRAJECTORY_FILE = "trajectory.json"  # ATIF (harness.runs.atif), in the trial's blob dir
EVENTS_FILE = "events.jsonl"  # the raw event log (HTTP exchanges included) it is built from


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
    status: str = STATUS_OK  # ok | error (infrastructure failure: not a score)
    error: str | None = None  # the cause, for status error: "<kind>: <detail>"
    tokens_cache_read: int = 0
    tokens_cache_write: int = 0
    trajectory: str | None = None  # ATIF file name in the blob dir
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
                self._migrate()
            except sqlite3.Error:
                self._conn.close()
                raise

    def _migrate(self) -> None:
        """Add the columns a store from an older release lacks (idempotent)."""
        for table, column, decl in MIGRATIONS:
            have = {r[1] for r in self._conn.execute(f"PRAGMA table_info({table})")}
            if column not in have:
                with self._conn:
                    self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")

    def close(self) -> None:
        with self._lock, _named(self.db_path):
            self._conn.close()

    def ensure_entry(
        self,
        entry_id: str,
        agent: str,
        model: str | None,
        settings: dict[str, Any],
        name: str | None = None,
    ) -> None:
        """Create the entry if new; a given display `name` is (re)set either way."""
        with self._lock, _named(self.db_path), self._conn:
            self._conn.execute(
                "INSERT OR IGNORE INTO entries (entry_id, agent, model, settings, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (entry_id, agent, model, json.dumps(settings, sort_keys=True), time.time()),
            )
            if name is not None:
                self._conn.execute(
                    "UPDATE entries SET name = ? WHERE entry_id = ?", (name or None, entry_id)
                )

    def set_name(self, entry_id: str, name: str | None) -> bool:
        """Set (or clear, with None/"") an entry's display name; False if no such entry."""
        with self._lock, _named(self.db_path), self._conn:
            cur = self._conn.execute(
                "UPDATE entries SET name = ? WHERE entry_id = ?", (name or None, entry_id)
            )
            return cur.rowcount > 0

    def entries(self) -> list[dict[str, Any]]:
        """Every entry with its trial counts (ok, error), oldest first."""
        with self._lock, _named(self.db_path):
            cur = self._conn.execute(
                "SELECT e.entry_id, e.agent, e.model, e.settings, e.created_at, e.name,"
                " e.spent_usd, e.stopped,"
                " SUM(CASE WHEN t.status = 'ok' THEN 1 ELSE 0 END),"
                " SUM(CASE WHEN t.status = 'error' THEN 1 ELSE 0 END),"
                " SUM(t.cost_usd), COUNT(t.id), COUNT(t.cost_usd)"
                " FROM entries e LEFT JOIN trials t ON t.entry_id = e.entry_id"
                " GROUP BY e.entry_id ORDER BY e.created_at, e.entry_id"
            )
            out = []
            for row in cur:
                eid, agent, model, settings, created, name, spent, stopped = row[:8]
                ok, err, cost, n, n_cost = row[8:]
                out.append(
                    {
                        "entry_id": eid,
                        "agent": agent,
                        "model": model,
                        "settings": json.loads(settings),
                        "created_at": created,
                        "name": name,
                        "trials": int(ok or 0),
                        "errors": int(err or 0),
                        "cost_usd": cost if n and n == n_cost else None,
                        "spent_usd": spent if spent is not None else (cost or 0.0),
                        "stopped": json.loads(stopped) if stopped else None,
                    }
                )
            return out

    def entry_row(self, entry_id: str) -> dict[str, Any] | None:
        """The `entries` row as stored (settings as its JSON text, `spent_usd` None when
        never recorded), with its stop record parsed as `stopped()` gives it; or None."""
        with self._lock, _named(self.db_path):
            r = self._conn.execute(
                "SELECT entry_id, agent, model, settings, created_at, name, spent_usd FROM"
                " entries WHERE entry_id = ?",
                (entry_id,),
            ).fetchone()
        if r is None:
            return None
        keys = ("entry_id", "agent", "model", "settings", "created_at", "name", "spent_usd")
        row = dict(zip(keys, r, strict=True))
        row["stopped"] = self.stopped().get(entry_id)
        return row

    def import_trials(
        self, entry: dict[str, Any], staged: list[tuple[dict[str, Any], Path]]
    ) -> tuple[int, int]:
        """Insert an entry and its trials (rows without id/entry_id/blob_dir, each with its
        staged blob folder) in ONE transaction: all or nothing. A trial already stored
        with the same start time, status, artifact and verdict is skipped (re-import is a
        no-op); any other trial under the same (entry, task, seed), or an entry id with
        other agent/model/settings, aborts the whole import with a StoreError. The entry's
        budget state (`spent_usd`, `stopped`), when given, joins the target's
        (`_merge_budget`) in the same transaction. Returns (inserted, already present)."""
        eid = entry["entry_id"]
        moved: list[Path] = []
        inserted = present = 0
        with self._lock, _named(self.db_path):
            try:
                with self._conn:
                    have = self._conn.execute(
                        "SELECT agent, model, settings FROM entries WHERE entry_id = ?", (eid,)
                    ).fetchone()
                    mine = (entry["agent"], entry["model"], entry["settings"])
                    if have is None:
                        self._conn.execute(
                            "INSERT INTO entries (entry_id, agent, model, settings, created_at,"
                            " name) VALUES (?, ?, ?, ?, ?, ?)",
                            (eid, *mine, entry["created_at"], entry["name"]),
                        )
                    elif tuple(have) != mine:
                        raise StoreError(
                            f"results store {self.db_path}: entry {eid} exists with another "
                            "agent, model or settings; nothing imported"
                        )
                    for row, src in staged:
                        old = self._conn.execute(
                            "SELECT started_at, status, artifact_sha256, verdict FROM trials"
                            " WHERE entry_id = ? AND task = ? AND seed = ?",
                            (eid, row["task"], row["seed"]),
                        ).fetchone()
                        same = (
                            row["started_at"],
                            row["status"],
                            row["artifact_sha256"],
                            row["verdict"],
                        )
                        if old is not None:
                            if tuple(old) != same:
                                raise StoreError(
                                    f"results store {self.db_path}: {eid} / {row['task']} / "
                                    f"seed {row['seed']} is already stored with another "
                                    "result; nothing imported (`tbmm runs delete` it first)"
                                )
                            present += 1
                            continue
                        rel = self.blob_rel(eid, row["task"], row["seed"])
                        full = {**row, "entry_id": eid, "blob_dir": rel}
                        cols = ", ".join(full)
                        marks = ", ".join("?" for _ in full)
                        self._conn.execute(
                            f"INSERT INTO trials ({cols}) VALUES ({marks})", list(full.values())
                        )
                        dest = self.runs_dir / rel
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        if dest.exists():  # an orphan of a killed run: no row points to it
                            shutil.rmtree(dest)
                        src.rename(dest)
                        moved.append(dest)
                        inserted += 1
                    self._merge_budget(eid, entry.get("spent_usd"), entry.get("stopped"))
            except BaseException:
                for d in moved:
                    shutil.rmtree(d, ignore_errors=True)
                raise
        return inserted, present

    def _merge_budget(self, eid: str, spent: float | None, stopped: dict[str, Any] | None) -> None:
        """An imported entry's budget state joined with the target's (inside the import's
        transaction, lock held). The spend recorded never decreases and never falls below
        the cost of the trials now stored (the larger figure: the same spend imported twice
        is not counted twice); a file without one (schema version 1) leaves the target's as
        it was (NULL: the sum of the stored trials). The trials still not run are both
        records' pairs that no stored trial fills, with the imported reason first."""
        cur_spent, cur_stop = self._conn.execute(
            "SELECT spent_usd, stopped FROM entries WHERE entry_id = ?", (eid,)
        ).fetchone()
        total = self._conn.execute(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM trials WHERE entry_id = ?", (eid,)
        ).fetchone()[0]
        figures = [x for x in (cur_spent, spent) if x is not None]
        if figures:
            self._conn.execute(
                "UPDATE entries SET spent_usd = ? WHERE entry_id = ?",
                (max(*figures, float(total)), eid),
            )
        old = _stop_doc(cur_stop) if cur_stop else None
        if stopped is None and old is None:
            return
        stored = {
            (str(t), int(s))
            for t, s in self._conn.execute(
                "SELECT task, seed FROM trials WHERE entry_id = ?", (eid,)
            )
        }
        pending: set[tuple[str, int]] = set()
        for doc in (old, stopped):
            for pair in (doc or {}).get("not_started") or []:
                if isinstance(pair, list | tuple) and len(pair) == 2:
                    with contextlib.suppress(TypeError, ValueError):
                        pending.add((str(pair[0]), int(pair[1])))
        pending -= stored
        text = None
        if pending:
            first = stopped if stopped is not None else old
            assert first is not None
            text = json.dumps(
                {
                    "reason": first.get("reason") or "budget reached before every trial started",
                    "not_started": sorted([t, s] for t, s in pending),
                    "budget_usd": first.get("budget_usd"),
                },
                sort_keys=True,
            )
        self._conn.execute("UPDATE entries SET stopped = ? WHERE entry_id = ?", (text, eid))

    def set_trajectory(self, trial_id: int, name: str | None) -> None:
        """Record a trial's ATIF file name (after `tbmm runs convert-trajectories`)."""
        with self._lock, _named(self.db_path), self._conn:
            self._conn.execute("UPDATE trials SET trajectory = ? WHERE id = ?", (name, trial_id))

    def replace_verdict(self, trial_id: int, fields: dict[str, Any]) -> None:
        """Replace an `ok` trial's verdict columns (`tbmm runs rescore`) in one transaction;
        StoreError if the trial is gone or is not `ok`."""
        cols = ("verdict", "o_eval", "o_eval_exact", "gate", "lean", "verify_exit")
        vals = [json.dumps(fields["verdict"]) if c == "verdict" else fields.get(c) for c in cols]
        sets = ", ".join(f"{c} = ?" for c in cols)
        with self._lock, _named(self.db_path), self._conn:
            n = self._conn.execute(
                f"UPDATE trials SET {sets} WHERE id = ? AND status = 'ok'", [*vals, trial_id]
            ).rowcount
        if n != 1:
            raise StoreError(f"results store {self.db_path}: no ok trial with id {trial_id}")

    def spent(self, entry_id: str) -> float:
        """USD the entry's trials have cost so far, replaced `error` trials included (an
        entry stored before this was recorded: the sum over its stored trials)."""
        with self._lock, _named(self.db_path):
            r = self._conn.execute(
                "SELECT COALESCE(e.spent_usd, (SELECT COALESCE(SUM(cost_usd), 0) FROM trials t"
                " WHERE t.entry_id = e.entry_id)) FROM entries e WHERE e.entry_id = ?",
                (entry_id,),
            ).fetchone()
        return float(r[0]) if r is not None and r[0] is not None else 0.0

    def largest_cost(self, entry_id: str) -> float:
        """The cost of the entry's costliest stored trial (0 without one): what the sweep's
        budget expects a running trial to cost at least."""
        with self._lock, _named(self.db_path):
            r = self._conn.execute(
                "SELECT MAX(cost_usd) FROM trials WHERE entry_id = ?", (entry_id,)
            ).fetchone()
        return float(r[0]) if r is not None and r[0] is not None else 0.0

    def set_stopped(self, entry_id: str, doc: dict[str, Any] | None) -> None:
        """Record (or clear, with None) why the entry's sweep stopped before its plan."""
        text = json.dumps(doc, sort_keys=True) if doc is not None else None
        with self._lock, _named(self.db_path), self._conn:
            self._conn.execute(
                "UPDATE entries SET stopped = ? WHERE entry_id = ?", (text, entry_id)
            )

    def stopped(self) -> dict[str, dict[str, Any]]:
        """entry id -> its stop record (`reason`, `not_started` [[task, seed], ...], ...),
        for the entries a budget stopped before their plan."""
        with self._lock, _named(self.db_path):
            cur = self._conn.execute(
                "SELECT entry_id, stopped FROM entries WHERE stopped IS NOT NULL"
            )
            return {eid: _stop_doc(text) for eid, text in cur.fetchall()}

    def names(self) -> dict[str, str]:
        """entry id -> display name, for the entries that have one."""
        with self._lock, _named(self.db_path):
            cur = self._conn.execute("SELECT entry_id, name FROM entries WHERE name IS NOT NULL")
            return {e: n for e, n in cur.fetchall() if n}

    def done(self, entry_id: str) -> set[tuple[str, int]]:
        """(task, seed) pairs with a committed `ok` trial: an `error` trial is not done."""
        with self._lock, _named(self.db_path):
            cur = self._conn.execute(
                "SELECT task, seed FROM trials WHERE entry_id = ? AND status = 'ok'", (entry_id,)
            )
            return {(t, int(s)) for t, s in cur.fetchall()}

    def errored(self, entry_id: str) -> set[tuple[str, int]]:
        """(task, seed) pairs whose stored trial is an infrastructure `error`."""
        with self._lock, _named(self.db_path):
            cur = self._conn.execute(
                "SELECT task, seed FROM trials WHERE entry_id = ? AND status = 'error'",
                (entry_id,),
            )
            return {(t, int(s)) for t, s in cur.fetchall()}

    def delete(
        self,
        entry_id: str,
        *,
        task: str | None = None,
        seed: int | None = None,
        errors_only: bool = False,
    ) -> int:
        """Delete trials of an entry (all, or those matching task/seed/status) and their
        blobs; the entry itself goes when no filter is given. Returns the trials deleted."""
        where, args = ["entry_id = ?"], [entry_id]
        if task is not None:
            where.append("task = ?")
            args.append(task)
        if seed is not None:
            where.append("seed = ?")
            args.append(seed)
        if errors_only:
            where.append("status = 'error'")
        cond = " AND ".join(where)
        whole = task is None and seed is None and not errors_only
        with self._lock, _named(self.db_path):
            dirs = [
                r[0] for r in self._conn.execute(f"SELECT blob_dir FROM trials WHERE {cond}", args)
            ]
            with self._conn:
                n = self._conn.execute(f"DELETE FROM trials WHERE {cond}", args).rowcount
                if whole:
                    self._conn.execute("DELETE FROM entries WHERE entry_id = ?", (entry_id,))
        for rel in dirs:
            if rel:
                shutil.rmtree(self.runs_dir / rel, ignore_errors=True)
        if whole:
            shutil.rmtree(self.runs_dir / _safe(entry_id), ignore_errors=True)
        return n

    def scratch_dir(self) -> Path:
        """A fresh temp dir on the same filesystem as the blobs (so rename is atomic)."""
        d = self.runs_dir / "_tmp" / uuid.uuid4().hex
        d.mkdir(parents=True)
        return d

    def blob_rel(self, entry_id: str, task: str, seed: int) -> str:
        return f"{_safe(entry_id)}/{task}/{seed}"

    def commit(self, rec: TrialRecord, blob_src: Path) -> None:
        """Move `blob_src` into place, then insert the row (one transaction). A stored
        `error` trial of the same (entry, task, seed) is replaced; an `ok` one never is
        (the UNIQUE constraint refuses it)."""
        rel = self.blob_rel(rec.entry_id, rec.task, rec.seed)
        dest = self.runs_dir / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            with _named(self.db_path):
                ok = self._conn.execute(
                    "SELECT COUNT(*) FROM trials WHERE entry_id = ? AND task = ? AND seed = ?"
                    " AND status = 'ok'",
                    (rec.entry_id, rec.task, rec.seed),
                ).fetchone()[0]
            if ok:
                raise StoreError(
                    f"results store {self.db_path}: {rec.entry_id} / {rec.task} / seed "
                    f"{rec.seed} already has a trial"
                )
            if dest.exists():  # an error trial being retried, or an orphan of a killed run
                shutil.rmtree(dest)
            blob_src.rename(dest)
            rec.blob_dir = rel
            row = rec.row()
            cols = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            with _named(self.db_path), self._conn:
                if rec.cost_usd is not None:  # before the error trial it replaces is gone
                    self._conn.execute(
                        "UPDATE entries SET spent_usd = COALESCE(spent_usd, (SELECT"
                        " COALESCE(SUM(cost_usd), 0) FROM trials WHERE entry_id = ?)) + ?"
                        " WHERE entry_id = ?",
                        (rec.entry_id, rec.cost_usd, rec.entry_id),
                    )
                self._conn.execute(
                    "DELETE FROM trials WHERE entry_id = ? AND task = ? AND seed = ?"
                    " AND status = 'error'",
                    (rec.entry_id, rec.task, rec.seed),
                )
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

    def trial(self, trial_id: int) -> dict[str, Any] | None:
        """One stored trial by its row id, or None."""
        with self._lock, _named(self.db_path):
            self._conn.row_factory = sqlite3.Row
            try:
                r = self._conn.execute("SELECT * FROM trials WHERE id = ?", (trial_id,)).fetchone()
                return dict(r) if r is not None else None
            finally:
                self._conn.row_factory = None

    def clean_tmp(self) -> None:
        """Remove scratch dirs of trials that never committed (a previous killed run)."""
        shutil.rmtree(self.runs_dir / "_tmp", ignore_errors=True)


def _stop_doc(text: str) -> dict[str, Any]:
    """A stored stop record as a dict (a malformed one keeps its text as the reason)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return {"reason": str(text)[:500], "not_started": []}
    return doc if isinstance(doc, dict) else {"reason": str(doc), "not_started": []}


def trial_files(runs_dir: Path, rec: dict[str, Any]) -> dict[str, Path]:
    """The blob files of a stored trial that exist (trajectory, events, stdout, ...)."""
    base = runs_dir / str(rec.get("blob_dir") or "")
    if not rec.get("blob_dir") or not base.is_dir():
        return {}
    return {p.name: p for p in sorted(base.iterdir()) if p.is_file()}


def runs_dir_for(db_path: Path) -> Path:
    """Blobs live next to the DB: `results.sqlite` -> `results.runs/`."""
    db_path = Path(db_path)
    return db_path.parent / f"{db_path.stem}.runs"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.@+" else "_" for c in name)
