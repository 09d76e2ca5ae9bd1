"""Trials and sweeps: run an agent on (task, seed) pairs, collect, verify, store.

Before anything is opened or stored, `run_sweep` refuses a configuration the agent cannot
run (`ConfigError`: a replay folder without the artifacts, say). Before the first trial it
runs the agent's pre-flight checks (its model endpoint answers and knows the model; its
program runs inside a sandbox like the trials'): a failure stops the sweep with
`PreflightError` and nothing is stored. During the sweep, an infrastructure failure
(harness.agents.errors) ends the trial with status `error` and its cause: it is stored, never
scored, and run again by the next `--resume`. An upstream rejection of the agent's request
is infrastructure only if the harness's own probe of the endpoint fails too; otherwise it is
the agent's failure (`agent_request_rejected`, scored as a missing artifact). A verification
that reaches no verdict (exit code 3, or the verifier raised) is an `error` too
(`no_verdict`), never a 0.
"""

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
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from harness.agents.errors import AGENT_REJECTED, ConfigError, InfraError, PreflightError
from harness.agents.registry import Agent, AgentContext, AgentOutcome, TaskLike
from harness.agents.trajectory import Trajectory
from harness.agents.usage import Pricing, UsageTotals
from harness.runs.atif import write_trajectory
from harness.runs.store import (
    EVENTS_FILE,
    STATUS_ERROR,
    STATUS_OK,
    TRAJECTORY_FILE,
    Store,
    TrialRecord,
)
from harness.sandbox.backends import Backend, Session
from harness.sandbox.bwrap import ABORT, Bind, Limits, kill_all_sandboxes, reap_stale
from tbmm.core.bounds import DEFAULT_CAPS

DEFAULT_ARTIFACT_MAX_BYTES = DEFAULT_CAPS.max_bytes  # the verifier's own cap (tbmm.core.bounds)
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


def verify_each(items: list[tuple[Any, bytes | None]], verifier: Verifier) -> list[Any]:
    """Per (task, artifact): the verifier's report, or the exception its verification
    raised (kept with its trial). The default verifier checks all of them in one Lean run
    (`tbmm.verify.verify_batch`, the same verdicts); if that batch fails as a whole, each
    is verified alone so that the fault stays with the trial at fault."""
    from tbmm.verify import verify_artifact, verify_batch

    if verifier is verify_artifact and items:
        try:
            return list(verify_batch(items))
        except Exception:  # noqa: BLE001 - isolated below, one trial at a time
            pass
    out: list[Any] = []
    for task, data in items:
        try:
            out.append(verifier(task, data))
        except Exception as exc:  # noqa: BLE001 - reported with its trial
            out.append(exc)
    return out


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


def scored_bytes(exit_reason: str | None, artifact_status: str, data: bytes | None) -> bytes | None:
    """What the verifier scores of a stored trial: its artifact, unless the file was
    rejected (missing, too large, not a regular file) or the trial ended with the agent's
    model request rejected (`agent_request_rejected`: scored as missing whatever it wrote,
    so a rejection can never be worth more than an answer)."""
    if artifact_status != "ok" or exit_reason == AGENT_REJECTED:
        return None
    return data


def no_verdict_cause(doc: dict[str, Any]) -> str | None:
    """`no_verdict: <status>: <error>` for a report that reached no verdict (exit code 3:
    budget exceeded, Lean disagreement), else None."""
    if doc.get("exit_code") != 3:
        return None
    why = str(doc.get("error") or "; ".join(map(str, doc.get("failing") or [])))
    return f"no_verdict: {doc.get('status', 'unknown')}: {why}"[:1000]


