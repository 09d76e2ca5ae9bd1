"""Naive answers: what a modeller who skips the modelling writes in a minute.

Generated for every task from its data alone — the statement, the artifact map (field
types, units, tags, declared lists), the metric panel's domains, the gate's intervals and
sums, and the attachments' numeric columns — never from the reference, and never written
per task in code. Per-task hints, where the generic rules cannot see a value, live as data
in the task folder (`naive.toml`: a statement number for a field with its verbatim quote,
or an attachment column for a field).

Strategies (each a complete answer: a field the strategy has no value for takes the
`midpoint` value, so every answer fills every field it can):

* ``nothing``    — the empty artifact;
* ``midpoint``   — every field at its domain's midpoint: a field of a `sum_to` group at
  the uniform split (total / n), a bounded field at the middle of its interval (a
  probability or share at 0.5, a correlation at 0), otherwise 0; integers rounded; tags at
  their first id; declared lists at their minimum length (at least one entry);
* ``statement``  — every field that the statement gives a number for in the field's own
  unit (the first such number; or the quoted hint) at that number;
* ``data-mean``, ``data-median``, ``data-last`` — every field matched to an attachment's
  numeric column (every word of the column's header appears in the field's description,
  or a `naive.toml` column hint) at that column's mean, median or last value (the row
  with the largest value of the hint's `order_by` column, else the file's last row:
  persistence, for a forecast); a field named as an interval's lower or upper end takes
  half or 1.5 times the value (the ±50 % interval around it);
* ``data-persistence`` — last values (persistence) for the matched fields, column means for
  a distribution (the fields of a `sum_to` group);
* every strategy once more with **honest claims**, for a task that replays decisions:
  each claim an `agree` check ties to a replayed value is set to what the replay computes
  for the strategy's own decisions (a do-nothing plan reported truthfully).

`evaluate_all(task)` runs each through the full pipeline (replay → gate → score);
`tbmm.verdict.floor` stores them with their scores in `floor.json`.
"""

from __future__ import annotations

import copy
import csv
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import Field

from tbmm.core import exact
from tbmm.core.exact import Num
from tbmm.core.paths import PathError, expand, resolve, set_path
from tbmm.core.rules import DOMAIN_BOUNDS
from tbmm.suite.models import REPLAYED, ArtifactField, Strict
from tbmm.suite.tasks import Task, load_model

HINTS_FILE = "naive.toml"
HALF = Fraction(1, 2)
STRICT = Fraction(1, 100)
# Leaf names of an interval's ends: the naive interval is ±50 % around the naive value.
_LOWER = re.compile(r"(^|_)(lower|low|lo|min)(_|$)")
_UPPER = re.compile(r"(^|_)(upper|high|hi|max)(_|$)")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])[-+]?\d+(?:\.\d+)?")
_WORD = re.compile(r"[a-z0-9]+")
_TIME_WORDS = frozenset({"date", "year", "day", "time", "week", "month"})
_MAX_ROWS = 200_000  # an attachment's rows read per sheet (the largest here has ~7,300)


class StatementHint(Strict):
    """A number the statement gives for a field, with the sentence it is in (verbatim)."""

    field: str
    value: str
    quote: str = Field(min_length=5)


class ColumnHint(Strict):
    """An attachment column a naive modeller would read a field from."""

    field: str
    file: str  # relative to environment/data/attachments/
    column: str  # the header text (whitespace-normalised)
    sheet: str = ""
    order_by: str = ""  # a column whose largest value marks the last (most recent) row


class NaiveHints(Strict):
    statement: list[StatementHint] = []
    column: list[ColumnHint] = []
    # Why the task keeps a naive floor within 1/10 of the reference (validate fails such a
    # task otherwise): the metric cannot tell a model from a guess and cannot be reworked yet.
    headroom: str = ""


