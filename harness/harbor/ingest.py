"""`tbmm ingest harbor JOB_DIR`: a Harbor job directory into the results store.

Harbor runs the agents (on its local or cloud environments) and its verifier writes a
reward; tbmm stores its OWN verdict: every trial's collected artifact is verified again
here (`tbmm.verify`, Lean included), and Harbor's reward is kept beside it for the record
(a reward that disagrees with ours is reported, never stored as the score).

Per trial directory (layout in `tbmm.integrations.harbor.layout`), from `result.json` (Harbor's
TrialResult, read as plain JSON so Harbor need not be installed): the task (`tbmm/<slug>`),
the agent and model, timings, token usage and cost, the exception if any; the artifact
from `artifacts/<output path>`; the ATIF trajectory `agent/trajectory.json`, stored as it is;
the agent's log files and the verifier's output.

Which trials are scores: a trial without an exception, or whose exception is the agent's
(Harbor's policy says its reward is valid: timeout, non-zero exit, context exceeded...), or
comes from Harbor's verifier alone (the artifact was collected; ours decides), is verified
and stored. A trial whose infrastructure failed (the environment never started, the model
API was unreachable, setup failed: the agent never ran, or Harbor's policy says the reward
is not valid) is NOT a score: it is stored as an `error` row (its cause, Harbor's record,
nothing verified), which the leaderboard counts and leaves out of its means, and it is
listed (the command exits 1).

Retries: Harbor retries a trial in place (same trial name, a new result id), also when a
job is resumed. A trial whose name matches a stored `error` row of the same entry and task
takes that row's seed and replaces it; every other new trial takes the next free seed.

Verification: the default verifier checks 32 trials per Lean run (`tbmm.verify.
verify_batch`, the same verdicts as one at a time; a failing batch falls back to one trial
at a time so that a fault stays with its trial).

Seeds: the trials of one (entry, task) get seeds 0, 1, ... in the order they started;
a trial already stored (matched by Harbor's trial id) is skipped, so ingesting the same
job twice stores nothing new and several jobs of the same agent add up.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.runs.runner import Entry, Verifier, _verdict_fields, default_verifier, verify_each
from harness.runs.store import STATUS_ERROR, STATUS_OK, Store, TrialRecord
from tbmm.integrations.harbor import layout

HARBOR_RESULT = "harbor_result.json"  # blob: Harbor's result.json, as written
HARBOR_REWARD = "harbor_reward.json"  # blob: what Harbor's verifier said
LOG_CAP = 16 * 2**20  # each copied log file keeps at most this many bytes (head)
# The agent writes its log folder: at most this many files and bytes of it are kept per trial.
AGENT_FILES_CAP = 64
AGENT_BYTES_CAP = 64 * 2**20
# Raised by Harbor's verifier after the agent phase: the artifact is there, ours decides.
VERIFIER_SIDE = frozenset(
    {
        "VerifierTimeoutError",
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
        "AddTestsDirError",
        "DownloadVerifierDirError",
    }
)
MODEL_FREE_AGENTS = frozenset({"oracle", "nop"})  # Harbor agents that call no model


class IngestError(ValueError):
    """The directory is not a Harbor job directory; the message says why."""


@dataclass
class HarborTrial:
    """One trial directory of a Harbor job, as read from its result.json."""

    dir: Path
    result: dict[str, Any]

    @property
    def trial_id(self) -> str:
        return str(self.result.get("id") or self.result.get("trial_name") or self.dir.name)

    @property
    def task_name(self) -> str:
        return str(self.result.get("task_name") or "")

    @property
    def slug(self) -> str:
        return self.task_name.rpartition("/")[2]

    @property
    def agent(self) -> str:
        return str((self.result.get("agent_info") or {}).get("name") or "unknown")

    @property
    def model(self) -> str | None:
        info = (self.result.get("agent_info") or {}).get("model_info") or {}
        name = info.get("name") or ((self.result.get("config") or {}).get("agent") or {}).get(
            "model_name"
        )
        if not name:
            return None
        provider = info.get("provider")
        return f"{provider}/{name}" if provider and "/" not in str(name) else str(name)

    @property
    def exception(self) -> dict[str, Any] | None:
        return self.result.get("exception_info") or None

    @property
    def environment(self) -> str:
        env = (self.result.get("config") or {}).get("environment") or {}
        return str(env.get("type") or env.get("import_path") or "docker")

    def seconds(self, phase: str) -> float:
        t = self.result.get(phase) or {}
        a, b = _time(t.get("started_at")), _time(t.get("finished_at"))
        return max(0.0, b - a) if a is not None and b is not None else 0.0

    @property
    def started(self) -> float:
        return _time(self.result.get("started_at")) or 0.0

    @property
    def agent_ran(self) -> bool:
        return _time((self.result.get("agent_execution") or {}).get("started_at")) is not None

    def infrastructure_error(self) -> str | None:
        """Why this trial is not a score (None: it is one)."""
        exc = self.exception
        if exc is None:
            return None
        kind = str(exc.get("exception_type") or "Exception")
        why = f"{kind}: {str(exc.get('exception_message') or '').strip()[:300]}"
        if kind in VERIFIER_SIDE:
            return None
        if not self.agent_ran:
            return f"the agent never ran ({why})"
        policy = exc.get("policy") or {}
        if policy.get("has_valid_reward") is False:
            return why
        return None

    def exit_reason(self) -> str:
        exc = self.exception
        if exc is None or exc.get("exception_type") in VERIFIER_SIDE:
            return "completed"
        kind = str(exc.get("exception_type"))
        return "timeout" if kind == "AgentTimeoutError" else f"harbor:{kind}"


def _time(s: Any) -> float | None:
    if not isinstance(s, str) or not s:
        return None
    try:
        return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_job(job_dir: Path) -> list[HarborTrial]:
    """Every trial directory of a Harbor job (a directory with a TrialResult result.json)."""
    job_dir = Path(job_dir)
    if not job_dir.is_dir():
        raise IngestError(f"{job_dir}: not a directory")
    trials = []
    for d in sorted(p for p in job_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        f = d / layout.TRIAL_RESULT
        if not f.is_file():
            continue
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise IngestError(f"{f}: not readable JSON ({exc})") from exc
        if isinstance(doc, dict) and "task_name" in doc and "trial_name" in doc:
            trials.append(HarborTrial(d, doc))
    if not trials and not (job_dir / layout.TRIAL_RESULT).is_file():
        raise IngestError(
            f"{job_dir}: no trial results (expected <job>/<trial>/result.json of a Harbor job)"
        )
    return trials


def read_collected(trial_dir: Path, output_path: str, max_bytes: int) -> tuple[str, bytes | None]:
    """(artifact status, bytes) of a collected artifact. The path must stay inside the
    trial's artifacts/ without any symlink on the way: the agent controlled that tree."""
    base = trial_dir / layout.ARTIFACTS_DIR
    rel = [p for p in Path(output_path).parts if p not in ("/", "", "..")]
    cur = base
    for part in rel:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return "missing", None
        if stat.S_ISLNK(st.st_mode):
            return "not_regular_file", None
    try:
        fd = os.open(cur, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "not_regular_file", None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not_regular_file", None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    finally:
        os.close(fd)
    return ("too_large" if len(data) > max_bytes else "ok"), data


def _copy_capped(src: Path, dst: Path, cap: int = LOG_CAP) -> int:
    """A regular file's head (at most `cap` bytes); anything else is skipped. Bytes copied."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return 0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return 0
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max(0, cap))
        dst.write_bytes(data)
        return len(data)
    finally:
        os.close(fd)


def copy_agent_logs(agent_dir: Path, blobs: Path) -> list[str]:
    """The agent's log files (top level, regular files; the ATIF trajectory under its own
    name, the others as `agent-<name>`) within AGENT_FILES_CAP files and AGENT_BYTES_CAP
    bytes, each at most LOG_CAP. What was left out, for the trial's detail."""
    if not agent_dir.is_dir() or agent_dir.is_symlink():
        return []
    names = sorted(f.name for f in agent_dir.iterdir())
    # the trajectory first: it is what viewers and training pipelines read
    names.sort(key=lambda n: n != layout.TRAJECTORY)
    left = AGENT_BYTES_CAP
    for i, name in enumerate(names):
        if i >= AGENT_FILES_CAP or left <= 0:
            return [f"agent logs: {len(names) - i} file(s) not kept (caps)"]
        target = name if name == layout.TRAJECTORY else f"agent-{name}"
        left -= _copy_capped(agent_dir / name, blobs / target, min(LOG_CAP, left))
    return []


