"""CUMCM 2025 C Problem 4: the judgement-rule replay (tbmm.replay.nipt_judgement).

Checks the data it reads against an independent reading of the attachment, the exactness of
its decisions at a rule's boundary, its figures against a floating re-count, its refusal of
input it cannot replay (scored 0 with the reason), and that the reference rule is what the
task's reference/fit_rule.py produces.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sys
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from tbmm.core import exact
from tbmm.replay import CpuBudget, ReplayInputError
from tbmm.replay import nipt_judgement as nj
from tbmm.suite.tasks import Task, find_task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact

from .conftest import SOURCE

SLUG = "cumcm-2025-c-nipt"


@pytest.fixture(scope="module")
def t() -> Task:
    return find_task(SLUG)


@pytest.fixture(scope="module")
def params(t: Task) -> nj.Params:
    assert t.replay_spec is not None
    return nj.Params.model_validate(t.replay_spec.params)


@pytest.fixture(scope="module")
def samples(t: Task, params: nj.Params) -> nj.Samples:
    return nj.load_samples(t.data_dir, params)


def _doc(t: Task, rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    doc = json.loads(t.anchor_artifact_bytes())
    doc.pop("replayed", None)
    if rules is not None:
        doc["q4"]["rules"] = rules
    return exact.loads(json.dumps(doc))


def _replay(t: Task, doc: dict[str, Any]) -> dict[str, Fraction]:
    assert t.replay_spec is not None
    out = nj.replay(doc, t, t.replay_spec, CpuBudget(60.0))
    return {k: Fraction(v) for k, v in out.values.items()}


def _raw_female_rows(path: Path) -> tuple[list[str], list[list[str | None]]]:
    """An independent reading: the second worksheet's cells by regex, shared strings by index."""
    with zipfile.ZipFile(path) as z:
        ns = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
        sst = [
            "".join(x.text or "" for x in si.iter(f"{ns}t"))
            for si in ET.fromstring(z.read("xl/sharedStrings.xml"))
        ]
        xml = z.read("xl/worksheets/sheet2.xml").decode()
    table: dict[int, dict[str, str]] = {}
    for col, row, attrs, val in re.findall(
        r'<c r="([A-Z]+)(\d+)"([^>]*?)(?:/>|>(?:<v>([^<]*)</v>)?</c>)', xml
    ):
        if val:
            table.setdefault(int(row), {})[col] = sst[int(val)] if 't="s"' in attrs else val
    cols = ["K", "AB", "Q"]
    body = [[table[r].get(c) for c in cols] for r in sorted(table) if r > 1]
    return cols, body


@pytest.mark.slow
def test_the_tags_are_the_replays_features(t: Task, params: nj.Params) -> None:
    tag_field = next(f for f in t.artifact_map.field if f.path.endswith(".feature"))
    assert tag_field.tags == params.tags()
    terms = next(ls for ls in t.artifact_map.lists if ls.path == "q4.rules[*].terms")
    rules = next(ls for ls in t.artifact_map.lists if ls.path == "q4.rules")
    assert (rules.max_items, terms.max_items) == (params.max_rules, params.max_terms)


@pytest.mark.slow
def test_samples_match_an_independent_reading(
    t: Task, params: nj.Params, samples: nj.Samples
) -> None:
    _, rows = _raw_female_rows(t.data_dir / "attachments" / params.attachment)
    complete = [r for r in rows if r[0] is not None]
    assert samples.n == len(complete) and samples.skipped == len(rows) - len(complete)
    assert list(samples.abnormal) == [r[1] is not None for r in complete]
    z13 = [Fraction(v, samples.denominators["z13"]) for v in samples.numerators["z13"]]
    assert z13 == [exact.parse_decimal(r[2]) for r in complete]
    absz = [Fraction(v, samples.denominators["abs_z13"]) for v in samples.numerators["abs_z13"]]
    assert absz == [abs(x) for x in z13]
    held = nj.load_heldout(t.dir, params)
    assert held is not None
    # the statement's data, as shipped: the agent's rows and the held-out rows together
    assert (samples.n + held.n, sum(samples.abnormal) + sum(held.abnormal)) == (604, 67)


def test_gestational_week_parsing() -> None:
    assert nj._week("12w") == 12 and nj._week("12w+3") == Fraction(87, 7)
    with pytest.raises(ValueError):
        nj._week("12+3")


