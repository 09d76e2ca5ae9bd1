"""Replays: recompute what an answer's decisions achieve, instead of trusting its claims.

A task with a `replay.toml` names a module `tbmm.replay.<module>` exposing

    def replay(doc: dict, task: Task, spec: ReplaySpec, deadline: CpuBudget) -> Outcome

which reads the decision variables from the exact artifact tree `doc`, recomputes the
objective(s) and the quantities the constraints are about from them and the task's own
data (attachments under `task.data_dir`), and returns them as numbers. It decides nothing
itself: every verdict is a gate check on those numbers (`gate.toml`), so the same data
flow — artifact → replay → gate → score → Lean — holds for every task:

* the replayed numbers are placed in the resolved artifact under the reserved top-level
  key `replayed` (anything an agent put there is dropped first); metrics of a replayed
  task read `replayed.…` paths, so the score is what the decisions achieve;
* a claim is tied to its replay by an `agree` check (|claimed − replayed| within a stated
  tolerance): lying is infeasible ("misreported");
* a constraint the replay measures (a clearance, a maximum speed, a count of broken
  rules) is an ordinary gate check on its replayed number;
* input the replay cannot use (a missing decision, a malformed table) raises
  `ReplayInputError`: no replayed numbers, so every check and metric that needs them is
  unverifiable and scores 0, with the reason.

Floating replays round every output to `spec.digits` significant digits (decimal text,
then an exact `Fraction`), so a replay is reproducible to the text across machines;
exact replays return `Fraction`s.
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from tbmm.core import exact
from tbmm.core.bounds import BudgetExceeded, CpuBudget, cpu_now, remaining_budget, uncharged
from tbmm.core.paths import set_path
from tbmm.core.specs import REPLAYED

if TYPE_CHECKING:
    from tbmm.suite.models import ReplaySpec


class ReplayInputError(ValueError):
    """The decisions cannot be replayed (missing, malformed, out of the statement's range)."""


@dataclass
class Outcome:
    """What a replay module returns: numbers at paths relative to `replayed`, and for each
    path an optional explanation (which decision produced it) shown when a check fails."""

    values: dict[str, Fraction | float | int] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class ReplayReport:
    """The replay of one artifact, as stored in a verify report."""

    module: str
    status: str  # ok | unreplayable | skipped
    values: dict[str, str] = field(default_factory=dict)  # path under `replayed` -> exact text
    details: dict[str, str] = field(default_factory=dict)
    error: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # CPU seconds of this replay (shown by `tbmm replay`; never in a verdict)
    cached: bool = False  # from tbmm.replay.cache (`seconds` is then the look-up's)

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "status": self.status,
            "values": self.values,
            "details": self.details,
            "error": self.error,
            "notes": self.notes,
        }


ReplayFn = Callable[[dict[str, Any], Any, "ReplaySpec", CpuBudget], Outcome]


def load_module(name: str) -> ReplayFn:
    """The `replay` function of `tbmm.replay.<name>` (ImportError names what is wrong)."""
    mod = importlib.import_module(f"tbmm.replay.{name}")
    fn = getattr(mod, "replay", None)
    if not callable(fn):
        raise ImportError(f"tbmm.replay.{name} has no replay() function")
    return fn


def prepare(task: Any, spec: ReplaySpec | None = None) -> None:
    """Load what the task's replay reads from the task itself (attachments, tables), so
    that no artifact's budget pays for it; a no-op for a task without a replay or a
    replay without a `prepare(task, spec)`."""
    spec = spec if spec is not None else task.replay_spec
    if spec is None:
        return
    mod = importlib.import_module(f"tbmm.replay.{spec.module}")
    hook = getattr(mod, "prepare", None)
    if callable(hook):
        hook(task, spec)


def to_exact(x: Fraction | float | int, digits: int) -> exact.Num:
    """An exact number for a replay output; floats are rounded to `digits` significant digits."""
    if isinstance(x, bool):
        raise TypeError("a replay output is a number, not a bool")
    if isinstance(x, int):
        return exact.Num(Fraction(x), str(x), True)
    if isinstance(x, Fraction):
        text = exact.fraction_to_text(x)
        if "/" not in text:
            return exact.Num(x, text, x.denominator == 1)
        # a non-terminating rational has no JSON literal: round it to `digits` significant
        # digits (half-even), the same way for the reference and for every answer
        import decimal

        with decimal.localcontext() as ctx:
            ctx.prec, ctx.rounding = digits, decimal.ROUND_HALF_EVEN
            d = decimal.Decimal(x.numerator) / decimal.Decimal(x.denominator)
        text = format(d, "f") if abs(d.adjusted()) < 30 else str(d)
        return exact.Num(exact.parse_decimal(text), text, False)
    if not math.isfinite(x):
        raise ReplayInputError(f"replay produced a non-finite number ({x})")
    text = f"{x:.{digits}g}"
    value = exact.parse_decimal(text)
    return exact.Num(value, text, False)


