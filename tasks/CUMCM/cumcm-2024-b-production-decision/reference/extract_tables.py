"""Extract Tables 1 and 2 of CUMCM 2024 B from the official statement PDF into tables.json.

The replay (`tbmm.replay.production_decision`) and the Lean data module
(`TBMM/Replay/ProductionData.lean`) read their numbers from tables.json; this script makes
that file from the attachment's text, so no number is copied by hand. The assembly
structure of Problem 3 (which parts make which semi-finished product) is drawn in
Figure 1, an image: it is declared below (`FIGURE_1`) and cited.

    uv run python tasks/CUMCM/cumcm-2024-b-production-decision/reference/extract_tables.py [--check]

`--check` compares with the committed tables.json instead of writing it (exit 1 on a
difference); tests/test_replay_production_decision.py runs the same comparison.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from decimal import Decimal
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
TASK = HERE.parent
PDF = TASK / "environment" / "data" / "attachments" / "B题.pdf"
OUT = HERE / "tables.json"

# Figure 1 (图1 两道工序、8 个零配件的组装情况): parts 1-3 -> semi 1, 4-6 -> semi 2,
# 7-8 -> semi 3; semi-finished products 1-3 -> the product.
FIGURE_1 = {1: [1, 2, 3], 2: [4, 5, 6], 3: [7, 8]}


class TableError(ValueError):
    """The PDF's text does not have the expected table layout."""


def tokens(text: str) -> list[str]:
    return text.split()


def rate(tok: str) -> str:
    """'10%' -> '0.1' (exact decimal text)."""
    if not re.fullmatch(r"\d+(\.\d+)?%", tok):
        raise TableError(f"expected a percentage, got {tok!r}")
    return format(Decimal(tok[:-1]).scaleb(-2).normalize(), "f")


def number(tok: str) -> str:
    if not tok.isdigit():
        raise TableError(f"expected an integer amount, got {tok!r}")
    return tok


def table1(toks: list[str]) -> list[dict]:
    """Table 1: after its header (ending with 拆解 费用), 13 tokens per case until 问题3."""
    start = next(i for i in range(len(toks) - 1) if toks[i] == "拆解" and toks[i + 1] == "费用") + 2
    end = next(i for i in range(start, len(toks)) if toks[i].startswith("问题3"))
    body = toks[start:end]
    if len(body) % 13:
        raise TableError(f"Table 1 body has {len(body)} tokens, not a multiple of 13")
    cases = []
    for k in range(len(body) // 13):
        row = body[13 * k : 13 * (k + 1)]
        if row[0] != str(k + 1):
            raise TableError(f"Table 1 row {k + 1} starts with {row[0]!r}")
        cases.append(
            {
                "case": k + 1,
                "parts": [
                    {"part": 1, "defect_rate": rate(row[1]), "price": number(row[2]), "inspection_cost": number(row[3])},
                    {"part": 2, "defect_rate": rate(row[4]), "price": number(row[5]), "inspection_cost": number(row[6])},
                ],
                "product": {
                    "defect_rate": rate(row[7]),
                    "assembly_cost": number(row[8]),
                    "inspection_cost": number(row[9]),
                    "disassembly_cost": number(row[12]),
                },
                "market": {"price": number(row[10]), "exchange_loss": number(row[11])},
            }
        )
    return cases


def table2(toks: list[str]) -> dict:
    """Table 2: part rows (id, rate, price, inspection) interleaved with the semi-finished
    rows (id, rate, assembly, inspection, disassembly), the product row (成品, rate,
    assembly, inspection, disassembly) and the market row (成品, price, exchange loss)."""
    start = next(i for i, t in enumerate(toks) if t.startswith("表2")) + 1
    start = next(i for i in range(start, len(toks)) if toks[i] == "拆解费用") + 1
    end = next(i for i in range(start, len(toks)) if toks[i].startswith("针对以上"))
    body = toks[start:end]
    parts: list[dict] = []
    semis: list[dict] = []
    product: dict | None = None
    market: dict | None = None
    i = 0
    while i < len(body):
        t = body[i]
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if t == str(len(parts) + 1) and nxt.endswith("%"):
            # a part row (the part id comes first on its line)
            parts.append({"part": len(parts) + 1, "defect_rate": rate(nxt), "price": number(body[i + 2]), "inspection_cost": number(body[i + 3])})
            i += 4
        elif t == str(len(semis) + 1) and nxt.endswith("%"):
            semis.append({"semi": len(semis) + 1, "defect_rate": rate(nxt), "assembly_cost": number(body[i + 2]), "inspection_cost": number(body[i + 3]), "disassembly_cost": number(body[i + 4])})
            i += 5
        elif t == "成品" and nxt.endswith("%"):
            product = {"defect_rate": rate(nxt), "assembly_cost": number(body[i + 2]), "inspection_cost": number(body[i + 3]), "disassembly_cost": number(body[i + 4])}
            i += 5
        elif t == "成品" and nxt.isdigit():
            market = {"price": number(nxt), "exchange_loss": number(body[i + 2])}
            i += 3
        elif t in ("市场售价", "调换损失"):
            i += 1
        else:
            raise TableError(f"Table 2: unexpected token {t!r} at {i}")
    if product is None or market is None:
        raise TableError("Table 2: no product or market row")
    if sorted(p for g in FIGURE_1.values() for p in g) != [p["part"] for p in parts]:
        raise TableError("Figure 1's parts do not match Table 2's parts")
    if sorted(FIGURE_1) != [s["semi"] for s in semis]:
        raise TableError("Figure 1's semi-finished products do not match Table 2's")
    for s in semis:
        s["parts"] = FIGURE_1[s["semi"]]
    return {"parts": parts, "semi_products": semis, "product": product, "market": market}


def extract(pdf: Path = PDF) -> dict:
    doc = pymupdf.open(pdf)
    text = "\n".join(page.get_text() for page in doc)
    toks = tokens(text)
    return {
        "source": {
            "pdf": str(pdf.relative_to(TASK)),
            "sha256": hashlib.sha256(pdf.read_bytes()).hexdigest(),
            "tables": "Table 1 (Problem 2) and Table 2 (Problem 3), text of the official statement PDF",
            "structure": "Problem 3's assembly tree from Figure 1 (an image): semi-finished product k is assembled from the parts listed",
            "generator": "reference/extract_tables.py",
        },
        "q2": {"cases": table1(toks)},
        "q3": table2(toks),
    }


def main() -> int:
    text = json.dumps(extract(), indent=1, ensure_ascii=False) + "\n"
    if "--check" in sys.argv[1:]:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == text
        print("tables.json is up to date" if same else "tables.json differs from the PDF's tables")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
