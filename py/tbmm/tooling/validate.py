"""`tbmm tasks validate`: every invariant a task folder must satisfy, each a named check.

A task is consistent when its files load, its checksums match, its figures exist, its
panel has 2-6 valid metrics whose paths resolve in the anchor and the schema, its schema
carries no anchor-specific strings, its gate passes on the anchor (or the anchor is
recorded infeasible and really fails), and its Harbor config has the required fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from tbmm.core import exact
from tbmm.core.paths import PathError, expand, resolve
from tbmm.replay import strip_replayed
from tbmm.suite.files import sha256_file
from tbmm.suite.models import REPLAYED
from tbmm.suite.split import heldout_leaks
from tbmm.suite.stack import PYTHON_IMAGE, lock_text
from tbmm.suite.tasks import TaskFormatError, load_task, task_dirs
from tbmm.tooling.build import schema_from_map

# No naive answer (tbmm.verdict.naive) may earn more than this share of the default reward.
NAIVE_REWARD_MAX = Fraction(1, 10)
BOOKKEEPING = re.compile(
    r"(^|[._\[])(rows|.*_rows|row_count|search_rows|sample_rows|grid_size|n_cells|simulations|particles|iterations|generations|sample_size)($|[._\]])"
)
HARBOR_REQUIRED: dict[str, tuple[str, ...]] = {
    "": ("schema_version",),
    "task": ("name", "description"),
    "metadata": ("author_name", "difficulty", "category", "tags"),
    "verifier": ("timeout_sec",),
    "agent": ("timeout_sec",),
    "environment": (
        "build_timeout_sec",
        "cpus",
        "memory_mb",
        "storage_mb",
        "allow_internet",
        "gpus",
    ),
}


@dataclass(frozen=True)
class Problem:
    task: str
    check: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"task": self.task, "check": self.check, "message": self.message}


def harbor_problems(cfg: dict[str, Any]) -> list[str]:
    """Fields a Harbor task.toml needs, plus tbmm's fixed limits."""
    out = []
    for table, keys in HARBOR_REQUIRED.items():
        section = cfg if not table else cfg.get(table)
        if not isinstance(section, dict):
            out.append(f"missing table [{table}]")
            continue
        out.extend(f"missing {table + '.' if table else ''}{k}" for k in keys if k not in section)
    env = cfg.get("environment", {})
    if env.get("allow_internet") is not False:
        out.append("environment.allow_internet must be false")
    if env.get("cpus") != 2 or env.get("memory_mb") != 8192 or env.get("gpus") != 0:
        out.append("environment must be 2 cpus, 8192 MB, 0 gpus")
    if cfg.get("agent", {}).get("timeout_sec") != 14400.0:
        out.append("agent.timeout_sec must be 14400 (4 h)")
    if cfg.get("verifier", {}).get("environment_mode") != "separate":
        out.append("verifier.environment_mode must be 'separate'")
    return out


# What must never appear in a task's files (outside the official attachments): an
# author-local path, or the source release's preprocessing (its internal source folder,
# its data-status note, its per-question table of suggested modelling methods).
LEAKS = re.compile(
    r"/Volumes/|/Users/|/home/[a-z]|\b[A-Z]:\\[A-Za-z]|来源目录|数据状态|适合模型|每问/小问拆解"
    r"|question_solution_index|data_manifest\."
)
SCANNED = (".md", ".json", ".toml", ".sh", "Dockerfile")


def leaks(task_dir: Path) -> list[str]:
    """`file: excerpt` for each forbidden path or hint found in the task's own files."""
    out = []
    for f in sorted(task_dir.rglob("*")):
        rel = f.relative_to(task_dir)
        if not f.is_file() or rel.parts[:3] == ("environment", "data", "attachments"):
            continue
        if not f.name.endswith(SCANNED):
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        m = LEAKS.search(text)
        if m:
            a = max(0, m.start() - 20)
            out.append(f"{rel}: ...{text[a : m.end() + 20]!r}...")
    return out


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.]*\d)")


