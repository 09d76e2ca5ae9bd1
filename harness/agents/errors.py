"""Failures classified by who caused them: what makes a trial `error` instead of a score.

An agent's own failure (it wrote nothing, wrote garbage, timed out, its model answered
400 to a request it built) is a result and is scored. A failure of what we provide (the
model endpoint, the proxy, the CLI binary, the sandbox, the harness, a verification that
reached no verdict) says nothing about the agent: the trial is stored with status `error`
and its cause, is not scored, is left out of the leaderboard's means (the entry is marked
partial until it is resolved), and is run again by `tbmm run --resume`.

An upstream rejection (401/403/404) of a request the agent shaped is not taken at its word:
the harness probes the endpoint with its own requests (`harness.agents.preflight.probe_endpoint`:
the pre-flight's model list and model lookup, then a minimal request with the entry's model
to the endpoint the agent was refused on). If the probe passes, the endpoint works for what
the entry is configured with, so the rejection was of the agent's request: the agent's failure
(`AGENT_REJECTED`, scored as a missing artifact). Only a failing probe makes it `error`.
Otherwise an agent could turn a seed it is losing into a retry with one bad request.
"""

from __future__ import annotations

# kind -> what it means (the cause stored on the trial is "<kind>: <detail>")
KINDS: dict[str, str] = {
    "endpoint_unreachable": "the model endpoint could not be reached (after the retries)",
    "endpoint_rejected": "the model endpoint answered 401/403/404 and the harness's own probe "
    "of it failed too (else the agent's failure: AGENT_REJECTED)",
    "endpoint_overloaded": "the model endpoint kept answering 429/5xx until the retries ran out",
    "proxy_failure": "the model proxy or its in-sandbox forwarder failed",
    "binary_missing": "the agent's program is not installed or not runnable in the sandbox",
    "sandbox_start": "the sandbox (or container) could not be started",
    "harness_fault": "the harness raised an exception (a bug of ours, not the agent's)",
    "no_verdict": "the verification reached no verdict (budget exceeded, or the Lean kernel "
    "did not confirm Python: exit code 3)",
}

# exit_reason (and detail prefix) of a trial whose model request the upstream rejected while
# the harness's own probe of the endpoint passed: the agent's failure, scored as missing.
AGENT_REJECTED = "agent_request_rejected"

# HTTP statuses of a model endpoint that are the infrastructure's doing once retries are
# exhausted (the same set the proxy and the llm agent retry), and those that mean the
# credentials or the configured model are wrong.
RETRIED_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
REJECTED_STATUS = frozenset({401, 403, 404})


class InfraError(RuntimeError):
    """Raised (or recorded) when the infrastructure fails a trial; never a score."""

    def __init__(self, kind: str, detail: str, *, path: str | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown infrastructure error kind {kind!r}")
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.path = path  # the upstream path of the request that failed, when known

    @property
    def cause(self) -> str:
        return f"{self.kind}: {self.detail}"


class ConfigError(ValueError):
    """The sweep's configuration is refused before any trial (`tbmm run` exits 2): a replay
    folder that is missing or lacks artifacts, an unknown model, an unusable path."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("configuration refused: " + "; ".join(problems))
        self.problems = problems


class PreflightError(RuntimeError):
    """A check before the sweep failed (endpoint unreachable, binary missing): no trial ran."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("pre-flight check failed: " + "; ".join(problems))
        self.problems = problems


def status_kind(status: int) -> str | None:
    """The infrastructure error kind of a final HTTP status from a model endpoint, if any."""
    if status in REJECTED_STATUS:
        return "endpoint_rejected"
    if status in RETRIED_STATUS:
        return "endpoint_overloaded"
    return None
