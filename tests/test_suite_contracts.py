"""Contracts over the real tasks: oracle self-consistency, gate coverage, discrimination."""

from __future__ import annotations

import json

import pytest

from tbmm.core import exact
from tbmm.core.forms import Form
from tbmm.suite.tasks import Task
from tbmm.verdict.gate import run_gate
from tbmm.verdict.mutate import violations, with_leaf
from tbmm.verdict.scoring import read_artifact, score_task


@pytest.mark.slow
def test_every_anchor_scores_exactly_one(suite: list[Task]) -> None:
    for t in suite:
        s = score_task(t, t.anchor_artifact)
        assert s.raw == 1 and s.o_eval_anchor == 1, t.slug
        # under eq. 1 the anchor paper's own term is 1; the other panel papers' terms are
        # the anchor's closeness to them (tests/test_panels.py), so O-Eval is 1 exactly when
        # the anchor is the only paper with scored fields
        anchors = {p.paper_id for p in t.panel.papers if p.role == "anchor"}
        assert all(p.score == 1 for p in s.panel if p.paper_id in anchors), t.slug
        assert (s.o_eval == 1) == all(p.score == 1 for p in s.panel), t.slug
        assert all(m.reward == 1 for m in s.metrics if not m.excluded), t.slug


@pytest.mark.slow
def test_gate_coverage(suite: list[Task]) -> None:
    """Every task has a gate, every invariant form is used, and every replayed task ties
    its claims to the replay with at least one `agree` check (and only replayed tasks do)."""
    used: set[Form] = set()
    for t in suite:
        assert t.gate.check, f"{t.slug} ships without a gate"
        forms = {c.form for c in t.gate.check}
        used |= forms
        assert (Form.agree in forms) == (t.replay_spec is not None), t.slug
    assert used - {Form.agree} == set(Form) - {Form.agree}


@pytest.mark.slow
def test_oracle_passes_its_gate_or_is_recorded_infeasible(suite: list[Task]) -> None:
    infeasible = []
    for t in suite:
        rep = run_gate(t, t.anchor_artifact)
        if t.gate.anchor.feasible:
            assert rep.verdict == "pass", (t.slug, rep.to_json()["failed"])
        else:
            assert rep.verdict == "fail" and t.gate.anchor.evidence, t.slug
            # the evidence names every failing check
            for inst in rep.failed:
                assert inst.check.id in t.gate.anchor.evidence, (t.slug, inst.check.id)
            infeasible.append(t.slug)


@pytest.mark.slow
def test_a_real_field_violation_is_rejected_for_every_task(suite: list[Task]) -> None:
    for t in suite:
        found = next(violations(t, t.anchor_artifact), None)
        assert found, f"{t.slug}: no single-leaf violation found"
        inst, path, value = found
        rep = run_gate(t, with_leaf(t.anchor_artifact, path, value))
        assert rep.verdict == "fail", (t.slug, inst.name, path, value)
        assert inst.name in [i.name for i in rep.failed], (t.slug, inst.name)


@pytest.mark.slow
@pytest.mark.parametrize(
    "bad", ["NaN", "Infinity", "-Infinity", '"12"', "null", "1e999999999", "[]", "{}", "true"]
)
def test_bad_input_never_raises(suite: list[Task], bad: str) -> None:
    for t in suite:
        text = exact.dumps(t.anchor_artifact, indent=None)
        c = t.gate.check[0]
        path = c.paths()[0].replace("[*]", "[0]")
        doc = json.loads(text)
        node = doc
        keys = path.replace("]", "").replace("[", ".").split(".")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        if last.isdigit():
            node[int(last)] = "__BAD__"
        else:
            node[last] = "__BAD__"
        art = read_artifact(json.dumps(doc).replace('"__BAD__"', bad), t.caps)
        rep = run_gate(t, art)
        assert rep.verdict in ("fail", "warn"), (t.slug, bad)
        if rep.verdict == "fail":
            assert all(i.message for i in rep.failed)
        s = score_task(t, art, gate_failed=rep.verdict == "fail")
        assert 0 <= s.o_eval <= 1
