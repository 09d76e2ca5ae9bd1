"""Exact numbers from JSON text.

Every number that reaches a verdict enters as a `fractions.Fraction` built from its
decimal text, never through a binary float: `0.1` is exactly 1/10. NaN / Infinity
(which Python's json accepts but JSON does not) become `NonFinite` markers so that
callers can reject them with a reason instead of crashing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from math import gcd
from typing import Any

# A JSON-number-ish literal: optional sign, digits, optional fraction, optional exponent.
_DECIMAL_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
# Exponents beyond this are refused: 1e999999999 would otherwise allocate a huge integer.
MAX_EXPONENT = 400


_new = object.__new__


def fraction(n: int, d: int) -> Fraction:
    """Fraction(n, d) for integers with d > 0: the same normalised value (one gcd).

    `Fraction(n, d)` spends about half its time on type dispatch that integer arguments
    never need; this builds the same object from the reduced pair directly. An interpreter
    whose Fraction is laid out differently gets `Fraction(n, d)` itself (checked once at
    import below, and by tests/test_score_plan.py)."""
    g = gcd(n, d)
    if g != 1:
        n //= g
        d //= g
    f = _new(Fraction)
    f._numerator = n  # type: ignore[attr-defined]
    f._denominator = d  # type: ignore[attr-defined]
    return f


def _layout_ok() -> bool:
    """Whether `fraction` builds real Fractions here (CPython 3.11/3.12: two slots)."""
    try:
        q = fraction(-10, 4)
        return q == Fraction(-5, 2) and hash(q) == hash(Fraction(-5, 2)) and q * 2 == -5
    except (AttributeError, TypeError):
        return False


if not _layout_ok():  # pragma: no cover - depends on the interpreter
    fraction = Fraction  # type: ignore[assignment]  # noqa: F811


class ExactError(ValueError):
    """Raised when a text cannot be read as an exact number."""


@dataclass(frozen=True)
class NonFinite:
    """A NaN or +/-Infinity that appeared in an artifact (not valid JSON, but common)."""

    text: str

    def __str__(self) -> str:
        return self.text


class Num:
    """A JSON number kept with its original text; its exact value is computed on first use.

    The text has already been checked to be a finite decimal within the exponent limit, so
    computing the value cannot fail; numbers an artifact carries but nobody scores or gates
    never pay for a Fraction.
    """

    __slots__ = ("_value", "is_int_literal", "text")

    def __init__(self, value: Fraction | None, text: str, is_int_literal: bool) -> None:
        self._value = value
        self.text = text
        self.is_int_literal = is_int_literal

    @property
    def value(self) -> Fraction:
        if self._value is None:
            self._value = _validated_value(self.text)
        return self._value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Num) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Num({self.text})"

    def __str__(self) -> str:
        return self.text


def parse_decimal(text: str) -> Fraction:
    """Exact value of a decimal literal such as ``"2.00002"`` or ``"8.1e+18"``."""
    t = text.strip()
    if not _DECIMAL_RE.match(t):
        raise ExactError(f"not a decimal number: {text!r}")
    mant, _, exp_text = t.lower().partition("e")
    exp = int(exp_text) if exp_text else 0
    if abs(exp) > MAX_EXPONENT:
        raise ExactError(f"exponent out of range (|e| > {MAX_EXPONENT}): {text!r}")
    whole, _, frac = mant.partition(".")
    sign = -1 if whole.startswith("-") else 1
    digits = int((whole.lstrip("+-") or "0") + frac) if (whole.lstrip("+-") or frac) else 0
    exp -= len(frac)
    if exp >= 0:
        return Fraction(sign * digits * 10**exp)
    return Fraction(sign * digits, 10**-exp)


def _validated_value(text: str) -> Fraction:
    """`parse_decimal` for a literal `_num`/`_int` already validated (no regex again)."""
    if "e" not in text and "E" not in text:
        whole, dot, frac = text.partition(".")
        if not dot:
            return fraction(int(text), 1)
        return fraction(int(whole + frac), 10 ** len(frac))
    low = text.lower()
    mant, _, exp_text = low.partition("e")
    whole, _, frac = mant.partition(".")
    neg = whole.startswith("-")
    digits = int((whole.lstrip("+-") or "0") + frac)
    exp = (int(exp_text) if exp_text else 0) - len(frac)
    if neg:
        digits = -digits
    if exp >= 0:
        return fraction(digits * 10**exp, 1)
    return fraction(digits, 10**-exp)


def _int(text: str) -> Num | NonFinite:
    # JSON integers are plain digit strings; beyond MAX_EXPONENT digits they are refused.
    if len(text) > MAX_EXPONENT:
        return NonFinite(text)
    return Num(None, text, True)


def _num(text: str) -> Num | NonFinite:
    """Validate now (so huge values are flagged at parse time), compute the value lazily.

    Called by the JSON scanner, whose number grammar already holds (`-?digits[.digits]
    [e±digits]`): only the length and the exponent's size are left to check."""
    if len(text) > MAX_EXPONENT:
        return NonFinite(text)
    _, e, exp_text = text.lower().partition("e")
    if e and abs(int(exp_text)) > MAX_EXPONENT:
        return NonFinite(text)
    return Num(None, text, is_int_literal=(not e and "." not in text))


