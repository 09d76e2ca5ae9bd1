"""The public Python API: tasks, score, gate, replay, verify, and finding the answer in a
model completion. Every result is a pydantic model with a `schema_version`, so stored
verdicts stay readable and `tbmm.schemas()` gives their JSON schemas.

An artifact may be given as JSON text (str/bytes; numbers are read exactly from the text),
or as a parsed `dict` (its floats are read from their shortest repr, so `0.1` is 1/10;
pass the text when the exact digits matter). A task is a slug or a loaded `Task`.

    >>> import tbmm
    >>> v = tbmm.verify("mcm-2025-b-juneau-tourism", '{"q": {}}', lean=False)
    >>> v.status, v.o_eval
    ('scored', 0.0)
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION: Literal["1"] = "1"

Status = Literal[
    "scored",  # the artifact was read, gated and scored (O-Eval may still be 0)
    "gate_failed",  # infeasible: a gate check (or a replay agreement) failed, O-Eval 0
    "missing_artifact",  # nothing to score
    "unreadable",  # not a JSON object, or over an input cap
    "budget_exceeded",  # verification ran past its time budget
    "lean_disagreement",  # the Lean kernel and Python disagree (a bug, never a score)
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    schema_version: Literal["1"] = SCHEMA_VERSION


class TaskInfo(_Model):
    """One task of the suite, as `tbmm.tasks()` lists it."""

    slug: str
    suite: str
    year: int
    problem: str
    title: str
    metrics: list[str]
    replayed: bool
    incomplete: bool
    missing_attachments: list[str]
    output_path: str


class MetricResult(_Model):
    id: str
    path: str
    direction: str
    anchor: str
    value: str | None
    reward: float | None  # None: excluded by configuration
    reward_exact: str | None
    reason: str


class ScoreResult(_Model):
    """Per-metric rewards and the task scores (O-Eval, Robust BO-Eval), exact and as floats."""

    task: str
    status: Status
    o_eval: float
    o_eval_exact: str
    robust_bo: float
    robust_bo_exact: str
    raw_exact: str
    skill: float = 0.0  # the default reward: skill over the naive floor (tbmm.core.rules.skill)
    skill_exact: str = "0"
    metrics: list[MetricResult]
    notes: list[str]


class CheckResult(_Model):
    check: str
    instance: str
    form: str
    status: Literal["pass", "fail", "bad", "missing", "pending"]
    message: str


class GateResult(_Model):
    task: str
    verdict: Literal["pass", "warn", "fail"]
    failed: list[str]
    unverifiable: dict[str, str]  # metric id -> why it scores 0
    warnings: list[str]
    checks: list[CheckResult]


class ReplayResult(_Model):
    task: str
    module: str
    status: Literal["ok", "unreplayable"]
    values: dict[str, str]  # path under `replayed` -> exact decimal or p/q text
    error: str
    # CPU seconds of the replay when it ran here; None inside a verdict, which holds
    # nothing that depends on the machine (a verdict is a function of task and artifact)
    seconds: float | None = None


class Verdict(_Model):
    """Everything a reward or a leaderboard needs about one artifact of one task."""

    task: str
    status: Status
    feasible: bool
    o_eval: float
    o_eval_exact: str
    robust_bo: float
    robust_bo_exact: str
    skill: float = 0.0  # the default reward: skill over the naive floor, 0 unless scored
    skill_exact: str = "0"
    gate: Literal["pass", "warn", "fail", "skipped"]
    lean: Literal["ok", "fail", "skipped", "disagreement", "unavailable"]
    failing: list[str]
    unverifiable: dict[str, str]
    error: str
    score: ScoreResult | None
    replay: ReplayResult | None


class Extraction(_Model):
    """The JSON answer found in a model completion, or why none was found."""

    found: bool
    text: str | None  # the JSON object's text, exactly as it appears
    method: Literal["fenced", "object", "whole", "none"]
    reason: str


# ---------------------------------------------------------------------------- tasks


def tasks(root: Path | None = None) -> list[TaskInfo]:
    """Every task of the suite (the bundled one, or the suite folder `root`)."""
    from tbmm.suite.tasks import TASKS_ROOT, load_suite

    return [_info(t) for t in load_suite(root or TASKS_ROOT)]


def load_task(slug: str, root: Path | None = None) -> Any:
    """The task with this slug (KeyError lists the known slugs). Loaded once per process:
    a task keeps its parsed files and derived values (anchors, bands, F) in memory, which
    is what makes repeated scoring cheap."""
    from tbmm.suite.tasks import TASKS_ROOT

    return _load_task(slug, str(root or TASKS_ROOT))


@functools.lru_cache(maxsize=256)
def _load_task(slug: str, root: str) -> Any:
    from tbmm.suite.tasks import find_task

    return find_task(slug, Path(root))


def _info(t: Any) -> TaskInfo:
    m = t.manifest
    return TaskInfo(
        slug=m.slug,
        suite=m.suite,
        year=m.year,
        problem=m.problem,
        title=m.title,
        metrics=[x.id for x in t.scoring.metric],
        replayed=t.replay_spec is not None,
        incomplete=t.incomplete,
        missing_attachments=t.missing_attachments,
        output_path=m.output_path,
    )


def _task(task: Any) -> Any:
    return load_task(task) if isinstance(task, str) else task


# ---------------------------------------------------------------------------- artifacts


def _exact_tree(x: Any) -> Any:
    """A parsed dict's numbers as exact `Num`s (floats via their shortest repr)."""
    from tbmm.core import exact

    if isinstance(x, dict):
        return {str(k): _exact_tree(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_exact_tree(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int | float | Decimal):
        text = repr(x) if isinstance(x, float) else str(x)
        special = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}.get(text.lower())
        # NaN/Infinity as the literals a JSON text would carry, so that `faithful` dumps
        # give the bytes the text path reads (the same verdict either way)
        return exact.loads(text) if special is None else exact.NonFinite(special)
    return x


def _bytes(artifact: Any) -> bytes:
    """JSON bytes for an artifact given as text, bytes or a dict."""
    if isinstance(artifact, bytes):
        return artifact
    if isinstance(artifact, str):
        # a lone surrogate (from a JSON "\\ud800" escape) stays the invalid UTF-8 it
        # stands for: the reader then calls it unreadable, as it would in a file
        return artifact.encode("utf-8", "surrogatepass")
    from tbmm.core import exact

    return exact.dumps(_exact_tree(artifact), indent=None, faithful=True).encode("utf-8")


def _parse(artifact: Any, caps: Any = None) -> dict[str, Any]:
    """The exact tree of an artifact (ArtifactError when it is not a JSON object), read
    within `caps` (the task's input caps; the generic ones when None)."""
    from tbmm.verdict.scoring import read_artifact

    return read_artifact(_bytes(artifact), caps)


# ---------------------------------------------------------------------------- verdicts


def _score_from_json(j: dict[str, Any], status: str) -> ScoreResult:
    """A `ScoreResult` from `TaskScore.to_json()` (also as stored in a verify report)."""
    return ScoreResult(
        task=j["task"],
        status=j["status"] if j.get("status") in Status.__args__ else status,  # type: ignore[attr-defined]
        o_eval=j["o_eval"],
        o_eval_exact=j["o_eval_exact"],
        robust_bo=j["robust_bo_eval"],
        robust_bo_exact=j["robust_bo_eval_exact"],
        raw_exact=j["raw_exact"],
        skill=j.get("skill", 0.0),
        skill_exact=j.get("skill_exact", "0"),
        metrics=[
            MetricResult(
                id=m["id"],
                path=m["path"],
                direction=m["direction"],
                anchor=m["anchor"],
                value=m["value"],
                reward=m["reward"],
                reward_exact=m["reward_exact"],
                reason=m["reason"],
            )
            for m in j["metrics"]
        ],
        notes=j.get("notes", []),
    )


def _score_result(s: Any) -> ScoreResult:
    return _score_from_json(s.to_json(), s.status)


def _gate_result(g: Any) -> GateResult:
    return GateResult(
        task=g.task,
        verdict=g.verdict,
        failed=[i.name for i in g.failed],
        unverifiable=dict(g.unverifiable),
        warnings=list(g.warnings),
        checks=[
            CheckResult(
                check=i.check.id,
                instance=i.name,
                form=i.check.form.value,
                status=i.status,
                message=i.message,
            )
            for i in g.instances
        ],
    )


def _replay_result(task: Any, rep: Any) -> ReplayResult | None:
    if rep is None:
        return None
    return ReplayResult(
        task=task.slug,
        module=rep.module,
        status=rep.status,
        values=dict(rep.values),
        error=rep.error,
        seconds=rep.seconds,
    )


def score(task: Any, artifact: Any) -> ScoreResult:
    """Score an artifact (resolved and gated first: a failed gate zeroes it, a missing gate
    input zeroes the metrics it protects). Raises `ArtifactError` on unreadable input."""
    from tbmm.verdict.pipeline import evaluate

    t = _task(task)
    return _score_result(evaluate(t, _parse(artifact, t.caps)).score)


def gate(task: Any, artifact: Any) -> GateResult:
    """The feasibility gate of an artifact (after its replay, for a replayed task)."""
    from tbmm.verdict.pipeline import evaluate

    t = _task(task)
    return _gate_result(evaluate(t, _parse(artifact, t.caps)).gate)


def replay(task: Any, artifact: Any) -> ReplayResult:
    """Replay an artifact's decisions (ValueError for a task without a replay)."""
    from tbmm.replay import run_replay

    t = _task(task)
    if t.replay_spec is None:
        raise ValueError(f"task {t.slug} has no replay")
    _, rep = run_replay(t, _parse(artifact, t.caps))
    out = _replay_result(t, rep)
    assert out is not None
    return out


def verify(task: Any, artifact: Any, *, lean: bool = False) -> Verdict:
    """The full verdict: read (with the input caps), replay, gate, score, and with
    `lean=True` the Lean kernel check. Never raises on bad input: an unreadable artifact is
    a verdict with status "unreadable". `artifact=None` is a missing artifact."""
    from tbmm.lean.runtime import ToolchainError
    from tbmm.verify import verify_artifact

    t = _task(task)
    data = None if artifact is None else _bytes(artifact)
    try:
        rep = verify_artifact(t, data, lean=lean)
    except ToolchainError as exc:
        # no Lean runtime here: the Python verdict stands, marked as not kernel-checked
        v = verdict_from_report(t, verify_artifact(t, data, lean=False))
        return v.model_copy(update={"lean": "unavailable", "error": v.error or str(exc)})
    return verdict_from_report(t, rep)


def verdict_from_report(task: Any, rep: Any) -> Verdict:
    """A `Verdict` from a `tbmm.verify.VerifyReport`."""
    known = Status.__args__  # type: ignore[attr-defined]
    status = rep.status if rep.status in known else "unreadable"
    lean_state = (
        rep.lean if rep.lean in ("ok", "fail", "skipped", "disagreement", "unavailable") else "fail"
    )
    rp = rep.replay or None
    return Verdict(
        task=task.slug,
        status=status,
        feasible=rep.exit_code == 0,
        o_eval=rep.o_eval,
        o_eval_exact=rep.o_eval_exact,
        robust_bo=rep.robust_bo_eval,
        robust_bo_exact=rep.robust_bo_eval_exact,
        skill=rep.skill,
        skill_exact=rep.skill_exact,
        gate=rep.gate,
        lean=lean_state,
        failing=list(rep.failing),
        unverifiable=dict((rep.gate_report or {}).get("unverifiable", {})),
        error=rep.error,
        score=_score_from_json(rep.score, status) if rep.score else None,
        replay=None
        if not rp
        else ReplayResult(
            task=task.slug,
            module=rp["module"],
            status=rp["status"],
            values=rp["values"],
            error=rp["error"],
        ),
    )


# ---------------------------------------------------------------------------- completions

_FENCE = re.compile(r"```[ \t]*(?:json|JSON|jsonc)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


def _objects(text: str) -> list[tuple[int, int]]:
    """Spans of the balanced top-level {...} blocks of `text` (strings and escapes respected)."""
    spans, depth, start, in_str, esc = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    return spans


def _is_object(text: str) -> bool:
    """Whether `text` is one JSON object, decided without keeping a tree of it (numbers
    and objects are dropped as they are read: a completion is not an artifact yet, and
    is not bound by an artifact's caps)."""
    try:
        doc = json.loads(
            text,
            object_pairs_hook=_drop_object,
            parse_int=_drop,
            parse_float=_drop,
            parse_constant=_drop,
        )
    except (ValueError, RecursionError):
        return False
    return doc is _OBJECT


_OBJECT: dict[str, Any] = {}


def _drop_object(_: Any) -> dict[str, Any]:
    return _OBJECT


def _drop(_: str) -> None:
    return None


def completion_cap(task: Any) -> int:
    """Characters of a completion that is read at all: twice the task's artifact byte cap
    (an answer within the caps plus as much prose); longer ones are unreadable, unsearched."""
    return 2 * _task(task).caps.max_bytes


def extract_artifact(text: str) -> Extraction:
    """Find the JSON answer in a model completion.

    In order: the whole text if it is a JSON object; else the LAST fenced code block
    (```json … ``` or plain ```) holding a JSON object; else the last balanced top-level
    `{…}` that parses as a JSON object. The text returned is the object's own text, so the
    numbers keep their digits."""
    if not isinstance(text, str):
        return Extraction(found=False, text=None, method="none", reason="completion is not text")
    stripped = text.strip().lstrip("\ufeff")
    if stripped.startswith("{") and _is_object(stripped):
        return Extraction(found=True, text=stripped, method="whole", reason="")
    fenced = [m.group(1).strip() for m in _FENCE.finditer(text)]
    for block in reversed(fenced):
        if _is_object(block):
            return Extraction(found=True, text=block, method="fenced", reason="")
    for a, b in reversed(_objects(text)):
        if _is_object(text[a:b]):
            return Extraction(found=True, text=text[a:b], method="object", reason="")
    if fenced:
        reason = f"{len(fenced)} fenced block(s), none holds a valid JSON object"
    elif "{" in text:
        reason = "no balanced {...} in the completion parses as a JSON object"
    else:
        reason = "the completion contains no JSON object"
    return Extraction(found=False, text=None, method="none", reason=reason)


def verify_completion(task: Any, completion: str, *, lean: bool = False) -> Verdict:
    """`verify` of the JSON answer found in a completion; none found = unreadable, with why."""
    cap = completion_cap(task)
    if isinstance(completion, str) and len(completion) > cap:
        ex = Extraction(
            found=False,
            text=None,
            method="none",
            reason=f"the completion has {len(completion)} characters, over the cap of {cap}",
        )
    else:
        ex = extract_artifact(completion)
    if not ex.found:
        t = _task(task)
        from tbmm.verify import verify_artifact

        rep = verify_artifact(t, b"", lean=False)
        v = verdict_from_report(t, rep)
        return v.model_copy(update={"error": f"no answer in the completion: {ex.reason}"})
    return verify(task, ex.text, lean=lean)


def verify_many(
    items: list[tuple[Any, Any]],
    *,
    lean: bool = False,
    completions: bool | Sequence[bool] = False,
) -> list[Verdict]:
    """`verify` (or `verify_completion` with `completions=True`) of many (task, artifact)
    pairs, in order; `completions` may also say it per item (a mixed batch still takes one
    Lean run). With `lean=True` the Lean kernel checks all of them in ONE run (one
    theorem per artifact, each result apart), which is what makes kernel checking
    affordable for a batch of rollouts; without a Lean runtime every verdict is the Python
    one with `lean="unavailable"`, as in `verify`."""
    from tbmm.lean.runtime import ToolchainError
    from tbmm.verify import verify_batch

    out: list[Verdict | None] = [None] * len(items)
    todo: list[tuple[int, Any, bytes | None]] = []
    per_item = [completions] * len(items) if isinstance(completions, bool) else list(completions)
    if len(per_item) != len(items):
        raise ValueError(f"completions: {len(per_item)} flags for {len(items)} items")
    for k, ((task, artifact), completion) in enumerate(zip(items, per_item, strict=True)):
        t = _task(task)
        if completion:
            too_long = isinstance(artifact, str) and len(artifact) > completion_cap(t)
            ex = extract_artifact("" if too_long else artifact)
            if not ex.found:  # verify_completion says why (over the cap, or no answer)
                out[k] = verify_completion(t, artifact)
                continue
            artifact = ex.text
        todo.append((k, t, None if artifact is None else _bytes(artifact)))
    pairs = [(t, data) for _, t, data in todo]
    try:
        reports = verify_batch(pairs, lean=lean)
        unavailable = ""
    except ToolchainError as exc:
        reports, unavailable = verify_batch(pairs, lean=False), str(exc)
    for (k, t, _), rep in zip(todo, reports, strict=True):
        v = verdict_from_report(t, rep)
        if unavailable:
            v = v.model_copy(update={"lean": "unavailable", "error": v.error or unavailable})
        out[k] = v
    return [v for v in out if v is not None]


# ---------------------------------------------------------------------------- schemas


def schemas() -> dict[str, dict[str, Any]]:
    """JSON schemas of the result models (version `SCHEMA_VERSION`)."""
    return {
        m.__name__: m.model_json_schema()
        for m in (TaskInfo, ScoreResult, GateResult, ReplayResult, Verdict, Extraction)
    }
