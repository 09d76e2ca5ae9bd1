"""Model-traffic proxy for CLI agents that run INSIDE the sandbox.

The sandbox has no network. The host side of this proxy listens on a Unix socket in a
private temp dir that is bound into the sandbox at /run/tbmm; inside, a stdlib-only
forwarder (FORWARDER_SOURCE) listens on 127.0.0.1:PORT of the sandbox's own loopback and
pipes each connection to that socket. So the CLI's only way out is HTTP to the model
provider, through us: we inject the real API key (the sandbox only ever sees a
placeholder), retry 429/5xx/connection errors with backoff, log every exchange to the
trajectory (parsed by harness.agents.exchanges: only the new part of each request, the model's
turn, the usage and its cost), and add up tokens and cost from the provider's usage fields.
A request that still fails after the retries (unreachable, 429/5xx) or that the provider
rejects as unauthorised / unknown (401/403/404) is recorded in `failures`: the trial is then
an infrastructure `error`, not a score, except a rejection the runner's own probe of the
endpoint does not confirm, which is the agent's failure (harness.agents.errors).

The proxy is an attack surface of the host, so it relays only what agents need: the
endpoints in `ENDPOINTS` (method + path, per provider), request bodies with a
Content-Length of at most `max_request_bytes` (checked before reading; a body that arrives
slower than `read_timeout` is dropped), responses cut at `max_response_bytes`, and at most
`max_connections` connections at a time (each costs a host thread).

The proxy also pins what the entry is (`pin_body`, `ModelProxy._headers`): a request body
must be one JSON object whose `model` is the entry's `--model`, else it is refused (400)
without reaching the provider; the body is re-serialised from what was checked, so the
provider parses exactly that; a tool the provider would run itself (web search, MCP, code
execution) or a service tier billed apart (`unpinned_feature`) is refused likewise; only
the headers in `FORWARD_HEADERS` (and query parameters in `QUERY_PARAMS`) pass, the auth
header being the harness's own key; fields that name an end user to the provider
(`IDENTITY_FIELDS`: claude-code's `metadata.user_id`, OpenAI's `user` and
`safety_identifier`) are dropped from the body (`drop_identity`). Per-trial caps (`harness.agents.usage.TrialCaps`) on
requests, tokens and cost end the trial of an agent that asks for more than its budget
(`on_stop`), recorded as its own failure (`stopped`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import shutil
import socketserver
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from harness.agents.errors import InfraError, status_kind
from harness.agents.exchanges import RequestLog, api_of, request_items, response_turn
from harness.agents.trajectory import Trajectory
from harness.agents.usage import ResponseUsage, TrialCaps, UsageTotals

SANDBOX_DIR = "/run/tbmm"
SOCKET_NAME = "model.sock"
FORWARDER_NAME = "fwd.py"
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
LOG_CAP = 256 * 1024  # raw body text kept when it could not be parsed
RAW_CAP = 16 * 1024  # raw body text kept beside a parsed exchange
MiB = 1024 * 1024

# What an agent may call, per provider: (method, path relative to the provider's base URL).
# OpenAI's base URL carries the version (https://api.openai.com/v1); Anthropic's does not.
ENDPOINTS: dict[str, tuple[tuple[str, str], ...]] = {
    "openai": (("POST", "/chat/completions"), ("POST", "/responses")),
    "anthropic": (("POST", "/v1/messages"),),
}
MAX_REQUEST_BYTES = 32 * MiB  # long contexts with images; far above any real request
MAX_RESPONSE_BYTES = 64 * MiB
MAX_CONNECTIONS = 32
READ_TIMEOUT_S = 60.0
DRAIN_S = 10.0  # close() waits this long at most for exchanges in flight
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
_HOP |= {"proxy-authorization", "proxy-connection", "content-length", "accept-encoding"}

# Request headers an agent may send upstream, per provider (lower case): what the three API
# styles need to be understood (content negotiation, API version and beta features), nothing
# that picks an account, project, organisation or region to bill (OpenAI-Organization,
# OpenAI-Project), carries credentials (Authorization, x-api-key: the harness sets its own)
# or identifies the sandbox (SDK telemetry, cookies). Content-Type is always set by the proxy
# (the body it sends is JSON it serialised itself).
FORWARD_HEADERS: dict[str, frozenset[str]] = {
    "openai": frozenset({"accept", "user-agent", "openai-beta"}),
    "anthropic": frozenset({"accept", "user-agent", "anthropic-version", "anthropic-beta"}),
}
# Anthropic beta features dropped from `anthropic-beta`: priced apart from the model's row
# (the 1M-token context is billed at a premium above 200k tokens: the recorded cost would
# be wrong).
PRICED_BETAS = ("context-1m",)
# Service tiers priced as the model table prices the model (others, e.g. OpenAI's
# "priority" or "flex", are billed at other rates and are refused).
SERVICE_TIERS: dict[str, frozenset[str | None]] = {
    "chat": frozenset({None, "auto", "default"}),
    "responses": frozenset({None, "auto", "default"}),
    "anthropic": frozenset({None, "auto", "standard_only"}),
}
# Request body fields that name the end user to the provider, per API style: dropped before
# the request goes upstream. The key's owner is the one user the provider bills; these are
# the agent's to fill with anything. claude-code puts a JSON text in Anthropic's
# `metadata.user_id` holding a device id (its config's, fresh per trial in our sandbox but
# stable on any HOME that persists: it identifies the machine), the OAuth account's uuid
# (empty with an API key; the account itself where claude-code is logged in) and its
# session id. A stable id would also let the provider link a benchmark's trials to each
# other. Anthropic's `metadata` holds nothing but `user_id` (the API refuses other keys),
# so the whole object goes; OpenAI's `user` and `safety_identifier` likewise. Kept:
# `prompt_cache_key` (cache routing: without it the cache hits, and so the recorded cost,
# would change; codex sets its own session id, no more identifying than the session).
IDENTITY_FIELDS: dict[str, tuple[str, ...]] = {
    "chat": ("user", "safety_identifier"),
    "responses": ("user", "safety_identifier"),
    "anthropic": ("metadata",),
}
# Query parameters passed on (claude-code asks /v1/messages?beta=true); others are dropped.
QUERY_PARAMS: dict[str, frozenset[str]] = {
    "openai": frozenset(),
    "anthropic": frozenset({"beta"}),
}

FORWARDER_MAX_CONNECTIONS = 64  # at a time; more wait in the listen backlog
FORWARDER_SOURCE = '''\
"""tbmm in-sandbox forwarder: 127.0.0.1:PORT -> unix socket (stdlib only).

