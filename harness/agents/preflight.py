"""The harness's own probe of a model endpoint: before any trial of a sweep (the pre-flight),
and before an upstream rejection during a trial is called an infrastructure error.

A GET of the provider's model list (`{base}/models` for OpenAI-compatible endpoints,
`{base}/v1/models` for Anthropic) with the real key: free, and it tells apart the failures
that would otherwise turn every trial into an infrastructure error. No connection (refused,
DNS, TLS, timeout) -> unreachable; 401/403 -> the key is rejected; any other HTTP answer,
even 404 or 405 from a server without a model list, means the endpoint is there.

Given the entry's model, the model itself is then looked up (`GET .../models/<model>`, which
both providers answer for any model the key may use, aliases included). The model is
unknown when that lookup answers 404 while the list answered 200 with ids that do not
include it; a lookup answering 401/403 means the key may not use the model. A server with
no model list cannot tell: the pre-flight passes, the strict probe does not (below).

After an upstream rejection (401/403/404) during a trial, the runner also sends the harness's
own minimal request to the endpoint the agent was refused on (`check_request`: "Reply with
OK." with the entry's model and at most 16 output tokens, so a few tokens of cost that are
the harness's, not the trial's): if the endpoint refuses that too (a model the endpoint does
not serve, say a Responses-only model on chat completions), the rejection was not the
agent's doing.

`strict` (the in-trial probe) passes only when the model list answered 2xx: a 429/5xx, or a
404/405 from a server without a model list (or a base URL that is wrong), fails it, since a
probe that confirmed nothing cannot vouch for the endpoint; the rejection is then an
infrastructure `error` (an entry left with errors is partial, so this cannot raise a rank).
The pre-flight is lenient there (a sweep against a server without a model list may run).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from harness.agents.errors import REJECTED_STATUS, RETRIED_STATUS
from harness.agents.exchanges import api_of

DEFAULT_TIMEOUT = 10.0
LIST_CAP = 4 * 1024 * 1024  # bytes of a model list read (ids are looked up in it)


def _get(url: str, headers: dict[str, str], timeout: float) -> tuple[int, bytes]:
    """(HTTP status, body up to LIST_CAP); connection failures raise (OSError, ValueError)."""
    req = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read(LIST_CAP)
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def _auth(upstream: Any) -> dict[str, str]:
    if not upstream.api_key:
        return {}
    if upstream.auth == "x-api-key":
        return {"x-api-key": upstream.api_key, "anthropic-version": "2023-06-01"}
    return {"Authorization": f"Bearer {upstream.api_key}"}


PROMPT = "Reply with OK."
PROBE_TOKENS = 16  # the Responses API's minimum output cap
PROBE_TIMEOUT = 120.0


def _probe_body(api: str, model: str) -> dict[str, Any]:
    """The smallest well-formed request of each API, with the entry's model."""
    if api == "responses":
        return {"model": model, "input": PROMPT, "max_output_tokens": PROBE_TOKENS}
    msgs = [{"role": "user", "content": PROMPT}]
    if api == "anthropic":
        return {"model": model, "max_tokens": PROBE_TOKENS, "messages": msgs}
    return {"model": model, "messages": msgs, "max_completion_tokens": PROBE_TOKENS}


def check_request(
    upstream: Any, model: str | None, path: str, timeout: float = PROBE_TIMEOUT
) -> str | None:
    """The harness's own request to `path` (a model endpoint of the upstream, as the proxy
    sent the agent's: an absolute path on its host) with the entry's `model`: None if the
    endpoint takes it (2xx, or 400/422: the route and the model are there, a parameter was
    not to its taste), else one line, kind first. Nothing to send without a model or for a
    path that is not one of the provider's endpoints (the GET probe then decides)."""
    bare = path.split("?", 1)[0]
    api = api_of(bare)
    if not model or api is None or not upstream.allowed("POST", bare):
        return None
    parts = urllib.parse.urlsplit(upstream.base_url)
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, bare, "", ""))
    data = json.dumps(_probe_body(api, model)).encode()
    headers = {"User-Agent": "tbmm-probe", "Content-Type": "application/json"}
    headers.update(_auth(upstream))
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read(LIST_CAP)
        return None
    except urllib.error.HTTPError as exc:
        status, why = exc.code, exc.read(300).decode(errors="replace").replace("\n", " ")
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"endpoint_unreachable: the harness's own request to {url} got no answer ({reason})"
    if status in REJECTED_STATUS:
        return (
            f"endpoint_rejected: the harness's own request (model {model!r}) to {url} was "
            f"refused too: HTTP {status}: {why}"
        )
    if status in RETRIED_STATUS:
        return f"endpoint_overloaded: the harness's own request to {url} got HTTP {status}"
    return None


def _model_ids(body: bytes) -> set[str] | None:
    """Ids of an OpenAI/Anthropic model list (`{"data": [{"id": ...}, ...]}`), or None."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    ids = {str(m["id"]) for m in data if isinstance(m, dict) and "id" in m}
    return ids or None


def check_endpoint(
    upstream: Any,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    model: str | None = None,
    strict: bool = False,
) -> str | None:
    """None if the endpoint answers (and knows `model`, as far as it says); else one line
    saying what is wrong, its harness.agents.errors kind first."""
    base = upstream.base_url.rstrip("/")
    url = base + ("/v1/models" if upstream.provider == "anthropic" else "/models")
    headers = {"User-Agent": "tbmm-preflight", **_auth(upstream)}
    at = url
    try:
        status, body = _get(url, headers, timeout)
        if status in (401, 403):
            return (
                f"endpoint_rejected: the model endpoint {base} rejected the API key "
                f"(HTTP {status} on GET {url})"
            )
        if strict and status in RETRIED_STATUS:
            return f"endpoint_overloaded: the model endpoint {base} answered HTTP {status} on GET {url}"
        if strict and not 200 <= status < 300:
            return (
                f"endpoint_rejected: the model endpoint {base} did not confirm the key: HTTP "
                f"{status} on GET {url} (no model list, so the probe vouches for nothing)"
            )
        if not model:
            return None
        at = url + "/" + urllib.parse.quote(model, safe="")
        got, _ = _get(at, headers, timeout)
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"endpoint_unreachable: the model endpoint {base} is unreachable ({reason})"
    except ValueError as exc:  # a malformed URL
        return f"endpoint_unreachable: bad model endpoint URL {base!r} ({exc})"
    if got in (401, 403):
        return (
            f"endpoint_rejected: the model endpoint {base} refuses model {model!r} to this key "
            f"(HTTP {got} on GET {at})"
        )
    if strict and got in RETRIED_STATUS:
        return f"endpoint_overloaded: the model endpoint {base} answered HTTP {got} on GET {at}"
    if got == 404 and status == 200:
        ids = _model_ids(body)
        if ids is not None and model not in ids:
            return (
                f"endpoint_rejected: the model endpoint {base} does not know model {model!r} "
                f"(HTTP 404 on GET {at}, and its model list does not name it)"
            )
    return None


def probe_endpoint(upstream: Any, model: str | None, paths: Sequence[str] = ()) -> str | None:
    """The in-trial probe: `check_endpoint` strictly, then `check_request` on each path the
    agent was refused on (at most 3). None: the endpoint works for the entry's configuration,
    so a rejection was of the agent's request."""
    why = check_endpoint(upstream, model=model, strict=True)
    for path in list(dict.fromkeys(paths))[:3]:
        why = why or check_request(upstream, model, path)
    return why