def answer_leaks(anchor: Any, instruction: str) -> list[str]:
    """Numbers of the reference answer (decisions, claims and replayed values, with at least
    five significant digits so that statement data such as "56" or "0.1" do not count) that
    the instruction prints: a worked example or a hint must never be the reference itself."""
    found: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, exact.Num) and len(re.sub(r"\D", "", x.text).lstrip("0")) >= 5:
            found.add(x.text)

    walk(anchor)
    return sorted(found & set(_NUMBER.findall(instruction)))


def validate_task(task_dir: Path) -> list[Problem]:
    slug = task_dir.name
    problems: list[Problem] = []

    def bad(check: str, msg: str) -> None:
        problems.append(Problem(slug, check, msg))

    try:
        task = load_task(task_dir)
    except TaskFormatError as exc:
        return [Problem(slug, "manifest", str(exc))]
    m = task.manifest
    contest, year, letter = (slug.split("-") + ["", "", ""])[:3]
    if (
        m.slug != slug
        or task_dir.parent.name != m.suite
        or contest.upper() != m.suite
        or year != str(m.year)
        or letter.upper() != m.problem
    ):
        bad(
            "identity",
            f"folder {task_dir.parent.name}/{slug} does not match manifest "
            f"{m.suite}/{m.slug} ({m.year} {m.problem})",
        )
    try:
        declared = {x.path for x in task.missing_spec}
    except TaskFormatError as exc:
        bad("attachments", str(exc))
        declared = set()
    absent = {
        a.path.removeprefix("environment/data/attachments/") for a in m.attachments if not a.present
    }
    if declared != absent:
        bad(
            "attachments",
            f"missing_attachments.toml declares {sorted(declared)} but the manifest lists "
            f"{sorted(absent)} as absent: rerun `tbmm tasks build`",
        )

    for where in leaks(task_dir):
        bad("leak", f"an author-local path or a method-hint header: {where}")

    # Harbor config.
    try:
        for p in harbor_problems(task.harbor):
            bad("harbor", p)
    except TaskFormatError as exc:
        bad("harbor", str(exc))
    for rel in ("environment/Dockerfile", "tests/test.sh", "solution/solve.sh", "instruction.md"):
        if not (task_dir / rel).is_file():
            bad("files", f"{rel} is missing")
    dockerfile = task_dir / "environment" / "Dockerfile"
    if dockerfile.is_file():
        text = dockerfile.read_text(encoding="utf-8")
        for needed in ("requirements.lock", "--require-hashes", f"ARG TBMM_BASE={PYTHON_IMAGE}"):
            if needed not in text:
                bad(
                    "dockerfile",
                    f"environment/Dockerfile lacks {needed!r}: rerun `tbmm tasks build`",
                )
    env_lock = task_dir / "environment" / "requirements.lock"
    if not env_lock.is_file() or env_lock.read_text(encoding="utf-8") != lock_text():
        bad(
            "dockerfile",
            "environment/requirements.lock differs from the agent stack's lock "
            "(tbmm/agent-stack.lock): rerun `tbmm tasks build`",
        )

    # Attachments and figures.
    for a in m.attachments:
        f = task_dir / a.path
        if not a.path.startswith("environment/data/attachments/"):
            bad(
                "attachments",
                f"{a.path}: attachments must live under environment/data/attachments/",
            )
        if a.present:
            if not f.is_file():
                bad("attachments", f"{a.path}: declared present but missing")
            elif f.stat().st_size != a.bytes or sha256_file(f) != a.sha256:
                bad("attachments", f"{a.path}: size/sha256 mismatch")
        elif f.is_file() and a.sha256 is not None and sha256_file(f) != a.sha256:
            bad("attachments", f"{a.path}: fetched file does not match the declared sha256")
    for h in m.heldout:
        f = task_dir / h.path
        if h.path.startswith("environment/") or not h.path.startswith("tests/heldout/"):
            bad("heldout", f"{h.path}: held-out rows live under tests/heldout/, never environment/")
        if not f.is_file():
            bad("heldout", f"{h.path}: declared but missing: rerun `tbmm tasks build`")
        elif f.stat().st_size != h.bytes or sha256_file(f) != h.sha256:
            bad("heldout", f"{h.path}: size/sha256 mismatch")
        else:
            for problem in heldout_leaks(task_dir, h):
                bad("heldout", problem)
    instruction = (
        (task_dir / "instruction.md").read_text(encoding="utf-8")
        if (task_dir / "instruction.md").is_file()
        else ""
    )
    if m.output_path not in instruction:
        bad("instruction", f"output path {m.output_path} not in instruction.md")
    for fig in m.figures:
        f = task_dir / fig.path
        if not f.is_file():
            bad("figures", f"{fig.path} is missing")
        elif sha256_file(f) != fig.sha256:
            bad("figures", f"{fig.path}: sha256 mismatch")
        if fig.container_path not in instruction:
            bad("figures", f"{fig.id} not referenced inline in instruction.md")

    # Schema, anchor, metrics.
    try:
        amap = task.artifact_map
        schema = task.schema
        anchor = task.anchor_artifact
    except TaskFormatError as exc:
        bad("files", str(exc))
        return problems
    if schema != schema_from_map(amap):
        bad("schema", "artifact_schema.json is stale: rerun `tbmm tasks build`")
    for text in answer_leaks(anchor, (task_dir / "instruction.md").read_text(encoding="utf-8")):
        bad("leak", f"instruction.md gives away a value of the reference answer: {text}")
    schema_text = json.dumps(schema, ensure_ascii=False)
    prov = m.provenance
    for key in ("paper_id", "paper_title"):
        if key in schema_text:
            bad("schema", f"schema asks for anchor-specific field {key}")
    for value in (prov.paper_id, prov.paper_title):
        if value != "unspecified" and len(value) >= 4 and value in schema_text:
            bad("schema", f"schema contains the anchor paper's string {value!r}")
    field_paths = {f.path for f in amap.field}
    for f in amap.field:
        for path in expand(anchor, f.path) if "[*]" in f.path else [f.path]:
            try:
                leaf = resolve(anchor, path)
            except PathError as exc:
                bad("anchor", f"field {path} not in anchor.json: {exc}")
                continue
            if f.type == "tag":
                if leaf not in f.tags:
                    bad("anchor", f"field {path}: anchor value is not one of the field's tags")
            elif f.type != "list[number]" and not isinstance(leaf, exact.Num):
                bad("anchor", f"field {path}: anchor value is not a finite number")
        if BOOKKEEPING.search(f.path):
            bad("schema", f"field {f.path} looks like a bookkeeping count")
    for ls in amap.lists:
        for path in expand(anchor, ls.path) if "[*]" in ls.path else [ls.path]:
            try:
                node = resolve(anchor, path)
            except PathError:
                continue
            if not isinstance(node, list) or not ls.min_items <= len(node) <= ls.max_items:
                bad("anchor", f"list {path}: not a list of {ls.min_items}..{ls.max_items} entries")

    # Replay: the module exists and the anchor's replayed values are its replay, to the text.
    try:
        replay_spec = task.replay_spec
    except TaskFormatError as exc:
        bad("replay", str(exc))
        return problems
    replayed_paths: set[str] = set()
    if replay_spec is not None:
        from tbmm.replay import run_replay

        own, _ = strip_replayed(anchor)
        try:
            fresh, rep = run_replay(task, own)
        except ImportError as exc:
            bad("replay", f"replay module {replay_spec.module}: {exc}")
        else:
            assert rep is not None
            if rep.status != "ok":
                bad("replay", f"the reference cannot be replayed: {rep.error}")
            elif exact.dumps(fresh.get(REPLAYED)) != exact.dumps(anchor.get(REPLAYED)):
                bad("replay", "anchor.json's replayed values are stale: rerun `tbmm tasks build`")
            replayed_paths = {f"{REPLAYED}.{k}" for k in rep.values}
    elif REPLAYED in anchor:
        bad("replay", f"anchor.json carries `{REPLAYED}` but the task has no replay.toml")
    try:
        metrics = task.metrics
        spec = task.scoring
    except TaskFormatError as exc:
        bad("scoring", str(exc))
        return problems
    if not 2 <= len(spec.metric) <= 6:
        bad("scoring", f"{len(spec.metric)} metrics; a panel has 2-6")
    for mt in metrics:
        if mt.path not in field_paths and mt.path not in replayed_paths:
            bad(
                "scoring",
                f"metric {mt.id}: path {mt.path} is not a schema field or a replayed value",
            )
        if BOOKKEEPING.search(mt.path):
            bad(
                "scoring",
                f"metric {mt.id}: {mt.path} is a bookkeeping count and must not be scored",
            )
        if mt.spec.band_q == 0 and mt.anchor == 0 and mt.spec.direction.value != "exact_value":
            bad("scoring", f"metric {mt.id}: band 0 with anchor 0 cannot discriminate")

    # Gate.
    from tbmm.verdict.gate import run_gate

    try:
        gate = task.gate
    except TaskFormatError as exc:
        bad("gate", str(exc))
        return problems
    metric_ids = {mt.id for mt in metrics}
    for c in gate.check:
        for p in c.paths():
            if p.startswith(f"{REPLAYED}."):
                if replay_spec is None:
                    bad("gate", f"check {c.id}: path {p} needs a replay (no replay.toml)")
                continue
            base = p.replace("[*]", "[0]")
            if p not in field_paths and not any(
                base == fp or fp.startswith(p.split("[*]")[0]) for fp in field_paths
            ):
                bad("gate", f"check {c.id}: path {p} is not a schema field")
        for mid in c.protects or []:
            if mid not in metric_ids:
                bad("gate", f"check {c.id}: protects unknown metric {mid}")
        if c.form.value == "agree" and not (c.against or "").startswith(f"{REPLAYED}."):
            bad("gate", f"check {c.id}: an agree check compares a claim with a replayed value")
    report = run_gate(task, anchor)
    if report.unverifiable:
        bad(
            "gate",
            f"the anchor leaves checks unverifiable: {sorted(set(report.unverifiable.values()))}",
        )
    if gate.anchor.feasible and report.verdict == "fail":
        bad(
            "gate",
            "anchor fails its own gate: "
            + "; ".join(f"{i.name}: {i.message}" for i in report.failed),
        )
    if not gate.anchor.feasible and report.verdict != "fail":
        bad("gate", "anchor recorded infeasible but passes every check (evidence not reproduced)")
    if not gate.anchor.feasible:
        # the anchor is the witness that its values can be reached: an infeasible one
        # leaves every metric's reference without a feasible artifact reaching it
        bad(
            "reference",
            "the reference artifact is infeasible, so no feasible artifact is shown to reach "
            "the metrics' references: replace it with a feasible decision (see FORMAT.md)",
        )
    for mt in metrics:
        if mt.spec.reference is None and not mt.spec.exclude:
            bad(
                "reference",
                f"metric {mt.id}: no reference stated (scoring.toml: metric.reference with kind and source)",
            )

    # Exploits listed as not caught yet must be well-formed (the test suite checks the rest).
    from tbmm.verdict.exploits import known_exploits

    try:
        known_exploits(task)
    except TaskFormatError as exc:
        bad("exploits", str(exc))

    # Panel and baseline.
    try:
        panel = task.panel
        baseline = task.baseline
    except TaskFormatError as exc:
        bad("panel", str(exc))
        return problems
    ids = {mt.id: mt for mt in metrics}
    for paper in panel.papers:
        if paper.exclusion_reason is None:
            for k, v in paper.values.items():
                if k in ids and (why := unreachable(gate.check, ids[k].path, v)):
                    bad("reference", f"paper {paper.paper_id}: {k}={v} is unreachable: {why}")
        for k in paper.values:
            if k not in ids:
                bad("panel", f"paper {paper.paper_id}: unknown metric id {k}")
        for msg in paper_record_problems(task, paper, ids, field_paths):
            bad("panel", f"paper {paper.paper_id}: {msg}")
        if paper.role == "anchor" and paper.exclusion_reason is None:
            for k, v in paper.values.items():
                if k in ids and exact.parse_decimal(v) != ids[k].anchor:
                    bad(
                        "panel",
                        f"anchor paper value {k}={v} differs from anchor.json {ids[k].anchor_text}",
                    )
    if baseline.default_pipeline not in baseline.pipelines:
        bad("baseline", f"default pipeline {baseline.default_pipeline} not in pipelines")
    for name, vals in baseline.pipelines.items():
        for k in vals:
            if k not in ids:
                bad("baseline", f"pipeline {name}: unknown metric id {k}")
        recorded = set(vals) | set(baseline.unmapped.get(name, {}))
        for k in ids:
            if k not in recorded and name == baseline.default_pipeline:
                bad("baseline", f"pipeline {name}: metric {k} neither mapped nor recorded unmapped")

    # The stored floor (baseline F, naive answers): what build would write now.
    from tbmm.verdict.floor import stale

    try:
        why = stale(task)
    except TaskFormatError as exc:
        why = str(exc)
    from tbmm.verdict.naive import hint_problems

    try:
        hints = hint_problems(task)
    except TaskFormatError as exc:
        hints = [str(exc)]
    for msg in hints:
        bad("naive", msg)
    if why:
        bad("floor", why)
    else:
        for msg in naive_problems(task):
            bad("naive", msg)

    # Oracle script writes exactly the anchor (without the replay's outputs).
    solve = task_dir / "solution" / "solve.sh"
    if solve.is_file() and exact.dumps(strip_replayed(anchor)[0]) not in solve.read_text(
        encoding="utf-8"
    ):
        bad(
            "files",
            "solution/solve.sh does not write the anchor artifact: rerun `tbmm tasks build`",
        )
    return problems


