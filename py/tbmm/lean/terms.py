"""A task and an artifact as Lean terms (`TBMM.Json`, `TBMM.Gate`, `TBMM.Verdict`).

Only numerals and constructor names chosen here reach the text: object keys become `Nat`
tags interned from the task's own paths (`Keys`), strings become tags numbered in order
of appearance, numbers exact `Rat.frac`/`Rat.negFrac` literals. So no artifact text can
reach Lean.

The artifact is pruned to what the task's paths can reach (`Reach`), which cannot change
the verdict: every value `TBMM.Verdict.eval` reads is found by following one of those
paths (a check's paths, their parts before and after the first `[*]`, a metric's path)
from the root, and at each step a lookup observes only (a) whether the node is an
object, a list, a number or something else, (b) whether it has the path's next key, (c)
the length of a list a wildcard runs over, or whether the next index is below the length,
and (d) a number's value. Pruning keeps every node on such a path with the same
constructor, the same keys along the paths, every entry of a list a wildcard runs over,
the entries of other lists up to the largest index a path names (those in between as
`null`), and every leaf. What it drops lies on no path, so no lookup can observe it.
`tests/test_lean_verdict.py` hides one referenced value and sees the kernel disagree.

Numbers at the same place in the artifact (the same key path, list indexes ignored) are
written over one common denominator, so a sum over a list column keeps its denominator
(`Rat.add` takes its shared-denominator path) instead of multiplying them up.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tbmm.core import exact
from tbmm.core import lean_syntax as S
from tbmm.core.exact import parse_decimal
from tbmm.core.forms import Form
from tbmm.core.paths import tokens

# A common denominator is used for a place only while it stays this small (digits).
MAX_COMMON_DEN_DIGITS = 60


def _cons(items: Sequence[str]) -> str:
    return "".join(f"(List.cons {x} " for x in items) + "List.nil" + ")" * len(items)


NULL_RUN = 8  # a run of at least this many `null` entries is written `Json.nulls k`


def _entries(items: Sequence[str]) -> str:
    """A `List Json` whose runs of `NULL_RUN` or more nulls (entries of a list no path reads,
    kept for its length) are `Json.nulls k` — the same list to the kernel, a fraction of the
    elaborator's work: `(List.cons a (List.append (Json.nulls k) (List.cons b List.nil)))`."""
    head: list[str] = []
    closes, i, tail = 0, 0, "List.nil"
    while i < len(items):
        j = i
        while j < len(items) and items[j] == "Json.null":
            j += 1
        if j - i >= NULL_RUN:
            if j == len(items):
                tail = f"(Json.nulls {j - i})"
            else:
                head.append(f"(List.append (Json.nulls {j - i}) ")
                closes += 1
            i = j
            continue
        head.append(f"(List.cons {items[i]} ")
        closes += 1
        i += 1
    return "".join(head) + tail + ")" * closes


def _cons_nat(items: Iterable[int]) -> str:
    return _cons([str(int(i)) for i in items])


@dataclass
class Keys:
    """The task's object keys, each with its `Nat` tag (sorted, so stable across runs)."""

    tags: dict[str, int]

    @classmethod
    def of_paths(cls, paths: Iterable[str]) -> Keys:
        names = {t for p in paths for t in tokens(p) if isinstance(t, str)}
        return cls({k: i for i, k in enumerate(sorted(names))})

    def path(self, p: str) -> str:
        """`List Seg` of an artifact path."""
        segs = []
        for t in tokens(p):
            if isinstance(t, str):
                segs.append(f"(Seg.key {self.tags[t]})")
            elif t < 0:
                segs.append("Seg.wild")
            else:
                segs.append(f"(Seg.index {t})")
        return _cons(segs)

    def paths(self, ps: Sequence[str]) -> str:
        return _cons([self.path(p) for p in ps])


# --- the task ------------------------------------------------------------------------


def task_paths(task: Any) -> list[str]:
    """Every path the verdict follows: the gate checks', the scored metrics' and the
    declared lists with a minimum length."""
    out = [p for c in task.gate.check for p in c.paths()]
    out += [m.path for m in task.metrics if not m.spec.exclude]
    out += [ls.path for ls in task.artifact_map.lists if ls.min_items > 0]
    return out


def task_keys(task: Any) -> Keys:
    if "lean_keys" not in task._cache:
        task._cache["lean_keys"] = Keys.of_paths(task_paths(task))
    return task._cache["lean_keys"]


def _q(s: str | None) -> Fraction | None:
    return None if s is None else parse_decimal(s)


