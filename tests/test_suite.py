"""The task suite: validation, Harbor config, and one broken copy per validate invariant.

Counts live in the data: these tests assert invariants over whatever tasks exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tbmm.suite.tasks import TASKS_ROOT, Task
from tbmm.tooling.validate import harbor_problems, validate_all, validate_task

from .conftest import SOURCE


@pytest.mark.slow
def test_suite_validates(suite: list[Task]) -> None:
    n, problems = validate_all(TASKS_ROOT)
    assert n == len(suite)
    assert not problems, "\n".join(f"{p.task} [{p.check}] {p.message}" for p in problems)


def test_suite_shape(suite: list[Task]) -> None:
    """One task per (suite, year, problem); slug, folder and manifest agree; 2-6 metrics."""
    keys = [(t.suite, t.manifest.year, t.manifest.problem) for t in suite]
    assert len(set(keys)) == len(keys)
    for t in suite:
        contest, year, letter = t.slug.split("-")[:3]
        assert (contest.upper(), int(year), letter.upper()) == keys[suite.index(t)], t.slug
        assert t.dir.parent.name == t.suite
        assert 2 <= len(t.scoring.metric) <= 6, t.slug


def test_every_task_toml_has_harbor_fields(suite: list[Task]) -> None:
    for t in suite:
        assert harbor_problems(t.harbor) == [], t.slug
        assert (t.dir / "tests" / "test.sh").stat().st_mode & 0o111
        assert (t.dir / "environment" / "Dockerfile").read_text().startswith("# Generated")


def test_schema_never_asks_for_anchor_strings(suite: list[Task]) -> None:
    for t in suite:
        text = json.dumps(t.schema, ensure_ascii=False)
        assert "paper_id" not in text and "paper_title" not in text
        assert t.manifest.provenance.paper_title not in text


def test_missing_upstream_attachments_are_declared(suite: list[Task]) -> None:
    """Every attachment the manifest lists absent is declared, with a download location, in
    the task's missing_attachments.toml, and nothing else is."""
    for t in suite:
        absent = {
            a.path.removeprefix("environment/data/attachments/")
            for a in t.manifest.attachments
            if not a.present
        }
        assert absent == {m.path for m in t.missing_spec}, t.slug
        assert all(m.url.startswith("https://") for m in t.missing_spec)
    for t in suite:
        for a in t.manifest.attachments:
            if not a.present:
                assert a.upstream and "fetch-assets" in a.note


# ---- broken copies: validate must reject each one --------------------------------------


def _copy(task: Task, tmp_path: Path) -> Path:
    dst = tmp_path / task.suite / task.slug
    shutil.copytree(task.dir, dst)
    return dst


def _checks(d: Path) -> set[str]:
    return {p.check for p in validate_task(d)}


def _messages(d: Path) -> str:
    return "\n".join(p.message for p in validate_task(d))


@pytest.fixture
def figured(suite: list[Task]) -> Task:
    return next(t for t in suite if t.manifest.figures)


