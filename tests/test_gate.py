"""Gate: every form discriminates a synthetic violation; bad input never raises."""

from __future__ import annotations

import json

import pytest

from tbmm.suite.tasks import Task
from tbmm.verdict.gate import run_gate
from tbmm.verdict.scoring import read_artifact

GOOD = {
    "q": {"speed": 2, "ratio": 1.25, "cost": 100, "corr": 0.5, "count": 7, "share": 0.3},
    "rows": [{"p": 0.2}, {"p": 0.5}],
}


def doc_with(path: tuple, value) -> dict:  # noqa: ANN001
    d = json.loads(json.dumps(GOOD))
    node = d
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return read_artifact(json.dumps(d))


def test_anchor_passes(syn: Task) -> None:
    rep = run_gate(syn, syn.anchor_artifact)
    assert rep.verdict == "pass", rep.to_json()
    # probs expands over 2 rows -> 8 instances from 7 checks
    assert len(rep.instances) == 8


@pytest.mark.parametrize(
    ("path", "value", "failing"),
    [
        (("q", "ratio"), 0.99999, "ratio_ge_one"),  # threshold
        (("q", "speed"), 2.1, "speed_cap"),  # product: 2.1 * 1.25 > 2.5
        (("q", "corr"), -1.01, "corr_range"),  # interval
        (("q", "count"), 6.5, "count_int"),  # count (fractional)
        (("q", "count"), -1, "count_int"),  # count (negative)
        (("rows", 1, "p"), 1.5, "probs[1]"),  # interval over [*]
        (("q", "share"), 0.31, "shares"),  # sum_to
        (("q", "cost"), 1, "order_cost"),  # order
    ],
)
def test_each_form_rejects_a_violation(syn: Task, path: tuple, value: float, failing: str) -> None:
    rep = run_gate(syn, doc_with(path, value))
    assert rep.verdict == "fail"
    names = [i.name for i in rep.failed]
    assert failing in names, names
    msg = next(i.message for i in rep.failed if i.name == failing)
    assert "violated" in msg


def test_empty_artifact_warns(syn: Task) -> None:
    assert run_gate(syn, {}).verdict == "warn"
    assert run_gate(syn, None).verdict == "warn"


def test_partial_artifact_warns(syn: Task) -> None:
    rep = run_gate(syn, read_artifact('{"q": {"ratio": 1.5}}'))
    assert rep.verdict == "warn"
    assert any("missing" in w for w in rep.warnings)


@pytest.mark.parametrize(
    "bad", ["NaN", "Infinity", "-Infinity", '"1.5"', "null", "1e999999999", "true", "{}", "[1]"]
)
def test_bad_input_is_a_hard_fail_with_reason(syn: Task, bad: str) -> None:
    text = json.dumps(GOOD).replace('"ratio": 1.25', f'"ratio": {bad}')
    rep = run_gate(syn, read_artifact(text))
    assert rep.verdict == "fail"
    inst = next(i for i in rep.failed if i.name == "ratio_ge_one")
    assert inst.status == "bad" and inst.message


def test_huge_exponent_does_not_hang(syn: Task) -> None:
    text = json.dumps(GOOD).replace('"cost": 100', '"cost": 1e400')
    rep = run_gate(syn, read_artifact(text))
    # 1e400 is within the exponent limit: an exact (huge) integer, and it satisfies speed <= cost
    assert rep.verdict == "pass"


@pytest.mark.parametrize(
    ("form", "extra"),
    [
        ({"form": "interval", "field": "q.a", "lo": "0"}, {"against": "replayed.q.a"}),
        ({"form": "threshold", "field": "q.a", "op": ">=", "bound": "1"}, {"rhs": ["q.b"]}),
        ({"form": "order", "lhs": ["q.a"], "rhs": ["q.b"]}, {"fields": ["q.c"]}),
        (
            {"form": "agree", "field": "q.a", "against": "replayed.q.a", "tol": "0"},
            {"lhs": ["q.c"]},
        ),
    ],
)
def test_a_check_refuses_paths_its_form_does_not_read(form: dict, extra: dict) -> None:
    """Such a path would still take part in expansion and missing-input handling."""
    from pydantic import ValidationError

    from tbmm.suite.models import GateCheck

    base = {"id": "c", "justification": "a synthetic check", **form}
    GateCheck.model_validate(base)
    with pytest.raises(ValidationError, match="does not read"):
        GateCheck.model_validate({**base, **extra})


@pytest.mark.slow
def test_one_field_fast_path_gives_the_general_verdicts(
    suite: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evaluate`'s shortcut for one-field checks reaches the same report (statuses, values,
    messages) as its general path on every task's mixed corpus, failing instances included."""
    import sys

    from tbmm.tooling.bench import corpus
    from tbmm.verdict.scoring import ArtifactError, read_artifact

    from .conftest import infeasible_dragon

    G = sys.modules["tbmm.verdict.gate"]
    docs = []
    for t in suite:
        items = [(d, r) for _, d, r in corpus([t])]
        if t.slug == "cumcm-2024-a-dragon-dance":
            items.append((infeasible_dragon(t), None))
        for data, replayed in items:
            try:
                doc = read_artifact(data, t.caps)
            except ArtifactError:
                continue
            if replayed is not None and doc:
                doc["replayed"] = replayed
            docs.append((t, doc))
    fast = [G.run_gate(t, d).to_json() for t, d in docs]
    monkeypatch.setattr(G, "_ONE_FIELD", ())
    general = [G.run_gate(t, d).to_json() for t, d in docs]
    assert fast == general
    assert any(r["verdict"] == "fail" for r in fast)
