"""The leaderboard (paper §4.2, Table 2): per-entry means over seeds, exact until display.

Input is a flat list of `TrialRow` (one per entry × task × seed), so this module does not
depend on how results are stored. Definitions (all means are over the entry's seeds, the
seeds being those that appear in its rows; a (task, seed) with no row is a *missing
trial*):

* **Artifacts**: per seed, the number of tasks (of all tasks, the fixed denominator)
  whose artifact was a readable JSON object (status ``scored`` or ``gate_failed``); mean.
* **O-Eval**: per seed, the mean over the *headline* tasks (all tasks minus the
  literature-split ones) of the task O-Eval (eq. 1); a trial that is not ``scored``
  (gate failed, missing, unreadable, error) or is missing counts 0. Mean ± sample std
  over seeds; with one seed the std is "n/a", never 0.
* **Multi-BO** (eq. 2): per seed, the mean over headline tasks of
  ``multi_bo_cell(o_t, f_t)`` with ``f_t`` the task's stored baseline F (``floor.json``,
  the same F as every verdict's Robust BO-Eval; `tbmm.verdict.floor`). A trial without a readable
  artifact (missing, unreadable, error, or no row) scores the cell −1 ("a missing artifact
  scores −1"); a gate-failed trial enters with o = 0. n/a when no F is given.
* **Skill** (the default reward of the RL adapters and `tbmm serve`): per seed, the mean
  over headline tasks of ``rules.skill(R, 1, F_t)``, R the trial's raw score and F_t the
  task's stored naive floor (``floor.json``: max of F and the best naive answer's raw
  score); a trial that is not ``scored``, and a missing trial, counts 0. n/a when no floor
  is given.
* **Robust BO-Eval**: per seed, the mean over headline tasks of the trial's Robust
  BO-Eval; every trial that is not ``scored``, and every missing trial, counts −1.
* **Cost**: per seed, the sum of the cost of the seed's trials (all tasks); mean over
  seeds. n/a when any trial's cost is unknown.
* **Gate-zeroed cells**: the number of ``gate_failed`` trials (all tasks, all seeds).
* **Errors**: the number of trials without a score (status ``infra_error``): an
  infrastructure error (endpoint unreachable or failing the harness's own probe, proxy
  failure, binary missing, sandbox start failure; see harness.agents.errors) or a verification
  that reached no verdict (a report with status ``budget_exceeded`` or
  ``lean_disagreement``, exit code 3: cause ``no_verdict``). They are not scores: every
  mean above leaves them out (a seed's O-Eval is the mean over its headline tasks
  *without* an error; a seed whose headline trials all errored drops out of the entry's
  seed statistics), and the count and causes are shown beside the means. `tbmm run
  --resume` replaces them.
* **Partial**: an entry with unresolved errors. Since leaving a trial out can only help a
  mean when the trial would have scored low, a partial entry ranks after every complete
  entry, stays off the Pareto front, and its note gives its O-Eval with the errors counted
  0 (the floor), so selective failure cannot raise a rank.
* **Stopped by its budget**: an entry whose `tbmm run --max-cost` budget kept planned
  trials from starting (the store's stop record, passed as `stopped`) is partial too, with
  the reason in a note, until those trials are stored; they are missing trials (counted 0).
* **Spent** and **Tokens**: totals over every stored trial of the entry (all seeds):
  cost in USD (n/a when any trial's cost is unknown) and tokens in (prompt, cached
  included) / out, with cached, cache-write tokens and requests in the JSON.
* **Per-suite O-Eval**: as O-Eval, restricted to the headline tasks of one suite.
* **Per-task O-Eval**: mean over seeds of the task O-Eval (missing = 0), every task
  including the literature-split ones.

Entries are sorted by O-Eval (descending), then Multi-BO, then name. The renderers (rows,
notes, table, Markdown, CSV, JSON) are in `tbmm.reports.leaderboard_render`, which imports this.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from typing import Any

from tbmm.core.exact import fraction_to_text
from tbmm.core.rules import multi_bo_cell, skill

STATUSES = ("scored", "gate_failed", "missing_artifact", "unreadable", "error", "infra_error")
# VerifyReport statuses of a verification that reached no verdict (exit code 3): not a score
NO_VERDICT = frozenset({"budget_exceeded", "lean_disagreement"})
READABLE = frozenset({"scored", "gate_failed"})
INFRA = "infra_error"  # an infrastructure failure: not a score, left out of every mean
NO_TRIAL = "no_trial"  # a (task, seed) of an entry with no row at all
ROUND = 6  # decimals of the rounded floats in to_json
# token counters of a trial (its report's "harness" fields), added up per entry
TOKEN_KEYS = ("tokens_in", "tokens_cache_read", "tokens_cache_write", "tokens_out", "requests")
ZERO = Fraction(0)
ONE = Fraction(1)
HUNDRED = Fraction(100)

BASELINE_LABEL = "each task's stored baseline F (floor.json)"


@dataclass(frozen=True)
class TrialRow:
    """One trial (entry × task × seed) as the leaderboard needs it."""

    entry: str  # entry label = agent + model + settings, e.g. "command:codex|gpt-x|default"
    agent: str
    model: str
    task: str  # slug
    suite: str  # "CUMCM" | "MCM"
    seed: int
    status: str  # one of STATUSES
    o_eval: Fraction  # task O-Eval (multi-reference, eq. 1); 0 unless scored
    robust_bo: Fraction  # -1 unless scored
    cost_usd: float | None  # cost of this trial (None = unknown)
    gate: str  # pass | warn | fail | skipped
    lean: str  # ok | fail | skipped
    literature_split: bool
    report: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    raw: Fraction = ZERO  # the task raw score R the verdict stands on; 0 unless scored


def trial_row(
    *,
    entry: str,
    agent: str,
    model: str | None,
    task: str,
    suite: str,
    seed: int,
    report: Mapping[str, Any] | None,
    cost_usd: float | None,
    literature_split: bool,
    error: str = "",
    harness: Mapping[str, Any] | None = None,
    infra_error: str | None = None,
) -> TrialRow:
    """A `TrialRow` from a `VerifyReport` JSON (`model_dump()`); None = verification never ran.

    With no report the status is ``error`` when `error` says why (agent crash, verifier
    crash), else ``missing_artifact``. A report without a ``status`` (``{"error": traceback}``:
    the verifier raised) and a report that
    reached no verdict (status in NO_VERDICT) is ``infra_error`` with cause ``no_verdict``:
    not a 0, left out of the means like an infrastructure error. Exact values
    come from the report's ``*_exact`` strings, never from its rounded floats. `harness`
    (exit reason, artifact status, detail, tokens, ...) is kept under ``report["harness"]``
    for the HTML drill-down.
    """
    rep: dict[str, Any] = dict(report) if report is not None else {}
    if report is None and error:
        rep["error"] = error
    if harness:
        rep["harness"] = dict(harness)
    if infra_error is None and report is not None and report.get("status") in NO_VERDICT:
        why = report.get("error") or "; ".join(map(str, report.get("failing") or []))
        infra_error = f"no_verdict: {report.get('status')}: {why}"[:1000]
    if infra_error is None and report is not None and "status" not in report:
        # a verifier that raised (stored as {"error": traceback}, e.g. by an older harness
        # or a Harbor ingest): the verification failed, not the agent; never a 0
        why = str(report.get("error") or "no status in the stored verdict")
        infra_error = f"no_verdict: verifier_fault: {why}"[:1000]
    if infra_error is not None:  # the infrastructure failed: never a score, whatever else
        rep = {"infra_error": infra_error, **({"harness": dict(harness)} if harness else {})}
        status = INFRA
    elif report is None:
        status = "error" if error else "missing_artifact"
    else:
        status = str(report.get("status", "error"))
        if status not in STATUSES:
            status = "error"
    scored = status == "scored"
    return TrialRow(
        entry=entry,
        agent=agent,
        model=model or "",
        task=task,
        suite=suite,
        seed=seed,
        status=status,
        o_eval=Fraction(str(rep.get("o_eval_exact", "0"))) if scored else ZERO,
        robust_bo=Fraction(str(rep.get("robust_bo_eval_exact", "-1"))) if scored else -ONE,
        cost_usd=cost_usd,
        gate=str(rep.get("gate", "skipped")),
        lean=str(rep.get("lean", "skipped")),
        literature_split=literature_split,
        report=rep,
        raw=Fraction(str(rep.get("raw_exact", "0"))) if scored else ZERO,
    )


HARNESS_FIELDS = (
    "exit_reason",
    "detail",
    "artifact_status",
    "artifact_size",
    "backend",
    "duration_s",
    "turns",
    "tokens_in",
    "tokens_out",
    "tokens_cache_read",
    "tokens_cache_write",
    "requests",
    "error",
)


def row_from_record(
    rec: Mapping[str, Any], *, task_suites: Mapping[str, str], split_tasks: Iterable[str] = ()
) -> TrialRow:
    """A `TrialRow` from one results-store trial as a plain mapping (`Store.trials()` rows).

    Reads ``entry_id, agent, model, task, suite, seed, cost_usd, verdict`` (the
    VerifyReport as JSON text or dict) and keeps the harness fields for the report. No
    verdict with an artifact on disk means it was never verified: an ``error``. A trial
    stored with status ``error`` (an infrastructure failure) is ``infra_error``, whatever
    its other fields say.
    """
    verdict = rec.get("verdict")
    if isinstance(verdict, str | bytes):
        verdict = json.loads(verdict)
    task = str(rec["task"])
    error = ""
    infra = None
    if rec.get("status") == "error":
        infra = str(rec.get("error") or "infrastructure error (cause not recorded)")
    elif verdict is None and rec.get("artifact_status") == "ok":
        error = f"artifact present but never verified (exit reason {rec.get('exit_reason')})"
    return trial_row(
        entry=str(rec["entry_id"]),
        agent=str(rec.get("agent") or ""),
        model=rec.get("model"),
        task=task,
        suite=task_suites.get(task) or str(rec.get("suite") or ""),
        seed=int(rec["seed"]),
        report=verdict,
        cost_usd=rec.get("cost_usd"),
        literature_split=task in set(split_tasks),
        error=error,
        harness={k: rec[k] for k in HARNESS_FIELDS if k in rec},
        infra_error=infra,
    )


def suite_config(tasks: Iterable[Any]) -> dict[str, Any]:
    """`compute` keyword arguments from `tbmm.suite.tasks.load_suite()`: tasks, task_suites,
    split_tasks, incomplete_tasks and each task's stored baseline F (`tbmm.verdict.floor`)."""
    from tbmm.verdict.floor import baseline_f, floor_f

    ts = list(tasks)
    return {
        "baseline_f": {t.slug: baseline_f(t) for t in ts},
        "floor_f": {t.slug: floor_f(t) for t in ts},
        "tasks": [t.slug for t in ts],
        "task_suites": {t.slug: t.suite for t in ts},
        "split_tasks": {t.slug for t in ts if t.panel.literature_split},
        "incomplete_tasks": {t.slug for t in ts if t.incomplete},
    }


