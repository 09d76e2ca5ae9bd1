"""CUMCM 2024 C, Problem 1: replay a 2024–2030 planting plan exactly.

The artifact gives, for each case of Problem 1 (case 1: production beyond the expected
sales is wasted; case 2: it sells at half the 2023 price), the plan as rows
(year, plot, season, crop, area in mu). This module reads the village's data from the
official attachments (附件1: plots and crops; 附件2: the 2023 plan and the per-mu
statistics), checks every rule of the statement on the plan, and computes the plan's
2024–2030 profit exactly (areas as whole units of 1/10^k mu, integer sums, one Fraction at
the end) — no floating point anywhere.

Everything is stated in the task's `verification.md`; in short:

* a plot's growing seasons are `first` and `second` (the result templates' 第一季/第二季;
  single-season crops — grain, rice — are in `first`); the expected sales of a crop in a
  season are its 2023 production in that season (2023 area × 2023 yield per mu); prices
  are the midpoints of 附件2's ranges; yields, costs and prices of smart-greenhouse first
  seasons are those of ordinary greenhouses (附件2, note 2);
* rules, each counted per offending item: suitability, plot area, minimum planting area,
  irrigated land's rice-or-vegetables year, one crop in an irrigated second season, no
  repeated cropping (重茬) in consecutive seasons (2023 included), legumes on the whole
  plot within every three-year window from 2023, and at most K plots per crop and season.

The same data and rules are stated as Lean functions in `TBMM/Replay/Crop.lean`; the data
module `TBMM/Replay/CropData.lean` is generated from the attachments by `lean_data_module`
and each certificate of this task states the replayed profit and the violation count as
kernel-checked obligations (`lean_obligations`).
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import zipfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from fractions import Fraction
from functools import lru_cache
from itertools import compress, repeat
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from tbmm.core import exact
from tbmm.replay import CpuBudget, Outcome, ReplayInputError

# --- the village's data -----------------------------------------------------------------

KINDS = {
    "平旱地": "flat",
    "梯田": "terrace",
    "山坡地": "hillside",
    "水浇地": "irrigated",
    "普通大棚": "greenhouse",
    "智慧大棚": "smart",
}
KIND_ORDER = ("flat", "terrace", "hillside", "irrigated", "greenhouse", "smart")
OPEN_AIR = frozenset({"flat", "terrace", "hillside", "irrigated"})
SEASONS = ("first", "second")
SEASON_OF = {"单季": "first", "第一季": "first", "第二季": "second"}
CASES = ("case1", "case2")
RULES = (
    "suitability",
    "plot_area",
    "min_area",
    "irrigated_mode",
    "irrigated_second_one_crop",
    "rotation",
    "legume",
    "scatter",
)
RICE = "16"  # 附件1: 水稻, the only grain of irrigated land (a single season)
ROW_KEYS = ("year", "plot", "season", "crop", "area_mu")
SHOWN = 3  # offending items named per rule in a detail

_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_RNS = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"


def read_xlsx(path: Path) -> dict[str, list[list[str | None]]]:
    """Every sheet of an .xlsx file as rows of cell texts (stdlib only: the attachments are
    plain Office Open XML; merged cells appear once, in their top-left cell)."""
    with zipfile.ZipFile(path) as z:
        shared: list[str] = []
        if "xl/sharedStrings.xml" in z.namelist():
            for si in ET.fromstring(z.read("xl/sharedStrings.xml")).iter(f"{_NS}si"):
                shared.append("".join(t.text or "" for t in si.iter(f"{_NS}t")))
        rels = ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
        target = {r.get("Id"): r.get("Target", "") for r in rels}
        book = ET.fromstring(z.read("xl/workbook.xml"))
        out: dict[str, list[list[str | None]]] = {}
        for sheet in book.iter(f"{_NS}sheet"):
            ref = target[sheet.get(f"{_RNS}id")].lstrip("/")
            ref = ref if ref.startswith("xl/") else "xl/" + ref
            rows: list[list[str | None]] = []
            for row in ET.fromstring(z.read(ref)).iter(f"{_NS}row"):
                cells: list[str | None] = []
                for c in row.iter(f"{_NS}c"):
                    col = _column(c.get("r", ""))
                    while len(cells) < col:
                        cells.append(None)
                    v = c.find(f"{_NS}v")
                    text: str | None = None
                    if c.get("t") == "s" and v is not None and v.text is not None:
                        text = shared[int(v.text)]
                    elif c.get("t") == "inlineStr":
                        text = "".join(t.text or "" for t in c.iter(f"{_NS}t"))
                    elif v is not None:
                        text = v.text
                    cells.append(text.strip() if isinstance(text, str) else None)
                rows.append(cells)
            out[sheet.get("name", "")] = rows
        return out


def _column(ref: str) -> int:
    n = 0
    for ch in ref:
        if not ch.isalpha():
            break
        n = n * 26 + ord(ch.upper()) - 64
    return n - 1


@dataclass(frozen=True)
class Plot:
    id: str
    kind: str
    area: Fraction  # mu
    index: int  # position in 附件1


@dataclass(frozen=True)
class Crop:
    id: str  # 附件1's 作物编号 as text ("1".."41")
    number: int
    name: str
    group: str  # grain | vegetable | fungus
    legume: bool


@dataclass(frozen=True)
class Stat:
    yield_jin: Fraction  # 亩产量/斤
    cost: Fraction  # 种植成本/(元/亩)
    price: Fraction  # midpoint of 销售单价/(元/斤)


@dataclass
class CropData:
    plots: dict[str, Plot]
    crops: dict[str, Crop]
    stats: dict[tuple[str, str, str], Stat]  # (kind, season, crop) -> per-mu figures
    price: dict[tuple[str, str], Fraction]  # (season, crop) -> price (one per crop and season)
    history: dict[tuple[str, str, str], Fraction]  # 2023: (plot, season, crop) -> area
    demand: dict[tuple[str, str], Fraction] = field(default_factory=dict)  # (season, crop) -> jin
    history_year: int = 2023
    tables: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)  # per Rules

    def production(self, plot: str, season: str, crop: str, area: Fraction) -> Fraction:
        st = self.stats.get((self.plots[plot].kind, season, crop))
        return area * st.yield_jin if st else Fraction(0)


def _frac(text: str | None, what: str) -> Fraction:
    if text is None:
        raise ValueError(f"{what}: empty cell")
    return exact.parse_decimal(text.strip())


def _price_mid(text: str | None, what: str) -> Fraction:
    if text is None or "-" not in text:
        raise ValueError(f"{what}: not a price range: {text!r}")
    lo, hi = text.split("-", 1)
    return (_frac(lo, what) + _frac(hi, what)) / 2


@lru_cache(maxsize=4)
def _load(att1: Path, att2: Path, _stamp: tuple[int, int]) -> CropData:
    s1 = read_xlsx(att1)
    s2 = read_xlsx(att2)
    plots_sheet, crops_sheet = list(s1.values())[:2]
    plan_sheet, stats_sheet = list(s2.values())[:2]
    plots: dict[str, Plot] = {}
    for row in plots_sheet[1:]:
        if len(row) < 3 or not row[0]:
            continue
        pid, kind = row[0], KINDS[(row[1] or "").strip()]
        plots[pid] = Plot(pid, kind, _frac(row[2], f"附件1 plot {pid} area"), len(plots))
    crops: dict[str, Crop] = {}
    for row in crops_sheet[1:]:
        if len(row) < 3 or not row[0] or not row[0].isdigit():
            continue
        kind = row[2] or ""
        group = (
            "grain"
            if kind.startswith("粮食")
            else "vegetable"
            if kind.startswith("蔬菜")
            else "fungus"
        )
        if group == "fungus" and kind != "食用菌":
            raise ValueError(f"附件1 crop {row[0]}: unknown type {kind!r}")
        crops[row[0]] = Crop(row[0], int(row[0]), (row[1] or "").strip(), group, "豆类" in kind)
    stats: dict[tuple[str, str, str], Stat] = {}
    for row in stats_sheet[1:]:
        if len(row) < 8 or not row[1] or not row[1].isdigit():
            continue
        key = (KINDS[(row[3] or "").strip()], SEASON_OF[(row[4] or "").strip()], row[1])
        what = f"附件2 statistics row {row[0]}"
        st = Stat(_frac(row[5], what), _frac(row[6], what), _price_mid(row[7], what))
        if st.yield_jin.denominator != 1 or st.cost.denominator != 1:
            raise ValueError(f"{what}: the replay counts yields and costs in whole jin and yuan")
        stats[key] = st
    # 附件2 note (2): a smart greenhouse's first season has the ordinary greenhouse's crops,
    # yields, costs and prices (the table lists only its second season).
    for (kind, season, crop), st in list(stats.items()):
        if kind == "greenhouse" and season == "first":
            stats.setdefault(("smart", "first", crop), st)
    price: dict[tuple[str, str], Fraction] = {}
    for (_, season, crop), st in stats.items():
        if price.setdefault((season, crop), st.price) != st.price:
            raise ValueError(f"附件2: crop {crop} has two prices in the {season} season")
    history: dict[tuple[str, str, str], Fraction] = {}
    plot = ""
    for row in plan_sheet[1:]:
        if len(row) < 6 or not row[1] or not row[1].isdigit():
            continue
        plot = row[0] or plot  # merged plot cells: the name is in the first row only
        key = (plot, SEASON_OF[(row[5] or "").strip()], row[1])
        history[key] = history.get(key, Fraction(0)) + _frac(row[4], f"附件2 2023 plan {plot}")
    data = CropData(plots, crops, stats, price, history)
    demand: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    for (p, season, crop), area in history.items():
        if (plots[p].kind, season, crop) not in stats:
            raise ValueError(f"附件2: the 2023 plan has crop {crop} on {p} in the {season} season")
        demand[(season, crop)] += data.production(p, season, crop, area)
    data.demand = dict(demand)
    return data


def load_data(attachments: Path) -> CropData:
    """The village's data from 附件1/附件2 in `attachments` (cached per file version)."""
    a1, a2 = attachments / "附件1.xlsx", attachments / "附件2.xlsx"
    return _load(a1, a2, (a1.stat().st_mtime_ns, a2.stat().st_mtime_ns))


