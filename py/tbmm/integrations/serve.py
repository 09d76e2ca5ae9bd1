"""`tbmm serve`: an HTTP reward service (FastAPI on uvicorn; extra `tbmm[serve]`).

Endpoints:
* `POST /v1/verify` — a batch of `{task, artifact | completion, lean?}` items → one verdict
  per item (the `tbmm.api.Verdict` model) and its reward;
* `POST /v1/openrlhf` — OpenRLHF's remote reward protocol (`query`, `prompts`, `labels`);
* `GET /v1/tasks`, `GET /healthz`, and the OpenAPI docs at `/docs`.

With a token (`tbmm serve --token`, or $TBMM_SERVE_TOKEN), every /v1/ endpoint needs
`Authorization: Bearer <token>`. The event loop only moves bytes: each body is streamed
into a judging process (`tbmm.integrations.serve_worker`: one request at a time each, with
its own memory and CPU limits), which scans, parses and verifies it; no thread of the
server's process competes with the loop for the GIL, so /healthz answers while a hostile
request is being judged.

A body is read in chunks within a byte cap (413 as soon as it is passed, the rest unread)
and is never parsed as a whole: `tbmm.integrations.bodyscan` finds each item's artifact by its byte
span, and each artifact is read from exactly those bytes (an object's own text, or the
decoded string) through the same caps (`tbmm.core.bounds`: bytes first, then digits, depth,
lists) and pipeline as `tbmm verify`, one at a time: the same input, the same verdict and
reason, and at most one artifact within its caps is a Python tree at any moment, built
only after `tbmm.core.bounds.prescan` has checked every cap on its text. Each request has a
CPU budget (REQUEST_CPU_BUDGET_S, 503 past it); there are `--workers` judging processes
(default: one per core), each loading a task once, so at most that many requests are
judged at once and the others wait unread.
"""

from __future__ import annotations

import contextlib
import hmac
import os
from typing import Any, Literal

from pydantic import BaseModel, Field

from tbmm.core import bounds
from tbmm.integrations import bodyscan

try:  # the `serve` extra; FastAPI resolves the endpoint annotations from this module
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse, Response
except ImportError:  # pragma: no cover - depends on the install
    FastAPI = Request = JSONResponse = Response = None  # type: ignore[assignment,misc]

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_ITEMS = 4096
# CPU seconds (the request thread's) for reading and judging one request; one artifact
# has its own, smaller budget inside (tbmm.core.bounds.DEFAULT_BUDGET_S), and Lean its own.
REQUEST_CPU_BUDGET_S = 600.0
TOKEN_ENV = "TBMM_SERVE_TOKEN"  # when set (or `tbmm serve --token`), /v1/* needs it
WORKERS_ENV = "TBMM_SERVE_WORKERS"  # judging processes (`tbmm serve --workers`)


class VerifyItem(BaseModel):
    """One artifact (or a model completion holding one) of one task."""

    task: str = Field(description="task slug, e.g. mcm-2025-b-juneau-tourism")
    artifact: dict[str, Any] | str | None = Field(
        default=None, description="the JSON artifact (object, or its text)"
    )
    completion: str | None = Field(
        default=None, description="a model completion; the JSON answer is extracted from it"
    )
    lean: bool = Field(default=False, description="also check the Lean certificate (slower)")


class VerifyRequest(BaseModel):
    items: list[VerifyItem] = Field(max_length=MAX_ITEMS)
    reward: Literal["skill", "o_eval", "robust_bo"] = Field(
        default="skill",
        description="skill over the task's naive floor (default), or the paper's O-Eval / Robust BO-Eval",
    )


class VerifyResponse(BaseModel):
    rewards: list[float]
    verdicts: list[dict[str, Any]]