def classify_rejection(
    agent: Any, model: str | None, outcome: AgentOutcome, traj: Trajectory
) -> AgentOutcome:
    """An `endpoint_rejected` outcome checked with the harness's own probe (`agent.probe`):
    probe passes -> the agent's failure (`agent_request_rejected: <rejection>`, no longer
    infrastructure); probe fails (or the agent has none) -> `error`, with what it found."""
    assert outcome.infra is not None
    probe = getattr(agent, "probe", None)
    try:
        finding = (
            probe(model, outcome.rejected_paths)
            if probe is not None
            else "the agent has no endpoint probe"
        )
    except Exception as exc:  # noqa: BLE001 - a probe that crashed vouches for nothing
        finding = f"harness_fault: the probe raised {type(exc).__name__}: {exc}"
    traj.add("endpoint_probe", rejected=outcome.infra, finding=finding or "passed")
    if finding:
        outcome.infra = f"{outcome.infra}; harness probe: {finding}"[:1000]
        return outcome
    rejected = outcome.infra.split(":", 1)[1].strip()
    return AgentOutcome(
        AGENT_REJECTED,
        f"{AGENT_REJECTED}: {rejected} (the harness's own probe of the endpoint passed)"[:1000],
        outcome.turns,
    )


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


def api_model(agent: Any, model: str | None) -> str | None:
    """The model name the agent's requests carry for the entry's `model`: a route's name
    (`openai/gpt-5` -> `gpt-5`, harness.agents.providers), else the entry's model itself."""
    route = getattr(agent, "route", None)
    if route is not None and model == route.label:
        return route.name
    return model


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
    pricing: Pricing | None = None,
    totals: UsageTotals | None = None,
) -> TrialRecord:
    """One trial, end to end; returns the committed record. Never raises for agent faults;
    an infrastructure failure gives a committed record with status `error`. `totals` (made
    here when not given) counts the trial's model use as it goes: the sweep's budget reads
    the running trials' cost from it."""
    started = time.time()
    t0 = time.monotonic()
    scratch = store.scratch_dir()
    blobs = scratch / "blobs"
    blobs.mkdir()
    trial_dir = scratch / "trial"
    limits = trial_limits(task, timeout)
    wall = limits.wall_sec
    traj = Trajectory(blobs / EVENTS_FILE)
    stdout_p, stderr_p = blobs / "stdout.txt", blobs / "stderr.txt"
    stdout_p.touch()
    stderr_p.touch()

    def opener(extra: tuple[Bind, ...], env: dict[str, str]) -> Session:
        return open_session(backend, task, trial_dir, limits, extra, env)

    ctx = AgentContext(
        task=task,
        seed=seed,
        model=api_model(agent, entry.model),
        opener=opener,
        deadline=time.monotonic() + wall,
        trajectory=traj,
        stdout_path=stdout_p,
        stderr_path=stderr_p,
        artifact_max_bytes=artifact_max_bytes,
        totals=totals if totals is not None else UsageTotals(pricing=pricing),
    )
    traj.add("trial", entry=entry.entry_id, task=task.slug, seed=seed, backend=backend.describe())
    setup_s = time.monotonic() - t0
    a0 = time.monotonic()
    try:
        outcome = agent.run(ctx)
    except InfraError as exc:
        traj.add("infra_error", cause=exc.cause)
        outcome = AgentOutcome("error", exc.detail[:500], infra=exc.cause)
    except Exception:
        tb = traceback.format_exc()
        traj.add("harness_error", traceback=tb)
        with open(stderr_p, "a") as fh:
            fh.write("\n[tbmm harness error]\n" + tb)
        last = tb.strip().splitlines()[-1][:500]
        outcome = AgentOutcome("harness_error", last, infra=f"harness_fault: {last}")
    if outcome.infra is not None and outcome.infra.startswith("endpoint_rejected:"):
        outcome = classify_rejection(agent, api_model(agent, entry.model), outcome, traj)
    agent_s = time.monotonic() - a0
    results_dir = ctx.results_dir or trial_dir / "results"
    try:
        art_status, data, size, reason = read_artifact(
            results_dir, task.output_path, artifact_max_bytes
        )
    finally:
        ctx.close()
    detail = "; ".join(x for x in (outcome.detail, reason) if x)
    cause = outcome.infra
    fields: dict[str, Any] = {}
    v0 = time.monotonic()
    # An infrastructure error is not a score: its artifact (if any) is kept, not verified.
    # Otherwise None (missing, rejected file, rejected model request) is scored as missing.
    if verifier is not None and cause is None:
        try:
            fields = _verdict_fields(
                verifier(task, scored_bytes(outcome.exit_reason, art_status, data))
            )
        except Exception as exc:  # our fault (a Lean toolchain missing, a bug): no verdict
            tb = traceback.format_exc()
            fields = {"verdict": {"error": tb}}
            detail = "; ".join(x for x in (detail, "verification raised") if x)
            cause = f"no_verdict: verifier_fault: {type(exc).__name__}: {exc}"[:1000]
        else:
            cause = no_verdict_cause(fields.get("verdict") or {})
        if cause is not None:  # no verdict is not a 0: kept for diagnosis, never a score
            fields.update(o_eval=None, o_eval_exact=None)
    status = STATUS_ERROR if cause else STATUS_OK
    verify_s = time.monotonic() - v0
    if data is not None:
        (blobs / Path(task.output_path).name).write_bytes(data)
    if fields.get("verdict") is not None:
        (blobs / "verdict.json").write_text(json.dumps(fields["verdict"], indent=1))
    traj.add(
        "end",
        exit_reason=outcome.exit_reason,
        artifact=art_status,
        detail=detail,
        status=status,
        **({"error": cause} if cause else {}),
    )
    traj.close()
    trajectory = _write_atif(agent, entry, task, seed, started, blobs, backend)
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
        artifact_status=art_status,
        artifact_size=size,
        artifact_sha256=hashlib.sha256(data).hexdigest() if data is not None else None,
        artifact=data,
        tokens_in=totals.input_tokens,
        tokens_out=totals.output_tokens,
        tokens_cache_read=totals.cached_tokens,
        tokens_cache_write=totals.cache_write_tokens,
        requests=totals.requests,
        cost_usd=_trial_cost(agent, totals),
        status=status,
        error=cause,
        trajectory=trajectory,
        **fields,
    )
    if not ABORT.is_set():
        # An abort (Ctrl-C) is nobody's result: leave it uncommitted so --resume reruns it.
        store.commit(rec, blobs)
    shutil.rmtree(scratch, ignore_errors=True)
    return rec