One thread, one selector loop: no thread per connection, so nothing to fail when the
sandbox's pids or memory run out (a thread per connection died with ~24 connections held
under a 1 GiB limit). At most MAX connections at a time (more wait in the backlog), each
with two bounded buffers; a failure (accept, connect, memory) drops that connection only.
"""
import errno
import selectors
import socket
import sys
import time

port, sock_path, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
MAX = int(sys.argv[4]) if len(sys.argv) > 4 else 64
CHUNK = 65536
sel = selectors.DefaultSelector()


class Pipe:
    """One direction of a connection: bytes read from src wait in buf for dst."""

    def __init__(self, src, dst):
        self.src, self.dst, self.buf, self.eof, self.shut = src, dst, b"", False, False


class Conn:
    def __init__(self, client, up):
        self.socks = (client, up)
        self.pipes = (Pipe(client, up), Pipe(up, client))
        self.closed = False

    def interest(self, sock):
        ev = 0
        for p in self.pipes:
            if p.src is sock and not p.eof and len(p.buf) < CHUNK:
                ev |= selectors.EVENT_READ
            if p.dst is sock and p.buf:
                ev |= selectors.EVENT_WRITE
        return ev

    def update(self):
        if all(p.eof and not p.buf for p in self.pipes):
            return self.close()
        for s in self.socks:
            ev = self.interest(s)
            key = sel.get_map().get(s.fileno())
            if ev and key is None:
                sel.register(s, ev, self)
            elif ev and key.events != ev:
                sel.modify(s, ev, self)
            elif not ev and key is not None:
                sel.unregister(s)

    def step(self, sock, mask):
        # Each direction fails on its own: the proxy may answer (say 503) and close before
        # reading the request; that answer still reaches the client.
        for p in self.pipes:
            if mask & selectors.EVENT_READ and p.src is sock and not p.eof:
                try:
                    data = sock.recv(CHUNK - len(p.buf))
                except (BlockingIOError, InterruptedError):
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    p.eof = True
                elif data:
                    p.buf += data
            if mask & selectors.EVENT_WRITE and p.dst is sock and p.buf:
                try:
                    p.buf = p.buf[sock.send(p.buf):]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    p.buf, p.eof = b"", True
            if p.eof and not p.buf and not p.shut:
                p.shut = True
                try:
                    p.dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        self.update()

    def close(self):
        if self.closed:
            return
        self.closed = True
        for s in self.socks:
            if sel.get_map().get(s.fileno()) is not None:
                sel.unregister(s)
            s.close()
        live.discard(self)


def accept():
    client, _ = srv.accept()
    try:
        up = socket.socket(socket.AF_UNIX)
    except BaseException:
        client.close()
        raise
    try:
        up.connect(sock_path)  # blocking: on a full backlog it waits, where a timeout fails
        up.setblocking(False)
        client.setblocking(False)
    except BaseException:
        up.close()
        client.close()
        raise
    conn = Conn(client, up)
    live.add(conn)
    conn.update()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(128)
srv.setblocking(False)
live = set()
listening = False
paused_until = 0.0
open(ready, "w").close()
while True:
    try:
        want = len(live) < MAX and time.monotonic() >= paused_until
        if want != listening:
            (sel.register(srv, selectors.EVENT_READ, None) if want else sel.unregister(srv))
            listening = want
        for key, mask in sel.select(timeout=0.5):
            if key.data is None:
                try:
                    accept()
                except (BlockingIOError, InterruptedError):
                    pass
                except (OSError, MemoryError) as exc:
                    # out of descriptors or memory, or the proxy refused: let others finish
                    if getattr(exc, "errno", None) in (errno.EMFILE, errno.ENFILE, None):
                        paused_until = time.monotonic() + 0.2
            else:
                try:
                    key.data.step(key.fileobj, mask)
                except Exception:
                    key.data.close()
    except MemoryError:
        time.sleep(0.05)
'''


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key[:100]!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def pin_body(body: bytes, model: str | None) -> tuple[bytes, dict[str, Any]] | str:
    """The body to send upstream and its parsed object, or why the request is refused.

    A mismatching `model` is refused rather than rewritten to the entry's model. Rewriting
    would send a request the agent did not write (parameters meant for another model then
    fail upstream for reasons nobody asked for) and would hide that the agent tried; a
    refusal costs nothing upstream, is recorded in the trajectory, and the agent may go on
    with the entry's model. The CLI templates are configured to call only `--model` (side
    and "small" models included), so a refusal means the agent itself chose another model:
    its own failure, never an infrastructure error. An entry without a model pins nothing,
    so every request is refused.

    Parser differentials cannot smuggle another model past the check: the body must be UTF-8
    JSON with one object at the top, no duplicate key at any depth, no NaN/Infinity and no
    out-of-range number, and what goes upstream is that object serialised again (ASCII)."""
    if model is None:
        return "this entry names no model (--model): the proxy pins every request to it"
    try:
        doc = json.loads(
            body.decode("utf-8"),
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite,
        )
    except (ValueError, RecursionError) as exc:
        return f"the request body is not a JSON document this proxy accepts: {str(exc)[:200]}"
    if not isinstance(doc, dict):
        return "the request body must be a JSON object"
    asked = doc.get("model")
    if asked != model:
        shown = json.dumps(asked)[:200] if "model" in doc else "no model"
        return f"this entry's model is {model!r}; the request asked for {shown}"
    try:
        return json.dumps(doc, ensure_ascii=True).encode(), doc
    except (ValueError, RecursionError) as exc:  # nesting deep enough to exhaust the stack
        return f"the request body cannot be serialised again: {str(exc)[:200]}"


# Tools an agent may declare, per API style: those its own program runs (in the sandbox).
# A tool the provider runs itself reaches the network (web search, web fetch, remote MCP
# servers), runs code on the provider's machines, or calls another model (image
# generation): the sandbox has no network, so neither has the model. (type names, prefixes
# of versioned type names); an Anthropic tool without a type is a client tool.
CLIENT_TOOLS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "chat": (frozenset({"function", "custom"}), ()),
    "responses": (
        frozenset({"function", "custom", "local_shell", "shell", "apply_patch", "namespace"}),
        (),
    ),
    "anthropic": (frozenset({"custom"}), ("bash_", "text_editor_", "computer_", "memory_")),
}
# Request fields that switch on provider-side network or execution without a tool entry.
HOSTED_FIELDS: dict[str, tuple[str, ...]] = {
    "chat": ("web_search_options",),
    "responses": (),
    "anthropic": ("mcp_servers", "container"),
}


def unpinned_feature(api: str | None, doc: dict[str, Any]) -> str | None:
    """Why the request is refused for asking the provider to run a tool or to bill at
    another rate (a `service_tier` outside `SERVICE_TIERS`), or None.

    Only tools the agent's program executes pass (`CLIENT_TOOLS`, a Responses `namespace`
    when every tool in it does); any other type, a malformed tool list, or a field of
    `HOSTED_FIELDS` is refused. codex declares a `web_search` tool unless told not to
    (the template does; with its sandbox bypassed it would be a live search)."""
    if api not in CLIENT_TOOLS:
        return None
    tier = doc.get("service_tier")
    if tier not in SERVICE_TIERS[api]:
        return f"service tier {json.dumps(tier)[:60]} is billed apart from the model's prices"
    for name in HOSTED_FIELDS[api]:
        if name in doc:
            return f"{name!r} asks the provider to reach the network or run code for the agent"
    return _tools_refusal(api, doc.get("tools", []), 0)


def drop_identity(api: str | None, doc: dict[str, Any]) -> list[str]:
    """Remove the `IDENTITY_FIELDS` of `api` from the request object, in place, whatever
    their value (a malformed one too: the provider would still read it before refusing it);
    returns the names removed."""
    names = [k for k in IDENTITY_FIELDS.get(api or "", ()) if k in doc]
    for k in names:
        del doc[k]
    return names


def _tools_refusal(api: str, tools: Any, depth: int) -> str | None:
    if not isinstance(tools, list) or depth > 4:
        return "'tools' must be a list of tool objects"
    names, prefixes = CLIENT_TOOLS[api]
    for tool in tools:
        if not isinstance(tool, dict):
            return "'tools' must be a list of tool objects"
        kind = tool.get("type", "custom" if api == "anthropic" else None)
        if not isinstance(kind, str):
            return "a tool without a type"
        if kind == "namespace":
            if "namespace" in names:
                why = _tools_refusal(api, tool.get("tools", []), depth + 1)
                if why is None:
                    continue
                return why
        elif kind in names or kind.startswith(prefixes):
            continue
        return (
            f"tool type {kind[:80]!r} runs on the provider's side (network or code "
            "outside the sandbox): only tools the agent runs itself are relayed"
        )
    return None


@dataclass(frozen=True)
class Upstream:
    """Where the real provider is and how to authenticate to it."""

    base_url: str  # e.g. https://api.openai.com/v1
    api_key: str | None
    auth: str = "bearer"  # "bearer" (Authorization) | "x-api-key" (Anthropic)
    provider: str = "openai"  # key of ENDPOINTS

    def allowed(self, method: str, path: str) -> bool:
        """Whether `method path` (as the sandbox sent it, query string allowed) is one of
        the provider's endpoints. Exact match: no normalisation that '..' or '//' could use."""
        bare = path.split("?", 1)[0]
        prefix = self.prefix
        if prefix and bare.startswith(prefix + "/"):
            bare = bare[len(prefix) :]
        return (method, bare) in ENDPOINTS.get(self.provider, ())

    @property
    def parts(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.base_url)

    @property
    def prefix(self) -> str:
        return self.parts.path.rstrip("/")

    def target(self, path: str) -> str:
        """Request path upstream: keep it if it already carries the base path; only the
        query parameters of `QUERY_PARAMS` stay."""
        bare, _, query = path.partition("?")
        keep = QUERY_PARAMS.get(self.provider, frozenset())
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        query = urllib.parse.urlencode([(k, v) for k, v in pairs if k in keep])
        prefix = self.prefix
        if prefix and not (bare == prefix or bare.startswith(prefix + "/")):
            bare = prefix + bare
        return bare + (f"?{query}" if query else "")


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """One thread per connection, at most `proxy.max_connections` of them: beyond that a
    connection is answered 503 and closed before any thread is started for it."""

    daemon_threads = True
    request_queue_size = 128  # a burst of connections waits to be accepted (or answered 503)
    proxy: ModelProxy

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.proxy.slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                request.sendall(_BUSY)
            self.shutdown_request(request)
            return
        self.proxy._handling(+1)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.proxy.slots.release()
            self.proxy._handling(-1)
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.proxy.slots.release()
            self.proxy._handling(-1)


