"""Score an artifact against a task's metric panel: exact, direction-aware, one-sided.

The per-metric formula and the task-level formulas are in `tbmm.core.rules` (its docstring is
the specification). This module does the plumbing around them: reading the artifact
exactly, finding each metric's value, applying the edge rules with a recorded reason for
each, and aggregating over the single anchor and over the multi-reference panel (eq. 1).

Edge rules (each leaves a reason string on the metric):
* missing field -> 0; wrong type (string, bool, object, list) -> 0; NaN / Infinity / an
  out-of-range exponent -> 0; value outside the metric's domain -> 0;
* degenerate band (< 2% of |anchor|) -> widened to 5%, noted;
* a metric with `exclude` set is left out for every entry (and the oracle), noted;
* list entries beyond those the panel scores are excluded, not counted (noted per list).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tbmm.core import bounds, exact, rules
from tbmm.core.exact import fraction_to_text
from tbmm.core.paths import PathError, resolve
from tbmm.core.rules import Direction
from tbmm.suite.tasks import Metric, Task

ROUND = 6


class ArtifactError(ValueError):
    """The artifact is not a JSON object (unreadable input: CLI exit code 2)."""


def read_artifact(data: bytes | str, caps: bounds.Caps | None = None) -> dict[str, Any]:
    """Parse an artifact exactly; raise ArtifactError with a one-line reason if unusable.

    The input caps (tbmm.core.bounds) are enforced during the one parse; an artifact over a cap
    raises ArtifactError whose __cause__ is the BoundsError. A UTF-8 BOM is dropped.
    """
    try:
        doc = bounds.parse_exact(data, caps or bounds.DEFAULT_CAPS)
    except bounds.BoundsError as exc:
        raise ArtifactError(str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"artifact is not UTF-8 text: {exc}") from exc
    except ValueError as exc:
        raise ArtifactError(f"artifact is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise ArtifactError("artifact is nested too deeply") from exc
    if not isinstance(doc, dict):
        raise ArtifactError(f"artifact must be a JSON object, got {type(doc).__name__}")
    return doc


@dataclass(frozen=True)
class Value:
    """A metric's value as found in an artifact: exact number, or None with the reason."""

    q: Fraction | None
    text: str | None
    reason: str


def lookup(doc: dict[str, Any], path: str) -> Value:
    try:
        node = resolve(doc, path)
    except PathError as exc:
        return Value(None, None, f"missing field ({exc})")
    if isinstance(node, exact.Num):
        return Value(node.value, node.text, "")
    if isinstance(node, exact.NonFinite):
        what = (
            "NaN/Infinity"
            if node.text.lower().lstrip("+-") in ("nan", "infinity", "inf")
            else "out-of-range number"
        )
        return Value(None, node.text, f"not a finite number ({what}: {node.text[:40]})")
    kind = {bool: "boolean", str: "string", dict: "object", list: "list", type(None): "null"}.get(
        type(node), type(node).__name__
    )
    return Value(None, None, f"wrong type ({kind}, expected number)")


@dataclass(slots=True)
class MetricScore:
    id: str
    path: str
    direction: str
    unit: str
    weight: Fraction
    anchor: Fraction
    anchor_text: str
    band: Fraction
    band_effective: Fraction
    value_text: str | None
    reward: Fraction | None  # None = excluded
    reason: str
    excluded: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "direction": self.direction,
            "unit": self.unit,
            "weight": fraction_to_text(self.weight),
            "anchor": self.anchor_text,
            "band": fraction_to_text(self.band),
            "band_effective": fraction_to_text(self.band_effective),
            "value": self.value_text,
            "excluded": self.excluded,
            "reward": None if self.reward is None else round(float(self.reward), ROUND),
            "reward_exact": None if self.reward is None else fraction_to_text(self.reward),
            "reason": self.reason,
        }


