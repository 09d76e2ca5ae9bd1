"""Token and cost accounting from provider `usage` fields (OpenAI chat/responses, Anthropic).

Streams report usage more than once per response (Anthropic: message_start then cumulative
message_delta), so per response we keep the max of each counter, then add responses up.

Token counts kept per response, in one convention whatever the provider:
* `input_tokens`: every prompt token, cached or not (OpenAI's prompt/input tokens already
  include the cached ones; Anthropic's exclude them, so its cache reads and writes are added);
* `cached_tokens`: the part of the prompt read from the provider's cache (OpenAI
  `*_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`);
* `cache_write_tokens`: the part written to the cache (Anthropic `cache_creation_input_tokens`);
* `output_tokens`: generated tokens (reasoning included).
Cost = uncached × input price + cached × cache-read price + written × cache-write price +
output × output price (`Pricing`), unless the provider reported a cost itself.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

_IN_KEYS = ("prompt_tokens", "input_tokens")
_OUT_KEYS = ("completion_tokens", "output_tokens")
_DETAIL_KEYS = ("prompt_tokens_details", "input_tokens_details")


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens. A cache price left None is charged at the input price (the
    conservative choice for a provider that does not discount). `source` says where the
    prices came from (the model table, the --price-* flags, or both)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    source: str = ""

    def cost(self, input_tokens: int, cached: int, cache_write: int, output: int) -> float:
        plain = max(input_tokens - cached - cache_write, 0)
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        return (
            plain * self.input + cached * read + cache_write * write + output * self.output
        ) / 1e6


@dataclass
class ResponseUsage:
    """Usage of ONE model response (max over the events that report it)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None

    def absorb(self, usage: dict[str, Any]) -> None:
        tin = sum(_int(usage.get(k)) for k in _IN_KEYS)
        cached = _int(usage.get("cache_read_input_tokens"))
        written = _int(usage.get("cache_creation_input_tokens"))
        # Anthropic counts cached prompt tokens apart from input_tokens: add them back.
        tin += cached + written
        for key in _DETAIL_KEYS:
            details = usage.get(key)
            if isinstance(details, dict):
                cached = max(cached, _int(details.get("cached_tokens")))
        tout = sum(_int(usage.get(k)) for k in _OUT_KEYS)
        self.input_tokens = max(self.input_tokens, tin)
        self.output_tokens = max(self.output_tokens, tout)
        self.cached_tokens = max(self.cached_tokens, cached)
        self.cache_write_tokens = max(self.cache_write_tokens, written)
        cost = usage.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.cost_usd = max(self.cost_usd or 0.0, float(cost))

    def absorb_doc(self, doc: Any) -> None:
        """Find every `usage` object in a decoded response or stream event."""
        if isinstance(doc, dict):
            for key, value in doc.items():
                if key == "usage" and isinstance(value, dict):
                    self.absorb(value)
                elif isinstance(value, dict | list):
                    self.absorb_doc(value)
        elif isinstance(doc, list):
            for item in doc:
                self.absorb_doc(item)

    def absorb_body(self, body: bytes) -> None:
        """A JSON body or an SSE stream (`data: {...}` lines)."""
        text = body.decode("utf-8", errors="replace")
        try:
            self.absorb_doc(json.loads(text))
            return
        except ValueError:
            pass
        for line in text.splitlines():
            if line.startswith("data:"):
                payload = line[5:].strip()
                if payload and payload != "[DONE]":
                    try:
                        self.absorb_doc(json.loads(payload))
                    except ValueError:
                        continue

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "output_tokens": self.output_tokens,
            **({"provider_cost_usd": self.cost_usd} if self.cost_usd is not None else {}),
        }


def _int(x: Any) -> int:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) and x > 0 else 0


@dataclass
class UsageTotals:
    """Thread-safe running totals over a trial. The runner sets `pricing` before the agent
    starts; each response is costed when it is added (the provider's own figure if it gave
    one, else its tokens x `pricing`), so cached and uncached tokens keep their prices."""

    pricing: Pricing | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    provider_cost_usd: float | None = None
    _known_cost: float = 0.0
    _uncosted: int = 0  # responses with neither a provider cost nor prices
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: ResponseUsage) -> float | None:
        """Add one response; returns its cost (None: unknown)."""
        cost = self.response_cost(usage)
        with self._lock:
            self.requests += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.cached_tokens += usage.cached_tokens
            self.cache_write_tokens += usage.cache_write_tokens
            if usage.cost_usd is not None:
                self.provider_cost_usd = (self.provider_cost_usd or 0.0) + usage.cost_usd
            if cost is None:
                self._uncosted += 1
            else:
                self._known_cost += cost
        return cost

    def response_cost(self, usage: ResponseUsage) -> float | None:
        """One response's cost: the provider's own figure, else tokens x prices, else None."""
        if usage.cost_usd is not None:
            return usage.cost_usd
        if self.pricing is None:
            return None
        return self.pricing.cost(
            usage.input_tokens, usage.cached_tokens, usage.cache_write_tokens, usage.output_tokens
        )

    @property
    def known_cost_usd(self) -> float:
        """The cost of the responses that could be costed (what a cost cap compares)."""
        return self._known_cost

    @property
    def cost_usd(self) -> float | None:
        """The trial's cost so far; None when some response could not be costed (unknown is
        never guessed). No response at all costs 0."""
        return None if self._uncosted else self._known_cost


@dataclass(frozen=True)
class TrialCaps:
    """Per-trial budget of model use (None: no cap): requests sent upstream, tokens (prompt,
    cached included, plus output, as `UsageTotals` counts them) and cost in USD (the
    responses costed so far). A budget is spent when its counter reaches the cap; the next
    request the agent makes is then refused and ends its trial (`exit_reason`
    `budget_exceeded`, the agent's own failure, scored with whatever artifact it wrote).
    Requests already in flight when the budget runs out still complete, so tokens and cost
    can overshoot by at most the responses of the connections open at that moment."""

    requests: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("requests", "tokens", "cost_usd"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"the {name} cap must be positive, not {value!r}")

    def settings(self) -> dict[str, Any]:
        """The caps that are set (part of an entry's identity: they change its scores)."""
        out = {"requests": self.requests, "tokens": self.tokens, "cost_usd": self.cost_usd}
        return {k: v for k, v in out.items() if v is not None}

    def spent(self, totals: UsageTotals, requests: int) -> str | None:
        """Why no further request may go upstream (`requests` sent so far), or None."""
        if self.requests is not None and requests >= self.requests:
            return f"request cap reached: {requests} of {self.requests} requests sent"
        tokens = totals.input_tokens + totals.output_tokens
        if self.tokens is not None and tokens >= self.tokens:
            return f"token cap reached: {tokens} tokens used, cap {self.tokens}"
        cost = totals.known_cost_usd
        if self.cost_usd is not None and cost >= self.cost_usd:
            return f"cost cap reached: {cost:.6f} USD spent, cap {self.cost_usd:g} USD"
        return None