# --- rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rules:
    """The statement's rules made precise (replay.toml [params])."""

    first_year: int
    last_year: int
    min_area_open: Fraction
    min_area_greenhouse: Fraction
    max_plots: int
    legume_window: int

    def __hash__(self) -> int:
        # the per-(data, rules) tables are looked up by Rules many times per replay: the
        # hash of its Fractions once (the fields never change)
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", h)
        return h

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Rules:
        """The rules of `params` (one object per distinct text of the parameters, so that
        the tables cached per rules are found by identity)."""
        return _rules_of(tuple(sorted((str(k), str(v)) for k, v in params.items())))

    @property
    def years(self) -> range:
        return range(self.first_year, self.last_year + 1)

    def min_area(self, kind: str) -> Fraction:
        return self.min_area_open if kind in OPEN_AIR else self.min_area_greenhouse


@lru_cache(maxsize=16)
def _rules_of(items: tuple[tuple[str, str], ...]) -> Rules:
    params = dict(items)
    return Rules(
        int(params["first_year"]),
        int(params["last_year"]),
        exact.parse_decimal(params["min_area_open_mu"]),
        exact.parse_decimal(params["min_area_greenhouse_mu"]),
        int(params["max_plots_per_crop_season"]),
        int(params["legume_window_years"]),
    )


Cell = dict[str, Fraction]  # crop -> area (mu), one (plot, year, season)
Key = tuple[str, int, str]  # (plot, year, season)
UnitCell = dict[str, int]  # crop -> area in units of 1/scale mu


def _decimals(q: Fraction) -> int:
    """The least k with q * 10**k an integer (q's denominator is 2**a * 5**b: a JSON number)."""
    d, k = q.denominator, 0
    while d != 1:
        if d % 10 == 0:
            d //= 10
        elif d % 2 == 0:
            d //= 2
        elif d % 5 == 0:
            d //= 5
        else:
            raise ValueError(f"{q} is not a decimal")
        k += 1
    return k