def open_session(
    backend: Backend,
    task: TaskLike,
    trial_dir: Path,
    limits: Limits,
    extra: tuple[Bind, ...],
    env: dict[str, str],
) -> Session:
    """The trial's sandbox; a failure to start it is an infrastructure error."""
    try:
        return backend.open(
            data_dir=Path(task.data_dir),
            trial_dir=trial_dir,
            limits=limits,
            extra=extra,
            env=env,
            task=task,
        )
    except InfraError:
        raise
    except Exception as exc:
        raise InfraError("sandbox_start", f"{type(exc).__name__}: {exc}"[:1000]) from exc


def tbmm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tbmm")
    except PackageNotFoundError:
        return "0+unknown"


def _write_atif(
    agent: Agent,
    entry: Entry,
    task: TaskLike,
    seed: int,
    started: float,
    blobs: Path,
    backend: Backend,
) -> str | None:
    """The trial's ATIF trajectory from its raw events; a failure here never loses the trial
    (the raw events stay, and `tbmm runs convert-trajectories` can retry)."""
    try:
        write_trajectory(
            blobs / EVENTS_FILE,
            blobs / TRAJECTORY_FILE,
            agent_name=getattr(agent, "atif_name", None) or agent.name,
            agent_version=getattr(agent, "version", None) or tbmm_version(),
            model=entry.model,
            session_id=str(uuid.uuid4()),
            started_at=started,
            extra={"entry": entry.entry_id, "task": task.slug, "seed": seed},
        )
    except Exception:
        (blobs / "trajectory-error.txt").write_text(traceback.format_exc())
        return None
    return TRAJECTORY_FILE


