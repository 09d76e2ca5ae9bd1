"""Trials and sweeps: run an agent on (task, seed) pairs, collect, verify, store."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import stat
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from harness.agents import Agent, AgentContext, AgentOutcome, TaskLike
from harness.backends import Backend, Session
from harness.sandbox import ABORT, Bind, Limits, kill_all_sandboxes, reap_stale
from harness.store import Store, TrialRecord
from harness.trajectory import Trajectory
from tbmm.bounds import DEFAULT_CAPS

DEFAULT_ARTIFACT_MAX_BYTES = DEFAULT_CAPS.max_bytes  # the verifier's own cap (tbmm.bounds)
Verifier = Callable[[Any, bytes | None], Any]  # tbmm.verify.verify_artifact(task, data)


@dataclass(frozen=True)
class Entry:
    """A leaderboard entry: agent + model + settings. Its id is stable across runs."""

    agent: str
    model: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def entry_id(self) -> str:
        base = self.agent + (f"@{self.model}" if self.model else "")
        if not self.settings:
            return base
        blob = json.dumps(self.settings, sort_keys=True, default=str)
        return f"{base}#{hashlib.sha256(blob.encode()).hexdigest()[:8]}"

    def __hash__(self) -> int:
        return hash(self.entry_id)


def default_verifier() -> tuple[Verifier | None, str]:
    """`tbmm.verify.verify_artifact` if it exists yet, else None and the reason."""
    try:
        from tbmm.verify import verify_artifact  # type: ignore[import-not-found]
    except ImportError as exc:
        return None, f"verification unavailable ({exc}); artifacts are stored unverified"
    return verify_artifact, "verification: tbmm.verify.verify_artifact"


def read_artifact(
    results_dir: Path, output_path: str, max_bytes: int
) -> tuple[str, bytes | None, int | None, str]:
    """(status, bytes, size, reason). Never follows a symlink: the file was written by the
    agent, and a link could otherwise make the host read, say, the task's anchor."""
    path = results_dir / Path(output_path).name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return "missing", None, None, f"no artifact at {output_path}"
    except OSError as exc:
        return "not_regular_file", None, None, f"artifact is not a regular file ({exc.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not_regular_file", None, None, "artifact is not a regular file"
        if st.st_size > max_bytes:
            return (
                "too_large",
                None,
                st.st_size,
                f"artifact rejected: {st.st_size} bytes is over the {max_bytes}-byte limit",
            )
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:
            return (
                "too_large",
                None,
                len(data),
                f"artifact rejected: over the {max_bytes}-byte limit",
            )
        return "ok", data, len(data), ""
    finally:
        os.close(fd)


def _verdict_fields(verdict: Any) -> dict[str, Any]:
    doc = verdict.model_dump(mode="json") if hasattr(verdict, "model_dump") else dict(verdict)
    o_eval = doc.get("o_eval")
    return {
        "verdict": doc,
        "o_eval": float(o_eval) if o_eval is not None else None,
        "o_eval_exact": doc.get("o_eval_exact"),
        "gate": doc.get("gate"),
        "lean": doc.get("lean"),
        "verify_exit": doc.get("exit_code"),
    }


def trial_limits(task: TaskLike, timeout: float | None = None) -> Limits:
    """A trial's limits, from the task's task.toml (CPUs, memory, storage, agent timeout)."""
    wall = float(timeout if timeout is not None else task.agent_timeout_sec)
    return Limits(
        wall_sec=wall,
        cpus=int(task.cpus),
        memory_mb=int(task.memory_mb),
        storage_mb=int(task.storage_mb),
    )