def hint_problems(task: Task) -> list[str]:
    """What is wrong with a task's naive.toml: a quote that is not in the statement, a value
    that is not in its quote, a field the artifact map lacks, a column that is not there."""
    path = task.dir / HINTS_FILE
    if not path.is_file():
        return []
    g = Generator(task)
    fields = {f.path for f in task.artifact_map.field}
    out = []
    statement = _norm(g.statement_text)
    for h in g.hints.statement:
        if h.field not in fields:
            out.append(f"statement hint: unknown field {h.field}")
        if _norm(h.quote) not in statement:
            out.append(f"statement hint {h.field}: the quote is not in the statement")
        if h.value not in h.quote:
            out.append(f"statement hint {h.field}: value {h.value} is not in its quote")
    found = g.field_columns
    for c in g.hints.column:
        if c.field not in fields:
            out.append(f"column hint: unknown field {c.field}")
        elif c.field not in found or found[c.field].header != _norm(c.column):
            out.append(f"column hint {c.field}: column {c.column!r} not found in {c.file}")
    if g.hints.headroom and len(g.hints.headroom) < 40:
        out.append("headroom: give the reason (at least 40 characters)")
    return out


@dataclass
class Column:
    file: str
    sheet: str
    header: str
    values: list[Fraction]  # in file order
    last: Fraction


@dataclass
class Answer:
    name: str
    how: str
    doc: dict[str, Any]


