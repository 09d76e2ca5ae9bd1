"""Held-out labelled rows: a fixed, seeded split of an attachment's worksheet, made by
`tbmm tasks build` (so the source release stays the one source of the data).

A task whose answer is a fitted rule (a classifier) is scored on rows its author did not
see. The curated `split.toml` names the attachment, the worksheet, the column that groups
rows of one subject (all of a subject's rows go to the same side, or the rows of a
repeatedly tested pregnancy would leak), the label column (the split is stratified by
whether a subject has any labelled row), the held-out share and the seed. The build then
writes

* the agent's copy of the attachment (`environment/data/attachments/…`): the workbook with
  the held-out rows removed from that worksheet, the remaining rows renumbered, and the
  shared-string table rebuilt from what is left (no held-out text survives in the file);
* the held-out rows (`tests/heldout/<sheet>.csv`, outside `environment/`, never in the
  agent's container): the header and each held-out row's cell text by column letter, with
  its original sheet row number;

both hashed in the manifest. The zip is written uncompressed with fixed timestamps, so a
rebuild reproduces it byte for byte.
"""

from __future__ import annotations

import csv
import io
import random
import re
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from xml.etree import ElementTree as ET
from xml.sax.saxutils import unescape

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tbmm.core import exact

_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_REL = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_PKG_REL = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_ROW = re.compile(r"<row\b[^>]*?(?:/>|>.*?</row>)", re.S)
_ROW_NUM = re.compile(r'(<row\b[^>]*?\br=")(\d+)(")')
_CELL_REF = re.compile(r'(<c\b[^>]*?\br="[A-Z]+)(\d+)(")')
_SHARED = re.compile(r'(<c\b[^>]*?\bt="s"[^>]*>\s*<v>)(\d+)(</v>)')
_RANGE_END = re.compile(r'(\bref="[A-Z]+\d+:[A-Z]+)(\d+)(")')
_COLUMN = re.compile(r"^[A-Z]{1,3}$")
HELDOUT_DIR = "tests/heldout"