def _units(cells: dict[Key, Cell]) -> tuple[dict[Key, UnitCell], int]:
    """Fraction cells as integers in units of 1/10**k mu (k: the most decimals needed)."""
    k = max((_decimals(a) for cell in cells.values() for a in cell.values()), default=0)
    scale = 10**k
    return {
        key: {c: a.numerator * (scale // a.denominator) for c, a in cell.items()}
        for key, cell in cells.items()
    }, scale


class Plan:
    """A parsed plan: positive-area plantings per (plot, year, season), each with its row.

    The replay counts areas as integers in units of 1/scale mu (`units`, scale a power of
    ten: every JSON number is a decimal), so the rules and the profit run on int arithmetic;
    `cells` (the same areas as Fractions) is built on first use (Lean terms, tests), and a
    Plan built from `cells` gets its `units` on first use. Which row holds a planting
    (only violation messages name rows) is `row_index`: from `row_of`, or, for a plan read on
    the plain path, from an int-keyed index (`lookup`); `row_of` is then built on first use."""

    def __init__(
        self,
        cells: dict[Key, Cell] | None,
        row_of: dict[tuple[str, int, str, str], int] | None,
        rows: int,
        *,
        units: dict[Key, UnitCell] | None = None,
        scale: int = 1,
        lookup: _Lookup | None = None,
        coded: dict[int, UnitCell] | None = None,
    ) -> None:
        self._cells = cells
        self._from_cells = units is None
        self._units = units
        self._scale = scale
        self._row_of = row_of
        self._lookup = lookup
        self._coded = coded
        self.rows = rows

    def planting_keys(self, ct: Codes, cells: dict[int, UnitCell]) -> list[int] | Iterator[int]:
        """The `Codes` key of every planting of `cells` (this plan's `coded_cells`): from
        the plain path's columns in C-level passes, else cell by cell."""
        lk = self._lookup
        if lk is not None and cells is self._coded:
            return lk.keys(positive=True)
        number, bound = ct.number, ct.bound
        return [code * bound + number[c] for code, cell in cells.items() for c in cell]

    def coded_cells(self, ct: Codes, min_scale: int) -> tuple[dict[int, UnitCell], int]:
        """`unit_cells` keyed by `Codes` code instead of (plot, year, season)."""
        units, scale = self.unit_cells(min_scale)
        if self._coded is not None and scale == self._scale and not self._from_cells:
            return self._coded, scale
        code_of = ct.code_of
        return {code_of[k]: cell for k, cell in units.items()}, scale

    @property
    def row_of(self) -> dict[tuple[str, int, str, str], int]:
        if self._row_of is None:
            lk = self._lookup
            assert lk is not None
            crop_of = {x: c for c, x in lk.number.items()}
            self._row_of = {
                (*lk.key_of[c], crop_of[x]): i
                for i, (c, x) in enumerate(zip(lk.codes, lk.nums, strict=True))
            }
        return self._row_of

    def row_index(self, plot: str, year: int, season: str, crop: str) -> int | None:
        lk = self._lookup
        if lk is None or self._row_of is not None:
            return self.row_of.get((plot, year, season, crop))
        code = lk.code_of.get((plot, year, season))
        num = lk.number.get(crop)
        return None if code is None or num is None else lk.index.get(code * lk.bound + num)

    @property
    def cells(self) -> dict[Key, Cell]:
        if self._cells is None:
            sc = self._scale
            self._cells = {
                key: {c: Fraction(u, sc) for c, u in cell.items()}
                for key, cell in (self._units or {}).items()
            }
        return self._cells

    def unit_cells(self, min_scale: int = 1) -> tuple[dict[Key, UnitCell], int]:
        """(areas in units of 1/scale mu, scale), scale a multiple of `min_scale` (a power of
        ten: the data's own decimals). A Plan built from `cells` reads them afresh each time
        (a test may edit them)."""
        if self._units is None or self._from_cells:
            self._units, self._scale = _units(self._cells or {})
            self._from_cells = True
        units, scale = self._units, self._scale
        if scale % min_scale:
            f = min_scale // math.gcd(scale, min_scale)
            units = {k: {c: u * f for c, u in cell.items()} for k, cell in units.items()}
            scale *= f
        return units, scale

    def label(self, prefix: str, plot: str, year: int, season: str, crop: str) -> str:
        i = self.row_index(plot, year, season, crop)
        where = f"{prefix}[{i}]" if i is not None else "the 2023 plan (附件2)"
        return f"{where} ({year} {season}, {plot}, crop {crop})"


@dataclass(frozen=True)
class Tables:
    """Per (data, rules): what the per-row work looks up, precomputed once."""

    scale: int  # 10**k: every area of the data and the rules is a whole number of 1/scale mu
    year_of_text: dict[str, int]
    plot_frac: dict[str, tuple[int, int]]  # plot -> area (numerator, denominator)
    plot_u: dict[str, int]  # plot -> area in units
    min_u: dict[str, int]  # kind -> minimum area in units
    hist_u: dict[Key, UnitCell]  # the 2023 plan in units
    stat_yc: dict[tuple[str, str, str], tuple[int, int]]  # (kind, season, crop) -> yield, cost
    legume: frozenset[str]
    grain: frozenset[str]
    price_den: int  # the prices' common denominator
    price_int: dict[tuple[str, str], int]  # (season, crop) -> price * price_den
    demand_u: dict[tuple[str, str], int]  # (season, crop) -> expected sales (jin) * scale


def tables(data: CropData, rules: Rules) -> Tables:
    hit = data.tables.get(rules)
    if hit is not None:
        return hit
    areas = [p.area for p in data.plots.values()]
    areas += [rules.min_area_open, rules.min_area_greenhouse, *data.history.values()]
    scale = 10 ** max(_decimals(a) for a in areas)

    def u(q: Fraction) -> int:
        return q.numerator * (scale // q.denominator)

    pd = price_den(data)
    hist: dict[Key, UnitCell] = {}
    for (plot, season, crop), area in data.history.items():
        hist.setdefault((plot, data.history_year, season), {})[crop] = u(area)
    t = Tables(
        scale,
        {str(y): y for y in rules.years},
        {pid: (p.area.numerator, p.area.denominator) for pid, p in data.plots.items()},
        {pid: u(p.area) for pid, p in data.plots.items()},
        {k: u(rules.min_area(k)) for k in KIND_ORDER},
        hist,
        {k: (int(st.yield_jin), int(st.cost)) for k, st in data.stats.items()},
        frozenset(c for c, cr in data.crops.items() if cr.legume),
        frozenset(c for c, cr in data.crops.items() if cr.group == "grain"),
        pd,
        {k: int(q * pd) for k, q in data.price.items()},
        {k: _whole(q * scale, f"demand {k}") for k, q in data.demand.items()},
    )
    data.tables[rules] = t
    return t


def _whole(q: Fraction, what: str) -> int:
    if q.denominator != 1:
        raise ValueError(f"{what}: {q} is not a whole number of units")
    return int(q)


def _row_checked(
    row: Any, where: str, data: CropData, rules: Rules
) -> tuple[str, int, str, str, Fraction]:
    """One row validated strictly (the reference order of checks and messages): the fast
    path of `parse_plan` falls back to it for anything but the plain case."""
    if not isinstance(row, dict):
        raise ReplayInputError(f"{where}: not an object")
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise ReplayInputError(f"{where}: missing {', '.join(missing)}")
    year, plot, season, crop, area = (row[k] for k in ROW_KEYS)
    if not isinstance(year, exact.Num):
        raise ReplayInputError(f"{where}.year: not an integer")
    # a plain JSON integer needs no Fraction; anything else ("2024.0", "2.024e3") is read exactly
    y = int(year.text) if year.is_int_literal and len(year.text) < 8 else None
    if y is None:
        if year.value.denominator != 1:
            raise ReplayInputError(f"{where}.year: not an integer")
        y = int(year.value)
    if y not in rules.years:
        raise ReplayInputError(f"{where}.year: {y} is outside {rules.first_year}-{rules.last_year}")
    if not isinstance(plot, str) or plot not in data.plots:
        raise ReplayInputError(f"{where}.plot: not a plot of 附件1")
    if not isinstance(season, str) or season not in SEASONS:
        raise ReplayInputError(f"{where}.season: not one of {', '.join(SEASONS)}")
    if not isinstance(crop, str) or crop not in data.crops:
        raise ReplayInputError(f'{where}.crop: not a crop number of 附件1 ("1".."41")')
    if not isinstance(area, exact.Num):
        raise ReplayInputError(f"{where}.area_mu: not a number")
    a = area.value
    if a < 0:
        raise ReplayInputError(f"{where}.area_mu: negative ({area.text})")
    if a > data.plots[plot].area:
        # Beyond its plot on its own: no plan can use it; refused before any arithmetic
        # (this also bounds every number the replay and the certificate handle).
        raise ReplayInputError(
            f"{where}.area_mu: {area.text} exceeds the area of plot {plot} "
            f"({data.plots[plot].area} mu)"
        )
    return plot, y, season, crop, a


def parse_plan(
    rows: Any, prefix: str, data: CropData, rules: Rules, max_rows: int, deadline: CpuBudget
) -> Plan:
    """Validate a plan's rows strictly; every defect is a `ReplayInputError` naming the row.

    The plain row (an object with the five keys, a JSON integer year of the plan, known
    plot, season and crop, an area written without exponent within its plot) is read on
    a fast path with integer arithmetic; any other row goes through `_row_checked`, which
    raises the reference message or returns the row's exact area."""
    if not isinstance(rows, list):
        raise ReplayInputError(f"{prefix}: missing or not a list of rows")
    if len(rows) > max_rows:
        raise ReplayInputError(
            f"{prefix}: {len(rows)} rows, more than the {max_rows} (year, plot, season, crop)"
            " combinations the statement allows"
        )
    tb = tables(data, rules)
    # areas in units of 1/10**K mu: K starts at 6 decimals (or the data's, if more) and
    # grows, rescaling what is stored, when a row needs more (the result does not depend on K)
    K = max(6, len(str(tb.scale)) - 1)
    deadline.check()
    plain = _parse_plain(rows, data, rules, K)
    if plain is not None:
        return plain
    year_of, plot_frac, plots, crops = tb.year_of_text, tb.plot_frac, data.plots, data.crops
    seasons = _SEASON_SET
    Num, get_row = exact.Num, _GET_ROW
    row_of: dict[tuple[str, int, str, str], int] = {}
    units: dict[Key, UnitCell] = {}
    plot_u = {pid: pn * 10**K // pd for pid, (pn, pd) in plot_frac.items()}
    seen: dict[str, int | None] = {}  # area text -> units (None: more than K decimals)
    n_rows = len(rows)
    for start in range(0, n_rows, 512):
        deadline.check()
        for i in range(start, min(n_rows, start + 512)):
            row = rows[i]
            u = None
            if type(row) is dict and len(row) >= 5:
                try:
                    year, plot, season, crop, area = get_row(row)
                except KeyError:
                    year = None
                if (
                    type(year) is Num
                    and year.is_int_literal
                    and type(plot) is str
                    and type(season) is str
                    and type(crop) is str
                    and type(area) is Num
                ):
                    y = year_of.get(year.text)
                    text = area.text
                    if y is not None and plot in plots and season in seasons and crop in crops:
                        if text in seen:  # plans repeat their areas
                            u = seen[text]
                        elif "e" not in text and "E" not in text:
                            whole, _, frac = text.partition(".")
                            k = len(frac)
                            u = seen[text] = int(whole + frac) * 10 ** (K - k) if k <= K else None
                        if u is not None and not 0 <= u <= plot_u[plot]:
                            u = None
            if u is None:
                plot, y, season, crop, a = _row_checked(row, f"{prefix}[{i}]", data, rules)
                k = _decimals(a)
                if k > K:  # rescale everything held to 10**k
                    f = 10 ** (k - K)
                    for cell in units.values():
                        for c in cell:
                            cell[c] *= f
                    K = k
                    plot_u = {pid: pn * 10**K // pd for pid, (pn, pd) in plot_frac.items()}
                    seen.clear()
                u = a.numerator * (10**K // a.denominator)
            first = row_of.setdefault((plot, y, season, crop), i)
            if first != i:
                raise ReplayInputError(
                    f"{prefix}[{i}]: the same (year, plot, season, crop) as {prefix}[{first}]"
                )
            if u > 0:
                key = (plot, y, season)
                try:
                    units[key][crop] = u
                except KeyError:
                    units[key] = {crop: u}
    return Plan(None, row_of, n_rows, units=units, scale=10**K)


_SEASON_SET = frozenset(SEASONS)
_GET_ROW = operator.itemgetter(*ROW_KEYS)
_TEXT = operator.attrgetter("text")


@dataclass(frozen=True)
class Codes:
    """Per (data, rules): each (plot, year, season) of 2023 and the plan's years as an int
    code, in the order the rules describe cells (year, season, plot in 附件1 order), so
    that a sort of codes is that order and the next season of a plot is code + P; a
    planting's key is code * bound + the crop's number. What the rules look up per cell is
    a list indexed by code."""

    P: int  # plots
    bound: int  # crop numbers are below it
    code_of: dict[Key, int]
    key_of: list[Key]  # code -> (plot, year, season)
    number: dict[str, int]  # crop -> number
    ok: list[frozenset[str]]  # code -> the crops with statistics for its kind and season
    min_u: list[int]  # code -> minimum area (data units)
    plot_u: list[int]  # code -> plot area (data units)
    irrigated_second: list[bool]
    yc: list[dict[str, tuple[int, int]]]  # code -> crop -> (yield, cost)
    hist: dict[int, UnitCell]  # the 2023 plan by code (data units)
    hist_keys: frozenset[int]
    hist_second_keys: frozenset[int]  # 2023 second season: never the season after 2023's first
    grain_first: frozenset[int]  # every first-season grain planting key
    slot_crop: dict[int, int]  # planting key -> season slot * bound + crop number
    code_of_text: dict[tuple[str, str, str], int]  # (plot, year as text, season) -> code


def codes(data: CropData, rules: Rules) -> Codes:
    hit = data.tables.get(("codes", rules))
    if hit is not None:
        return hit
    years = [data.history_year, *rules.years]
    if years != list(range(years[0], years[0] + len(years))):
        raise ValueError("the crop replay needs the plan's years to follow 2023 without a gap")
    tb = tables(data, rules)
    plots = list(data.plots.values())
    P = len(plots)
    key_of = [(p.id, y, s) for y in years for s in SEASONS for p in plots]
    code_of = {k: i for i, k in enumerate(key_of)}
    number = {c: cr.number for c, cr in data.crops.items()}
    bound = 1 + max(number.values())
    suit = _suitable(data)
    by_ks = _stats_by_kind_season(data, tb)
    kinds = [data.plots[p].kind for p, _, _ in key_of]
    hist = {code_of[k]: cell for k, cell in tb.hist_u.items()}
    hist_keys = frozenset(c * bound + number[x] for c, cell in hist.items() for x in cell)
    grain = [number[c] for c in tb.grain]
    t = Codes(
        P,
        bound,
        code_of,
        key_of,
        number,
        [suit[(kd, s)] for kd, (_, _, s) in zip(kinds, key_of, strict=True)],
        [tb.min_u[kd] for kd in kinds],
        [tb.plot_u[p] for p, _, _ in key_of],
        [kd == "irrigated" and s == "second" for kd, (_, _, s) in zip(kinds, key_of, strict=True)],
        [by_ks[(kd, s)] for kd, (_, _, s) in zip(kinds, key_of, strict=True)],
        hist,
        hist_keys,
        frozenset(k for k in hist_keys if (k // bound) // P == 1),
        frozenset(
            c * bound + g for c, (_, _, s) in enumerate(key_of) if s == "first" for g in grain
        ),
        {c * bound + x: (c // P) * bound + x for c in range(len(key_of)) for x in number.values()},
        {(p, str(y), s): c for (p, y, s), c in code_of.items() if y in rules.years},
    )
    data.tables[("codes", rules)] = t
    return t


def _parse_plain(rows: list[Any], data: CropData, rules: Rules, K: int) -> Plan | None:
    """`parse_plan` for a plan whose every row is plain (see there), column by column in
    C-level passes (map, zip, set) instead of a Python loop per row; None as soon as any row
    is not plain or two rows share a key, and `parse_plan`'s row loop then reads the plan
    afresh (the reference order of checks and messages). The same Plan as that loop.

    It keeps no tuple per row (a (plot, year, season) is an int code, a planting's key the
    code times the crop numbers' bound plus the crop's number): the cyclic garbage collector
    runs on the count of container objects allocated, and the freshly parsed artifact it
    would walk each time is large. `row_of` is built only if a message names a row."""
    n = len(rows)
    if not n:
        return None
    tb = tables(data, rules)
    ct = codes(data, rules)
    code_of, key_of, number, bound = ct.code_of, ct.key_of, ct.number, ct.bound
    try:
        # one pass over the rows (each row's dict is read once: a fresh artifact is
        # larger than the CPU's caches), its tuple freed at once (nothing for the collector);
        # a row that is not an object raises TypeError, a missing key KeyError
        years: list[Any] = []
        plots_c: list[Any] = []
        seasons_c: list[Any] = []
        crops_c: list[Any] = []
        areas: list[Any] = []
        ya, pa, sa, ca, aa = (
            years.append,
            plots_c.append,
            seasons_c.append,
            crops_c.append,
            areas.append,
        )
        for row in rows:
            y, p, s, c, a = _GET_ROW(row)
            ya(y)
            pa(p)
            sa(s)
            ca(c)
            aa(a)
        # (plot, year text, season) -> code: None unless the plot and the season are the
        # data's texts and the year a plain JSON integer of the plan (only a Num has a text,
        # and only a plain integer literal's text is "2024"); an unhashable value raises
        # TypeError. The crop: one of the data's texts.
        key3 = zip(plots_c, map(_TEXT, years), seasons_c, strict=True)
        cs = list(map(ct.code_of_text.get, key3))
        nums = list(map(number.get, crops_c))
        texts = list(map(_TEXT, areas))
    except (KeyError, TypeError, AttributeError):
        return None
    if None in cs or None in nums or set(map(type, areas)) != {exact.Num}:
        return None
    unit_of: dict[str, int | None] = {}
    for text in set(texts):  # plans repeat their areas: each distinct text read once
        u = None
        if "e" not in text and "E" not in text:
            whole, _, frac = text.partition(".")
            k = len(frac)
            if k <= K:
                u = int(whole + frac) * 10 ** (K - k)
                if u < 0:
                    u = None
        unit_of[text] = u
    us = list(map(unit_of.__getitem__, texts))
    if None in us:
        return None
    plot_u = {pid: pn * 10**K // pd for pid, (pn, pd) in tb.plot_frac.items()}
    if not all(map(operator.le, us, map(plot_u.__getitem__, plots_c))):
        return None
    cells: dict[int, UnitCell] = defaultdict(dict)
    for code, crop, u in zip(cs, crops_c, us, strict=True):
        cells[code][crop] = u
    if sum(map(len, cells.values())) != n:
        return None  # a repeated key: the row loop names the first repeat
    if 0 in us:  # rows of no area plant nothing
        for code in [c for c, cell in cells.items() if 0 in cell.values()]:
            cell = cells[code] = {c: u for c, u in cells[code].items() if u}
            if not cell:
                del cells[code]
    units = {key_of[code]: cell for code, cell in cells.items()}
    lookup = _Lookup(code_of, key_of, number, bound, cs, nums, us)
    return Plan(None, None, n, units=units, scale=10**K, lookup=lookup, coded=dict(cells))


@dataclass
class _Lookup:
    """The row of each planting of a plan read on the plain path, by int key."""

    code_of: dict[Key, int]
    key_of: list[Key]
    number: dict[str, int]
    bound: int
    codes: list[int]  # per row
    nums: list[int]  # per row: the crop's number
    units: list[int]  # per row: area in plan units

    def keys(self, positive: bool = False) -> Iterator[int]:
        """Per row (or per row of positive area): code * bound + crop number."""
        keys = map(operator.add, map(operator.mul, self.codes, repeat(self.bound)), self.nums)
        return compress(keys, self.units) if positive else keys

    @functools.cached_property
    def index(self) -> dict[int, int]:
        """Planting key -> row (int -> int: nothing the collector tracks)."""
        return dict(zip(self.keys(), range(len(self.codes)), strict=False))


@dataclass
class Verdict:
    """Rule violations (messages per rule) and the profit of one plan under one sale rule."""

    violations: dict[str, Found]
    profit: Fraction
    revenue: Fraction
    cost: Fraction

    @property
    def total(self) -> int:
        return sum(len(v) for v in self.violations.values())


class Found:
    """Violations of one rule: counted, and only the first few described (the description
    of a huge plan's every violation would cost more than the replay)."""

    def __init__(self) -> None:
        self.count = 0
        self.shown: list[str] = []

    def hit(self) -> bool:
        """Count one violation; true while it should also be described."""
        self.count += 1
        return len(self.shown) < SHOWN

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0


def check_rules(plan: Plan, data: CropData, rules: Rules, prefix: str) -> dict[str, Found]:
    """Every rule's violations, counted per offending item, the first SHOWN described (in
    the order of the frozen reference: tests/reference_replays/crop_planting_v1.py).

    Areas are integers in units of 1/scale mu; cells are keyed by `Codes` code (a sort is
    the reference's cell order). A cell whose crops are all suitable and all at or above the
    minimum area (one C-level subset test and one min) skips the per-crop loop, which only
    describes violations; repeated cropping is counted with set operations on planting keys
    (the next season of a key is key + P * bound) and described by the reference's loop,
    which stops once SHOWN are described."""
    tb = tables(data, rules)
    ct = codes(data, rules)
    cells, S = plan.coded_cells(ct, tb.scale)
    f = S // tb.scale  # data units -> plan units
    v: dict[str, Found] = {r: Found() for r in RULES}
    lab = plan.label
    key_of, P, bound = ct.key_of, ct.P, ct.bound

    def mu(u: int) -> str:
        return _mu(Fraction(u, S))

    plots = data.plots
    sv, mv = v["suitability"], v["min_area"]
    pa, one = v["plot_area"], v["irrigated_second_one_crop"]
    ok_of, min_of, area_of, irr2 = ct.ok, ct.min_u, ct.plot_u, ct.irrigated_second
    order = sorted(compress(cells, cells.values()))  # an empty cell breaks no rule
    in_order = list(map(cells.__getitem__, order))
    mins = list(map(min_of.__getitem__, order))
    areas = list(map(area_of.__getitem__, order))
    if f != 1:
        mins = list(map(operator.mul, mins, repeat(f)))
        areas = list(map(operator.mul, areas, repeat(f)))
    # per cell, in C: every crop suitable and every area at or above the minimum; the total
    # within the plot; one crop in an irrigated second season
    suitable = map(operator.le, map(dict.keys, in_order), map(ok_of.__getitem__, order))
    big = map(operator.ge, map(min, map(dict.values, in_order)), mins)
    fine = map(operator.and_, suitable, big)
    for i in compress(range(len(order)), map(operator.not_, fine)):
        code, cell, min_u = order[i], in_order[i], mins[i]
        ok = ok_of[code]
        bad = cell.keys() - ok
        small = bisect.bisect_left(sorted(cell.values()), min_u)  # areas below the minimum
        if (not bad or len(sv.shown) >= SHOWN) and (not small or len(mv.shown) >= SHOWN):
            sv.count += len(bad)  # nothing left to describe: counted only
            mv.count += small
            continue
        plot, year, season = key_of[code]
        kind = plots[plot].kind
        for crop, area in sorted(cell.items(), key=lambda kv: int(kv[0])):
            if crop not in ok and sv.hit():
                sv.shown.append(
                    f"{lab(prefix, plot, year, season, crop)}: crop {crop} cannot grow "
                    f"on {kind} land in the {season} season"
                )
            if area < min_u and mv.hit():
                mv.shown.append(
                    f"{lab(prefix, plot, year, season, crop)}: {mu(area)} mu < "
                    f"{_mu(rules.min_area(kind))} mu"
                )
    totals = list(map(sum, map(dict.values, in_order)))
    for i in compress(range(len(order)), map(operator.gt, totals, areas)):
        if pa.hit():
            plot, year, season = key_of[order[i]]
            pa.shown.append(
                f"{plot} {year} {season}: {mu(totals[i])} mu planted on a "
                f"{_mu(plots[plot].area)}-mu plot "
                f"(rows {_rows(plan, prefix, plot, year, season, in_order[i])})"
            )
    several = map(operator.lt, repeat(1), map(len, in_order))
    for i in compress(range(len(order)), map(operator.and_, map(irr2.__getitem__, order), several)):
        if one.hit():
            plot, year, season = key_of[order[i]]
            cell = in_order[i]
            one.shown.append(
                f"{plot} {year} second: {len(cell)} crops "
                f"(rows {_rows(plan, prefix, plot, year, season, cell)})"
            )
    empty: UnitCell = {}
    mode = v["irrigated_mode"]
    code_of = ct.code_of
    for plot, p in plots.items():
        if p.kind != "irrigated":
            continue
        for year in rules.years:
            first = cells.get(code_of[(plot, year, "first")], empty)
            if RICE not in first:
                continue
            second = cells.get(code_of[(plot, year, "second")], empty)
            if (len(first) > 1 or second) and mode.hit():
                mode.shown.append(
                    f"{lab(prefix, plot, year, 'first', RICE)}: rice and vegetables on "
                    f"irrigated plot {plot} in the same year"
                )
    hist = ct.hist if f == 1 else _scaled_hist(data, rules, ct, f)
    allc = {**hist, **cells}
    number = ct.number
    plan_keys = list(plan.planting_keys(ct, cells))
    keys = set(plan_keys)
    keys |= ct.hist_keys
    D = P * bound
    after = set(map(D.__add__, keys))  # each planting moved to the plot's next season
    after &= keys
    after -= ct.hist_second_keys  # the 2023 plan is data, not checked against itself
    after_grain = set(map((2 * D).__add__, keys & ct.grain_first))  # a grain's next year
    after_grain &= keys
    rot = v["rotation"]
    if after or after_grain:
        _describe_rotation(rot, allc, plan, data, rules, ct, prefix)
        rot.count = len(after) + len(after_grain)
    legume = tb.legume
    Y = 1 + len(rules.years)
    leg = [0] * (Y * P)  # per (year index, plot index)
    with_legumes = compress(allc.items(), map(operator.not_, map(legume.isdisjoint, allc.values())))
    for code, cell in with_legumes:
        leg[(code // (2 * P)) * P + code % P] += sum(
            map(cell.__getitem__, legume.intersection(cell))
        )
    lv = v["legume"]
    window = rules.legume_window
    first_area = area_of[:P] if f == 1 else list(map(operator.mul, area_of[:P], repeat(f)))
    short: list[tuple[int, int, int]] = []  # (plot index, window start, legume area)
    for start in range(data.history_year, rules.last_year - window + 2):
        y0 = start - data.history_year
        got = leg[y0 * P : y0 * P + P]  # every plot's legumes over the window, in C
        for d in range(1, window):
            got = list(map(operator.add, got, leg[(y0 + d) * P : (y0 + d) * P + P]))
        short += [(i, start, got[i]) for i in compress(range(P), map(operator.lt, got, first_area))]
    lv.count = len(short)
    names = list(plots)
    for i, start, got_i in sorted(short)[:SHOWN]:  # the reference's order: plot, then window
        lv.shown.append(
            f"plot {names[i]}, {start}-{start + window - 1}: legumes on {mu(got_i)} mu "
            f"of {_mu(plots[names[i]].area)} mu"
        )
    crop_of = {x: c for c, x in number.items()}
    over = [  # plots per crop and season slot, counted in C
        (*divmod(sc, bound), n)
        for sc, n in Counter(map(ct.slot_crop.__getitem__, plan_keys)).items()
        if n > rules.max_plots
    ]
    sc = v["scatter"]
    for slot, x, n in sorted(over):
        crop = crop_of[x]
        if sc.hit():
            _, year, season = key_of[slot * P]
            ps = [
                key_of[c][0] for c in range(slot * P, slot * P + P) if crop in cells.get(c, empty)
            ]
            sc.shown.append(
                f"{year} {season}, crop {crop}: on {n} plots > {rules.max_plots} ({', '.join(ps)})"
            )
    return v


def _scaled_hist(data: CropData, rules: Rules, ct: Codes, f: int) -> dict[int, UnitCell]:
    """The 2023 plan by code in units f times smaller (cached on the data for the usual f:
    plans of up to 15 decimals; the cache stays small whatever artifacts arrive)."""
    hit = data.tables.get(("hist", rules, f))
    if hit is None:
        hit = {k: {c: u * f for c, u in cell.items()} for k, cell in ct.hist.items()}
        if f <= 10**15:
            data.tables[("hist", rules, f)] = hit
    return hit


def _describe_rotation(
    rot: Found,
    allc: dict[int, UnitCell],
    plan: Plan,
    data: CropData,
    rules: Rules,
    ct: Codes,
    prefix: str,
) -> None:
    """The first SHOWN repeated croppings in the reference's order (plot, year, then the
    season after the second, the second after the first, the next year's first after a
    grain); the count is set by the caller."""
    empty: UnitCell = {}
    code_of, grain = ct.code_of, tables(data, rules).grain
    last = rules.last_year
    for plot in data.plots:
        for y in [data.history_year, *rules.years]:
            f_ = allc.get(code_of[(plot, y, "first")], empty)
            s_ = allc.get(code_of[(plot, y, "second")], empty)
            nf = allc.get(code_of[(plot, y + 1, "first")], empty) if y < last else empty
            pairs: list[tuple[tuple[int, str], Any, tuple[int, str], Any]] = [
                ((y, "second"), s_.keys(), (y + 1, "first"), nf.keys())
            ]
            if y != data.history_year:  # the 2023 plan is data, not checked against itself
                pairs.append(((y, "first"), f_.keys(), (y, "second"), s_.keys()))
            pairs.append(((y, "first"), f_.keys() & grain, (y + 1, "first"), nf.keys()))
            for (y1, s1), c1, (y2, s2), c2 in pairs:
                if not c1 or not c2:
                    continue
                for crop in sorted(c1 & c2, key=int):
                    rot.shown.append(
                        f"{plan.label(prefix, plot, y2, s2, crop)}: crop {crop} also on {plot} "
                        f"in the preceding season ({y1} {s1})"
                    )
                    if len(rot.shown) >= SHOWN:
                        return


def _suitable(data: CropData) -> dict[tuple[str, str], frozenset[str]]:
    """(kind, season) -> the crops 附件2 has statistics for (cached on the data)."""
    hit = data.tables.get("suitable")
    if hit is None:
        acc: dict[tuple[str, str], set[str]] = {(k, s): set() for k in KIND_ORDER for s in SEASONS}
        for kind, season, crop in data.stats:
            acc[(kind, season)].add(crop)
        hit = data.tables["suitable"] = {k: frozenset(c) for k, c in acc.items()}
    return hit


def _cell_order(data: CropData):  # noqa: ANN202
    return lambda kv: (kv[0][1], SEASONS.index(kv[0][2]), data.plots[kv[0][0]].index)


def _rows(plan: Plan, prefix: str, plot: str, year: int, season: str, cell: dict[str, Any]) -> str:
    idx = sorted(plan.row_index(plot, year, season, c) or 0 for c in cell)
    return ", ".join(f"{prefix}[{i}]" for i in idx)


def _mu(x: Fraction) -> str:
    return exact.fraction_to_text(x)


def profit(
    plan: Plan, data: CropData, rules: Rules, case: str
) -> tuple[Fraction, Fraction, Fraction]:
    """(profit, revenue, cost) of the plan over the plan's years under the case's sale rule.

    A planting the statistics do not cover (an unsuitable one) yields nothing and costs
    nothing: its plan already fails the suitability rule."""
    # Exact integers in units of 1/den mu (den: a power of ten that makes every area whole),
    # then one division at the end: the same numbers as Fraction arithmetic, without its gcd
    # per step (the result does not depend on den).
    tb = tables(data, rules)
    ct = codes(data, rules)
    cells, den = plan.coded_cells(ct, tb.scale)
    f = den // tb.scale
    yc_of, P = ct.yc, ct.P
    cost_u = 0
    prod: dict[int, dict[str, int]] = defaultdict(dict)  # season slot -> crop -> jin
    for code, cell in cells.items():
        yc = yc_of[code]
        q = prod[code // P]
        get = q.get
        for crop, u in cell.items():
            st = yc.get(crop)
            if st is None:
                continue
            q[crop] = get(crop, 0) + u * st[0]
            cost_u += u * st[1]
    # revenue * 2 * price_den * den as an integer: prices are p / price_den, the expected
    # sales whole units (the 2023 areas are whole data units, the yields whole jin)
    rev = 0
    half = case == "case2"
    for slot, per_crop in prod.items():
        season = SEASONS[slot % 2]
        for crop, q_u in per_crop.items():
            price = tb.price_int[(season, crop)]
            sold = min(q_u, tb.demand_u.get((season, crop), 0) * f)
            rev += 2 * price * sold
            if half:
                rev += price * (q_u - sold)
    revenue = Fraction(rev, 2 * tb.price_den * den)
    cost = Fraction(cost_u, den)
    return revenue - cost, revenue, cost


def _stats_by_kind_season(
    data: CropData, tb: Tables
) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    """(kind, season) -> crop -> (yield, cost) (cached on the data)."""
    hit = data.tables.get("by_kind_season")
    if hit is None:
        hit = {(k, s): {} for k in KIND_ORDER for s in SEASONS}
        for (kind, season, crop), yc in tb.stat_yc.items():
            hit[(kind, season)][crop] = yc
        data.tables["by_kind_season"] = hit
    return hit


def max_rows(data: CropData, rules: Rules) -> int:
    """Distinct suitable (year, plot, season, crop) combinations: the statement's maximum
    (cached on the data)."""
    hit = data.tables.get(("max_rows", rules))
    if hit is None:
        per_kind = Counter(kind for (kind, _, _) in data.stats)
        per_year = sum(per_kind[p.kind] for p in data.plots.values())
        hit = data.tables[("max_rows", rules)] = per_year * len(rules.years)
    return hit


def evaluate_plan(plan: Plan, data: CropData, rules: Rules, case: str, prefix: str) -> Verdict:
    viol = check_rules(plan, data, rules, prefix)
    pr, rev, cost = profit(plan, data, rules, case)
    return Verdict(viol, pr, rev, cost)


# --- the replay --------------------------------------------------------------------------


def _list_bound(task: Any, path: str, fallback: int) -> int:
    for ls in task.artifact_map.lists:
        if ls.path == path:
            return min(ls.max_items, fallback)
    return fallback


def parse_cases(
    doc: dict[str, Any], task: Any, data: CropData, rules: Rules, deadline: CpuBudget
) -> dict[str, Plan]:
    q1 = doc.get("q1")
    if not isinstance(q1, dict):
        raise ReplayInputError("q1: missing (the plans of Problem 1)")
    bound = max_rows(data, rules)
    plans: dict[str, Plan] = {}
    for case in CASES:
        node = q1.get(case)
        prefix = f"q1.{case}.plan"
        if not isinstance(node, dict):
            raise ReplayInputError(f"q1.{case}: missing")
        plans[case] = parse_plan(
            node.get("plan"), prefix, data, rules, _list_bound(task, prefix, bound), deadline
        )
    return plans


def prepare(task: Any, spec: Any) -> None:
    """Read the attachments (task data: cached, never charged to an artifact's budget)."""
    load_data(task.data_dir / "attachments")


def replay(doc: dict[str, Any], task: Any, spec: Any, deadline: CpuBudget) -> Outcome:
    data = load_data(task.data_dir / "attachments")
    rules = Rules.from_params(spec.params)
    plans = parse_cases(doc, task, data, rules, deadline)
    out = Outcome()
    for case, plan in plans.items():
        deadline.check()
        prefix = f"q1.{case}.plan"
        v = evaluate_plan(plan, data, rules, case, prefix)
        base = f"q1.{case}"
        out.values[f"{base}.profit_yuan"] = v.profit
        out.details[f"{base}.profit_yuan"] = (
            f"{plan.rows} rows of {prefix}: revenue {exact.fraction_to_text(v.revenue)}"
            f" yuan, cost {exact.fraction_to_text(v.cost)} yuan"
        )
        out.values[f"{base}.rule_violations"] = v.total
        bad = [f"{r}: {m.shown[0]}" for r, m in v.violations.items() if m]
        out.details[f"{base}.rule_violations"] = "; ".join(bad) if bad else "every rule holds"
        for rule, msgs in v.violations.items():
            out.values[f"{base}.violations.{rule}"] = len(msgs)
            if msgs:
                more = f" (+{len(msgs) - SHOWN} more)" if len(msgs) > SHOWN else ""
                out.details[f"{base}.violations.{rule}"] = "; ".join(msgs.shown) + more
    return out


def _lcm_den(xs: Any) -> int:
    return math.lcm(1, *(Fraction(x).denominator for x in xs))


# --- Lean ----------------------------------------------------------------------------------

LEAN_DATA_FILE = Path("TBMM") / "Replay" / "CropData.lean"
LEAN_DATA = "Crop.Data.village"


def _lean_list(items: list[str]) -> str:
    return "".join(f"(List.cons {x} " for x in items) + "List.nil" + ")" * len(items)


def _tenths(q: Fraction, what: str) -> int:
    t = q * 10
    if t.denominator != 1 or t < 0:
        raise ValueError(f"{what}: {q} is not a non-negative multiple of 0.1")
    return int(t)


def _lean_cell(cell: dict[str, Fraction], unit: Fraction) -> str:
    """A season's plantings: up to three as `Crop.plantN c₁ a₁ …` (one application where the
    list spells 2N + 1; the elaborator, not the kernel, pays per application), more as a list."""
    pairs = []
    for crop in sorted(cell, key=int):
        n = cell[crop] / unit
        assert n.denominator == 1 and n > 0
        pairs.append((int(crop), n.numerator))
    if 1 <= len(pairs) <= 3:
        return f"(Crop.plant{len(pairs)} " + " ".join(f"{c} {a}" for c, a in pairs) + ")"
    return _lean_list([f"(Crop.Planting.mk {c} {a})" for c, a in pairs])


def _lean_year(first: dict[str, Fraction], second: dict[str, Fraction], unit: Fraction) -> str:
    return f"(Crop.Year.mk {_lean_cell(first, unit)} {_lean_cell(second, unit)})"


def price_den(data: CropData) -> int:
    return math.lcm(*(p.denominator for p in data.price.values()))


def lean_data_module(data: CropData, rules: Rules) -> str:
    """`TBMM/Replay/CropData.lean`: 附件1/附件2 and the rules' parameters as Lean terms.

    Generated from the attachments (never hand-copied); the module also proves, by kernel
    evaluation, that its expected sales are the 2023 plan's production and that every
    statistics row has a price (checked once, when the library is built)."""
    tenth = Fraction(1, 10)
    hist: dict[str, dict[str, dict[str, Fraction]]] = {}
    for (plot, season, crop), area in data.history.items():
        hist.setdefault(plot, {}).setdefault(season, {})[crop] = area
    plots = []
    for pid, p in data.plots.items():
        h = hist.get(pid, {})
        plots.append(
            f"(Crop.Plot.mk {KIND_ORDER.index(p.kind)} {_tenths(p.area, pid)} "
            f"{_lean_year(h.get('first', {}), h.get('second', {}), tenth)})"
        )
    stats = []
    for kind in KIND_ORDER:
        per = []
        for season in SEASONS:
            rows = sorted(
                ((int(c), st) for (k, s, c), st in data.stats.items() if k == kind and s == season),
                key=lambda r: r[0],
            )
            for c, st in rows:
                if st.yield_jin.denominator != 1 or st.cost.denominator != 1:
                    raise ValueError(f"附件2 {kind} {season} crop {c}: non-integer yield or cost")
            per.append(
                _lean_list([f"(Crop.Stat.mk {c} {st.yield_jin} {st.cost})" for c, st in rows])
            )
        stats.append(_lean_list(per))
    numbers = range(0, max(c.number for c in data.crops.values()) + 1)
    by_number = {c.number: c for c in data.crops.values()}
    infos = []
    for n in numbers:
        c = by_number.get(n)
        leg, grain = (c.legume, c.group == "grain") if c else (False, False)
        infos.append(
            f"(Crop.Info.mk {'Bool.true' if leg else 'Bool.false'} {'Bool.true' if grain else 'Bool.false'})"
        )

    def runs(pred) -> str:  # noqa: ANN001
        out, start = [], None
        for n in [*numbers, numbers.stop]:
            c = by_number.get(n)
            if c is not None and pred(c):
                start = n if start is None else start
            elif start is not None:
                out.append(f"(Crop.Range.mk {start} {n - 1})")
                start = None
        return _lean_list(out)

    den = price_den(data)
    prices, demand = [], []
    for season in SEASONS:
        pr, dm = [], []
        for n in numbers:
            p = data.price.get((season, str(n)), Fraction(0)) * den
            assert p.denominator == 1
            pr.append(str(p.numerator))
            dm.append(str(_tenths(data.demand.get((season, str(n)), Fraction(0)), f"demand {n}")))
        prices.append(_lean_list(pr))
        demand.append(_lean_list(dm))
    fields = [
        _lean_list(plots),
        _lean_list(stats),
        _lean_list(infos),
        runs(lambda c: c.legume),
        runs(lambda c: c.group == "grain"),
        _lean_list(prices),
        _lean_list(demand),
        str(den),
        str(_tenths(rules.min_area_open, "min_area_open_mu")),
        str(_tenths(rules.min_area_greenhouse, "min_area_greenhouse_mu")),
        str(sum(1 for k in KIND_ORDER if k in OPEN_AIR)),
        str(KIND_ORDER.index("irrigated")),
        str(int(RICE)),
        str(rules.max_plots),
        str(rules.legume_window),
        str(len(rules.years)),
    ]
    assert all(k in OPEN_AIR for k in KIND_ORDER[: int(fields[10])])
    body = "\n    ".join(fields)
    return f"""prelude
import TBMM.Replay.Crop
/-! # TBMM.Replay.CropData — the village of CUMCM 2024 C as Lean terms

Generated by `tbmm.replay.crop_planting.lean_data_module` from 附件1.xlsx and 附件2.xlsx of
the task `cumcm-2024-c-crop-planting` and the parameters of its `replay.toml`; do not edit
(`uv run python -m tbmm.replay.crop_planting --write-lean` regenerates it, and a test
fails when it is stale). -/

noncomputable section
namespace Crop.Data

set_option maxRecDepth 65536 in
/-- The plots (附件1 with their 2023 plan from 附件2), statistics (附件2; smart-greenhouse
first seasons as ordinary greenhouses), crops, prices (range midpoints), expected sales
(2023 production) and the rules' parameters. -/
noncomputable def village : Crop.Data :=
  Crop.Data.mk
    {body}

end Crop.Data
end

set_option maxRecDepth 65536 in
/-- The expected sales are the 2023 plan's production, recomputed by the kernel. -/
theorem Crop.Data.demand_is_2023_production :
    Eq (Crop.natss (Crop.demandOf Crop.Data.village) (Crop.Data.demand Crop.Data.village)) Bool.true :=
  rfl

set_option maxRecDepth 65536 in
/-- The legume and grain runs agree with the crop table. -/
theorem Crop.Data.ranges_match_crops : Eq (Crop.rangesMatch Crop.Data.village) Bool.true := rfl

set_option maxRecDepth 65536 in
/-- Every statistics row has a price for its season. -/
theorem Crop.Data.prices_cover_stats : Eq (Crop.pricesCover Crop.Data.village) Bool.true := rfl
"""


def plan_scale(plans: list[Plan]) -> int:
    """`k` such that every area is a whole number of `1/(10·k)` mu."""
    dens = [
        (a * 10).denominator
        for plan in plans
        for cell in plan.cells.values()
        for a in cell.values()
    ]
    return math.lcm(1, *dens)


def lean_plan(plan: Plan, data: CropData, rules: Rules, k: int) -> str:
    """The plan as `List (List Crop.Year)`: plots in 附件1 order, years in order."""
    unit = Fraction(1, 10 * k)
    plots = []
    for pid in data.plots:
        years = [
            _lean_year(
                plan.cells.get((pid, y, "first"), {}), plan.cells.get((pid, y, "second"), {}), unit
            )
            for y in rules.years
        ]
        plots.append(_lean_list(years))
    return _lean_list(plots)


def lean_obligations(task: Any, doc: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Per case: the Lean replay of the plan (`Crop.replay`) finds the replayed count of
    every rule the gate reads (`violations.<rule>`, rule by rule, and none outside the
    written form), their total and the replayed profit, all as scored (`Crop.agrees`).
    Nothing when the plans are unusable (the Python replay produced nothing to restate)."""
    from tbmm.core.paths import PathError, resolve
    from tbmm.suite.models import REPLAYED

    if not isinstance(doc, dict) or not isinstance(doc.get(REPLAYED), dict):
        return []
    data = load_data(task.data_dir / "attachments")
    rules = Rules.from_params(task.replay_spec.params)
    try:
        plans = parse_cases(doc, task, data, rules, CpuBudget(60.0))
    except ReplayInputError:
        return []
    obs: list[tuple[str, str, tuple[str, ...]]] = []
    for case, plan in plans.items():
        base = f"{REPLAYED}.q1.{case}"
        rule_paths = [f"{base}.violations.{r}" for r in RULES]
        try:
            profit_v = resolve(doc, f"{base}.profit_yuan")
            viol_v = resolve(doc, f"{base}.rule_violations")
            per_rule = [resolve(doc, p) for p in rule_paths]
        except PathError:
            continue
        counts = [_count(v) for v in (viol_v, *per_rule)]
        if not isinstance(profit_v, exact.Num) or any(c is None for c in counts):
            continue
        k = plan_scale([plan])
        q = profit_v.value
        lit = (
            f"(Rat.frac {q.numerator} {q.denominator})"
            if q >= 0
            else f"(Rat.negFrac {-q.numerator} {q.denominator})"
        )
        half = "Bool.true" if case == "case2" else "Bool.false"
        rule_counts = "(Crop.Counts.mk " + " ".join(str(c) for c in counts[1:]) + " 0)"
        term = (
            f"Crop.agrees {LEAN_DATA} {half} {k} {lean_plan(plan, data, rules, k)} "
            f"{rule_counts} {counts[0]} {lit}"
        )
        obs.append(
            (
                f"crop_{case}",
                term,
                (
                    f"{base}.profit_yuan",
                    f"{base}.rule_violations",
                    *rule_paths,
                    f"q1.{case}.plan",
                ),
            )
        )
    return obs


def _count(v: Any) -> int | None:
    """A replayed violation count as a natural number (None: not one)."""
    if not isinstance(v, exact.Num) or v.value.denominator != 1 or v.value < 0:
        return None
    return int(v.value)


def _task_dir() -> Path:
    from tbmm.suite.tasks import TASKS_ROOT

    return TASKS_ROOT / "CUMCM" / "cumcm-2024-c-crop-planting"


def main(argv: list[str] | None = None) -> int:
    """`python -m tbmm.replay.crop_planting --write-lean [--check]`: (re)generate
    TBMM/Replay/CropData.lean from the task's attachments and replay.toml."""
    import argparse
    import tomllib

    from tbmm.suite.resources import lean_root

    ap = argparse.ArgumentParser()
    ap.add_argument("--write-lean", action="store_true")
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = ap.parse_args(argv)
    tdir = _task_dir()
    rules = Rules.from_params(
        tomllib.loads((tdir / "replay.toml").read_text(encoding="utf-8"))["params"]
    )
    text = lean_data_module(load_data(tdir / "environment" / "data" / "attachments"), rules)
    root = lean_root()
    if root is None:
        ap.error("no TBMM Lean library found (run from a source checkout)")
    path = root / LEAN_DATA_FILE
    if args.check:
        return 0 if path.is_file() and path.read_text(encoding="utf-8") == text else 1
    if args.write_lean:
        from tbmm.suite.files import write_text_if_changed

        write_text_if_changed(path, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