@dataclass
class IngestSummary:
    job_dir: Path
    entries: list[str] = field(default_factory=list)
    stored: list[tuple[str, str, int]] = field(default_factory=list)  # (entry, task, seed)
    already: int = 0
    errors: list[str] = field(default_factory=list)  # infrastructure failures (error rows)
    retried: int = 0  # stored error rows replaced by a retry of the same Harbor trial
    skipped: list[str] = field(default_factory=list)  # not tbmm tasks, unreadable trials
    reward_mismatches: list[str] = field(default_factory=list)


def entry_for(trial: HarborTrial, name: str | None) -> Entry:
    """The leaderboard entry of a Harbor trial: the agent (as `harbor-<agent>`) and model,
    with the agent's version and kwargs as settings; `name` replaces the derived id."""
    cfg = (trial.result.get("config") or {}).get("agent") or {}
    settings: dict[str, Any] = {"via": "harbor"}
    version = (trial.result.get("agent_info") or {}).get("version")
    if version:
        settings["agent_version"] = str(version)
    if cfg.get("kwargs"):
        settings["agent_kwargs"] = cfg["kwargs"]
    return _NamedEntry(f"harbor-{trial.agent}", trial.model, settings, name)


@dataclass(frozen=True)
class _NamedEntry(Entry):
    name: str | None = None

    @property
    def entry_id(self) -> str:  # type: ignore[override]
        return self.name or super().entry_id


