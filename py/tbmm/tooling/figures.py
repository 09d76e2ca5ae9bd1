"""Figures of a statement, cropped from the official PDF.

A task's curated `figures.toml` lists each figure the statement refers to: the PDF page,
the crop box in PDF points (artwork + caption), the caption text and the statement line
(`marker`) after which the image is shown. `crop_figures` renders the crops to PNG
deterministically; `inline_figures` puts a Markdown image line after each marker.
"""

from __future__ import annotations

import hashlib
import struct
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

FIGURES_FILE = "figures.toml"
CONTAINER_FIGURES = "/root/data/figures"
# PNG chunks kept in a crop: pixels and physical size only (no time, text or colour profile).
_PNG_KEEP = {b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"pHYs", b"IEND"}
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class FigureSpecError(ValueError):
    """A figures.toml that cannot be used, or a statement/PDF that does not fit it."""


class FigureSpec(BaseModel):
    """One figure: where it is in the PDF and where it goes in the statement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^fig-\d+$")
    page: int = Field(ge=1)
    bbox: tuple[float, float, float, float]
    caption: str = Field(min_length=1)
    marker: str = Field(min_length=1)
    dpi: int = Field(default=150, ge=36, le=600)

    @field_validator("bbox")
    @classmethod
    def _bbox_ordered(
        cls, v: tuple[float, float, float, float]
    ) -> tuple[float, float, float, float]:
        x0, y0, x1, y1 = v
        if min(v) < 0:
            raise ValueError(f"coordinates must be >= 0, got {list(v)}")
        if not (x0 < x1 and y0 < y1):
            raise ValueError(f"need x0 < x1 and y0 < y1, got {list(v)}")
        return v

    @field_validator("marker")
    @classmethod
    def _marker_one_line(cls, v: str) -> str:
        if "\n" in v or v != v.strip():
            raise ValueError("marker must be one stripped line of the statement")
        return v


class FigureSet(BaseModel):
    """The contents of a figures.toml: the PDF (relative to the source repo dir) and its figures."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    pdf: str = Field(min_length=1)
    figures: list[FigureSpec] = Field(alias="figure", min_length=1)

    @field_validator("pdf")
    @classmethod
    def _pdf_relative(cls, v: str) -> str:
        p = PurePosixPath(v)
        if p.is_absolute() or ".." in p.parts or p.suffix.lower() != ".pdf":
            raise ValueError(f"must be a relative path to a .pdf inside the repo dir, got {v!r}")
        return v

    @model_validator(mode="after")
    def _ids_unique(self) -> FigureSet:
        ids = [f.id for f in self.figures]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate figure ids: {dup}")
        return self


@dataclass(frozen=True)
class CroppedFigure:
    """A rendered crop: its file, checksum and pixel size, plus where it came from."""

    id: str
    path: Path
    sha256: str
    width: int
    height: int
    page: int
    bbox: tuple[float, float, float, float]