# ---------------------------------------------------------------------------- statistics


def _sqrt(q: Fraction) -> Decimal:
    """sqrt of a non-negative rational to 50 significant digits (std is irrational in general)."""
    with localcontext() as ctx:
        ctx.prec = 50
        return (Decimal(q.numerator) / Decimal(q.denominator)).sqrt()


@dataclass(frozen=True)
class Stat:
    """A per-seed quantity: exact per-seed values, their mean and sample variance."""

    per_seed: tuple[tuple[int, Fraction], ...]

    @classmethod
    def of(cls, values: Mapping[int, Fraction]) -> Stat:
        return cls(tuple(sorted(values.items())))

    @property
    def n(self) -> int:
        return len(self.per_seed)

    @property
    def mean(self) -> Fraction | None:
        if not self.per_seed:
            return None
        return sum((v for _, v in self.per_seed), ZERO) / self.n

    @property
    def var(self) -> Fraction | None:
        """Sample variance (n − 1); None with fewer than two seeds (std is then n/a, not 0)."""
        if self.n < 2:
            return None
        m = self.mean
        assert m is not None
        return sum(((v - m) ** 2 for _, v in self.per_seed), ZERO) / (self.n - 1)

    @property
    def std(self) -> Decimal | None:
        v = self.var
        return None if v is None else _sqrt(v)

    def to_json(self, scale: int = 1, places: int = 2) -> dict[str, Any]:
        m, s = self.mean, self.std
        return {
            "mean": None if m is None else round(float(m), ROUND),
            "mean_exact": None if m is None else fraction_to_text(m),
            "std": None if s is None else round(float(s), ROUND),
            "var_exact": None if self.var is None else fraction_to_text(self.var),
            "n_seeds": self.n,
            "per_seed": {str(k): fraction_to_text(v) for k, v in self.per_seed},
            "display": fmt_stat(self, scale, places),
        }


