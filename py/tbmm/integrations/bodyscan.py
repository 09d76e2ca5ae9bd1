"""Reading a `tbmm serve` request body without building a Python tree of it.

A body is up to 64 MiB of JSON, and a Python tree of 60 MiB of numbers is 2-3 GiB. So the
body is never parsed as a whole: a scanner walks its envelope (`{"items": [{"task": ...,
"artifact": ...}, ...], "reward": ...}`) with compiled regular expressions and records,
for each item, the byte span of its artifact (an object: the object's own text; a JSON
string: the string token) or completion. Values of keys serve does not use are skipped by
span, never built. Each artifact is then read on its own, from exactly the bytes it was
sent as, through the same caps (`tbmm.core.bounds`) and pipeline as `tbmm verify`: the byte cap
before any parsing, so an item over a cap gets the verdict the command line gives for
the same text, and only one artifact within its caps is ever a tree at a time.

Skipping a value costs one regex step per run of brackets and per stretch between two
(strings, numbers, commas and whitespace are passed over inside the regex engine, at
most a window at a time); the envelope one per key and string. A body needing more than
`max_steps` of them is refused (413) before they are taken, a deterministic bound on the
scan's work that no honest batch comes near.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Every regex runs over at most WINDOW bytes per call: a C call holds the GIL, and the
# event loop (/healthz) must get it back within milliseconds, whatever the body holds.
WINDOW = 1 << 20
_MIN_WINDOW = 16  # a window always holds a whole escape and a surrogate pair


def _window() -> int:
    return max(WINDOW, _MIN_WINDOW)

# JSON whitespace, a strict string's body (what json accepts), a scalar's characters and
# its grammar (a number or literal)
_WS = re.compile(rb"[ \t\n\r]*+")
_STRING_BODY = re.compile(rb'(?:[^"\\\x00-\x1f]++|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*+')
_SCALAR_CHARS = re.compile(rb"[-+.0-9a-zA-Z]*+")
_SCALAR = re.compile(
    rb"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?|true|false|null|NaN|-?Infinity"
)
MAX_SCALAR = 4096  # bytes of a number or literal outside an artifact
# inside a skipped container: a flat stretch (strings, numbers, separators, and lists or
# objects with no bracket inside: no step for each of a million `[]`), a lone quote (a
# string the window cut, or unterminated), or a run of opening or of closing brackets.
# One step per bracket run and per stretch between (group 1: a stretch).
_FLAT = rb'(?:"(?:[^"\\]++|\\.)*+"|[^"\[\]{}]++)'
_STRUCT = re.compile(
    rb"((?:" + _FLAT + rb"|\[" + _FLAT + rb"*+\]|\{" + _FLAT + rb"*+\})++)|\"|[\[{]++|[\]}]++",
    re.DOTALL,
)

MAX_STEPS = 8_000_000  # regex steps per body: ~1 µs each, ~8 s at most
MAX_SLUG = 256  # bytes of a task slug (an unknown one is echoed back in its verdict)


class BodyError(Exception):
    """The body cannot be read: an HTTP status and a one-line reason."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


@dataclass
class Item:
    """One /v1/verify item, by reference into the body. `artifact` / `completion` are
    ("object" | "text" | "null" | "other", start, end) spans of the raw body."""

    task: str | None = None
    artifact: tuple[str, int, int] | None = None
    completion: tuple[str, int, int] | None = None
    lean: bool | None = False


