"""`tbmm tasks fetch-assets`: download attachments that the source release lacks.

Offline (the usual case in CI) every download fails fast and the command lists exactly
which files are missing and where they come from. Online, a file is accepted only if
its declared sha256 matches; where no checksum was ever published (the three files
absent from the source release), the file's magic bytes must match its type and the
measured size and sha256 are printed so they can be pinned in `tbmm.tooling.build`.
"""

from __future__ import annotations

import hashlib
import io
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tbmm.suite.files import sha256_file
from tbmm.suite.tasks import Task

MAGIC = {".pdf": b"%PDF", ".xlsx": b"PK\x03\x04", ".zip": b"PK\x03\x04"}


@dataclass(frozen=True)
class FetchResult:
    task: str
    path: str
    status: str  # fetched | present | missing
    detail: str


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - fixed https URLs
        return resp.read()


def fetch_task(task: Task, timeout: float = 20.0) -> list[FetchResult]:
    out: list[FetchResult] = []
    specs = {m.path: m for m in task.missing_spec}
    for att in task.manifest.attachments:
        if att.present:
            continue
        target = task.dir / att.path
        rel = att.path.removeprefix("environment/data/attachments/")
        if target.is_file():
            out.append(
                FetchResult(
                    task.slug,
                    att.path,
                    "present",
                    f"sha256 {sha256_file(target)}",
                )
            )
            continue
        spec = specs.get(rel)
        if spec is None:
            out.append(FetchResult(task.slug, att.path, "missing", "no download location known"))
            continue
        try:
            blob = _download(spec.url, timeout)
            if spec.member:
                with zipfile.ZipFile(io.BytesIO(blob)) as zf:
                    blob = zf.read(spec.member)
        except (urllib.error.URLError, OSError, zipfile.BadZipFile, KeyError) as exc:
            out.append(
                FetchResult(
                    task.slug,
                    att.path,
                    "missing",
                    f"download failed ({exc.__class__.__name__}: {exc}); upstream: {att.upstream}",
                )
            )
            continue
        digest = hashlib.sha256(blob).hexdigest()
        if att.sha256 is not None and digest != att.sha256:
            out.append(
                FetchResult(
                    task.slug,
                    att.path,
                    "missing",
                    f"sha256 mismatch: got {digest}, declared {att.sha256}",
                )
            )
            continue
        magic = MAGIC.get(Path(rel).suffix.lower())
        if att.sha256 is None and magic is not None and not blob.startswith(magic):
            out.append(
                FetchResult(
                    task.slug,
                    att.path,
                    "missing",
                    "downloaded bytes are not a file of the expected type",
                )
            )
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".part")
        tmp.write_bytes(blob)
        tmp.replace(target)
        out.append(
            FetchResult(task.slug, att.path, "fetched", f"{len(blob)} bytes, sha256 {digest}")
        )
    return out
