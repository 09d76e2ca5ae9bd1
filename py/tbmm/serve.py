"""`tbmm serve`: an HTTP reward service (FastAPI on uvicorn; extra `tbmm[serve]`).

Endpoints:
* `POST /v1/verify` — a batch of `{task, artifact | completion, lean?}` items → one verdict
  per item (the `tbmm.api.Verdict` model) and its reward;
* `POST /v1/openrlhf` — OpenRLHF's remote reward protocol (`query`, `prompts`, `labels`);
* `GET /v1/tasks`, `GET /healthz`, and the OpenAPI docs at `/docs`.

With a token (`tbmm serve --token`, or $TBMM_SERVE_TOKEN), every /v1/ endpoint needs
`Authorization: Bearer <token>`. Parsing and verification run in a worker thread, off the
event loop, so /healthz answers while a large request is being judged.

Request bodies are read as bytes and parsed exactly (numbers keep their decimal text, as
in every other entry point), within a body cap and an item cap; each artifact then goes
through the same input caps and pipeline as `tbmm verify`. Workers are processes
(`--workers`, default: one per core), each loading a task once.
"""

from __future__ import annotations

import hmac
import json
import os
from typing import Any, Literal

from pydantic import BaseModel, Field

from tbmm import exact

try:  # the `serve` extra; FastAPI resolves the endpoint annotations from this module
    from fastapi import FastAPI, Request
    from fastapi.concurrency import run_in_threadpool
    from fastapi.responses import JSONResponse, Response
except ImportError:  # pragma: no cover - depends on the install
    FastAPI = Request = JSONResponse = Response = run_in_threadpool = None  # type: ignore[assignment,misc]

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_ITEMS = 4096
TOKEN_ENV = "TBMM_SERVE_TOKEN"  # when set (or `tbmm serve --token`), /v1/* needs it


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


def _items(doc: Any) -> tuple[list[dict[str, Any]], str]:
    """Validate a parsed /v1/verify body (exact tree) into plain items."""
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise HttpError(422, "the body must be an object with an `items` list")
    reward = doc.get("reward", "skill")
    if reward not in ("skill", "o_eval", "robust_bo"):
        raise HttpError(422, "reward must be skill, o_eval or robust_bo")
    if len(doc["items"]) > MAX_ITEMS:
        raise HttpError(413, f"at most {MAX_ITEMS} items per request")
    out = []
    for i, it in enumerate(doc["items"]):
        if not isinstance(it, dict) or not isinstance(it.get("task"), str):
            raise HttpError(422, f"items[{i}]: needs a `task` slug")
        art, comp = it.get("artifact"), it.get("completion")
        if (art is None) == (comp is None):
            raise HttpError(422, f"items[{i}]: give exactly one of `artifact` or `completion`")
        if comp is not None and not isinstance(comp, str):
            raise HttpError(422, f"items[{i}]: `completion` must be a string")
        if art is not None and not isinstance(art, dict | str):
            raise HttpError(422, f"items[{i}]: `artifact` must be an object or its JSON text")
        lean = it.get("lean", False)
        if not isinstance(lean, bool):
            raise HttpError(422, f"items[{i}]: `lean` must be a boolean")
        out.append({"task": it["task"], "artifact": art, "completion": comp, "lean": lean})
    return out, reward


def verify_items(items: list[dict[str, Any]], reward: str) -> dict[str, Any]:
    """Verdicts and rewards of validated items, in order (an unknown task is an unreadable
    verdict). Items asking for Lean are kernel-checked together, in ONE Lean run per
    request; the others never wait for Lean."""
    from tbmm.api import load_task, verify, verify_completion, verify_many
    from tbmm.rewards import FLOOR, reward_of

    verdicts: list[Any] = [None] * len(items)
    lean_art: list[tuple[int, Any, Any]] = []
    lean_comp: list[tuple[int, Any, Any]] = []
    for k, it in enumerate(items):
        try:
            task = load_task(it["task"])
        except KeyError:
            verdicts[k] = {"task": it["task"], "status": "unknown_task", "error": "unknown task"}
            continue
        if it["completion"] is not None:
            payload = it["completion"]
        else:
            art = it["artifact"]
            payload = (
                art.encode()
                if isinstance(art, str)
                else exact.dumps(art, indent=None, faithful=True).encode()
            )
        if it["lean"]:
            (lean_comp if it["completion"] is not None else lean_art).append((k, task, payload))
        elif it["completion"] is not None:
            verdicts[k] = verify_completion(task, payload)
        else:
            verdicts[k] = verify(task, payload)
    for group, completions in ((lean_art, False), (lean_comp, True)):
        if group:
            done = verify_many([(t, p) for _, t, p in group], lean=True, completions=completions)
            for (k, _, _), v in zip(group, done, strict=True):
                verdicts[k] = v
    rewards = [
        FLOOR[reward] if isinstance(v, dict) else reward_of(v, reward)  # type: ignore[arg-type]
        for v in verdicts
    ]
    return {
        "rewards": rewards,
        "verdicts": [v if isinstance(v, dict) else v.model_dump(mode="json") for v in verdicts],
    }


def create_app() -> Any:
    """The ASGI app (FastAPI)."""
    if FastAPI is None:  # pragma: no cover - depends on the install
        raise RuntimeError("tbmm serve needs the `serve` extra: pip install 'tbmm[serve]'")

    import tbmm

    app = FastAPI(
        title="TB-MathModel reward service",
        version=tbmm.__version__,
        description="Exact, gate-checked verdicts and rewards for TB-MathModel artifacts.",
    )

    async def _read(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            raise HttpError(413, f"the body exceeds {MAX_BODY_BYTES} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise HttpError(413, f"the body exceeds {MAX_BODY_BYTES} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _parse(raw: bytes) -> Any:
        try:
            return exact.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise HttpError(400, f"the body is not JSON: {exc}") from exc

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
    def healthz() -> dict[str, Any]:
        return {"ok": True, "version": tbmm.__version__, "pid": os.getpid()}

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
        raw = await _read(request)

        def work() -> bytes:  # parsing and verification off the event loop
            items, reward = _items(_parse(raw))
            return json.dumps(verify_items(items, reward), separators=(",", ":")).encode()

        return Response(await run_in_threadpool(work), media_type="application/json")

    @app.post("/v1/openrlhf")
    async def openrlhf(request: Request) -> dict[str, Any]:
        from tbmm.rewards import openrlhf_reward

        raw = await _read(request)

        def work() -> dict[str, Any]:
            try:
                return openrlhf_reward(_plain(_parse(raw)))
            except ValueError as exc:
                raise HttpError(422, str(exc)) from exc

        return await run_in_threadpool(work)

    return app


def _plain(doc: Any) -> Any:
    """An exact tree as plain Python (strings stay strings; numbers become their text)."""
    if isinstance(doc, dict):
        return {k: _plain(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_plain(v) for v in doc]
    if isinstance(doc, exact.Num | exact.NonFinite):
        return str(doc)
    return doc


def run(host: str, port: int, workers: int) -> None:
    """Serve with uvicorn (worker processes share nothing but the port)."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise RuntimeError("tbmm serve needs the `serve` extra: pip install 'tbmm[serve]'") from exc
    uvicorn.run(
        "tbmm.serve:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        access_log=False,
    )