def test_a_threshold_at_a_samples_exact_value_fires_on_it(t: Task, samples: nj.Samples) -> None:
    """`>=` at the exact rational value of one sample: it fires there, and a cut-off one
    part in 10^30 higher does not. A float evaluation could not tell the two apart."""
    i = max(range(samples.n), key=lambda k: samples.numerators["z21"][k])
    x = Fraction(samples.numerators["z21"][i], samples.denominators["z21"])
    at = nj.Rule(-x, (("z21", Fraction(1)),))
    above = nj.Rule(-x - Fraction(1, 10**30), (("z21", Fraction(1)),))
    d = CpuBudget(60.0)
    assert nj.fires(at, samples, d)[i] and sum(nj.fires(at, samples, d)) == 1
    assert not any(nj.fires(above, samples, d))


def test_reference_figures_against_a_floating_recount(t: Task, samples: nj.Samples) -> None:
    doc = _doc(t)
    got = _replay(t, doc)
    rule = nj.read_rules(doc, nj.Params.model_validate(t.replay_spec.params))[0]  # type: ignore[union-attr]
    cols = {
        f: np.array([v / samples.denominators[f] for v in samples.numerators[f]])
        for f, _ in rule.terms
    }
    score = float(rule.intercept) + sum(float(c) * cols[f] for f, c in rule.terms)
    margin = np.min(np.abs(score))
    assert margin > 1e-6  # no sample sits where float rounding could flip it
    pred = score >= 0
    y = np.array(samples.abnormal)
    tp, fp = int(np.sum(pred & y)), int(np.sum(pred & ~y))
    fn, tn = int(np.sum(~pred & y)), int(np.sum(~pred & ~y))
    assert (got["q4.true_positives"], got["q4.false_positives"]) == (tp, fp)
    assert (got["q4.false_negatives"], got["q4.true_negatives"]) == (fn, tn)
    assert got["q4.f1"] == nj.round_half_even(Fraction(2 * tp, 2 * tp + fp + fn), 10)
    bal = (Fraction(tp, tp + fn) + Fraction(tn, tn + fp)) / 2
    assert got["q4.balanced_accuracy"] == nj.round_half_even(bal, 10)
    anchor = t.anchor_artifact["replayed"]["q4"]
    assert anchor["f1"].value == got["q4.f1"] == Fraction(5631067961, 10**10)


def test_disjunction_and_trivial_rules(t: Task, samples: nj.Samples) -> None:
    never = _replay(t, _doc(t, [{"intercept": -1, "terms": [{"feature": "age", "coef": 0}]}]))
    assert (never["q4.true_positives"], never["q4.false_positives"]) == (0, 0)
    assert never["q4.f1"] == 0 and never["q4.balanced_accuracy"] == Fraction(1, 2)
    always = _replay(t, _doc(t, [{"intercept": 0, "terms": [{"feature": "age", "coef": 0}]}]))
    pos = sum(samples.abnormal)
    assert always["q4.f1"] == nj.round_half_even(Fraction(2 * pos, 2 * pos + samples.n - pos), 10)
    one = _replay(t, _doc(t, [{"intercept": -3, "terms": [{"feature": "abs_z18", "coef": 1}]}]))
    two = _replay(
        t,
        _doc(
            t,
            [
                {"intercept": -3, "terms": [{"feature": "abs_z18", "coef": 1}]},
                {"intercept": -3, "terms": [{"feature": "abs_z13", "coef": 1}]},
            ],
        ),
    )
    flagged = lambda r: r["q4.true_positives"] + r["q4.false_positives"]  # noqa: E731
    assert flagged(two) >= flagged(one)  # "or" only adds samples


def test_overlap_count() -> None:
    def doc(*iv: tuple[str, str]) -> dict[str, Any]:
        return exact.loads(
            json.dumps(
                {"q3": {"groups": [{"bmi_lower": float(a), "bmi_upper": float(b)} for a, b in iv]}}
            )
        )

    assert nj.overlapping_pairs(doc(("20", "28"), ("28", "32"), ("32", "40"))) == 0
    assert nj.overlapping_pairs(doc(("20", "30"), ("28", "32"), ("31", "40"))) == 2
    assert nj.overlapping_pairs(doc(("20", "40"), ("25", "26"), ("30", "31"))) == 2
    assert nj.overlapping_pairs({"q3": {"groups": [{"bmi_lower": "x"}]}}) is None


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda q4: q4.pop("rules"), "q4.rules: missing"),
        (lambda q4: q4.__setitem__("rules", []), "q4.rules: missing or empty"),
        (lambda q4: q4["rules"][0]["terms"][0].__setitem__("feature", "y_conc"), "feature"),
        (lambda q4: q4["rules"][0]["terms"][0].__setitem__("coef", "1"), "coef: missing or not"),
        (lambda q4: q4["rules"][0].pop("intercept"), "intercept: missing"),
        (lambda q4: q4["rules"][0].__setitem__("terms", []), "terms: missing or empty"),
        (lambda q4: q4.__setitem__("rules", q4["rules"] * 5), "at most 4"),
        (lambda q4: q4["rules"][0].__setitem__("terms", q4["rules"][0]["terms"] * 2), "at most"),
    ],
)
def test_unreplayable_rules_score_zero_with_the_reason(t: Task, mutate: Any, words: str) -> None:
    doc = json.loads(t.anchor_artifact_bytes())
    doc.pop("replayed")
    mutate(doc["q4"])
    parsed = exact.loads(json.dumps(doc))
    with pytest.raises(ReplayInputError, match=re.escape(words)):
        _replay(t, parsed)
    ev = evaluate(t, parsed)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert ev.score.o_eval == 0
    assert all(m.reward == 0 and words.split(":")[0] in m.reason for m in ev.score.metrics)