# ---------------------------------------------------------------------------- display


def fmt_fixed(x: Fraction | Decimal | None, places: int = 2) -> str:
    """Round half away from zero to `places` decimals (exact for a Fraction); None -> "n/a"."""
    if x is None:
        return "n/a"
    if isinstance(x, Fraction):
        scaled = abs(x) * 10**places
        q = math.floor(scaled + Fraction(1, 2))
        sign = "-" if x < 0 and q != 0 else ""
        s = str(q).rjust(places + 1, "0")
        return f"{sign}{s[:-places]}.{s[-places:]}" if places else f"{sign}{s}"
    return str(x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def fmt_stat(st: Stat | None, scale: int = 1, places: int = 2) -> str:
    """ "mean ± std" (scaled, e.g. 100 for percent); std "n/a" with one seed."""
    if st is None or st.mean is None:
        return "n/a"
    s = st.std
    return f"{fmt_fixed(st.mean * scale, places)} ± {fmt_fixed(None if s is None else s * scale, places)}"


# ---------------------------------------------------------------------------- model


@dataclass(frozen=True)
class TaskCell:
    """One entry on one task: per-seed status and O-Eval (0 unless scored)."""

    per_seed: tuple[tuple[int, str, Fraction], ...]  # (seed, status or "no_trial", o_eval)

    @property
    def mean(self) -> Fraction | None:
        """Mean O-Eval over the seeds without an infrastructure error (None: all errored)."""
        kept = [o for _, s, o in self.per_seed if s != INFRA]
        return sum(kept, ZERO) / len(kept) if kept else None

    def count(self, *statuses: str) -> int:
        return sum(1 for _, s, _ in self.per_seed if s in statuses)

    @property
    def marks(self) -> str:
        """Compact flags: g<n> gate-zeroed seeds, m<n> seeds without a readable artifact,
        n<n> seeds never run (no trial stored), e<n> seeds that ended with an
        infrastructure error (left out of the mean)."""
        g = self.count("gate_failed")
        e = self.count(INFRA)
        n = self.count(NO_TRIAL)
        m = len(self.per_seed) - self.count(*READABLE) - e - n
        return " ".join(f"{k}{v}" for k, v in (("g", g), ("m", m), ("n", n), ("e", e)) if v)


@dataclass(frozen=True)
class EntryRow:
    """One leaderboard row (see the module docstring for every definition)."""

    entry: str
    agent: str
    model: str
    seeds: tuple[int, ...]
    artifacts: Stat
    o_eval: Stat
    multi_bo: Stat | None  # None: no baseline
    robust_bo: Stat
    cost: Fraction | None  # None: unknown
    cost_per_seed: tuple[tuple[int, Fraction], ...]
    cost_unknown_trials: int
    gate_zeroed: int
    missing_trials: int
    suites: dict[str, Stat]
    per_task: dict[str, TaskCell]
    pareto: bool = False
    errors: int = 0  # trials that ended with an infrastructure error (left out of the means)
    error_causes: tuple[str, ...] = ()  # their causes' kinds, most frequent first
    skill: Stat | None = None  # None: no naive floor given
    label: str = ""  # display name (--name), else the entry id; unique in a leaderboard
    o_eval_floor: Stat | None = None  # O-Eval with the error trials counted 0 (when partial)
    stopped: str | None = None  # why its budget (--max-cost) kept planned trials from starting
    spent: Fraction | None = None  # USD over every stored trial (None: some cost unknown)
    tokens: dict[str, int] = field(default_factory=dict)  # totals over every stored trial

    @property
    def partial(self) -> bool:
        """Unresolved errors, or trials its budget kept from starting: ranked after complete
        entries, off the Pareto front."""
        return self.errors > 0 or self.stopped is not None

    @property
    def shown(self) -> str:
        return self.label or self.entry


@dataclass(frozen=True)
class Leaderboard:
    """Ranked entries plus what a reader needs to interpret them (baseline state, notes)."""

    entries: tuple[EntryRow, ...]
    tasks: tuple[str, ...]
    task_suites: dict[str, str]
    split_tasks: frozenset[str]
    baseline: str | None  # what F is (a label), None when no F was given
    baseline_state: str  # "ok" | "none" (no F given)
    baseline_f: dict[str, Fraction]
    notes: tuple[str, ...]
    incomplete_tasks: frozenset[str] = frozenset()

    @property
    def headline_tasks(self) -> tuple[str, ...]:
        out = self.split_tasks | self.incomplete_tasks
        return tuple(t for t in self.tasks if t not in out)

    @property
    def suites(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.task_suites[t] for t in self.tasks))

    @property
    def empty(self) -> bool:
        return not self.entries

    @property
    def baseline_message(self) -> str:
        if self.baseline_state == "ok":
            return f"Multi-BO against {self.baseline} (1.000 = on par with it)."
        return "Multi-BO n/a: no baseline F was given."

    def headline_note(self) -> str:
        parts = []
        split = sorted(self.split_tasks)
        if split:
            parts.append(
                f"Literature-split task(s) left out of the headline columns (O-Eval, Multi-BO, "
                f"Robust BO, per-suite): {', '.join(split)}; they stay in the per-task table "
                f"(Artifacts, Cost and Gate-zeroed count all {len(self.tasks)} tasks)."
            )
        incomplete = sorted(self.incomplete_tasks)
        if incomplete:
            parts.append(
                f"Incomplete task(s) (an official attachment is missing, so they cannot be "
                f"solved as posed) left out of the headline columns: {', '.join(incomplete)}; "
                f"their trials stay in the per-task table."
            )
        return " ".join(parts)


