"""One self-describing file per entry: `tbmm runs export` / `tbmm runs import`.

The file is JSON (gzip when its name ends in `.gz`) following the `RunsExport` pydantic
model, whose JSON Schema `tbmm runs export --schema` prints. It holds the entry row (with
its budget state since schema version 2: what it spent, `spent_usd`, and the record of a
`--max-cost` budget that stopped it before its plan, `stopped`, which keeps it partial) and,
per trial, every column of the `trials` table (the stored verdict as its exact JSON text,
the artifact as text or base64) and every file of the trial's blob folder (trajectory,
raw events, stdout, verdict, ...), each with its sha256. A digest over the whole document
(sha256 of its canonical JSON without the digest) catches an edited or truncated file.

Import reads schema versions 1 and 2: a version-1 file carries no budget state, so its
entry imports with none (spend = the sum of its trials' costs, not stopped) and the import
says so. It refuses any other `schema_version`, a digest or file-hash mismatch, an
unsafe name (a task slug or file name that would leave the blob folder), and a trial that
differs from one already stored under the same (entry, task, seed); a trial already stored
identically is skipped, so re-importing is a no-op. Everything is checked before the store
is touched, and the rows go in ONE transaction (`Store.import_trials`).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from harness.runs.store import Store

SCHEMA_VERSION = 2
READS = (1, SCHEMA_VERSION)  # version 1: the same document without the entry's budget state
FORMAT = "tbmm-runs-export"
MAX_FILE_BYTES = 1024**3  # decompressed; a bigger file (or gzip bomb) is refused unread
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


class ExportError(ValueError):
    """The file cannot be exported or imported; the message says why."""


class Blob(BaseModel):
    """Bytes as UTF-8 text when they are valid UTF-8, else base64; with their sha256."""

    model_config = ConfigDict(extra="forbid")
    encoding: Literal["text", "base64"]
    data: str
    size: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")

    @classmethod
    def of(cls, raw: bytes) -> Blob:
        try:
            data, enc = raw.decode("utf-8"), "text"
        except UnicodeDecodeError:
            data, enc = base64.b64encode(raw).decode("ascii"), "base64"
        return cls(
            encoding=enc,  # type: ignore[arg-type]
            data=data,
            size=len(raw),
            sha256=hashlib.sha256(raw).hexdigest(),
        )

    def raw(self, what: str) -> bytes:
        """The bytes, checked against size and sha256 (ExportError naming `what`)."""
        try:
            raw = (
                self.data.encode("utf-8")
                if self.encoding == "text"
                else base64.b64decode(self.data, validate=True)
            )
        except (ValueError, UnicodeEncodeError) as exc:
            raise ExportError(f"{what}: undecodable {self.encoding} data ({exc})") from exc
        if len(raw) != self.size or hashlib.sha256(raw).hexdigest() != self.sha256:
            raise ExportError(f"{what}: content does not match its recorded size/sha256")
        return raw


class StopExport(BaseModel):
    """Why the entry's `--max-cost` budget stopped its sweep, and the (task, seed) pairs it
    kept from starting: the entry is partial until they are stored."""

    model_config = ConfigDict(extra="forbid")
    reason: str
    not_started: list[tuple[str, int]]
    budget_usd: float | None


class EntryExport(BaseModel):
    """The `entries` row; `settings` is the stored JSON text, kept as is. `spent_usd` and
    `stopped` are its budget state (None: never recorded / not stopped)."""

    model_config = ConfigDict(extra="forbid")
    entry_id: str
    agent: str
    model: str | None
    settings: str
    created_at: float
    name: str | None
    spent_usd: float | None = Field(
        description="USD every trial ever committed cost (replaced error trials included); "
        "null: not recorded, the sum of the trials' costs"
    )
    stopped: StopExport | None = Field(
        description="the --max-cost stop record (null: not stopped); keeps the entry partial"
    )


class TrialExport(BaseModel):
    """One `trials` row (every column but the local `id` and `blob_dir`), with its files.
    `verdict` is the stored VerifyReport JSON text, byte for byte."""

    model_config = ConfigDict(extra="forbid")
    agent: str
    model: str | None
    task: str
    suite: str | None
    seed: int
    backend: str | None
    started_at: float | None
    finished_at: float | None
    duration_s: float | None
    setup_s: float | None
    agent_s: float | None
    verify_s: float | None
    exit_reason: str
    detail: str | None
    turns: int | None
    artifact_status: str
    artifact_size: int | None
    artifact_sha256: str | None
    artifact: Blob | None
    tokens_in: int | None
    tokens_out: int | None
    requests: int | None
    cost_usd: float | None
    o_eval: float | None
    o_eval_exact: str | None
    gate: str | None
    lean: str | None
    verify_exit: int | None
    verdict: str | None
    status: str
    error: str | None
    tokens_cache_read: int | None
    tokens_cache_write: int | None
    trajectory: str | None
    files: dict[str, Blob] = Field(
        default_factory=dict, description="the trial's blob folder: file name -> content"
    )


class RunsExport(BaseModel):
    """A `tbmm runs export` file: one entry, all its trials, their verdicts and files."""

    model_config = ConfigDict(extra="forbid", title="tbmm runs export")
    format: Literal["tbmm-runs-export"] = FORMAT
    schema_version: Literal[2] = SCHEMA_VERSION
    tbmm_version: str
    entry: EntryExport
    trials: list[TrialExport]
    digest: str = Field(
        default="",
        description="sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of this "
        "document without `digest`",
    )
    _read_version: int = PrivateAttr(default=SCHEMA_VERSION)  # the file's, when read

    @property
    def read_version(self) -> int:
        """The schema version of the file this was read from (older: upgraded on read)."""
        return self._read_version


# columns that are not exported: local to one store
LOCAL_COLUMNS = frozenset({"id", "entry_id", "blob_dir"})
# trial columns carried by the export, in table order (a column added to the store without
# being added here fails tests/test_viewer.py::test_export_covers_every_column)
TRIAL_COLUMNS = tuple(k for k in TrialExport.model_fields if k != "files")


def json_schema() -> dict[str, Any]:
    return RunsExport.model_json_schema()


def _canonical(doc: dict[str, Any]) -> bytes:
    body = {k: v for k, v in doc.items() if k != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _safe_name(name: str, what: str) -> str:
    if not _SLUG.match(name) or name in (".", "..") or ".." in name:
        raise ExportError(f"unsafe {what} {name!r}: only letters, digits, '.', '_', '-'")
    return name


def build_export(store: Store, entry_id: str) -> RunsExport:
    """The export document of one entry of `store`."""
    from harness.runs.runner import tbmm_version
    from harness.runs.store import trial_files

    meta = store.entry_row(entry_id)
    if meta is None:
        raise ExportError(f"no entry {entry_id!r} in {store.db_path}")
    stop = meta["stopped"]
    if stop is not None:  # the stored record's known keys (older records lack budget_usd)
        meta["stopped"] = StopExport(
            reason=str(stop.get("reason") or "budget reached before every trial started"),
            not_started=[tuple(x) for x in stop.get("not_started") or []],
            budget_usd=stop.get("budget_usd"),
        )
    trials = []
    for t in store.trials(entry_id):
        row = {k: t.get(k) for k in TRIAL_COLUMNS}
        art = t.get("artifact")
        row["artifact"] = Blob.of(bytes(art)) if art is not None else None
        files = {n: Blob.of(p.read_bytes()) for n, p in trial_files(store.runs_dir, t).items()}
        trials.append(TrialExport(**row, files=files))
    doc = RunsExport(tbmm_version=tbmm_version(), entry=EntryExport(**meta), trials=trials)
    dumped = doc.model_dump(mode="json")
    doc.digest = hashlib.sha256(_canonical(dumped)).hexdigest()
    return doc


def dump_export(doc: RunsExport) -> bytes:
    """The file's JSON bytes (before any gzip)."""
    return json.dumps(doc.model_dump(mode="json"), ensure_ascii=False, indent=1).encode()