def _stored(store: Store, entry_id: str) -> tuple[set[str], dict[tuple[str, str], int]]:
    """For an entry: the Harbor trial ids already stored, and the seed of every stored
    `error` row by (task, Harbor trial name) — the slot a retry of that trial fills."""
    ids: set[str] = set()
    errors: dict[tuple[str, str], int] = {}
    for row in store.trials(entry_id):
        f = store.runs_dir / str(row.get("blob_dir") or "") / HARBOR_RESULT
        try:
            doc = json.loads(f.read_text())
            tid, name = str(doc.get("id")), str(doc.get("trial_name"))
        except (OSError, ValueError, AttributeError):
            continue
        ids.add(tid)
        if row.get("status") == STATUS_ERROR:
            errors[(str(row["task"]), name)] = int(row["seed"])
    return ids, errors


def ingest_job(
    job_dir: Path,
    db: Path,
    *,
    name: str | None = None,
    tasks_root: Path | None = None,
    verifier: Verifier | None | str = "default",
    say: Callable[[str], None] | None = None,
) -> IngestSummary:
    """Store every scoring trial of a Harbor job (see the module docstring)."""
    from tbmm.suite.tasks import TASKS_ROOT, load_suite

    say = say or (lambda _m: None)
    trials = read_job(job_dir)
    by_slug = {t.slug: t for t in load_suite(tasks_root or TASKS_ROOT)}
    if verifier == "default":
        verifier, _why = default_verifier()
    summary = IngestSummary(Path(job_dir))
    store = Store(db)
    try:
        store.clean_tmp()
        groups: dict[tuple[str, str], list[HarborTrial]] = {}
        entries: dict[str, Entry] = {}
        for tr in trials:
            if tr.slug not in by_slug:
                summary.skipped.append(f"{tr.dir.name}: task {tr.task_name!r} is not a tbmm task")
                continue
            entry = entry_for(tr, name)
            entries[entry.entry_id] = entry
            groups.setdefault((entry.entry_id, tr.slug), []).append(tr)
        for entry in entries.values():
            store.ensure_entry(entry.entry_id, entry.agent, entry.model, entry.settings)
        summary.entries = sorted(entries)
        known = {eid: _stored(store, eid) for eid in entries}
        plan: list[tuple[HarborTrial, str, Any, int, str | None]] = []
        for (eid, slug), group in sorted(groups.items()):
            task = by_slug[slug]
            ids, retry = known[eid]
            taken = {s for t, s in store.done(eid) | store.errored(eid) if t == slug}
            for tr in sorted(group, key=lambda t: (t.started, t.dir.name)):
                if tr.trial_id in ids:
                    summary.already += 1
                    continue
                seed = retry.pop((slug, str(tr.result.get("trial_name"))), None)
                if seed is not None:
                    summary.retried += 1
                else:
                    seed = next(s for s in range(len(taken) + 1) if s not in taken)
                plan.append((tr, eid, task, seed, tr.infrastructure_error()))
                ids.add(tr.trial_id)
                taken.add(seed)
        for i in range(0, len(plan), CHUNK):
            chunk = plan[i : i + CHUNK]
            if len(plan) > CHUNK:
                say(f"trials {i + 1}-{i + len(chunk)} of {len(plan)}")
            collected = [
                read_collected(tr.dir, task.output_path, task.caps.max_bytes)
                for tr, _, task, _, _ in chunk
            ]
            reports, share = _verify_chunk(chunk, collected, verifier)
            for (tr, eid, task, seed, why), got, rep in zip(chunk, collected, reports, strict=True):
                slug = task.slug
                if why is not None:
                    _record(tr, entries[eid], task, seed, got, None, store, summary, error=why)
                    summary.errors.append(
                        f"{tr.dir.name} ({slug}): {why}; stored as error, seed {seed}"
                    )
                    say(f"{slug} seed {seed}: infrastructure error ({why})")
                    continue
                rec = _record(
                    tr, entries[eid], task, seed, got, rep, store, summary, verify_s=share
                )
                summary.stored.append((eid, slug, seed))
                say(f"{slug} seed {seed}: {rec.artifact_status}, O-Eval {rec.o_eval_exact}")
    finally:
        store.close()
    return summary


