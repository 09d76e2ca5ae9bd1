"""The artifacts on which a fast path and its reference could part ways, and a property.

Fast paths: the exact parser's hooks (a literal seen twice in one artifact gets the same
`Num`), `score_plan.task_score` (values read from their text as integer pairs, missing
fields found without exceptions, papers' anchors deduplicated), the gate's compiled checks
(`_OneField`, `_Agree`, `_Fields`, `_WildFields`: integer comparisons), `exact.fraction`.
References: `exact.loads` (no memo), `scoring.COMPILED` off, `gate.FAST_CHECKS` off — the
whole JSON of every verdict must be identical. The attacks: signed zeros, exponents at and
past the cap (1e400, 1e-401, 1e99999999999), decimals that are not binary fractions (0.1,
0.30000000000000004), duplicate keys, NaN / Infinity literals, numbers at the digit cap, the
nesting depth at the cap, wrong types, values exactly on interval ends, band edges and
agree tolerances, repeated literals at scored and gated paths.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tbmm.core import bounds, exact
from tbmm.suite.tasks import Task
from tbmm.verdict import gate as gate_mod
from tbmm.verdict import scoring
from tbmm.verdict.gate import run_gate
from tbmm.verdict.scoring import ArtifactError, read_artifact, score_task

from .conftest import GATE, SYN_ANCHOR, make_task

# the synthetic task's gate with every compiled kind of check: agree (with a relative
# tolerance), one-sided intervals, each threshold operator, a bounded count, a product of
# fields, an order with slack, and multi-field checks over `[*]`
EXTRA_GATE = """
[[check]]
id = "speed_agrees"
justification = "a synthetic check the fast paths compile"
form = "agree"
field = "q.speed"
against = "q.big"
tol = "998"
rel_tol = "0.001"

[[check]]
id = "share_lo"
justification = "a synthetic check the fast paths compile"
form = "interval"
field = "q.share"
lo = "0"

[[check]]
id = "cost_hi"
justification = "a synthetic check the fast paths compile"
form = "interval"
field = "q.cost"
hi = "150"

[[check]]
id = "big_gt"
justification = "a synthetic check the fast paths compile"
form = "threshold"
field = "q.big"
op = ">"
bound = "999.5"

[[check]]
id = "big_lt"
justification = "a synthetic check the fast paths compile"
form = "threshold"
field = "q.big"
op = "<"
bound = "10000"

[[check]]
id = "speed_le"
justification = "a synthetic check the fast paths compile"
form = "threshold"
field = "q.speed"
op = "<="
bound = "2.5"

[[check]]
id = "count_hi"
justification = "a synthetic check the fast paths compile"
form = "count"
field = "q.count"
hi = "10"

[[check]]
id = "area"
justification = "a synthetic check the fast paths compile"
form = "product"
factors = ["q.speed", "q.corr"]
bound_factors = ["q.ratio", "q.share"]
op = ">="

[[check]]
id = "speed_below_cost"
justification = "a synthetic check the fast paths compile"
form = "order"
lhs = ["q.speed", "q.corr"]
rhs = ["q.cost"]
op = "<"
slack = "0.5"

[[check]]
id = "row_order"
justification = "a synthetic check the fast paths compile"
form = "order"
lhs = ["rows[*].p"]
rhs = ["rows[*].d"]
op = "<="

