"""Replay of CUMCM 2025 C, Problem 4: the female-fetus abnormality judgement, evaluated on the
attached labelled samples.

The artifact states its judgement method as a small decision (`q4.rules`): a list of linear
rules over named columns of the attachment's female sheet (女胎检测数据). A sample is judged
abnormal when at least one rule fires,

    intercept + sum(coef * feature) >= 0,

which covers the usual forms of a method: a threshold on one Z value, a disjunction of Z
thresholds ("|Z13| >= 3 or |Z18| >= 3 or |Z21| >= 3"), a logistic or discriminant score with a
cut-off (its linear predictor), or a few such scores combined by "or".

The replay applies that rule to every female sample whose listed columns are all present
(the evaluation set is fixed by the data, not by the rule) and compares it with the ground
truth the statement names: the AB column (染色体的非整倍体), non-empty = abnormal. Everything
is exact: feature values are the attachment's decimal text as rationals (the gestational week
"12w+3" is 12 + 3/7), coefficients the artifact's decimal text, and the sign of each score is
decided in integers. It returns the confusion counts, the F1 of the abnormal class and the
balanced accuracy (each rounded half-even to `ratio_decimals` places, exactly, so anchor.json
holds them as decimals), and, for Problem 3, how many pairs of the answer's BMI groups
overlap. It decides nothing: gate.toml ties the claims to these numbers.

The rule is fitted by its author on labelled rows, so it is scored on rows the author never
saw: `tbmm tasks build` holds out a fixed, seeded share of the pregnancies (tbmm.suite.split,
split.toml) from the agent's copy of the attachment, and the replay judges the rule on them
(`q4.heldout_*`, what the metrics read) as well as on the agent's own rows (`q4.f1`,
`q4.balanced_accuracy`: what the answer can compute and must report truthfully).
"""

from __future__ import annotations

import math
import re
import zipfile
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tbmm.core import exact
from tbmm.replay import CpuBudget, Outcome, ReplayInputError

_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_COLUMN = re.compile(r"^[A-Z]{1,3}$")
_WEEK = re.compile(r"^(\d+)w(?:\+(\d+))?$")  # "12w+3" = 12 weeks and 3 days


class Params(BaseModel):
    """replay.toml [params]: where the data are and what each feature tag reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attachment: str = Field(min_length=1)  # relative to the task's data/attachments folder
    # the held-out rows (tbmm.suite.split), relative to the task folder; "" = score in-sample
    heldout: str = ""
    sheet: str = Field(min_length=1)  # the female samples' worksheet, by its name
    label_column: str  # AB: aneuploidy found (non-empty = abnormal)
    week_column: str  # J: gestational week as "<w>w+<d>"
    features: dict[str, str] = Field(min_length=1)  # tag -> column letter
    abs_features: dict[str, str] = {}  # tag -> column letter, |value|
    max_rules: int = Field(ge=1, le=16)
    max_terms: int = Field(ge=1, le=64)
    ratio_decimals: int = Field(ge=4, le=30)

    @field_validator("label_column", "week_column")
    @classmethod
    def _col(cls, v: str) -> str:
        if not _COLUMN.match(v):
            raise ValueError(f"not a column letter: {v!r}")
        return v

    @field_validator("features", "abs_features")
    @classmethod
    def _cols(cls, v: dict[str, str]) -> dict[str, str]:
        for tag, col in v.items():
            if not re.match(r"^[a-z][a-z0-9_]*$", tag) or not _COLUMN.match(col):
                raise ValueError(f"bad feature {tag!r} -> {col!r}")
        return v

    def tags(self) -> list[str]:
        return [*self.features, *self.abs_features]


# --- the labelled samples (task data, identical for every artifact) --------------------


@dataclass(frozen=True)
class Samples:
    """The evaluation set: per feature tag, each sample's value as an integer numerator over
    the column's common denominator (exact), and the labels."""

    numerators: dict[str, tuple[int, ...]]
    denominators: dict[str, int]
    abnormal: tuple[bool, ...]
    skipped: int  # female rows left out because a listed column is empty

    @property
    def n(self) -> int:
        return len(self.abnormal)