def trial_failed(rec: TrialRecord) -> bool:
    """The agent ran but did not deliver (an infrastructure error is counted apart)."""
    return rec.status == STATUS_OK and (
        rec.exit_reason != "completed" or rec.artifact_status != "ok"
    )


def trial_errored(rec: TrialRecord) -> bool:
    return rec.status == STATUS_ERROR


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
    failed: int  # the agent ran and delivered no usable artifact (scored as such)
    wall_s: float
    records: list[TrialRecord]
    errored: int = 0  # infrastructure errors: stored as `error`, not scored, rerun by --resume
    retried: int = 0  # stored `error` trials this sweep ran again
    not_started: int = 0  # trials of the plan left for later (--limit, or the budget)
    stopped: str | None = None  # why the entry's budget (--max-cost) stopped the sweep


def check_config(agent: Agent, tasks: Sequence[TaskLike], seeds: Sequence[int]) -> None:
    """ConfigError (nothing opened, nothing stored) when the agent's `check_config` finds
    problems with the selected (task, seed) pairs; agents without the check pass."""
    check = getattr(agent, "check_config", None)
    problems = list(check(tasks, seeds)) if check is not None else []
    if problems:
        raise ConfigError(problems)


def preflight(
    agent: Agent,
    backend: Backend,
    tasks: Sequence[TaskLike],
    store: Store,
    timeout: float | None = None,
    model: str | None = None,
) -> list[str]:
    """The agent's own pre-flight checks (endpoint reachable and knowing `model`, program
    runnable in a sandbox like the trials'); problems as one line each. Agents without
    checks pass."""
    check = getattr(agent, "preflight", None)
    if check is None or not tasks:
        return []
    task = tasks[0]
    limits = trial_limits(task, min(timeout or 120.0, 120.0))
    scratch = store.scratch_dir()
    opened: list[Session] = []

    def opener(extra: tuple[Bind, ...] = (), env: dict[str, str] | None = None) -> Session:
        s = open_session(backend, task, scratch / "trial", limits, extra, dict(env or {}))
        opened.append(s)
        return s

    try:
        return list(check(opener, model))
    except InfraError as exc:
        return [exc.cause]
    finally:
        for s in opened:
            with contextlib.suppress(Exception):
                s.close()
        shutil.rmtree(scratch, ignore_errors=True)