def loads(text: str | bytes) -> Any:
    """Parse JSON keeping every number exact (`Num`) and NaN/Infinity as `NonFinite`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json.loads(
        text,
        parse_float=_num,
        parse_int=_int,
        parse_constant=NonFinite,
    )


def dumps(obj: Any, *, indent: int | None = 2, faithful: bool = False) -> str:
    """Serialise a `loads` tree (or plain data) to JSON with number literals unchanged.

    NaN, Infinity and over-long literals (`NonFinite`) become `null`, unless `faithful`:
    then each is written back as the text it was read from, so that text can be verified
    exactly as if it had been sent as text (the same caps, the same reasons: `tbmm serve`
    receives artifacts as parsed objects and must judge them as `tbmm verify` would)."""
    return _encode(obj, indent, 0, faithful)


def _encode(obj: Any, indent: int | None, level: int, faithful: bool = False) -> str:
    nl = "" if indent is None else "\n"
    pad = "" if indent is None else " " * (indent * (level + 1))
    end = "" if indent is None else " " * (indent * level)
    sep = ", " if indent is None else ","
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [
            f"{pad}{json.dumps(str(k), ensure_ascii=False)}: {_encode(v, indent, level + 1, faithful)}"
            for k, v in obj.items()
        ]
        return "{" + nl + (sep + nl).join(items) + nl + end + "}"
    if isinstance(obj, list | tuple):
        if not obj:
            return "[]"
        items = [f"{pad}{_encode(v, indent, level + 1, faithful)}" for v in obj]
        return "[" + nl + (sep + nl).join(items) + nl + end + "]"
    if isinstance(obj, Num):
        return obj.text
    if isinstance(obj, NonFinite):
        return obj.text if faithful else "null"
    if isinstance(obj, Fraction):
        return fraction_to_text(obj)
    if isinstance(obj, Decimal):
        return str(obj)
    if isinstance(obj, bool) or obj is None:
        return json.dumps(obj)
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return repr(obj)
    return json.dumps(obj, ensure_ascii=False)


_TEXT_CACHE: dict[tuple[int, int], str] = {}


def fraction_to_text(q: Fraction) -> str:
    """Exact text for a rational: a terminating decimal when one exists, else ``p/q``.

    Memoised on (numerator, denominator) for small values (reports render the same
    anchors, bands and bounds for every artifact); the cache is bounded."""
    n, d = q.numerator, q.denominator
    if d == 1:
        return str(n)
    key = (n, d)
    hit = _TEXT_CACHE.get(key)
    if hit is not None:
        return hit
    text = _fraction_text(q)
    if len(_TEXT_CACHE) < 65536 and n.bit_length() + d.bit_length() < 256:
        _TEXT_CACHE[key] = text
    return text


def _fraction_text(q: Fraction) -> str:
    d = q.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return f"{q.numerator}/{q.denominator}"
    digits = max(twos, fives)
    scaled = abs(q.numerator) * (10**digits) // q.denominator
    sign = "-" if q < 0 else ""
    s = str(scaled).rjust(digits + 1, "0")
    return f"{sign}{s[:-digits]}.{s[-digits:]}"


def value_of(node: Any) -> Fraction | None:
    """The exact value of a parsed leaf, or None when it is not a finite number."""
    if isinstance(node, Num):
        return node.value
    return None