def test_the_input_caps_admit_the_largest_legal_rule_and_refuse_more(t: Task) -> None:
    doc = json.loads(t.anchor_artifact_bytes())
    doc.pop("replayed")
    tags = nj.Params.model_validate(t.replay_spec.params).tags()  # type: ignore[union-attr]
    doc["q4"]["rules"] = [
        {"intercept": -1, "terms": [{"feature": f, "coef": 1e-9} for f in tags]} for _ in range(4)
    ]
    ev = evaluate(t, read_artifact(json.dumps(doc), t.caps))
    assert ev.replay is not None and ev.replay.status == "ok"
    doc["q4"]["rules"].append(copy.deepcopy(doc["q4"]["rules"][0]))
    with pytest.raises(ValueError, match="q4.rules"):
        read_artifact(json.dumps(doc), t.caps)


def test_reference_rule_is_the_fit_scripts(t: Task) -> None:
    path = t.dir / "reference" / "fit_rule.py"
    spec = importlib.util.spec_from_file_location("_nipt_fit_rule", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    result = mod.fit()
    ref = json.loads((t.dir / "reference.json").read_text(encoding="utf-8"))
    assert result["rules"] == ref["artifact"]["q4"]["rules"]
    recorded = json.loads((t.dir / "reference" / "fit.json").read_text(encoding="utf-8"))
    assert result["replayed"] == recorded["replayed"]
    anchor = t.anchor_artifact["replayed"]["q4"]
    assert exact.parse_decimal(result["replayed"]["q4.f1"]) == anchor["f1"].value


# --- held-out scoring: the rule is judged on pregnancies the agent never saw -------------


def _split(t: Task) -> Any:
    from tbmm.suite import split as S

    spec = S.load_spec(t.dir)
    assert spec is not None
    return S, spec


def test_heldout_rows_are_absent_from_the_agents_environment(t: Task) -> None:
    """No held-out pregnancy is in any file under environment/: not its code, not one of
    its rows (cell for cell), not in the shared-string table; the held-out file lives
    outside environment/ and matches its manifest hash."""
    S, spec = _split(t)
    (held,) = t.manifest.heldout
    assert held.path == spec.heldout_path and not held.path.startswith("environment/")
    rows = S.read_heldout(t.dir / held.path)
    g = S.col_index(spec.group_column)
    codes = {r[g] for r in rows[1:]}
    assert len(codes) == held.subjects and len(rows) - 1 == held.rows
    agent = S.read_sheet_rows(t.dir / held.attachment, spec.sheet)
    assert not codes & {r.get(g) for r in agent}
    assert not {tuple(sorted(r.items())) for r in rows[1:]} & {
        tuple(sorted(r.items())) for r in agent
    }
    for f in (t.dir / "environment").rglob("*"):
        if not f.is_file():
            continue
        blob = f.read_bytes()
        if f.suffix == ".xlsx":  # stored uncompressed: its XML is searchable as is
            with zipfile.ZipFile(f) as z:
                blob = b"".join(z.read(n) for n in z.namelist())
        for code in codes:
            assert f">{code}<".encode() not in blob, (f, code)
    # the agent's copy and the held-out rows together are the source sheet's rows
    assert S.heldout_leaks(t.dir, held) == []


def test_the_split_is_by_pregnancy_stratified_and_seeded(t: Task) -> None:
    S, spec = _split(t)
    groups = {"a": True, "b": True, "c": False, "d": False, "e": False, "f": True}
    one = S.choose_heldout(groups, Fraction(1, 3), 7)
    assert one == S.choose_heldout(groups, Fraction(1, 3), 7)  # the seed fixes it
    assert sum(groups[g] for g in one) == 1 and sum(not groups[g] for g in one) == 1
    (held,) = t.manifest.heldout
    rows = S.read_heldout(t.dir / held.path)
    lab = S.col_index(spec.label_column)
    g = S.col_index(spec.group_column)
    abnormal_women = {r[g] for r in rows[1:] if lab in r}
    assert 0 < len(abnormal_women) < held.subjects  # both strata are held out


def test_the_split_is_rebuilt_from_the_source_byte_for_byte(t: Task) -> None:
    S, spec = _split(t)
    src = sorted((SOURCE / "tasks" / t.suite / t.slug).rglob(spec.attachment))
    if not src:
        pytest.skip(f"source release not found at {SOURCE}")
    res = S.split_workbook(src[0].read_bytes(), spec)
    (held,) = t.manifest.heldout
    assert res.agent_xlsx == (t.dir / held.attachment).read_bytes()
    assert res.heldout_csv == (t.dir / held.path).read_text(encoding="utf-8")
    full = S.read_sheet_rows(src[0], spec.sheet)
    agent = S.read_sheet_rows(t.dir / held.attachment, spec.sheet)
    heldrows = S.read_heldout(t.dir / held.path)
    key = lambda r: tuple(sorted(r.items()))  # noqa: E731
    assert sorted(map(key, agent[1:] + heldrows[1:])) == sorted(map(key, full[1:]))
    assert agent[0] == heldrows[0] == full[0]


def test_a_leaking_agent_copy_is_refused(t: Task, tmp_path: Path) -> None:
    """validate's heldout check: an agent copy that holds a held-out pregnancy (planted by
    renaming one of the agent's women to a held-out code in the shared strings) is reported,
    and so is a held-out row copied back cell for cell."""
    import io
    import shutil

    S, spec = _split(t)
    (held,) = t.manifest.heldout
    dst = tmp_path / t.slug
    shutil.copytree(t.dir, dst)
    g = S.col_index(spec.group_column)
    code = S.read_heldout(t.dir / held.path)[1][g]
    mine = S.read_sheet_rows(t.dir / held.attachment, spec.sheet)[1][g]
    assert S.heldout_leaks(dst, held) == []
    src = zipfile.ZipFile(t.dir / held.attachment)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == "xl/sharedStrings.xml":
                body = body.replace(f">{mine}<".encode(), f">{code}<".encode(), 1)
            z.writestr(info.filename, body)
    (dst / held.attachment).write_bytes(out.getvalue())
    problems = S.heldout_leaks(dst, held)
    assert any("held-out subjects still in the agent's copy" in p for p in problems), problems
    # validate reports it (and the changed checksum) as a failed check
    from tbmm.tooling.validate import validate_task

    res = validate_task(dst)
    assert any(p.check == "heldout" and "held-out subjects" in p.message for p in res), res


def test_a_rule_overfitted_on_the_agents_rows_does_not_reach_one(t: Task) -> None:
    """tests/data/nipt_overfit_rule.json: four halfspaces chosen greedily among 20,000
    random directions to maximise F1 on the agent's rows. In-sample it beats the
    reference on both figures (in-sample scoring would have paid it O-Eval 1.0); on the
    held-out pregnancies it falls far below, and so does its score."""
    rules = exact.loads(
        (Path(__file__).parent / "data" / "nipt_overfit_rule.json").read_text(encoding="utf-8")
    )["rules"]
    doc = _doc(t)
    doc["q4"]["rules"] = rules
    got = _replay(t, doc)
    ref = t.anchor_artifact["replayed"]["q4"]
    assert (
        got["q4.f1"] > ref["f1"].value
        and got["q4.balanced_accuracy"] > ref["balanced_accuracy"].value
    )
    assert got["q4.heldout_f1"] < ref["heldout_f1"].value - Fraction(1, 10)
    doc["q4"]["female_abnormality_f1"] = exact.loads(str(float(got["q4.f1"])))
    doc["q4"]["female_abnormality_balanced_accuracy"] = exact.loads(
        str(float(got["q4.balanced_accuracy"]))
    )
    ev = evaluate(t, doc)
    assert ev.gate.verdict == "pass", [i.message for i in ev.gate.failed]
    assert ev.score.o_eval < Fraction(1, 2), ev.score.o_eval
    # the reference, fitted on the same rows, scores 1 on the held-out rows (its anchor)
    assert evaluate(t, _doc(t)).score.o_eval == 1