_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n\r\n"
    b'{"error": {"message": "too many connections to the model proxy", "type": "tbmm_proxy"}}'
)


class _Handler(BaseHTTPRequestHandler):
    server: _UnixHTTPServer
    protocol_version = "HTTP/1.0"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.proxy.read_timeout)

    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _relay(self) -> None:
        px = self.server.proxy
        body = self._body(px)
        if body is not None:
            px.admit(self, body)

    def _body(self, px: ModelProxy) -> bytes | None:
        """The request body, or None after answering an error: checks come before reading."""
        if not px.upstream.allowed(self.command, self.path):
            px.refuse(self, 403, f"{self.command} {self.path[:200]} is not a model endpoint")
            return None
        if self.headers.get("Transfer-Encoding"):
            px.refuse(self, 411, "chunked request bodies are not accepted: send Content-Length")
            return None
        raw = self.headers.get("Content-Length")
        if raw is None:
            px.refuse(self, 411, "Content-Length is required")
            return None
        if not raw.strip().isdigit():
            px.refuse(self, 400, f"bad Content-Length {raw[:40]!r}")
            return None
        length = int(raw)
        if length > px.max_request_bytes:
            px.refuse(self, 413, f"request body of {length} bytes is over {px.max_request_bytes}")
            return None
        try:
            body = self.rfile.read(length)  # at most `length` (<= the cap), even if more comes
        except TimeoutError:
            px.refuse(self, 408, f"request body not received within {px.read_timeout:g} s")
            return None
        if len(body) < length:
            px.refuse(self, 400, f"request body ended after {len(body)} of {length} bytes")
            return None
        return body

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _relay


