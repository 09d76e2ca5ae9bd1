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
    def cost_usd(self) -> float | None:
        """The trial's cost so far; None when some response could not be costed (unknown is
        never guessed). No response at all costs 0."""
        return None if self._uncosted else self._known_cost
