"""Naive answers (issue 22, item 2): generated from each task's data alone, evaluated
through the full pipeline, stored once in floor.json, shown by `tbmm tasks show/exploits`."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction as F
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tbmm.cli.root import app
from tbmm.core import exact
from tbmm.core.paths import resolve
from tbmm.suite.tasks import TASKS_ROOT, Task, load_task
from tbmm.verdict import floor
from tbmm.verdict.naive import Generator, evaluate_all

WORDLE = "mcm-2023-c-wordle"


@pytest.mark.slow
def test_every_task_has_stored_naive_answers_scored_by_the_pipeline(suite: list[Task]) -> None:
    for t in suite:
        ns = floor.naive(t)
        names = [n["name"] for n in ns]
        assert names[:2] == ["nothing", "midpoint"], t.slug
        assert len(set(names)) == len(names)
        best = max(F(n["raw"]) for n in ns)
        assert F(floor.stored(t)["best_naive"]["raw"]) == best
        assert floor.floor_f(t) == max(best, floor.baseline_f(t))
        for n in ns:  # a naive answer that is not scored stands on raw 0
            assert n["status"] == "scored" or F(n["raw"]) == 0, (t.slug, n["name"])
            assert 0 <= F(n["o_eval"]) <= 1


def _copy(slug: str, tmp: Path) -> Path:
    src = next(TASKS_ROOT.glob(f"*/{slug}"))
    dst = tmp / src.parent.name / slug
    shutil.copytree(src, dst)
    return dst


def test_answers_never_read_the_reference(tmp_path: Path) -> None:
    """An attacker's check: change every reference value (anchor, panel, baseline) and the
    generated answers must not move: they come from statement, schema, gate and data."""
    for slug in (WORDLE, "cumcm-2024-b-production-decision", "mcm-2023-b-maasai-mara"):
        d = _copy(slug, tmp_path)
        before = [exact.dumps(a.doc) for a in Generator(load_task(d)).answers()]
        text = (d / "anchor.json").read_text(encoding="utf-8")
        doc = json.loads(text)

        def bump(x: object) -> object:
            if isinstance(x, dict):
                return {k: bump(v) for k, v in x.items()}
            if isinstance(x, list):
                return [bump(v) for v in x]
            if isinstance(x, bool) or not isinstance(x, int | float):
                return x
            return x * 3 + 7

        doc["artifact"] = bump(doc["artifact"])
        (d / "anchor.json").write_text(json.dumps(doc), encoding="utf-8")
        (d / "reference.json").unlink(missing_ok=True)
        after = [exact.dumps(a.doc) for a in Generator(load_task(d)).answers()]
        assert after == before, slug


@pytest.mark.slow
def test_generated_answers_respect_the_structure_they_can_read(suite: list[Task]) -> None:
    """Sums at their totals, tags among their ids, declared lists at least their minimum."""
    for t in suite:
        for a in Generator(t).answers():
            if not a.doc:
                continue
            for c in t.gate.check:
                if c.form.value == "sum_to" and c.fields and "[*]" not in "".join(c.fields):
                    got = sum(resolve(a.doc, p).value for p in c.fields)
                    assert abs(got - exact.parse_decimal(c.total)) <= F(1, 10**6), (
                        t.slug,
                        a.name,
                        c.id,
                    )
            for ls in t.artifact_map.lists:
                if "[*]" in ls.path:
                    continue
                assert len(resolve(a.doc, ls.path)) >= max(ls.min_items, 1)


def test_wordle_persistence_is_the_issues_naive_answer() -> None:
    """The answer the issue names (last reported count ±50 %, column means as the
    distribution) is generated, and the pipeline gives it what the issue measured."""
    t = next(load_task(d) for d in TASKS_ROOT.glob(f"*/{WORDLE}"))
    by = {r.name: r for r in evaluate_all(t)}
    p = by["data-persistence"]
    doc = p.doc
    point = resolve(doc, "q1.reported_results_point_forecast").value
    assert resolve(doc, "q1.reported_results_pi80_lower").value == point / 2
    assert resolve(doc, "q1.reported_results_pi80_upper").value == point * 3 / 2
    assert point == 20380  # the most recent day of the attachment (2022-12-31)
    assert p.status == "scored" and p.gate == "pass"


def test_stale_naive_floor_fails_validate(tmp_path: Path) -> None:
    from tbmm.tooling.validate import validate_task

    d = _copy(WORDLE, tmp_path)
    assert [p for p in validate_task(d) if p.check == "floor"] == []
    (d / "naive.toml").unlink()  # the hint changes the generated set: floor.json is stale
    assert [p for p in validate_task(d) if p.check == "floor"]


def test_show_and_exploits_list_the_naive_answers() -> None:
    r = CliRunner().invoke(app, ["tasks", "show", WORDLE])
    assert r.exit_code == 0, r.output
    assert "naive answers" in r.output and "data-persistence" in r.output
    assert "naive floor" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["tasks", "exploits", "--only", WORDLE, "--json"])
    doc = json.loads(r.output)
    assert [n["name"] for n in doc[WORDLE]["naive"]][:2] == ["nothing", "midpoint"]
    assert "artifact" not in doc[WORDLE]["naive"][0]


def test_report_drill_down_lists_the_naive_answers() -> None:
    from tbmm.reports.report import _naive_html

    t = next(load_task(d) for d in TASKS_ROOT.glob(f"*/{WORDLE}"))
    html = _naive_html(t)
    assert "Naive answers (floor F_t = " in html
    assert all(n["name"] in html for n in floor.naive(t))


@pytest.mark.slow
def test_default_reward_of_every_naive_answer_is_at_most_a_tenth(suite: list[Task]) -> None:
    """Over the generated set: each naive answer, verified as an agent's answer would be,
    earns at most 0.1 of the default reward (skill over the task's floor) through the API,
    the verl/TRL adapters and the leaderboard's formula, while the anchor keeps O-Eval 1."""
    import tbmm
    from tbmm.core import rules
    from tbmm.rewards import compute_score, trl_reward

    for t in suite:
        f_t = floor.floor_f(t)
        texts = [exact.dumps(n["artifact"]) for n in floor.naive(t)]
        for n, text in zip(floor.naive(t), texts, strict=True):
            v = tbmm.verify(t, text.encode())
            assert F(v.skill_exact) <= F(1, 10), (t.slug, n["name"], v.skill_exact)
            assert F(v.skill_exact) == (
                rules.skill(F(v.score.raw_exact), F(1), f_t) if v.status == "scored" else 0
            )
            assert v.o_eval_exact == n["o_eval"], (t.slug, n["name"])  # O-Eval as the paper
        assert max(trl_reward(None, texts, task=[t.slug] * len(texts))) <= 0.1
        assert max(compute_score("tbmm", x, t.slug) for x in texts) <= 0.1
        anchor = tbmm.verify(t, t.anchor_artifact_bytes())
        # the single reference (eq. 1 over a multi-paper panel may put the anchor below 1)
        assert anchor.score is not None and anchor.score.raw_exact == "1", t.slug
        assert F(anchor.skill_exact) == rules.skill(F(1), F(1), f_t)


def test_skill_rule_edges() -> None:
    from tbmm.core.rules import skill

    assert skill(F(1, 2), F(1), F(1, 2)) == 0  # at the floor: nothing earned
    assert skill(F(3, 4), F(1), F(1, 2)) == F(1, 2)  # half the way from floor to reference
    assert skill(F(1), F(1), F(1, 2)) == 1 and skill(F(2), F(1), F(1, 2)) == 1  # clipped
    assert skill(F(0), F(1), F(1, 2)) == 0  # below the floor: 0, never negative
    assert skill(F(1), F(1), F(19, 20)) == F(1, 20)  # no headroom: the raw gain only


def test_validate_fails_a_floor_that_lets_a_naive_answer_earn(tmp_path: Path) -> None:
    """The attack: a floor.json whose F_t forgets the best naive answer would let it earn
    0.9 of the default reward; validate names it (and the stale file)."""
    from tbmm.tooling.validate import naive_problems, validate_task

    d = _copy(WORDLE, tmp_path)
    t = load_task(d)
    doc = floor.stored(t)
    t._cache["floor"] = {**doc, "floor": "0"}
    msgs = naive_problems(t)
    assert any("naive answer data-persistence earns" in m for m in msgs), msgs
    forged = json.loads((d / "floor.json").read_text())
    forged["floor"] = "0"
    (d / "floor.json").write_text(json.dumps(forged))
    assert any(p.check == "floor" and "stale" in p.message for p in validate_task(d))


def test_validate_fails_no_headroom_unless_said_why(tmp_path: Path) -> None:
    from tbmm.tooling.validate import validate_task

    d = _copy(WORDLE, tmp_path)
    assert [p for p in validate_task(d) if p.check == "naive"] == []  # acknowledged
    text = (d / "naive.toml").read_text(encoding="utf-8")
    start = text.index("headroom = ")
    end = text.index('"""', text.index('"""', start) + 3) + 3
    (d / "naive.toml").write_text(text[:start] + text[end:], encoding="utf-8")
    msgs = [p.message for p in validate_task(d) if p.check == "naive"]
    assert msgs and "no headroom" in msgs[0] and "data-persistence" in msgs[0]
    # a hint whose quote is not in the statement is refused
    bad = (
        text
        + '\n[[statement]]\nfield = "q1.reported_results_point_forecast"\nvalue = "123"\nquote = "no such sentence 123"\n'
    )
    (d / "naive.toml").write_text(bad, encoding="utf-8")
    msgs = [p.message for p in validate_task(d) if p.check in ("naive", "floor")]
    assert any("not in the statement" in m for m in msgs), msgs