class Scanner:
    """A cursor over the raw body; every value it does not need is skipped by span."""

    def __init__(self, buf: bytes, max_steps: int = MAX_STEPS) -> None:
        self.buf, self.pos, self.steps, self.max_steps = buf, 0, 0, max_steps

    # -- tokens
    def fail(self, what: str) -> BodyError:
        return BodyError(400, f"the body is not JSON: {what} at byte {self.pos}")

    def ws(self) -> int:
        """Skip whitespace; the next byte (-1 at the end)."""
        self.pos = _run(_WS, self.buf, self.pos)
        return self.buf[self.pos] if self.pos < len(self.buf) else -1

    def expect(self, ch: int) -> None:
        if self.ws() != ch:
            raise self.fail(f"expected {chr(ch)!r}")
        self.pos += 1

    def _step(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise BodyError(
                413,
                f"the body holds more than {self.max_steps} bracket runs and stretches "
                "between them",
            )

    def string_span(self) -> tuple[int, int]:
        """A strict JSON string token (as json reads it), window by window."""
        self.ws()
        buf, n, a = self.buf, len(self.buf), self.pos
        if a >= n or buf[a] != 0x22:
            raise self.fail("expected a string")
        self._step()
        p = a + 1
        while True:
            q = _run(_STRING_BODY, buf, p)
            if q < n and buf[q] == 0x22:
                self.pos = q + 1
                return a, self.pos
            if q + 1 < n and buf[q] == 0x5C and q > p:  # an escape cut by a window's end
                p = q
                continue
            self.pos = q
            raise self.fail("unterminated or invalid string")

    def string(self, limit: int | None = None) -> str:
        a, b = self.string_span()
        if limit is not None and b - a > limit + 2:
            raise BodyError(422, f"a string of {b - a - 2} bytes where at most {limit} fit")
        return decode_string(self.buf, a, b)

    def value_span(self) -> tuple[int, int]:
        """Skip one value of any kind; its span. Containers are matched by bracket depth
        only: a malformed artifact inside balanced brackets is the artifact's problem (it
        is read as text, with the reason the command line gives)."""
        c = self.ws()
        start = self.pos
        if c == 0x22:  # "
            return self.string_span()
        if c not in (0x5B, 0x7B):  # [ {
            end = _run(_SCALAR_CHARS, self.buf, start)
            if end - start > MAX_SCALAR:
                raise BodyError(
                    413, f"a number or literal of {end - start} bytes outside an artifact"
                )
            if _SCALAR.fullmatch(self.buf, start, end) is None:
                raise self.fail("expected a value")
            self.pos = end
            return start, self.pos
        # the opening bracket itself first: a container with no bracket inside would
        # otherwise pass for a flat stretch
        depth, buf, search, step = 1, self.buf, _STRUCT.search, self._step
        p, n = start + 1, len(self.buf)
        while True:
            w = min(p + _window(), n)
            m = search(buf, p, w)
            if m is None:
                if w == n:
                    self.pos = n
                    raise self.fail("unterminated array or object")
                p = w
                continue
            step()
            s, e = m.span()
            first = buf[s]
            if m.start(1) >= 0:  # a flat stretch (group 1)
                pass
            elif first == 0x22:  # a string cut by the window, or unterminated
                e = _lenient_string_end(buf, s)
                if e < 0:
                    self.pos = s
                    raise self.fail("unterminated string")
            elif first in (0x5B, 0x7B):
                depth += e - s
            elif e - s >= depth:
                self.pos = s + depth
                return start, self.pos
            else:
                depth -= e - s
            p = e

    # -- structure
    def members(self) -> Any:
        """Iterate over an object's keys (the cursor then stands on the value)."""
        self.expect(0x7B)
        if self.ws() == 0x7D:
            self.pos += 1
            return
        while True:
            key = self.string()
            self.expect(0x3A)
            yield key
            c = self.ws()
            self.pos += 1
            if c == 0x7D:
                return
            if c != 0x2C:
                self.pos -= 1
                raise self.fail("expected ',' or '}'")

    def elements(self) -> Any:
        """Iterate over an array's elements (index; the cursor then stands on the value)."""
        self.expect(0x5B)
        if self.ws() == 0x5D:
            self.pos += 1
            return
        k = 0
        while True:
            yield k
            k += 1
            c = self.ws()
            self.pos += 1
            if c == 0x5D:
                return
            if c != 0x2C:
                self.pos -= 1
                raise self.fail("expected ',' or ']'")

    def end(self) -> None:
        if self.ws() != -1:
            raise self.fail("extra data after the value")

    def kind(self) -> str:
        c = self.ws()
        if c == 0x7B:
            return "object"
        if c == 0x22:
            return "text"
        if c == 0x5B:
            return "other"
        if self.buf.startswith(b"null", self.pos):
            return "null"
        return "other"


def _run(rx: re.Pattern[bytes], buf: bytes | bytearray, p: int) -> int:
    """The end of the longest match of `rx` (a repetition) at `p`, window by window."""
    n = len(buf)
    while True:
        w = min(p + _window(), n)
        q = rx.match(buf, p, w).end()  # type: ignore[union-attr]
        if q < w or w == n or q == p:
            return q
        p = q


_LENIENT_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)


def _lenient_string_end(buf: bytes | bytearray, a: int) -> int:
    """The end of the (lenient) string starting at `a`, or -1 if it never closes."""
    p, n = a + 1, len(buf)
    while True:
        q = _run(_LENIENT_BODY, buf, p)
        if q < n and buf[q] == 0x22:
            return q + 1
        if q + 1 < n and buf[q] == 0x5C and q > p:  # an escape cut by a window's end
            p = q
            continue
        return -1


_HIGH_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}$")


def decode_string(buf: bytes | bytearray, a: int, b: int) -> str:
    """The text of the JSON string token buf[a:b], decoded window by window (json's C
    decoder on pieces cut between characters and escapes, never inside a UTF-8 sequence,
    an escape or a surrogate pair)."""
    if b - a <= _window():
        return _decode(buf[a:b])
    parts, p, end = [], a + 1, b - 1
    while p < end:
        c = min(p + _window(), end)
        if c < end:
            while c > p and buf[c] & 0xC0 == 0x80:  # never inside a UTF-8 sequence
                c -= 1
            k = c
            while k > p and buf[k - 1] == 0x5C:  # a cut right after backslashes
                k -= 1
            if (c - k) % 2:  # an odd run: the last one escapes the byte at c
                c -= 1
            u = buf.rfind(b"\\u", max(p, c - 5), c)
            if u >= 0 and _escaping(buf, p, u):
                c = u  # never inside \uXXXX
            if c - p >= 6 and _HIGH_SURROGATE.search(buf, c - 6, c) and _escaping(buf, p, c - 6):
                c -= 6  # never between the halves of a surrogate pair
        parts.append(_decode(b'"' + bytes(buf[p:c]) + b'"'))
        p = c
    return "".join(parts)


