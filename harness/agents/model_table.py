"""The table of known models (`harness/agents/models.toml`): prices and whether a model takes images.

A model *declares* vision by its row's `vision = true` (in this table, or in a user table
named by `$TBMM_MODELS`, read first). `tbmm run --vision/--no-vision` overrides it for one
sweep; an unknown model gets no images unless `--vision` is given.
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from harness.agents.usage import Pricing

TABLE = Path(__file__).with_name("models.toml")


class ModelRow(BaseModel):
    """One row of the table (see the header of models.toml for every field)."""

    model_config = ConfigDict(extra="forbid")

    match: list[str] = Field(min_length=1)
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    vision: bool = False
    source: str
    checked: str

    @field_validator("match")
    @classmethod
    def _nonempty(cls, v: list[str]) -> list[str]:
        if any(not m.strip() for m in v):
            raise ValueError("empty model pattern")
        return v

    def pricing(self) -> Pricing:
        return Pricing(
            input=self.input,
            output=self.output,
            cache_read=self.cached_input,
            cache_write=self.cache_write,
            source=f"model table ({self.source}, checked {self.checked})",
        )


class ModelTableError(ValueError):
    """The model table cannot be read; the message names the file."""


def _read(path: Path) -> list[ModelRow]:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        return [ModelRow.model_validate(r) for r in doc.get("model", [])]
    except (OSError, tomllib.TOMLDecodeError, ValueError) as exc:
        raise ModelTableError(f"model table {path}: {exc}") from exc


@cache
def _rows(user: str | None) -> tuple[ModelRow, ...]:
    rows: list[ModelRow] = []
    if user:
        rows += _read(Path(user).expanduser())
    return tuple(rows + _read(TABLE))


def rows() -> tuple[ModelRow, ...]:
    """The user's rows ($TBMM_MODELS) first, then the shipped table."""
    return _rows(os.environ.get("TBMM_MODELS") or None)


def lookup(model: str | None) -> ModelRow | None:
    """The first row matching `model` (also tried without each leading `prefix/`, so
    `openrouter/anthropic/claude-sonnet-4` finds the `claude-sonnet-4*` row)."""
    if not model:
        return None
    names = [model]
    rest = model
    while "/" in rest:
        rest = rest.split("/", 1)[1]
        names.append(rest)
    for row in rows():
        for name in names:
            if any(name == m or fnmatch.fnmatchcase(name, m) for m in row.match):
                return row
    return None


def resolve_pricing(
    model: str | None,
    *,
    price_in: float | None = None,
    price_out: float | None = None,
    price_cache_read: float | None = None,
    price_cache_write: float | None = None,
) -> Pricing | None:
    """Prices for a sweep: the table's row for `model`, each --price-* flag overriding its
    field. Without a row, input and output prices must both be given (else None: costs are
    reported unknown, never guessed)."""
    row = lookup(model)
    flags = {
        "input": price_in,
        "output": price_out,
        "cache_read": price_cache_read,
        "cache_write": price_cache_write,
    }
    given = {k: v for k, v in flags.items() if v is not None}
    if row is None:
        if price_in is None or price_out is None:
            return None
        return Pricing(source="--price-* flags", **given)  # type: ignore[arg-type]
    base = row.pricing()
    if not given:
        return base
    merged = {
        "input": base.input,
        "output": base.output,
        "cache_read": base.cache_read,
        "cache_write": base.cache_write,
        **given,
    }
    return Pricing(source=f"{base.source}; overridden by --price-* flags", **merged)


def declares_vision(model: str | None) -> bool:
    row = lookup(model)
    return bool(row is not None and row.vision)