def check_term(c: Any, keys: Keys) -> str:
    """`Check` of one `gate.toml` entry (`tbmm.suite.models.GateCheck`)."""
    f = c.form
    if f is Form.interval:
        return f"(Check.interval {keys.path(c.field)} {S.opt_rat(_q(c.lo))} {S.opt_rat(_q(c.hi))})"
    if f is Form.count:
        return f"(Check.count {keys.path(c.field)} {S.opt_rat(_q(c.hi))})"
    if f is Form.sum_to:
        return f"(Check.sumTo {keys.paths(c.fields)} {S.rat(_q(c.total))} {S.rat(_q(c.tol))})"
    if f is Form.order:
        slack = _q(c.slack) or Fraction(0)
        return (
            f"(Check.order {keys.paths(c.lhs)} {keys.paths(c.rhs)} {S.boolean(c.op == '<')} "
            f"{S.rat(slack)})"
        )
    if f is Form.threshold:
        return f"(Check.threshold {keys.path(c.field)} {S.cmp(c.op)} {S.rat(_q(c.bound))})"
    if f is Form.agree:
        rel = _q(c.rel_tol) or Fraction(0)
        return (
            f"(Check.agree {keys.path(c.field)} {keys.path(c.against)} {S.rat(_q(c.tol))} "
            f"{S.rat(rel)})"
        )
    coef = _q(c.coef) if c.coef is not None else Fraction(1)
    if c.bound is not None:
        return (
            f"(Check.product {keys.paths(c.factors)} {S.rat(coef)} {S.cmp(c.op)} "
            f"{S.rat(_q(c.bound))})"
        )
    return (
        f"(Check.productOf {keys.paths(c.factors)} {S.rat(coef)} {S.cmp(c.op)} "
        f"{keys.paths(c.bound_factors)})"
    )


def scored_metrics(task: Any) -> list[Any]:
    """The metrics the verdict scores (a metric excluded by configuration is left out)."""
    return [m for m in task.metrics if not m.spec.exclude]


def task_term(task: Any) -> str:
    """`Task` of a task: its gate, scored metrics with anchors and baseline values, and the
    reference papers' values (`Task.panel_anchors`). Cached on the task."""
    if "lean_task_term" in task._cache:
        return task._cache["lean_task_term"]
    from tbmm.verdict.gate import protected_metrics
    from tbmm.verdict.scoring import baseline_artifact, lookup

    keys = task_keys(task)
    metrics = scored_metrics(task)
    pos = {m.id: i for i, m in enumerate(metrics)}
    entries = []
    for c in task.gate.check:
        protects = [pos[mid] for mid in protected_metrics(task, c) if mid in pos]
        entries.append(f"(GateEntry.mk {check_term(c, keys)} {_cons_nat(protects)})")
    base = baseline_artifact(task)
    ms = []
    for m in metrics:
        spec = m.spec
        ms.append(
            f"(Metric.mk {keys.path(m.path)} {S.direction(spec.direction.value)} "
            f"{S.domain(spec.domain.value)} {S.rat(m.weight)} {S.rat(m.band)} {S.rat(m.anchor)} "
            f"{S.opt_rat(lookup(base, m.path).q)})"
        )
    papers = []
    for _, fields in task.panel_anchors:
        papers.append(_cons([f"(PaperValue.mk {pos[m.id]} {S.rat(q)})" for m, q, _ in fields]))
    lists = [f"(MinItems.mk {keys.path(ls.path)} {ls.min_items})" for ls in min_item_lists(task)]
    term = f"(Task.mk {_cons(entries)} {_cons(ms)} {_cons(papers)} {_cons(lists)})"
    task._cache["lean_task_term"] = term
    return term


# --- the artifact --------------------------------------------------------------------


@dataclass
class Reach:
    """The paths of a task as a trie: what pruning keeps."""

    end: bool = False  # some path ends here: the node's value is read
    length: bool = False  # a declared list's minimum length is checked here: keep its length
    keys: dict[str, Reach] = field(default_factory=dict)
    indexes: dict[int, Reach] = field(default_factory=dict)
    wild: Reach | None = None

    @classmethod
    def of_paths(cls, paths: Iterable[str], lists: Iterable[str] = ()) -> Reach:
        root = cls()
        for p in lists:
            root._node(p).length = True
        for p in paths:
            root._node(p).end = True
        return root

    def _node(self, path: str) -> Reach:
        """The node for `path` under this one, created along the way."""
        node = self
        for t in tokens(path):
            if isinstance(t, str):
                node = node.keys.setdefault(t, type(self)())
            elif t < 0:
                node.wild = node.wild or type(self)()
                node = node.wild
            else:
                node = node.indexes.setdefault(t, type(self)())
        return node

    def merged(self, other: Reach | None) -> Reach:
        """The union of two tries (a list entry reached by `[*]` and by its own index)."""
        if other is None:
            return self
        out = Reach(self.end or other.end, self.length or other.length)
        for k in {*self.keys, *other.keys}:
            a, b = self.keys.get(k), other.keys.get(k)
            out.keys[k] = a.merged(b) if a is not None else b  # type: ignore[union-attr]
        for i in {*self.indexes, *other.indexes}:
            a, b = self.indexes.get(i), other.indexes.get(i)
            out.indexes[i] = a.merged(b) if a is not None else b  # type: ignore[union-attr]
        if self.wild is not None or other.wild is not None:
            out.wild = (self.wild or Reach()).merged(other.wild)
        return out