def _escaping(buf: bytes | bytearray, p: int, i: int) -> bool:
    """Whether the backslash at `i` starts an escape (an even run of backslashes before)."""
    k = i
    while k > p and buf[k - 1] == 0x5C:
        k -= 1
    return (i - k) % 2 == 0


def _decode(token: bytes | bytearray) -> str:
    try:
        return json.loads(token)
    except UnicodeDecodeError as exc:
        raise BodyError(400, f"the body is not UTF-8: {exc}") from exc
    except ValueError as exc:
        raise BodyError(400, f"the body is not JSON: {exc}") from exc


def verify_body(buf: bytes, max_items: int, max_steps: int = MAX_STEPS) -> tuple[list[Item], str]:
    """The items (as spans) and the reward of a /v1/verify body, with the same 4xx
    reasons as before for a body of the wrong shape."""
    if buf.startswith(b"\xef\xbb\xbf"):
        raise BodyError(400, "the body is not JSON: a byte-order mark at byte 0")
    sc = Scanner(buf, max_steps)
    if sc.ws() != 0x7B:
        if sc.ws() in (0x5B, 0x22) or _SCALAR.match(buf, sc.pos):
            sc.value_span()
            sc.end()
            raise BodyError(422, "the body must be an object with an `items` list")
        raise sc.fail("expected a value")
    items: list[Item] | None = None
    reward: Any = "skill"
    bad_items = False
    for key in sc.members():
        if key == "items":
            if sc.ws() != 0x5B:
                sc.value_span()
                items, bad_items = None, True
                continue
            items, bad_items = [], False
            for k in sc.elements():
                if k >= max_items:
                    raise BodyError(413, f"at most {max_items} items per request")
                items.append(_item(sc, k))
        elif key == "reward":
            if sc.ws() == 0x22:
                reward = sc.string(limit=64)
            else:
                sc.value_span()
                reward = None
        else:
            sc.value_span()
    sc.end()
    if items is None or bad_items:
        raise BodyError(422, "the body must be an object with an `items` list")
    if reward not in ("skill", "o_eval", "robust_bo"):
        raise BodyError(422, "reward must be skill, o_eval or robust_bo")
    for k, it in enumerate(items):
        _validate(it, k)
    return items, reward


def _item(sc: Scanner, k: int) -> Item:
    it = Item()
    if sc.ws() != 0x7B:
        sc.value_span()
        it.task = None
        return it
    for key in sc.members():
        if key == "task":
            if sc.ws() == 0x22:
                it.task = sc.string(limit=MAX_SLUG)
            else:
                sc.value_span()
                it.task = None
        elif key in ("artifact", "completion"):
            kind = sc.kind()
            a, b = sc.value_span()
            setattr(it, key, None if kind == "null" else (kind, a, b))
        elif key == "lean":
            a, b = sc.value_span()
            tok = sc.buf[a:b]
            it.lean = True if tok == b"true" else False if tok == b"false" else None
        else:
            sc.value_span()
    return it


def _validate(it: Item, i: int) -> None:
    if it.task is None:
        raise BodyError(422, f"items[{i}]: needs a `task` slug")
    if (it.artifact is None) == (it.completion is None):
        raise BodyError(422, f"items[{i}]: give exactly one of `artifact` or `completion`")
    if it.completion is not None and it.completion[0] != "text":
        raise BodyError(422, f"items[{i}]: `completion` must be a string")
    if it.artifact is not None and it.artifact[0] not in ("object", "text"):
        raise BodyError(422, f"items[{i}]: `artifact` must be an object or its JSON text")
    if it.lean is None:
        raise BodyError(422, f"items[{i}]: `lean` must be a boolean")


def string_lists(buf: bytes, keys: tuple[str, ...], max_len: int) -> dict[str, list[str]]:
    """An object body whose `keys` hold lists of strings (OpenRLHF's `query`, `prompts`,
    `labels`); other keys are skipped by span."""
    sc = Scanner(buf)
    out: dict[str, list[str]] = {}
    if sc.ws() != 0x7B:
        raise sc.fail("expected an object")
    for key in sc.members():
        if key not in keys:
            sc.value_span()
            continue
        if sc.ws() != 0x5B:
            raise BodyError(422, f"`{key}` must be a list of strings")
        vals: list[str] = []
        for k in sc.elements():
            if k >= max_len:
                raise BodyError(413, f"at most {max_len} entries in `{key}`")
            if sc.ws() != 0x22:
                raise BodyError(422, f"`{key}` must be a list of strings")
            vals.append(sc.string())
        out[key] = vals
    sc.end()
    return out
