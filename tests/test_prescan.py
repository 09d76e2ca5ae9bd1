"""tbmm.core.bounds.prescan: every cap on the raw text, before any Python tree of it exists.

The pre-scan replaced a walk over the parsed tree (`bounds._walk`, kept as the reference
and as a safety net). It must refuse what the walk refuses, on any document and any caps
(a random differential below), report the first violation in the text, and leave the
parser nothing to build for an input over a cap (the decoder is booby-trapped)."""

from __future__ import annotations

import json
import random

import pytest

from tbmm.core import bounds
from tbmm.core.bounds import BoundsError, Caps
from tbmm.verdict.scoring import ArtifactError, read_artifact


def _by_tree(text: str, caps: Caps) -> str:
    """The previous check: json with digit hooks, then the walk over the tree."""

    def number(tok: str) -> None:
        if len(tok) > caps.max_digits:
            raise BoundsError(f"a number has {len(tok)} characters")

    try:
        doc = json.loads(text, parse_int=number, parse_float=number, parse_constant=number)
    except (BoundsError, RecursionError) as exc:
        return f"refused: {exc}"
    except ValueError:
        return "not JSON"
    try:
        bounds._walk(doc, caps)
    except BoundsError as exc:
        return f"refused: {exc}"
    return "ok"


def _by_scan(text: str, caps: Caps) -> str:
    try:
        return "ok" if bounds.prescan(text, caps) else "not JSON"
    except BoundsError as exc:
        return f"refused: {exc}"


NAMES = ["a", "b", "q5", "uavs", "drops", "é", 'x"y', "k,", "t"]


def _value(rng: random.Random, depth: int = 0) -> object:
    r = rng.random()
    if depth > 6 or r < 0.35:
        leaves = [1, -2.5e-3, 10 ** rng.randint(0, 14), 1e300, "s", "a,b{[", True, None]
        return rng.choice([*leaves, float("nan"), "\ud800", -(10**30)])
    if r < 0.7:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return {
        rng.choice(NAMES) + str(rng.randint(0, 2)): _value(rng, depth + 1)
        for _ in range(rng.randint(0, 4))
    }


def test_the_scan_refuses_exactly_what_the_tree_walk_refuses() -> None:
    rng = random.Random(20261202)
    kinds = {"ok": 0, "refused": 0, "not JSON": 0}
    for _ in range(4000):
        caps = Caps(
            max_depth=rng.randint(1, 6),
            max_digits=rng.randint(1, 12),
            max_list=rng.randint(0, 5),
            max_list_total=rng.randint(0, 12),
            max_list_unreferenced=rng.randint(0, 6),
            per_path=rng.choice([{}, {"a0": 2, "a1[*]": 1, "t0[*].b1": 0}]),
            referenced=rng.choice([None, frozenset({"a0", "b1", "a1[*]", "", "t0[*].b1"})]),
        )
        text = json.dumps(
            _value(rng), indent=rng.choice([None, 1]), ensure_ascii=rng.random() < 0.5
        )
        if rng.random() < 0.2:  # a broken text now and then
            k = rng.randrange(len(text) + 1)
            text = text[:k] + rng.choice(list(',]}[{"1 \\x:-')) + text[k:]
        tree, scan = _by_tree(text, caps), _by_scan(text, caps)
        if tree == "not JSON":
            assert scan != "ok", text  # never passed where json itself refuses
            kinds["not JSON"] += 1
            continue
        assert tree.split(":")[0] == scan.split(":")[0], (text, caps, tree, scan)
        kinds[scan.split(":")[0]] += 1
    assert min(kinds.values()) > 200, kinds  # each outcome well represented