def paper_record_problems(
    task: Any, paper: Any, metrics: dict[str, Any], field_paths: set[str]
) -> list[str]:
    """What is wrong with a PDF-read panel paper's records (`fields`, `excluded_fields`):

    * every recorded field is a schema field, in its unit; a metric's field in the metric's
      domain; each value what its printed numbers and transformation give;
    * every scored value of a paper other than the anchor stands on a record at the
      metric's path, with the same value;
    * a paper that is not the anchor accounts for every metric (valued or excluded);
    * the task's gate on the paper's recorded fields (checks whose inputs it all reports):
      a failure requires `infeasible_value`, and `infeasible_value` on a paper whose
      records pass every evaluable check is not reproduced."""
    from tbmm.core import rules
    from tbmm.core.paths import set_path
    from tbmm.tooling.panel_extract import value_problems
    from tbmm.verdict.gate import run_gate

    if paper.designation is None and not paper.fields and not paper.excluded_fields:
        return []
    out: list[str] = []
    units = {f.path: f.unit for f in task.artifact_map.field}
    by_path = {r.path: r for r in paper.fields}
    for r in paper.fields:
        if r.path not in field_paths:
            out.append(f"field {r.path} is not a schema field")
        elif r.unit != units[r.path]:
            out.append(f"field {r.path}: unit {r.unit!r}, the schema's is {units[r.path]!r}")
    out += value_problems(paper)
    for mid, v in paper.values.items():
        mt = metrics.get(mid)
        if mt is None:
            continue
        rec = by_path.get(mt.path)
        if rec is None:
            # an anchor's values are the source release's (checked against anchor.json)
            if paper.role != "anchor":
                out.append(f"{mid}={v} has no record at {mt.path} (page, locator, printed)")
            continue
        if exact.parse_decimal(rec.value) != exact.parse_decimal(v):
            out.append(f"{mid}={v} differs from its record {rec.value}")
        if not rules.in_domain(exact.parse_decimal(v), mt.spec.domain):
            out.append(f"{mid}={v} is outside the metric's domain ({mt.spec.domain.value})")
    for mid in paper.excluded_fields:
        if mid not in metrics:
            out.append(f"excluded_fields names unknown metric {mid}")
    if paper.role != "anchor" and paper.designation is not None:
        for mid, mt in metrics.items():
            if mt.spec.exclude or mid in paper.values or mid in paper.excluded_fields:
                continue
            out.append(f"metric {mid} is neither valued nor excluded (excluded_fields)")
    if paper.fields:
        doc: dict[str, Any] = {}
        for r in paper.fields:
            set_path(doc, r.path, exact.Num(exact.parse_decimal(r.value), r.value, False))
        failed = run_gate(task, doc).failed
        infeasible = paper.exclusion_reason == "infeasible_value"
        if failed and not infeasible:
            why = "; ".join(f"{i.name}: {i.message}" for i in failed)
            out.append(f"its recorded values fail the gate ({why}): mark it infeasible_value")
        if infeasible and not failed:
            out.append(
                "recorded infeasible_value but its recorded values pass every evaluable check"
            )
    return out


