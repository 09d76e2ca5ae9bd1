"""Multi-reference panels read from outstanding papers' PDFs (issue 26).

What is tested without the PDFs: every recorded value is what its printed numbers and
transformation give; validate refuses a panel paper whose record is edited, mis-united,
out of domain, unaccounted for, or whose gate verdict disagrees with its exclusion; eq. 1
on the real multi-paper panels (renormalised weights over each paper's own fields, papers
without scored fields skipped) and that it differs from the single-reference O-Eval.
With the PDFs (TBMM_PANEL_PDFS = a checkout or bare git dir of hlife0/MCM-Killer), the
extractor re-reads every printed number on its page and each designation on COMAP's list.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from decimal import Decimal
from fractions import Fraction as F
from pathlib import Path

import pytest

from tbmm.core import rules
from tbmm.core.exact import parse_decimal
from tbmm.suite.models import FieldRecord, PanelPaper
from tbmm.suite.tasks import Task
from tbmm.tooling.panel_extract import (
    FETCH_HINT,
    Source,
    check_task,
    compute,
    level_factor,
    occurrences,
    value_problems,
)
from tbmm.tooling.validate import validate_task
from tbmm.verdict.scoring import score_task


def _read(suite: list[Task]) -> list[Task]:
    """Tasks whose panel holds papers read from their PDFs."""
    return [t for t in suite if any(p.designation for p in t.panel.papers)]


def _multi(suite: list[Task]) -> list[Task]:
    """Tasks where more than one paper has scored fields."""
    return [t for t in suite if len(t.panel_anchors) > 1]


def _copy(task: Task, tmp_path: Path) -> Path:
    dst = tmp_path / task.suite / task.slug
    shutil.copytree(task.dir, dst)
    return dst


def _edit(d: Path, fn) -> str:  # noqa: ANN001
    f = d / "panel.json"
    panel = json.loads(f.read_text())
    fn(panel)
    f.write_text(json.dumps(panel))
    return "\n".join(f"[{p.check}] {p.message}" for p in validate_task(d))


def _paper(panel: dict, pred) -> dict:  # noqa: ANN001
    return next(p for p in panel["papers"] if pred(p))


def _rec(**kw: object) -> FieldRecord:
    base: dict = {"path": "a.b", "value": "0", "unit": "", "page": 1, "locator": "Table 1"}
    return FieldRecord.model_validate({**base, **kw})


def _pr(text: str, page: int = 1) -> dict:
    return {"text": text, "page": page}


# --- the rules that turn printed numbers into values ------------------------------------


def test_transformations_recompute_exactly() -> None:
    assert compute(_rec(value="13904", printed={"value": _pr("13,904")})) == "13904"
    assert compute(_rec(value="24", printed={"value": _pr("24%")})) == "24"
    word = {"value": _pr("eight")}
    assert (
        compute(_rec(value="8", printed=word, transformation="word_number", justification="x" * 20))
        == "8"
    )
    share = {"count": _pr("13"), "total": _pr("36", 8)}
    r = _rec(
        value="0.3611",
        printed=share,
        transformation="share_of_count",
        digits=4,
        justification="x" * 20,
    )
    assert compute(r) == "0.3611"
    rel = {"new": _pr("0.61"), "old": _pr("0.54")}
    r = _rec(
        value="12.96",
        printed=rel,
        transformation="relative_change_pct",
        digits=2,
        justification="x" * 20,
    )
    assert compute(r) == "12.96"  # (0.61 - 0.54) / 0.54 = 12.962...%


def test_interval_level_rescales_each_side_about_the_center() -> None:
    """A 95 % side is shrunk by z_0.90/z_0.975 = 0.65387; an 80 % target from 80 % is the identity."""
    assert abs(float(level_factor(F(95, 100), F(8, 10))) - 1.2815516 / 1.9599640) < 1e-6
    assert level_factor(F(8, 10), F(8, 10)) == 1
    inputs = {"bound": _pr("11173.04"), "center": _pr("14689.9"), "level": _pr("95%")}
    r = _rec(
        value="0",
        printed=inputs,
        transformation="interval_level",
        digits=2,
        level="0.8",
        justification="x" * 20,
    )
    lo = parse_decimal(compute(r))
    assert lo == parse_decimal("12390.35")
    # the rescaled bound stays on its side of the center and inside the printed interval
    assert parse_decimal("11173.04") < lo < parse_decimal("14689.9")
    up = dict(inputs, bound=_pr("17069.15"))
    r = _rec(
        value="0",
        printed=up,
        transformation="interval_level",
        digits=2,
        level="0.8",
        justification="x" * 20,
    )
    assert parse_decimal("14689.9") < parse_decimal(compute(r)) < parse_decimal("17069.15")


def test_record_model_refuses_inconsistent_records() -> None:
    with pytest.raises(ValueError, match="takes printed"):
        _rec(printed={"count": _pr("1")})  # as_printed needs `value`
    with pytest.raises(ValueError, match="holds none of its printed numbers"):
        _rec(printed={"value": _pr("12", 3)})
    with pytest.raises(ValueError, match="justification"):
        _rec(printed={"value": _pr("eight")}, transformation="word_number")
    with pytest.raises(ValueError, match="digits"):
        _rec(
            printed={"count": _pr("1"), "total": _pr("2")},
            transformation="share_of_count",
            justification="x" * 20,
        )
    bound = {"bound": _pr("1"), "center": _pr("2"), "level": _pr("95%")}
    with pytest.raises(ValueError, match="level"):
        _rec(printed=bound, transformation="interval_level", digits=2, justification="x" * 20)
    with pytest.raises(ValueError, match="field exclusion reason"):
        PanelPaper.model_validate(
            {
                "paper_id": "1",
                "title": "t",
                "source": "s",
                "values": {"m": "1"},
                "excluded_fields": {
                    "n": {"reason": "infeasible_value", "note": "a whole-paper reason"}
                },
            }
        )
    with pytest.raises(ValueError, match="both valued and excluded"):
        PanelPaper.model_validate(
            {
                "paper_id": "1",
                "title": "t",
                "source": "s",
                "values": {"m": "1"},
                "excluded_fields": {"m": {"reason": "figure_only", "note": "drawn in a figure"}},
            }
        )


def test_token_search_respects_number_boundaries() -> None:
    page = "0.993\n[0,0,9,18,26]\n19,504.74 x\n(0, 0, 9%, 29%)\n2.298"
    assert [n for n, _ in occurrences(page, "0")] == [2, 4]  # never inside 0.993
    assert [n for n, _ in occurrences(page, "18")] == [2]  # a list's comma joins
    assert occurrences(page, "19") == [] and occurrences(page, "504.74") == []  # thousands
    assert [n for n, _ in occurrences(page, "19,504.74")] == [3]
    assert occurrences(page, "2.29") == [] and occurrences(page, "98") == []


# --- the committed panels ---------------------------------------------------------------


def test_read_panels_exist_and_values_recompute(suite: list[Task]) -> None:
    read = _read(suite)
    assert read, "no task holds a panel paper read from its PDF"
    for t in read:
        for p in t.panel.papers:
            assert value_problems(p) == [], (t.slug, p.paper_id)
            if p.designation is not None and p.role != "anchor":
                metrics = {m.id for m in t.metrics if not m.spec.exclude}
                assert metrics <= set(p.values) | set(p.excluded_fields), (t.slug, p.paper_id)


def test_validate_refuses_edited_records(suite: list[Task], tmp_path: Path) -> None:
    """Each edit an author could make by mistake (or to flatter an answer) is refused."""
    t = next(
        t
        for t in _multi(suite)
        if any(r.transformation == "interval_level" for p in t.panel.papers for r in p.fields)
    )
    d = _copy(t, tmp_path)
    original = (d / "panel.json").read_text()

    def scored(p: dict) -> bool:
        return (
            p.get("role") != "anchor"
            and p.get("fields")
            and p["values"]
            and not p.get("exclusion_reason")
        )

    def reset() -> None:
        (d / "panel.json").write_text(original)

    # a value that its printed numbers do not give (the scored value and its record together)
    def bump(panel: dict) -> None:
        p = _paper(panel, scored)
        k = next(iter(p["values"]))
        p["values"][k] = str(Decimal(p["values"][k]) + 1)

    assert "differs from its record" in _edit(d, bump)
    reset()

    def bump_both(panel: dict) -> None:
        p = _paper(panel, scored)
        rec = next(r for r in p["fields"] if r["transformation"] == "as_printed")
        rec["value"] = str(Decimal(rec["value"]) + 1)

    assert "its printed numbers give" in _edit(d, bump_both)
    reset()

    def unit(panel: dict) -> None:
        p = _paper(panel, scored)
        p["fields"][0]["unit"] = "thousand " + p["fields"][0]["unit"]

    assert "the schema's is" in _edit(d, unit)
    reset()

    def unaccounted(panel: dict) -> None:
        p = _paper(panel, lambda p: p.get("excluded_fields") and p.get("designation"))
        p["excluded_fields"].pop(next(iter(p["excluded_fields"])))

    assert "neither valued nor excluded" in _edit(d, unaccounted)
    reset()

    paths = {m.id: m.path for m in t.metrics}

    def no_record(panel: dict) -> None:
        p = _paper(panel, scored)
        k = next(iter(p["values"]))
        p["fields"] = [r for r in p["fields"] if r["path"] != paths[k]]

    assert "has no record" in _edit(d, no_record)
    reset()


def test_gate_on_recorded_fields_decides_infeasible_value(
    suite: list[Task], tmp_path: Path
) -> None:
    """A paper whose recorded fields fail the task's gate must be excluded as infeasible;
    a paper marked infeasible must really fail it."""
    t = next(
        t
        for t in _read(suite)
        if any(p.exclusion_reason == "infeasible_value" and p.fields for p in t.panel.papers)
    )
    d = _copy(t, tmp_path)

    def clear(panel: dict) -> None:
        p = _paper(
            panel, lambda p: p.get("exclusion_reason") == "infeasible_value" and p.get("fields")
        )
        p.pop("exclusion_reason")

    assert "fail the gate" in _edit(d, clear)
    (d / "panel.json").write_text((t.dir / "panel.json").read_text())

    def mark(panel: dict) -> None:
        p = _paper(
            panel,
            lambda p: (
                p.get("fields")
                and p["values"]
                and not p.get("exclusion_reason")
                and p.get("role") != "anchor"
            ),
        )
        p["exclusion_reason"] = "infeasible_value"

    assert "pass every evaluable check" in _edit(d, mark)


def test_out_of_domain_and_unreachable_values_are_refused(
    suite: list[Task], tmp_path: Path
) -> None:
    t = next(t for t in _multi(suite) if any(m.spec.domain.value == "percent" for m in t.metrics))
    m = next(m for m in t.metrics if m.spec.domain.value == "percent" and not m.spec.exclude)
    d = _copy(t, tmp_path)

    def over(panel: dict) -> None:
        p = _paper(
            panel,
            lambda p: (
                p.get("role") != "anchor" and m.id in p["values"] and not p.get("exclusion_reason")
            ),
        )
        p["values"][m.id] = "120"
        rec = next(r for r in p["fields"] if r["path"] == m.path)
        rec["value"] = "120"
        rec["printed"] = {"value": {"text": "120", "page": rec["page"]}}
        rec["transformation"] = "as_printed"

    msg = _edit(d, over)
    assert "outside the metric's domain" in msg and "unreachable" in msg


# --- eq. 1 on the real panels -----------------------------------------------------------


def _by_hand(t: Task, doc: dict) -> F:
    """Eq. 1 from its definition: for each paper with scored fields S_p, the weighted mean of
    its metrics' rewards against its own values (weights renormalised over S_p); the mean
    over those papers."""
    from tbmm.verdict.scoring import lookup

    per_paper = []
    for paper in t.panel.papers:
        if paper.exclusion_reason is not None:
            continue
        fields = [
            (m, parse_decimal(paper.values[m.id]))
            for m in t.metrics
            if m.id in paper.values and not m.spec.exclude
        ]
        if not fields:
            continue
        num = den = F(0)
        for m, o in fields:
            band, _ = rules.effective_band(o, m.band)
            q = lookup(doc, m.path).q
            r = F(0) if q is None else rules.reward_in_band(m.spec.direction, q, o, band)
            num += m.weight * r
            den += m.weight
        per_paper.append(num / den)
    return sum(per_paper, F(0)) / len(per_paper)


def test_eq1_on_real_multi_paper_panels(suite: list[Task]) -> None:
    multi = _multi(suite)
    assert multi, "no task has a multi-paper panel"
    for t in multi:
        r = score_task(t, t.anchor_artifact)
        assert r.o_eval_anchor == 1, t.slug  # the anchor reproduction under the single reference
        assert r.o_eval == _by_hand(t, t.anchor_artifact), t.slug
        # the multi-reference score differs from the single-reference one, and both are reported
        assert r.o_eval < r.o_eval_anchor, t.slug
        js = r.to_json()
        assert js["o_eval_exact"] != js["o_eval_anchor_exact"]
        # papers without a scored field are not averaged in (neither those excluded whole
        # nor those whose every metric is excluded)
        scored_ids = {p for p, _ in t.panel_anchors}
        assert {p.paper_id for p in r.panel} == scored_ids
        assert len(scored_ids) < len(t.panel.papers) or all(p.values for p in t.panel.papers)


def test_eq1_renormalises_over_each_papers_own_fields(suite: list[Task]) -> None:
    """A paper reporting a subset of the metrics is scored on that subset only: an answer at
    that paper's values scores 1 on it, whatever the other metrics hold."""
    from tbmm.core.exact import Num
    from tbmm.core.paths import set_path

    t = next(
        t
        for t in _multi(suite)
        if any(
            0 < len(f) < len([m for m in t.metrics if not m.spec.exclude])
            for _, f in t.panel_anchors
        )
    )
    pid, fields = next(
        (p, f)
        for p, f in t.panel_anchors
        if 0 < len(f) < len([m for m in t.metrics if not m.spec.exclude])
    )
    doc = copy.deepcopy(t.anchor_artifact)
    for m, q, text in fields:
        set_path(doc, m.path, Num(q, text, False))
    r = score_task(t, doc)
    got = {p.paper_id: p for p in r.panel}
    assert got[pid].score == 1 and got[pid].fields == [m.id for m, _, _ in fields]
    assert r.o_eval == _by_hand(t, doc)


