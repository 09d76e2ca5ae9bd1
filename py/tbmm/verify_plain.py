"""`tbmm.verify`'s pipeline with its reports as plain fields (no pydantic).

Why a module of its own: importing pydantic and building the report model cost more CPU
than the whole verdict of a claims-only artifact, and `tbmm verify` (`tbmm.cli.entry`'s
lite path) prints a report without ever needing the model. `tbmm.verify` wraps every
result here into its `VerifyReport`; this module holds the one copy of the logic, so the
two cannot drift. `FIELDS` lists the report's fields in `VerifyReport`'s order with its
defaults (tests/test_verify_lite.py holds the two equal), and `report_json` is what
`VerifyReport(**fields).model_dump(mode="json")` gives.
"""

from __future__ import annotations

from typing import Any

from tbmm.core import bounds, exact
from tbmm.core.paths import MISSING, expand_nodes
from tbmm.core.specs import REPLAYED
from tbmm.suite.tasks import Task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import ArtifactError, read_artifact, score_task

# A report: its fields in `tbmm.verify.VerifyReport`'s order, each with its default
# (REQUIRED: none). Float fields are floats, as pydantic's validation makes them.
REQUIRED = object()
FIELDS: tuple[tuple[str, Any], ...] = (
    ("task", REQUIRED),
    ("exit_code", REQUIRED),
    ("readable", REQUIRED),
    ("error", ""),
    ("schema_issues", []),
    ("gate", "skipped"),
    ("lean", "skipped"),
    ("lean_detail", {}),
    ("failing", []),
    ("o_eval", 0.0),
    ("o_eval_exact", "0"),
    ("raw_exact", "0"),
    ("robust_bo_eval", -1.0),
    ("robust_bo_eval_exact", "-1"),
    ("skill", 0.0),
    ("skill_exact", "0"),
    ("status", "unreadable"),
    ("score", {}),
    ("gate_report", {}),
    ("replay", {}),
    ("lean_scope", {}),
    ("task_digest", ""),
)
_FLOATS = frozenset(("o_eval", "robust_bo_eval", "skill"))

Fields = dict[str, Any]


def report_json(fields: Fields) -> dict[str, Any]:
    """The report as `VerifyReport(**fields).model_dump(mode="json")` gives it: every field
    in order, defaults filled in, float fields as floats."""
    out: dict[str, Any] = {}
    for name, default in FIELDS:
        if name in fields:
            value = fields[name]
        elif default is REQUIRED:
            raise KeyError(f"report field {name} missing")
        else:
            value = default
        out[name] = float(value) if name in _FLOATS else value
    return out


def schema_issues(task: Task, doc: dict[str, Any]) -> list[str]:
    """Fields of the schema that are missing or of the wrong type (informative, not fatal)."""
    issues = []
    for f in task.artifact_map.field:
        for path, node in expand_nodes(doc, f.path):
            if node is MISSING:
                issues.append(f"{path}: missing")
                continue
            if f.type == "list[number]":
                ok = isinstance(node, list) and all(isinstance(x, exact.Num) for x in node)
            elif f.type == "tag":
                ok = isinstance(node, str) and node in f.tags
            else:
                ok = isinstance(node, exact.Num) and (
                    f.type != "integer" or node.value.denominator == 1
                )
            if not ok:
                issues.append(f"{path}: expected {f.type}")
    return issues


def unreadable(task: Task, error: str, status: str) -> Fields:
    """Exit 2: nothing to check; scored as a missing artifact (O-Eval 0, Robust BO-Eval -1)."""
    return {
        "task": task.slug,
        "exit_code": 2,
        "readable": False,
        "error": error,
        "status": status,
        "score": score_task(task, None).to_json(),
    }


def over_budget(task: Task, error: str) -> Fields:
    """Exit 3: the verification CPU budget ran out: no verdict (the score fields are those
    of a missing artifact only so that the report is complete; nothing may rank them)."""
    return {
        "task": task.slug,
        "exit_code": 3,
        "readable": True,
        "error": error,
        "status": "budget_exceeded",
        "score": score_task(task, None).to_json(),
    }


def verify_fields(
    task: Task, data: bytes | None, *, lean: bool = True, budget_s: float = bounds.DEFAULT_BUDGET_S
) -> Fields:
    """`tbmm.verify.verify_artifact`'s report as plain fields (see there)."""
    with bounds.cpu_budget(budget_s):
        try:
            rep = _verify(task, data, lean=lean)
        except bounds.BudgetExceeded as exc:
            rep = over_budget(task, str(exc))
    rep["task_digest"] = task.verdict_digest
    return rep


def _verify(task: Task, data: bytes | None, *, lean: bool) -> Fields:
    early, ev, doc = python_stage(task, data)
    if early is not None:
        return early
    assert ev is not None and ev.doc is not None
    lr = None
    if lean:
        from tbmm.lean.certify import check_artifact

        lr = check_artifact(task, ev.doc, gate_report=ev.gate, score=ev.score)
        bounds.check_budget("after the Lean check")
    return finish(task, doc, ev, lr, lean=lean)


def python_stage(task: Task, data: bytes | None) -> tuple[Fields | None, Any, Any]:
    """Read, resolve (replay), gate and score: a final report for what needs no Lean
    (missing, unreadable, over a cap), else the evaluation and the parsed artifact."""
    if data is None:
        return unreadable(task, "missing artifact", "missing_artifact"), None, None
    try:
        doc = read_artifact(data, task.caps)
    except ArtifactError as exc:  # over a cap of tbmm.core.bounds: its own status
        over = isinstance(exc.__cause__, bounds.BoundsError)
        return unreadable(task, str(exc), "over_caps" if over else "unreadable"), None, None
    ev = evaluate(task, doc)
    bounds.check_budget("after the gate, the replay and scoring")
    assert ev.doc is not None
    return None, ev, doc


