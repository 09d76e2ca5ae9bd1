"""Load task folders into `Task` objects, with errors that name the file, field and problem."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tbmm.core import exact
from tbmm.core.paths import PathError, resolve
from tbmm.suite.resources import tasks_root

if TYPE_CHECKING:
    from tbmm.suite.models import (
        ArtifactMap,
        Baseline,
        GateSpec,
        Manifest,
        MetricSpec,
        Panel,
        ReplaySpec,
        ScoringSpec,
    )

REPO_ROOT = Path(__file__).resolve().parents[3]  # the source checkout (for `tasks build`)
TASKS_ROOT = tasks_root()  # the checkout's tasks/, or the installed wheel's copy

# Lite mode (set by `tbmm score` / `tbmm gate`): task files load as validated plain copies
# (`tbmm.suite.compiled`) without importing pydantic once a file has been validated. The objects
# read the same; `tests/test_compiled.py` holds the verdicts of both modes equal.
LITE = False


class TaskFormatError(ValueError):
    """A task file is missing or malformed; the message names file, field and problem."""


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise TaskFormatError(f"{path}: file is missing")
    return path.read_bytes()


def _parse_data(path: Path, raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        if path.suffix == ".toml":
            return tomllib.loads(text)
        return json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(f"{path}: cannot parse: {exc}") from exc


def _read_data(path: Path) -> Any:
    return _parse_data(path, _read_bytes(path))


def load_model(path: Path, model: Any) -> Any:
    """Validate one task file against its pydantic model (a class, or its name in
    `tbmm.suite.models`). In lite mode, with the model named, a file validated before loads as
    its plain copy without pydantic (`tbmm.suite.compiled`)."""
    raw = _read_bytes(path)
    if LITE and isinstance(model, str):
        from tbmm.suite import compiled

        hit = compiled.get(model, raw)
        if hit is not None:
            return hit
        return compiled.put(model, raw, _validate(path, raw, model))
    return _validate(path, raw, model)


def _validate(path: Path, raw: bytes, model: Any) -> Any:
    from pydantic import ValidationError

    if isinstance(model, str):
        from tbmm.suite import models

        model = getattr(models, model)
    data = _parse_data(path, raw)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"field {'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}"
            for err in exc.errors()
        )
        raise TaskFormatError(f"{path}: {problems}") from exc


@dataclass
class Metric:
    """A scored metric with its anchor resolved from anchor.json (exact)."""

    spec: MetricSpec
    anchor_text: str
    anchor: Fraction
    weight: Fraction
    band: Fraction
    id: str = field(init=False)  # spec.id and spec.path, copied: read on every scoring
    path: str = field(init=False)

    def __post_init__(self) -> None:
        self.id = self.spec.id
        self.path = self.spec.path

    @cached_property
    def band_effective(self) -> tuple[Fraction, bool]:
        from tbmm.core.rules import effective_band

        return effective_band(self.anchor, self.band)


@dataclass
class Task:
    """One task folder. Verifier-only files (anchor, scoring, gate, panel) are read lazily."""

    dir: Path
    manifest: Manifest
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def slug(self) -> str:
        return self.manifest.slug

    @property
    def suite(self) -> str:
        return self.manifest.suite

    @property
    def data_dir(self) -> Path:
        return self.dir / "environment" / "data"

    @property
    def output_path(self) -> str:
        return self.manifest.output_path

    @cached_property
    def missing_spec(self) -> list[Any]:
        """Where the attachments absent from the source release can be fetched (data)."""
        path = self.dir / "missing_attachments.toml"
        return load_model(path, "MissingAttachments").missing if path.is_file() else []

    @property
    def missing_attachments(self) -> list[str]:
        """Declared attachments absent from the task folder (not shipped, not fetched yet)."""
        return [
            a.path.removeprefix("environment/data/attachments/")
            for a in self.manifest.attachments
            if not a.present and not (self.dir / a.path).is_file()
        ]

    @property
    def incomplete(self) -> bool:
        """The task cannot be solved as posed: an official attachment is missing."""
        return bool(self.missing_attachments)

    @cached_property
    def harbor(self) -> dict[str, Any]:
        return _read_data(self.dir / "task.toml")

    @property
    def agent_timeout_sec(self) -> float:
        return float(self.harbor["agent"]["timeout_sec"])

    @property
    def cpus(self) -> int:
        return int(self.harbor["environment"]["cpus"])

    @property
    def memory_mb(self) -> int:
        return int(self.harbor["environment"]["memory_mb"])

    @property
    def storage_mb(self) -> int:
        return int(self.harbor["environment"]["storage_mb"])

    @cached_property
    def instruction(self) -> str:
        return (self.dir / "instruction.md").read_text(encoding="utf-8")

    @cached_property
    def artifact_map(self) -> ArtifactMap:
        return load_model(self.dir / "artifact_map.toml", "ArtifactMap")

    @cached_property
    def scoring(self) -> ScoringSpec:
        return load_model(self.dir / "scoring.toml", "ScoringSpec")

    @cached_property
    def gate(self) -> GateSpec:
        return load_model(self.dir / "gate.toml", "GateSpec")

    @cached_property
    def caps(self) -> Any:
        """The input caps of this task's artifacts (`tbmm.core.bounds.Caps`): each declared list at
        its statement's `max_items`; other lists that a field, metric or gate check reaches
        into at the generic cap; lists nothing refers to are only parsed (looser cap)."""
        from tbmm.core.bounds import DEFAULT_CAPS, Caps, list_paths

        amap = self.artifact_map
        per_path = {ls.path: ls.max_items for ls in amap.lists}
        paths = [f.path for f in amap.field] + [m.path for m in self.scoring.metric]
        paths += [p for c in self.gate.check for p in c.paths()]
        referenced = list_paths(p for p in paths if not p.startswith("replayed."))
        referenced |= frozenset(per_path)

        def bound(path: str) -> int:
            """Entries a declared list can hold over the whole artifact (nested lists multiply)."""
            parent = path.rsplit("[*]", 1)[0] if "[*]" in path else ""
            return per_path[path] * (bound(parent) if parent in per_path else 1)

        total = DEFAULT_CAPS.max_list_total + sum(bound(p) for p in per_path)
        return Caps(per_path=per_path, referenced=referenced, max_list_total=total)

    @cached_property
    def replay_spec(self) -> ReplaySpec | None:
        """The task's replay (`replay.toml`), or None when its answers are not replayed."""
        path = self.dir / "replay.toml"
        return load_model(path, "ReplaySpec") if path.is_file() else None

    @cached_property
    def panel(self) -> Panel:
        return load_model(self.dir / "panel.json", "Panel")

    @cached_property
    def baseline(self) -> Baseline:
        return load_model(self.dir / "baseline.json", "Baseline")

    @cached_property
    def schema(self) -> dict[str, Any]:
        return _read_data(self.dir / "artifact_schema.json")

    @cached_property
    def anchor_doc(self) -> Any:
        path = self.dir / "anchor.json"
        if not path.is_file():
            raise TaskFormatError(f"{path}: file is missing")
        try:
            doc = exact.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise TaskFormatError(f"{path}: cannot parse: {exc}") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("artifact"), dict):
            raise TaskFormatError(f"{path}: field artifact: must be an object")
        return doc

    @property
    def anchor_artifact(self) -> dict[str, Any]:
        """The anchor's artifact as an exact tree (numbers are `exact.Num`)."""
        return self.anchor_doc["artifact"]

    # The files a verdict depends on besides the artifact: a stored verdict whose digest
    # differs was reached against other references, gates or replay settings.
    VERDICT_FILES = (
        "anchor.json",
        "artifact_map.toml",
        "baseline.json",
        "floor.json",
        "gate.toml",
        "panel.json",
        "reference.json",
        "replay.toml",
        "scoring.toml",
    )

    @cached_property
    def verdict_digest(self) -> str:
        """sha256 (first 16 hex digits) over the task files a verdict depends on."""
        import hashlib

        h = hashlib.sha256()
        for name in self.VERDICT_FILES:
            f = self.dir / name
            if f.is_file():
                h.update(name.encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()[:16]

    def anchor_artifact_bytes(self) -> bytes:
        return (exact.dumps(self.anchor_artifact) + "\n").encode("utf-8")

    @cached_property
    def panel_anchors(self) -> list[tuple[str, list[tuple[Metric, Fraction, str]]]]:
        """Per panel paper with scored values: (paper id, [(metric, its value as anchor, text)])."""
        by_id = {m.id: m for m in self.metrics if not m.spec.exclude}
        out = []
        for paper in self.panel.papers:
            if paper.exclusion_reason is not None:
                continue  # values kept for the record, not scored
            fields = [
                (by_id[k], exact.parse_decimal(v), v) for k, v in paper.values.items() if k in by_id
            ]
            if fields:
                out.append((paper.paper_id, fields))
        return out

    @cached_property
    def metrics(self) -> list[Metric]:
        out: list[Metric] = []
        for spec in self.scoring.metric:
            try:
                leaf = resolve(self.anchor_artifact, spec.path)
            except PathError as exc:
                raise TaskFormatError(
                    f"{self.dir / 'scoring.toml'}: metric {spec.id}: path {spec.path} not in anchor.json: {exc}"
                ) from exc
            if not isinstance(leaf, exact.Num):
                raise TaskFormatError(
                    f"{self.dir / 'scoring.toml'}: metric {spec.id}: anchor at {spec.path} is not a finite number"
                )
            out.append(Metric(spec, leaf.text, leaf.value, spec.weight_q, spec.band_q))
        return out


def load_task(task_dir: Path) -> Task:
    """Load a task folder (manifest eagerly, everything else on first use)."""
    task_dir = Path(task_dir)
    return Task(task_dir, load_model(task_dir / "manifest.json", "Manifest"))


def suites(root: Path = TASKS_ROOT) -> list[str]:
    """The suite folders under `root` (each holds task folders): derived, never listed."""
    if not root.is_dir():
        return []
    return sorted(
        d.name
        for d in root.iterdir()
        if d.is_dir() and not d.name.startswith(".") and any(d.glob("*/artifact_map.toml"))
    )


def task_dirs(root: Path = TASKS_ROOT) -> list[Path]:
    return sorted(
        p for s in suites(root) for p in (root / s).glob("*") if (p / "artifact_map.toml").is_file()
    )


def load_suite(root: Path = TASKS_ROOT) -> list[Task]:
    return [load_task(d) for d in task_dirs(root)]


def find_task(slug: str, root: Path = TASKS_ROOT) -> Task:
    """The task with this slug; raises KeyError with the known slugs otherwise."""
    for d in task_dirs(root):
        if d.name == slug:
            return load_task(d)
    known = ", ".join(d.name for d in task_dirs(root))
    raise KeyError(f"unknown task {slug!r}; known: {known}")