def _loc(loc: tuple[Any, ...]) -> str:
    """`('figure', 2, 'bbox')` -> `figure[2].bbox` (TOML names, not model names)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def load_figure_specs(task_dir: Path | str) -> FigureSet | None:
    """Read `<task_dir>/figures.toml`; None if the task has none.

    Raises FigureSpecError naming the file and the offending field.
    """
    path = Path(task_dir) / FIGURES_FILE
    if not path.is_file():
        return None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise FigureSpecError(f"{path}: invalid TOML: {exc}") from exc
    try:
        return FigureSet.model_validate(data)
    except ValidationError as exc:
        msgs = [f"{path}: field {_loc(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise FigureSpecError("\n".join(msgs)) from exc


def _strip_png_metadata(data: bytes) -> bytes:
    """Keep only the pixel chunks of a PNG, so the bytes depend on the pixels alone."""
    if not data.startswith(_PNG_SIGNATURE):
        raise FigureSpecError("renderer did not produce a PNG")
    out = [_PNG_SIGNATURE]
    i = len(_PNG_SIGNATURE)
    while i < len(data):
        (length,) = struct.unpack(">I", data[i : i + 4])
        kind = data[i + 4 : i + 8]
        end = i + 12 + length
        if kind in _PNG_KEEP:
            out.append(data[i:end])
        i = end
    return b"".join(out)


def crop_figures(
    pdf_path: Path | str, specs: list[FigureSpec], out_dir: Path | str
) -> list[CroppedFigure]:
    """Render each spec's box of the PDF to `out_dir/<id>.png` (RGB, no alpha, no metadata)."""
    try:
        import pymupdf  # the `figures` extra (AGPL): only the task build crops figures
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise FigureSpecError(
            "cropping figures needs PyMuPDF: pip install 'tbmm[figures]'"
        ) from exc
    pdf_path, out_dir = Path(pdf_path), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    crops: list[CroppedFigure] = []
    with pymupdf.open(pdf_path) as doc:
        for s in specs:
            if s.page > doc.page_count:
                raise FigureSpecError(
                    f"{pdf_path}: {s.id}: page {s.page} > page count {doc.page_count}"
                )
            page = doc[s.page - 1]
            clip = pymupdf.Rect(s.bbox)
            if not page.rect.contains(clip):
                raise FigureSpecError(
                    f"{pdf_path}: {s.id}: bbox {list(s.bbox)} outside page {s.page} {tuple(page.rect)}"
                )
            pix = page.get_pixmap(
                dpi=s.dpi, clip=clip, alpha=False, colorspace=pymupdf.csRGB, annots=False
            )
            png = _strip_png_metadata(pix.tobytes("png"))
            target = out_dir / f"{s.id}.png"
            target.write_bytes(png)
            crops.append(
                CroppedFigure(
                    id=s.id,
                    path=target,
                    sha256=hashlib.sha256(png).hexdigest(),
                    width=pix.width,
                    height=pix.height,
                    page=s.page,
                    bbox=s.bbox,
                )
            )
    return crops


def _alt_text(caption: str) -> str:
    """The caption as Markdown alt text: brackets escaped only if they are unbalanced."""
    depth = 0
    for ch in caption:
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if depth < 0:
            break
    if depth == 0:
        return caption
    return caption.replace("[", r"\[").replace("]", r"\]")


def image_line(spec: FigureSpec, container_dir: str = CONTAINER_FIGURES) -> str:
    """The Markdown line that shows one figure."""
    return f"![{_alt_text(spec.caption)}]({container_dir.rstrip('/')}/{spec.id}.png)"


def inline_figures(
    instruction_text: str, specs: list[FigureSpec], container_dir: str = CONTAINER_FIGURES
) -> str:
    """Insert each figure's image line right after its marker line (several may share one).

    Raises FigureSpecError if a marker matches no line or more than one (lines compared stripped).
    Already inlined image lines are not inserted twice.
    """
    lines = instruction_text.splitlines(keepends=True)
    stripped = [ln.strip() for ln in lines]
    after: dict[int, list[str]] = {}
    for s in specs:
        hits = [i for i, ln in enumerate(stripped) if ln == s.marker]
        if len(hits) != 1:
            what = (
                "not found"
                if not hits
                else f"found {len(hits)} times (lines {[h + 1 for h in hits]})"
            )
            raise FigureSpecError(f"{s.id}: marker {s.marker!r} {what} in the statement")
        after.setdefault(hits[0], []).append(image_line(s, container_dir))
    out: list[str] = []
    for i, ln in enumerate(lines):
        out.append(ln)
        if i not in after:
            continue
        nl = "\r\n" if ln.endswith("\r\n") else "\n"
        if not ln.endswith(("\n", "\r")):
            out[-1] = ln + nl
        following = set(stripped[i + 1 : i + 1 + len(after[i])])
        out.extend(img + nl for img in after[i] if img not in following)
    return "".join(out)
