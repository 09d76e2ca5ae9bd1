"""Trajectory: one JSON object per line, flushed per event so a killed trial keeps its prefix."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

TEXT_CAP = 1024 * 1024


def _text(data: bytes | str, cap: int = TEXT_CAP) -> str:
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if len(data) > cap:
        return data[: cap // 2] + f"\n...[{len(data) - cap} chars omitted]...\n" + data[-cap // 2 :]
    return data


class Trajectory:
    """Append-only JSONL log of model messages, commands and their outputs."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the trial
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self.events = 0

    def add(self, kind: str, **fields: Any) -> None:
        rec = {"t": round(time.monotonic() - self._t0, 3), "type": kind, **fields}
        line = json.dumps(rec, ensure_ascii=False, default=str)
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()
            self.events += 1

    def command(
        self,
        argv: list[str] | str,
        *,
        exit_code: int | None,
        stdout: bytes | str,
        stderr: bytes | str,
        duration_s: float,
        timed_out: bool = False,
        **extra: Any,
    ) -> None:
        self.add(
            "command",
            argv=argv,
            exit_code=exit_code,
            timed_out=timed_out,
            duration_s=round(duration_s, 3),
            stdout=_text(stdout),
            stderr=_text(stderr),
            **extra,
        )

    def close(self) -> None:
        with self._lock:
            if not self._fh.closed:
                self._fh.close()


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    """Parse a trajectory file, ignoring a torn last line."""
    out: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            break
    return out
