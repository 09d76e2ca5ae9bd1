"""`tbmm view`: a local, read-only web viewer of a results store (FastAPI + Jinja2).

Pages: `/` the leaderboard and the entries, `/entry?id=ENTRY` an entry's trials (and
`/export?id=ENTRY` the entry as a `tbmm runs export` file),
`/trial/N` one trial (harness facts, the verdict: per-metric rewards with their references
and provenance, gate check instances, replayed values with Lean's scope, the Lean result;
the ATIF trajectory step by step; the trial's files), `/trial/N/file/NAME` a stored file.

The agent is hostile: every string it could have written (artifact values, messages, tool
calls, outputs, file names) reaches a page only through Jinja2's autoescaping; pages carry
no script and a Content-Security-Policy that forbids any, and no external URL (no CDN);
stored files are served as text/plain or a sniffed raster image type (never HTML or SVG)
with `nosniff` and a sandboxing CSP. Only the Host names the server was started for are
answered (a DNS-rebinding page cannot read it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from tbmm.core.exact import fraction_to_text
from tbmm.reports import leaderboard as L
from tbmm.reports import leaderboard_render as R
from tbmm.reports.report import anchor_provenance, fmt_exact, reference_text
from tbmm.reports.templating import wrap_path  # noqa: F401 - the viewer's path filter, also public here

CSP = "default-src 'none'; img-src 'self' data:; font-src 'self'; style-src 'unsafe-inline'"
CSP_HEADER = CSP + "; frame-ancestors 'none'"  # frame-ancestors only works as a header
FILE_CSP = "default-src 'none'; sandbox"
PREVIEW_BYTES = 64 * 1024  # text shown inline per file; the whole file is a link away
MAX_TRAJECTORY_BYTES = 64 * 1024 * 1024
IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
FILE_ROLES = {
    "trajectory.json": "ATIF trajectory",
    "events.jsonl": "raw events (HTTP log)",
    "trajectory.jsonl": "raw events (old format)",
    "verdict.json": "verdict (VerifyReport)",
    "stdout.txt": "agent stdout",
    "stderr.txt": "agent stderr",
    "trajectory-error.txt": "why the ATIF conversion failed",
}


def sniff_image(head: bytes) -> str | None:
    """A raster image type from the file's first bytes (never from its name: the agent
    names its files); WebP is RIFF....WEBP."""
    for magic, media in IMAGE_MAGIC:
        if head.startswith(magic):
            return media
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _pct(text: Any) -> str:
    try:
        return L.fmt_fixed(Fraction(str(text)) * 100, 2) + "%"
    except (ValueError, ZeroDivisionError):
        return str(text)


def _text(x: Any) -> str:
    if isinstance(x, str):
        return x
    return json.dumps(x, indent=1, ensure_ascii=False, default=str)


def trajectory_steps(doc: Any) -> list[dict[str, Any]]:
    """ATIF steps as display records: message parts (text or image refs), reasoning, tool
    calls with their arguments as JSON text, observations, metrics. Tolerates a malformed
    file (it is the agent's output, converted): anything unexpected is shown as text."""
    steps = doc.get("steps") if isinstance(doc, dict) else None
    if not isinstance(steps, list):
        return []
    out = []
    for s in steps:
        if not isinstance(s, dict):
            s = {"source": "?", "message": _text(s)}
        msg = s.get("message")
        parts: list[dict[str, Any]] = []
        if isinstance(msg, list):
            for p in msg:
                if isinstance(p, dict) and p.get("type") == "image":
                    src = p.get("source") or {}
                    parts.append({"image": str(src.get("path") or src.get("url") or "image")})
                elif isinstance(p, dict) and p.get("type") == "text":
                    parts.append({"text": str(p.get("text", ""))})
                else:
                    parts.append({"text": _text(p)})
        elif msg not in (None, ""):
            parts.append({"text": _text(msg)})
        calls = [
            {
                "id": str(c.get("tool_call_id", "")),
                "name": str(c.get("function_name", "")),
                "arguments": _text(c.get("arguments")),
            }
            for c in (s.get("tool_calls") or [])
            if isinstance(c, dict)
        ]
        obs = s.get("observation") or {}
        results = [
            {
                "call": str(r.get("source_call_id") or ""),
                "content": _text(r.get("content")),
            }
            for r in (obs.get("results") or [] if isinstance(obs, dict) else [])
            if isinstance(r, dict)
        ]
        out.append(
            {
                "id": s.get("step_id"),
                "source": str(s.get("source", "?")),
                "timestamp": s.get("timestamp"),
                "model": s.get("model_name"),
                "parts": parts,
                "reasoning": _text(s["reasoning_content"]) if s.get("reasoning_content") else "",
                "calls": calls,
                "results": results,
                "metrics": s.get("metrics") if isinstance(s.get("metrics"), dict) else None,
            }
        )
    return out


def verdict_view(rep: Mapping[str, Any], task: Any) -> dict[str, Any]:
    """What the trial page shows of a VerifyReport (JSON dict), with the task's references
    and provenance when the task is in the loaded suite."""
    score = rep.get("score") or {}
    refs = {}
    if task is not None:
        for m in task.metrics:
            r = m.spec.reference
            refs[m.id] = {
                "kind": r.kind if r is not None else "unstated",
                "source": reference_text(r),
            }
    metrics = []
    for m in score.get("metrics") or []:
        metrics.append(
            {
                "id": m.get("id"),
                "path": m.get("path"),
                "direction": m.get("direction"),
                "unit": m.get("unit"),
                "weight": m.get("weight"),
                "anchor": m.get("anchor"),
                "band": m.get("band_effective") or m.get("band"),
                "value": "—" if m.get("value") is None else m.get("value"),
                "reward": "excluded" if m.get("excluded") else fmt_exact(m.get("reward_exact")),
                "reward_exact": m.get("reward_exact"),
                "reason": m.get("reason"),
                "reference": refs.get(str(m.get("id"))),
            }
        )
    g = rep.get("gate_report") or {}
    checks = [
        {
            "instance": c.get("instance"),
            "check": c.get("check"),
            "form": c.get("form"),
            "status": str(c.get("status")),
            "vals": [(k, v) for k, v in (c.get("values") or {}).items()],
            "message": c.get("message"),
        }
        for c in g.get("checks") or []
        if isinstance(c, dict)
    ]
    replay = rep.get("replay") or {}
    scope = rep.get("lean_scope") or {}
    details = replay.get("details") or {}
    replayed = [
        {
            "path": p,
            "value": v,
            "by": (scope.get(p) or {}).get("by", "—"),
            "precision": (scope.get(p) or {}).get("precision", ""),
            "agree": (scope.get(p) or {}).get("agree", ""),
            "detail": details.get(p, ""),
        }
        for p, v in (replay.get("values") or {}).items()
    ]
    lean = rep.get("lean_detail") or {}
    return {
        "status": rep.get("status"),
        "exit_code": rep.get("exit_code"),
        "error": rep.get("error"),
        "o_eval": _pct(rep.get("o_eval_exact", "0")),
        "o_eval_exact": rep.get("o_eval_exact"),
        "raw": fmt_exact(rep.get("raw_exact"), 6),
        "robust_bo": fmt_exact(rep.get("robust_bo_eval_exact"), 4),
        "gate": str(rep.get("gate", "skipped")),
        "lean": str(rep.get("lean", "skipped")),
        "lean_detail": {
            "obligations": lean.get("obligations"),
            "toolchain": lean.get("toolchain"),
            "failing": list(lean.get("failing") or []),
            "gaps": list(lean.get("gaps") or []),
            "error": lean.get("error"),
        },
        "failing": list(rep.get("failing") or []),
        "schema_issues": list(rep.get("schema_issues") or []),
        "metrics": metrics,
        "panel": [
            {
                "paper": p.get("paper_id"),
                "fields": ", ".join(map(str, p.get("fields", []))),
                "score": fmt_exact(p.get("score_exact")),
            }
            for p in score.get("panel") or []
        ],
        "notes": list(score.get("notes") or []),
        "checks": checks,
        "checks_failing": sum(1 for c in checks if c["status"] in ("fail", "bad")),
        "warnings": list(g.get("warnings") or []),
        "replay_penalties": [
            f"{r.get('id')}: {r.get('description')}" for r in g.get("replay_penalties") or []
        ],
        "replay": {
            "module": replay.get("module"),
            "status": replay.get("status"),
            "error": replay.get("error"),
            "notes": list(replay.get("notes") or []),
            "vals": replayed,
            "by_kernel": sum(1 for r in replayed if r["by"] == "lean_kernel"),
        },
        "task_digest": rep.get("task_digest"),
    }


def provenance_view(task: Any) -> list[tuple[str, Any]]:
    if task is None:
        return []
    ga = task.gate.anchor
    return [
        *anchor_provenance(task),
        (
            "anchor feasibility",
            "passes its own gate" if ga.feasible else f"infeasible: {ga.evidence}",
        ),
        ("task data digest", task.verdict_digest),
    ]


class ViewerData:
    """Reads the store per request (it may be written by a run meanwhile); the suite is
    loaded once."""

    def __init__(self, db: Path, tasks_root: Path | None = None) -> None:
        from tbmm.suite.tasks import TASKS_ROOT, load_suite

        self.db = Path(db)
        self.tasks = load_suite(tasks_root or TASKS_ROOT)
        self.by_slug = {t.slug: t for t in self.tasks}

    def store(self) -> Any:
        from harness.runs.store import Store

        return Store(self.db)

    def leaderboard(self) -> tuple[Any, list[dict[str, Any]]]:
        import dataclasses

        from tbmm.reports.leaderboard import compute, outcome_counts, row_from_record, suite_config
        from tbmm.reports.results import stale_notes

        cfg = suite_config(self.tasks)
        st = self.store()
        try:
            records = st.trials()
            cfg["names"] = st.names()
            cfg["stopped"] = st.stopped()
            entries = st.entries()
        finally:
            st.close()
        rows = [
            row_from_record(r, task_suites=cfg["task_suites"], split_tasks=cfg["split_tasks"])
            for r in records
        ]
        lb = compute(rows, baseline=None, **cfg)
        stale = stale_notes(rows, self.tasks)
        if stale:
            lb = dataclasses.replace(lb, notes=(*stale, *lb.notes))
        for e in entries:
            e.update(
                outcome_counts(
                    [r for r in records if r["entry_id"] == e["entry_id"]], e.get("stopped")
                )
            )
        return lb, entries

    def entry(self, entry_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        from tbmm.reports.leaderboard import row_from_record

        st = self.store()
        try:
            meta = next((e for e in st.entries() if e["entry_id"] == entry_id), None)
            trials = st.trials(entry_id) if meta is not None else []
        finally:
            st.close()
        if meta is None:
            return None
        suites = {t.slug: t.manifest.suite for t in self.tasks}
        out = []
        for t in trials:
            row = row_from_record(t, task_suites=suites)
            out.append(
                {
                    "id": t["id"],
                    "task": t["task"],
                    "seed": t["seed"],
                    "status": row.status,
                    "o_eval": L.fmt_fixed(row.o_eval * 100, 2) if row.status == "scored" else "—",
                    "gate": row.gate,
                    "lean": row.lean,
                    "exit_reason": t.get("exit_reason"),
                    "artifact_status": t.get("artifact_status"),
                    "cost": "n/a" if t.get("cost_usd") is None else f"${t['cost_usd']:.4f}",
                    "why": (t.get("error") or t.get("detail") or "")[:300],
                }
            )
        return meta, out

    def trial(self, trial_id: int) -> tuple[dict[str, Any], dict[str, Path]] | None:
        from harness.runs.store import trial_files

        st = self.store()
        try:
            rec = st.trial(trial_id)
            files = trial_files(st.runs_dir, rec) if rec is not None else {}
        finally:
            st.close()
        return (rec, files) if rec is not None else None


def _is_image(path: Path) -> bool:
    with open(path, "rb") as fh:
        return sniff_image(fh.read(16)) is not None


def _file_views(
    trial_id: int, files: Mapping[str, Path], artifact_name: str | None
) -> list[dict[str, Any]]:
    order = list(FILE_ROLES)
    names = sorted(files, key=lambda n: (order.index(n) if n in order else len(order), n))
    out = []
    for n in names:
        p = files[n]
        size = p.stat().st_size
        with open(p, "rb") as fh:
            head = fh.read(PREVIEW_BYTES)
        image = sniff_image(head)
        preview = None
        if image is None and n not in ("trajectory.json", "events.jsonl"):
            preview = head.decode("utf-8", "replace")
        out.append(
            {
                "name": n,
                "role": "artifact" if n == artifact_name else FILE_ROLES.get(n, "file"),
                "size": size,
                "image": image,
                "preview": preview,
                "truncated": size > PREVIEW_BYTES,
                "href": f"/trial/{trial_id}/file/{n}",
            }
        )
    return out


def create_app(db: Path, *, tasks_root: Path | None = None, hosts: Iterable[str] = ()) -> Any:
    """The viewer's ASGI app over the store at `db` (which must exist)."""
    try:
        import jinja2  # noqa: F401 - the templates need it; missing, say which extra
        from fastapi import FastAPI, HTTPException
        from fastapi.responses import FileResponse, HTMLResponse, Response
        from starlette.middleware.trustedhost import TrustedHostMiddleware
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise RuntimeError("tbmm view needs the `serve` extra: pip install 'tbmm[serve]'") from exc
    import tbmm
    from tbmm.reports.leaderboard import row_from_record
    from tbmm.reports.templating import environment

    data = ViewerData(db, tasks_root)
    env = environment()
    from tbmm.reports import fonts

    font_file = fonts.font_path()  # the whole CJK font, served at /font/cjk (cached)
    font = {"css": fonts.served_css("/font/cjk")} if font_file is not None else None
    shared = {"version": tbmm.__version__, "db": str(db), "csp": CSP, "font": font}

    app = FastAPI(
        title="TB-MathModel run viewer",
        version=tbmm.__version__,
        docs_url=None,  # swagger-ui would load from a CDN
        redoc_url=None,
        openapi_url=None,
    )
    allowed = {"127.0.0.1", "localhost", "::1", "[::1]", *hosts}
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=sorted(allowed))

    def page(name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        body = env.get_template(f"viewer/{name}").render(**shared, **ctx)
        return HTMLResponse(
            body,
            status_code=status,
            headers={
                "Content-Security-Policy": CSP_HEADER,
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
            },
        )

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        lb, entries = data.leaderboard()
        main = (
            [
                {"cells": r, "entry": x.entry, "shown": x.shown}
                for r, x in zip(R.main_rows(lb), lb.entries, strict=True)
            ]
            if not lb.empty
            else []
        )
        return page(
            "index.html",
            title="Entries",
            lb=lb,
            header=R.MAIN_HEADER,
            main=main,
            notes=R.all_notes(lb) if not lb.empty else [],
            empty=R.EMPTY_MESSAGE if lb.empty else "",
            entries=entries,
        )

    @app.get("/entry", response_class=HTMLResponse)
    def entry(id: str) -> HTMLResponse:  # noqa: A002 - the query parameter's name
        got = data.entry(id)
        if got is None:
            return page("missing.html", 404, title="Not found", what=f"entry {id}")
        meta, trials = got
        return page(
            "entry.html",
            title=meta["entry_id"],
            meta=meta,
            settings=json.dumps(meta["settings"], sort_keys=True, indent=1),
            trials=trials,
        )

    @app.get("/export")
    def export(id: str) -> Response:  # noqa: A002 - the query parameter's name
        """The entry as a `tbmm runs export` file (gzip), for download."""
        import gzip

        from harness.runs.export import ExportError, build_export, dump_export

        st = data.store()
        try:
            doc = build_export(st, id)
        except ExportError as exc:
            raise HTTPException(404, "no such entry") from exc
        finally:
            st.close()
        name = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in id) + ".json.gz"
        return Response(
            gzip.compress(dump_export(doc), mtime=0),
            media_type="application/gzip",
            headers={
                "Content-Disposition": f'attachment; filename="{name}"',
                "X-Content-Type-Options": "nosniff",
            },
        )

    @app.get("/trial/{trial_id}", response_class=HTMLResponse)
    def trial(trial_id: int) -> HTMLResponse:
        got = data.trial(trial_id)
        if got is None:
            return page("missing.html", 404, title="Not found", what=f"trial {trial_id}")
        rec, files = got
        task = data.by_slug.get(rec["task"])
        row = row_from_record(rec, task_suites={t.slug: t.manifest.suite for t in data.tasks})
        verdict_text = rec.get("verdict")
        verdict = None
        if verdict_text:  # also a no-verdict report (kept for diagnosis, never a score)
            try:
                doc = json.loads(verdict_text)
                verdict = verdict_view(doc, task) if isinstance(doc, dict) else None
            except (ValueError, AttributeError, TypeError, RecursionError):
                verdict = None
        traj = []
        traj_error = ""
        tp = files.get(rec.get("trajectory") or "trajectory.json")
        if tp is not None:
            if tp.stat().st_size > MAX_TRAJECTORY_BYTES:
                traj_error = f"trajectory larger than {MAX_TRAJECTORY_BYTES} bytes: download it"
            else:
                try:
                    traj = trajectory_steps(json.loads(tp.read_bytes()))
                except (ValueError, RecursionError) as exc:
                    traj_error = f"unreadable trajectory: {exc}"
        art_name = Path(task.output_path).name if task is not None else None
        harness = [
            (k, rec.get(k))
            for k in (
                "status",
                "error",
                "exit_reason",
                "detail",
                "artifact_status",
                "artifact_size",
                "artifact_sha256",
                "backend",
                "duration_s",
                "setup_s",
                "agent_s",
                "verify_s",
                "turns",
                "requests",
                "tokens_in",
                "tokens_cache_read",
                "tokens_cache_write",
                "tokens_out",
                "cost_usd",
                "blob_dir",
            )
            if rec.get(k) not in (None, "")
        ]
        return page(
            "trial.html",
            title=f"{rec['task']} seed {rec['seed']}",
            rec=rec,
            row=row,
            infra=row.status == L.INFRA,
            infra_error=(row.report or {}).get("infra_error"),
            harness=harness,
            verdict=verdict,
            o_eval=L.fmt_fixed(row.o_eval * 100, 2),
            o_eval_exact=fraction_to_text(row.o_eval),
            provenance=provenance_view(task),
            steps=traj,
            traj_error=traj_error,
            files=_file_views(trial_id, files, art_name),
            images={n: f"/trial/{trial_id}/file/{n}" for n, p in files.items() if _is_image(p)},
        )

    @app.get("/trial/{trial_id}/file/{name}")
    def trial_file(trial_id: int, name: str) -> Response:
        got = data.trial(trial_id)
        if got is None or name not in got[1]:  # only a file listed in the trial's folder
            raise HTTPException(404, "no such file")
        path = got[1][name]
        with open(path, "rb") as fh:
            media = sniff_image(fh.read(16))
        headers = {"X-Content-Type-Options": "nosniff", "Content-Security-Policy": FILE_CSP}
        if media is None:
            media = "text/plain; charset=utf-8"
        # streamed (an events log can be large); the name is never used as a path
        return FileResponse(path, media_type=media, headers=headers)

    @app.get("/font/cjk")
    def cjk_font() -> Response:
        """The CJK font the pages name in their @font-face (tbmm.reports.fonts; OFL-1.1)."""
        if font_file is None:
            raise HTTPException(404, "no CJK font installed (extra tbmm[report])")
        return FileResponse(
            font_file,
            media_type=fonts.font_media_type(font_file),
            headers={"Cache-Control": "max-age=86400", "X-Content-Type-Options": "nosniff"},
        )

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"ok": True, "version": tbmm.__version__}

    return app


def run(db: Path, host: str, port: int, hosts: Iterable[str] = (), say: Any = print) -> None:
    """Serve until interrupted; the address is printed once the app is built (the suite
    loaded), just before uvicorn binds."""
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise RuntimeError("tbmm view needs the `serve` extra: pip install 'tbmm[serve]'") from exc
    app = create_app(db, hosts=[host, *hosts])
    say(f"tbmm view on http://{host}:{port}/ ({db}); Ctrl-C stops it")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