def _col_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n - 1


def _sheet_xml(z: zipfile.ZipFile, name: str) -> bytes:
    wb = ET.fromstring(z.read("xl/workbook.xml"))
    rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target", "") for r in rels.iter(f"{_PKG_REL}Relationship")}
    for sh in wb.iter(f"{_NS}sheet"):
        if sh.get("name") == name:
            target = targets.get(sh.get(_REL), "")
            return z.read("xl/" + target.removeprefix("/xl/").removeprefix("xl/"))
    raise RuntimeError(f"no worksheet named {name!r}")


def read_sheet(path: Path, sheet: str) -> list[dict[int, str]]:
    """The worksheet's rows as {column index: cell text} (shared strings resolved; numbers
    as their decimal text, never converted to float). Row 1 (the header) included."""
    try:
        with zipfile.ZipFile(path) as z:
            try:
                sst = ET.fromstring(z.read("xl/sharedStrings.xml"))
                strings = ["".join(t.text or "" for t in si.iter(f"{_NS}t")) for si in sst]
            except KeyError:
                strings = []
            root = ET.fromstring(_sheet_xml(z, sheet))
    except (OSError, KeyError, zipfile.BadZipFile, ET.ParseError) as exc:
        raise RuntimeError(f"{path}: not a readable xlsx workbook: {exc}") from exc
    rows: list[dict[int, str]] = []
    for r in root.iter(f"{_NS}row"):
        row: dict[int, str] = {}
        for c in r.iter(f"{_NS}c"):
            ref = re.match(r"[A-Z]+", c.get("r", ""))
            if ref is None:
                continue
            v = c.find(f"{_NS}v")
            if c.get("t") == "inlineStr":
                text = "".join(t.text or "" for t in c.iter(f"{_NS}t"))
            elif v is None or v.text is None:
                continue
            elif c.get("t") == "s":
                text = strings[int(v.text)]
            else:
                text = v.text
            if text.strip():
                row[_col_index(ref.group(0))] = text.strip()
        rows.append(row)
    return rows


def _week(text: str) -> Fraction:
    m = _WEEK.match(text.replace(" ", ""))
    if not m:
        raise ValueError(f"not a gestational week: {text!r}")
    return Fraction(int(m.group(1))) + Fraction(int(m.group(2) or 0), 7)


def _value(text: str, col: str, p: Params) -> Fraction:
    if col == p.week_column:
        return _week(text)
    return exact.parse_decimal(text)


def build_samples(rows: list[dict[int, str]], p: Params) -> Samples:
    """The evaluation set from the sheet's rows (header skipped): every row with all listed
    columns present; values exact. Raises RuntimeError on a malformed cell (task data)."""
    cols = {**p.features, **p.abs_features}
    label = _col_index(p.label_column)
    values: dict[str, list[Fraction]] = {t: [] for t in cols}
    abnormal: list[bool] = []
    skipped = 0
    for row in rows[1:]:
        if not row:
            continue
        if any(_col_index(c) not in row for c in cols.values()):
            skipped += 1
            continue
        try:
            got = {t: _value(row[_col_index(c)], c, p) for t, c in cols.items()}
        except (ValueError, exact.ExactError) as exc:
            raise RuntimeError(f"attachment cell not a number: {exc}") from exc
        for t, v in got.items():
            values[t].append(abs(v) if t in p.abs_features else v)
        abnormal.append(label in row)
    dens = {t: math.lcm(*(v.denominator for v in vs)) if vs else 1 for t, vs in values.items()}
    nums = {t: tuple(int(v * dens[t]) for v in vs) for t, vs in values.items()}
    return Samples(nums, dens, tuple(abnormal), skipped)


@lru_cache(maxsize=4)
def _samples_cached(path: str, mtime_ns: int, size: int, params_json: str) -> Samples:
    p = Params.model_validate_json(params_json)
    return build_samples(read_sheet(Path(path), p.sheet), p)


