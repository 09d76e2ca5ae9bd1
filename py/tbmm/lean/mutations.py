"""Mutations of the Lean library: does building and auditing it catch a wrong meaning?

A certificate proves only what the library's definitions mean. Each mutation here gives
one library definition a wrong meaning — a comparator made always true or always false,
a comparison swapped, a gate form or the verdict assembly that accepts everything, a name
declared where it would shadow generated code — in a temporary copy of the project
without certificates. The library is caught when `tbmm lean build` fails (a ∀-theorem
about the definition no longer proves) or `tbmm lean audit` refuses it. Run
`python -m tbmm.lean.mutations` for the caught/total count.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tbmm.lean.build import copy_project, project_root


@dataclass(frozen=True)
class LibraryMutation:
    """Replace `old` by `new` (exactly once) in the library file `file`."""

    id: str
    file: str
    old: str
    new: str

    def apply(self, root: Path) -> None:
        path = root / self.file
        text = path.read_text(encoding="utf-8")
        if text.count(self.old) != 1:  # a stale mutation must fail loudly, not pass as caught
            raise ValueError(
                f"{self.id}: {self.old!r} occurs {text.count(self.old)} times in {self.file}"
            )
        path.write_text(text.replace(self.old, self.new), encoding="utf-8")


RAT = "TBMM/Rat.lean"
LE_BODY = "Int.ble (Int.mul p.num (Int.ofNat q.den)) (Int.mul q.num (Int.ofNat p.den))"
BEQ_BODY = "Int.beq (Int.mul p.num (Int.ofNat q.den)) (Int.mul q.num (Int.ofNat p.den))"
FORMS = "TBMM/Forms.lean"
VERDICT = "TBMM/Verdict.lean"
GATE = "TBMM/Gate.lean"
INT = "TBMM/Int.lean"
CORE = "TBMM/Core.lean"

MUTATIONS: tuple[LibraryMutation, ...] = (
    # comparators: always true, always false, swapped
    LibraryMutation(
        "rat_le_true",
        RAT,
        f"def Rat.le (p q : Rat) : Bool :=\n  {LE_BODY}",
        "def Rat.le (p q : Rat) : Bool := Bool.true",
    ),
    LibraryMutation(
        "rat_le_false",
        RAT,
        f"def Rat.le (p q : Rat) : Bool :=\n  {LE_BODY}",
        "def Rat.le (p q : Rat) : Bool := Bool.false",
    ),
    LibraryMutation(
        "rat_le_swapped",
        RAT,
        f"def Rat.le (p q : Rat) : Bool :=\n  {LE_BODY}",
        "def Rat.le (p q : Rat) : Bool :=\n  Int.ble (Int.mul q.num (Int.ofNat p.den)) (Int.mul p.num (Int.ofNat q.den))",
    ),
    LibraryMutation(
        "rat_lt_swapped",
        RAT,
        "def Rat.lt (p q : Rat) : Bool := not (Rat.le q p)",
        "def Rat.lt (p q : Rat) : Bool := not (Rat.le p q)",
    ),
    LibraryMutation(
        "rat_lt_nonstrict",
        RAT,
        "def Rat.lt (p q : Rat) : Bool := not (Rat.le q p)",
        "def Rat.lt (p q : Rat) : Bool := Rat.le p q",
    ),
    LibraryMutation(
        "rat_beq_true",
        RAT,
        f"def Rat.beq (p q : Rat) : Bool :=\n  {BEQ_BODY}",
        "def Rat.beq (p q : Rat) : Bool := Bool.true",
    ),
    LibraryMutation(
        "rat_beq_false",
        RAT,
        f"def Rat.beq (p q : Rat) : Bool :=\n  {BEQ_BODY}",
        "def Rat.beq (p q : Rat) : Bool := Bool.false",
    ),
    LibraryMutation(
        "rat_beq_is_le",
        RAT,
        f"def Rat.beq (p q : Rat) : Bool :=\n  {BEQ_BODY}",
        f"def Rat.beq (p q : Rat) : Bool :=\n  {LE_BODY}",
    ),
    LibraryMutation(
        "int_ble_true",
        INT,
        "def Int.ble (a b : Int) : Bool :=\n  Int.casesOn a\n    (fun m => Int.casesOn b (fun n => Nat.ble m n) (fun _ => Bool.false))",
        "def Int.ble (a b : Int) : Bool :=\n  Int.casesOn a\n    (fun m => Int.casesOn b (fun n => Bool.true) (fun _ => Bool.false))",
    ),
    LibraryMutation(
        "int_ble_negatives_swapped",
        INT,
        "(fun m => Int.casesOn b (fun _ => Bool.true) (fun n => Nat.ble n m))",
        "(fun m => Int.casesOn b (fun _ => Bool.true) (fun n => Nat.ble m n))",
    ),
    LibraryMutation(
        "int_beq_swapped_signs",
        INT,
        "(fun m => Int.casesOn b (fun _ => Bool.false) (fun n => Nat.beq m n))",
        "(fun m => Int.casesOn b (fun n => Nat.beq m n) (fun n => Nat.beq m n))",
    ),
    LibraryMutation(
        "nat_beq_true",
        CORE,
        "(fun _ eqN m => Nat.casesOn m Bool.false (fun m' => eqN m'))",
        "(fun _ eqN m => Nat.casesOn m Bool.true (fun m' => eqN m'))",
    ),
    LibraryMutation(
        "nat_ble_true",
        CORE,
        "(fun _ leN m => Nat.casesOn m Bool.false (fun m' => leN m'))",
        "(fun _ leN m => Nat.casesOn m Bool.true (fun m' => leN m'))",
    ),
    LibraryMutation(
        "status_beq_true",
        GATE,
        "def beq (a b : Status) : Bool := Nat.beq (code a) (code b)",
        "def beq (a b : Status) : Bool := Bool.true",
    ),
    LibraryMutation(
        "flag_beq_index_only",
        GATE,
        "def beq (a b : Flag) : Bool := and (Nat.beq a.index b.index) (Status.beq a.status b.status)",
        "def beq (a b : Flag) : Bool := Nat.beq a.index b.index",
    ),
    LibraryMutation(
        "flag_list_beq_prefix",  # `[] == ys` for every ys: a dropped flag goes unnoticed
        GATE,
        "(fun ys => List.casesOn (motive := fun _ => Bool) ys Bool.true (fun _ _ => Bool.false))",
        "(fun ys => List.casesOn (motive := fun _ => Bool) ys Bool.true (fun _ _ => Bool.true))",
    ),
    LibraryMutation(
        "cmp_ge_le_swapped",
        FORMS,
        "Cmp.casesOn op (Rat.le c x) (Rat.le x c) (Rat.lt c x) (Rat.lt x c)",
        "Cmp.casesOn op (Rat.le x c) (Rat.le c x) (Rat.lt c x) (Rat.lt x c)",
    ),
    LibraryMutation(
        "cmp_gt_nonstrict",
        FORMS,
        "Cmp.casesOn op (Rat.le c x) (Rat.le x c) (Rat.lt c x) (Rat.lt x c)",
        "Cmp.casesOn op (Rat.le c x) (Rat.le x c) (Rat.le c x) (Rat.lt x c)",
    ),
    # the gate forms and missing bounds
    LibraryMutation(
        "open_bound_fails",
        FORMS,
        "Option.casesOn o Bool.true test",
        "Option.casesOn o Bool.false test",
    ),
    LibraryMutation(
        "interval_true",
        FORMS,
        "and (Option.allOr lo (fun l => Rat.le l x)) (Option.allOr hi (fun h => Rat.le x h))",
        "Bool.true",
    ),
    LibraryMutation(
        "interval_ignores_hi",
        FORMS,
        "and (Option.allOr lo (fun l => Rat.le l x)) (Option.allOr hi (fun h => Rat.le x h))",
        "Option.allOr lo (fun l => Rat.le l x)",
    ),
    LibraryMutation(
        "count_ignores_integrality",
        FORMS,
        "and (Rat.isInt x) (and (Rat.le Rat.zero x) (Option.allOr hi (fun h => Rat.le x h)))",
        "and (Rat.le Rat.zero x) (Option.allOr hi (fun h => Rat.le x h))",
    ),
    LibraryMutation(
        "sum_to_true",
        FORMS,
        "Rat.le (Rat.abs (Rat.sub (Rat.sum xs) total)) tol",
        "Bool.true",
    ),
    LibraryMutation(
        "order_strict_swapped",
        FORMS,
        "cond strict\n    (Rat.lt (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack))\n    (Rat.le (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack))",
        "cond strict\n    (Rat.le (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack))\n    (Rat.lt (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack))",
    ),
    LibraryMutation(
        "threshold_true",
        FORMS,
        "def threshold (x : Rat) (op : Cmp) (c : Rat) : Bool := Cmp.eval op x c",
        "def threshold (x : Rat) (op : Cmp) (c : Rat) : Bool := Bool.true",
    ),
    LibraryMutation(
        "product_drops_coef",
        FORMS,
        "Cmp.eval op (Rat.mul coef (Rat.prod factors)) bound",
        "Cmp.eval op (Rat.prod factors) bound",
    ),
    LibraryMutation(
        "agree_true",
        FORMS,
        "Rat.le (Rat.abs (Rat.sub x y)) (Rat.add tol (Rat.mul relTol (Rat.abs y)))",
        "Bool.true",
    ),
    # the verdict assembly
    LibraryMutation(
        "verdict_is_true",
        VERDICT,
        "  and (Nat.beq (cond (Verdict.feasible v) 1 0) (cond feasible 1 0))\n    (and (Rat.beq (Verdict.oEval v) oEval) (Rat.beq (Verdict.robustBo v) robustBo))",
        "  Bool.true",
    ),
    LibraryMutation(
        "verdict_is_ignores_feasible",
        VERDICT,
        "  and (Nat.beq (cond (Verdict.feasible v) 1 0) (cond feasible 1 0))\n    (and (Rat.beq (Verdict.oEval v) oEval) (Rat.beq (Verdict.robustBo v) robustBo))",
        "  and (Rat.beq (Verdict.oEval v) oEval) (Rat.beq (Verdict.robustBo v) robustBo)",
    ),
    LibraryMutation(
        "feasible_always",
        VERDICT,
        "  not (List.any (List.any (fun f => Status.fails (Flag.status f))) fs)",
        "  Bool.true",
    ),
    LibraryMutation(
        "missing_not_zeroed",
        VERDICT,
        "  cond (List.memNat k unv) Option.none (Lookup.toOption",
        "  cond Bool.false Option.none (Lookup.toOption",
    ),
    LibraryMutation(
        "rat_le_ignores_den",
        RAT,
        f"def Rat.le (p q : Rat) : Bool :=\n  {LE_BODY}",
        "def Rat.le (p q : Rat) : Bool :=\n  Int.ble p.num q.num",
    ),
    LibraryMutation(
        "absent_scores_one",
        "TBMM/Reward.lean",
        "  Option.casesOn x Rat.zero\n",
        "  Option.casesOn x Rat.one\n",
    ),
    LibraryMutation(
        "bad_not_failing",
        GATE,
        "def fails (s : Status) : Bool := Status.casesOn s Bool.false Bool.true Bool.true Bool.false Bool.false",
        "def fails (s : Status) : Bool := Status.casesOn s Bool.false Bool.true Bool.false Bool.false Bool.false",
    ),
    LibraryMutation(
        "feasible_ignores_lists",
        VERDICT,
        "  Verdict.mk (and (feasibleOf fs) (feasibleOf ls))\n",
        "  Verdict.mk (feasibleOf fs)\n",
    ),
    LibraryMutation(
        "unverifiable_ignores_protects",
        VERDICT,
        "(List.append (GateEntry.protects e) (r ft)) (r ft)",
        "(r ft) (r ft)",
    ),
    LibraryMutation(
        "mem_nat_false",
        "TBMM/Json.lean",
        "def List.memNat (n : Nat) (xs : List Nat) : Bool := List.any (fun m => Nat.beq n m) xs",
        "def List.memNat (n : Nat) (xs : List Nat) : Bool := Bool.false",
    ),
    # the core's kernel names given an empty type or the wrong type (the String route)
    LibraryMutation(
        "core_string_empty",
        CORE,
        "structure String where\n  /-- The string with these characters. -/\n  ofList ::\n"
        "  /-- The characters, in order. -/\n  data : List Char\n",
        "inductive String : Prop\n",
    ),
    LibraryMutation(
        "core_char_of_nat_untyped",
        CORE,
        "def Char.ofNat (n : Nat) : Char := cond (Nat.isValidChar n) (Char.mk n) (Char.mk 0)",
        "def Char.ofNat (n : Nat) : Nat := n",
    ),
    # shadowed names: a library declaration generated code would resolve to
    LibraryMutation(
        "shadow_in_certificate_namespace",
        FORMS,
        "end Forms\n",
        "end Forms\n\nnamespace TBMM.Cert.Mcm2025BJuneauTourism\n"
        "def Verdict.is (v : Verdict) (f : Bool) (o r : Rat) : Bool := Bool.true\n"
        "end TBMM.Cert.Mcm2025BJuneauTourism\n",
    ),
    LibraryMutation(
        "shadow_in_verify_namespace",
        FORMS,
        "end Forms\n",
        "end Forms\n\ndef TBMMVerify.Forms.interval (x : Rat) (lo hi : Option Rat) : Bool := Bool.true\n",
    ),
    LibraryMutation(
        "shadow_under_tbmm",
        FORMS,
        "end Forms\n",
        "end Forms\n\ndef TBMM.Rat.le (p q : Rat) : Bool := Bool.true\n",
    ),
)


@dataclass(frozen=True)
class Outcome:
    id: str
    caught: bool
    by: str  # "build", "audit" or "" (not caught)
    detail: str


def run(m: LibraryMutation, base: Path, work: Path) -> Outcome:
    """Apply `m` to a copy of `base` (a built project without certificates) and audit it."""
    from tbmm.lean.audit import audit

    root = copy_project(work / m.id, base)
    m.apply(root)
    res = audit(root, tasks=[])
    shutil.rmtree(root, ignore_errors=True)
    if res.ok:
        return Outcome(m.id, False, "", "audit ok")
    failed = next((e for e in res.errors if e.startswith("build failed")), None)
    if failed is not None:
        return Outcome(m.id, True, "build", failed[:200])
    why = [*res.errors, *(f"{f.path}:{f.line}: {f.reason}" for f in res.findings)]
    return Outcome(m.id, True, "audit", (why or ["axioms"])[0][:200])


def prepare(work: Path, root: Path | None = None) -> Path:
    """A built copy of the library without certificates, for the mutations to start from."""
    from tbmm.lean.build import build

    base = copy_project(work / "base", root or project_root(), with_build=False)
    shutil.rmtree(base / "TBMM" / "Cert", ignore_errors=True)
    build(base, certs=False).raise_for_failure()
    return base


def main(argv: list[str] | None = None) -> int:
    """Run every mutation (or those named) and print each outcome and caught/total."""
    names = set(argv if argv is not None else sys.argv[1:])
    chosen = [m for m in MUTATIONS if not names or m.id in names]
    with tempfile.TemporaryDirectory(prefix="tbmm-mutations-") as tmp:
        base = prepare(Path(tmp))
        outcomes = [run(m, base, Path(tmp)) for m in chosen]
    for o in outcomes:
        print(f"{'caught' if o.caught else 'MISSED'} {o.id:32} {o.by:6} {o.detail}")
    n = sum(o.caught for o in outcomes)
    print(f"library mutations caught: {n}/{len(outcomes)}")
    return 0 if n == len(outcomes) else 1


if __name__ == "__main__":
    raise SystemExit(main())
