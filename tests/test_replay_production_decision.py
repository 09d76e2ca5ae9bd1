"""CUMCM 2024 B replay (tbmm.replay.production_decision): the expected profit per product
sold of the artifact's decisions, exactly; the reference is the enumerated optimum; the
Lean certificate recomputes every replayed number in the kernel."""

from __future__ import annotations

import csv
import importlib.util
import math
import random
from decimal import Decimal
from fractions import Fraction
from types import ModuleType
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.core.paths import resolve, set_path
from tbmm.lean.build import project_root
from tbmm.lean.certify import check_artifact, render
from tbmm.replay import production_decision as P
from tbmm.replay import strip_replayed
from tbmm.suite.tasks import Task, find_task
from tbmm.verdict.pipeline import Evaluation, evaluate
from tbmm.verdict.scoring import read_artifact
from tbmm.verify import verify_artifact

SLUG = "cumcm-2024-b-production-decision"
ROOT = project_root()


@pytest.fixture(scope="module")
def task() -> Task:
    return find_task(SLUG)


@pytest.fixture(scope="module")
def tables(task: Task) -> P.Tables:
    return P.load_tables(task)


def _script(task: Task, name: str) -> ModuleType:
    path = task.dir / "reference" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_pd_{name}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def oracle(task: Task) -> dict[str, Any]:
    """The reference artifact (what the oracle writes), as a fresh exact tree."""
    base, _ = strip_replayed(task.anchor_artifact)
    return exact.loads(exact.dumps(base))


def num(text: str) -> exact.Num:
    return exact.loads(text)


def run(task: Task, doc: dict[str, Any]) -> Evaluation:
    return evaluate(task, read_artifact(exact.dumps(doc).encode()))


def metric(ev: Evaluation, mid: str) -> Fraction | None:
    return next(m.reward for m in ev.score.metrics if m.id == mid)


def set_q2(doc: dict[str, Any], case: int, bits: tuple[int, int, int, int], claim: str) -> None:
    entry = doc["q2"]["cases"][case - 1]
    for k, b in zip(
        ("inspect_part1", "inspect_part2", "inspect_product", "disassemble_defective"),
        bits,
        strict=True,
    ):
        entry[k] = num(str(b))
    entry["expected_profit_yuan"] = num(claim)


def set_q3(doc: dict[str, Any], bits: str, claim: str) -> None:
    q3 = doc["q3"]
    b = [num(c) for c in bits]
    for i, p in enumerate(q3["parts"]):
        p["inspect"] = b[i]
    n, s = len(q3["parts"]), len(q3["semi_products"])
    for j, sp in enumerate(q3["semi_products"]):
        sp["inspect"], sp["disassemble_defective"] = b[n + j], b[n + s + j]
    q3["product"]["inspect"], q3["product"]["disassemble_defective"] = (
        b[n + 2 * s],
        b[n + 2 * s + 1],
    )
    q3["expected_profit_yuan"] = num(claim)


# --- data and reference ----------------------------------------------------------------


def test_tables_are_the_pdf_tables(task: Task) -> None:
    """tables.json is exactly what the extractor reads from the statement's PDF."""
    ext = _script(task, "extract_tables")
    fresh = ext.extract()
    committed = P.Tables.model_validate_json((task.dir / "reference" / "tables.json").read_text())
    assert P.Tables.model_validate(fresh) == committed
    assert len(committed.q2.cases) == 6 and len(committed.q3.parts) == 8  # the statement's tables
    assert (
        committed.q2.cases[4].parts[0].inspection_cost == "8"
    )  # case 5: part 1 costs 8 to inspect
    assert committed.q3.market.price == "200" and committed.q3.market.exchange_loss == "40"


@pytest.mark.slow
def test_generated_files_are_up_to_date(task: Task) -> None:
    """The enumerations, reference.json and the Lean data module are what the script writes
    from tables.json (so the Lean data is generated, never hand-edited)."""
    gen = _script(task, "enumerate_decisions")
    for path, text in gen.outputs().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: rerun the script"