def load_samples(task_data_dir: Path, p: Params) -> Samples:
    """The agent's labelled samples (its copy of the attachment), parsed once per version."""
    path = task_data_dir / "attachments" / p.attachment
    st = path.stat()
    return _samples_cached(str(path), st.st_mtime_ns, st.st_size, p.model_dump_json())


@lru_cache(maxsize=4)
def _heldout_cached(path: str, mtime_ns: int, size: int, params_json: str) -> Samples:
    from tbmm.suite.split import read_heldout

    p = Params.model_validate_json(params_json)
    return build_samples(read_heldout(Path(path)), p)


def load_heldout(task_dir: Path, p: Params) -> Samples | None:
    """The held-out samples (never in the agent's environment), or None without a split."""
    if not p.heldout:
        return None
    path = task_dir / p.heldout
    st = path.stat()
    return _heldout_cached(str(path), st.st_mtime_ns, st.st_size, p.model_dump_json())


# --- the artifact's decisions -----------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    intercept: Fraction
    terms: tuple[tuple[str, Fraction], ...]


def _num(node: Any, where: str) -> Fraction:
    if not isinstance(node, exact.Num):
        raise ReplayInputError(f"{where}: missing or not a finite number")
    return node.value


def read_rules(doc: dict[str, Any], p: Params) -> list[Rule]:
    """`q4.rules` of the artifact, validated (ReplayInputError names what is wrong)."""
    q4 = doc.get("q4")
    rules = q4.get("rules") if isinstance(q4, dict) else None
    if not isinstance(rules, list) or not rules:
        raise ReplayInputError("q4.rules: missing or empty (the judgement rule to replay)")
    if len(rules) > p.max_rules:
        raise ReplayInputError(f"q4.rules: {len(rules)} rules, at most {p.max_rules}")
    tags = set(p.tags())
    out = []
    for i, r in enumerate(rules):
        where = f"q4.rules[{i}]"
        if not isinstance(r, dict):
            raise ReplayInputError(f"{where}: not an object")
        terms = r.get("terms")
        if not isinstance(terms, list) or not terms:
            raise ReplayInputError(f"{where}.terms: missing or empty")
        if len(terms) > p.max_terms:
            raise ReplayInputError(f"{where}.terms: {len(terms)} terms, at most {p.max_terms}")
        got = []
        for j, t in enumerate(terms):
            tw = f"{where}.terms[{j}]"
            if not isinstance(t, dict):
                raise ReplayInputError(f"{tw}: not an object")
            feat = t.get("feature")
            if not isinstance(feat, str) or feat not in tags:
                raise ReplayInputError(f"{tw}.feature: not one of the listed feature tags")
            got.append((feat, _num(t.get("coef"), f"{tw}.coef")))
        out.append(Rule(_num(r.get("intercept"), f"{where}.intercept"), tuple(got)))
    return out