class ModelProxy:
    """Host side of the proxy. Use as a context manager; `dir` is bound into the sandbox."""

    def __init__(
        self,
        upstream: Upstream,
        *,
        trajectory: Trajectory | None = None,
        totals: UsageTotals | None = None,
        max_retries: int = 6,
        backoff_s: float = 1.0,
        timeout_s: float = 600.0,
        max_request_bytes: int = MAX_REQUEST_BYTES,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        max_connections: int = MAX_CONNECTIONS,
        read_timeout: float = READ_TIMEOUT_S,
        model: str | None = None,
        caps: TrialCaps | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        self.upstream = upstream
        self.model = model  # the entry's --model: every request must name it (pin_body)
        self.caps = caps or TrialCaps()
        self.on_stop = on_stop  # ends the agent's run once its budget is spent
        self.stopped: str | None = None  # why the budget ended the trial, if it did
        self.refusals: list[str] = []  # why requests were refused (model pin, hosted tools)
        self.sent = 0  # requests admitted upstream (a retry is the same request)
        self._admit_lock = threading.Lock()
        self.trajectory = trajectory
        self.totals = totals or UsageTotals()
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.max_request_bytes = max_request_bytes
        self.max_response_bytes = max_response_bytes
        self.read_timeout = read_timeout
        self.slots = threading.BoundedSemaphore(max_connections)
        self._idle = threading.Condition()
        self._active = 0  # connections being handled (close waits for them)
        self.failures: list[InfraError] = []  # infrastructure failures seen (harness.agents.errors)
        self._requests = RequestLog()
        self._log_lock = threading.Lock()
        self.dir = Path(tempfile.mkdtemp(prefix="tbmm-px-"))
        (self.dir / FORWARDER_NAME).write_text(FORWARDER_SOURCE)
        self._server = _UnixHTTPServer(str(self.dir / SOCKET_NAME), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ModelProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, then let the exchanges in flight finish (bounded by `DRAIN_S`):
        a rejection is recorded with the upstream's words once its body has been relayed,
        which can be after the agent, having read that body, has already exited."""
        self._server.shutdown()
        with self._idle:
            self._idle.wait_for(lambda: self._active == 0, timeout=DRAIN_S)
        self._server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _handling(self, delta: int) -> None:
        with self._idle:
            self._active += delta
            if self._active == 0:
                self._idle.notify_all()

    # -- forwarding ---------------------------------------------------------------------
    def _connect(self) -> http.client.HTTPConnection:
        parts = self.upstream.parts
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return cls(parts.hostname or "localhost", parts.port, timeout=self.timeout_s)

    def _headers(self, incoming: Any) -> dict[str, str]:
        """Only `FORWARD_HEADERS` of what the agent sent, then our own key and encoding."""
        allowed = FORWARD_HEADERS.get(self.upstream.provider, frozenset())
        out = {k: v for k, v in incoming.items() if k.lower() in allowed}
        for key in [k for k in out if k.lower() == "anthropic-beta"]:
            kept = [b.strip() for b in out[key].split(",") if b.strip()]
            kept = [b for b in kept if not b.lower().startswith(PRICED_BETAS)]
            if kept:
                out[key] = ",".join(kept)
            else:
                del out[key]
        out["Content-Type"] = "application/json"
        if self.upstream.api_key:
            if self.upstream.auth == "x-api-key":
                out["x-api-key"] = self.upstream.api_key
            else:
                out["Authorization"] = f"Bearer {self.upstream.api_key}"
        out["Accept-Encoding"] = "identity"  # so usage fields can be read
        return out

    def admit(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        """Pin the model, spend the budget, then relay; or refuse without going upstream."""
        pinned = pin_body(body, self.model)
        kind = "model_pin"
        if not isinstance(pinned, str):
            api = api_of(self.upstream.target(handler.path))
            why_feature = unpinned_feature(api, pinned[1])
            if why_feature is not None:
                pinned, kind = why_feature, "feature_pin"
            elif drop_identity(api, pinned[1]):  # what goes upstream is the object without
                pinned = json.dumps(pinned[1], ensure_ascii=True).encode(), pinned[1]
        if isinstance(pinned, str):
            with self._admit_lock:
                self.refusals.append(pinned)
            self.refuse(handler, 400, pinned, kind=kind)
            return
        with self._admit_lock:
            why = self.stopped or self.caps.spent(self.totals, self.sent)
            if why is None:
                self.sent += 1
            first = why is not None and self.stopped is None
            if first:
                self.stopped = why
        if why is not None:
            self.refuse(handler, 403, f"the trial's model budget is spent: {why}", kind="budget")
            if first:
                if self.trajectory is not None:
                    self.trajectory.add("budget_exceeded", cause=why)
                if self.on_stop is not None:
                    self.on_stop()
            return
        self.relay(handler, pinned[0], pinned[1])

    def relay(
        self, handler: BaseHTTPRequestHandler, body: bytes, doc: dict[str, Any] | None = None
    ) -> None:
        start = time.monotonic()
        target = self.upstream.target(handler.path)
        headers = self._headers(handler.headers)
        headers["Content-Length"] = str(len(body))
        attempt = 0
        while True:
            conn = self._connect()
            try:
                conn.request(handler.command, target, body=body, headers=headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if attempt < self.max_retries:
                    attempt += 1
                    time.sleep(self._delay(attempt, None))
                    continue
                self._fail(handler, body, target, f"upstream unreachable: {exc}", start)
                return
            if resp.status in RETRY_STATUS and attempt < self.max_retries:
                resp.read()
                conn.close()
                attempt += 1
                time.sleep(self._delay(attempt, resp.getheader("Retry-After")))
                continue
            break
        kind = status_kind(resp.status)
        failure = None
        if kind is not None:
            failure = InfraError(
                kind,
                f"{handler.command} {target} answered HTTP {resp.status}"
                + (f" after {attempt} retries" if attempt else ""),
                path=target,
            )
        usage = ResponseUsage()
        copy = bytearray()
        cut = False
        try:
            handler.send_response(resp.status, resp.reason)
            for key, value in resp.getheaders():
                if key.lower() not in _HOP:
                    handler.send_header(key, value)
            handler.end_headers()
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                room = self.max_response_bytes - len(copy)
                if len(chunk) > room:
                    chunk, cut = chunk[: max(room, 0)], True
                handler.wfile.write(chunk)
                handler.wfile.flush()
                copy += chunk
                if cut:
                    break  # the connection closes: the client sees a truncated response
        except OSError:
            pass  # the client went away; still account what came back
        finally:
            conn.close()
            if failure is not None:  # recorded whole: with the upstream's own words, if any
                if copy:
                    failure.detail += ": " + _clip(bytes(copy[:300]), 300).replace("\n", " ")
                self.failures.append(failure)
        usage.absorb_body(bytes(copy))
        cost = self.totals.add(usage) if resp.status < 400 else None
        if self.trajectory is not None:
            self._log(
                handler, body, bytes(copy), target, resp.status, attempt, start, usage, cost, cut,
                doc,
            )  # fmt: skip

    def _log(
        self,
        handler: BaseHTTPRequestHandler,
        body: bytes,
        response: bytes,
        target: str,
        status: int,
        retries: int,
        start: float,
        usage: ResponseUsage,
        cost: float | None,
        cut: bool,
        doc: dict[str, Any] | None = None,
    ) -> None:
        """One `http` event: the new request items, the model's turn, usage, clipped raw."""
        assert self.trajectory is not None
        api = api_of(target)
        fields: dict[str, Any] = {"api": api}
        items = None
        if api is not None:
            try:
                items = request_items(api, doc if doc is not None else json.loads(body))
            except (ValueError, RecursionError):
                items = None
        with self._log_lock:  # one delta chain per proxy: log lines in the order computed
            if items is not None:
                prefix, new = self._requests.delta(items)
                fields.update(prefix=prefix, items=new)
            else:
                fields["request"] = _clip(body)
            turn = response_turn(api, response) if api is not None and status < 400 else None
            if turn is not None:
                fields["turn"] = turn
                fields["response"] = _clip(response, RAW_CAP)
            else:
                fields["response"] = _clip(response)
            self.trajectory.add(
                "http",
                method=handler.command,
                path=target,
                status=status,
                retries=retries,
                duration_s=round(time.monotonic() - start, 3),
                usage=usage.as_dict(),
                cost_usd=cost,
                request_bytes=len(body),
                **fields,
                **({"cut": f"response over {self.max_response_bytes} bytes"} if cut else {}),
            )

    def refuse(
        self, handler: BaseHTTPRequestHandler, status: int, why: str, kind: str = "request"
    ) -> None:
        """Answer an error without contacting the provider, and record it (`kind`: what
        refused it: request, model_pin, budget)."""
        _answer_error(handler, status, why)
        if self.trajectory is not None:
            self.trajectory.add(
                "http_refused",
                method=handler.command,
                path=(handler.path or "")[:500],
                status=status,
                error=why,
                refused_by=kind,
            )

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), 60.0)
            except ValueError:
                pass
        return min(self.backoff_s * 2 ** (attempt - 1), 60.0)

    def _fail(
        self, handler: BaseHTTPRequestHandler, body: bytes, target: str, why: str, start: float
    ) -> None:
        self.failures.append(InfraError("endpoint_unreachable", why))
        _answer_error(handler, 502, why)
        if self.trajectory is not None:
            self.trajectory.add(
                "http",
                path=target,
                status=502,
                error=why,
                duration_s=round(time.monotonic() - start, 3),
                request=_clip(body),
            )


def _answer_error(handler: BaseHTTPRequestHandler, status: int, why: str) -> None:
    """The proxy's own error answer (an OpenAI-style error object); a client already gone
    is not an error of ours."""
    msg = json.dumps({"error": {"message": why, "type": "tbmm_proxy"}}).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(msg)))
        handler.end_headers()
        handler.wfile.write(msg)
    except OSError:
        pass


def _clip(data: bytes, cap: int = LOG_CAP) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= cap else text[:cap] + f"...[{len(text) - cap} chars]"
