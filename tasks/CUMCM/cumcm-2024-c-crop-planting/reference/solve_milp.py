"""The reference plans of CUMCM 2024 C Problem 1: the MILP of the replayed rules, solved by HiGHS.

    uv run --group reference python tasks/CUMCM/cumcm-2024-c-crop-planting/reference/solve_milp.py \
        [--time-limit 300] [--stage-limit 60] [--write [--out DIR]]

The model is the replay's own rules (`tbmm.replay.crop_planting`, parameters from
`replay.toml`) on the replay's own data (附件1/附件2 read by the same loader):

* x[p,y,s,c] >= 0 area (mu) and z[p,y,s,c] binary "planted" for every suitable
  (plot, year, season, crop); m_p z <= x <= A_p z (minimum planting area);
* sum_c x[p,y,s,c] <= A_p; irrigated plots: a binary rice year r[p,y] excludes vegetables
  in both seasons; at most one crop in an irrigated second season;
* no repeated cropping: z + z' <= 1 for the same crop on the same plot in consecutive
  seasons (second -> next first; first -> second; a grain's first -> next first), with the
  2023 plan fixing the 2024 side;
* legumes: for every plot and three-year window from 2023, legume area (2023's included)
  >= A_p; scatter: sum_p z[p,y,s,c] <= K;
* sales: sold[y,s,c] <= production, sold <= the 2023 production (expected sales);
  objective: price * sold (+ price/2 * (production - sold) in case 2) - cost * x.

The model splits exactly into three independent parts (PARTS: grain land, the fungi
season of ordinary greenhouses, everything else), solved one after the other. HiGHS's own
heuristics find poor plans for the 7-year model, so each part starts from a relax-and-fix
plan (year by year: that year's binaries integral, later years relaxed, earlier years
fixed; `--stage-limit` seconds per year) and the full branch and bound then runs for
`--time-limit` seconds from it; its dual bound is recorded. HiGHS returns floating areas;
they are put on a 0.01-mu grid (snapped when within 1e-6 of it, else rounded down), legume
shortfalls created by rounding are repaired inside their cells, and the plan is then
replayed EXACTLY by the replay module: the profit recorded is the replayed one, and the gap
is stated against the sum of the parts' dual bounds (threads=1, random_seed=0: the run is
reproducible up to the time limits).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from fractions import Fraction
from pathlib import Path

import highspy

from tbmm.replay import Deadline
from tbmm.replay.crop_planting import (
    CASES,
    RICE,
    SEASONS,
    CropData,
    Plan,
    Rules,
    evaluate_plan,
    load_data,
)

TASK = Path(__file__).resolve().parents[1]
GRID = Fraction(1, 100)
# The MILP splits exactly into independent parts: no crop, plot-season or rule spans two of
# them (grain grows only on flat/terrace/hillside land; edible fungi only in the second season
# of ordinary greenhouses, where no rotation or legume rule reaches; everything else — rice,
# vegetables, irrigated land and the greenhouses' vegetable seasons — is the third part).
PARTS = {
    "grain": lambda kind, season: kind in ("flat", "terrace", "hillside"),
    "fungi": lambda kind, season: kind == "greenhouse" and season == "second",
    "vegetables": lambda kind, season: (
        kind in ("irrigated", "smart") or (kind == "greenhouse" and season == "first")
    ),
}


def build(h: highspy.Highs, data: CropData, rules: Rules, case: str, part: str):  # noqa: ANN201
    """The MILP of one independent part of the problem (see PARTS)."""
    inf = highspy.kHighsInf
    cols: list[tuple[str, tuple]] = []

    def col(lo: float, hi: float, cost: float, integer: bool, name: tuple) -> int:
        h.addCol(cost, lo, hi, 0, [], [])
        j = len(cols)
        if integer:
            h.changeColIntegrality(j, highspy.HighsVarType.kInteger)
        cols.append((name[0], name))
        return j

    def row(lo: float, hi: float, idx: list[int], val: list[float]) -> None:
        h.addRow(lo, hi, len(idx), idx, val)

    x: dict[tuple, int] = {}
    z: dict[tuple, int] = {}
    hist = {}
    for (plot, season, crop), area in data.history.items():
        hist.setdefault((plot, season), {})[crop] = area
    for plot, p in data.plots.items():
        m = float(rules.min_area(p.kind))
        for y in rules.years:
            for s in SEASONS:
                for (kind, season, crop), st in data.stats.items():
                    if kind != p.kind or season != s or not PARTS[part](kind, season):
                        continue
                    k = (plot, y, s, crop)
                    x[k] = col(0, float(p.area), -float(st.cost), False, ("x", k))
                    z[k] = col(0, 1, 0, True, ("z", k))
                    row(-inf, 0, [x[k], z[k]], [1, -float(p.area)])
                    row(0, inf, [x[k], z[k]], [1, -m])
    for plot, p in data.plots.items():
        if not any(PARTS[part](p.kind, s) for s in SEASONS):
            continue
        for y in rules.years:
            for s in SEASONS:
                ks = [k for k in x if k[0] == plot and k[1] == y and k[2] == s]
                if ks:
                    row(-inf, float(p.area), [x[k] for k in ks], [1] * len(ks))
            if p.kind == "irrigated":
                r = col(0, 1, 0, True, ("r", (plot, y)))
                for k in [k for k in z if k[0] == plot and k[1] == y]:
                    if k[3] == RICE:
                        row(-inf, 0, [z[k], r], [1, -1])
                    else:
                        row(-inf, 1, [z[k], r], [1, 1])
                sec = [z[k] for k in z if k[0] == plot and k[1] == y and k[2] == "second"]
                row(-inf, 1, sec, [1] * len(sec))
    # rotation
    for plot in data.plots:
        for y in [data.history_year, *rules.years]:
            pairs = [((y, "second"), (y + 1, "first"))]
            if y != data.history_year:
                pairs.append(((y, "first"), (y, "second")))
            for (y1, s1), (y2, s2) in pairs:
                if y2 not in rules.years:
                    continue
                for crop in data.crops:
                    a, b = (plot, y1, s1, crop), (plot, y2, s2, crop)
                    if b not in z:
                        continue
                    if y1 == data.history_year:
                        if crop in hist.get((plot, s1), {}):
                            h.changeColBounds(z[b], 0, 0)
                    elif a in z:
                        row(-inf, 1, [z[a], z[b]], [1, 1])
            for crop, c in data.crops.items():
                if c.group != "grain":
                    continue
                a, b = (plot, y, "first", crop), (plot, y + 1, "first", crop)
                if b not in z:
                    continue
                if y == data.history_year:
                    if crop in hist.get((plot, "first"), {}):
                        h.changeColBounds(z[b], 0, 0)
                elif a in z:
                    row(-inf, 1, [z[a], z[b]], [1, 1])
    # legumes
    for plot, p in data.plots.items():
        if not PARTS[part](p.kind, "first"):
            continue  # legumes grow in first seasons only (附件1): the part holding them
        for start in range(data.history_year, rules.last_year - rules.legume_window + 2):
            window = range(start, start + rules.legume_window)
            have = sum(
                (
                    a
                    for (pl, s, c), a in data.history.items()
                    if pl == plot and data.history_year in window and data.crops[c].legume
                ),
                Fraction(0),
            )
            ks = [k for k in x if k[0] == plot and k[1] in window and data.crops[k[3]].legume]
            row(float(p.area - have), inf, [x[k] for k in ks], [1] * len(ks))
    # scatter and sales
    groups: dict[tuple, list[tuple]] = {}
    for k in x:
        groups.setdefault((k[1], k[2], k[3]), []).append(k)
    for (y, s, crop), ks in groups.items():
        row(-inf, rules.max_plots, [z[k] for k in ks], [1] * len(ks))
        price = float(data.price[(s, crop)])
        d = float(data.demand.get((s, crop), 0))
        sold = col(0, d, price if case == "case1" else price / 2, False, ("sold", (y, s, crop)))
        ylds = [float(data.stats[(data.plots[k[0]].kind, s, crop)].yield_jin) for k in ks]
        row(-inf, 0, [sold, *[x[k] for k in ks]], [1, *[-v for v in ylds]])
        if case == "case2":  # + price/2 * production
            for k, v in zip(ks, ylds, strict=True):
                h.changeColCost(
                    x[k], -float(data.stats[(data.plots[k[0]].kind, s, crop)].cost) + price / 2 * v
                )
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    year_of = {j: name[1][1] for j, (kind, name) in enumerate(cols) if kind in ("z", "r")}
    return x, z, year_of


def relax_and_fix(
    h: highspy.Highs, year_of: dict[int, int], rules: Rules, stage_limit: float
) -> highspy.HighsSolution | None:
    """A starting plan for the branch and bound: year by year, solve with that year's
    binaries integral, later years relaxed and earlier years fixed (HiGHS's own heuristics
    find poor plans for the 7-year model). Restores the model before returning."""
    lp = h.getLp()
    lo, hi = list(lp.col_lower_), list(lp.col_upper_)
    relax = highspy.HighsVarType.kContinuous
    integer = highspy.HighsVarType.kInteger
    for j in year_of:
        h.changeColIntegrality(j, relax)
    ok = True
    sol: list[float] = []
    for y in rules.years:
        for j, yy in year_of.items():
            if yy == y:
                h.changeColIntegrality(j, integer)
        # HiGHS's time limit counts the object's whole run time: extend it per stage.
        h.setOptionValue("time_limit", h.getRunTime() + stage_limit)
        h.run()
        if h.getInfo().primal_solution_status != 2:  # no feasible point
            ok = False
            break
        sol = h.getSolution().col_value
        for j, yy in year_of.items():
            if yy == y:
                v = float(round(sol[j]))
                h.changeColBounds(j, v, v)
                h.changeColIntegrality(j, relax)
    start = h.getSolution() if ok else None  # the last stage has every binary integral
    for j in year_of:
        h.changeColBounds(j, lo[j], hi[j])
        h.changeColIntegrality(j, integer)
    return start


def to_grid(v: float) -> Fraction:
    q = Fraction(round(v * 100), 100)
    if abs(float(q) - v) <= 1e-6:
        return q
    return Fraction(int(v * 100 // 1), 100)


def extract(h: highspy.Highs, x: dict[tuple, int]) -> dict[tuple, Fraction]:
    sol = h.getSolution().col_value
    areas = {k: to_grid(sol[j]) for k, j in x.items() if sol[j] > 1e-7}
    return {k: a for k, a in areas.items() if a > 0}


def repair_legumes(areas: dict[tuple, Fraction], data: CropData, rules: Rules) -> None:
    """Rounding down can leave a legume window a few hundredths short: grow a legume planting
    of that window into free room of its cell (or take the room from a non-legume planting
    that stays above its minimum)."""
    for plot, p in data.plots.items():
        for start in range(data.history_year, rules.last_year - rules.legume_window + 2):
            window = range(start, start + rules.legume_window)
            have = sum(
                (
                    a
                    for (pl, s, c), a in data.history.items()
                    if pl == plot and data.history_year in window and data.crops[c].legume
                ),
                Fraction(0),
            )
            leg = [k for k in areas if k[0] == plot and k[1] in window and data.crops[k[3]].legume]
            short = p.area - have - sum((areas[k] for k in leg), Fraction(0))
            for k in leg:
                if short <= 0:
                    break
                cell = [q for q in areas if q[:3] == k[:3]]
                free = p.area - sum((areas[q] for q in cell), Fraction(0))
                take = min(free, short)
                if take < short:
                    for q in cell:
                        if q == k or data.crops[q[3]].legume:
                            continue
                        spare = areas[q] - rules.min_area(p.kind)
                        more = min(spare, short - take)
                        if more > 0:
                            areas[q] -= more
                            take += more
                areas[k] += take
                short -= take


def plan_rows(areas: dict[tuple, Fraction], data: CropData) -> list[dict]:
    order = sorted(
        areas, key=lambda k: (k[1], data.plots[k[0]].index, SEASONS.index(k[2]), int(k[3]))
    )
    return [
        {"year": k[1], "plot": k[0], "season": k[2], "crop": k[3], "area_mu": _dec(areas[k])}
        for k in order
    ]


def _dec(q: Fraction) -> str:
    assert (q * 100).denominator == 1
    return _exact_text(q)


def _exact_text(q: Fraction) -> str:
    cents = q * 100
    assert cents.denominator == 1
    n = int(cents)
    return f"{n // 100}.{n % 100:02d}".rstrip("0").rstrip(".")


def solve(
    case: str, data: CropData, rules: Rules, time_limit: float, gap: float, stage_limit: float
) -> dict:
    parts = {
        part: solve_part(case, part, data, rules, time_limit, gap, stage_limit) for part in PARTS
    }
    areas: dict[tuple, Fraction] = {}
    for r in parts.values():
        areas.update(r.pop("areas"))
    repair_legumes(areas, data, rules)
    return {
        "status": {p: r["status"] for p, r in parts.items()},
        "objective": sum(r["objective"] for r in parts.values()),
        "dual_bound": sum(r["dual_bound"] for r in parts.values()),
        "parts": parts,
        "rows": plan_rows(areas, data),
    }


def solve_part(
    case: str,
    part: str,
    data: CropData,
    rules: Rules,
    time_limit: float,
    gap: float,
    stage_limit: float,
) -> dict:
    h = highspy.Highs()
    h.setOptionValue("output_flag", True)
    h.setOptionValue("log_to_console", True)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("time_limit", float(time_limit))
    h.setOptionValue("mip_rel_gap", gap)
    x, _, year_of = build(h, data, rules, case, part)
    t0 = time.monotonic()
    start = relax_and_fix(h, year_of, rules, stage_limit=stage_limit)
    h.setOptionValue("time_limit", h.getRunTime() + float(time_limit))
    if start is not None:
        h.setSolution(start)
    h.run()
    seconds = time.monotonic() - t0
    info = h.getInfo()
    return {
        "status": h.modelStatusToString(h.getModelStatus()),
        "objective": info.objective_function_value,
        "dual_bound": info.mip_dual_bound,
        "mip_gap": info.mip_gap,
        "nodes": info.mip_node_count,
        "seconds": round(seconds, 1),
        "areas": extract(h, x),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=900.0, help="seconds per case")
    ap.add_argument("--gap", type=float, default=1e-6, help="HiGHS mip_rel_gap")
    ap.add_argument(
        "--stage-limit", type=float, default=60.0, help="seconds per relax-and-fix stage"
    )
    ap.add_argument(
        "--write", action="store_true", help="write reference.json and reference/solve.json"
    )
    ap.add_argument("--out", type=Path, default=TASK, help="folder to write them in (the task)")
    args = ap.parse_args()
    spec = tomllib.loads((TASK / "replay.toml").read_text(encoding="utf-8"))
    rules = Rules.from_params(spec["params"])
    data = load_data(TASK / "environment" / "data" / "attachments")
    artifact: dict = {"q1": {}}
    record: dict = {
        "solver": f"HiGHS {highspy.Highs().version()} via highspy",
        "options": {
            "stage_limit_s": args.stage_limit,
            "threads": 1,
            "random_seed": 0,
            "time_limit_s": args.time_limit,
            "mip_rel_gap": args.gap,
        },
        "cases": {},
    }
    from tbmm.core import exact
    from tbmm.replay.crop_planting import parse_plan

    for case in CASES:
        res = solve(case, data, rules, args.time_limit, args.gap, args.stage_limit)
        doc = exact.loads(_numbers(json.dumps({"rows": res["rows"]})))
        plan: Plan = parse_plan(doc["rows"], f"q1.{case}.plan", data, rules, 10**6, Deadline(60))
        v = evaluate_plan(plan, data, rules, case, f"q1.{case}.plan")
        replayed = v.profit
        bound = Fraction(res["dual_bound"]).limit_denominator(100)
        res["replayed_profit_yuan"] = exact.fraction_to_text(replayed)
        res["rule_violations"] = v.total
        res["gap_to_dual_bound_yuan"] = float(bound - replayed)
        res["relative_gap_to_dual_bound"] = float((bound - replayed) / abs(bound)) if bound else 0.0
        print(
            case,
            res["status"],
            "obj",
            res["objective"],
            "bound",
            res["dual_bound"],
            "replayed",
            float(replayed),
            "violations",
            v.total,
            {r: len(m) for r, m in v.violations.items() if m},
            file=sys.stderr,
        )
        artifact["q1"][case] = {"profit_yuan": res["replayed_profit_yuan"], "plan": res["rows"]}
        record["cases"][case] = {k: v2 for k, v2 in res.items() if k != "rows"}
        record["cases"][case]["plan_rows"] = len(res["rows"])
    if args.write:
        (args.out / "reference").mkdir(parents=True, exist_ok=True)
        (args.out / "reference" / "solve.json").write_text(
            json.dumps(record, indent=1) + "\n", encoding="utf-8"
        )
        note = (
            "Problem 1 reference plans: the MILP of the replayed rules solved by "
            f"{record['solver']} (reference/solve_milp.py; solver record in reference/solve.json), "
            "areas put on a 0.01-mu grid and replayed exactly; claims are the replayed profits."
        )
        text = json.dumps({"artifact": artifact, "note": note}, indent=1, ensure_ascii=False)
        (args.out / "reference.json").write_text(_numbers(text) + "\n", encoding="utf-8")
    print(json.dumps(record, indent=1))
    return 0


def _numbers(text: str) -> str:
    """Exact decimals are kept as JSON numbers (they were carried as strings)."""
    import re

    return re.sub(r'"(profit_yuan|area_mu)": "(-?[0-9.]+)"', r'"\1": \2', text)


if __name__ == "__main__":
    sys.exit(main())