def fires(rule: Rule, s: Samples, deadline: CpuBudget) -> list[bool]:
    """Whether intercept + sum(coef * x) >= 0, per sample, decided exactly in integers:
    every term is brought to one common denominator L > 0, which keeps the sign."""
    scale = math.lcm(
        rule.intercept.denominator,
        *(c.denominator * s.denominators[f] for f, c in rule.terms),
    )
    acc = [rule.intercept.numerator * (scale // rule.intercept.denominator)] * s.n
    for f, c in rule.terms:
        deadline.check("nipt judgement replay")
        k = c.numerator * (scale // (c.denominator * s.denominators[f]))
        if k:
            col = s.numerators[f]
            acc = [a + k * x for a, x in zip(acc, col, strict=True)]
    return [a >= 0 for a in acc]


def round_half_even(q: Fraction, decimals: int) -> Fraction:
    """q rounded to `decimals` places, half to even, exactly (a terminating decimal)."""
    scale = 10**decimals
    return Fraction(round(q * scale), scale)


def overlapping_pairs(doc: dict[str, Any]) -> int | None:
    """Problem 3: pairs of BMI groups sharing more than an endpoint (None if the groups are
    not a list of numeric intervals: the gate's own checks on them report that)."""
    q3 = doc.get("q3")
    groups = q3.get("groups") if isinstance(q3, dict) else None
    if not isinstance(groups, list) or not groups:
        return None
    iv = []
    for g in groups:
        if not isinstance(g, dict):
            return None
        lo, hi = g.get("bmi_lower"), g.get("bmi_upper")
        if not isinstance(lo, exact.Num) or not isinstance(hi, exact.Num):
            return None
        iv.append((lo.value, hi.value))
    return sum(
        1
        for i in range(len(iv))
        for j in range(i + 1, len(iv))
        if max(iv[i][0], iv[j][0]) < min(iv[i][1], iv[j][1])
    )


def prepare(task: Any, spec: Any) -> None:
    """Parse the labelled rows into exact rationals (task data: cached, never charged to
    an artifact's budget)."""
    p = Params.model_validate(spec.params)
    load_samples(task.data_dir, p)
    load_heldout(task.dir, p)


def judge(
    rules: list[Rule], s: Samples, ratio_decimals: int, deadline: CpuBudget, prefix: str, where: str
) -> tuple[dict[str, Fraction | int], dict[str, str]]:
    """The rule's confusion counts, F1 of the abnormal class and balanced accuracy on `s`."""
    judged = [False] * s.n
    firing = []
    for r in rules:
        hit = fires(r, s, deadline)
        firing.append(sum(hit))
        judged = [a or b for a, b in zip(judged, hit, strict=True)]
    tp = sum(1 for j, y in zip(judged, s.abnormal, strict=True) if j and y)
    fp = sum(1 for j, y in zip(judged, s.abnormal, strict=True) if j and not y)
    fn = sum(1 for j, y in zip(judged, s.abnormal, strict=True) if not j and y)
    tn = s.n - tp - fp - fn
    pos, neg = tp + fn, fp + tn
    if pos == 0 or neg == 0:
        raise RuntimeError(f"the {where} are all of one class")  # task data
    f1 = Fraction(2 * tp, 2 * tp + fp + fn)
    bal = (Fraction(tp, pos) + Fraction(tn, neg)) / 2
    d = ratio_decimals
    values: dict[str, Fraction | int] = {
        f"q4.{prefix}f1": round_half_even(f1, d),
        f"q4.{prefix}balanced_accuracy": round_half_even(bal, d),
        f"q4.{prefix}true_positives": tp,
        f"q4.{prefix}false_positives": fp,
        f"q4.{prefix}false_negatives": fn,
        f"q4.{prefix}true_negatives": tn,
        f"q4.{prefix}samples": s.n,
    }
    counts = f"TP {tp}, FP {fp}, FN {fn}, TN {tn} of {s.n} {where}"
    details = {
        f"q4.{prefix}f1": f"F1 = 2TP/(2TP+FP+FN) = {2 * tp}/{2 * tp + fp + fn}; {counts}",
        f"q4.{prefix}balanced_accuracy": (
            f"(TP/{pos} + TN/{neg})/2 = ({tp}/{pos} + {tn}/{neg})/2; "
            + ", ".join(f"rule {i} fires on {k}" for i, k in enumerate(firing))
        ),
    }
    return values, details


def replay(doc: dict[str, Any], task: Any, spec: Any, deadline: CpuBudget) -> Outcome:
    p = Params.model_validate(spec.params)
    rules = read_rules(doc, p)
    s = load_samples(task.data_dir, p)
    values, details = judge(
        rules, s, p.ratio_decimals, deadline, "", "labelled samples of the agent's attachment"
    )
    notes = [f"{s.skipped} female sample(s) without every listed column are not evaluated"]
    held = load_heldout(task.dir, p)
    if held is not None:
        v2, d2 = judge(
            rules, held, p.ratio_decimals, deadline, "heldout_", "held-out samples (never shown)"
        )
        values.update(v2)
        details.update(d2)
        notes.append(f"{held.skipped} held-out sample(s) without every listed column not evaluated")
    pairs = overlapping_pairs(doc)
    if pairs is not None:
        values["q3.overlapping_group_pairs"] = pairs
    else:
        notes.append("q3.groups: not a list of numeric BMI intervals; overlap not replayed")
    return Outcome(values=values, details=details, notes=notes)
