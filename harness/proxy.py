"""Model-traffic proxy for CLI agents that run INSIDE the sandbox.

The sandbox has no network. The host side of this proxy listens on a Unix socket in a
private temp dir that is bound into the sandbox at /run/tbmm; inside, a stdlib-only
forwarder (FORWARDER_SOURCE) listens on 127.0.0.1:PORT of the sandbox's own loopback and
pipes each connection to that socket. So the CLI's only way out is HTTP to the model
provider, through us: we inject the real API key (the sandbox only ever sees a
placeholder), retry 429/5xx/connection errors with backoff, log every exchange to the
trajectory, and add up tokens and cost from the provider's usage fields.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socketserver
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from harness.trajectory import Trajectory
from harness.usage import ResponseUsage, UsageTotals

SANDBOX_DIR = "/run/tbmm"
SOCKET_NAME = "model.sock"
FORWARDER_NAME = "fwd.py"
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
LOG_CAP = 256 * 1024
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}
_HOP |= {"proxy-authorization", "proxy-connection", "content-length", "accept-encoding"}

FORWARDER_SOURCE = '''\
"""tbmm in-sandbox forwarder: 127.0.0.1:PORT -> unix socket (stdlib only)."""
import socket
import sys
import threading

port, sock_path, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def handle(conn):
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(sock_path)
    except OSError:
        conn.close()
        return
    back = threading.Thread(target=pump, args=(up, conn), daemon=True)
    back.start()
    pump(conn, up)
    back.join()
    conn.close()
    up.close()


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
open(ready, "w").close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
'''


@dataclass(frozen=True)
class Upstream:
    """Where the real provider is and how to authenticate to it."""

    base_url: str  # e.g. https://api.openai.com/v1
    api_key: str | None
    auth: str = "bearer"  # "bearer" (Authorization) | "x-api-key" (Anthropic)

    @property
    def parts(self) -> urllib.parse.SplitResult:
        return urllib.parse.urlsplit(self.base_url)

    @property
    def prefix(self) -> str:
        return self.parts.path.rstrip("/")

    def target(self, path: str) -> str:
        """Request path upstream: keep it if it already carries the base path."""
        prefix = self.prefix
        if prefix and not (path == prefix or path.startswith(prefix + "/")):
            return prefix + path
        return path


class _UnixHTTPServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    proxy: ModelProxy


class _Handler(BaseHTTPRequestHandler):
    server: _UnixHTTPServer
    protocol_version = "HTTP/1.0"

    def address_string(self) -> str:
        return "sandbox"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _relay(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.proxy.relay(self, body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _relay


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
    ) -> None:
        self.upstream = upstream
        self.trajectory = trajectory
        self.totals = totals or UsageTotals()
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
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
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- forwarding ---------------------------------------------------------------------
    def _connect(self) -> http.client.HTTPConnection:
        parts = self.upstream.parts
        cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return cls(parts.hostname or "localhost", parts.port, timeout=self.timeout_s)

    def _headers(self, incoming: Any) -> dict[str, str]:
        out = {k: v for k, v in incoming.items() if k.lower() not in _HOP}
        for key in list(out):
            if key.lower() in ("authorization", "x-api-key"):
                del out[key]
        if self.upstream.api_key:
            if self.upstream.auth == "x-api-key":
                out["x-api-key"] = self.upstream.api_key
            else:
                out["Authorization"] = f"Bearer {self.upstream.api_key}"
        out["Accept-Encoding"] = "identity"  # so usage fields can be read
        return out

    def relay(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
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
        usage = ResponseUsage()
        copy = bytearray()
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
                handler.wfile.write(chunk)
                handler.wfile.flush()
                copy += chunk
        except OSError:
            pass  # the client went away; still account what came back
        finally:
            conn.close()
        usage.absorb_body(bytes(copy))
        if resp.status < 400:
            self.totals.add(usage)
        if self.trajectory is not None:
            self.trajectory.add(
                "http",
                method=handler.command,
                path=target,
                status=resp.status,
                retries=attempt,
                duration_s=round(time.monotonic() - start, 3),
                usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
                request=_clip(body),
                response=_clip(bytes(copy)),
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
        msg = json.dumps({"error": {"message": why, "type": "tbmm_proxy"}}).encode()
        try:
            handler.send_response(502)
            handler.send_header("Content-Type", "application/json")
            handler.end_headers()
            handler.wfile.write(msg)
        except OSError:
            pass
        if self.trajectory is not None:
            self.trajectory.add(
                "http",
                path=target,
                status=502,
                error=why,
                duration_s=round(time.monotonic() - start, 3),
                request=_clip(body),
            )


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= LOG_CAP else text[:LOG_CAP] + f"...[{len(text) - LOG_CAP} chars]"