@pytest.mark.slow
def test_broken_metric_path(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    s = (d / "scoring.toml").read_text()
    first = figured.scoring.metric[0].path
    (d / "scoring.toml").write_text(s.replace(f'path = "{first}"', 'path = "no_such.field"', 1))
    assert "scoring" in _checks(d)
    assert "no_such.field" in _messages(d)


def test_broken_checksum(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    att = next(a for a in figured.manifest.attachments if a.present)
    (d / att.path).write_bytes((d / att.path).read_bytes() + b"tampered")
    assert "attachments" in _checks(d)


@pytest.mark.slow
def test_broken_figure(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    (d / figured.manifest.figures[0].path).unlink()
    assert "figures" in _checks(d)


@pytest.mark.slow
def test_figure_not_inline(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    fig = figured.manifest.figures[0]
    (d / "instruction.md").write_text(
        (d / "instruction.md").read_text().replace(fig.container_path, "/elsewhere.png")
    )
    assert "figures" in _checks(d)


@pytest.mark.slow
def test_broken_metric_count(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    s = (d / "scoring.toml").read_text()
    (d / "scoring.toml").write_text(s + s.replace('id = "', 'id = "dup_') * 2)
    assert "scoring" in _checks(d)
    assert "at most 6" in _messages(d) or "6 items" in _messages(d)


@pytest.mark.slow
def test_broken_direction(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    s = (d / "scoring.toml").read_text()
    direction = figured.scoring.metric[0].direction.value
    (d / "scoring.toml").write_text(
        s.replace(f'direction = "{direction}"', 'direction = "closeness_to_outstanding"', 1)
    )
    msg = _messages(d)
    assert "direction" in msg and "scoring.toml" in msg


@pytest.mark.slow
def test_broken_schema_asks_for_paper_id(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    schema = json.loads((d / "artifact_schema.json").read_text())
    schema["paper_id"] = "string"
    (d / "artifact_schema.json").write_text(json.dumps(schema))
    assert "schema" in _checks(d)
    assert "paper_id" in _messages(d)


@pytest.mark.slow
def test_broken_bookkeeping_metric(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    amap = (d / "artifact_map.toml").read_text()
    first = figured.scoring.metric[0].path
    new = first.rsplit(".", 1)[0] + ".search_rows" if "." in first else "search_rows"
    (d / "artifact_map.toml").write_text(amap.replace(f'path = "{first}"', f'path = "{new}"', 1))
    (d / "scoring.toml").write_text(
        (d / "scoring.toml").read_text().replace(f'path = "{first}"', f'path = "{new}"', 1)
    )
    assert "bookkeeping" in _messages(d)


@pytest.mark.slow
def test_broken_gate_on_anchor(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    field = figured.artifact_map.field[0].path
    value = figured.metrics[0].anchor if figured.metrics[0].path == field else None
    extra = f'\n[[check]]\nid = "impossible"\nform = "threshold"\nfield = "{field}"\nop = "<"\nbound = "-1e300"\njustification = "a deliberately impossible bound"\n'
    del value
    (d / "gate.toml").write_text((d / "gate.toml").read_text() + extra)
    assert "gate" in _checks(d)
    assert "impossible" in _messages(d)


@pytest.mark.slow
def test_broken_toml_names_file(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    (d / "gate.toml").write_text("[[check]\nbroken")
    msg = _messages(d)
    assert "gate.toml" in msg and "cannot parse" in msg


@pytest.mark.slow
def test_broken_harbor_config(figured: Task, tmp_path: Path) -> None:
    d = _copy(figured, tmp_path)
    (d / "task.toml").write_text(
        (d / "task.toml").read_text().replace("allow_internet = false", "allow_internet = true")
    )
    assert "harbor" in _checks(d)


@pytest.mark.slow
def test_broken_anchor_paper_value(suite: list[Task], tmp_path: Path) -> None:
    def scored_anchor(p: dict) -> bool:  # an excluded paper's values are only on record
        return p.get("role") == "anchor" and bool(p["values"]) and not p.get("exclusion_reason")

    task = next(t for t in suite if any(scored_anchor(p) for p in t.panel.model_dump()["papers"]))
    d = _copy(task, tmp_path)
    panel = json.loads((d / "panel.json").read_text())
    paper = next(p for p in panel["papers"] if scored_anchor(p))
    k = next(iter(paper["values"]))
    paper["values"][k] = "123456789"
    (d / "panel.json").write_text(json.dumps(panel))
    assert "panel" in _checks(d)


@pytest.mark.slow
def test_build_is_reproducible(suite: list[Task], tmp_path: Path) -> None:
    """Rebuilding from the source release reproduces the committed generated files exactly."""
    if not SOURCE.is_dir():
        pytest.skip(f"source release not found at {SOURCE}")
    from tbmm.tooling.build import CURATED, build_all

    out = tmp_path / "tasks"
    for t in suite:
        dst = out / t.suite / t.slug
        dst.mkdir(parents=True)
        for name in CURATED:
            if (t.dir / name).is_file():
                shutil.copy(t.dir / name, dst / name)
        if (
            t.dir / "reference"
        ).is_dir():  # curated: a computed reference's generator, a replay's data
            shutil.copytree(t.dir / "reference", dst / "reference")
    build_all(SOURCE, out)
    for t in suite:
        for f in sorted(p for p in t.dir.rglob("*") if p.is_file()):
            rel = f.relative_to(t.dir)
            if (
                rel.parts[-1].startswith(".")
                or "attachments" in rel.parts
                and not (out / t.suite / t.slug / rel).exists()
            ):
                continue
            assert (out / t.suite / t.slug / rel).read_bytes() == f.read_bytes(), (
                f"{t.slug}/{rel} differs after rebuild"
            )


@pytest.mark.slow
@pytest.mark.parametrize(
    "leak",
    [
        "/Volumes/PSSD/code/paper.pdf",
        "/Users/alice/x.md",
        "C:\\Users\\bob\\paper.pdf",
        "- 来源目录：`docs/mcm-2015-2025/2024/x`",
        "| Q1 | 小问 | 适合模型 | 说明 |",
    ],
)
def test_broken_leaks_a_local_path_or_hint(figured: Task, tmp_path: Path, leak: str) -> None:
    d = _copy(figured, tmp_path)
    (d / "instruction.md").write_text((d / "instruction.md").read_text() + "\n" + leak + "\n")
    assert "leak" in _checks(d)
    assert "instruction.md" in _messages(d)


def test_mcm_statements_are_the_official_english_text(suite: list[Task]) -> None:
    """No machine translation, no preprocessing header: the statement part of an MCM
    instruction holds no CJK text and starts with the official English original."""
    import re

    for t in suite:
        if t.suite != "MCM":
            continue
        statement = t.instruction.split("# Required Benchmark Artifact")[0]
        assert not re.search(r"[\u4e00-\u9fff]", statement), t.slug
        assert "## Official problem statement (COMAP, English original)" in statement, t.slug


@pytest.mark.slow
def test_unstated_reference_is_rejected(suite: list[Task], tmp_path: Path) -> None:
    t = next(t for t in suite if t.scoring.metric[0].reference is not None)
    d = _copy(t, tmp_path)
    s = (d / "scoring.toml").read_text()
    start = s.index("[metric.reference]")
    end = s.find("[[metric]]", start)  # past its [[metric.reference.history]] entries too
    (d / "scoring.toml").write_text(s[:start] + (s[end:] if end > 0 else ""))
    assert "reference" in _checks(d)
    assert "no reference stated" in _messages(d)


@pytest.mark.slow
def test_infeasible_reference_artifact_is_rejected(suite: list[Task], tmp_path: Path) -> None:
    """An anchor recorded infeasible shows no feasible artifact reaching its references."""
    t = next(t for t in suite if t.gate.anchor.feasible)
    d = _copy(t, tmp_path)
    g = (d / "gate.toml").read_text()
    assert "feasible = true" in g
    g = g.replace("feasible = true", "feasible = false", 1).replace(
        'evidence = ""', 'evidence = "planted by a test"', 1
    )
    (d / "gate.toml").write_text(g)
    assert "reference" in _checks(d)
    assert "no feasible artifact" in _messages(d)


@pytest.mark.slow
def test_unreachable_panel_value_is_rejected(suite: list[Task], tmp_path: Path) -> None:
    """A panel paper's value that a single-field gate check on the metric's own path
    refuses (an interval, threshold or count bound) can be reached by no feasible answer."""
    for t in suite:
        by_path = {m.path: m for m in t.metrics}
        bounded = [
            c
            for c in t.gate.check
            if c.field in by_path
            and c.form.value in ("interval", "threshold")
            and "[*]" not in c.field
        ]
        c = next((c for c in bounded if c.hi is not None or c.form.value == "threshold"), None)
        if c is not None:
            break
    else:
        pytest.skip("no task bounds a scored metric by a single-field check")
    m = by_path[c.field]
    from tbmm.core import exact

    limit = exact.parse_decimal(c.hi if c.form.value == "interval" else c.bound)
    step = 1 if c.form.value == "interval" or c.op in ("<=", "<") else -1
    bad_value = exact.fraction_to_text(limit + step)
    d = _copy(t, tmp_path)
    panel = json.loads((d / "panel.json").read_text())
    panel["papers"].append(
        {
            "paper_id": "unreachable",
            "title": "t",
            "source": "planted by a test",
            "values": {m.id: bad_value},
        }
    )
    (d / "panel.json").write_text(json.dumps(panel))
    assert "reference" in _checks(d)
    assert f"{m.id}={bad_value} is unreachable" in _messages(d)


@pytest.mark.slow
def test_instruction_giving_away_the_reference_is_rejected(
    suite: list[Task], tmp_path: Path
) -> None:
    """A worked example that is the reference's own decision prints its numbers: caught."""
    from tbmm.core import exact

    def numbers(x: object) -> list[str]:
        if isinstance(x, dict):
            return [n for k, v in x.items() if k != "replayed" for n in numbers(v)]
        if isinstance(x, list):
            return [n for v in x for n in numbers(v)]
        return [x.text] if isinstance(x, exact.Num) else []

    t, value = next(
        (t, n)
        for t in suite
        for n in numbers(t.anchor_artifact)
        if len(n.replace(".", "").replace("-", "").lstrip("0")) >= 5
    )
    d = _copy(t, tmp_path)
    text = (d / "instruction.md").read_text()
    (d / "instruction.md").write_text(text + f"\nExample: this decision earns {value}.\n")
    assert "leak" in _checks(d)
    assert f"gives away a value of the reference answer: {value}" in _messages(d)
