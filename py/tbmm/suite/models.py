"""Pydantic data models of a task (strict: a malformed file fails loudly, naming the field).

Numbers that reach verdicts are stored as exact decimal *strings* and converted with
`tbmm.core.exact.parse_decimal`; nothing here holds a float that a score depends on.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import Strict as StrictMode

from tbmm.core.exact import ExactError, parse_decimal
from tbmm.core.forms import OPS, Form
from tbmm.core.rules import Direction, Domain
from tbmm.core.specs import REPLAYED, GateCheckMethods, MetricSpecMethods

# <contest>-<year>-<problem letter>-<name>: the contest (suite) folder, year and letter are
# read from the slug; no list of contests, years or letters is kept in code.
SLUG_RE = r"^[a-z][a-z0-9]*-\d{4}-[a-z]-[a-z0-9-]+$"
PATH_RE = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\[(\d+|\*)\])*(\.[A-Za-z_][A-Za-z0-9_]*(\[(\d+|\*)\])*)*$"
)
EXCLUSION_REASONS = (
    "number_only_in_figure",
    "figure_only",
    "figure_only_logistic_prior",
    "no_numeric_estimate",
    "different_unit_of_analysis",
    # the paper's value is kept for the record but not scored: it fails the task's gate or
    # its replay, or it is a claim whose decisions cannot be replayed
    "infeasible_value",
    "not_replayable",
    # an interval whose probability level the paper does not state (a ±error band, or no
    # level given): it cannot be brought to the metric's level (FieldRecord.transformation)
    "interval_level_unstated",
)
# why one metric of a paper has no value (infeasibility is judged on the whole paper)
FIELD_EXCLUSION_REASONS = tuple(
    r for r in EXCLUSION_REASONS if r not in ("infeasible_value", "not_replayable")
)
# What a reference value is: printed in the paper, a re-run of the paper's method, exact
# ground truth computed here, the paper's decision replayed, or corrected with evidence.
ReferenceKind = Literal["paper", "reproduction", "computed", "replayed", "corrected"]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, defer_build=True)


def _decimal(v: str) -> str:
    try:
        parse_decimal(v)
    except ExactError as exc:
        raise ValueError(str(exc)) from exc
    return v


DecimalStr = Annotated[str, Field(min_length=1)]
# Enums and tuples arrive from TOML/JSON as str/list: validate them leniently, all else strictly.
DirectionT = Annotated[Direction, StrictMode(False)]
DomainT = Annotated[Domain, StrictMode(False)]
FormT = Annotated[Form, StrictMode(False)]
BBox = Annotated[tuple[float, float, float, float], StrictMode(False)]


def _path(v: str) -> str:
    if not PATH_RE.match(v):
        raise ValueError(f"not an artifact path (dotted keys with [i] or [*] indexes): {v!r}")
    return v


class Attachment(Strict):
    """An official attachment: where it lives in the task, its size and checksum, where it came from."""

    path: str  # relative to the task folder, under environment/data/attachments/
    bytes: int | None = Field(default=None, ge=0)
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    upstream: str
    present: bool
    note: str = ""

    @model_validator(mode="after")
    def _present_needs_checksum(self) -> Attachment:
        if self.present and (self.bytes is None or self.sha256 is None):
            raise ValueError("a present attachment needs bytes and sha256")
        return self


class Figure(Strict):
    """A figure cropped from the official PDF (artwork + caption)."""

    id: str = Field(pattern=r"^fig-\d+$")
    path: str
    container_path: str
    page: int = Field(ge=1)
    bbox: BBox
    caption: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    width: int = Field(gt=0)
    height: int = Field(gt=0)


class Provenance(Strict):
    """Where the anchor came from, so it can be re-derived. The paper is cited by its
    public id and title (the contest's Outstanding-award paper); no file path of anyone's
    corpus is kept."""

    paper_id: str
    paper_title: str
    reproduction_level: str
    reproduction_scope: str
    anchor_source: str  # path of the source expected_result.json, relative to the source root
    anchor_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class HeldOut(Strict):
    """Labelled rows held out of an attachment by split.toml (tbmm.suite.split): where they live
    (outside environment/, never in the agent's container), their checksum, and the split."""

    path: str  # relative to the task folder, under tests/heldout/
    bytes: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    attachment: str  # the agent's copy they were removed from (relative to the task folder)
    sheet: str
    rows: int = Field(ge=1)
    subjects: int = Field(ge=1)
    seed: int


class Manifest(Strict):
    """Generated facts about a task: identity, attachments, figures, provenance, and the
    held-out rows of a split attachment (split.toml)."""

    slug: str = Field(pattern=SLUG_RE)
    suite: str = Field(pattern=r"^[A-Z][A-Z0-9]*$")
    year: int = Field(ge=1900, le=2999)
    problem: str = Field(pattern=r"^[A-Z]$")
    title: str
    output_path: str
    attachments: list[Attachment]
    figures: list[Figure]
    provenance: Provenance
    heldout: list[HeldOut] = []


FieldType = Literal["number", "integer", "list[number]", "tag"]


class ArtifactField(Strict):
    """One artifact field. A path with `[*]` describes every entry of a declared list
    (a decision table row, a UAV's drops); `tag` is an opaque string from `tags` (an id such
    as a plot name), never free text."""

    path: str
    type: FieldType
    unit: str
    source: str = ""  # path in the source expected_result.json; "" when reference.json gives it
    description: str
    tags: list[str] = []

    _check_path = field_validator("path")(classmethod(lambda cls, v: _path(v)))

    @model_validator(mode="after")
    def _tags(self) -> ArtifactField:
        if (self.type == "tag") != bool(self.tags):
            raise ValueError("a tag field needs `tags` (its allowed values); other types take none")
        return self


class ListSpec(Strict):
    """A variable-length list of the artifact: `[*]` fields under `path` describe its
    entries. `max_items` is the statement's own maximum (it also bounds verification)."""

    path: str
    min_items: int = Field(default=0, ge=0)
    max_items: int = Field(ge=1)
    description: str = Field(min_length=5)

    _check_path = field_validator("path")(classmethod(lambda cls, v: _path(v)))

    @model_validator(mode="after")
    def _order(self) -> ListSpec:
        if self.min_items > self.max_items:
            raise ValueError("min_items > max_items")
        return self


class ArtifactMap(Strict):
    final_question: str
    field: list[ArtifactField] = Field(min_length=1)
    lists: list[ListSpec] = Field(default=[], alias="list")

    @model_validator(mode="after")
    def _unique(self) -> ArtifactMap:
        seen = [f.path for f in self.field]
        dup = {p for p in seen if seen.count(p) > 1}
        if dup:
            raise ValueError(f"duplicate field paths: {sorted(dup)}")
        lists = {ls.path for ls in self.lists}
        for f in self.field:
            parts = f.path.split("[*]")
            for i in range(len(parts) - 1):
                prefix = "[*]".join(parts[: i + 1])
                if prefix not in lists:
                    raise ValueError(f"field {f.path}: list {prefix} is not declared in [[list]]")
            if f.path.startswith(REPLAYED + ".") or f.path == REPLAYED:
                raise ValueError(f"field {f.path}: `{REPLAYED}` is reserved for replay outputs")
        return self


class ReferenceHistory(Strict):
    """A value that was this metric's reference before, and why it was replaced."""

    value: DecimalStr
    kind: ReferenceKind
    source: str = Field(min_length=5)
    evidence: str = Field(min_length=10)

    _check_dec = field_validator("value")(classmethod(lambda cls, v: _decimal(v)))


class MetricReference(Strict):
    """Where the metric's anchor value (in anchor.json) comes from, and what it is."""

    kind: ReferenceKind
    source: str = Field(min_length=5)  # table/section of the paper, script, replay module
    note: str = ""
    history: list[ReferenceHistory] = []


class MetricSpec(Strict, MetricSpecMethods):
    """One scored metric as written in scoring.toml (anchor comes from anchor.json)."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    path: str
    direction: DirectionT
    weight: DecimalStr
    band: DecimalStr
    unit: str
    domain: DomainT = Domain.any
    rationale: str = Field(min_length=10)
    exclude: str = ""
    reference: MetricReference | None = None

    _check_path = field_validator("path")(classmethod(lambda cls, v: _path(v)))
    _check_dec = field_validator("weight", "band")(classmethod(lambda cls, v: _decimal(v)))

    @model_validator(mode="after")
    def _positive(self) -> MetricSpec:
        if parse_decimal(self.weight) <= 0:
            raise ValueError("weight must be > 0")
        if parse_decimal(self.band) < 0:
            raise ValueError("band must be >= 0")
        return self


class ScoringSpec(Strict):
    metric: list[MetricSpec] = Field(min_length=2, max_length=6)

    @model_validator(mode="after")
    def _unique(self) -> ScoringSpec:
        ids = [m.id for m in self.metric]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate metric ids: {ids}")
        if sum(1 for m in self.metric if not m.exclude) < 1:
            raise ValueError("every metric is excluded")
        return self


class GateCheck(Strict, GateCheckMethods):
    """One invariant instance template; `[*]` paths expand per list entry."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    form: FormT
    unit: str = ""
    justification: str = Field(min_length=10)
    field: str | None = None
    fields: list[str] | None = None
    lhs: list[str] | None = None
    rhs: list[str] | None = None
    factors: list[str] | None = None
    bound_factors: list[str] | None = None
    lo: DecimalStr | None = None
    hi: DecimalStr | None = None
    total: DecimalStr | None = None
    tol: DecimalStr | None = None
    op: str | None = None
    bound: DecimalStr | None = None
    coef: DecimalStr | None = None
    slack: DecimalStr | None = None
    against: str | None = None  # agree: the replayed value the claim `field` must match
    rel_tol: DecimalStr | None = None  # agree: tolerance relative to |replayed|
    # Metric ids whose score depends on this check: when the check cannot be evaluated
    # (a missing input), these metrics score 0 ("unverifiable"). None = every metric.
    protects: list[str] | None = None

    @model_validator(mode="after")
    def _shape(self) -> GateCheck:
        for name in ("lo", "hi", "total", "tol", "bound", "coef", "slack", "rel_tol"):
            v = getattr(self, name)
            if v is not None:
                _decimal(v)
        for p in self.paths():
            _path(p)
        f = self.form
        need: dict[Form, tuple[str, ...]] = {
            Form.interval: ("field",),
            Form.count: ("field",),
            Form.sum_to: ("fields", "total", "tol"),
            Form.order: ("lhs", "rhs"),
            Form.threshold: ("field", "op", "bound"),
            Form.product: ("factors", "op"),
            Form.agree: ("field", "against", "tol"),
        }
        missing = [n for n in need[f] if getattr(self, n) is None]
        if missing:
            raise ValueError(f"form {f.value} needs {missing}")
        # A path the form does not read would still take part in expansion and in the
        # missing/bad handling of every instance: refused, so every path of a check is one
        # its form reads (what the Lean verdict's `Check` can state).
        reads = {*need[f], "bound_factors"} if f is Form.product else set(need[f])
        stray = [
            n
            for n in ("field", "against", "fields", "lhs", "rhs", "factors", "bound_factors")
            if getattr(self, n) is not None and n not in reads
        ]
        if stray:
            raise ValueError(f"form {f.value} does not read {stray}")
        if f is Form.interval and self.lo is None and self.hi is None:
            raise ValueError("interval needs lo and/or hi")
        if f is Form.product and (self.bound is None) == (self.bound_factors is None):
            raise ValueError("product needs exactly one of bound / bound_factors")
        if self.op is not None:
            allowed = ("<=", "<") if f is Form.order else ("<=", ">=") if f is Form.product else OPS
            if self.op not in allowed:
                raise ValueError(f"op {self.op!r} not allowed for {f.value}; use one of {allowed}")
        return self


class ReplayPenalty(Strict):
    id: str
    description: str = Field(min_length=10)


class AnchorFeasibility(Strict):
    feasible: bool
    evidence: str = ""

    @model_validator(mode="after")
    def _evidence(self) -> AnchorFeasibility:
        if not self.feasible and not self.evidence.strip():
            raise ValueError("an infeasible anchor needs evidence")
        return self


class GateSpec(Strict):
    anchor: AnchorFeasibility
    check: list[GateCheck] = Field(min_length=1)
    replay: list[ReplayPenalty] = []

    @model_validator(mode="after")
    def _unique(self) -> GateSpec:
        ids = [c.id for c in self.check]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate check ids: {ids}")
        return self


class MissingAttachment(Strict):
    """An official attachment the source release lacks, and where to fetch it."""

    path: str = Field(min_length=1)  # relative to environment/data/attachments/
    upstream: str = Field(min_length=5)
    url: str = Field(pattern=r"^https://")
    member: str = ""  # the file inside a downloaded zip, "" when the URL is the file


class MissingAttachments(Strict):
    """`missing_attachments.toml`."""

    missing: list[MissingAttachment] = Field(min_length=1)


class ReplaySpec(Strict):
    """`replay.toml`: the task's replay (decisions -> objective and constraints).

    `module` names `tbmm.replay.<module>`; `params` are its settings (step sizes, tolerances),
    each justified in `rationale`; outputs are rounded to `digits` significant digits so
    that a replay is reproducible to the decimal text across machines."""

    module: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    exact: bool  # True: exact rational arithmetic; False: floating geometry within `digits`
    digits: int = Field(default=12, ge=4, le=30)
    budget_cpu_seconds: DecimalStr = "5"
    rationale: str = Field(min_length=10)
    params: dict[str, Any] = {}


class Designation(Strict):
    """Where COMAP's official results list gives the paper's designation: the list file,
    the page (1-based) and the line of that page's text (PyMuPDF `get_text()`, 1-based)
    holding the team control number; the designation and problem letter follow it."""

    award: Literal["Outstanding Winner"]
    results_list: str = Field(min_length=5)
    page: int = Field(ge=1)
    line: int = Field(ge=1)


# How a recorded value is obtained from the numbers printed in the paper (each a closed,
# reproducible rule that tbmm.tooling.panel_extract recomputes from `printed`):
#   as_printed          value = printed["value"]
#   word_number         value = the number word printed["value"] ("eight" -> 8)
#   share_of_count      value = printed["count"] / printed["total"], rounded to `digits`
#   relative_change_pct value = (printed["new"] - printed["old"]) / printed["old"] * 100
#   interval_level      the side of a printed interval at level printed["level"] (percent)
#                       rescaled about the point forecast printed["center"] to `level`
#                       (normal quantiles; see the task's scoring.toml header)
Transformation = Literal[
    "as_printed", "word_number", "share_of_count", "relative_change_pct", "interval_level"
]
TRANSFORM_INPUTS: dict[str, tuple[str, ...]] = {
    "as_printed": ("value",),
    "word_number": ("value",),
    "share_of_count": ("count", "total"),
    "relative_change_pct": ("new", "old"),
    "interval_level": ("bound", "center", "level"),
}


class Printed(Strict):
    """A number as printed in the paper's text layer, and the PDF page (1-based) it is on."""

    text: str = Field(min_length=1, max_length=40)
    page: int = Field(ge=1)


class FieldRecord(Strict):
    """One value a panel paper reports for an artifact field, traceable to a page."""

    path: str
    value: DecimalStr  # the value recorded (after `transformation`), exact decimal text
    unit: str  # must equal the artifact field's unit
    page: int = Field(ge=1)  # PDF page (1-based) of the main number
    locator: str = Field(min_length=3, max_length=120)  # table / section, short
    printed: dict[str, Printed]
    transformation: Transformation = "as_printed"
    digits: int | None = Field(default=None, ge=0, le=12)  # rounding of a computed value
    level: DecimalStr | None = None  # interval_level: the target level (e.g. "0.8")
    justification: str = ""  # why the transformation is valid (required unless as_printed)
    extraction: Literal["machine", "manual"] = "machine"

    _check_path = field_validator("path")(classmethod(lambda cls, v: _path(v)))

    @model_validator(mode="after")
    def _consistent(self) -> FieldRecord:
        _decimal(self.value)
        need = TRANSFORM_INPUTS[self.transformation]
        if set(self.printed) != set(need):
            raise ValueError(
                f"{self.path}: transformation {self.transformation} takes printed "
                f"{list(need)}, got {sorted(self.printed)}"
            )
        if self.page not in {x.page for x in self.printed.values()}:
            raise ValueError(f"{self.path}: page {self.page} holds none of its printed numbers")
        if self.transformation != "as_printed" and len(self.justification.strip()) < 20:
            raise ValueError(f"{self.path}: a transformation needs its justification")
        computed = self.transformation in (
            "share_of_count",
            "relative_change_pct",
            "interval_level",
        )
        if computed and self.digits is None:
            raise ValueError(f"{self.path}: a computed value states its rounding `digits`")
        if (self.transformation == "interval_level") != (self.level is not None):
            raise ValueError(f"{self.path}: `level` goes with (only) interval_level")
        if self.level is not None:
            lv = parse_decimal(self.level)
            if not 0 < lv < 1:
                raise ValueError(f"{self.path}: level must be in (0, 1)")
        return self


class FieldExclusion(Strict):
    """Why a panel paper gives no scored value for one metric."""

    reason: str
    page: int | None = Field(default=None, ge=1)
    note: str = Field(min_length=10)

    @model_validator(mode="after")
    def _reason(self) -> FieldExclusion:
        if self.reason not in FIELD_EXCLUSION_REASONS:
            raise ValueError(f"a field exclusion reason is one of {FIELD_EXCLUSION_REASONS}")
        return self


class PanelPaper(Strict):
    paper_id: str
    title: str
    source: str
    role: str = "panel"
    values: dict[str, str] = {}
    exclusion_reason: str | None = None
    # a paper read from its PDF: its designation on the official results list, the
    # numbers behind `values` (and the gate inputs it prints) with their pages, and why
    # each other metric has no value (validate requires every metric to be accounted for)
    designation: Designation | None = None
    fields: list[FieldRecord] = []
    excluded_fields: dict[str, FieldExclusion] = {}
    note: str = ""

    @model_validator(mode="after")
    def _values(self) -> PanelPaper:
        for k, v in self.values.items():
            try:
                parse_decimal(v)
            except ExactError as exc:
                raise ValueError(f"values[{k}]: {exc}") from exc
        if self.exclusion_reason is not None and self.exclusion_reason not in EXCLUSION_REASONS:
            raise ValueError(f"exclusion_reason must be one of {EXCLUSION_REASONS}")
        if not self.values and self.exclusion_reason is None:
            raise ValueError("a paper with no scored values needs an exclusion_reason")
        both = set(self.values) & set(self.excluded_fields)
        if both:
            raise ValueError(f"metrics both valued and excluded: {sorted(both)}")
        paths = [f.path for f in self.fields]
        if len(set(paths)) != len(paths):
            raise ValueError("a field is recorded twice")
        return self


class Panel(Strict):
    papers: list[PanelPaper]
    literature_split: bool = False
    literature_split_note: str = ""


class BaselineValue(Strict):
    value: DecimalStr
    source: str

    _check_dec = field_validator("value")(classmethod(lambda cls, v: _decimal(v)))


class Baseline(Strict):
    default_pipeline: str
    pipelines: dict[str, dict[str, BaselineValue]]
    unmapped: dict[str, dict[str, str]] = {}