def run_trial(
    *,
    agent: Agent,
    entry: Entry,
    task: TaskLike,
    seed: int,
    backend: Backend,
    store: Store,
    verifier: Verifier | None,
    timeout: float | None = None,
    artifact_max_bytes: int = DEFAULT_ARTIFACT_MAX_BYTES,
) -> TrialRecord:
    """One trial, end to end; returns the committed record. Never raises for agent faults."""
    started = time.time()
    t0 = time.monotonic()
    scratch = store.scratch_dir()
    blobs = scratch / "blobs"
    blobs.mkdir()
    trial_dir = scratch / "trial"
    limits = trial_limits(task, timeout)
    wall = limits.wall_sec
    traj = Trajectory(blobs / "trajectory.jsonl")
    stdout_p, stderr_p = blobs / "stdout.txt", blobs / "stderr.txt"
    stdout_p.touch()
    stderr_p.touch()

    def opener(extra: tuple[Bind, ...], env: dict[str, str]) -> Session:
        return backend.open(
            data_dir=Path(task.data_dir),
            trial_dir=trial_dir,
            limits=limits,
            extra=extra,
            env=env,
            task=task,
        )

    ctx = AgentContext(
        task=task,
        seed=seed,
        model=entry.model,
        opener=opener,
        deadline=time.monotonic() + wall,
        trajectory=traj,
        stdout_path=stdout_p,
        stderr_path=stderr_p,
        artifact_max_bytes=artifact_max_bytes,
    )
    traj.add("trial", entry=entry.entry_id, task=task.slug, seed=seed, backend=backend.describe())
    setup_s = time.monotonic() - t0
    a0 = time.monotonic()
    try:
        outcome = agent.run(ctx)
    except Exception:
        tb = traceback.format_exc()
        traj.add("harness_error", traceback=tb)
        with open(stderr_p, "a") as fh:
            fh.write("\n[tbmm harness error]\n" + tb)
        outcome = AgentOutcome("harness_error", tb.strip().splitlines()[-1][:500])
    agent_s = time.monotonic() - a0
    results_dir = ctx.results_dir or trial_dir / "results"
    try:
        status, data, size, reason = read_artifact(
            results_dir, task.output_path, artifact_max_bytes
        )
    finally:
        ctx.close()
    detail = "; ".join(x for x in (outcome.detail, reason) if x)
    fields: dict[str, Any] = {}
    v0 = time.monotonic()
    if verifier is not None:  # None = missing or rejected: the verifier scores it as missing
        try:
            fields = _verdict_fields(verifier(task, data))
        except Exception:
            tb = traceback.format_exc()
            fields = {"verdict": {"error": tb}}
            detail = "; ".join(x for x in (detail, "verification raised") if x)
    verify_s = time.monotonic() - v0
    if data is not None:
        (blobs / Path(task.output_path).name).write_bytes(data)
    if fields.get("verdict") is not None:
        (blobs / "verdict.json").write_text(json.dumps(fields["verdict"], indent=1))
    traj.add("end", exit_reason=outcome.exit_reason, artifact=status, detail=detail)
    traj.close()
    totals = ctx.totals
    rec = TrialRecord(
        entry_id=entry.entry_id,
        agent=entry.agent,
        model=entry.model,
        task=task.slug,
        suite=getattr(task, "suite", None),
        seed=seed,
        backend=backend.describe(),
        started_at=started,
        finished_at=time.time(),
        duration_s=time.monotonic() - t0,
        setup_s=setup_s,
        agent_s=agent_s,
        verify_s=verify_s,
        exit_reason=outcome.exit_reason,
        detail=detail,
        turns=outcome.turns,
        artifact_status=status,
        artifact_size=size,
        artifact_sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
        artifact=data,
        tokens_in=totals.input_tokens,
        tokens_out=totals.output_tokens,
        requests=totals.requests,
        # An agent that calls no model (the oracle) costs exactly $0; otherwise unknown stays None.
        cost_usd=totals.cost_usd if getattr(agent, "uses_model", True) else 0.0,
        **fields,
    )
    if outcome.exit_reason != "harness_error" and not ABORT.is_set():
        # A harness fault or an abort is not the agent's: leave it uncommitted so that
        # --resume runs it again.
        store.commit(rec, blobs)
    shutil.rmtree(scratch, ignore_errors=True)
    return rec


def trial_failed(rec: TrialRecord) -> bool:
    return rec.exit_reason != "completed" or rec.artifact_status != "ok"