def score_metric(
    metric: Metric,
    doc: dict[str, Any] | None,
    anchor: Fraction | None = None,
    anchor_text: str | None = None,
    unverifiable: str = "",
) -> MetricScore:
    """Reward of one metric; `anchor` overrides the task anchor (a panel paper's value).

    `unverifiable` is the gate's reason when a check protecting this metric could not be
    evaluated: the metric then scores 0 whatever its value (omission never pays)."""
    spec = metric.spec
    if anchor is None:
        o, o_text = metric.anchor, metric.anchor_text
        band_eff, widened = metric.band_effective
    else:
        o, o_text = anchor, metric.anchor_text if anchor_text is None else anchor_text
        band_eff, widened = rules.effective_band(o, metric.band)
    direction = spec.direction

    def result(value_text: str | None, reward: Fraction | None, reason: str) -> MetricScore:
        return MetricScore(
            metric.id,
            metric.path,
            direction.value,
            spec.unit,
            metric.weight,
            o,
            o_text,
            metric.band,
            band_eff,
            value_text,
            reward,
            reason,
            reward is None,
        )

    if spec.exclude:
        return result(None, None, f"excluded by config: {spec.exclude}")
    if doc is None:
        return result(None, rules.ZERO, "missing artifact")
    try:
        node = resolve(doc, metric.path)
    except PathError:
        node = None
    if type(node) is exact.Num and not unverifiable:
        q, text = node.value, node.text
    else:
        v = lookup(doc, metric.path)
        if unverifiable:
            return result(v.text, rules.ZERO, unverifiable)
        return result(v.text, rules.ZERO, v.reason)
    if not rules.in_domain(q, spec.domain):
        return result(text, rules.ZERO, f"out of domain ({spec.domain.value})")
    r = rules.reward_in_band(direction, q, o, band_eff)
    notes = []
    if widened and direction is not Direction.exact_value:
        notes.append(_widened_note(metric.band, band_eff))
    if (
        (direction is Direction.higher_is_better or direction is Direction.lower_is_better)
        and r.numerator == r.denominator
        and q != o
    ):
        notes.append("beyond the anchor in the good direction")
    return result(text, r, "; ".join(notes))


@functools.lru_cache(maxsize=4096)
def _widened_note(band: Fraction, band_eff: Fraction) -> str:
    return (
        f"degenerate band {fraction_to_text(band)} < 2% of |anchor|: widened to 5% = "
        f"{fraction_to_text(band_eff)}"
    )


def raw_score(scores: list[MetricScore]) -> Fraction | None:
    return rules.weighted_mean(
        (s.weight, s.reward) for s in scores if not s.excluded and s.reward is not None
    )


@dataclass
class PaperScore:
    paper_id: str
    fields: list[str]
    score: Fraction

    def to_json(self) -> dict[str, Any]:
        return {
            "paper_id": self.paper_id,
            "fields": self.fields,
            "score": round(float(self.score), ROUND),
            "score_exact": fraction_to_text(self.score),
        }


def panel_scores(
    task: Task,
    doc: dict[str, Any] | None,
    own: dict[str, MetricScore] | None = None,
    own_raw: Fraction | None = None,
    unverifiable: dict[str, str] | None = None,
) -> list[PaperScore]:
    """R(m, S_p) for every panel paper p with a non-empty scored field set S_p (eq. 1).

    `own` are the scores against the task anchor (raw score `own_raw`), reused where a
    paper's value is the anchor's: a paper that reports the anchor on every scored field
    has R(m, S_p) = own_raw without recomputation.
    """
    own = own or {}
    unverifiable = unverifiable or {}
    scored_ids = {k for k, s in own.items() if not s.excluded}
    out = []
    for paper_id, fields in task.panel_anchors:
        scores = [
            own[m.id]
            if m.id in own and q == m.anchor
            else score_metric(m, doc, q, text, unverifiable.get(m.id, ""))
            for m, q, text in fields
        ]
        ids = {m.id for m, _, _ in fields}
        reused = all(own.get(m.id) is sc for (m, _, _), sc in zip(fields, scores, strict=True))
        r = own_raw if own_raw is not None and reused and ids == scored_ids else raw_score(scores)
        if r is not None:
            out.append(PaperScore(paper_id, [m.id for m, _, _ in fields], r))
    return out