def lean_scope(task: Task, replay: Any, lr: Any) -> dict[str, dict[str, str]]:
    """For each replayed value: recomputed by the Lean kernel, or taken from the Python
    replay (with the replay's precision and the tolerance its `agree` check allows)."""
    spec = task.replay_spec
    if replay is None or spec is None:
        return {}
    recomputed = set(lr.recomputed) if lr is not None and lr.outcome in ("ok", "fail") else set()
    agree = {c.against: c for c in task.gate.check if c.form.value == "agree" and c.against}
    out: dict[str, dict[str, str]] = {}
    for path in replay.values:
        full = f"{REPLAYED}.{path}"
        if full in recomputed:
            out[path] = {"by": "lean_kernel", "precision": "exact (recomputed from the decisions)"}
            continue
        precision = (
            "exact rationals (Python only)"
            if spec.exact
            else f"floating, rounded to {spec.digits} significant digits (Python only)"
        )
        entry = {"by": "python_replay", "precision": precision}
        c = agree.get(full)
        if c is not None:
            entry["agree"] = f"{c.field}: |claim - replayed| <= {c.tol or 0}" + (
                f" + {c.rel_tol} x |replayed|" if c.rel_tol else ""
            )
        out[path] = entry
    return out


def finish(task: Task, doc: Any, ev: Any, lr: Any, *, lean: bool) -> Fields:
    """The report of an evaluated artifact, with the Lean kernel's result `lr` (None: skipped)."""
    g, s = ev.gate, ev.score
    failing = [f"gate {i.name} ({i.check.form.value}): {i.message}" for i in g.failed]
    lean_state, lean_detail = "skipped", {}
    if lean and lr is not None:
        lean_state = lr.outcome
        lean_detail = lr.to_json()
        failing += [f"lean {o}" for o in lr.failing]
        failing += [f"lean disagreement: {d}" for d in lr.disagreements]
        if lr.disagreements:
            failing.append(
                f"lean disagreement: verdict: Python {lr.python_verdict}, "
                f"Lean kernel {lr.lean_verdict or 'differs'}"
            )
        if lr.error:
            failing.append(f"lean error: {lr.error}")
    if lean_state in ("disagreement", "error"):  # no verdict: Python's scores kept for diagnosis
        return {
            "task": task.slug,
            "exit_code": 3,
            "readable": True,
            "schema_issues": schema_issues(task, doc),
            "gate": g.verdict,
            "lean": "disagreement",
            "lean_detail": lean_detail,
            "failing": failing,
            "status": "lean_disagreement",
            "score": s.to_json(),
            "gate_report": g.to_json(),
            "replay": ev.replay.to_json() if ev.replay is not None else {},
            "lean_scope": lean_scope(task, ev.replay, None),
        }
    infeasible = g.verdict == "fail"  # Lean, when it ran, confirmed the same verdict
    sj = s.to_json()
    return {
        "task": task.slug,
        "exit_code": 1 if infeasible else 0,
        "readable": True,
        "schema_issues": schema_issues(task, doc),
        "gate": g.verdict,
        "lean": lean_state,
        "lean_detail": lean_detail,
        "failing": failing,
        "o_eval": sj["o_eval"],
        "o_eval_exact": sj["o_eval_exact"],
        "raw_exact": sj["raw_exact"],
        "robust_bo_eval": sj["robust_bo_eval"],
        "robust_bo_eval_exact": sj["robust_bo_eval_exact"],
        "skill": sj["skill"],
        "skill_exact": sj["skill_exact"],
        "status": s.status,
        "score": sj,
        "gate_report": g.to_json(),
        "replay": ev.replay.to_json() if ev.replay is not None else {},
        "lean_scope": lean_scope(task, ev.replay, lr if lean else None),
    }


def verify_batch_fields(
    items: list[tuple[Task, bytes | None]],
    *,
    lean: bool = True,
    budget_s: float = bounds.DEFAULT_BUDGET_S,
) -> list[Fields]:
    """`tbmm.verify.verify_batch`'s reports as plain fields (see there)."""
    reports: list[Fields | None] = []
    staged: list[tuple[int, Any, Any]] = []
    pooled = 0.0
    for k, (task, data) in enumerate(items):
        with bounds.cpu_budget(budget_s) as d:
            try:
                early, ev, doc = python_stage(task, data)
            except bounds.BudgetExceeded as exc:
                early = over_budget(task, str(exc))
            left = d.remaining()
        reports.append(early)
        if early is None:
            staged.append((k, ev, doc))
            pooled += max(left, 0.0)
    results: list[Any] = [None] * len(staged)
    if lean and staged:
        from tbmm.lean.certify import check_batch

        try:
            with bounds.cpu_budget(pooled):
                results = check_batch(
                    [(items[k][0], ev.doc, ev.gate, ev.score) for k, ev, _ in staged]
                )
        except bounds.BudgetExceeded as exc:
            why = f"{exc}: the batch's one Lean run had what its {len(staged)} artifacts' budgets left"
            for k, _, _ in staged:
                reports[k] = over_budget(items[k][0], why)
            return _with_digests(items, reports)
    for (k, ev, doc), lr in zip(staged, results, strict=True):
        reports[k] = finish(items[k][0], doc, ev, lr, lean=lean)
    return _with_digests(items, reports)


def _with_digests(
    items: list[tuple[Task, bytes | None]], reports: list[Fields | None]
) -> list[Fields]:
    out = [r for r in reports if r is not None]
    for (task, _), r in zip(items, out, strict=True):
        r["task_digest"] = task.verdict_digest
    return out