class SplitSpec(BaseModel):
    """split.toml: one held-out split of one worksheet."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    attachment: str = Field(min_length=1)  # under environment/data/attachments/
    sheet: str = Field(min_length=1)
    group_column: str  # rows of one subject share this column's text
    label_column: str  # stratify: does a subject have a non-empty cell here
    heldout_share: str  # exact decimal in (0, 1): the share of subjects held out per stratum
    seed: int
    rationale: str = Field(min_length=20)

    @field_validator("group_column", "label_column")
    @classmethod
    def _col(cls, v: str) -> str:
        if not _COLUMN.match(v):
            raise ValueError(f"a column is written in letters (A, AB), got {v!r}")
        return v

    @field_validator("heldout_share")
    @classmethod
    def _share(cls, v: str) -> str:
        if not 0 < exact.parse_decimal(v) < 1:
            raise ValueError(f"heldout_share is in (0, 1), got {v!r}")
        return v

    @property
    def heldout_path(self) -> str:
        """Where the held-out rows live, relative to the task folder."""
        return f"{HELDOUT_DIR}/{self.sheet}.csv"


def load_spec(task_dir: Path) -> SplitSpec | None:
    import tomllib

    path = task_dir / "split.toml"
    if not path.is_file():
        return None
    return SplitSpec.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))


def col_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n - 1


def col_letters(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def _sheet_member(z: zipfile.ZipFile, name: str) -> str:
    wb = ET.fromstring(z.read("xl/workbook.xml"))
    rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    targets = {r.get("Id"): r.get("Target", "") for r in rels.iter(f"{_PKG_REL}Relationship")}
    for sh in wb.iter(f"{_NS}sheet"):
        if sh.get("name") == name:
            return "xl/" + targets.get(sh.get(_REL), "").removeprefix("/xl/").removeprefix("xl/")
    raise ValueError(f"no worksheet named {name!r}")


def _strings(z: zipfile.ZipFile) -> tuple[list[str], list[str]]:
    """The shared strings as text and as their raw `<si>` XML (kept verbatim)."""
    try:
        raw = z.read("xl/sharedStrings.xml").decode("utf-8")
    except KeyError:
        return [], []
    xml = re.findall(r"<si\b.*?</si>|<si/>", raw, re.S)
    root = ET.fromstring(raw)
    text = ["".join(t.text or "" for t in si.iter(f"{_NS}t")) for si in root]
    if len(xml) != len(text):
        raise ValueError("sharedStrings.xml: unexpected structure")
    return text, xml


_CELL = re.compile(r"<c\b([^>]*?)(?:/>|>(.*?)</c>)", re.S)
_ATTR = re.compile(r'\b(r|t)="([^"]*)"')
_V = re.compile(r"<v>(.*?)</v>", re.S)
_T = re.compile(r"<t\b[^>]*>(.*?)</t>", re.S)


def _row_cells(row_xml: str, strings: list[str]) -> dict[int, str]:
    """A row's cells as {column index: text} (shared strings resolved, numbers as their
    text), read the way `tbmm.replay.nipt_judgement.read_sheet` reads a worksheet."""
    out: dict[int, str] = {}
    for m in _CELL.finditer(row_xml):
        attrs = dict(_ATTR.findall(m.group(1)))
        ref = re.match(r"[A-Z]+", attrs.get("r", ""))
        body = m.group(2) or ""
        if ref is None:
            continue
        if attrs.get("t") == "inlineStr":
            text = unescape("".join(_T.findall(body)))
        else:
            v = _V.search(body)
            if v is None:
                continue
            text = strings[int(v.group(1))] if attrs.get("t") == "s" else unescape(v.group(1))
        if text.strip():
            out[col_index(ref.group(0))] = text.strip()
    return out


@dataclass(frozen=True)
class SplitResult:
    agent_xlsx: bytes
    heldout_csv: str
    heldout_rows: int
    heldout_subjects: int
    kept_rows: int
    kept_subjects: int


def choose_heldout(groups: dict[str, bool], share: Fraction, seed: int) -> set[str]:
    """The held-out subjects: per stratum (has a labelled row or not), the subjects sorted
    by their text, shuffled by `random.Random(seed)`, the first round(share * n) taken."""
    rng = random.Random(seed)
    out: set[str] = set()
    for stratum in (True, False):
        names = sorted(g for g, lab in groups.items() if lab == stratum)
        rng.shuffle(names)
        out.update(names[: round(share * len(names))])
    return out


def split_workbook(data: bytes, spec: SplitSpec) -> SplitResult:
    """The agent's copy of the workbook and the held-out rows (see the module docstring)."""
    zin = zipfile.ZipFile(io.BytesIO(data))
    member = _sheet_member(zin, spec.sheet)
    strings, strings_xml = _strings(zin)
    sheet = zin.read(member).decode("utf-8")
    rows = [(m.start(), m.end(), m.group(0)) for m in _ROW.finditer(sheet)]
    if not rows:
        raise ValueError(f"worksheet {spec.sheet!r}: no rows")
    cells = [_row_cells(x, strings) for _, _, x in rows]
    gcol, lcol = col_index(spec.group_column), col_index(spec.label_column)
    groups: dict[str, bool] = defaultdict(bool)
    for c in cells[1:]:  # row 1 is the header
        if c and gcol in c:
            groups[c[gcol]] |= lcol in c
    held = choose_heldout(dict(groups), exact.parse_decimal(spec.heldout_share), spec.seed)
    drop = {i for i, c in enumerate(cells) if i > 0 and c.get(gcol) in held}

    # the held-out rows as text (column letters; the original row number first)
    width = max((max(c) for c in cells if c), default=0) + 1
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["sheet_row", *(col_letters(i) for i in range(width))])
    for i, c in enumerate(cells):
        if i == 0 or i in drop:
            num = _ROW_NUM.search(rows[i][2])
            w.writerow([num.group(2) if num else str(i + 1), *(c.get(k, "") for k in range(width))])

    # the agent's sheet: held-out rows removed, the rest renumbered 1..n
    parts: list[str] = []
    last = 0
    new_no = 0
    for i, (a, b, x) in enumerate(rows):
        parts.append(sheet[last:a])
        last = b
        if i in drop:
            continue
        new_no += 1
        n = new_no
        x = _ROW_NUM.sub(lambda m, n=n: f"{m.group(1)}{n}{m.group(3)}", x, count=1)
        x = _CELL_REF.sub(lambda m, n=n: f"{m.group(1)}{n}{m.group(3)}", x)
        parts.append(x)
    parts.append(sheet[last:])
    new_sheet = "".join(parts)
    head, _, tail = new_sheet.partition("<sheetData")
    head = _RANGE_END.sub(lambda m: f"{m.group(1)}{new_no}{m.group(3)}", head)
    data_part, sep, rest = tail.partition("</sheetData>")
    rest = _RANGE_END.sub(lambda m: f"{m.group(1)}{new_no}{m.group(3)}", rest)
    new_sheet = head + "<sheetData" + data_part + sep + rest

    # shared strings: only those still used anywhere, in their original order
    texts: dict[str, str] = {}
    for info in zin.infolist():
        if info.filename.startswith("xl/worksheets/") and info.filename.endswith(".xml"):
            texts[info.filename] = (
                new_sheet if info.filename == member else zin.read(info).decode("utf-8")
            )
    used = sorted({int(m.group(2)) for t in texts.values() for m in _SHARED.finditer(t)})
    remap = {old: new for new, old in enumerate(used)}
    for name, t in texts.items():
        texts[name] = _SHARED.sub(lambda m: f"{m.group(1)}{remap[int(m.group(2))]}{m.group(3)}", t)
    total = sum(len(_SHARED.findall(t)) for t in texts.values())
    sst = None
    if strings_xml:
        raw = zin.read("xl/sharedStrings.xml").decode("utf-8")
        start = raw.index("<sst")
        open_end = raw.index(">", start) + 1
        opening = raw[start:open_end]
        opening = re.sub(r'\bcount="\d+"', f'count="{total}"', opening)
        opening = re.sub(r'\buniqueCount="\d+"', f'uniqueCount="{len(used)}"', opening)
        sst = raw[:start] + opening + "".join(strings_xml[i] for i in used) + "</sst>"

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            if info.filename in texts:
                body = texts[info.filename].encode("utf-8")
            elif info.filename == "xl/sharedStrings.xml" and sst is not None:
                body = sst.encode("utf-8")
            else:
                body = zin.read(info)
            zi = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_STORED
            zi.external_attr = 0o644 << 16
            zout.writestr(zi, body)
    kept_subjects = len(set(groups) - held)
    return SplitResult(
        agent_xlsx=out.getvalue(),
        heldout_csv=buf.getvalue(),
        heldout_rows=len(drop),
        heldout_subjects=len(held),
        kept_rows=len(rows) - 1 - len(drop),
        kept_subjects=kept_subjects,
    )