def _one_violation(caps: Caps) -> dict[str, str]:
    """A text per cap with exactly that one violation (its reason is then the same
    whichever order a checker walks in)."""
    d, n, lst = caps.max_depth, caps.max_digits, caps.max_list
    return {
        "digits": '{"a": [1, 2.' + "5" * (n - 1) + "]}",
        "exponent": '{"a": -' + "1" * (n - 3) + "e+7}",
        "depth": '{"a": ' + "[" * (d - 1) + "{}" + "]" * (d - 1) + "}",
        "list": '{"a": [' + ",".join(["{}"] * (lst + 1)) + "]}",
        "per path": '{"q5": {"uavs": [' + ",".join(['{"drops": [1]}'] * 3) + "]}}",
        "unreferenced": '{"free": [' + ",".join(["0"] * (caps.max_list_unreferenced + 1)) + "]}",
        "total": '{"a": ['
        + ",".join(["[" + ",".join(["0"] * lst) + "]"] * (caps.max_list_total // lst + 1))
        + "]}",
    }


CAPS = Caps(
    max_depth=5,
    max_digits=9,  # -Infinity fits
    max_list=4,
    max_list_total=10,
    per_path={"q5.uavs": 2},
    referenced=frozenset({"a", "a[*]", "q5.uavs", "q5.uavs[*].drops"}),
    max_list_unreferenced=20,
)


@pytest.mark.parametrize("cap", list(_one_violation(CAPS)))
def test_one_past_each_cap_the_same_reason_as_the_tree_walk(cap: str) -> None:
    text = _one_violation(CAPS)[cap]
    scan, tree = _by_scan(text, CAPS), _by_tree(text, CAPS)
    assert scan.startswith("refused: ") and "cap of" in scan, scan
    if cap not in ("digits", "exponent", "total"):  # the same words, not just a refusal
        assert scan == tree
    else:
        assert tree.startswith("refused")


def test_at_each_cap_accepted() -> None:
    c = CAPS
    d = c.max_depth
    at = [
        '{"a": [1, 2.' + "5" * (c.max_digits - 2) + "]}",
        '{"a": -' + "1" * (c.max_digits - 4) + "e+7}",
        '{"a": NaN, "b": -Infinity, "c": 1e999999}',
        '{"a": ' + "[" * (d - 2) + "{}" + "]" * (d - 2) + "}",
        '{"b": ' + '{"c": ' * (d - 3) + '[{"x": 1}, {}]' + "}" * (d - 3) + "}",
        '{"a": [' + ",".join(["{}"] * c.max_list) + "]}",
        '{"q5": {"uavs": [{"drops": [1, 2, 3, 4]}, {"drops": []}]}}',
        '{"free": [' + ",".join(["0"] * c.max_list_unreferenced) + "]}",
        '{"a": [' + ",".join(["[0, 0]"] * 3) + "]}",  # 3 + 6 entries of the 10 in all
    ]
    for text in at:
        assert _by_scan(text, c) == "ok", text
        assert _by_tree(text, c) == "ok", text


def test_nothing_is_built_for_an_input_over_a_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parser is never reached: the decoder is replaced by one that fails."""

    def no_tree(*args: object) -> object:
        raise AssertionError("a tree was about to be built")

    monkeypatch.setattr(bounds, "_decoder", no_tree)
    for cap, text in _one_violation(CAPS).items():
        with pytest.raises(ArtifactError) as info:
            read_artifact(text, CAPS)
        assert isinstance(info.value.__cause__, BoundsError), cap
    very_deep = '{"a": ' + "[" * 500_000 + "]" * 500_000 + "}"
    with pytest.raises(ArtifactError, match=r"nested deeper than the cap of 32 \(at a\[\*\]"):
        read_artifact(very_deep)


def test_the_first_violation_in_the_text_is_the_reason() -> None:
    long, deep = "7" * (CAPS.max_digits + 1), "[" * 6 + "]" * 6
    assert "a number has" in _by_scan(f'{{"a": {long}, "b": {deep}}}', CAPS)
    assert "nested deeper" in _by_scan(f'{{"a": {deep}, "b": {long}}}', CAPS)
    many = "[" + ",".join(["0"] * 30) + "]"
    assert _by_scan(f'{{"free": {many}, "b": [1,]}}', CAPS).startswith("refused: list free")
    assert _by_scan(f'{{"b": [1,], "free": {many}}}', CAPS) == "not JSON"  # json says why
    with pytest.raises(ArtifactError, match="not valid JSON"):
        read_artifact(f'{{"b": [1,], "free": {many}}}', CAPS)


def test_a_list_a_duplicate_key_replaces_still_counts() -> None:
    """json keeps the last of two equal keys, so the tree never held the first list; the
    text did, and parsing it cost as much: refused."""
    text = '{"free": [' + ",".join(["0"] * 30) + '], "free": 1}'
    assert _by_tree(text, CAPS) == "ok"
    assert _by_scan(text, CAPS).startswith("refused: list free has 30 entries")


def test_escaped_keys_name_the_same_path() -> None:
    """A key spelled with escapes is the same key: its per-path cap applies."""
    text = '{"q\\u0035": {"\\u0075avs": [{}, {}, {}]}}'
    assert _by_scan(text, CAPS) == "refused: list q5.uavs has 3 entries, over the cap of 2"


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "\\ud800", "\\udc00": 1}',  # lone surrogates, as json reads them
        '{"a": "x\\u0000\\"\\\\"}',
        '{"a": 1e999999, "b": -0.0E-0}',
    ],
)
def test_what_json_reads_the_scan_reads(text: str) -> None:
    assert bounds.prescan(text, CAPS) is True
    json.loads(text)


@pytest.mark.parametrize(
    "text", ['{"a": "\x01"}', '{"a": 01}', '{"a": 1.}', '{"a": .5}', '{"a": tru}', "{} x", ""]
)
def test_what_json_refuses_the_scan_leaves_to_the_parser(text: str) -> None:
    assert bounds.prescan(text, CAPS) is False
    with pytest.raises(ValueError):
        json.loads(text)