class HttpError(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def _artifact_bytes(body: bytes | bytearray, span: tuple[str, int, int]) -> bytes:
    """An item's artifact as the bytes `tbmm verify` would read: an object is its own text
    in the body, a string is its decoded text (lone surrogates kept as the invalid UTF-8
    they stand for, so the reader calls them unreadable as it would in a file)."""
    kind, a, b = span
    if kind == "object":
        return memoryview(body)[a:b].tobytes()
    return bodyscan.decode_string(body, a, b).encode("utf-8", "surrogatepass")


def verify_items(
    body: bytes | bytearray,
    items: list[bodyscan.Item],
    reward: str,
    budget_s: float = REQUEST_CPU_BUDGET_S,
    lean_guard: Any = contextlib.nullcontext,
) -> dict[str, Any]:
    """Verdicts and rewards of the scanned items of `body`, in order (an unknown task is
    an unreadable verdict). One artifact at a time is read (within its task's caps) and
    judged; items asking for Lean are kernel-checked together, in ONE Lean run per
    request, and the others never wait for Lean. The request's CPU (this thread's, as for
    every budget of tbmm.core.bounds) is checked between items: past `budget_s` the request
    ends with 503 and no verdicts, never a partial or a guessed one. `lean_guard()` is
    entered around the Lean run (the judging process lifts its memory limit there)."""
    from tbmm.api import load_task, verify, verify_completion, verify_many
    from tbmm.rewards import FLOOR, reward_of

    start = bounds.cpu_now()
    verdicts: list[Any] = [None] * len(items)
    # items asking for Lean, artifacts and completions alike: (index, task, payload, completion)
    lean_items: list[tuple[int, Any, Any, bool]] = []
    for k, it in enumerate(items):
        spent = bounds.cpu_now() - start
        if spent > budget_s:
            raise HttpError(
                503,
                f"the request spent its CPU budget of {budget_s:g} s after {k} of "
                f"{len(items)} items; send smaller batches",
            )
        assert it.task is not None
        try:
            task = load_task(it.task)
        except KeyError:
            verdicts[k] = {"task": it.task, "status": "unknown_task", "error": "unknown task"}
            continue
        if it.completion is not None:
            _, a, b = it.completion
            payload: Any = bodyscan.decode_string(body, a, b)
        else:
            assert it.artifact is not None
            payload = _artifact_bytes(body, it.artifact)
        if it.lean:
            lean_items.append((k, task, payload, it.completion is not None))
        elif it.completion is not None:
            verdicts[k] = verify_completion(task, payload)
        else:
            verdicts[k] = verify(task, payload)
        del payload
    if lean_items:  # all of them in ONE Lean run
        with lean_guard():
            done = verify_many(
                [(t, p) for _, t, p, _ in lean_items],
                lean=True,
                completions=[c for *_, c in lean_items],
            )
        for (k, _, _, _), v in zip(lean_items, done, strict=True):
            verdicts[k] = v
    rewards = [
        FLOOR[reward] if isinstance(v, dict) else reward_of(v, reward)  # type: ignore[arg-type]
        for v in verdicts
    ]
    return {
        "rewards": rewards,
        "verdicts": [v if isinstance(v, dict) else v.model_dump(mode="json") for v in verdicts],
    }


def create_app(pool: Any = None) -> Any:
    """The ASGI app (FastAPI); `pool`: its judging processes (a serve_worker.Pool; default
    `--workers` of them, with the default limits)."""
    if FastAPI is None:  # pragma: no cover - depends on the install
        raise RuntimeError("tbmm serve needs the `serve` extra: pip install 'tbmm[serve]'")

    import tbmm
    from tbmm.integrations.serve_worker import BodyTooLarge, Pool, WorkerGone

    if pool is None:
        pool = Pool(int(os.environ.get(WORKERS_ENV) or 0) or (os.cpu_count() or 1))

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> Any:
        pool.start()  # the judging processes start with the server, and end with it
        try:
            yield
        finally:
            pool.close()

    app = FastAPI(
        title="TB-MathModel reward service",
        version=tbmm.__version__,
        description="Exact, gate-checked verdicts and rewards for TB-MathModel artifacts.",
        lifespan=lifespan,
    )
    app.state.pool = pool

    async def _judge(request: Request, op: bytes) -> Response:
        """Stream the body into a judging process and relay its answer: the loop moves
        bytes and nothing else (413 as soon as the body passes MAX_BODY_BYTES, the rest
        unread)."""
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            raise HttpError(413, f"the body exceeds {MAX_BODY_BYTES} bytes")
        try:
            status, answer, peak_kib = await pool.run(op, request.stream(), MAX_BODY_BYTES)
        except BodyTooLarge as exc:
            raise HttpError(413, str(exc)) from exc
        except WorkerGone as exc:
            raise HttpError(503, f"{exc}; no verdict") from exc
        return Response(
            answer,
            status_code=status,
            media_type="application/json",
            headers={"x-tbmm-worker-peak-rss-kib": str(peak_kib)},
        )

    token = os.environ.get(TOKEN_ENV) or None

    @app.middleware("http")
    async def _auth(request: Request, call_next: Any) -> Any:
        """Bearer-token authentication of every /v1/ endpoint when a token is configured
        (compared in constant time); /healthz stays open for load balancers."""
        if token is not None and request.url.path.startswith("/v1/"):
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return JSONResponse(
                    {"error": "missing or wrong bearer token"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)

    @app.exception_handler(HttpError)
    async def _http_error(_: Request, exc: HttpError) -> JSONResponse:
        return JSONResponse({"error": exc.detail}, status_code=exc.status)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:  # on the loop itself: no thread to wait for
        return {"ok": True, "version": tbmm.__version__, "pid": os.getpid(), "workers": pool.pids()}

    @app.get("/v1/tasks")
    def list_tasks() -> list[dict[str, Any]]:
        from tbmm.api import tasks

        return [t.model_dump(mode="json") for t in tasks()]

    @app.post(
        "/v1/verify",
        # documented, not re-validated: the verdicts are already pydantic models, and a
        # second validation of every verdict dict cost more than scoring it
        responses={200: {"model": VerifyResponse}},
        response_class=Response,
        openapi_extra={
            "requestBody": {
                "content": {"application/json": {"schema": VerifyRequest.model_json_schema()}},
                "required": True,
            }
        },
    )
    async def verify_batch(request: Request) -> Response:
        from tbmm.integrations.serve_worker import OP_VERIFY

        return await _judge(request, OP_VERIFY)

    @app.post("/v1/openrlhf")
    async def openrlhf(request: Request) -> Response:
        from tbmm.integrations.serve_worker import OP_OPENRLHF

        return await _judge(request, OP_OPENRLHF)

    return app


def run(host: str, port: int, workers: int) -> None:
    """Serve with uvicorn: one process runs the event loop, `workers` judging processes
    (started by it) the verification."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise RuntimeError("tbmm serve needs the `serve` extra: pip install 'tbmm[serve]'") from exc
    os.environ[WORKERS_ENV] = str(workers)
    uvicorn.run(
        "tbmm.integrations.serve:create_app",
        factory=True,
        host=host,
        port=port,
        workers=1,
        log_level="warning",
        access_log=False,
    )
