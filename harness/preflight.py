"""Pre-flight check of a model endpoint, before any trial of a sweep runs.

A GET of the provider's model list (`{base}/models` for OpenAI-compatible endpoints,
`{base}/v1/models` for Anthropic) with the real key: free, and it tells apart the failures
that would otherwise turn every trial into an infrastructure error. No connection (refused,
DNS, TLS, timeout) -> unreachable; 401/403 -> the key is rejected; any other HTTP answer,
even 404 or 405 from a server without a model list, means the endpoint is there.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

DEFAULT_TIMEOUT = 10.0


def check_endpoint(upstream: Any, timeout: float = DEFAULT_TIMEOUT) -> str | None:
    """None if the endpoint answers; else one line saying what is wrong (kind first)."""
    base = upstream.base_url.rstrip("/")
    url = base + ("/v1/models" if upstream.provider == "anthropic" else "/models")
    headers = {"User-Agent": "tbmm-preflight"}
    if upstream.api_key:
        if upstream.auth == "x-api-key":
            headers["x-api-key"] = upstream.api_key
            headers["anthropic-version"] = "2023-06-01"
        else:
            headers["Authorization"] = f"Bearer {upstream.api_key}"
    req = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            resp.read(1024)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return (
                f"endpoint_rejected: the model endpoint {base} rejected the API key "
                f"(HTTP {exc.code} on GET {url})"
            )
        return None
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return f"endpoint_unreachable: the model endpoint {base} is unreachable ({reason})"
    except ValueError as exc:  # a malformed URL
        return f"endpoint_unreachable: bad model endpoint URL {base!r} ({exc})"
    return None
