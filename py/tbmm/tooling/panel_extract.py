"""Re-check a task's multi-reference panel against the papers' PDFs.

Every value a panel paper carries (`panel.json`: `fields`) names the numbers it comes from
as printed in the paper (`printed`: text and PDF page) and a closed rule turning them into
the recorded value (`transformation`). This module

* recomputes each value from its printed numbers (`compute`, no PDF needed: validate uses
  it, so a hand-edited value that its own inputs do not give is caught everywhere), and
* given the PDFs, extracts each page's text with PyMuPDF (the `figures` extra) and reports,
  for every printed number, whether it stands on the stated page and the line around it;
  and checks each paper's designation on COMAP's official results list.

The PDFs are not redistributed (no licence is stated); they are read from a copy of the
public repository hlife0/MCM-Killer (`student paper/<year>/<letter>/<id>.pdf`,
`problems and results/<year>/<list>.pdf`): either a checkout or its bare git directory.

    python -m tbmm.tooling.panel_extract --source /path/to/MCM-Killer [slug ...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

from tbmm.core.exact import fraction_to_text, parse_decimal
from tbmm.suite.models import FieldRecord, PanelPaper
from tbmm.suite.tasks import Task, load_task, task_dirs

WORDS = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
PAPERS_DIR = "student paper"
RESULTS_DIR = "problems and results"
FETCH_HINT = (
    "fetch the public repository hlife0/MCM-Killer (e.g. `git clone "
    "https://github.com/hlife0/MCM-Killer`, or its bare git directory) and point "
    "TBMM_PANEL_PDFS (or --source) at it"
)


class PanelSourceError(ValueError):
    """A printed number cannot be read or a PDF is not in the source."""


def number(text: str) -> Fraction:
    """A printed number as an exact fraction: thousands commas and a trailing % dropped."""
    t = text.strip().removesuffix("%").replace(",", "")
    try:
        return parse_decimal(t)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the same input error
        raise PanelSourceError(f"not a printed number: {text!r}") from exc


def _round(q: Fraction, digits: int) -> str:
    d = Decimal(q.numerator) / Decimal(q.denominator)
    return str(d.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN))


def level_factor(printed_level: Fraction, target: Fraction) -> Decimal:
    """z_{(1+target)/2} / z_{(1+printed)/2}: how a normal interval's half-width scales from
    the printed level to the target level (15 significant digits; a count rounded to 2
    decimals cannot feel the float's last digit)."""
    nd = NormalDist()
    f = nd.inv_cdf((1 + float(target)) / 2) / nd.inv_cdf((1 + float(printed_level)) / 2)
    return Decimal(f"{f:.15g}")


def compute(rec: FieldRecord) -> str:
    """The value `rec`'s transformation gives from its printed numbers (decimal text)."""
    p = rec.printed
    t = rec.transformation
    if t == "as_printed":
        return fraction_to_text(number(p["value"].text))
    if t == "word_number":
        w = p["value"].text.strip().lower()
        if w not in WORDS:
            raise PanelSourceError(f"not a number word: {p['value'].text!r}")
        return str(WORDS[w])
    assert rec.digits is not None  # the model requires it for computed values
    if t == "share_of_count":
        total = number(p["total"].text)
        if total == 0:
            raise PanelSourceError("share of a zero total")
        return _round(number(p["count"].text) / total, rec.digits)
    if t == "relative_change_pct":
        old = number(p["old"].text)
        if old == 0:
            raise PanelSourceError("relative change from zero")
        return _round((number(p["new"].text) - old) / old * 100, rec.digits)
    # interval_level: rescale the side (bound - center) from the printed level to rec.level
    assert rec.level is not None
    lv = number(p["level"].text) / 100
    if not 0 < lv < 1:
        raise PanelSourceError(f"printed level {p['level'].text!r} is not a percentage in (0, 100)")
    center, bound = number(p["center"].text), number(p["bound"].text)
    k = level_factor(lv, parse_decimal(rec.level))
    d = (
        Decimal(center.numerator) / center.denominator
        + (
            Decimal(bound.numerator) / bound.denominator
            - Decimal(center.numerator) / center.denominator
        )
        * k
    )
    return str(d.quantize(Decimal(1).scaleb(-rec.digits), rounding=ROUND_HALF_EVEN))


def value_problems(paper: PanelPaper) -> list[str]:
    """Recorded values that their printed numbers and transformation do not give."""
    out = []
    for rec in paper.fields:
        try:
            got = compute(rec)
        except PanelSourceError as exc:
            out.append(f"{rec.path}: {exc}")
            continue
        if parse_decimal(got) != parse_decimal(rec.value):
            out.append(f"{rec.path}: recorded {rec.value}, its printed numbers give {got}")
    return out


# --- the PDFs ---------------------------------------------------------------------------


class Source:
    """A copy of the repository: a checkout folder or a bare git directory."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bare = (root / "HEAD").is_file() and (root / "objects").is_dir()

    def read(self, rel: str) -> bytes | None:
        if not self.bare:
            f = self.root / rel
            return f.read_bytes() if f.is_file() else None
        r = subprocess.run(
            ["git", f"--git-dir={self.root}", "show", f"HEAD:{rel}"],
            capture_output=True,
            check=False,
        )
        return r.stdout if r.returncode == 0 and r.stdout[:5] == b"%PDF-" else None


def pages_text(pdf: bytes) -> list[str]:
    """Each page's text (PyMuPDF `get_text()`), in page order."""
    try:
        import pymupdf
    except ImportError as exc:  # pragma: no cover - the figures extra is absent
        raise PanelSourceError("PyMuPDF is missing: install the `figures` extra") from exc
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        return [page.get_text() for page in doc]


def occurrences(page: str, token: str) -> list[tuple[int, str]]:
    """(line number, line) of every standalone occurrence of `token` on a page."""
    # not inside a longer number: no digit or decimal point before, no digit or decimal
    # digits after; a comma joins lists ("[0,0,9,18]") except as a thousands separator
    # ("19,504.74" holds neither "19" nor "504.74")
    tok = token.strip()
    pat = re.compile(r"(?<![\d.])" + re.escape(tok) + r"(?!\d|\.\d|,\d{3}(?!\d))", re.IGNORECASE)
    three = re.match(r"\d{3}(?!\d)", tok) is not None

    def hit(ln: str) -> bool:
        return any(
            not (three and m.start() >= 2 and re.match(r"\d,", ln[m.start() - 2 : m.start()]))
            for m in pat.finditer(ln)
        )

    return [(i + 1, ln.strip()) for i, ln in enumerate(page.splitlines()) if hit(ln)]


@dataclass
class Found:
    path: str
    name: str  # the printed input (value, count, bound, ...)
    text: str
    page: int
    lines: list[tuple[int, str]]

    @property
    def ok(self) -> bool:
        return bool(self.lines)


@dataclass
class PaperCheck:
    paper_id: str
    pdf: bool  # the paper's PDF was in the source
    designation: str  # "" when confirmed, else the problem
    found: list[Found] = field(default_factory=list)
    values: list[tuple[str, str, str]] = field(default_factory=list)  # path, recorded, computed

    @property
    def problems(self) -> list[str]:
        out = [f"{self.paper_id}: designation: {self.designation}"] if self.designation else []
        out += [
            f"{self.paper_id}: {f.path}: printed {f.name} {f.text!r} not on page {f.page}"
            for f in self.found
            if not f.ok
        ]
        out += [
            f"{self.paper_id}: {p}: recorded {r}, extracted {c}"
            for p, r, c in self.values
            if parse_decimal(r) != parse_decimal(c)
        ]
        return out


def check_designation(paper: PanelPaper, task: Task, src: Source) -> str:
    d = paper.designation
    assert d is not None
    m = task.manifest
    pdf = src.read(f"{RESULTS_DIR}/{m.year}/{d.results_list}")
    if pdf is None:
        return f"results list {d.results_list} not in the source"
    pages = pages_text(pdf)
    if d.page > len(pages):
        return f"results list has {len(pages)} pages, not {d.page}"
    lines = [ln.strip() for ln in pages[d.page - 1].splitlines()]
    if d.line > len(lines) or not lines[d.line - 1].startswith(paper.paper_id):
        return f"line {d.line} of page {d.page} is not control number {paper.paper_id}"
    after = lines[d.line : d.line + 6]
    if d.award not in after or m.problem not in after:
        return f"no {d.award!r} for problem {m.problem} after the control number"
    return ""


def check_paper(paper: PanelPaper, task: Task, src: Source) -> PaperCheck:
    m = task.manifest
    pdf = src.read(f"{PAPERS_DIR}/{m.year}/{m.problem}/{paper.paper_id}.pdf")
    out = PaperCheck(paper.paper_id, pdf is not None, check_designation(paper, task, src))
    if pdf is None:
        return out
    pages = pages_text(pdf)
    for rec in paper.fields:
        for name, pr in rec.printed.items():
            text = pages[pr.page - 1] if pr.page <= len(pages) else ""
            out.found.append(Found(rec.path, name, pr.text, pr.page, occurrences(text, pr.text)))
        if rec.extraction == "machine":
            out.values.append((rec.path, rec.value, compute(rec)))
    return out


def check_task(task: Task, src: Source) -> list[PaperCheck]:
    return [check_paper(p, task, src) for p in task.panel.papers if p.designation is not None]


def report(task: Task, checks: list[PaperCheck], out=sys.stdout) -> None:  # noqa: ANN001
    print(f"== {task.slug}", file=out)
    recs = {p.paper_id: {r.path: r for r in p.fields} for p in task.panel.papers}
    for c in checks:
        state = "designation confirmed" if not c.designation else f"DESIGNATION: {c.designation}"
        print(f"  {c.paper_id}: {state}" + ("" if c.pdf else " (PDF absent)"), file=out)
        for f in c.found:
            rec = recs[c.paper_id][f.path]
            where = "; ".join(f"l{i}: {ln[:90]}" for i, ln in f.lines[:2]) or "NOT FOUND"
            print(
                f"    {f.path} [{rec.locator}] {f.name}={f.text!r} p{f.page}: {where}",
                file=out,
            )
        for path, rec_v, got in c.values:
            mark = "" if parse_decimal(rec_v) == parse_decimal(got) else "  MISMATCH"
            print(f"    {path} = {got} (recorded {rec_v}){mark}", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tbmm.tooling.panel_extract",
        description="Re-extract every panel value from the papers' PDFs and print it with "
        "its page and context; exit 1 if a printed number, value or designation differs.",
    )
    ap.add_argument(
        "--source", type=Path, required=True, help="MCM-Killer checkout or bare git dir"
    )
    ap.add_argument("--tasks-root", type=Path, default=None)
    ap.add_argument("slugs", nargs="*", help="tasks (default: every task with PDF-read papers)")
    a = ap.parse_args(argv)
    src = Source(a.source)
    bad = 0
    for d in task_dirs(a.tasks_root) if a.tasks_root else task_dirs():
        if a.slugs and d.name not in a.slugs:
            continue
        task = load_task(d)
        if not any(p.designation for p in task.panel.papers):
            continue
        checks = check_task(task, src)
        report(task, checks)
        for c in checks:
            for p in c.problems:
                print(f"  PROBLEM {p}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