def progress_mode(console: Console, progress: bool) -> str:
    """`bar` on a terminal, `lines` otherwise (CI logs, pipes), `off` when disabled.
    $TBMM_PROGRESS=bar|lines|off overrides."""
    forced = os.environ.get("TBMM_PROGRESS", "").strip().lower()
    if forced in ("bar", "lines", "off"):
        return forced
    if not progress:
        return "off"
    return "bar" if console.is_terminal else "lines"


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
    pricing: Pricing | None = None,
    name: str | None = None,
    check: bool = True,
    limit: int | None = None,
    budget_usd: float | None = None,
) -> SweepSummary:
    """Run every (task, seed) of this entry; with `resume`, only combos not yet stored and
    those stored as infrastructure `error` (which are replaced).

    A configuration the agent refuses raises `ConfigError` before the store is opened.
    Without `resume`, an entry that already has trials in the DB is an error (no silent
    overwrite, no duplicates). Each trial commits on its own, so a killed sweep loses at
    most the trials that were running. With `check`, the agent's pre-flight checks run
    first and a failure raises `PreflightError` before any trial. `pricing` costs the
    model's tokens (not part of the entry's identity); `name` is the entry's display name.

    `limit` starts at most that many of the trials to run (the rest stay missing, run by a
    later `--resume`). `budget_usd` is the entry's budget: no trial starts once what the
    entry has spent (`Store.spent`, earlier sweeps included) plus an estimate for the trials
    still running reaches it (`_Budget`); the trials left
    are recorded on the entry (`Store.set_stopped`), which is partial until they are stored.
    Neither is part of the entry's identity: they say how much of it runs now, not how.
    """
    console = console or Console(stderr=True)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    check_config(agent, tasks, seed_list)  # before the lock file, the store, any sandbox
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
            done = store.done(entry.entry_id)
            errored = store.errored(entry.entry_id)
            combos = [(t, s) for t in tasks for s in seed_list]
            if (done or errored) and not resume:
                raise RuntimeError(
                    f"{len(done) + len(errored)} trials of entry {entry.entry_id} already in "
                    f"{db_path}; pass --resume to run only the missing and errored ones"
                )
            todo = [(t, s) for t, s in combos if (t.slug, s) not in done]
            later: list[tuple[TaskLike, int]] = []
            if limit is not None and len(todo) > limit:
                todo, later = todo[:limit], todo[limit:]
            retried = sum(1 for t, s in todo if (t.slug, s) in errored)
            if check and todo:
                problems = preflight(
                    agent, backend, [t for t, _ in todo], store, timeout, api_model(agent, model)
                )
                if problems:
                    raise PreflightError(problems)
            store.ensure_entry(entry.entry_id, entry.agent, entry.model, entry.settings, name)
            console.print(
                f"entry {entry.entry_id}{f' ({name})' if name else ''}: {len(combos)} trials "
                f"planned, {len(combos) - len(todo) - len(later)} already stored, {len(todo)} to run"
                + (f" ({retried} errored before)" if retried else "")
                + (f", {len(later)} left for later by --limit {limit}" if later else "")
                + f", concurrency {concurrency}, {backend.describe()}",
                highlight=False,
            )
            if pricing is not None:
                console.print(
                    f"prices (USD per 1M tokens): input {pricing.input:g}, cached "
                    f"{pricing.cache_read if pricing.cache_read is not None else pricing.input:g},"
                    f" output {pricing.output:g}"
                    + (f" — {pricing.source}" if pricing.source else ""),
                    highlight=False,
                )
            if budget_usd is not None:
                console.print(
                    f"budget: {store.spent(entry.entry_id):.4f} of {budget_usd:g} USD spent by "
                    "this entry so far; no trial starts once that plus an estimate for the "
                    "trials running reaches it",
                    highlight=False,
                )
            caps = getattr(agent, "caps", None)
            budget = _Budget(
                store, entry.entry_id, budget_usd, trial_cap=getattr(caps, "cost_usd", None)
            )
            records = _execute(
                todo,
                budget=budget,
                agent=agent,
                entry=entry,
                backend=backend,
                store=store,
                verifier=verifier,  # type: ignore[arg-type]
                timeout=timeout,
                artifact_max_bytes=artifact_max_bytes,
                concurrency=max(1, concurrency),
                console=console,
                mode=progress_mode(console, progress),
                pricing=pricing,
            )
            stopped = _record_stop(store, entry.entry_id, budget, len(combos))
        finally:
            store.close()
    return SweepSummary(
        entry_id=entry.entry_id,
        planned=len(combos),
        skipped=len(combos) - len(todo),
        done=len(records),
        failed=sum(trial_failed(r) for r in records),
        wall_s=time.monotonic() - t_start,
        records=records,
        errored=sum(trial_errored(r) for r in records),
        retried=retried,
        not_started=len(later) + len(budget.not_started),
        stopped=stopped,
    )