def _csv(task: Task, name: str) -> list[dict[str, str]]:
    with open(task.dir / "reference" / name, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_enumeration_optimum_is_the_reference(task: Task, tables: P.Tables) -> None:
    q2 = _csv(task, "enumeration_q2.csv")
    anchor = task.anchor_artifact
    for c in tables.q2.cases:
        rows = [r for r in q2 if int(r["case"]) == c.case]
        assert len(rows) == 2 ** (len(c.parts) + 2)
        best = max(
            Fraction(r["expected_profit_yuan_exact"])
            for r in rows
            if r["expected_profit_yuan_exact"] != "unbounded"
        )
        ref = anchor["q2"]["cases"][c.case - 1]
        dec = P.Q2Decision(
            tuple(ref[f"inspect_part{p.part}"].value == 1 for p in c.parts),
            ref["inspect_product"].value == 1,
            ref["disassemble_defective"].value == 1,
        )
        assert P.q2_result(c, dec).profit == best
        replayed = resolve(anchor, f"replayed.q2.cases[{c.case - 1}].expected_profit_yuan").value
        assert replayed == P.floor_to(best, 9)
        # each row is the replay of its vector
        for r in rows:
            bits = tuple(
                int(r[k])
                for k in (
                    "inspect_part1",
                    "inspect_part2",
                    "inspect_product",
                    "disassemble_defective",
                )
            )
            res = P.q2_result(
                c, P.Q2Decision((bits[0] == 1, bits[1] == 1), bits[2] == 1, bits[3] == 1)
            )
            assert r["expected_profit_yuan_exact"] == (
                "unbounded" if res.profit is None else str(res.profit)
            )
    q3 = _csv(task, "enumeration_q3.csv")
    assert len(q3) == 2**16 and len({r[next(iter(r))] for r in q3}) == 2**16
    best3 = max(
        Fraction(r["expected_profit_yuan_exact"])
        for r in q3
        if r["expected_profit_yuan_exact"] != "unbounded"
    )
    assert best3 == Fraction(173, 3)
    assert resolve(anchor, "replayed.q3.expected_profit_yuan").value == P.floor_to(best3, 9)


def test_hand_computed_values(tables: P.Tables) -> None:
    """The verification.md example, and two closed forms worked by hand."""
    c1, c6 = tables.q2.cases[0], tables.q2.cases[5]
    # case 1, parts inspected, product not, disassemble: 56 - (36 + 0.1 (6+5+5+6)/0.9)
    assert P.q2_result(c1, P.Q2Decision((True, True), False, True)).profit == Fraction(158, 9)
    # case 6, nothing inspected, scrap: g = 0.95^3, V = (28 + (1-g) 10)/g
    g = Fraction(19, 20) ** 3
    assert (
        P.q2_result(c6, P.Q2Decision((False, False), False, False)).profit
        == 56 - (28 + (1 - g) * 10) / g
    )
    # case 4, everything inspected, scrap: C = 5/0.8 + 19/0.8, V = (30 + 6 + 2)/0.8
    c4 = tables.q2.cases[3]
    assert P.q2_result(c4, P.Q2Decision((True, True), True, False)).profit == 56 - Fraction(
        38
    ) / Fraction(4, 5)


# --- an independent check of the closed forms: simulate the process itself -------------


class _Sim:
    """Monte-Carlo run of the statement's process (items with hidden defects), literally:
    every component entering an assembly goes through its inspection step, defective
    assemblies are disassembled or scrapped, returned products exchanged."""

    def __init__(self, rng: random.Random, reinspect: bool = True) -> None:
        self.rng = rng
        self.cost = 0.0
        self.steps = 0
        self.reinspect = reinspect  # a recovered inspected component pays its inspection again
        self.assemblies = 0  # assemblies of the final product

    def part(self, p: P.PartRow, x: bool, have: bool | None = None) -> bool:
        bad = have
        if have is False and x and not self.reinspect:
            return False  # recovered and already shown good: not inspected again
        while True:
            self.steps += 1
            if bad is None:
                self.cost += float(exact.parse_decimal(p.price))
                bad = self.rng.random() < float(exact.parse_decimal(p.defect_rate))
            if not x:
                return bad
            self.cost += float(exact.parse_decimal(p.inspection_cost))
            if not bad:
                return False
            bad = None

    def assemble(self, s: P.StepRow, kids: list[Any]) -> tuple[bool, list[Any]]:
        self.cost += float(exact.parse_decimal(s.assembly_cost))
        flag = lambda k: k if isinstance(k, bool) else k[0]  # noqa: E731
        bad = any(flag(k) for k in kids) or self.rng.random() < float(
            exact.parse_decimal(s.defect_rate)
        )
        return bad, kids

    def semi(
        self,
        s: P.SemiRow,
        parts: list[P.PartRow],
        xp: list[bool],
        x: bool,
        z: bool,
        have: Any = None,
    ) -> Any:
        comp = have
        if have is not None and x and not have[0] and not self.reinspect:
            return comp  # recovered and already shown good: not inspected again
        while True:
            self.steps += 1
            assert self.steps < 10**6, "endless"
            if comp is None:
                comp = self.assemble(s, [self.part(p, b) for p, b in zip(parts, xp, strict=True)])
            if not x:
                return comp
            self.cost += float(exact.parse_decimal(s.inspection_cost))
            if not comp[0]:
                return comp
            if z:
                self.cost += float(exact.parse_decimal(s.disassembly_cost))
                comp = self.assemble(
                    s, [self.part(p, b, k) for p, b, k in zip(parts, xp, comp[1], strict=True)]
                )
            else:
                comp = None

    def sale(self, s: P.StepRow, m: P.MarketRow, y: bool, z: bool, make: Any, redo: Any) -> float:
        comp = None
        while True:
            self.steps += 1
            assert self.steps < 10**6, "endless"
            if comp is None:
                comp = self.assemble(s, make())
                self.assemblies += 1
            if y:
                self.cost += float(exact.parse_decimal(s.inspection_cost))
            if not comp[0]:
                return float(exact.parse_decimal(m.price)) - self.cost
            if not y:
                self.cost += float(exact.parse_decimal(m.exchange_loss))
            if z:
                self.cost += float(exact.parse_decimal(s.disassembly_cost))
                comp = self.assemble(s, redo(comp[1]))
                self.assemblies += 1
            else:
                comp = None


def _mc(sample: Any, n: int) -> tuple[float, float]:
    xs = [sample() for _ in range(n)]
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    return mean, sd / math.sqrt(n)


@pytest.mark.slow
def test_closed_forms_match_a_simulation_of_the_process(tables: P.Tables) -> None:
    """Every bounded Problem 2 vector and a few Problem 3 vectors: the exact replay lies
    within 4.5 standard errors of a seeded simulation of the literal process."""
    rng = random.Random(2024)
    for c in tables.q2.cases:
        for dec in P.q2_decisions(c):
            exact_profit = P.q2_result(c, dec).profit
            if exact_profit is None:
                continue

            def sample(c: P.Q2Case = c, dec: P.Q2Decision = dec) -> float:
                sim = _Sim(rng)

                def make() -> list[Any]:
                    return [sim.part(p, x) for p, x in zip(c.parts, dec.inspect_parts, strict=True)]

                def redo(kids: list[Any]) -> list[Any]:
                    parts = zip(c.parts, dec.inspect_parts, kids, strict=True)
                    return [sim.part(p, x, k) for p, x, k in parts]

                return sim.sale(
                    c.product, c.market, dec.inspect_product, dec.disassemble, make, redo
                )

            mean, se = _mc(sample, 1500)
            assert abs(mean - float(exact_profit)) <= 4.5 * se + 1e-9, (
                c.case,
                dec,
                mean,
                float(exact_profit),
                se,
            )
    t = tables.q3
    parts = {p.part: p for p in t.parts}
    for bits in (
        "1111111111111101",
        "1111111111100010",
        "0000000011100011",
        "1110001111110101",
        "0000000000000010",
    ):
        b = [ch == "1" for ch in bits]
        dec = P.Q3Decision(tuple(b[:8]), tuple(b[8:11]), tuple(b[11:14]), b[14], b[15])
        exact_profit = P.q3_result(t, dec).profit
        assert exact_profit is not None, bits
        x = {p.part: v for p, v in zip(t.parts, dec.inspect_parts, strict=True)}

        def sample3(dec: P.Q3Decision = dec, x: dict[int, bool] = x) -> float:
            sim = _Sim(rng)
            args = [
                (s, [parts[i] for i in s.parts], [x[i] for i in s.parts], xs, zs)
                for s, xs, zs in zip(
                    t.semi_products, dec.inspect_semis, dec.disassemble_semis, strict=True
                )
            ]

            def make() -> list[Any]:
                return [sim.semi(*a) for a in args]

            def redo(kids: list[Any]) -> list[Any]:
                return [sim.semi(*a, have=k) for a, k in zip(args, kids, strict=True)]

            return sim.sale(
                t.product, t.market, dec.inspect_product, dec.disassemble_product, make, redo
            )

        mean, se = _mc(sample3, 1500)
        assert abs(mean - float(exact_profit)) <= 4.5 * se + 1e-9, (
            bits,
            mean,
            float(exact_profit),
            se,
        )


def test_endless_recovery_is_exactly_disassembly_with_an_uninspected_component(
    tables: P.Tables,
) -> None:
    for c in tables.q2.cases:
        for dec in P.q2_decisions(c):
            endless = dec.disassemble and not all(dec.inspect_parts)
            res = P.q2_result(c, dec)
            assert (res.profit is None) == endless and res.loops == int(endless)


# --- the pipeline ---------------------------------------------------------------------


@pytest.mark.slow
def test_oracle_scores_one(task: Task) -> None:
    ev = run(task, oracle(task))
    assert ev.replay is not None and ev.replay.status == "ok"
    assert ev.gate.verdict == "pass", [i.message for i in ev.gate.failed]
    assert ev.score.o_eval == 1
    # the full verify path, Lean included: every replay obligation holds in the kernel
    rep = verify_artifact(task, exact.dumps(oracle(task)).encode(), lean=True)
    assert rep.exit_code == 0 and rep.lean == "ok" and rep.o_eval_exact == "1", rep.failing
    assert rep.lean_detail["obligations"] > len(task.gate.check)


def test_inflated_claim_is_misreported(task: Task) -> None:
    doc = oracle(task)
    doc["q2"]["cases"][0]["expected_profit_yuan"] = num("18.56")
    ev = run(task, doc)
    assert ev.gate.verdict == "fail"
    msgs = [i.message for i in ev.gate.failed]
    # compared with the nearest stated reading (known-good recovered parts, 163/9); the
    # message shows every reading's exact value
    assert any("misreported" in m and "18.111111111" in m and "sold: 158/9" in m for m in msgs), (
        msgs
    )
    assert ev.score.o_eval == 0
    doc = oracle(task)
    doc["q3"]["expected_profit_yuan"] = num("57.68")  # beyond the 0.005 rounding tolerance
    ev = run(task, doc)
    assert [i.check.id for i in ev.gate.failed] == ["q3_profit_replayed"]
    doc["q3"]["expected_profit_yuan"] = num("57.67")  # rounded to the fen: agrees
    assert run(task, doc).gate.verdict == "pass"


def test_other_feasible_decisions_score_by_their_replay(task: Task) -> None:
    # case 3: inspecting the product too is exactly as good (a tie in the enumeration)
    doc = oracle(task)
    set_q2(doc, 3, (1, 1, 1, 1), "14.89")
    ev = run(task, doc)
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1
    # Problem 3: inspect everything and scrap defectives: 37.119341..., scored by its replay
    doc = oracle(task)
    set_q3(doc, "1111111111100010", "37.119342")
    ev = run(task, doc)
    assert ev.gate.verdict == "pass"
    x = P.floor_to(Fraction(9020, 243), 9)
    assert resolve(ev.doc, "replayed.q3.expected_profit_yuan").value == x
    o = task.metrics[1].anchor
    assert metric(ev, "q3_expected_profit") == 1 - (o - x) / 30
    assert metric(ev, "q2_mean_expected_profit") == 1
    # a worse Problem 2 decision lowers the replayed mean, whatever it claims about itself
    doc = oracle(task)
    set_q2(doc, 1, (0, 0, 0, 0), "15.360768")
    ev = run(task, doc)
    assert ev.gate.verdict == "pass"
    mean = resolve(ev.doc, "replayed.q2.mean_expected_profit_yuan").value
    assert mean < task.metrics[0].anchor and metric(ev, "q2_mean_expected_profit") < 1


def test_endless_recovery_decision_has_no_profit_and_scores_zero_there(task: Task) -> None:
    doc = oracle(task)
    set_q2(doc, 5, (0, 1, 0, 1), "10.58")  # a popular answer: part 1 never inspected, disassembled
    ev = run(task, doc)
    assert ev.replay is not None and ev.replay.status == "ok"
    assert "q2.cases[4].expected_profit_yuan" not in ev.replay.values
    assert ev.replay.values["q2.cases[4].unbounded_recovery_loops"] == "1"
    assert any("case 5: no finite expected profit" in n for n in ev.replay.notes)
    assert ev.gate.verdict != "fail"
    assert metric(ev, "q2_mean_expected_profit") == 0
    assert "q2_mean_expected_profit" in ev.gate.unverifiable
    assert metric(ev, "q3_expected_profit") == 1
    # Problem 3: products disassembled although semi-finished product 3 is never inspected
    doc = oracle(task)
    set_q3(doc, "1111111111011101", "50")
    ev = run(task, doc)
    assert ev.replay.values["q3.unbounded_recovery_loops"] == "1"  # type: ignore[union-attr]
    assert metric(ev, "q3_expected_profit") == 0 and metric(ev, "q2_mean_expected_profit") == 1


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda d: d["q2"]["cases"].pop(), "q2.cases: 5 entries"),
        (
            lambda d: set_path(d, "q2.cases[1].inspect_part2", num("2")),
            "q2.cases[1].inspect_part2: a decision is 0 or 1, got 2",
        ),
        (
            lambda d: set_path(d, "q2.cases[0].inspect_product", exact.NonFinite("NaN")),
            "non-finite NaN",
        ),
        (lambda d: set_path(d, "q2.cases[0].disassemble_defective", True), "the boolean true"),
        (lambda d: set_path(d, "q3.parts[7].inspect", "yes"), "q3.parts[7].inspect"),
        (
            lambda d: d["q3"]["product"].pop("inspect"),
            "q3.product.inspect: a decision is 0 or 1, got missing",
        ),
        (lambda d: set_path(d, "q3.semi_products[0].inspect", num("0.5")), "got 0.5"),
        (lambda d: d.pop("q3"), "q3: an object"),
        (lambda d: set_path(d, "q2.cases", [d["q2"]["cases"][0]] * 7), "q2.cases: 7 entries"),
    ],
)
def test_bad_input_gives_a_reason_and_zero(task: Task, mutate: Any, needle: str) -> None:
    doc = oracle(task)
    mutate(doc)
    ev = evaluate(task, doc)
    assert ev.replay is not None and ev.replay.status == "unreplayable"
    assert needle in ev.replay.error, ev.replay.error
    assert ev.score.o_eval == 0
    assert any(needle in w for w in ev.gate.warnings) or ev.gate.verdict == "fail"