@contextlib.contextmanager
def sweep_lock(db_path: Path) -> Iterator[None]:
    """One sweep per DB at a time (scratch cleanup would hurt a concurrent one)."""
    lock_path = Path(str(db_path) + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RuntimeError(f"another sweep is using {db_path}") from exc
        yield


@dataclass
class SweepSummary:
    entry_id: str
    planned: int
    skipped: int
    done: int
    failed: int
    wall_s: float
    records: list[TrialRecord]


def run_sweep(
    agent: Agent,
    model: str | None,
    tasks: Sequence[TaskLike],
    seeds: int | Sequence[int],
    backend: Backend,
    concurrency: int,
    db_path: Path,
    resume: bool,
    *,
    timeout: float | None = None,
    verifier: Verifier | None | str = "default",
    artifact_max_bytes: int = DEFAULT_ARTIFACT_MAX_BYTES,
    console: Console | None = None,
    progress: bool = True,
) -> SweepSummary:
    """Run every (task, seed) of this entry; with `resume`, only combos not yet stored.

    Without `resume`, an entry that already has trials in the DB is an error (no silent
    overwrite, no duplicates). Each trial commits on its own, so a killed sweep loses at
    most the trials that were running.
    """
    console = console or Console(stderr=True)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    settings = dict(agent.settings())
    if timeout is not None:
        settings["timeout"] = timeout
    entry = Entry(agent.name, model, settings)
    if verifier == "default":
        verifier, why = default_verifier()
        console.print(why)
    t_start = time.monotonic()
    with sweep_lock(db_path):
        store = Store(db_path)
        try:
            reaped = reap_stale()  # before clean_tmp: a killed sweep's disks may be mounted
            if reaped:
                console.print(reaped)
            store.clean_tmp()
            store.ensure_entry(entry.entry_id, entry.agent, entry.model, entry.settings)
            done = store.done(entry.entry_id)
            combos = [(t, s) for t in tasks for s in seed_list]
            if done and not resume:
                raise RuntimeError(
                    f"{len(done)} trials of entry {entry.entry_id} already in {db_path}; "
                    "pass --resume to run only the missing ones"
                )
            todo = [(t, s) for t, s in combos if (t.slug, s) not in done]
            console.print(
                f"entry {entry.entry_id}: {len(combos)} trials planned, "
                f"{len(combos) - len(todo)} already stored, {len(todo)} to run, "
                f"concurrency {concurrency}, {backend.describe()}"
            )
            records = _execute(
                todo,
                agent=agent,
                entry=entry,
                backend=backend,
                store=store,
                verifier=verifier,  # type: ignore[arg-type]
                timeout=timeout,
                artifact_max_bytes=artifact_max_bytes,
                concurrency=max(1, concurrency),
                console=console,
                show=progress,
            )
        finally:
            store.close()
    failed = sum(trial_failed(r) for r in records)
    return SweepSummary(
        entry_id=entry.entry_id,
        planned=len(combos),
        skipped=len(combos) - len(todo),
        done=len(records),
        failed=failed,
        wall_s=time.monotonic() - t_start,
        records=records,
    )


def _execute(
    todo: list[tuple[TaskLike, int]],
    *,
    agent: Agent,
    entry: Entry,
    backend: Backend,
    store: Store,
    verifier: Verifier | None,
    timeout: float | None,
    artifact_max_bytes: int,
    concurrency: int,
    console: Console,
    show: bool,
) -> list[TrialRecord]:
    records: list[TrialRecord] = []
    running = 0
    failed = 0
    lock = threading.Lock()
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("running {task.fields[running]}  failed {task.fields[failed]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=not show, transient=False) as prog:
        bar = prog.add_task(entry.entry_id, total=len(todo), running=0, failed=0)

        def one(task: TaskLike, seed: int) -> TrialRecord:
            nonlocal running
            with lock:
                running += 1
                prog.update(bar, running=running)
            try:
                return run_trial(
                    agent=agent,
                    entry=entry,
                    task=task,
                    seed=seed,
                    backend=backend,
                    store=store,
                    verifier=verifier,
                    timeout=timeout,
                    artifact_max_bytes=artifact_max_bytes,
                )
            finally:
                with lock:
                    running -= 1
                    prog.update(bar, running=running)

        pool = ThreadPoolExecutor(max_workers=concurrency)
        pending: set[Future[TrialRecord]] = set()
        queue = list(todo)
        try:
            while queue or pending:
                while queue and len(pending) < concurrency:
                    t, s = queue.pop(0)
                    pending.add(pool.submit(one, t, s))
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    rec = fut.result()
                    records.append(rec)
                    if trial_failed(rec):
                        failed += 1
                        console.print(
                            f"[yellow]{rec.task} seed {rec.seed}: {rec.exit_reason}, "
                            f"artifact {rec.artifact_status} {rec.detail[:200]}"
                        )
                    prog.update(bar, advance=1, failed=failed)
        except BaseException:
            # Ctrl-C (or a store failure): stop agents, kill sandboxes, commit nothing more.
            ABORT.set()
            n = kill_all_sandboxes()
            console.print(f"[red]aborting: killed {n} running sandbox(es); rerun with --resume")
            pool.shutdown(wait=True, cancel_futures=True)
            ABORT.clear()
            raise
        pool.shutdown(wait=True)
    return records