def strip_replayed(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The agent's artifact without the reserved `replayed` key (noted when it was there)."""
    if REPLAYED not in doc:
        return doc, []
    out = {k: v for k, v in doc.items() if k != REPLAYED}
    return out, [
        f"the artifact's own top-level `{REPLAYED}` key was ignored (reserved for replays)"
    ]


def run_replay(
    task: Any, doc: dict[str, Any], deadline: CpuBudget | None = None
) -> tuple[dict[str, Any], ReplayReport | None]:
    """Resolve an artifact: strip `replayed`, run the task's replay (if any), insert its outputs.

    Returns the resolved tree (a new top-level dict; the agent's subtrees are shared, not
    copied) and the replay report (None for a task without a replay). A replay already done
    for the same task files and the same decisions comes from `tbmm.replay.cache`.
    """
    base, notes = strip_replayed(doc)
    spec: ReplaySpec | None = task.replay_spec
    if spec is None:
        return base, None
    from tbmm.replay import cache

    with uncharged():  # the task's data and code, cached: not the artifact's cost
        fn = load_module(spec.module)
        prepare(task, spec)
        if cache.mode() != "off":
            cache.task_files_digest(task)
    t0 = cpu_now()
    if deadline is None:
        own = float(exact.parse_decimal(spec.budget_cpu_seconds))
        left = remaining_budget()
        deadline = CpuBudget(own if left is None else max(0.0, min(own, left)))
    key = cache.key(task, spec, base)
    text = cache.CACHE.get(key) if key is not None else None
    entry = json.loads(text) if text is not None else None
    if entry is not None and entry["cpu"] > deadline.remaining():
        entry = None  # it took more than this budget allows: as a fresh replay, not a hit
    cached = entry is not None
    if entry is None:
        text = _replay_entry(fn, base, task, spec, deadline)  # BudgetExceeded propagates
        if key is not None:
            cache.CACHE.put(key, text)
        entry = json.loads(text)
    report, tree = _from_entry(spec.module, notes, entry)
    report.seconds, report.cached = cpu_now() - t0, cached
    if report.status != "ok":
        return base, report
    resolved = dict(base)
    resolved[REPLAYED] = tree
    return resolved, report


def _replay_entry(
    fn: ReplayFn, base: dict[str, Any], task: Any, spec: ReplaySpec, deadline: CpuBudget
) -> str:
    """One fresh replay as the JSON text both fresh and cached results are rebuilt from,
    with its CPU seconds (`cpu`: a hit is refused under a smaller budget)."""
    t0 = cpu_now()
    try:
        out = fn(base, task, spec, deadline)
        values = []
        for path, value in out.values.items():
            num = to_exact(value, spec.digits)
            values.append([path, num.text, num.is_int_literal])
    except ReplayInputError as exc:
        e: dict[str, Any] = {"status": "unreplayable", "error": str(exc)}
    except RecursionError:
        e = {"status": "unreplayable", "error": "decision input nested too deeply"}
    else:
        e = {"status": "ok", "values": values, "details": dict(out.details), "notes": out.notes}
    e["cpu"] = cpu_now() - t0
    return json.dumps(e)


def _from_entry(
    module: str, notes: list[str], e: dict[str, Any]
) -> tuple[ReplayReport, dict[str, Any]]:
    """A report and `replayed` tree from an entry's text, parsed afresh by the caller for each
    result (so that no caller shares objects with the cache)."""
    report = ReplayReport(module=module, status=e["status"], notes=list(notes))
    tree: dict[str, Any] = {}
    if e["status"] != "ok":
        report.error = e["error"]
        return report, tree
    for path, text, is_int in e["values"]:
        value = Fraction(int(text)) if is_int else exact.parse_decimal(text)
        set_path(tree, path, exact.Num(value, text, is_int))
        report.values[path] = text
    report.details = e["details"]
    report.notes.extend(e["notes"])
    return report, tree


__all__ = [
    "BudgetExceeded",
    "CpuBudget",
    "Outcome",
    "ReplayInputError",
    "ReplayReport",
    "run_replay",
    "to_exact",
]