def anchor_lists(task: Task) -> list[tuple[str, int]]:
    """(path, length) of every list in the anchor artifact; computed once per task."""
    if "anchor_lists" not in task._cache:
        found: list[tuple[str, int]] = []

        def walk(a: Any, path: str) -> None:
            if isinstance(a, dict):
                for k, v in a.items():
                    walk(v, f"{path}.{k}" if path else k)
            elif isinstance(a, list):
                found.append((path, len(a)))
                for i, x in enumerate(a):
                    walk(x, f"{path}[{i}]")

        walk(task.anchor_artifact, "")
        task._cache["anchor_lists"] = found
    return task._cache["anchor_lists"]


def extra_entry_notes(task: Task, doc: dict[str, Any]) -> list[str]:
    """Lists longer than the anchor's: their extra entries are excluded from scoring."""
    notes: list[str] = []
    for path, n in anchor_lists(task):
        try:
            node = resolve(doc, path)
        except PathError:
            continue
        if isinstance(node, list) and len(node) > n:
            extra = len(node) - n
            notes.append(
                f"{path}: {extra} extra entr{'y' if extra == 1 else 'ies'} excluded (anchor has {n})"
            )
    return notes


@dataclass
class TaskScore:
    task: str
    status: str  # scored | missing_artifact | gate_failed
    metrics: list[MetricScore]
    raw: Fraction
    oracle_raw: Fraction
    o_eval_anchor: Fraction
    o_eval: Fraction
    panel: list[PaperScore]
    baseline_raw: Fraction | None
    robust_bo: Fraction
    literature_split: bool
    notes: list[str] = field(default_factory=list)
    floor_raw: Fraction = rules.ZERO  # F_t: max(F, best naive raw), floor.json
    skill: Fraction = rules.ZERO  # the default reward: skill over F_t, 0 unless scored

    def to_json(self) -> dict[str, Any]:
        r = lambda q: round(float(q), ROUND)  # noqa: E731 - display rounding only
        return {
            "task": self.task,
            "status": self.status,
            "o_eval": r(self.o_eval),
            "o_eval_exact": fraction_to_text(self.o_eval),
            "o_eval_anchor": r(self.o_eval_anchor),
            "o_eval_anchor_exact": fraction_to_text(self.o_eval_anchor),
            "raw": r(self.raw),
            "raw_exact": fraction_to_text(self.raw),
            "oracle_raw_exact": fraction_to_text(self.oracle_raw),
            "baseline_raw_exact": None
            if self.baseline_raw is None
            else fraction_to_text(self.baseline_raw),
            "robust_bo_eval": r(self.robust_bo),
            "robust_bo_eval_exact": fraction_to_text(self.robust_bo),
            "floor_raw_exact": fraction_to_text(self.floor_raw),
            "skill": r(self.skill),
            "skill_exact": fraction_to_text(self.skill),
            "literature_split": self.literature_split,
            "panel": [p.to_json() for p in self.panel],
            "metrics": [m.to_json() for m in self.metrics],
            "notes": self.notes,
        }


def baseline_artifact(task: Task, pipeline: str | None = None) -> dict[str, Any]:
    """The baseline entry F as an artifact: mapped metric values at their paths; the rest missing."""
    from tbmm.core.paths import set_path

    bl = task.baseline
    name = pipeline or bl.default_pipeline
    values = bl.pipelines.get(name, {})
    doc: dict[str, Any] = {}
    by_id = {m.id: m for m in task.metrics}
    for mid, bv in values.items():
        if mid in by_id:
            set_path(
                doc, by_id[mid].path, exact.Num(exact.parse_decimal(bv.value), bv.value, False)
            )
    return doc


def _raw_of(task: Task, doc: dict[str, Any] | None) -> Fraction:
    r = raw_score([score_metric(m, doc) for m in task.metrics])
    return rules.ZERO if r is None else r