def naive_problems(task: Any) -> list[str]:
    """The naive floor's rules (floor.json fresh): no naive answer earns more than 1/10 of
    the default reward, and the floor leaves the reference more than 1/10 above it (else a
    perfect answer earns at most that much: the metric cannot tell a model from a guess)
    unless naive.toml says why it cannot be reworked yet."""
    from tbmm.core import rules
    from tbmm.verdict import floor
    from tbmm.verdict.naive import Generator
    from tbmm.verdict.scoring import oracle_raw

    out: list[str] = []
    o, f_t = oracle_raw(task), floor.floor_f(task)
    for n in floor.naive(task):
        raw = Fraction(n["raw"])
        r = rules.skill(raw, o, f_t) if n["status"] == "scored" else rules.ZERO
        if r > NAIVE_REWARD_MAX:
            out.append(
                f"naive answer {n['name']} earns {exact.fraction_to_text(r)} of the default "
                f"reward (> {exact.fraction_to_text(NAIVE_REWARD_MAX)})"
            )
    if o - f_t <= rules.GAP_MIN and not Generator(task).hints.headroom:
        best = floor.stored(task).get("best_naive", {})
        out.append(
            f"no headroom: the naive floor F_t = {float(f_t):.4f} (baseline F "
            f"{float(floor.baseline_f(task)):.4f}, best naive answer {best.get('name')} "
            f"{float(Fraction(best.get('raw', '0'))):.4f}) is within 0.1 of the reference, so "
            "a perfect answer earns at most that of the default reward: rework the metric "
            "(ground truth, a replayed quantity, a tighter band) or say why in naive.toml "
            "`headroom`"
        )
    return out