# ---------------------------------------------------------------------------- compute


def _o(row: TrialRow | None) -> Fraction:
    return row.o_eval if row is not None and row.status == "scored" else ZERO


def _errored(row: TrialRow | None) -> bool:
    """An infrastructure error: the cell is left out of every mean (not counted 0)."""
    return row is not None and row.status == INFRA


def _cost(x: float | None) -> Fraction | None:
    """Exact cost from the float's shortest decimal text (0.1 -> 1/10); non-finite = unknown."""
    if x is None or not math.isfinite(x) or x < 0:
        return None
    return Fraction(repr(float(x)))


def _mean(xs: Sequence[Fraction]) -> Fraction:
    return sum(xs, ZERO) / len(xs)


def compute(
    rows: Sequence[TrialRow],
    *,
    tasks: Sequence[str],
    task_suites: Mapping[str, str],
    split_tasks: Iterable[str] = (),
    incomplete_tasks: Iterable[str] = (),
    names: Mapping[str, str] | None = None,
    baseline_f: Mapping[str, Fraction] | None = None,
    baseline: str = BASELINE_LABEL,
    floor_f: Mapping[str, Fraction] | None = None,
    stopped: Mapping[str, Mapping[str, Any]] | None = None,
) -> Leaderboard:
    """Aggregate trials into the leaderboard; `tasks` is the fixed denominator (every task
    slug). `baseline_f` is each task's F for Multi-BO (`tbmm.verdict.floor.baseline_f`: the one F
    every verdict's Robust BO-Eval uses; None = Multi-BO n/a), `baseline` says what it is.
    `names` maps entry ids to display names (tables and plots show them). `stopped` maps
    entry ids to their budget stop record (harness.runs.store: `reason`, `not_started`): such an
    entry is partial.

    Raises ValueError on inconsistent input (duplicate trial, unknown status, O-Eval
    outside [0, 1], a task without a suite); rows for tasks outside `tasks` are ignored
    with a note.
    """
    tasks = tuple(dict.fromkeys(tasks))
    if not tasks:
        raise ValueError("compute needs the task list (the fixed denominator)")
    no_suite = [t for t in tasks if t not in task_suites]
    if no_suite:
        raise ValueError(f"tasks without a suite: {', '.join(no_suite)}")
    split = frozenset(split_tasks) & frozenset(tasks)
    incomplete = frozenset(incomplete_tasks) & frozenset(tasks)
    headline = [t for t in tasks if t not in split and t not in incomplete]
    notes: list[str] = []

    cells: dict[str, dict[tuple[str, int], TrialRow]] = {}
    unknown_tasks: set[str] = set()
    for r in rows:
        if r.status not in STATUSES:
            raise ValueError(
                f"{r.entry} / {r.task} / seed {r.seed}: unknown status {r.status!r}; expected one of {STATUSES}"
            )
        if not ZERO <= r.o_eval <= ONE:
            raise ValueError(
                f"{r.entry} / {r.task} / seed {r.seed}: O-Eval {r.o_eval} outside [0, 1]"
            )
        if r.task not in task_suites or r.task not in tasks:
            unknown_tasks.add(r.task)
            continue
        key = (r.task, r.seed)
        bucket = cells.setdefault(r.entry, {})
        if key in bucket:
            raise ValueError(f"duplicate trial: {r.entry} / {r.task} / seed {r.seed}")
        bucket[key] = r
    if unknown_tasks:
        notes.append(
            f"Rows for tasks outside the suite were ignored: {', '.join(sorted(unknown_tasks))}."
        )

    seeds_of = {e: tuple(sorted({s for _, s in b})) for e, b in cells.items()}

    state, f_t = "none", {}
    if baseline_f is not None:
        lacking = [t for t in tasks if t not in baseline_f]
        if lacking:
            raise ValueError(f"no baseline F for: {', '.join(lacking)}")
        state, f_t = "ok", {t: baseline_f[t] for t in tasks}
    if floor_f is not None and (lacking := [t for t in tasks if t not in floor_f]):
        raise ValueError(f"no naive floor for: {', '.join(lacking)}")

    entries: list[EntryRow] = []
    for e, b in cells.items():
        seeds = seeds_of[e]
        first = next(iter(b.values()))
        errs = [r for r in b.values() if _errored(r)]
        o_seed, mb_seed, rb_seed, art_seed, cost_seed = {}, {}, {}, {}, {}
        floor_seed: dict[int, Fraction] = {}
        sk_seed: dict[int, Fraction] = {}
        suite_seed: dict[str, dict[int, Fraction]] = {}
        unknown_cost = 0
        # incomplete tasks this entry never ran: `tbmm run --tasks all` skips them on purpose
        skipped = [t for t in tasks if t in incomplete and not any(t == k for k, _ in b)]
        for s in seeds:
            trial = {t: b.get((t, s)) for t in tasks}
            absent = [t for t, r in trial.items() if r is None]
            gaps = [t for t in absent if t not in skipped]
            if gaps:
                counted_gaps = [t for t in gaps if t in headline]
                if len(counted_gaps) == len(gaps):
                    how = "counted O-Eval 0, Multi-BO −1"
                elif counted_gaps:
                    how = f"the {len(counted_gaps)} headline one(s) counted O-Eval 0, Multi-BO −1"
                else:
                    how = "outside the headline means; no artifact"
                notes.append(
                    f"{e}: seed {s} has no trial for {len(gaps)} of {len(tasks)} tasks "
                    f"({how}): {', '.join(gaps)}."
                )
            counted = [t for t in headline if not _errored(trial[t])]
            if headline:  # the floor: every headline task, an error counted 0
                floor_seed[s] = _mean([_o(trial[t]) for t in headline])
            if counted:
                o_seed[s] = _mean([_o(trial[t]) for t in counted])
                rb_seed[s] = _mean(
                    [
                        r.robust_bo if r is not None and r.status == "scored" else -ONE
                        for t in counted
                        for r in [trial[t]]
                    ]
                )
                if floor_f is not None:
                    sk_seed[s] = _mean(
                        [
                            skill(r.raw, ONE, floor_f[t])
                            if r is not None and r.status == "scored"
                            else ZERO
                            for t in counted
                            for r in [trial[t]]
                        ]
                    )
                if state == "ok":
                    mb_seed[s] = _mean(
                        [
                            -ONE
                            if r is None or r.status not in READABLE
                            else multi_bo_cell(_o(r), f_t[t])
                            for t in counted
                            for r in [trial[t]]
                        ]
                    )
            for suite in dict.fromkeys(task_suites[t] for t in headline):
                ts = [t for t in counted if task_suites[t] == suite]
                if ts:
                    suite_seed.setdefault(suite, {})[s] = _mean([_o(trial[t]) for t in ts])
            art_seed[s] = Fraction(sum(1 for r in trial.values() if r and r.status in READABLE))
            present = [r for r in trial.values() if r is not None]
            costs = [_cost(r.cost_usd) for r in present]
            unknown_cost += sum(1 for c in costs if c is None)
            cost_seed[s] = sum((c for c in costs if c is not None), ZERO)
        totals = dict.fromkeys(TOKEN_KEYS, 0)
        for r in b.values():
            h = r.report.get("harness") or {}
            for k in TOKEN_KEYS:
                v = h.get(k)
                totals[k] += int(v) if isinstance(v, int) and not isinstance(v, bool) else 0
        all_costs = [_cost(r.cost_usd) for r in b.values()]
        stop = (stopped or {}).get(e)
        per_task = {
            t: TaskCell(
                tuple(
                    (s, r.status if r is not None else NO_TRIAL, _o(r))
                    for s in seeds
                    for r in [b.get((t, s))]
                )
            )
            for t in tasks
        }
        entries.append(
            EntryRow(
                entry=e,
                agent=first.agent,
                model=first.model,
                seeds=seeds,
                artifacts=Stat.of(art_seed),
                o_eval=Stat.of(o_seed),
                multi_bo=Stat.of(mb_seed) if state == "ok" else None,
                robust_bo=Stat.of(rb_seed),
                cost=None if unknown_cost else _mean(list(cost_seed.values())),
                cost_per_seed=tuple(sorted(cost_seed.items())),
                cost_unknown_trials=unknown_cost,
                gate_zeroed=sum(1 for r in b.values() if r.status == "gate_failed"),
                missing_trials=len(tasks) * len(seeds) - len(b),
                suites={k: Stat.of(v) for k, v in suite_seed.items()},
                per_task=per_task,
                errors=len(errs),
                error_causes=_causes(errs),
                o_eval_floor=Stat.of(floor_seed) if errs else None,
                skill=Stat.of(sk_seed) if floor_f is not None else None,
                stopped=str(stop.get("reason") or "budget reached") if stop else None,
                spent=None
                if any(c is None for c in all_costs)
                else sum((c for c in all_costs if c is not None), ZERO),
                tokens=totals,
            )
        )
        if stop:
            left = stop.get("not_started") or []
            notes.append(
                f"{e} is partial: {stop.get('reason') or 'its budget was reached'}"
                + (f" ({len(left)} trial(s) still not run, counted 0)" if left else "")
                + "; it ranks after every complete entry and is off the Pareto front until "
                "`tbmm run ... --resume --max-cost USD` with a larger budget runs them."
            )
        if skipped:
            notes.append(
                f"{e}: {len(skipped)} incomplete task(s) not run, as intended (`tbmm run "
                f"--tasks all` skips them unless --allow-incomplete; outside the headline "
                f"means): {', '.join(skipped)}."
            )
        if unknown_cost:
            notes.append(f"{e}: cost unknown for {unknown_cost} trial(s), so its cost is n/a.")
        if errs:
            floor = entries[-1].o_eval_floor
            notes.append(
                f"{e} is partial: {len(errs)} trial(s) ended without a score "
                f"({', '.join(_causes(errs))}); they are left out of its means, so it ranks "
                f"after every complete entry and is off the Pareto front (with them counted "
                f"0 its O-Eval is {fmt_stat(floor, 100, 2)} %). Rerun them with "
                f"`tbmm run ... --resume`."
            )

    front = set(pareto_front([(x.entry, x.cost, x.o_eval.mean) for x in entries if not x.partial]))
    labels = _labels([x.entry for x in entries], names or {})
    entries = [replace(x, pareto=x.entry in front, label=labels[x.entry]) for x in entries]

    def key(x: EntryRow) -> tuple[bool, Fraction, Fraction, str]:
        o = x.o_eval.mean if x.o_eval.mean is not None else Fraction(-1)
        m = x.multi_bo.mean if x.multi_bo is not None and x.multi_bo.mean is not None else ZERO
        return (x.partial, -o, -m, x.entry)

    entries.sort(key=key)
    if len({x.seeds for x in entries}) > 1:
        notes.append("Entries were run with different seed sets; compare their std with care.")
    return Leaderboard(
        entries=tuple(entries),
        tasks=tasks,
        task_suites={t: task_suites[t] for t in tasks},
        split_tasks=split,
        baseline=baseline if state == "ok" else None,
        baseline_state=state,
        baseline_f=f_t,
        notes=tuple(notes),
        incomplete_tasks=incomplete,
    )