def baseline_raw(task: Task) -> Fraction:
    """F: the baseline pipeline's raw score, as stored once per task in floor.json (built by
    `tbmm tasks build`, checked fresh by validate; unmapped metrics count as missing, i.e. 0).
    The leaderboard's Multi-BO and the reward adapters read the same value (`tbmm.verdict.floor`)."""
    from tbmm.verdict.floor import baseline_f

    return baseline_f(task)


def oracle_raw(task: Task) -> Fraction:
    """O: the anchor reproduction's raw score (1 by construction; computed, not assumed)."""
    if "oracle_raw" not in task._cache:
        task._cache["oracle_raw"] = _raw_of(task, task.anchor_artifact)
    return task._cache["oracle_raw"]


def panel_o_eval(
    task: Task, doc: dict[str, Any] | None, o_eval_anchor: Fraction, panel: list[PaperScore]
) -> Fraction:
    """Eq. (1): mean over papers with S_p != {} of R(m, S_p); empty panel -> the single anchor."""
    if not panel:
        return o_eval_anchor
    mean = (
        panel[0].score
        if len(panel) == 1
        else sum((p.score for p in panel), rules.ZERO) / len(panel)
    )
    return rules.clamp(mean, rules.ZERO, rules.ONE)


# The compiled path (tbmm.verdict.score_plan.task_score) is what runs. The reference path composes the
# specification functions (`score_metric`, `raw_score`, `panel_scores`, `panel_o_eval` and the
# `rules` formulas); tests/test_score_plan.py holds the two equal, and the tests that make Python
# lie to the Lean kernel switch COMPILED off to inject their lies into those functions.
COMPILED = True


def score_task(
    task: Task,
    doc: dict[str, Any] | None,
    *,
    gate_failed: bool = False,
    unverifiable: dict[str, str] | None = None,
) -> TaskScore:
    """All task-level scores for one resolved artifact (`doc` None = missing artifact).

    `unverifiable` (from the gate report) maps metric ids to the reason they score 0."""
    if COMPILED:
        return _compiled(task, doc, gate_failed, unverifiable)
    unverifiable = unverifiable or {}
    if doc is None:
        status = "missing_artifact"
    elif gate_failed:
        status = "gate_failed"
    else:
        status = "scored"
    scored = status == "scored"
    o_anchor = o_eval = skill = rules.ZERO
    robust = -rules.ONE
    from tbmm.verdict.floor import floor_f

    notes = extra_entry_notes(task, doc) if scored else []  # type: ignore[arg-type]
    metrics = [score_metric(m, doc, unverifiable=unverifiable.get(m.id, "")) for m in task.metrics]
    o_raw, f, f_t = oracle_raw(task), baseline_raw(task), floor_f(task)
    raw = raw_score(metrics) or rules.ZERO
    panel = panel_scores(task, doc, {m.id: m for m in metrics}, raw, unverifiable)
    if scored:
        o_anchor = rules.o_eval(raw, o_raw)
        o_eval = panel_o_eval(task, doc, o_anchor, panel)
        robust = rules.robust_bo(raw, o_raw, f)
        skill = rules.skill(raw, o_raw, f_t)
    if not scored:
        notes.append(
            "missing artifact: O-Eval 0, Robust BO-Eval -1"
            if doc is None
            else "feasibility gate failed: O-Eval 0, Robust BO-Eval -1"
        )
    if task.panel.literature_split:
        notes.append(
            f"literature-split task: kept in per-task tables, left out of headline means ({task.panel.literature_split_note})"
        )
    return TaskScore(
        task.slug, status, metrics, raw, o_raw, o_anchor, o_eval, panel, f, robust,
        task.panel.literature_split, notes, f_t, skill,
    )  # fmt: skip


def _compiled(
    task: Task, doc: dict[str, Any] | None, gate_failed: bool, unverifiable: dict[str, str] | None
) -> TaskScore:
    """`tbmm.verdict.score_plan.task_score`, imported on first use (it imports this module)."""
    global _compiled
    from tbmm.verdict.score_plan import task_score

    _compiled = task_score  # type: ignore[assignment]
    return task_score(task, doc, gate_failed, unverifiable)