# --- the PDFs themselves (normally absent) ----------------------------------------------


def _source() -> Source:
    root = os.environ.get("TBMM_PANEL_PDFS", "")
    if not root or not Path(root).exists():
        pytest.skip(
            f"the papers' PDFs are not redistributed and TBMM_PANEL_PDFS is unset: {FETCH_HINT}"
        )
    pytest.importorskip("pymupdf", reason="PyMuPDF (the `figures` extra) is not installed")
    return Source(Path(root))


def test_panel_equals_what_the_extractor_reads(suite: list[Task]) -> None:
    src = _source()
    machine = 0
    for t in _read(suite):
        for c in check_task(t, src):
            assert c.problems == [], c.problems
            machine += len(c.values)
    assert machine > 0


def test_extractor_catches_a_wrong_page_or_number(suite: list[Task]) -> None:
    """The extractor is not a rubber stamp: a printed number moved to another page, or a
    different printed number, is reported."""
    from tbmm.tooling.panel_extract import check_paper

    src = _source()
    t, paper, rec = next(
        (t, p, r)
        for t in _read(suite)
        for p in t.panel.papers
        if p.role != "anchor"
        for r in p.fields
        if r.transformation == "as_printed" and len(r.printed["value"].text) >= 3
    )
    assert check_paper(paper, t, src).problems == []
    moved = rec.model_copy(
        update={
            "printed": {"value": rec.printed["value"].model_copy(update={"page": rec.page + 1})}
        }
    )
    other = rec.model_copy(
        update={
            "printed": {
                "value": rec.printed["value"].model_copy(
                    update={"text": rec.printed["value"].text + "7"}
                )
            }
        }
    )
    for bad in (moved, other):
        fields = [bad if r is rec else r for r in paper.fields]
        probs = check_paper(paper.model_copy(update={"fields": fields}), t, src).problems
        assert any("not on page" in p for p in probs), probs
    wrong_id = paper.model_copy(update={"paper_id": "2300000"})
    assert any("designation" in p for p in check_paper(wrong_id, t, src).problems)


def test_tasks_show_lists_every_panel_paper(suite: list[Task]) -> None:
    """`tbmm tasks show` names each paper with its designation, its scored values with page
    and locator, its per-metric exclusions, and the reason an unscored paper is not scored."""
    from typer.testing import CliRunner

    from tbmm.cli.root import app

    t = next(
        t
        for t in _multi(suite)
        if any(p.excluded_fields for p in t.panel.papers)
        and any(p.exclusion_reason for p in t.panel.papers)
    )
    r = CliRunner().invoke(app, ["tasks", "show", t.slug])
    assert r.exit_code == 0, r.stdout
    out = " ".join(r.stdout.split())
    for p in t.panel.papers:
        assert p.paper_id in out
        for rec in p.fields:
            if rec.path in {m.path for m in t.metrics}:
                assert f"p{rec.page}, {rec.locator}" in out, (p.paper_id, rec.path)
        for k, x in p.excluded_fields.items():
            assert f"{k}: {x.reason}" in out
        if p.exclusion_reason:
            assert f"not scored: {p.exclusion_reason}" in out
    assert f"{len(t.panel_anchors)} scored in eq. 1" in out