@dataclass
class _Budget:
    """The entry's budget (`--max-cost`) as the sweep spends it. `exhausted` is asked before
    each trial starts: it is reached when the entry's recorded spend plus an estimate for
    every trial still running meets the budget. A running trial's estimate is the larger of
    its cost so far (its live `UsageTotals`) and `per_trial`: the per-trial cap
    (`--max-trial-cost`) or, above it, the costliest trial of the entry stored so far. So
    with --concurrency K the sweep does not start K trials near the end of the budget
    when only one fits (the overshoot it would otherwise allow: up to K trials' cost).

    Only the sweep's main thread calls it: a trial counts as running until the main
    thread has taken its record (`finish`), and its cost then moves to `spent`, so a
    trial committed meanwhile is never counted twice. The trials it kept from starting
    are collected."""

    store: Store
    entry_id: str
    usd: float | None
    trial_cap: float | None = None  # the per-trial cost cap (--max-trial-cost), if any
    not_started: list[tuple[str, int]] = field(default_factory=list)
    spent_at_stop: float | None = None
    running_at_stop: float = 0.0  # the running trials' estimate when it stopped
    spent: float = 0.0
    largest: float = 0.0
    _running: dict[int, UsageTotals] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.usd is not None:
            self.spent = self.store.spent(self.entry_id)
            self.largest = self.store.largest_cost(self.entry_id)

    @property
    def per_trial(self) -> float:
        """What a running trial is expected to cost at least."""
        return max(self.trial_cap or 0.0, self.largest)

    def start(self, totals: UsageTotals) -> int:
        """A trial starts with these live totals; returns its token for `finish`."""
        token = id(totals)
        self._running[token] = totals
        return token

    def finish(self, token: int, cost: float | None) -> None:
        """Its record reached the main thread: its cost (as committed) is spent."""
        self._running.pop(token, None)
        if cost is not None:
            self.spent += cost
            self.largest = max(self.largest, cost)

    def running_estimate(self) -> float:
        each = self.per_trial
        return sum(max(t.known_cost_usd, each) for t in self._running.values())

    def exhausted(self) -> bool:
        if self.usd is None:
            return False
        running = self.running_estimate()
        if self.spent + running >= self.usd:
            self.spent_at_stop, self.running_at_stop = self.spent, running
            return True
        return False


def _record_stop(store: Store, entry_id: str, budget: _Budget, planned: int) -> str | None:
    """Keep the entry's stop record true: the trials a budget kept from starting (earlier
    sweeps' too) that are still not stored; cleared once every one of them is. Returns this
    sweep's stop reason, if its budget stopped it."""
    done = store.done(entry_id) | store.errored(entry_id)
    old = store.stopped().get(entry_id) or {}
    pending = {tuple(x) for x in old.get("not_started", []) if isinstance(x, list | tuple)}
    pending |= set(budget.not_started)
    pending = {(str(t), int(s)) for t, s in pending if (str(t), int(s)) not in done}
    reason = None
    if budget.not_started:
        running = (
            f" with {budget.running_at_stop:.4f} USD estimated for the trials still running"
            if budget.running_at_stop
            else ""
        )
        reason = (
            f"budget: the entry had spent {budget.spent_at_stop:.4f} USD{running}, reaching "
            f"--max-cost {budget.usd:g} USD; {len(budget.not_started)} of {planned} planned "
            "trial(s) not started"
        )
    if not pending:
        store.set_stopped(entry_id, None)
        return reason
    store.set_stopped(
        entry_id,
        {
            "reason": reason or old.get("reason") or "budget reached before every trial started",
            "not_started": sorted([t, s] for t, s in pending),
            "budget_usd": budget.usd if reason else old.get("budget_usd"),
        },
    )
    return reason


