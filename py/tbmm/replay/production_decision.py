"""CUMCM 2024 B (production decisions), Problems 2 and 3: the expected profit per product
sold of the artifact's inspection/disassembly decisions, exactly.

The model (stated for the agent in the task's verification.md) follows the statement's
process to the letter, with no horizon: every component that enters an assembly step —
bought, or recovered from a disassembly — goes through its inspection step again; a
defective assembly found by inspection (or, for the product, returned by a customer, who
gets a replacement and costs the exchange loss) is disassembled or scrapped per its bit;
recovered components are reassembled. Each repetition is a geometric series, summed in
closed form (`part_item`, `assembly_item`, `market_outcome`), so the profit is an exact
rational. A disassembly whose recovered components include an uninspected one recycles a
defective component forever: that decision has no finite expected profit (counted as an
endless recovery loop, and no profit is replayed for it).

The statement leaves two points of that accounting open (argued in verification.md and
replay.toml): whether a recovered component that already passed an exact inspection pays
its inspection again when it re-enters its step (`reinspect`), and whether the profit is
counted per product sold or per product assembled (`per_assembly`). Each combination is a
`Reading`; replay.toml lists the stated ones and the declared one. The score uses the
declared reading; a claim is checked against the stated reading nearest to it, so a profit
computed under any stated reading is not misreported.

The same functions enumerate every decision vector for the reference
(`reference/enumerate_decisions.py`), and `TBMM/Replay/Production.lean` states them in
Lean: `lean_obligations` restates each replayed number of an artifact as a kernel-checked
equation between the Lean function of the decisions and data and the value scored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from itertools import product
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tbmm.core import exact
from tbmm.replay import CpuBudget, Outcome, ReplayInputError
from tbmm.suite.models import REPLAYED, ReplaySpec

# --- the task's data (reference/tables.json, extracted from the statement's PDF) ---------


def _amount(v: str) -> str:
    q = exact.parse_decimal(v)
    if q < 0:
        raise ValueError(f"negative amount {v!r}")
    return v


def _rate(v: str) -> str:
    q = exact.parse_decimal(v)
    if not 0 <= q < 1:
        raise ValueError(f"a defect rate lies in [0, 1): {v!r}")
    return v


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PartRow(_Strict):
    part: int = Field(ge=1)
    defect_rate: str
    price: str
    inspection_cost: str

    _r = field_validator("defect_rate")(classmethod(lambda cls, v: _rate(v)))
    _a = field_validator("price", "inspection_cost")(classmethod(lambda cls, v: _amount(v)))


class StepRow(_Strict):
    """An assembly step: a semi-finished product or the product."""

    defect_rate: str
    assembly_cost: str
    inspection_cost: str
    disassembly_cost: str

    _r = field_validator("defect_rate")(classmethod(lambda cls, v: _rate(v)))
    _a = field_validator("assembly_cost", "inspection_cost", "disassembly_cost")(
        classmethod(lambda cls, v: _amount(v))
    )


class SemiRow(StepRow):
    semi: int = Field(ge=1)
    parts: list[int] = Field(min_length=1)


class MarketRow(_Strict):
    price: str
    exchange_loss: str

    _a = field_validator("price", "exchange_loss")(classmethod(lambda cls, v: _amount(v)))


class Q2Case(_Strict):
    case: int = Field(ge=1)
    parts: list[PartRow] = Field(min_length=1)
    product: StepRow
    market: MarketRow


class Q2Table(_Strict):
    cases: list[Q2Case] = Field(min_length=1)


class Q3Table(_Strict):
    parts: list[PartRow] = Field(min_length=1)
    semi_products: list[SemiRow] = Field(min_length=1)
    product: StepRow
    market: MarketRow


class Tables(_Strict):
    source: dict[str, str]
    q2: Q2Table
    q3: Q3Table


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> Tables:
    return Tables.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))


def load_tables(task: Any, spec: ReplaySpec | None = None) -> Tables:
    """The task's tables (the file named by replay.toml's `params.tables`)."""
    spec = spec or task.replay_spec
    rel = str((spec.params if spec else {}).get("tables", "reference/tables.json"))
    path = (task.dir / rel).resolve()
    return _load(str(path), path.stat().st_mtime_ns)


# --- the model ---------------------------------------------------------------------------

ONE = Fraction(1)
ZERO = Fraction(0)


@dataclass(frozen=True)
class Reading:
    """One defensible accounting of the statement's process.

    `reinspect`: a component recovered from a disassembly goes through its inspection step
    again and, when that step inspects, pays the inspection again (the literal "重复步骤(1)");
    otherwise a recovered component that already passed an exact inspection is known good
    and re-enters without a second inspection. `per_assembly`: the profit is counted per
    product assembled (every assembly of the final product, reassemblies included: the
    long-run profit divided by the number of final assemblies) instead of per product sold.
    `lean` names the same reading in `TBMM/Replay/Production.lean`.
    """

    name: str
    per_assembly: bool
    reinspect: bool
    lean: str
    text: str


READINGS: dict[str, Reading] = {
    r.name: r
    for r in (
        Reading(
            "sold",
            False,
            True,
            "Production.Readings.sold",
            "per product sold, recovered components re-inspected",
        ),
        Reading(
            "sold_known_good",
            False,
            False,
            "Production.Readings.soldKnownGood",
            "per product sold, recovered components known good (not re-inspected)",
        ),
        Reading(
            "assembled",
            True,
            True,
            "Production.Readings.assembled",
            "per product assembled, recovered components re-inspected",
        ),
        Reading(
            "assembled_known_good",
            True,
            False,
            "Production.Readings.assembledKnownGood",
            "per product assembled, recovered components known good (not re-inspected)",
        ),
    )
}
DECLARED = READINGS["sold"]


@lru_cache(maxsize=256)
def _q(text: str) -> Fraction:
    """A table entry's exact value (validated decimal text; cached: the enumeration asks
    for the same few numbers millions of times)."""
    return exact.parse_decimal(text)


@dataclass(frozen=True)
class Item:
    """A component as delivered to its assembly step, per delivered unit.

    `cost` is the expected cost of delivering one (None: unbounded, an endless recovery
    loop at or below this step); `defect` the probability it is defective; `recheck` the
    cost of putting a recovered one through its inspection step again (its inspection
    cost when inspected, else 0); `loops` counts endless recovery loops at or below it.
    """

    cost: Fraction | None
    defect: Fraction
    recheck: Fraction
    loops: int
    why: tuple[str, ...] = ()


@dataclass(frozen=True)
class Result:
    """Expected profit per product sold (None: unbounded) and the endless loops found."""

    profit: Fraction | None
    loops: int
    why: tuple[str, ...] = ()


def part_item(p: PartRow, inspect: bool, reading: Reading = DECLARED) -> Item:
    """A bought part through its inspection step: inspected, a defective one is discarded
    and another bought (geometric number of purchases, mean 1/(1-rate)); a recovered one
    pays the inspection again under a re-inspecting reading."""
    rate, price, cost = (_q(v) for v in (p.defect_rate, p.price, p.inspection_cost))
    if inspect:
        return Item((price + cost) / (ONE - rate), ZERO, cost if reading.reinspect else ZERO, 0)
    return Item(price, rate, ZERO, 0)


def _good(children: Sequence[Item]) -> Fraction:
    """Probability that every component is good (independent components)."""
    good = ONE
    for c in children:
        good *= ONE - c.defect
    return good


def _total(children: Sequence[Item]) -> Fraction | None:
    costs = [c.cost for c in children]
    return None if any(c is None for c in costs) else sum(costs, ZERO)  # type: ignore[arg-type]


def _loops(children: Sequence[Item]) -> tuple[int, tuple[str, ...]]:
    return sum(c.loops for c in children), tuple(w for c in children for w in c.why)


def assembly_item(
    s: StepRow,
    inspect: bool,
    disassemble: bool,
    children: Sequence[Item],
    name: str,
    reading: Reading = DECLARED,
) -> Item:
    """An intermediate assembly (semi-finished product) through its inspection step.

    Not inspected: delivered as assembled (disassembly never happens to it).
    Inspected, scrapped when defective: cost (B + d)/g per good one.
    Inspected, disassembled when defective: the recovered components (all known good,
    else the loop is endless) are re-inspected and reassembled until good:
    cost B + d + (1 - g)(e + recheck + a + d)/(1 - rate). Its own re-inspection cost when
    recovered (`recheck`) is d under a re-inspecting reading, else 0.
    """
    rate, a, d, e = (
        _q(v) for v in (s.defect_rate, s.assembly_cost, s.inspection_cost, s.disassembly_cost)
    )
    loops, why = _loops(children)
    total = _total(children)
    k = d if reading.reinspect else ZERO
    if not inspect:
        g = _good(children) * (ONE - rate)
        return Item(None if total is None else total + a, ONE - g, ZERO, loops, why)
    if disassemble and any(c.defect != 0 for c in children):
        return Item(None, ZERO, k, loops + 1, (*why, f"{name}: {ENDLESS}"))
    if total is None:
        return Item(None, ZERO, k, loops, why)
    g = _good(children) * (ONE - rate)
    b = total + a
    if disassemble:
        recheck = sum((c.recheck for c in children), ZERO)
        return Item(b + d + (ONE - g) * (e + recheck + a + d) / (ONE - rate), ZERO, k, loops, why)
    return Item((b + d) / g, ZERO, k, loops, why)


ENDLESS = (
    "defective ones are disassembled but a component is not inspected, so a defective "
    "component is reassembled, found defective and disassembled again forever"
)


def market_outcome(
    s: StepRow,
    m: MarketRow,
    inspect: bool,
    disassemble: bool,
    children: Sequence[Item],
    name: str = "product",
    reading: Reading = DECLARED,
) -> Result:
    """The product: expected profit per product sold (or per product assembled).

    Inspected: only good products are sold; a defective one is disassembled or scrapped.
    Not inspected: a defective product reaches the customer, is returned and exchanged
    (exchange loss r) and then disassembled or scrapped. Scrapping: V = (B + (1-g) r')/g;
    disassembling (components known good): V = B + (1-g)(r' + e + recheck + a + d')/(1-rate),
    with d' = d and r' = 0 when inspected, d' = 0 and r' = r when not. Profit = price - V
    per product sold; per product assembled it is (price - V)/N, N the expected assemblies
    of the product per product sold: 1/g when scrapped, 1 + (1-g)/(1-rate) when
    disassembled (reassemblies of good components fail at the step's own rate).
    """
    rate, a, d, e = (
        _q(v) for v in (s.defect_rate, s.assembly_cost, s.inspection_cost, s.disassembly_cost)
    )
    price, r = _q(m.price), _q(m.exchange_loss)
    loops, why = _loops(children)
    if disassemble and any(c.defect != 0 for c in children):
        return Result(None, loops + 1, (*why, f"{name}: {ENDLESS}"))
    total = _total(children)
    if total is None:
        return Result(None, loops, why)
    g = _good(children) * (ONE - rate)
    d_ = d if inspect else ZERO
    r_ = ZERO if inspect else r
    b = total + a + d_
    if disassemble:
        recheck = sum((c.recheck for c in children), ZERO)
        v = b + (ONE - g) * (r_ + e + recheck + a + d_) / (ONE - rate)
        n = ONE + (ONE - g) / (ONE - rate)
    else:
        v = (b + (ONE - g) * r_) / g
        n = ONE / g
    return Result((price - v) / n if reading.per_assembly else price - v, loops, why)


# --- decisions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Q2Decision:
    inspect_parts: tuple[bool, ...]
    inspect_product: bool
    disassemble: bool

    def bits(self) -> tuple[int, ...]:
        return (*map(int, self.inspect_parts), int(self.inspect_product), int(self.disassemble))


@dataclass(frozen=True)
class Q3Decision:
    inspect_parts: tuple[bool, ...]
    inspect_semis: tuple[bool, ...]
    disassemble_semis: tuple[bool, ...]
    inspect_product: bool
    disassemble_product: bool

    def bits(self) -> tuple[int, ...]:
        return tuple(
            int(b)
            for b in (
                *self.inspect_parts,
                *self.inspect_semis,
                *self.disassemble_semis,
                self.inspect_product,
                self.disassemble_product,
            )
        )


def q2_result(c: Q2Case, dec: Q2Decision, reading: Reading = DECLARED) -> Result:
    items = [part_item(p, x, reading) for p, x in zip(c.parts, dec.inspect_parts, strict=True)]
    return market_outcome(
        c.product,
        c.market,
        dec.inspect_product,
        dec.disassemble,
        items,
        f"case {c.case} product",
        reading,
    )


def q3_result(t: Q3Table, dec: Q3Decision, reading: Reading = DECLARED) -> Result:
    by_id = {p.part: (p, x) for p, x in zip(t.parts, dec.inspect_parts, strict=True)}
    semis = [
        assembly_item(
            s,
            x,
            z,
            [part_item(*by_id[i], reading) for i in s.parts],
            f"semi-finished product {s.semi}",
            reading,
        )
        for s, x, z in zip(t.semi_products, dec.inspect_semis, dec.disassemble_semis, strict=True)
    ]
    return market_outcome(
        t.product,
        t.market,
        dec.inspect_product,
        dec.disassemble_product,
        semis,
        "product",
        reading,
    )


def q2_decisions(c: Q2Case) -> Iterator[Q2Decision]:
    """Every decision vector of a Problem 2 case (parts' bits, product bit, disassembly bit)."""
    for bits in product((False, True), repeat=len(c.parts) + 2):
        yield Q2Decision(tuple(bits[: len(c.parts)]), bits[-2], bits[-1])


def q3_enumerate(t: Q3Table) -> Iterator[tuple[Q3Decision, Result]]:
    """Every decision vector of Problem 3 with its result, sharing the semi-finished
    products' items between vectors (the same numbers as `q3_result`, faster)."""
    parts = {p.part: p for p in t.parts}
    n = len(t.parts)
    ids = [p.part for p in t.parts]
    for part_bits in product((False, True), repeat=n):
        x = dict(zip(ids, part_bits, strict=True))
        options = []
        for s in t.semi_products:
            kids = [part_item(parts[i], x[i]) for i in s.parts]
            options.append(
                {
                    (xs, zs): assembly_item(s, xs, zs, kids, f"semi-finished product {s.semi}")
                    for xs in (False, True)
                    for zs in (False, True)
                }
            )
        for semi_bits in product((False, True), repeat=2 * len(t.semi_products)):
            xs = semi_bits[: len(t.semi_products)]
            zs = semi_bits[len(t.semi_products) :]
            items = [opt[(a, b)] for opt, a, b in zip(options, xs, zs, strict=True)]
            for yp, zp in product((False, True), repeat=2):
                dec = Q3Decision(tuple(part_bits), tuple(xs), tuple(zs), yp, zp)
                yield dec, market_outcome(t.product, t.market, yp, zp, items)


# --- reading the artifact ----------------------------------------------------------------


def _describe(v: Any) -> str:
    if v is None:
        return "missing"
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    if isinstance(v, exact.NonFinite):
        return f"the non-finite {v.text}"
    if isinstance(v, exact.Num):
        return v.text
    return f"a {type(v).__name__}"


def _bit(node: Any, key: str, where: str, errors: list[str]) -> bool:
    v = node.get(key) if isinstance(node, dict) else None
    if isinstance(v, exact.Num) and v.value in (0, 1):
        return v.value == 1
    errors.append(f"{where}.{key}: a decision is 0 or 1, got {_describe(v)}")
    return False


def _entries(node: Any, key: str, where: str, n: int, what: str, errors: list[str]) -> list[Any]:
    v = node.get(key) if isinstance(node, dict) else None
    if not isinstance(v, list):
        errors.append(f"{where}.{key}: a list of {n} entries ({what}), got {_describe(v)}")
        return []
    if len(v) != n:
        errors.append(f"{where}.{key}: {len(v)} entries; {what}: {n}")
        return []
    return v


def read_q2(doc: dict[str, Any], tables: Tables, errors: list[str]) -> list[Q2Decision]:
    cases = tables.q2.cases
    q2 = doc.get("q2")
    rows = _entries(q2, "cases", "q2", len(cases), "one per case of Table 1, in its order", errors)
    out: list[Q2Decision] = []
    for i, (row, c) in enumerate(zip(rows, cases, strict=False)):
        where = f"q2.cases[{i}]"
        if not isinstance(row, dict):
            errors.append(f"{where}: an object, got {_describe(row)}")
            continue
        parts = tuple(_bit(row, f"inspect_part{p.part}", where, errors) for p in c.parts)
        out.append(
            Q2Decision(
                parts,
                _bit(row, "inspect_product", where, errors),
                _bit(row, "disassemble_defective", where, errors),
            )
        )
    return out


def read_q3(doc: dict[str, Any], tables: Tables, errors: list[str]) -> Q3Decision | None:
    t = tables.q3
    q3 = doc.get("q3")
    if not isinstance(q3, dict):
        errors.append(f"q3: an object, got {_describe(q3)}")
        return None
    n0 = len(errors)
    parts = _entries(
        q3, "parts", "q3", len(t.parts), "one per part of Table 2, in its order", errors
    )
    semis = _entries(
        q3,
        "semi_products",
        "q3",
        len(t.semi_products),
        "one per semi-finished product of Table 2, in its order",
        errors,
    )
    ip = tuple(_bit(p, "inspect", f"q3.parts[{i}]", errors) for i, p in enumerate(parts))
    iss = tuple(_bit(s, "inspect", f"q3.semi_products[{i}]", errors) for i, s in enumerate(semis))
    ds = tuple(
        _bit(s, "disassemble_defective", f"q3.semi_products[{i}]", errors)
        for i, s in enumerate(semis)
    )
    prod = q3.get("product")
    if not isinstance(prod, dict):
        errors.append(f"q3.product: an object, got {_describe(prod)}")
        return None
    yp = _bit(prod, "inspect", "q3.product", errors)
    zp = _bit(prod, "disassemble_defective", "q3.product", errors)
    if len(errors) > n0:
        return None
    return Q3Decision(ip, iss, ds, yp, zp)


def read_decisions(doc: dict[str, Any], tables: Tables) -> tuple[list[Q2Decision], Q3Decision]:
    """The artifact's decisions, or ReplayInputError listing every unusable one."""
    errors: list[str] = []
    q2 = read_q2(doc, tables, errors)
    q3 = read_q3(doc, tables, errors)
    if errors or q3 is None:
        shown = "; ".join(errors[:8]) + (f"; … ({len(errors) - 8} more)" if len(errors) > 8 else "")
        raise ReplayInputError(shown or "q3: no decisions")
    return q2, q3


def _q2_text(i: int, dec: Q2Decision) -> str:
    parts = ", ".join(
        f"part {k + 1} {'inspected' if x else 'not inspected'}"
        for k, x in enumerate(dec.inspect_parts)
    )
    return (
        f"case {i + 1}: {parts}; product {'inspected' if dec.inspect_product else 'not inspected'}; "
        f"defective products {'disassembled' if dec.disassemble else 'scrapped'}"
    )


def _q3_text(dec: Q3Decision) -> str:
    b = "".join(map(str, dec.bits()))
    return (
        f"parts inspected {b[: len(dec.inspect_parts)]}, semi-finished inspected "
        f"{''.join(str(int(x)) for x in dec.inspect_semis)} / disassembled "
        f"{''.join(str(int(x)) for x in dec.disassemble_semis)}, product inspected "
        f"{int(dec.inspect_product)} / disassembled {int(dec.disassemble_product)}"
    )


def floor_to(q: Fraction, decimals: int) -> Fraction:
    """`q` rounded down to a multiple of 10^-decimals: the value written and scored (a
    terminating decimal, so it is valid JSON in anchor.json); Lean certifies the rounding."""
    scale = 10**decimals
    return Fraction((q.numerator * scale) // q.denominator, scale)


def decimals_of(spec: ReplaySpec | None) -> int:
    v = (spec.params if spec else {}).get("decimals", 9)
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= 30:
        raise ValueError(f"replay.toml params.decimals: an integer in 0..30, got {v!r}")
    return v


def _exact(q: Fraction) -> str:
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def readings_of(spec: ReplaySpec | None) -> tuple[list[Reading], Reading]:
    """The stated readings (replay.toml `params.readings`, in order) and the declared one
    (`params.declared_reading`, which the score uses; it must be stated)."""
    params = spec.params if spec else {}
    names = params.get("readings", [DECLARED.name])
    declared = params.get("declared_reading", DECLARED.name)
    if (
        not isinstance(names, list)
        or not names
        or len(set(map(str, names))) != len(names)
        or any(n not in READINGS for n in names)
    ):
        raise ValueError(
            f"replay.toml params.readings: distinct names among {sorted(READINGS)}, got {names!r}"
        )
    if declared not in names:
        raise ValueError(
            f"replay.toml params.declared_reading: one of the stated readings, got {declared!r}"
        )
    return [READINGS[n] for n in names], READINGS[declared]


def _claim(doc: dict[str, Any], path: str) -> Fraction | None:
    from tbmm.core.paths import PathError, resolve

    try:
        v = resolve(doc, path)
    except PathError:
        return None
    return v.value if isinstance(v, exact.Num) else None


def claimed_reading(
    claim: Fraction | None, values: list[tuple[Reading, Fraction]], declared: Reading
) -> tuple[Reading, Fraction]:
    """The stated reading whose written value is nearest to the claim (ties: the earlier
    stated one); the declared reading when there is no numeric claim. The gate's `agree`
    check then compares the claim with that value: a claim within tolerance of any stated
    reading is within tolerance of the nearest, and one that agrees with none fails."""
    if claim is None:
        return next((r, v) for r, v in values if r == declared)
    return min(values, key=lambda rv: abs(rv[1] - claim))


def _all_readings(values: list[tuple[Reading, Fraction | None]]) -> str:
    return "; ".join(f"{r.name}: {'unbounded' if v is None else _exact(v)}" for r, v in values)


def prepare(task: Any, spec: ReplaySpec) -> None:
    """Read the task's tables (task data: cached, never charged to an artifact's budget)."""
    load_tables(task, spec)
    readings_of(spec)


def _place(
    out: Outcome,
    base: str,
    label: str,
    results: list[tuple[Reading, Result]],
    declared: Reading,
    claim: Fraction | None,
    decimals: int,
) -> Fraction | None:
    """Write `base.expected_profit_yuan` (the declared reading) and
    `base.claimed_reading_profit_yuan` (the stated reading nearest to the claim); the exact
    profit under the declared reading, or None when the decision has no finite profit
    (the same under every reading: the readings change costs, never which loops end)."""
    exact_values = [(r, res.profit) for r, res in results]
    mine = next(res.profit for r, res in results if r == declared)
    if mine is None:
        return None
    written = [(r, floor_to(v, decimals)) for r, v in exact_values if v is not None]
    out.values[f"{base}.expected_profit_yuan"] = floor_to(mine, decimals)
    out.details[f"{base}.expected_profit_yuan"] = (
        f"{label}; reading {declared.name} (declared: {declared.text}), exactly {_exact(mine)}"
    )
    r, v = claimed_reading(claim, written, declared)
    out.values[f"{base}.claimed_reading_profit_yuan"] = v
    out.details[f"{base}.claimed_reading_profit_yuan"] = (
        f"the stated reading nearest to the claim: {r.name} ({r.text}); every stated reading "
        f"exactly: {_all_readings(exact_values)}"
    )
    return mine


def replay(doc: dict[str, Any], task: Any, spec: ReplaySpec, deadline: CpuBudget) -> Outcome:
    tables = load_tables(task, spec)
    decimals = decimals_of(spec)
    readings, declared = readings_of(spec)
    q2, q3 = read_decisions(doc, tables)
    out = Outcome()
    profits: list[Fraction] = []
    for i, (c, dec) in enumerate(zip(tables.q2.cases, q2, strict=True)):
        deadline.check()
        results = [(r, q2_result(c, dec, r)) for r in readings]
        res = next(x for r, x in results if r == declared)
        base = f"q2.cases[{i}]"
        out.values[f"{base}.unbounded_recovery_loops"] = res.loops
        out.details[f"{base}.unbounded_recovery_loops"] = _q2_text(i, dec)
        claim = _claim(doc, f"{base}.expected_profit_yuan")
        mine = _place(out, base, _q2_text(i, dec), results, declared, claim, decimals)
        if mine is None:
            out.notes.append(f"case {c.case}: no finite expected profit: " + "; ".join(res.why))
        else:
            profits.append(mine)
    if len(profits) == len(tables.q2.cases):
        mean = sum(profits, ZERO) / len(profits)
        out.values["q2.mean_expected_profit_yuan"] = floor_to(mean, decimals)
        out.details["q2.mean_expected_profit_yuan"] = (
            f"mean of the cases' exact profits under the declared reading {declared.name}, "
            f"exactly {_exact(mean)}"
        )
    deadline.check()
    results3 = [(r, q3_result(tables.q3, q3, r)) for r in readings]
    res3 = next(x for r, x in results3 if r == declared)
    out.values["q3.unbounded_recovery_loops"] = res3.loops
    out.details["q3.unbounded_recovery_loops"] = _q3_text(q3)
    claim3 = _claim(doc, "q3.expected_profit_yuan")
    if _place(out, "q3", _q3_text(q3), results3, declared, claim3, decimals) is None:
        out.notes.append("Problem 3: no finite expected profit: " + "; ".join(res3.why))
    return out


# --- Lean ----------------------------------------------------------------------------------

LEAN_DATA_MODULE = "TBMM.Replay.ProductionData"
LEAN_DATA_FILE = Path("TBMM") / "Replay" / "ProductionData.lean"


def _rat(v: str | Fraction) -> str:
    from tbmm.core import lean_syntax as S

    return S.rat(exact.parse_decimal(v) if isinstance(v, str) else v)


def _lean_list(items: Sequence[str]) -> str:
    """A Lean `List` term as nested `List.cons` (no list notation without Init)."""
    return "".join(f"(List.cons {x} " for x in items) + "List.nil" + ")" * len(items)


def _lean_part(p: PartRow) -> str:
    return f"(Production.Part.mk {_rat(p.defect_rate)} {_rat(p.price)} {_rat(p.inspection_cost)})"


def _lean_step(s: StepRow) -> str:
    return (
        f"(Production.Step.mk {_rat(s.defect_rate)} {_rat(s.assembly_cost)} "
        f"{_rat(s.inspection_cost)} {_rat(s.disassembly_cost)})"
    )


def _lean_market(m: MarketRow) -> str:
    return f"(Production.Market.mk {_rat(m.price)} {_rat(m.exchange_loss)})"


def lean_data_module(tables: Tables) -> str:
    """`TBMM/Replay/ProductionData.lean`: Tables 1 and 2 as Lean terms, generated from
    tables.json (never written by hand; a test compares the committed file)."""
    lines = [
        "prelude",
        "import TBMM.Replay.Production",
        "/-! # TBMM.Replay.ProductionData — Tables 1 and 2 of CUMCM 2024 B as Lean terms",
        "",
        "Generated from `tasks/CUMCM/cumcm-2024-b-production-decision/reference/tables.json`",
        "(itself extracted from the statement's PDF) by `tbmm.replay.production_decision`;",
        "do not edit. `q2Case<k>` is case k of Table 1; `q3` is Table 2 with Figure 1's tree. -/",
        "",
        "noncomputable section",
        "namespace Production.Data",
        "",
    ]
    for c in tables.q2.cases:
        parts = _lean_list([_lean_part(p) for p in c.parts])
        lines += [
            f"/-- Table 1, case {c.case}. -/",
            f"def q2Case{c.case} : Production.Q2Case :=",
            f"  Production.Q2Case.mk {parts}",
            f"    {_lean_step(c.product)} {_lean_market(c.market)}",
            "",
        ]
    lines += [
        "/-- Table 1, every case in its order. -/",
        "def q2Cases : List Production.Q2Case :=",
        "  " + _lean_list([f"q2Case{c.case}" for c in tables.q2.cases]),
        "",
    ]
    by_id = {p.part: p for p in tables.q3.parts}
    semis = []
    for s in tables.q3.semi_products:
        semis.append(
            f"(Production.Semi.mk {_lean_step(s)} {_lean_list([_lean_part(by_id[i]) for i in s.parts])})"
        )
    lines += [
        "/-- Table 2 (with Figure 1's assembly tree). -/",
        "def q3 : Production.Q3Line :=",
        f"  Production.Q3Line.mk {_lean_list(semis)}",
        f"    {_lean_step(tables.q3.product)} {_lean_market(tables.q3.market)}",
        "",
        "end Production.Data",
        "end",
        "",
    ]
    return "\n".join(lines)


def _lean_bool(b: bool) -> str:
    return "Bool.true" if b else "Bool.false"


def lean_q2_decision(dec: Q2Decision) -> str:
    return (
        f"(Production.Q2Decision.mk {_lean_list([_lean_bool(x) for x in dec.inspect_parts])} "
        f"{_lean_bool(dec.inspect_product)} {_lean_bool(dec.disassemble)})"
    )


def lean_q3_decision(t: Q3Table, dec: Q3Decision) -> str:
    """Problem 3's decisions in the shape of the tree: per semi-finished product, its bits
    and its parts' bits (in Figure 1's order)."""
    x = {p.part: b for p, b in zip(t.parts, dec.inspect_parts, strict=True)}
    semis = [
        f"(Production.SemiDecision.mk {_lean_bool(xs)} {_lean_bool(zs)} "
        f"{_lean_list([_lean_bool(x[i]) for i in s.parts])})"
        for s, xs, zs in zip(t.semi_products, dec.inspect_semis, dec.disassemble_semis, strict=True)
    ]
    return (
        f"(Production.Q3Decision.mk {_lean_list(semis)} "
        f"{_lean_bool(dec.inspect_product)} {_lean_bool(dec.disassemble_product)})"
    )


def _replayed(doc: dict[str, Any], path: str) -> Fraction | None:
    from tbmm.core.paths import PathError, resolve

    try:
        v = resolve(doc, f"{REPLAYED}.{path}")
    except PathError:
        return None
    return v.value if isinstance(v, exact.Num) else None


def _reading_of_value(
    value: Fraction, exact_values: list[tuple[Reading, Fraction | None]], decimals: int
) -> Reading | None:
    """The first stated reading whose written value is `value` (None: no stated reading
    gives it, and the obligation is then stated under the declared reading, which the
    kernel refutes)."""
    for r, v in exact_values:
        if v is not None and floor_to(v, decimals) == value:
            return r
    return None


def lean_obligations(task: Any, doc: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Each replayed number of `doc` (a resolved artifact) as a Lean statement
    `(name, Bool term, fields)`: the value scored equals the Lean replay of the artifact's
    decisions on the generated data under the declared reading, rounded down to
    10^-decimals (`Production.q2Profit`, `q2MeanProfit`, `q3Profit`), the value a claim is
    checked against is the Lean replay under the stated reading it names, the replay is
    bounded (`q2Ok`, `q3Ok`), and the endless-loop counts are equal. Terms name library
    definitions only (no projections), as the certificate allowlist requires. Nothing when
    the decisions are unusable (the replay produced nothing to restate)."""
    if not isinstance(doc, dict) or not isinstance(doc.get(REPLAYED), dict):
        return []
    tables = load_tables(task)
    decimals = decimals_of(task.replay_spec)
    scale = 10**decimals
    readings, declared = readings_of(task.replay_spec)
    rd = declared.lean
    try:
        q2, q3 = read_decisions(doc, tables)
    except ReplayInputError:
        return []
    obs: list[tuple[str, str, tuple[str, ...]]] = []
    for i, (c, dec) in enumerate(zip(tables.q2.cases, q2, strict=True)):
        args = f"Production.Data.q2Case{c.case} {lean_q2_decision(dec)}"
        base = f"q2.cases[{i}]"
        bits = tuple(
            f"{base}.{k}"
            for k in (
                *(f"inspect_part{p.part}" for p in c.parts),
                "inspect_product",
                "disassemble_defective",
            )
        )
        loops = _replayed(doc, f"{base}.unbounded_recovery_loops")
        if loops is not None and loops.denominator == 1 and loops >= 0:
            obs.append(
                (
                    f"q2_case{c.case}_loops",
                    f"Nat.beq (Production.q2Loops {rd} {args}) {loops.numerator}",
                    (f"{REPLAYED}.{base}.unbounded_recovery_loops", *bits),
                )
            )
        profit = _replayed(doc, f"{base}.expected_profit_yuan")
        if profit is not None:
            where = (f"{REPLAYED}.{base}.expected_profit_yuan", *bits)
            obs.append((f"q2_case{c.case}_bounded", f"Production.q2Ok {rd} {args}", where))
            obs.append(
                (
                    f"q2_case{c.case}_profit",
                    f"Rat.beq (Production.q2Profit {rd} {args} {scale}) {_rat(profit)}",
                    where,
                )
            )
        claimed = _replayed(doc, f"{base}.claimed_reading_profit_yuan")
        if claimed is not None:
            values = [(r, q2_result(c, dec, r).profit) for r in readings]
            r = _reading_of_value(claimed, values, decimals) or declared
            obs.append(
                (
                    f"q2_case{c.case}_claimed_reading_profit",
                    f"Rat.beq (Production.q2Profit {r.lean} {args} {scale}) {_rat(claimed)}",
                    (f"{REPLAYED}.{base}.claimed_reading_profit_yuan", *bits),
                )
            )
    mean = _replayed(doc, "q2.mean_expected_profit_yuan")
    if mean is not None:
        args = f"Production.Data.q2Cases {_lean_list([lean_q2_decision(d) for d in q2])}"
        where = (f"{REPLAYED}.q2.mean_expected_profit_yuan",)
        obs.append(("q2_all_bounded", f"Production.q2AllOk {rd} {args}", where))
        obs.append(
            (
                "q2_mean_profit",
                f"Rat.beq (Production.q2MeanProfit {rd} {args} {scale}) {_rat(mean)}",
                where,
            )
        )
    args3 = f"Production.Data.q3 {lean_q3_decision(tables.q3, q3)}"
    loops3 = _replayed(doc, "q3.unbounded_recovery_loops")
    if loops3 is not None and loops3.denominator == 1 and loops3 >= 0:
        obs.append(
            (
                "q3_loops",
                f"Nat.beq (Production.q3Loops {rd} {args3}) {loops3.numerator}",
                (f"{REPLAYED}.q3.unbounded_recovery_loops",),
            )
        )
    profit3 = _replayed(doc, "q3.expected_profit_yuan")
    if profit3 is not None:
        where = (f"{REPLAYED}.q3.expected_profit_yuan",)
        obs.append(("q3_bounded", f"Production.q3Ok {rd} {args3}", where))
        obs.append(
            (
                "q3_profit",
                f"Rat.beq (Production.q3Profit {rd} {args3} {scale}) {_rat(profit3)}",
                where,
            )
        )
    claimed3 = _replayed(doc, "q3.claimed_reading_profit_yuan")
    if claimed3 is not None:
        values3 = [(r, q3_result(tables.q3, q3, r).profit) for r in readings]
        r3 = _reading_of_value(claimed3, values3, decimals) or declared
        obs.append(
            (
                "q3_claimed_reading_profit",
                f"Rat.beq (Production.q3Profit {r3.lean} {args3} {scale}) {_rat(claimed3)}",
                (f"{REPLAYED}.q3.claimed_reading_profit_yuan",),
            )
        )
    return obs