def _causes(errs: Sequence[TrialRow]) -> tuple[str, ...]:
    """Kinds of the errors ("endpoint_unreachable", "no_verdict", ...), most frequent first."""
    counts: dict[str, int] = {}
    for r in errs:
        kind = str(r.report.get("infra_error", "")).split(":", 1)[0].strip() or "unknown"
        counts[kind] = counts.get(kind, 0) + 1
    return tuple(
        f"{k} ×{n}" if n > 1 else k for k, n in sorted(counts.items(), key=lambda x: -x[1])
    )


def _labels(entries: Sequence[str], names: Mapping[str, str]) -> dict[str, str]:
    """Display labels: the entry's name if it has one, else its id. A name shared by two
    entries (or equal to another entry's id) gets the id appended, so labels stay unique."""
    wanted = {e: (names.get(e) or "").strip() or e for e in entries}
    count: dict[str, int] = {}
    for lab in wanted.values():
        count[lab] = count.get(lab, 0) + 1
    return {
        e: lab if count[lab] == 1 and (lab == e or lab not in entries) else f"{lab} [{e}]"
        for e, lab in wanted.items()
    }


def pareto_front(
    points: Iterable[tuple[str, Fraction | None, Fraction | None]],
) -> list[str]:
    """Names not dominated in (lower cost, higher O-Eval); unknown cost or score is left out.

    A cost of 0 is a known cost and takes part. Returned in increasing cost.
    """
    pts = [(n, c, o) for n, c, o in points if c is not None and o is not None]
    out = []
    for n, c, o in pts:
        dominated = any(c2 <= c and o2 >= o and (c2 < c or o2 > o) for n2, c2, o2 in pts if n2 != n)
        if not dominated:
            out.append((c, -o, n))
    return [n for _, _, n in sorted(out)]