def write_export(doc: RunsExport, out: Path) -> int:
    """Write the file (gzip when `out` ends in .gz, with a fixed mtime so the same entry
    gives the same bytes); returns its size in bytes."""
    text = dump_export(doc)
    data = gzip.compress(text, mtime=0) if out.name.endswith(".gz") else text
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(out)
    return len(data)


def read_export(path: Path) -> RunsExport:
    """Parse and check a file (gzip by content, not by name): schema version first, then the
    model, the digest, and every blob's size and sha256. ExportError says what is wrong."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            src = gzip.GzipFile(fileobj=fh) if head == b"\x1f\x8b" else fh
            raw = src.read(MAX_FILE_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ExportError(f"{path}: cannot read ({exc})") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise ExportError(f"{path}: larger than {MAX_FILE_BYTES} bytes decompressed")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ExportError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ExportError(f"{path}: not a tbmm runs export (no format {FORMAT!r})")
    version = doc.get("schema_version")
    if isinstance(version, bool) or version not in READS:
        raise ExportError(
            f"{path}: schema_version {version!r}; this tbmm reads schema_version "
            f"{' or '.join(map(str, READS))} (export it again with a matching tbmm)"
        )
    want = hashlib.sha256(_canonical(doc)).hexdigest()
    if doc.get("digest") != want:
        raise ExportError(
            f"{path}: digest mismatch (recorded {str(doc.get('digest'))[:16]}..., content "
            f"{want[:16]}...): the file was altered or truncated"
        )
    if version == 1:  # the entry had no budget state then: none is carried in
        entry = doc.get("entry")
        if isinstance(entry, dict):
            for key in ("spent_usd", "stopped"):
                if key in entry:
                    raise ExportError(f"{path}: schema_version 1 has no entry.{key}")
                entry[key] = None
        doc["schema_version"] = SCHEMA_VERSION
    try:
        exp = RunsExport.model_validate(doc)
    except ValidationError as exc:
        raise ExportError(f"{path}: does not follow the export schema: {exc}") from exc
    exp._read_version = version
    if exp.entry.stopped is not None:
        for task, _ in exp.entry.stopped.not_started:
            _safe_name(task, "task slug")
    keys = set()
    for t in exp.trials:
        where = f"{t.task} / seed {t.seed}"
        _safe_name(t.task, "task slug")
        if (t.task, t.seed) in keys:
            raise ExportError(f"{path}: trial {where} appears twice")
        keys.add((t.task, t.seed))
        if t.artifact is not None:
            t.artifact.raw(f"{where}: artifact")
            if t.artifact_sha256 is not None and t.artifact.sha256 != t.artifact_sha256:
                raise ExportError(f"{where}: artifact does not match artifact_sha256")
        for name, blob in t.files.items():
            _safe_name(name, "file name")
            blob.raw(f"{where}: file {name}")
        if t.verdict is not None:
            try:
                json.loads(t.verdict)
            except ValueError as exc:
                raise ExportError(f"{where}: verdict is not JSON ({exc})") from exc
    return exp


def import_export(exp: RunsExport, store: Store) -> tuple[int, int]:
    """Stage every trial's files, then insert entry and trials in one transaction.
    Returns (imported, already present)."""
    scratch = store.scratch_dir()
    try:
        staged = []
        for t in exp.trials:
            d = scratch / f"{t.task}-{t.seed}"
            d.mkdir()
            for name, blob in t.files.items():
                (d / name).write_bytes(blob.raw(f"{t.task} / seed {t.seed}: file {name}"))
            row = t.model_dump(exclude={"files", "artifact"})
            row["artifact"] = t.artifact.raw("artifact") if t.artifact is not None else None
            staged.append((row, d))
        return store.import_trials(exp.entry.model_dump(), staged)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
