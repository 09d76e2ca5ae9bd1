"""The verified reference of CUMCM 2024 B: every decision vector of Problems 2 and 3,
replayed exactly, and the optimum.

Writes (all deterministic, from reference/tables.json):
* reference/enumeration_q2.csv — the 16 vectors of each case of Table 1 with their exact
  expected profit per product sold (or `unbounded`) and the endless recovery loops;
* reference/enumeration_q3.csv — the 2^16 vectors of Problem 3, the same columns, the
  bits as one string in the order given in its header;
* ../reference.json — the optimal decisions (ties: fewest actions, then the smallest bit
  string) with their claims, the Problem 1 context value, and a note;
* TBMM/Replay/ProductionData.lean — the tables as Lean terms for the Lean replay.

    uv run python tasks/CUMCM/cumcm-2024-b-production-decision/reference/enumerate_decisions.py [--check]

`--check` regenerates everything in memory and exits 1 if a committed file differs.
"""

from __future__ import annotations

import csv
import io
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from tbmm.core import exact
from tbmm.replay import production_decision as P

HERE = Path(__file__).resolve().parent
TASK = HERE.parent
ROOT = TASK.parents[2]

# Problem 1 is context for the gate (not replayed): the source release's reproduction of
# the anchor paper (n = 270 inspected, reject above 36 defective) states this type-I error.
Q1_FALSE_REJECTION = "0.046596"


def decimal(q: Fraction, places: int = 6) -> Decimal:
    """`q` rounded half-even to `places` decimals (a claim, or the CSV's readable column)."""
    exact_scaled = q * 10**places
    n = round(exact_scaled)  # Fraction.__round__ rounds half to even, exactly
    return Decimal(n).scaleb(-places)


def decimal_text(q: Fraction, places: int = 6) -> str:
    return format(decimal(q, places), "f")


def exact_text(q: Fraction | None) -> str:
    if q is None:
        return "unbounded"
    return str(q.numerator) if q.denominator == 1 else f"{q.numerator}/{q.denominator}"


def best(rows: list[tuple[tuple[int, ...], P.Result]]) -> tuple[tuple[int, ...], P.Result]:
    """The optimum: highest finite profit; ties broken by fewest actions, then smallest bits."""
    finite = [(b, r) for b, r in rows if r.profit is not None]
    top = max(r.profit for _, r in finite)  # type: ignore[type-var]
    return min(((b, r) for b, r in finite if r.profit == top), key=lambda t: (sum(t[0]), t[0]))


def q2_rows(tables: P.Tables) -> tuple[str, list[tuple[int, P.Q2Decision, P.Result]]]:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    n_parts = len(tables.q2.cases[0].parts)
    w.writerow(
        [
            "case",
            *(f"inspect_part{k + 1}" for k in range(n_parts)),
            "inspect_product",
            "disassemble_defective",
            "expected_profit_yuan_exact",
            "expected_profit_yuan",
            "unbounded_recovery_loops",
        ]
    )
    rows = []
    for c in tables.q2.cases:
        for dec in P.q2_decisions(c):
            res = P.q2_result(c, dec)
            rows.append((c.case, dec, res))
            w.writerow(
                [
                    c.case,
                    *dec.bits(),
                    exact_text(res.profit),
                    "" if res.profit is None else decimal_text(res.profit),
                    res.loops,
                ]
            )
    return out.getvalue(), rows


def q3_rows(tables: P.Tables) -> tuple[str, list[tuple[P.Q3Decision, P.Result]]]:
    t = tables.q3
    order = (
        [f"inspect_part{p.part}" for p in t.parts]
        + [f"inspect_semi{s.semi}" for s in t.semi_products]
        + [f"disassemble_semi{s.semi}" for s in t.semi_products]
        + ["inspect_product", "disassemble_product"]
    )
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(
        [
            "bits(" + " ".join(order) + ")",
            "expected_profit_yuan_exact",
            "expected_profit_yuan",
            "unbounded_recovery_loops",
        ]
    )
    rows = sorted(P.q3_enumerate(t), key=lambda dr: dr[0].bits())
    for dec, res in rows:
        w.writerow(
            [
                "".join(map(str, dec.bits())),
                exact_text(res.profit),
                "" if res.profit is None else decimal_text(res.profit),
                res.loops,
            ]
        )
    return out.getvalue(), rows