def outcome_counts(
    trials: list[dict[str, Any]], stopped: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Per entry: trials without a score (`errors`, by cause kind, as the leaderboard counts
    them: infrastructure errors and verifications with no verdict), the agent's own failures
    (scored; by exit reason, or artifact status), `partial` (unresolved errors, or trials
    its --max-cost budget kept from starting: `stopped`, the store's record) and the token
    totals."""
    causes: dict[str, int] = {}
    failures: dict[str, int] = {}
    for t in trials:
        try:
            row = row_from_record(t, task_suites={})
        except (ValueError, KeyError):  # an unreadable stored verdict: no score either
            causes["unreadable_verdict"] = causes.get("unreadable_verdict", 0) + 1
            continue
        if row.status == INFRA:
            kind = str(row.report.get("infra_error", "")).split(":", 1)[0].strip() or "unknown"
            causes[kind] = causes.get(kind, 0) + 1
        elif t.get("exit_reason") != "completed" or t.get("artifact_status") != "ok":
            key = (
                str(t.get("exit_reason"))
                if t.get("exit_reason") != "completed"
                else f"artifact {t.get('artifact_status')}"
            )
            failures[key] = failures.get(key, 0) + 1
    errors = sum(causes.values())
    return {
        "errors": errors,
        "error_causes": dict(sorted(causes.items(), key=lambda kv: -kv[1])),
        "agent_failures": sum(failures.values()),
        "agent_failure_reasons": dict(sorted(failures.items(), key=lambda kv: -kv[1])),
        "partial": errors > 0 or bool(stopped),
        "tokens": token_totals(trials),
    }


def token_totals(trials: list[dict[str, Any]]) -> dict[str, int]:
    """Tokens and requests over the trials (prompt tokens include the cached ones)."""
    keys = {
        "input": "tokens_in",
        "cached": "tokens_cache_read",
        "cache_write": "tokens_cache_write",
        "output": "tokens_out",
        "requests": "requests",
    }
    return {k: sum(int(t.get(col) or 0) for t in trials) for k, col in keys.items()}
