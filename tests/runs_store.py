"""A small results store with every kind of trial, for the export/import and viewer tests.

Entry A (a hostile agent: `<script>` in its display name, artifact, trajectory and files):
production-decision seed 0 scored (with a replay), dragon-dance seed 0 gate_failed, seed 1
missing artifact, production-decision seed 1 an infrastructure error. Entry B: one scored
trial. Verdicts come from the real verifier (without Lean: cheap and deterministic).
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

from harness.agents.trajectory import Trajectory
from harness.runs.atif import write_trajectory
from harness.runs.store import EVENTS_FILE, TRAJECTORY_FILE, Store
from tests.conftest import DRAGON_SLUG, infeasible_dragon, trial_record

PD_SLUG = "cumcm-2024-b-production-decision"
ENTRY_A = "llm@model-x#0badf00d"
ENTRY_B = "oracle@none#12345678"
HOSTILE = "<script>alert('pwned')</script>"
HOSTILE_IMG = '<img src=x onerror="alert(1)">'


def png(width: int, height: int, pixel: Any) -> bytes:
    """A tiny RGB PNG: `pixel(x, y) -> (r, g, b)`."""
    raw = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


FIGURE = png(24, 16, lambda x, y: (10 * x % 256, 15 * y % 256, 200))


def _blobs(store: Store, task: Any, seed: int, artifact: bytes | None, verdict: Any) -> Path:
    """A trial's blob folder as the runner leaves it: raw events, ATIF, stdout/stderr,
    artifact, verdict, plus a figure, a binary file and an HTML file the agent wrote."""
    d = store.scratch_dir()
    traj = Trajectory(d / EVENTS_FILE)
    traj.add("trial", entry=ENTRY_A, task=task.slug, seed=seed, backend="sandbox")
    traj.add(
        "command",
        argv=["python", "-c", f"print('{HOSTILE}')"],
        exit_code=0,
        duration_s=0.5,
        stdout=f"{HOSTILE}\n{HOSTILE_IMG}\n",
        stderr="",
    )
    traj.add("command", argv="ls /root/results", exit_code=0, duration_s=0.1, stdout="figure.png")
    traj.add("end", exit_reason="completed", artifact="ok", detail="", status="ok")
    traj.close()
    write_trajectory(
        d / EVENTS_FILE,
        d / TRAJECTORY_FILE,
        agent_name="oracle",
        agent_version="test",
        model=None,
        session_id=f"{task.slug}/{seed}",
        started_at=1.7e9,
        extra={"entry": ENTRY_A, "task": task.slug, "seed": seed},
    )
    (d / "stdout.txt").write_text(f"agent says {HOSTILE}\n")
    (d / "stderr.txt").write_text("")
    (d / "figure.png").write_bytes(FIGURE)
    (d / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (d / "page.html").write_text(f"<html><body>{HOSTILE}</body></html>")
    if artifact is not None:
        (d / Path(task.output_path).name).write_bytes(artifact)
    if verdict is not None:
        (d / "verdict.json").write_text(json.dumps(verdict, indent=1))
    return d


def _verdict_fields(rep: Any) -> dict[str, Any]:
    v = rep.model_dump(mode="json")
    return {
        "verdict": v,
        "o_eval": rep.o_eval,
        "o_eval_exact": rep.o_eval_exact,
        "gate": rep.gate,
        "lean": rep.lean,
        "verify_exit": rep.exit_code,
    }


def build_store(db: Path, tasks: dict[str, Any]) -> dict[str, Any]:
    """Fill a fresh store at `db`; returns the artifacts written, by (entry, task, seed)."""
    import hashlib

    from tbmm.verify import verify_artifact

    pd, dd = tasks[PD_SLUG], tasks[DRAGON_SLUG]
    doc = json.loads(pd.anchor_artifact_bytes())
    doc["agent_note"] = HOSTILE
    good = (json.dumps(doc, indent=1) + "\n").encode()
    bad = infeasible_dragon(dd)
    store = Store(db)
    store.ensure_entry(ENTRY_A, "llm", "model-x", {"harness": "llm", "t": 0}, name=HOSTILE)
    store.ensure_entry(ENTRY_B, "oracle", None, {"harness": "oracle"})
    arts = {}
    plan = [
        (ENTRY_A, pd, 0, good, "completed", "ok", None),
        (ENTRY_A, dd, 0, bad, "completed", "ok", None),
        (ENTRY_A, dd, 1, None, "timeout", "missing", None),
        (ENTRY_A, pd, 1, None, "error", "missing", "endpoint_unreachable: connection refused"),
        (ENTRY_B, pd, 0, pd.anchor_artifact_bytes(), "completed", "ok", None),
    ]
    for k, (eid, task, seed, art, exit_reason, art_status, infra) in enumerate(plan):
        fields: dict[str, Any] = {}
        if infra is None:
            fields = _verdict_fields(verify_artifact(task, art, lean=False))
        rec = trial_record(
            entry_id=eid,
            agent=eid.split("@")[0],
            model="model-x" if eid == ENTRY_A else None,
            task=task.slug,
            suite=task.manifest.suite,
            seed=seed,
            started_at=1.7e9 + k,
            finished_at=1.7e9 + k + 3,
            exit_reason=exit_reason,
            detail=f"detail {HOSTILE_IMG}" if seed == 1 else "",
            artifact_status=art_status,
            artifact_size=len(art) if art is not None else None,
            artifact_sha256=hashlib.sha256(art).hexdigest() if art is not None else None,
            artifact=art,
            tokens_in=1000 + k,
            tokens_out=200,
            requests=3,
            cost_usd=0.0125 * (k + 1) if eid == ENTRY_A else None,
            status="error" if infra else "ok",
            error=infra,
            trajectory=TRAJECTORY_FILE,
            **fields,
        )
        store.commit(rec, _blobs(store, task, seed, art, fields.get("verdict")))
        arts[(eid, task.slug, seed)] = art
    store.close()
    return arts
