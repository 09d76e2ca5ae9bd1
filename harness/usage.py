"""Token and cost accounting from provider `usage` fields (OpenAI chat/responses, Anthropic).

Streams report usage more than once per response (Anthropic: message_start then cumulative
message_delta), so per response we keep the max of each counter, then add responses up.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

_IN_KEYS = ("prompt_tokens", "input_tokens")
_OUT_KEYS = ("completion_tokens", "output_tokens")
_CACHE_KEYS = ("cache_read_input_tokens", "cache_creation_input_tokens")


@dataclass
class ResponseUsage:
    """Usage of ONE model response (max over the events that report it)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def absorb(self, usage: dict[str, Any]) -> None:
        tin = sum(int(usage.get(k) or 0) for k in _IN_KEYS)
        # Anthropic counts cached prompt tokens separately from input_tokens.
        tin += sum(int(usage.get(k) or 0) for k in _CACHE_KEYS)
        tout = sum(int(usage.get(k) or 0) for k in _OUT_KEYS)
        self.input_tokens = max(self.input_tokens, tin)
        self.output_tokens = max(self.output_tokens, tout)
        cost = usage.get("cost")
        if isinstance(cost, int | float):
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


@dataclass
class UsageTotals:
    """Thread-safe running totals over a trial."""

    price_in_per_mtok: float | None = None
    price_out_per_mtok: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    provider_cost_usd: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, usage: ResponseUsage) -> None:
        with self._lock:
            self.requests += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            if usage.cost_usd is not None:
                self.provider_cost_usd = (self.provider_cost_usd or 0.0) + usage.cost_usd

    @property
    def cost_usd(self) -> float | None:
        """Provider-reported cost if any, else tokens x configured prices, else unknown."""
        if self.provider_cost_usd is not None:
            return self.provider_cost_usd
        if self.price_in_per_mtok is None or self.price_out_per_mtok is None:
            return None
        return (
            self.input_tokens * self.price_in_per_mtok
            + self.output_tokens * self.price_out_per_mtok
        ) / 1e6