def _outcome_line(rec: TrialRecord) -> str:
    if rec.status == STATUS_ERROR:
        return f"ERROR {rec.error}"
    if rec.o_eval is not None:
        return f"O-Eval {rec.o_eval:.3f} (gate {rec.gate}, Lean {rec.lean}, {rec.exit_reason})"
    return f"{rec.exit_reason}, artifact {rec.artifact_status}"


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
    mode: str,
    pricing: Pricing | None = None,
    budget: _Budget | None = None,
) -> list[TrialRecord]:
    records: list[TrialRecord] = []
    running = 0
    failed = 0
    errored = 0
    lock = threading.Lock()
    t0 = time.monotonic()
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "running {task.fields[running]}  failed {task.fields[failed]}  "
            "errors {task.fields[errored]}"
        ),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    total = len(todo)
    width = len(str(total))
    with Progress(*columns, console=console, disable=mode != "bar", transient=False) as prog:
        bar = prog.add_task(entry.entry_id, total=total, running=0, failed=0, errored=0)

        def one(task: TaskLike, seed: int, totals: UsageTotals) -> TrialRecord:
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
                    pricing=pricing,
                    totals=totals,
                )
            finally:
                with lock:
                    running -= 1
                    prog.update(bar, running=running)

        pool = ThreadPoolExecutor(max_workers=concurrency)
        pending: set[Future[TrialRecord]] = set()
        tokens: dict[Future[TrialRecord], int] = {}
        queue = list(todo)
        try:
            while queue or pending:
                while queue and len(pending) < concurrency:
                    if budget is not None and budget.exhausted():
                        budget.not_started.extend((t.slug, s) for t, s in queue)
                        ahead = (
                            f" (+{budget.running_at_stop:.4f} USD estimated for the "
                            f"{len(pending)} running)"
                            if pending
                            else ""
                        )
                        console.print(
                            f"[yellow]budget reached:[/yellow] the entry has spent "
                            f"{budget.spent_at_stop:.4f} USD{ahead} of --max-cost "
                            f"{budget.usd:g}; "
                            f"{len(queue)} trial(s) not started (the entry is partial until "
                            "a `--resume` with a larger budget runs them)",
                            highlight=False,
                        )
                        queue.clear()
                        prog.update(bar, total=len(records) + len(pending))
                        break
                    t, s = queue.pop(0)
                    totals = UsageTotals(pricing=pricing)
                    fut = pool.submit(one, t, s, totals)
                    if budget is not None:
                        tokens[fut] = budget.start(totals)
                    pending.add(fut)
                if not pending:
                    break
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    rec = fut.result()
                    if budget is not None:
                        budget.finish(tokens.pop(fut), rec.cost_usd)
                    records.append(rec)
                    failed += trial_failed(rec)
                    errored += trial_errored(rec)
                    if mode == "lines":
                        n = len(records)
                        elapsed = time.monotonic() - t0
                        eta = elapsed / n * (total - n)
                        console.print(
                            f"[{n:>{width}}/{total}] {rec.task} seed {rec.seed}: "
                            f"{_outcome_line(rec)} | {rec.duration_s:.1f} s | running "
                            f"{running}, failed {failed}, errors {errored} | elapsed "
                            f"{elapsed:.0f} s, ETA {eta:.0f} s",
                            highlight=False,
                            markup=False,
                            soft_wrap=True,
                        )
                    elif trial_failed(rec) or trial_errored(rec):
                        style = "red" if trial_errored(rec) else "yellow"
                        console.print(
                            f"[{style}]"
                            + escape(
                                f"{rec.task} seed {rec.seed}: {_outcome_line(rec)} "
                                f"{rec.detail[:200]}"
                            ),
                            highlight=False,
                        )
                    prog.update(bar, advance=1, failed=failed, errored=errored)
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


def _trial_cost(agent: Any, totals: UsageTotals) -> float | None:
    """An agent that calls no model (the oracle) costs exactly $0; one whose artifacts were
    made elsewhere (replay) has an unknown cost; otherwise the proxied responses' cost
    (None when one of them could not be priced)."""
    if not getattr(agent, "uses_model", True):
        return 0.0
    if not getattr(agent, "cost_known", True):
        return None
    return totals.cost_usd
