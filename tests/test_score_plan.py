"""The compiled fast paths give the verdicts of the reference code, exactly.

`score_task` scores through `tbmm.verdict.score_plan` (a task's panel compiled into integers) and
`run_gate` evaluates one-field checks through their compiled form. Here both are held
equal (the whole JSON of the verdict: exact rationals, reasons, notes, messages) to the
reference they replaced — `score_metric` / `raw_score` / `panel_scores` and the `rules`
formulas for scoring, `instances` + `evaluate` for the gate — over the benchmark corpus
of every task and seeded mutants that hit the scored and gated fields (scaled, negated,
NaN, strings, deleted, exponents, long digits, lists truncated, replayed values changed).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.suite.tasks import Task
from tbmm.tooling.bench import corpus
from tbmm.verdict import scoring
from tbmm.verdict.gate import (
    GateReport,
    _short_lists,
    evaluate,
    instances,
    protected_metrics,
    run_gate,
)
from tbmm.verdict.scoring import (
    TaskScore,
    read_artifact,
    score_task,
)

from .conftest import SYN_ANCHOR

MUTANTS = 6


def reference_score(
    task: Task,
    doc: dict[str, Any] | None,
    gate_failed: bool = False,
    unverifiable: dict[str, str] | None = None,
) -> TaskScore:
    """`score_task` on its reference path (`scoring.COMPILED` off): metric by metric on
    Fractions, through the specification functions, as it was before the compiled panel."""
    scoring.COMPILED = False
    try:
        return score_task(task, doc, gate_failed=gate_failed, unverifiable=unverifiable)
    finally:
        scoring.COMPILED = True


def reference_gate(task: Task, doc: dict[str, Any] | None) -> GateReport:
    """`run_gate` with every check through the general `instances` + `evaluate`."""
    replay = [{"id": r.id, "description": r.description} for r in task.gate.replay]
    if not doc:
        return GateReport(
            task.slug, "warn", [], ["empty or missing artifact: nothing to check"], replay
        )
    insts = list(_short_lists(task, doc))
    unverifiable: dict[str, str] = {}
    for check in task.gate.check:
        for inst in instances(check, doc):
            if inst.status == "pending":
                evaluate(inst, doc)
            insts.append(inst)
            if inst.status == "missing":
                for mid in protected_metrics(task, check):
                    unverifiable.setdefault(mid, f"unverifiable: {check.id} needs {inst.message}")
    warnings = [f"{i.name}: {i.message}" for i in insts if i.status == "missing"]
    failed = any(i.status in ("fail", "bad") for i in insts)
    verdict = "fail" if failed else "warn" if warnings else "pass"
    return GateReport(task.slug, verdict, insts, warnings, replay, unverifiable)


def _leaves(d: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(d, dict):
        return [p for k, v in d.items() for p in _leaves(v, (*path, k))]
    if isinstance(d, list):
        return [p for i, v in enumerate(d) for p in _leaves(v, (*path, i))]
    return [path]


def _num(q: Fraction) -> Any:
    t = exact.fraction_to_text(q)
    return exact.loads(t if "/" not in t else "0.333")


def mutate(doc: dict[str, Any], rng: random.Random, focus: set[str]) -> dict[str, Any]:
    """A copy of `doc` with one to four leaves changed, mostly on scored or gated keys."""
    doc = exact.loads(exact.dumps(doc))
    for _ in range(rng.randint(1, 4)):
        leaves = _leaves(doc)
        hot = [p for p in leaves if any(k in focus for k in p if isinstance(k, str))]
        if not leaves:
            break
        path = rng.choice(hot if hot and rng.random() < 0.7 else leaves)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        key, cur = path[-1], parent[path[-1]]
        q = cur.value if isinstance(cur, exact.Num) else Fraction(1)
        kind = rng.choice(
            ["scale", "scale", "scale", "negate", "nan", "string", "delete", "zero", "exp",
             "long", "wrap", "truncate"]
        )  # fmt: skip
        if kind == "scale":
            factor = rng.choice(["0.5", "0.99", "1.01", "1.5", "2", "0", "-1", "10", "1.0001"])
            parent[key] = _num(q * exact.parse_decimal(factor))
        elif kind == "negate":
            parent[key] = _num(-q)
        elif kind == "nan":
            parent[key] = exact.NonFinite("NaN")
        elif kind == "string":
            parent[key] = "x"
        elif kind == "delete" and isinstance(parent, dict):
            del parent[key]
        elif kind == "zero":
            parent[key] = exact.loads("0.0")
        elif kind == "exp":
            parent[key] = exact.loads("1.5e2")
        elif kind == "long":
            parent[key] = exact.loads("12345678901234567890.123456789")
        elif kind == "wrap":
            parent[key] = [cur]
        elif kind == "truncate" and isinstance(parent, list):
            del parent[1:]
    return doc


def _cases(task: Task, rng: random.Random) -> list[dict[str, Any] | None]:
    items = corpus([task])
    focus = {k for m in task.metrics for k in m.path.replace("[", ".").split(".")}
    focus |= {k for c in task.gate.check for p in c.paths() for k in p.replace("[", ".").split(".")}
    heavy = len(items[0][1]) > 100_000  # the big replayed artifacts: fewer mutants
    out: list[dict[str, Any] | None] = [None, {}]
    for _, data, replayed in items:
        base = read_artifact(data, task.caps)
        for doc in [base] + [mutate(base, rng, focus) for _ in range(1 if heavy else MUTANTS)]:
            if replayed is not None and doc:
                doc["replayed"] = mutate(replayed, rng, focus) if rng.random() < 0.3 else replayed
            out.append(doc)
    return out


def test_compiled_paths_give_the_reference_verdicts(suite: list[Task]) -> None:
    rng = random.Random(20260425)
    seen = {"fail": 0, "pass": 0, "warn": 0, "unverifiable": 0, "partial": 0}
    for task in suite:
        for doc in _cases(task, rng):
            # first on a fresh copy, whose numbers have not been evaluated yet: the plan
            # reads each value from its text (the gate below caches the values it reads)
            fresh = None if doc is None else exact.loads(exact.dumps(doc, faithful=True))
            first = score_task(task, fresh).to_json()
            assert json.dumps(first) == json.dumps(reference_score(task, doc).to_json())
            got = run_gate(task, doc) if doc is not None else None
            if got is not None:
                want = reference_gate(task, doc)
                assert json.dumps(got.to_json()) == json.dumps(want.to_json()), task.slug
                seen[got.verdict] += 1
                seen["unverifiable"] += bool(got.unverifiable)
            for kw in (
                {},
                {"gate_failed": True},
                {
                    "gate_failed": got is not None and got.verdict == "fail",
                    "unverifiable": got.unverifiable if got else {},
                },
            ):
                s = score_task(task, doc, **kw)
                r = reference_score(task, doc, **kw)
                assert json.dumps(s.to_json()) == json.dumps(r.to_json()), (task.slug, kw)
                seen["partial"] += 0 < s.raw < 1
    # the corpus reached every outcome (a comparison that only ever saw anchors proves little)
    assert all(seen.values()), seen


@pytest.mark.parametrize("text", ["0.5", "-0.5", "1e2", "1E-2", "12.500", "-0", "7", "7.0", "7.5"])
def test_values_read_from_text_equal_their_fractions(syn: Task, text: str) -> None:
    """The plan reads a lazily parsed number from its text; an already computed value, an
    exponent or a trailing zero give the same reward as the Fraction."""
    from tbmm.verdict.score_plan import plan_for

    body = ", ".join(f'"{k}": {text}' for k in SYN_ANCHOR["q"])
    doc = read_artifact('{"q": {' + body + "}}")
    got = [m.to_json() for m in plan_for(syn).score(doc, {})[0]]  # before any .value
    want = [m.to_json() for m in reference_score(syn, doc).metrics]  # caches every .value
    assert got == want
    assert [m.to_json() for m in plan_for(syn).score(doc, {})[0]] == want