def _norm(text: str) -> str:
    return " ".join(text.split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _num(q: Fraction) -> Num:
    text = exact.fraction_to_text(q)
    if "/" in text:
        text = f"{float(q):.12g}"
    return Num(exact.parse_decimal(text), text, "." not in text and "e" not in text)


def _decimal(text: str | None) -> Fraction | None:
    if text is None:
        return None
    t = text.strip().replace(",", "")
    try:
        return exact.parse_decimal(t)
    except (ValueError, exact.ExactError):
        return None


def _tables(path: Path) -> list[tuple[str, list[list[str | None]]]]:
    """(sheet, rows of cell texts) of a csv or xlsx attachment; other files give none."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(encoding="utf-8-sig", errors="replace", newline="") as fh:
            rows: list[list[str | None]] = []
            for i, r in enumerate(csv.reader(fh)):
                if i >= _MAX_ROWS:
                    break
                rows.append(list(r))
        return [("", rows)]
    if suffix == ".xlsx":
        from tbmm.replay.crop_planting import read_xlsx

        try:
            return [(k, v[:_MAX_ROWS]) for k, v in read_xlsx(path).items()]
        except (OSError, KeyError, ValueError) as exc:  # a broken workbook has no columns
            del exc
            return []
    return []


def _columns(file: str, sheet: str, rows: list[list[str | None]]) -> list[Column]:
    """Numeric columns of a table: the header is the last mostly-text row above the first
    row with two or more numbers; a column is numeric when most of its cells are."""
    first = next(
        (i for i, r in enumerate(rows) if sum(_decimal(c) is not None for c in r if c) >= 2), None
    )
    if first is None:
        return []
    header_i = next(
        (
            i
            for i in range(first - 1, -1, -1)
            if sum(1 for c in rows[i] if c and _decimal(c) is None) >= 2
        ),
        None,
    )
    if header_i is None:
        return []
    body = rows[first:]
    cols: list[tuple[str, list[Fraction | None]]] = []
    for j, h in enumerate(rows[header_i]):
        if not h or _decimal(h) is not None:
            continue
        cells = [r[j] if j < len(r) else None for r in body]
        parsed = [_decimal(c) for c in cells]
        filled = sum(1 for c in cells if c not in (None, ""))
        n = sum(1 for v in parsed if v is not None)
        if n and n * 2 > filled:
            cols.append((_norm(h), parsed))
    # The most recent row: the largest value of the table's first time-like column (a
    # date, year, day ...), else the file's last row.
    time_col = next((v for h, v in cols if set(_words(h)) & _TIME_WORDS), None)
    order = list(range(len(body)))
    if time_col is not None:
        order.sort(key=lambda i: (time_col[i] is not None, time_col[i] or 0))
    out = []
    for h, parsed in cols:
        vals = [v for v in parsed if v is not None]
        last = next(parsed[i] for i in reversed(order) if parsed[i] is not None)
        out.append(Column(file, sheet, h, vals, last))
    return out


class Generator:
    """The naive answers of one task (see the module docstring)."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.amap = task.artifact_map
        path = task.dir / HINTS_FILE
        self.hints = load_model(path, NaiveHints) if path.is_file() else NaiveHints()

    # --- what the data say about each field -------------------------------------------

    @cached_property
    def bounds(self) -> dict[str, tuple[Fraction | None, Fraction | None]]:
        """Per field path: the tightest [lo, hi] its metric domain and gate intervals give."""
        from tbmm.verdict.exploits import claim_paths

        out: dict[str, tuple[Fraction | None, Fraction | None]] = {}

        def meet(path: str, lo: Fraction | None, hi: Fraction | None) -> None:
            a, b = out.get(path, (None, None))
            lo2 = lo if a is None else a if lo is None else max(a, lo)
            hi2 = hi if b is None else b if hi is None else min(b, hi)
            out[path] = (lo2, hi2)

        for m in self.task.metrics:
            lo, hi, _ = DOMAIN_BOUNDS[m.spec.domain]
            for p in claim_paths(self.task, m.path):
                meet(p, lo, hi)
        for c in self.task.gate.check:
            if c.field is None:
                continue
            if c.form.value == "interval":
                meet(c.field, _decimal(c.lo), _decimal(c.hi))
            elif c.form.value == "threshold" and c.bound is not None:
                b = _decimal(c.bound)
                if b is None:
                    continue
                if c.op in (">=", ">"):  # a strict bound: the first hundredth inside
                    meet(c.field, b + (STRICT if c.op == ">" else 0), None)
                elif c.op in ("<=", "<"):
                    meet(c.field, None, b - (STRICT if c.op == "<" else 0))
        return out

    @cached_property
    def uniform(self) -> dict[str, Fraction]:
        """Fields of a gate `sum_to` group over named fields: the uniform split."""
        out: dict[str, Fraction] = {}
        for c in self.task.gate.check:
            if c.form.value == "sum_to" and c.fields and c.total is not None:
                total = _decimal(c.total)
                if total is not None:
                    for f in c.fields:
                        out.setdefault(f, total / len(c.fields))
        return out

    def midpoint(self, f: ArtifactField) -> Fraction:
        if f.path in self.uniform:
            return self.uniform[f.path]
        lo, hi = self.bounds.get(f.path, (None, None))
        if lo is not None and hi is not None:
            return (lo + hi) / 2
        if lo is not None:
            return max(lo, Fraction(0))
        if hi is not None:
            return min(hi, Fraction(0))
        return Fraction(0)

    @cached_property
    def statement_text(self) -> str:
        path = self.task.dir / "instruction.md"
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        return text.split("# Required Benchmark Artifact", 1)[0]

    @cached_property
    def statement_values(self) -> dict[str, Fraction]:
        """Per field: a hinted statement number, else the first number the statement
        writes followed by the field's unit (a unit of at least two characters)."""
        out: dict[str, Fraction] = {}
        text = self.statement_text
        for f in self.amap.field:
            unit = f.unit.strip()
            if f.type == "tag" or len(unit) < 2 or unit in ("percentage points",):
                continue
            pat = re.compile(rf"({_NUMBER.pattern})\s*{re.escape(unit)}(?![A-Za-z])", re.IGNORECASE)
            m = pat.search(text)
            if m and (q := _decimal(m.group(1))) is not None:
                out[f.path] = q
        for h in self.hints.statement:
            q = _decimal(h.value)
            if q is not None:
                out[h.field] = q
        return out

    @cached_property
    def columns(self) -> list[Column]:
        att = self.task.dir / "environment" / "data" / "attachments"
        out: list[Column] = []
        if not att.is_dir():
            return out
        for p in sorted(att.rglob("*")):
            if p.is_file():
                for sheet, rows in _tables(p):
                    out.extend(_columns(str(p.relative_to(att)), sheet, rows))
        return out

    @cached_property
    def field_columns(self) -> dict[str, Column]:
        """Per field: its hinted column, else the column whose header words all appear in
        the field's description (the longest such header)."""
        out: dict[str, Column] = {}
        for f in self.amap.field:
            if f.type == "tag" or "[*]" in f.path:
                continue
            desc = set(_words(f.description))
            best: Column | None = None
            for c in self.columns:
                hw = _words(c.header)
                fits = hw and all(w in desc for w in hw) and any(not w.isdigit() for w in hw)
                if fits and (best is None or len(_words(best.header)) < len(hw)):
                    best = c
            if best is not None:
                out[f.path] = best
        att = self.task.dir / "environment" / "data" / "attachments"
        for h in self.hints.column:
            for sheet, rows in _tables(att / h.file):
                if h.sheet and sheet != h.sheet:
                    continue
                cols = {c.header: c for c in _columns(h.file, sheet, rows)}
                col = cols.get(_norm(h.column))
                if col is None:
                    continue
                if h.order_by and (key := cols.get(_norm(h.order_by))) is not None:
                    pairs = list(zip(key.values, col.values, strict=False))
                    if pairs:
                        col = Column(col.file, sheet, col.header, col.values, max(pairs)[1])
                out[h.field] = col
        return out

    # --- answers ----------------------------------------------------------------------

    def _concrete(self, path: str) -> list[str]:
        """The concrete paths of a field: each declared list at its minimum length (>= 1)."""
        sizes = {ls.path: max(ls.min_items, 1) for ls in self.amap.lists}
        paths = [""]
        parts = path.split("[*]")
        for i, part in enumerate(parts):
            paths = [p + part for p in paths]
            if i < len(parts) - 1:
                n = sizes.get("[*]".join(parts[: i + 1]), 1)
                paths = [f"{p}[{k}]" for p in paths for k in range(n)]
        return paths

    def build(self, value: Callable[[ArtifactField], Fraction | None]) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for f in self.amap.field:
            if f.type == "tag":
                leaf: Any = f.tags[0]
            else:
                q = value(f)
                if q is None:
                    q = self.midpoint(f)
                if f.type == "integer":
                    q = Fraction(int(q + HALF) if q >= 0 else -int(-q + HALF))
                leaf = [_num(q)] if f.type == "list[number]" else _num(q)
            for p in self._concrete(f.path):
                set_path(doc, p, copy.copy(leaf) if isinstance(leaf, list) else leaf)
        self._repair(doc)
        return doc

    def _repair(self, doc: dict[str, Any]) -> None:
        """What a careless but consistent modeller fixes: each `sum_to` group over named
        fields rescaled to its total; each `order` check between two named fields met by
        raising its right-hand side (a few passes, for chains)."""

        def val(p: str) -> Fraction | None:
            try:
                node = resolve(doc, p)
            except PathError:
                return None
            return node.value if isinstance(node, Num) else None

        for c in self.task.gate.check:
            if c.form.value != "sum_to" or not c.fields or c.total is None:
                continue
            total, vals = _decimal(c.total), [val(p) for p in c.fields]
            if total is None or any(v is None for v in vals):
                continue
            got = sum((v for v in vals if v is not None), Fraction(0))
            for p, v in zip(c.fields, vals, strict=True):
                assert v is not None
                set_path(doc, p, _num(v * total / got if got else total / len(c.fields)))
        for _ in range(3):
            for c in self.task.gate.check:
                if c.form.value != "order" or len(c.lhs or []) != 1 or len(c.rhs or []) != 1:
                    continue
                lp, rp = c.lhs[0], c.rhs[0]  # type: ignore[index]
                if "[*]" in lp + rp or (a := val(lp)) is None or (b := val(rp)) is None:
                    continue
                slack = _decimal(c.slack) or Fraction(0)
                strict = c.op == "<"
                if a > b + slack or (strict and a == b + slack):
                    set_path(doc, rp, _num(a + (STRICT if strict else 0)))

    def _scaled(self, f: ArtifactField, q: Fraction) -> Fraction:
        leaf = f.path.rsplit(".", 1)[-1]
        if _LOWER.search(leaf):
            return q * HALF
        if _UPPER.search(leaf):
            return q * 3 * HALF
        return q

    def answers(self) -> list[Answer]:
        out = [Answer("nothing", "the empty artifact", {})]
        out.append(
            Answer(
                "midpoint",
                "every field at its domain's midpoint (uniform split in a sum, 0.5 for a "
                "probability or share, the middle of a gate interval, else 0)",
                self.build(lambda f: None),
            )
        )
        sv = self.statement_values
        if sv:
            out.append(
                Answer(
                    "statement",
                    f"the statement's own numbers in each field's unit ({len(sv)} field(s))",
                    self.build(lambda f: sv.get(f.path)),
                )
            )
        fc = self.field_columns
        if fc:
            stats: dict[str, Callable[[Column], Fraction]] = {
                "data-mean": lambda c: sum(c.values, Fraction(0)) / len(c.values),
                "data-median": lambda c: Fraction(statistics.median(c.values)),
                "data-last": lambda c: c.last,
            }
            for name, stat in stats.items():
                out.append(
                    Answer(
                        name,
                        f"{name.split('-')[1]} of the attachment column matched to each field "
                        f"({len(fc)} field(s); an interval's ends at ±50 %)",
                        self.build(
                            lambda f, stat=stat: (
                                None if f.path not in fc else self._scaled(f, stat(fc[f.path]))
                            )
                        ),
                    )
                )
            mean = stats["data-mean"]
            out.append(
                Answer(
                    "data-persistence",
                    "persistence: each matched field at its column's last value (an "
                    "interval's ends at ±50 %), a distribution (a sum_to group) at its "
                    "columns' means",
                    self.build(
                        lambda f: (
                            None
                            if f.path not in fc
                            else mean(fc[f.path])
                            if f.path in self.uniform
                            else self._scaled(f, fc[f.path].last)
                        )
                    ),
                )
            )
        return out


def honest_claims(task: Task, resolved: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with every claim an `agree` check ties to a replayed value set to that value."""
    out = copy.deepcopy(doc)
    for c in task.gate.check:
        if c.form.value != "agree" or not c.field or not c.against:
            continue
        for p in expand(out, c.field) if "[*]" in c.field else [c.field]:
            idx = re.findall(r"\[(\d+)\]", p)
            target = c.against
            for i in idx:
                target = target.replace("[*]", f"[{i}]", 1)
            try:
                node = resolve(resolved, target)
            except PathError:
                continue
            if isinstance(node, Num):
                set_path(out, p, node)
    return out


@dataclass
class Result:
    name: str
    how: str
    doc: dict[str, Any]
    status: str
    gate: str
    raw: Fraction  # the raw score the verdict stands on: 0 unless scored
    o_eval: Fraction


def evaluate_all(task: Task) -> list[Result]:
    """Every naive answer of `task` through the full pipeline (as a file would arrive)."""
    from tbmm.verdict.pipeline import evaluate

    def run(name: str, how: str, doc: dict[str, Any]) -> tuple[Result, dict[str, Any] | None]:
        ev = evaluate(task, exact.loads(exact.dumps(doc)))
        s = ev.score
        raw = s.raw if s.status == "scored" else Fraction(0)
        return Result(name, how, doc, s.status, ev.gate.verdict, raw, s.o_eval), ev.doc

    has_claims = any(c.form.value == "agree" for c in task.gate.check)
    out: list[Result] = []
    for a in Generator(task).answers():
        res, resolved = run(a.name, a.how, a.doc)
        out.append(res)
        if has_claims and a.doc and resolved is not None and REPLAYED in resolved:
            honest = honest_claims(task, resolved, a.doc)
            if exact.dumps(honest) != exact.dumps(a.doc):
                out.append(
                    run(
                        f"{a.name}+claims",
                        f"{a.how}; every claim set to what the replay computes for these decisions",
                        honest,
                    )[0]
                )
    return out