def min_item_lists(task: Any) -> list[Any]:
    """The declared lists with a minimum length (`[[list]] min_items` > 0)."""
    return [ls for ls in task.artifact_map.lists if ls.min_items > 0]


def task_reach(task: Any) -> Reach:
    if "lean_reach" not in task._cache:
        lists = [ls.path for ls in min_item_lists(task)]
        task._cache["lean_reach"] = Reach.of_paths(task_paths(task), lists)
    return task._cache["lean_reach"]


@dataclass
class _Num:
    value: Fraction
    place: str


_NULL = ("null",)
PLACEHOLDER = object()  # the key of a pruned non-empty artifact's placeholder (see artifact_term)


def prune(doc: Any, reach: Reach, place: str = "") -> Any:
    """The part of `doc` the paths of `reach` can observe (see the module docstring)."""
    if isinstance(doc, dict):
        return (
            "obj",
            [
                (k, prune(v, reach.keys[k], f"{place}.{k}"))
                for k, v in doc.items()
                if k in reach.keys
            ],
        )
    if isinstance(doc, list):
        entry = f"{place}[]"
        if reach.wild is not None:
            return (
                "arr",
                [
                    prune(x, reach.wild.merged(reach.indexes.get(i)), entry)
                    for i, x in enumerate(doc)
                ],
            )
        if reach.length:  # every entry counts, even those no path reads (as `null`)
            n = len(doc)
        elif not reach.indexes:
            return ("arr", [])
        else:
            n = min(len(doc), max(reach.indexes) + 1)
        return (
            "arr",
            [
                prune(doc[i], reach.indexes[i], entry) if i in reach.indexes else _NULL
                for i in range(n)
            ],
        )
    if isinstance(doc, exact.Num):
        return _Num(doc.value, place)
    return doc  # str, bool, None, NonFinite: leaves


class _Render:
    def __init__(self, keys: Keys) -> None:
        self.keys = keys
        self.strings: dict[str, int] = {}
        self.dens: dict[str, int] = {}

    def collect(self, node: Any) -> None:
        dens: dict[str, set[int]] = {}

        def walk(n: Any) -> None:
            if isinstance(n, _Num):
                dens.setdefault(n.place, set()).add(n.value.denominator)
            elif isinstance(n, tuple) and n[0] == "obj":
                for _, v in n[1]:
                    walk(v)
            elif isinstance(n, tuple) and n[0] == "arr":
                for v in n[1]:
                    walk(v)

        walk(node)
        for place, ds in dens.items():
            den = math.lcm(*ds)
            if len(ds) > 1 and len(str(den)) <= MAX_COMMON_DEN_DIGITS:
                self.dens[place] = den

    def term(self, n: Any) -> str:
        if isinstance(n, _Num):
            den = self.dens.get(n.place, n.value.denominator)
            num = n.value.numerator * (den // n.value.denominator)
            return f"(Json.num {S.frac(num, den)})"
        if isinstance(n, tuple):
            if n[0] == "obj":
                ks = _cons_nat(
                    len(self.keys.tags) if k is PLACEHOLDER else self.keys.tags[k] for k, _ in n[1]
                )
                return f"(Json.obj {ks} {_cons([self.term(v) for _, v in n[1]])})"
            if n[0] == "arr":
                return f"(Json.arr {_entries([self.term(v) for v in n[1]])})"
            return "Json.null"
        if n is None:
            return "Json.null"
        if isinstance(n, bool):
            return f"(Json.bool {S.boolean(n)})"
        if isinstance(n, str):
            tag = self.strings.setdefault(n, len(self.strings))
            return f"(Json.str {tag})"
        if isinstance(n, exact.NonFinite):
            return "Json.nonFinite"
        raise TypeError(f"not a JSON value of the exact reader: {type(n).__name__}")


def artifact_term(task: Any, doc: dict[str, Any]) -> str:
    """`Json` of a resolved artifact, pruned to what the task's paths reach.

    The empty artifact `{}` is special (the gate checks nothing in it), so an artifact
    that has something, but nothing the paths reach, keeps one placeholder key (a tag no
    path uses, holding `null`) rather than turning into `{}`."""
    keys = task_keys(task)
    pruned = prune(doc, task_reach(task))
    if doc and isinstance(pruned, tuple) and pruned[0] == "obj" and not pruned[1]:
        pruned = ("obj", [(PLACEHOLDER, _NULL)])
    r = _Render(keys)
    r.collect(pruned)
    return r.term(pruned)
