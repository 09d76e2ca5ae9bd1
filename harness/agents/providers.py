"""The provider table (`harness/agents/providers.toml`): `--model PROVIDER/NAME` -> where to send it.

A route says everything a model agent needs to reach its model: the base URL, the key's
environment variable, and the API style (Chat Completions, Responses, Anthropic Messages).
The entry keeps the model as given (`openai/gpt-5`); only NAME goes upstream. Resolution
is done before any trial, so an unknown provider or an unset key refuses the sweep (exit 2)
with nothing stored, instead of turning every trial into an infrastructure error.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TABLE = Path(__file__).with_name("providers.toml")
API_STYLES = ("chat", "responses", "anthropic")
ApiStyle = Literal["chat", "responses", "anthropic"]
# API style -> the proxy's provider family (harness.agents.proxy.ENDPOINTS) and its auth header
FAMILY: dict[str, str] = {"chat": "openai", "responses": "openai", "anthropic": "anthropic"}
AUTH: dict[str, str] = {"openai": "bearer", "anthropic": "x-api-key"}
LEGACY_BASE = "https://api.openai.com/v1"


class ProviderRow(BaseModel):
    """One provider (see the header of providers.toml for every field)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(min_length=1)
    base_url_env: str | None = None
    key_env: str = Field(min_length=1)
    key_required: bool = True
    api: ApiStyle
    apis: list[ApiStyle] = Field(min_length=1)
    docs: str = ""

    @model_validator(mode="after")
    def _default_api_served(self) -> ProviderRow:
        if self.api not in self.apis:
            raise ValueError(f"api {self.api!r} is not in apis {self.apis}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url {self.base_url!r} is not an http(s) URL")
        return self


class ProviderError(ValueError):
    """The model cannot be routed (unknown provider, unset key, unserved API style, an
    unreadable table); `tbmm run` refuses with exit 2 before any trial."""


@cache
def _table(path: str) -> dict[str, ProviderRow]:
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        rows = doc.get("provider", {})
        if not isinstance(rows, dict):
            raise ValueError("[provider.NAME] tables expected")
        return {name: ProviderRow.model_validate(r) for name, r in rows.items()}
    except (OSError, tomllib.TOMLDecodeError, ValueError) as exc:
        raise ProviderError(f"provider table {path}: {exc}") from exc


def providers() -> dict[str, ProviderRow]:
    """The shipped table (a user table named by $TBMM_PROVIDERS replaces rows by name)."""
    out = dict(_table(str(TABLE)))
    user = os.environ.get("TBMM_PROVIDERS")
    if user:
        out.update(_table(str(Path(user).expanduser())))
    return out


@dataclass(frozen=True)
class ModelRoute:
    """Where one `--model` goes. `label` is the entry's model (as given), `name` what the
    requests carry; `provider` None for a bare name (OpenAI-compatible, as before)."""

    label: str
    name: str
    provider: str | None
    base_url: str
    key_env: str
    key_required: bool
    api: str

    @property
    def family(self) -> str:
        """The proxy's provider family of this route's API style (openai | anthropic)."""
        return FAMILY[self.api]

    @property
    def auth(self) -> str:
        return AUTH[self.family]

    def api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        return (os.environ if env is None else env).get(self.key_env) or None

    def key_problem(self, env: Mapping[str, str] | None = None) -> str | None:
        """Why the key is missing (only when the provider needs one), or None."""
        if self.key_required and not self.api_key(env):
            return (
                f"--model {self.label}: the API key variable ${self.key_env} of provider "
                f"{self.provider!r} is unset or empty (export it, or name another with "
                "--api-key-env)"
            )
        return None


def split(model: str) -> tuple[str | None, str]:
    """(provider, name) when the text before the first "/" is a known provider, else
    (None, model)."""
    head, sep, rest = model.partition("/")
    if sep and rest and head in providers():
        return head, rest
    return None, model


def bare_route(
    model: str,
    *,
    base_url: str | None = None,
    api: str | None = None,
    api_key_env: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelRoute:
    """A model name without a provider: an OpenAI-compatible server at `base_url`, else
    $OPENAI_BASE_URL, else OpenAI; key from `api_key_env` (default OPENAI_API_KEY) when set."""
    environ = os.environ if env is None else env
    return ModelRoute(
        label=model,
        name=model,
        provider=None,
        base_url=base_url or environ.get("OPENAI_BASE_URL") or LEGACY_BASE,
        key_env=api_key_env or "OPENAI_API_KEY",
        key_required=False,
        api=api or "chat",
    )


def resolve(
    model: str,
    *,
    base_url: str | None = None,
    api: str | None = None,
    api_key_env: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelRoute:
    """The route of `--model` (with `--base-url`, `--api`, `--api-key-env` overriding the
    table). ProviderError when a provider prefix is unknown (a name with a "/" and no
    --base-url), the name after it is empty, or the style is not one the provider serves."""
    environ = os.environ if env is None else env
    if api is not None and api not in API_STYLES:
        raise ProviderError(f"--api {api!r}: one of {', '.join(API_STYLES)}")
    table = providers()
    provider, name = split(model)
    if provider is None:
        head, sep, _ = model.partition("/")
        if sep and head in table:
            raise ProviderError(f"--model {model!r}: no model name after the provider {head!r}")
        if sep and base_url is None:
            raise ProviderError(
                f"--model {model!r}: unknown provider {head!r} (known: {', '.join(sorted(table))}; "
                f"see {TABLE}); a model served under that name by an OpenAI-compatible server "
                "needs --base-url, or write local/NAME"
            )
        if not model.strip():
            raise ProviderError("--model is empty")
        return bare_route(model, base_url=base_url, api=api, api_key_env=api_key_env, env=environ)
    row = table[provider]
    style = api or row.api
    if style not in row.apis:
        raise ProviderError(
            f"--model {model}: provider {provider!r} does not serve the {style!r} API "
            f"(it serves {', '.join(row.apis)}; see {TABLE})"
        )
    url = base_url or (environ.get(row.base_url_env) if row.base_url_env else None) or row.base_url
    return ModelRoute(
        label=model,
        name=name,
        provider=provider,
        base_url=url,
        key_env=api_key_env or row.key_env,
        key_required=row.key_required,
        api=style,
    )