def read_heldout(path: Path) -> list[dict[int, str]]:
    """The held-out CSV as rows {column index: text}, the header row first (the same shape
    as a worksheet read by `tbmm.replay.nipt_judgement.read_sheet`)."""
    with open(path, encoding="utf-8", newline="") as fh:
        table = list(csv.reader(fh))
    if not table or table[0][:1] != ["sheet_row"]:
        raise ValueError(f"{path}: not a held-out rows file (no sheet_row header)")
    letters = table[0][1:]
    return [{col_index(letters[k]): v for k, v in enumerate(r[1:]) if v.strip()} for r in table[1:]]


def read_sheet_rows(path: Path, sheet: str) -> list[dict[int, str]]:
    """A worksheet's rows as {column index: text}, the header first (empty rows kept)."""
    with zipfile.ZipFile(path) as z:
        strings, _ = _strings(z)
        text = z.read(_sheet_member(z, sheet)).decode("utf-8")
    return [_row_cells(m.group(0), strings) for m in _ROW.finditer(text)]


def heldout_leaks(task_dir: Path, held: object) -> list[str]:
    """Why the agent's copy would reveal held-out rows (empty: it does not): a held-out
    subject or a held-out row found in the agent's worksheet, or a held-out file that no
    longer follows split.toml."""
    spec = load_spec(task_dir)
    path, attachment, sheet = (getattr(held, k) for k in ("path", "attachment", "sheet"))
    if spec is None or spec.heldout_path != path or spec.sheet != sheet:
        return [f"{path}: not the held-out file split.toml describes: rerun `tbmm tasks build`"]
    try:
        agent = read_sheet_rows(task_dir / attachment, sheet)
        rows = read_heldout(task_dir / path)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        return [f"{path}: cannot compare with {attachment}: {exc}"]
    g = col_index(spec.group_column)
    seen = {r.get(g) for r in agent[1:] if r}
    subjects = sorted({r[g] for r in rows[1:] if g in r} & seen)
    whole = {tuple(sorted(r.items())) for r in agent[1:] if r}
    copies = sum(1 for r in rows[1:] if tuple(sorted(r.items())) in whole)
    out = []
    if subjects:
        out.append(f"{attachment}: held-out subjects still in the agent's copy: {subjects[:5]}")
    if copies:
        out.append(f"{attachment}: {copies} held-out row(s) still in the agent's copy")
    return out