def unreachable(checks: list[Any], path: str, value: str) -> str:
    """Why no feasible artifact can report `value` at `path` ("" when none says so): a
    single-field check on exactly that path (interval, threshold, count) that the value
    itself fails. A panel paper's value no feasible artifact can reach would cap every
    answer's reward below 1 on that paper for no fault of the answer."""
    from tbmm.core import forms

    q = exact.parse_decimal(value)
    dec = lambda t: None if t is None else exact.parse_decimal(t)  # noqa: E731
    for c in checks:
        if c.field != path or "[*]" in path:
            continue
        form = c.form.value
        if form == "interval" and not forms.interval(q, dec(c.lo), dec(c.hi)):
            return f"gate check {c.id} bounds it to [{c.lo}, {c.hi}]"
        if form == "threshold" and not forms.threshold(q, c.op, dec(c.bound)):
            return f"gate check {c.id} requires {c.op} {c.bound}"
        if form == "count" and not forms.count(q, dec(c.hi)):
            return f"gate check {c.id} requires a count" + (f" <= {c.hi}" if c.hi else "")
    return ""


def validate_all(root: Path | None = None) -> tuple[int, list[Problem]]:
    dirs = task_dirs(root) if root else task_dirs()
    problems: list[Problem] = []
    for d in dirs:
        problems.extend(validate_task(d))
    if not dirs:
        problems.append(Problem("<suite>", "count", "no task folders found"))
    return len(dirs), problems
