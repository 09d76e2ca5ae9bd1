"""tbmm.integrations.bodyscan: serve's body scanner finds what json finds, window by window.

Small windows (a few bytes) cut every string, escape, surrogate pair, bracket run and
number somewhere: the spans and decoded strings must still be exactly json's."""

from __future__ import annotations

import json
import random

import pytest

from tbmm.integrations import bodyscan
from tbmm.integrations.bodyscan import BodyError, Scanner, decode_string, verify_body

PIECES = ["a", "é", "\\", '"', "\n", "\t", "\x01", "😀", "\ud83d", "\ude00", "/", "u", "{", "]"]


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))


def _random_value(rng: random.Random, depth: int = 0) -> object:
    r = rng.random()
    if depth > 4 or r < 0.3:
        return rng.choice([1, -2.5e-3, 10**30, True, False, None, _random_string(rng)])
    if r < 0.65:
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {_random_string(rng): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


@pytest.mark.parametrize("window", [16, 17, 64, bodyscan.WINDOW])
def test_spans_and_strings_match_json(monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    monkeypatch.setattr(bodyscan, "WINDOW", window)
    rng = random.Random(window)
    for _ in range(300):
        value = _random_value(rng)
        for ascii_only in (True, False):
            text = json.dumps(value, ensure_ascii=ascii_only, indent=rng.choice([None, 1]))
            raw = text.encode("utf-8", "surrogatepass")
            sc = Scanner(b"  " + raw + b" ")
            a, b = sc.value_span()
            assert (a, b) == (2, 2 + len(raw))
            sc.end()
            s = _random_string(rng) * rng.randint(1, 5)
            tok = json.dumps(s, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
            try:
                expected = json.loads(tok)
            except UnicodeDecodeError:  # a raw surrogate is not UTF-8: a 400 for the body
                with pytest.raises(BodyError, match="UTF-8"):
                    decode_string(tok, 0, len(tok))
                continue
            assert decode_string(tok, 0, len(tok)) == expected
            assert Scanner(tok).string() == expected


def test_items_are_spans_of_the_body() -> None:
    body = (
        b'{"reward": "o_eval", "junk": [1, {"x": "]}"}], "items": ['
        b'{"task": "t1", "artifact": {"a": [1, 2.50], "s": "}"}, "lean": true},'
        b'{"task": "t2", "artifact": "{\\"b\\": 1}"},'
        b'{"completion": "no", "task": "t3", "extra": null}]}'
    )
    items, reward = verify_body(body, max_items=10)
    assert reward == "o_eval"
    assert [i.task for i in items] == ["t1", "t2", "t3"]
    kind, a, b = items[0].artifact  # type: ignore[misc]
    assert kind == "object" and body[a:b] == b'{"a": [1, 2.50], "s": "}"}' and items[0].lean
    kind, a, b = items[1].artifact  # type: ignore[misc]
    assert kind == "text" and decode_string(body, a, b) == '{"b": 1}'
    assert items[2].artifact is None and items[2].completion is not None


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"not json", 400, "not JSON"),
        (b"[1, 2]", 422, "items"),
        (b'{"items": [{"task": "x", "artifact": {}}', 400, "not JSON"),
        (b'{"items": [{"task": "x", "artifact": {"a": "}]}', 400, "not JSON"),
        (b'{"items": [{"task": "x", "artifact": {}}]} x', 400, "extra data"),
        (b'{"items": [{"task": "x", "artifact": [1]}]}', 422, "object or its JSON text"),
        (b'{"items": [{"task": 5, "artifact": {}}]}', 422, "task"),
        (b'{"items": [{"task": "x", "artifact": {}, "lean": 1}]}', 422, "lean"),
        (b'{"items": [], "junk": ' + b"9" * 5000 + b"}", 413, "outside an artifact"),
        (b'{"items": [' + b",".join([b"{}"] * 5) + b"]}", 413, "at most 4 items"),
        (b'{"items": [], "x": [' + b"[[]]," * 100 + b"[]]}", 413, "bracket runs"),
        (b'{"items": [], "x": [' + b"[1, {}]," * 100 + b"[]]}", 413, "bracket runs"),
        (b'{"items": [{"task": "\xff", "artifact": {}}]}', 400, "UTF-8"),
    ],
)
def test_bad_bodies_get_clear_errors(body: bytes, status: int, words: str) -> None:
    with pytest.raises(BodyError) as err:
        verify_body(body, max_items=4, max_steps=150)
    assert err.value.status == status and words in err.value.detail, err.value.detail