def reference(tables: P.Tables, q2: list, q3: list) -> dict:
    cases = []
    notes = []
    for c in tables.q2.cases:
        mine = [(d.bits(), r) for k, d, r in q2 if k == c.case]
        bits, res = best(mine)
        n = len(c.parts)
        finite = sum(r.profit is not None for _, r in mine)
        entry = {f"inspect_part{p.part}": bits[i] for i, p in enumerate(c.parts)}
        entry["inspect_product"] = bits[n]
        entry["disassemble_defective"] = bits[n + 1]
        entry["expected_profit_yuan"] = decimal(res.profit)  # type: ignore[arg-type]
        cases.append(entry)
        ties = [b for b, r in mine if r.profit == res.profit]
        notes.append(
            f"case {c.case}: {''.join(map(str, bits))} -> {exact_text(res.profit)}"
            + (f" (tied with {', '.join(''.join(map(str, b)) for b in ties if b != bits)})" if len(ties) > 1 else "")
            + f"; {finite} of {len(mine)} vectors bounded"
        )
    b3, r3 = best([(d.bits(), r) for d, r in q3])
    t = tables.q3
    np_, ns = len(t.parts), len(t.semi_products)
    ties3 = [d.bits() for d, r in q3 if r.profit == r3.profit]
    finite3 = sum(r.profit is not None for _, r in q3)
    artifact = {
        "q1": {"reject_plan": {"false_rejection_probability": Decimal(Q1_FALSE_REJECTION)}},
        "q2": {"cases": cases},
        "q3": {
            "parts": [{"inspect": b3[i]} for i in range(np_)],
            "semi_products": [
                {"inspect": b3[np_ + j], "disassemble_defective": b3[np_ + ns + j]} for j in range(ns)
            ],
            "product": {"inspect": b3[np_ + 2 * ns], "disassemble_defective": b3[np_ + 2 * ns + 1]},
            "expected_profit_yuan": decimal(r3.profit),  # type: ignore[arg-type]
        },
    }
    note = (
        "Computed reference: every decision vector replayed exactly by tbmm.replay.production_decision "
        "(reference/enumerate_decisions.py; all vectors in reference/enumeration_q2.csv and "
        "reference/enumeration_q3.csv); the optimum of each case (ties: fewest actions, then the "
        "smallest bit string). Problem 2: " + "; ".join(notes) + ". Problem 3 (bits: parts, semi "
        f"inspected, semi disassembled, product inspected, product disassembled): {''.join(map(str, b3))} -> "
        f"{exact_text(r3.profit)}"
        + (f" ({len(ties3)} tied vectors)" if len(ties3) > 1 else " (unique)")
        + f"; {finite3} of {len(q3)} vectors bounded. Claims are the exact profits rounded to 6 decimals. "
        f"Problem 1's false-rejection probability {Q1_FALSE_REJECTION} is context (not replayed), from "
        "the source release's reproduction of B159."
    )
    return {"artifact": artifact, "note": note}


def outputs() -> dict[Path, str]:
    tables = P.Tables.model_validate_json((HERE / "tables.json").read_text(encoding="utf-8"))
    q2_text, q2 = q2_rows(tables)
    q3_text, q3 = q3_rows(tables)
    ref = reference(tables, q2, q3)
    return {
        HERE / "enumeration_q2.csv": q2_text,
        HERE / "enumeration_q3.csv": q3_text,
        TASK / "reference.json": exact.dumps(ref) + "\n",
        ROOT / P.LEAN_DATA_FILE: P.lean_data_module(tables),
    }


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for path, text in outputs().items():
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT)))
        elif not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