def test_huge_tables_are_refused_before_any_work(task: Task) -> None:
    """The task's input caps (a declared list at its statement's max_items, 4 MiB in all)
    refuse an oversized decision table at parse time, with the reason, scoring 0."""
    for rows in (7, 60_000):
        doc = oracle(task)
        doc["q2"]["cases"] = doc["q2"]["cases"] * (rows // 6 + 1)
        rep = verify_artifact(task, exact.dumps(doc, indent=None).encode(), lean=False)
        assert rep.exit_code == 2 and rep.o_eval_exact == "0", rep.error
        assert (
            "q2.cases" in rep.error and "over the cap of 6" in rep.error
        ) or "bytes" in rep.error


# --- Lean ---------------------------------------------------------------------------------


def test_lean_restates_every_replayed_number(task: Task) -> None:
    ev = run(task, oracle(task))
    cert = render(task, ev.doc)  # type: ignore[arg-type]
    names = {o.name for o in cert.obligations if o.kind == "replay"}
    n = len(P.load_tables(task).q2.cases)
    assert names == {
        *(
            f"replay_q2_case{k}_{w}"
            for k in range(1, n + 1)
            for w in ("profit", "loops", "bounded")
        ),
        *(f"replay_q2_case{k}_claimed_reading_profit" for k in range(1, n + 1)),
        "replay_q2_mean_profit",
        "replay_q2_all_bounded",
        "replay_q3_profit",
        "replay_q3_loops",
        "replay_q3_bounded",
        "replay_q3_claimed_reading_profit",
    }
    committed = (ROOT / "TBMM" / "Cert" / "Cumcm2024BProductionDecision.lean").read_text()
    assert "theorem replay_q3_profit" in committed  # the anchor certificate carries them too


@pytest.mark.slow
def test_lean_obligations_fail_for_a_forged_value(task: Task) -> None:
    """(They hold for the oracle: test_oracle_scores_one verifies it with Lean.)"""
    ev = run(task, oracle(task))
    # The value scored, forged by one unit in the last written digit: the kernel's replay
    # disagrees (the Python side is bypassed: the resolved tree is edited directly).
    forged = dict(ev.doc)  # type: ignore[arg-type]
    forged["replayed"] = exact.loads(exact.dumps(ev.doc["replayed"]))  # type: ignore[index]
    v = resolve(forged, "replayed.q3.expected_profit_yuan").value
    w = v + Fraction(1, 10**9)
    set_path(
        forged, "replayed.q3.expected_profit_yuan", exact.Num(w, exact.fraction_to_text(w), False)
    )
    bad = check_artifact(task, forged)
    assert not bad.ok and bad.outcome == "disagreement"
    shown = [str(d) for d in bad.disagreements]
    assert any(
        d.startswith("replay_q3_profit") and "Lean kernel = 57.666666666" in d for d in shown
    ), shown
    # Decisions edited under an unchanged replayed value: the kernel replays the new bits.
    forged = exact.loads(exact.dumps(ev.doc))  # type: ignore[arg-type]
    forged["q2"]["cases"][5]["inspect_part1"] = num("1")
    bad = check_artifact(task, forged)
    assert bad.outcome == "disagreement"
    assert any(d.decl == "replay_q2_case6_profit" for d in bad.disagreements), bad.disagreements


# --- readings: a claim under any stated reading is honest; the score is the declared one ---


def _six(q: Fraction) -> str:
    """`q` as a claim rounded to 6 decimals (a claim of the kind a solution writes)."""
    return format(Decimal(round(q * 10**6)).scaleb(-6), "f")


def _under(task: Task, doc: dict[str, Any], reading: P.Reading, cases: Any = None) -> None:
    """Set the claims of `doc` (its own decisions) to their profits under `reading` (Problem 2
    cases `cases`, 1-based, default all; and Problem 3)."""
    tables = P.load_tables(task)
    q2, q3 = P.read_decisions(doc, tables)
    for i, (c, dec) in enumerate(zip(tables.q2.cases, q2, strict=True)):
        if cases is None or i + 1 in cases:
            v = P.q2_result(c, dec, reading).profit
            assert v is not None
            doc["q2"]["cases"][i]["expected_profit_yuan"] = num(_six(v))
    v3 = P.q3_result(tables.q3, q3, reading).profit
    assert v3 is not None
    doc["q3"]["expected_profit_yuan"] = num(_six(v3))


def test_the_task_states_every_reading_and_declares_sold(task: Task) -> None:
    readings, declared = P.readings_of(task.replay_spec)
    assert declared is P.DECLARED and declared in readings
    assert {r.name for r in readings} == set(P.READINGS)
    text = (task.dir / "verification.md").read_text(encoding="utf-8")
    for r in readings:  # each stated reading is explained to the agent
        assert f"`{r.name}`" in text, r.name


@pytest.mark.parametrize("name", sorted(P.READINGS))
def test_reference_decisions_under_each_reading_pass_and_score_the_declared_value(
    task: Task, name: str
) -> None:
    reading = P.READINGS[name]
    doc = oracle(task)
    _under(task, doc, reading)
    ev = run(task, doc)
    assert ev.gate.verdict == "pass", [i.message for i in ev.gate.failed]
    assert ev.score.o_eval == 1  # scored under the declared reading, whatever the claims say
    assert (
        resolve(ev.doc, "replayed.q3.expected_profit_yuan").value
        == resolve(task.anchor_artifact, "replayed.q3.expected_profit_yuan").value
    )
    assert ev.replay is not None
    assert f"nearest to the claim: {name} " in ev.replay.details["q3.claimed_reading_profit_yuan"]


def test_readings_differ_on_the_reference_and_may_be_mixed_per_case(task: Task) -> None:
    """The readings are not the same numbers (else the test above proves nothing): on the
    reference's decisions every pair of readings differs by more than the tolerance in
    Problem 3 and in a Problem 2 case that disassembles; one answer may use several."""
    tables = P.load_tables(task)
    q2, q3 = P.read_decisions(oracle(task), tables)
    vals = {n: P.q3_result(tables.q3, q3, r).profit for n, r in P.READINGS.items()}
    case1 = {n: P.q2_result(tables.q2.cases[0], q2[0], r).profit for n, r in P.READINGS.items()}
    for a in P.READINGS:
        for b in P.READINGS:
            if a < b:
                assert abs(vals[a] - vals[b]) > Fraction(1, 10)  # type: ignore[operator]
                assert abs(case1[a] - case1[b]) > Fraction(1, 10)  # type: ignore[operator]
    doc = oracle(task)
    _under(task, doc, P.READINGS["sold_known_good"], cases={1, 3})
    _under(task, doc, P.READINGS["assembled"], cases={2, 4})
    ev = run(task, doc)
    assert ev.gate.verdict == "pass" and ev.score.o_eval == 1


def test_a_profit_matching_no_reading_is_misreported(task: Task) -> None:
    tables = P.load_tables(task)
    q2, _ = P.read_decisions(oracle(task), tables)
    c, dec = tables.q2.cases[0], q2[0]
    values = sorted(P.q2_result(c, dec, r).profit for r in P.READINGS.values())  # type: ignore[type-var]
    for lo, hi in zip(values, values[1:], strict=False):
        doc = oracle(task)
        doc["q2"]["cases"][0]["expected_profit_yuan"] = num(_six((lo + hi) / 2))  # type: ignore[operator]
        ev = run(task, doc)
        assert [i.check.id for i in ev.gate.failed] == ["q2_case_profit_replayed"]
        assert ev.score.o_eval == 0
    # just outside the tolerance of the nearest reading
    doc = oracle(task)
    doc["q2"]["cases"][0]["expected_profit_yuan"] = num(_six(values[0] - Fraction(6, 1000)))  # type: ignore[operator]
    assert run(task, doc).gate.verdict == "fail"


def test_an_overclaim_beyond_every_reading_is_misreported(task: Task) -> None:
    tables = P.load_tables(task)
    _, q3 = P.read_decisions(oracle(task), tables)
    top = max(P.q3_result(tables.q3, q3, r).profit for r in P.READINGS.values())  # type: ignore[type-var]
    for claim in (top + Fraction(1, 100), top * 3 / 2, Fraction(103)):  # type: ignore[operator]
        doc = oracle(task)
        doc["q3"]["expected_profit_yuan"] = num(_six(claim))
        ev = run(task, doc)
        assert [i.check.id for i in ev.gate.failed] == ["q3_profit_replayed"], claim
        msgs = [i.message for i in ev.gate.failed]
        assert any("misreported" in m for m in msgs), msgs
    # a claim under a reading that a DIFFERENT decision earns is still judged on these bits
    doc = oracle(task)
    set_q2(
        doc,
        1,
        (0, 0, 0, 0),
        _six(
            P.q2_result(
                tables.q2.cases[0],
                P.Q2Decision((True, True), False, True),
                P.READINGS["sold_known_good"],
            ).profit
        ),
    )  # type: ignore[arg-type]
    assert run(task, doc).gate.verdict == "fail"


def test_readings_config_is_checked() -> None:
    from tbmm.suite.models import ReplaySpec

    def spec(**params: Any) -> ReplaySpec:
        return ReplaySpec(
            module="production_decision", exact=True, rationale="x" * 10, params=params
        )

    assert P.readings_of(spec())[1] is P.DECLARED  # a task that states nothing: the declared one
    for bad in (
        {"readings": ["sold", "per_customer"]},
        {"readings": ["sold", "sold"]},
        {"readings": []},
        {"readings": ["assembled"], "declared_reading": "sold"},
        {"readings": "sold"},
    ):
        with pytest.raises(ValueError, match="params"):
            P.readings_of(spec(**bad))


@pytest.mark.slow
def test_lean_restates_the_claimed_reading(task: Task) -> None:
    """An answer whose claims follow another reading: the kernel checks the value each claim
    is compared with under that reading's Lean definition, and refutes the same value stated
    under the declared reading."""
    doc = oracle(task)
    _under(task, doc, P.READINGS["assembled_known_good"])
    ev = run(task, doc)
    obs = dict((n, t) for n, t, _ in P.lean_obligations(task, ev.doc))  # type: ignore[arg-type]
    assert "Production.Readings.assembledKnownGood" in obs["q3_claimed_reading_profit"]
    assert "Production.Readings.sold " in obs["q3_profit"]
    rep = verify_artifact(task, exact.dumps(doc).encode(), lean=True)
    assert rep.exit_code == 0 and rep.lean == "ok" and rep.o_eval_exact == "1", rep.failing
    # the claimed-reading value forged to the declared reading's value for other claims: refuted
    forged = exact.loads(exact.dumps(ev.doc))  # type: ignore[arg-type]
    w = resolve(forged, "replayed.q3.claimed_reading_profit_yuan").value + Fraction(1, 10**9)
    set_path(
        forged,
        "replayed.q3.claimed_reading_profit_yuan",
        exact.Num(w, exact.fraction_to_text(w), False),
    )
    bad = check_artifact(task, forged)
    assert bad.outcome == "disagreement"
    assert any(d.decl == "replay_q3_claimed_reading_profit" for d in bad.disagreements)


@pytest.mark.slow
def test_other_readings_match_a_simulation_of_the_process(tables: P.Tables) -> None:
    """The readings' closed forms against the seeded simulation: recovered components that
    skip their second inspection (known good), and profit per product assembled as the
    long-run ratio (total profit over total assemblies) of the simulated process."""
    rng = random.Random(2025)
    for c in tables.q2.cases:
        for dec in P.q2_decisions(c):
            if P.q2_result(c, dec).profit is None:
                continue
            for reading in P.READINGS.values():
                exact_profit = P.q2_result(c, dec, reading).profit
                profits, counts = [], []
                for _ in range(1200):
                    sim = _Sim(rng, reinspect=reading.reinspect)

                    def make(sim: _Sim = sim, c: P.Q2Case = c, dec: P.Q2Decision = dec) -> Any:
                        return [
                            sim.part(p, x) for p, x in zip(c.parts, dec.inspect_parts, strict=True)
                        ]

                    def redo(
                        kids: Any, sim: _Sim = sim, c: P.Q2Case = c, dec: P.Q2Decision = dec
                    ) -> Any:
                        z = zip(c.parts, dec.inspect_parts, kids, strict=True)
                        return [sim.part(p, x, k) for p, x, k in z]

                    profits.append(
                        sim.sale(
                            c.product, c.market, dec.inspect_product, dec.disassemble, make, redo
                        )
                    )
                    counts.append(sim.assemblies)
                n = len(profits)
                if reading.per_assembly:  # ratio estimator, delta-method standard error
                    mp, mc = sum(profits) / n, sum(counts) / n
                    est = mp / mc
                    resid = [(p - est * k) / mc for p, k in zip(profits, counts, strict=True)]
                    se = math.sqrt(sum(r * r for r in resid) / (n - 1) / n)
                else:
                    est = sum(profits) / n
                    se = math.sqrt(sum((p - est) ** 2 for p in profits) / (n - 1) / n)
                assert abs(est - float(exact_profit)) <= 4.5 * se + 1e-9, (  # type: ignore[arg-type]
                    c.case,
                    dec,
                    reading.name,
                    est,
                    float(exact_profit),  # type: ignore[arg-type]
                )
