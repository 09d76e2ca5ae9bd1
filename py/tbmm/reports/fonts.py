"""The CJK font the HTML report embeds and the plots draw with, so Chinese text renders on a
machine that has no CJK font installed.

The font is Noto Sans SC (SIL Open Font License 1.1), shipped by the PyPI package
`pylopdf-fonts-zh-cn` (extra `tbmm[report]`); `TBMM_CJK_FONT=/path/to/font.otf` names another.
A report embeds only the glyphs of the CJK characters it shows (fontTools subset, WOFF,
base64 in an `@font-face` rule limited to those code points by `unicode-range`), with the
font's copyright and license kept in its name table and the license text in the page.
Same text and font, same bytes: the subset carries no timestamp and zlib is deterministic.
"""

from __future__ import annotations

import base64
import io
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FAMILY = "tbmm CJK"  # the @font-face family name (never a system font's)
ENV = "TBMM_CJK_FONT"
# CJK blocks (radicals, symbols and punctuation, kana, bopomofo, Hangul, the unified
# ideographs and extension A, compatibility forms, full-width forms, extension B and beyond)
CJK_RANGES = (
    (0x2E80, 0x2FDF),
    (0x3000, 0x33FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
    (0x20000, 0x3134F),
)


class FontError(RuntimeError):
    """The font named by TBMM_CJK_FONT cannot be read."""


CJK_RE = re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES) + "]")


def is_cjk(ch: str) -> bool:
    return CJK_RE.fullmatch(ch) is not None


def cjk_chars(text: str) -> str:
    """The distinct CJK characters of `text`, in code point order."""
    return "".join(sorted(set(CJK_RE.findall(text))))


def font_path() -> Path | None:
    """The CJK font file: $TBMM_CJK_FONT, else the packaged Noto Sans SC, else None (the
    `report` extra is not installed)."""
    env = os.environ.get(ENV)
    if env:
        p = Path(env)
        if not p.is_file():
            raise FontError(f"{ENV}={env}: no such font file")
        return p
    try:
        import pylopdf_fonts_zh_cn
    except ImportError:
        return None
    p = Path(pylopdf_fonts_zh_cn.sans_path())
    return p if p.is_file() else None


def license_text(path: Path) -> str:
    """The font's license text: a LICENSE/OFL file beside the font or in its package's
    metadata, else the license recorded in the font's own name table."""
    candidates = [path.parent / n for n in ("OFL.txt", "LICENSE", "LICENSE.txt")]
    candidates += sorted(path.parent.parent.glob(f"{path.parent.name}-*.dist-info/licenses/*"))
    for c in candidates:
        if c.is_file():
            return c.read_text(encoding="utf-8", errors="replace")
    names = _names(path)
    return "\n".join(x for x in (names.get(0), names.get(13), names.get(14)) if x)


def _names(path: Path) -> dict[int, str]:
    from fontTools.ttLib import TTFont

    with TTFont(path, lazy=True, fontNumber=0) as f:
        out: dict[int, str] = {}
        for r in f["name"].names:
            if r.nameID not in out and r.platformID in (0, 3):
                out[r.nameID] = r.toUnicode()
        return out


@dataclass(frozen=True)
class EmbeddedFont:
    """A subset ready for a page: the @font-face rule and what a reader needs to know."""

    css: str
    family: str  # the font's own family name (e.g. Noto Sans SC)
    copyright: str
    license: str
    chars: str  # the CJK characters the subset covers
    missing: str  # CJK characters of the page the font has no glyph for
    size: int  # bytes of the WOFF subset


def _ranges(cps: list[int]) -> str:
    """`unicode-range` value for sorted code points, consecutive ones merged."""
    out: list[str] = []
    start = prev = cps[0]
    for cp in [*cps[1:], -1]:
        if cp == prev + 1:
            prev = cp
            continue
        out.append(f"U+{start:X}" if start == prev else f"U+{start:X}-{prev:X}")
        start = prev = cp
    return ",".join(out)


@lru_cache(maxsize=8)
def subset_woff(path: Path, chars: str) -> bytes:
    """The font cut down to `chars` (plus .notdef), as WOFF (zlib; no brotli needed); the
    name table is kept whole so the copyright and license travel with the glyphs."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    opts = subset.Options()
    opts.flavor = "woff"
    opts.name_IDs = ["*"]
    opts.name_languages = ["*"]
    opts.recalc_timestamp = False
    sub = subset.Subsetter(opts)
    sub.populate(text=chars)
    with TTFont(path, recalcTimestamp=False, fontNumber=0) as font:
        sub.subset(font)
        buf = io.BytesIO()
        font.flavor = "woff"
        font.save(buf)
    return buf.getvalue()


def embed(text: str, path: Path | None = None) -> EmbeddedFont | None:
    """The @font-face for the CJK characters of `text`; None when there are none or no
    font is available."""
    chars = cjk_chars(text)
    path = path or font_path()
    if not chars or path is None:
        return None
    from fontTools.ttLib import TTFont

    with TTFont(path, lazy=True, fontNumber=0) as f:
        cmap = f.getBestCmap()
    have = [c for c in chars if ord(c) in cmap]
    missing = "".join(c for c in chars if ord(c) not in cmap)
    names = _names(path)
    if not have:
        return None
    data = subset_woff(path, "".join(have))
    css = (
        f'@font-face{{font-family:"{FAMILY}";font-display:block;'
        f"src:url(data:font/woff;base64,{base64.b64encode(data).decode('ascii')}) "
        f'format("woff");unicode-range:{_ranges([ord(c) for c in have])}}}'
    )
    return EmbeddedFont(
        css=css,
        family=names.get(1, path.stem),
        copyright=names.get(0, ""),
        license=license_text(path),
        chars="".join(have),
        missing=missing,
        size=len(data),
    )


def font_media_type(path: Path) -> str:
    """font/otf (CFF outlines), font/ttf or font/collection, from the file's first bytes."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    return {b"OTTO": "font/otf", b"ttcf": "font/collection"}.get(head, "font/ttf")


def served_css(url: str) -> str:
    """The @font-face for a page served with the whole font at `url` (the viewer: a local
    server, where the browser fetches and caches the font file once)."""
    ranges = ",".join(f"U+{lo:X}-{hi:X}" for lo, hi in CJK_RANGES)
    return (
        f'@font-face{{font-family:"{FAMILY}";font-display:swap;src:url({url});'
        f"unicode-range:{ranges}}}"
    )


def matplotlib_family() -> str | None:
    """Register the CJK font with matplotlib (once) and return its family name, for the
    plots' fallback list; None without a font."""
    path = font_path()
    if path is None:
        return None
    from matplotlib import font_manager

    fm = font_manager.fontManager
    for e in fm.ttflist:
        if Path(e.fname) == path:
            return e.name
    fm.addfont(str(path))
    return font_manager.FontProperties(fname=str(path)).get_name()