CHUNK = 32  # trials read, verified (one Lean run with the default verifier) and stored at a time
_UNVERIFIED = object()  # no verifier: the trial is stored unverified


def _verify_chunk(
    chunk: list[tuple[HarborTrial, str, Any, int, str | None]],
    collected: list[tuple[str, bytes | None]],
    verifier: Verifier | None,
) -> tuple[list[Any], float]:
    """Per trial of the chunk: its report, the exception its verification raised, or
    `_UNVERIFIED` (no verifier; infrastructure errors are never verified); and the chunk's
    verification seconds per verified trial (`verify_each`: one Lean run per chunk)."""
    todo = [
        (k, task, data if status == "ok" else None)
        for k, ((_, _, task, _, why), (status, data)) in enumerate(
            zip(chunk, collected, strict=True)
        )
        if why is None and verifier is not None
    ]
    out: list[Any] = [_UNVERIFIED] * len(chunk)
    v0 = time.monotonic()
    if verifier is not None:
        reports = verify_each([(t, d) for _, t, d in todo], verifier)
        for (k, _, _), rep in zip(todo, reports, strict=True):
            out[k] = rep
    return out, (time.monotonic() - v0) / max(len(todo), 1)


def _record(
    tr: HarborTrial,
    entry: Entry,
    task: Any,
    seed: int,
    collected: tuple[str, bytes | None],
    report: Any,
    store: Store,
    summary: IngestSummary,
    *,
    error: str | None = None,
    verify_s: float = 0.0,
) -> TrialRecord:
    """Store one trial: its verification `report` (an exception a verification raised, or
    `_UNVERIFIED`/None: stored unverified), or, with `error`, an infrastructure failure (not
    verified; its collected artifact, if any, kept as a blob)."""
    scratch = store.scratch_dir()
    blobs = scratch / "blobs"
    blobs.mkdir()
    try:
        status, data = collected
        fields: dict[str, Any] = {}
        detail = f"harbor trial {tr.result.get('trial_name')} ({tr.environment})"
        if isinstance(report, Exception):  # a verifier crash is not a score either way
            fields = {"verdict": {"error": f"{type(report).__name__}: {report}"}}
            detail += "; verification raised"
        elif report is not None and report is not _UNVERIFIED and error is None:
            fields = _verdict_fields(report)
        exc = tr.exception
        if exc is not None:
            detail += f"; {exc.get('exception_type')}: {str(exc.get('exception_message'))[:300]}"
        rewards = (tr.result.get("verifier_result") or {}).get("rewards")
        ours = fields.get("o_eval")
        # Harbor's `reward` is whichever reward the export selected; `o_eval` is always there
        # (an export before `--reward` existed had only `reward`, then O-Eval)
        theirs = (
            rewards.get("o_eval", rewards.get("reward")) if isinstance(rewards, dict) else None
        )
        if theirs is not None and ours is not None and float(theirs) != float(ours):
            summary.reward_mismatches.append(
                f"{tr.dir.name}: Harbor's reward {theirs}, tbmm's verdict {ours} (stored)"
            )
        # blobs: Harbor's own record, the artifact, our verdict, the ATIF trajectory, logs
        (blobs / HARBOR_RESULT).write_text(json.dumps(tr.result, indent=1))
        if rewards is not None:
            (blobs / HARBOR_REWARD).write_text(json.dumps(rewards, indent=1, sort_keys=True))
        if data is not None and status == "ok":
            (blobs / Path(task.output_path).name).write_bytes(data)
        if fields.get("verdict") is not None:
            (blobs / "verdict.json").write_text(json.dumps(fields["verdict"], indent=1))
        for note in copy_agent_logs(tr.dir / layout.AGENT_DIR, blobs):
            detail += f"; {note}"
        _copy_capped(tr.dir / "verifier" / layout.TEST_STDOUT, blobs / "verifier-stdout.txt")
        usage = tr.result.get("agent_result") or {}
        # an agent that never ran spent nothing; otherwise Harbor's figure (None: unknown)
        cost = usage.get("cost_usd") if tr.agent_ran else 0.0
        rec = TrialRecord(
            entry_id=entry.entry_id,
            agent=entry.agent,
            model=entry.model,
            task=task.slug,
            suite=task.suite,
            seed=seed,
            backend=f"harbor:{tr.environment}",
            started_at=tr.started,
            finished_at=_time(tr.result.get("finished_at")) or tr.started,
            duration_s=_span(tr),
            setup_s=tr.seconds("environment_setup") + tr.seconds("agent_setup"),
            agent_s=tr.seconds("agent_execution"),
            verify_s=verify_s,
            exit_reason=tr.exit_reason(),
            detail=detail,
            turns=0,
            artifact_status=status,
            artifact_size=len(data) if data is not None else None,
            artifact_sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
            artifact=data if status == "ok" else None,
            tokens_in=int(usage.get("n_input_tokens") or 0),
            tokens_out=int(usage.get("n_output_tokens") or 0),
            requests=0,
            cost_usd=0.0 if tr.agent in MODEL_FREE_AGENTS else cost,
            status=STATUS_OK if error is None else STATUS_ERROR,
            error=None if error is None else f"harbor_infrastructure: {error}",
            **fields,
        )
        store.commit(rec, blobs)
        return rec
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _span(tr: HarborTrial) -> float:
    a, b = _time(tr.result.get("started_at")), _time(tr.result.get("finished_at"))
    return max(0.0, b - a) if a is not None and b is not None else 0.0
