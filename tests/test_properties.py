"""Property tests: one-sidedness, monotonicity on the bad side, exactness of number reading."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction as F

from hypothesis import given, settings
from hypothesis import strategies as st

from tbmm.core import exact, rules
from tbmm.core.rules import Direction

rationals = st.fractions(min_value=-(10**6), max_value=10**6, max_denominator=10**6)
bands = st.fractions(min_value=F(1, 10**6), max_value=10**6, max_denominator=10**6)
directional = st.sampled_from([Direction.higher_is_better, Direction.lower_is_better])


def good_step(d: Direction, delta: F) -> F:
    return delta if d is Direction.higher_is_better else -delta


@given(directional, rationals, bands, st.fractions(min_value=0, max_value=10**6))
def test_at_or_beyond_anchor_never_below_one(d: Direction, anchor: F, band: F, delta: F) -> None:
    assert rules.reward(d, anchor + good_step(d, delta), anchor, band) >= 1


@given(directional, rationals, bands, rationals, st.fractions(min_value=0, max_value=10**6))
def test_moving_in_the_good_direction_never_lowers_the_reward(
    d: Direction, anchor: F, band: F, x: F, delta: F
) -> None:
    assert rules.reward(d, x + good_step(d, delta), anchor, band) >= rules.reward(
        d, x, anchor, band
    )


@given(
    directional,
    rationals,
    bands,
    st.fractions(min_value=0, max_value=10**6),
    st.fractions(min_value=0, max_value=10**6),
)
def test_monotone_on_the_bad_side(d: Direction, anchor: F, band: F, s1: F, s2: F) -> None:
    near, far = sorted([s1, s2])
    r_near = rules.reward(d, anchor - good_step(d, near), anchor, band)
    r_far = rules.reward(d, anchor - good_step(d, far), anchor, band)
    assert 0 <= r_far <= r_near <= 1


@given(rationals, bands, st.fractions(min_value=0, max_value=10**6))
def test_target_value_symmetric_and_bounded(anchor: F, band: F, delta: F) -> None:
    up = rules.reward(Direction.target_value, anchor + delta, anchor, band)
    down = rules.reward(Direction.target_value, anchor - delta, anchor, band)
    assert up == down and 0 <= up <= 1


@given(
    st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
        lambda d: d.adjusted() < 300 and d.adjusted() > -300
    )
)
def test_decimal_text_is_read_exactly(d: Decimal) -> None:
    text = json.dumps({"v": 0}).replace("0", str(d))
    node = exact.loads(text)["v"]
    assert node.value == F(d)


@settings(max_examples=300)
@given(st.floats(allow_nan=False, allow_infinity=False, width=64), rationals, bands)
def test_float_rounded_and_decimal_inputs_never_diverge_silently(
    x: float, anchor: F, band: F
) -> None:
    """json.dumps(float) writes the shortest repr; reading that text exactly is the float's decimal.

    The reward from the float-written artifact equals the reward of that exact decimal, and
    differs from the binary value only where the binary value itself differs (visible in
    the recorded value text) — nothing goes through a float on our side.
    """
    text = json.dumps({"v": x})
    node = exact.loads(text)["v"]
    assert node.value == F(Decimal(repr(x)))
    assert node.text == repr(x) or node.text == json.dumps(x)
    for d in Direction:
        assert rules.reward(d, node.value, anchor, band) == rules.reward(
            d, F(Decimal(node.text)), anchor, band
        )


def test_binary_float_would_diverge_where_we_do_not() -> None:
    # 0.1 + 0.2 != 0.3 in binary floats; exactly, from text, it is.
    a, b, c = (exact.loads(t).value for t in ("0.1", "0.2", "0.3"))
    assert a + b == c
    assert F(0.1) + F(0.2) != F(0.3)


_json_trees = st.recursive(
    st.integers(0, 3) | st.none(),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from("abc"), kids, max_size=3)
    ),
    max_leaves=12,
)
_paths = st.lists(
    st.sampled_from(["a", "b", "c", "[0]", "[1]", "[*]"]), min_size=1, max_size=4
).map(lambda ts: "".join(t if t.startswith("[") else f".{t}" for t in ts).lstrip("."))


@given(_json_trees, _paths)
@settings(max_examples=400, deadline=None)
def test_expand_nodes_is_expand_plus_resolve(doc, path) -> None:
    """The one-walk expansion names the same concrete paths as `expand` and, for each, the
    node `resolve` finds (MISSING where resolve fails): the gate and the schema check rely
    on it for lists of thousands of entries."""
    from tbmm.core.paths import MISSING, PathError, expand, expand_nodes, resolve, tokens

    try:
        tokens(path)
    except PathError:
        return
    pairs = expand_nodes(doc, path)
    # the definition, step by step: a wildcard expands over the entries the list at its
    # prefix has (resolved from the root); any other step is kept as written
    naive = [""]
    for tok in tokens(path):
        if isinstance(tok, str):
            naive = [f"{q}.{tok}" if q else tok for q in naive]
        elif tok >= 0:
            naive = [f"{q}[{tok}]" for q in naive]
        else:
            nxt = []
            for q in naive:
                try:
                    node = resolve(doc, q) if q else doc
                except PathError:
                    node = None
                if isinstance(node, list):
                    nxt += [f"{q}[{i}]" for i in range(len(node))]
            naive = nxt
    assert [p for p, _ in pairs] == naive == expand(doc, path)
    for p, node in pairs:
        try:
            assert resolve(doc, p) is node
        except PathError:
            assert node is MISSING


nonneg = st.fractions(min_value=0, max_value=10**6, max_denominator=10**6)


@given(rationals, rationals, nonneg, nonneg)
def test_agree_on_integers_is_the_rational_inequality(x: F, y: F, tol: F, rel: F) -> None:
    from tbmm.core import forms

    assert forms.agree(x, y, tol, rel) == (abs(x - y) <= tol + rel * abs(y))
    # on the boundary itself (x exactly tol + rel·|y| away) it agrees
    assert forms.agree(y + tol + rel * abs(y), y, tol, rel)


@given(st.lists(rationals, min_size=1, max_size=8), rationals, nonneg)
def test_sum_to_on_integers_is_the_rational_inequality(xs: list[F], total: F, tol: F) -> None:
    from tbmm.core import forms

    assert forms.sum_to(xs, total, tol) == (abs(sum(xs, F(0)) - total) <= tol)
    assert forms.sum_to(xs, sum(xs, F(0)) + tol, tol)


@given(rationals, st.one_of(st.none(), rationals), st.one_of(st.none(), rationals))
def test_interval_on_integers_is_the_rational_order(x: F, lo: F | None, hi: F | None) -> None:
    from tbmm.core import forms

    assert forms.interval(x, lo, hi) == ((lo is None or lo <= x) and (hi is None or x <= hi))


@given(rationals, st.sampled_from([">=", "<=", ">", "<"]), rationals)
def test_compare_on_integers_is_the_rational_order(x: F, op: str, c: F) -> None:
    import operator

    from tbmm.core import forms

    ref = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}[op]
    assert forms.compare(x, op, c) == ref(x, c) == forms.threshold(x, op, c)


@given(rationals, st.one_of(st.none(), rationals))
def test_count_is_a_nonnegative_integer_within_hi(x: F, hi: F | None) -> None:
    from tbmm.core import forms

    assert forms.count(x, hi) == (x.denominator == 1 and x >= 0 and (hi is None or x <= hi))