[[check]]
id = "row_agree"
justification = "a synthetic check the fast paths compile"
form = "agree"
field = "rows[*].p"
against = "rows[*].p"
tol = "0"
"""

PANEL = {
    "papers": [
        {
            "paper_id": f"P{i}",
            "title": f"Synthetic paper {i}",
            "source": "synthetic",
            "role": "anchor" if i == 0 else "panel",
            "values": values,
        }
        for i, values in enumerate(
            [
                {"speed": "2.0", "cost": "100", "corr": "0.5", "count": "7", "big": "1000"},
                {"speed": "2.5", "cost": "90", "corr": "0.4", "count": "7", "big": "1000"},
                {"speed": "2.5", "cost": "90", "corr": "0.4", "count": "7", "big": "1000"},
                {"speed": "1.5", "corr": "-0.25"},
                {"cost": "100", "big": "999.9"},
            ]
        )
    ]
}

BASE = SYN_ANCHOR  # the synthetic task's anchor: every field a check or a metric reads

FIELDS = [("q", k) for k in BASE["q"]] + [("rows", 0, "p"), ("rows", 1, "d")]

MISSING = "<missing>"  # the key deleted
LITERALS = [
    "-0", "-0.0", "0e0", "-0e-0", "0.000", "1e400", "1E+400", "-1e400", "1e-400", "1e401",
    "1e-401", "1e99999999999", "0.1", "0.30000000000000004", "1e-7", "2.0e0", "2E0",
    "20e-1", "1.0000000000000000000000000000000000001", "9" * 40, "1" + "0" * 39,
    "-" + "9" * 39, "NaN", "Infinity", "-Infinity", "true", "false", "null", '"2.0"', "[]",
    "{}", "[2.0]", "999.5", "10", "11", "150", "150.0000000000001", "2.5", "2.4999",
    "-1", "1", "-1.0000001", "1000.000001", "0.999", "7.0", "7.5", "1.5", "-0.25",
    "9" * 41, "-0." + "0" * 38 + "1", MISSING,
]  # fmt: skip


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    return make_task(tmp_path_factory.mktemp("adv"), gate=GATE + EXTRA_GATE, panel=PANEL)


def text_of(doc: dict[str, Any]) -> str:
    def enc(x: Any) -> str:
        if isinstance(x, dict):
            return "{" + ", ".join(f"{json.dumps(k)}: {enc(v)}" for k, v in x.items()) + "}"
        if isinstance(x, list):
            return "[" + ", ".join(enc(v) for v in x) + "]"
        return x

    return enc(doc)


def with_literal(path: tuple, literal: str) -> str:
    doc = json.loads(json.dumps(BASE))
    node = doc
    for k in path[:-1]:
        node = node[k]
    if literal == MISSING:
        del node[path[-1]]
    else:
        node[path[-1]] = literal
    return text_of(doc)


def reference_score(task: Task, doc: Any, **kw: Any) -> dict[str, Any]:
    scoring.COMPILED = False
    try:
        return score_task(task, doc, **kw).to_json()
    finally:
        scoring.COMPILED = True


def reference_gate(task: Task, doc: Any) -> dict[str, Any]:
    gate_mod.FAST_CHECKS = False
    try:
        return run_gate(task, doc).to_json()
    finally:
        gate_mod.FAST_CHECKS = True


def assert_same(task: Task, text: str) -> str:
    """Both parses (the memoised exact decoder, `exact.loads` without a memo), then every
    verdict on both paths; the outcome (gate verdict, or the refusal) for the caller."""
    try:
        doc = read_artifact(text, task.caps)
    except ArtifactError:
        # refused before any path: the independent cap checker refuses it too
        with pytest.raises(bounds.BoundsError):
            bounds.check(text, task.caps)
        return "refused"
    plain = exact.loads(text)
    assert exact.dumps(doc, faithful=True) == exact.dumps(plain, faithful=True)
    g = run_gate(task, doc)
    gj = json.dumps(g.to_json())
    assert gj == json.dumps(reference_gate(task, doc)), text
    assert gj == json.dumps(run_gate(task, plain).to_json()), text
    fresh = read_artifact(text, task.caps)  # values not yet computed: read from their text
    for kw in (
        {},
        {"gate_failed": g.verdict == "fail", "unverifiable": g.unverifiable},
        {"gate_failed": True},
    ):
        got = json.dumps(score_task(task, fresh, **kw).to_json())
        assert got == json.dumps(reference_score(task, doc, **kw)), (text, kw)
        assert got == json.dumps(score_task(task, plain, **kw).to_json()), (text, kw)
    return g.verdict


def test_every_literal_at_every_field(task: Task) -> None:
    outcomes: dict[str, int] = {}
    for path in FIELDS:
        for lit in LITERALS:
            out = assert_same(task, with_literal(path, lit))
            outcomes[out] = outcomes.get(out, 0) + 1
    # the attacks reached every outcome (refused at the caps, failed, warned, passed)
    assert set(outcomes) == {"refused", "fail", "warn", "pass"}, outcomes


def test_duplicate_keys_take_the_last_on_both_paths(task: Task) -> None:
    base = text_of(BASE)
    for dup in ('"speed": 9, "speed": 2.0', '"speed": 2.0, "speed": 9', '"corr": NaN, "corr": 0.5'):
        text = base.replace('"speed": 2.0', dup, 1)
        assert_same(task, text)
    doc = read_artifact(base.replace('"speed": 2.0', '"speed": 2.0, "speed": 9', 1), task.caps)
    assert doc["q"]["speed"].text == "9"


def test_a_repeated_literal_is_one_value_everywhere(task: Task) -> None:
    """The memo (texts of `bounds.MEMO_FROM` characters on) hands the same Num to every
    position of one literal: scoring one position (which caches its value) changes nothing
    for the gate reading another; a short text gets its own Num per position; both trees
    and verdicts are the same."""
    text = with_literal(("q", "corr"), "0.30000000000000004").replace(
        '"p": 0.2', '"p": 0.30000000000000004'
    )
    padded = text[:-1] + ', "pad": "' + "x" * bounds.MEMO_FROM + '"}'
    doc = read_artifact(padded, task.caps)
    assert doc["q"]["corr"] is doc["rows"][0]["p"]
    assert doc["q"]["corr"].value == Fraction(30000000000000004, 10**17)  # not a binary float
    short = read_artifact(text, task.caps)
    assert short["q"]["corr"] is not short["rows"][0]["p"]
    assert exact.dumps(short) == exact.dumps({k: v for k, v in doc.items() if k != "pad"})
    assert_same(task, padded)
    assert_same(task, text)
    # a later parse does not reuse the earlier artifact's objects
    again = read_artifact(padded, task.caps)
    assert again["q"]["corr"] is not doc["q"]["corr"]


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_nesting_at_the_depth_cap(task: Task, depth: int) -> None:
    cap = task.caps.max_depth
    # the artifact object is level 1; "deep" adds `levels` more
    levels = cap - 1 + depth - 2  # depth 1: one under the cap, 2: at it, 3: one over
    deep = "[" * levels + "1.5" + "]" * levels
    text = text_of(BASE)[:-1] + f', "deep": {deep}}}'
    out = assert_same(task, text)
    assert (out == "refused") == (depth == 3), out


def test_the_digit_and_exponent_caps_are_the_same_on_both_parsers(task: Task) -> None:
    cap = task.caps.max_digits
    for lit in ("1" * cap, "1" * (cap + 1), "1." + "5" * (cap - 2), "1e" + "9" * (cap - 2)):
        assert_same(task, with_literal(("q", "speed"), lit))
    doc = read_artifact(with_literal(("q", "speed"), "1e401"), task.caps)
    assert isinstance(doc["q"]["speed"], exact.NonFinite)


def test_exact_fraction_is_fraction() -> None:
    cases = [(0, 1), (-0, 7), (6, 4), (-10, 4), (10**40 + 1, 10**39), (-(2**70), 3**44), (5, 1)]
    for n, d in cases:
        q = exact.fraction(n, d)
        assert type(q) is Fraction
        assert (q.numerator, q.denominator) == (Fraction(n, d).numerator, Fraction(n, d).denominator)
        assert q == Fraction(n, d) and hash(q) == hash(Fraction(n, d)) and str(q) == str(Fraction(n, d))
    assert exact._layout_ok()  # on this interpreter the fast constructor is in use


literal = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]),
    st.integers(min_value=0, max_value=10**12).map(str),
    st.one_of(st.just(""), st.integers(min_value=0, max_value=10**9).map(lambda k: f".{k}")),
    st.one_of(
        st.just(""),
        st.integers(min_value=-410, max_value=410).map(lambda e: f"e{e}"),
        st.integers(min_value=-3, max_value=3).map(lambda e: f"E+{e}" if e >= 0 else f"E{e}"),
    ),
)
leaf = st.one_of(
    literal,
    literal,
    literal,
    st.sampled_from(["NaN", "Infinity", "-Infinity", "true", "null", '"1"', "[]", "{}"]),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.dictionaries(st.sampled_from(FIELDS), leaf, max_size=len(FIELDS)),
    st.sets(st.sampled_from([("q", k) for k in BASE["q"]]), max_size=3),
    st.booleans(),
    st.booleans(),
)
def test_property_fast_paths_equal_the_references(
    task: Task, changes: dict[tuple, str], dropped: set[tuple], third_row: bool, padded: bool
) -> None:
    doc = json.loads(json.dumps(BASE))
    for path, lit in changes.items():
        node = doc
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = lit
    for _, k in dropped:
        doc["q"].pop(k, None)
    if third_row:
        doc["rows"].append({"p": changes.get(("rows", 0, "p"), "0.25"), "d": "1"})
    if padded:  # long enough for the parser's literal memo
        doc["pad"] = json.dumps("x" * bounds.MEMO_FROM)
    assert_same(task, text_of(doc))


def test_the_property_covers_the_cap_refusal() -> None:
    """The literal strategy reaches past the exponent cap (a refusal or a NonFinite is
    part of what the property compares): `1e401` parses to NonFinite on both parsers."""
    assert isinstance(exact.loads("1e401"), exact.NonFinite)
    assert isinstance(read_artifact('{"x": 1e401}')["x"], exact.NonFinite)


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_objects_nested_at_the_cap_without_lists(extra: int) -> None:
    """Text without a '[' skips the tree walk (no list; depth <= its '{' count): objects
    nested to the cap pass, one deeper is refused, braces or brackets inside strings change
    nothing."""
    cap = bounds.DEFAULT_CAPS.max_depth
    levels = cap + extra
    text = '{"a": ' * (levels - 1) + '{"s": "{{{{ ]]"}' + "}" * (levels - 1)
    if extra > 0:
        with pytest.raises(ArtifactError, match="nested deeper"):
            read_artifact(text)
        with pytest.raises(bounds.BoundsError):
            bounds.check(text)
    else:
        assert read_artifact(text)["a"]
        bounds.check(text)
    with_bracket = text.replace('"s"', '"[s"')  # a '[' in a key: the walk runs, same outcome
    if extra > 0:
        with pytest.raises(ArtifactError, match="nested deeper"):
            read_artifact(with_bracket)
    else:
        assert read_artifact(with_bracket)["a"]
