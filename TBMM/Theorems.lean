prelude
import TBMM.Lemmas.Reward
/-!
# TBMM.Theorems — the scoring rules, proved for all inputs

Unlike a certificate's obligations, which are closed computations checked by
evaluation, these theorems quantify over every direction, domain, value, anchor and
band, every raw, oracle and baseline score. They are proved without axioms from the
definitions of `TBMM.Reward` (through the lemma library `TBMM.Lemmas.*`); `tbmm lean
audit` lists them with their `#print axioms` report.

Statements use the library's own notions: `Rat.le p q = true` is `p ≤ q` on exact
rationals, for every term of type `Rat` (values are not normalised, and nothing here
assumes they are).

One-sidedness and monotonicity need a hypothesis, and the ground theorems at the end
show why: when the effective band `b'` is not positive — only for anchor 0 with band
≤ 0 — the rule scores every direction as `exactValue`, which is neither one-sided nor
monotone. The hypothesis `0 < b'` follows from `0 < band` (`effectiveBand_pos`) and
from `O ≠ 0` (`effectiveBand_pos_of_anchor`).
-/

set_option genCtorIdx false

namespace Reward

/-! ## Range -/

/-- The per-metric reward is at least 0. -/
theorem reward_nonneg (dir : Direction) (x anchor band : Rat) :
    Eq (Rat.le Rat.zero (reward dir x anchor band)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c (exact x anchor)
      (cond (Rat.le (effectiveBand anchor band) Rat.zero) (exact x anchor)
        (graded dir x anchor (effectiveBand anchor band))))) Bool.true)
    (Direction.isExact dir)
    (fun _ => Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c (exact x anchor)
        (graded dir x anchor (effectiveBand anchor band)))) Bool.true)
      (Rat.le (effectiveBand anchor band) Rat.zero)
      (fun _ => graded_nonneg dir x anchor _)
      (fun _ => exact_nonneg x anchor))
    (fun _ => exact_nonneg x anchor)

/-- The per-metric reward is at most 1. -/
theorem reward_le_one (dir : Direction) (x anchor band : Rat) :
    Eq (Rat.le (reward dir x anchor band) Rat.one) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c (exact x anchor)
      (cond (Rat.le (effectiveBand anchor band) Rat.zero) (exact x anchor)
        (graded dir x anchor (effectiveBand anchor band)))) Rat.one) Bool.true)
    (Direction.isExact dir)
    (fun _ => Bool.split (C := fun c => Eq (Rat.le (cond c (exact x anchor)
        (graded dir x anchor (effectiveBand anchor band))) Rat.one) Bool.true)
      (Rat.le (effectiveBand anchor band) Rat.zero)
      (fun hb => graded_le_one dir x anchor (Rat.le_total hb))
      (fun _ => exact_le_one x anchor))
    (fun _ => exact_le_one x anchor)

/-- The score of a reported value (0 when missing or outside the domain) is at least 0. -/
theorem score_nonneg (dir : Direction) (dom : Domain) (x : Option Rat) (anchor band : Rat) :
    Eq (Rat.le Rat.zero (score dir dom x anchor band)) Bool.true :=
  Option.casesOn (motive := fun x => Eq (Rat.le Rat.zero (Option.casesOn (motive := fun _ => Rat) x
      Rat.zero (fun v => cond (inDomain v dom) (reward dir v anchor band) Rat.zero))) Bool.true) x
    rfl
    (fun v => Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c (reward dir v anchor band) Rat.zero))
        Bool.true)
      (inDomain v dom) (fun _ => rfl) (fun _ => reward_nonneg dir v anchor band))

/-- The score of a reported value is at most 1. -/
theorem score_le_one (dir : Direction) (dom : Domain) (x : Option Rat) (anchor band : Rat) :
    Eq (Rat.le (score dir dom x anchor band) Rat.one) Bool.true :=
  Option.casesOn (motive := fun x => Eq (Rat.le (Option.casesOn (motive := fun _ => Rat) x
      Rat.zero (fun v => cond (inDomain v dom) (reward dir v anchor band) Rat.zero)) Rat.one) Bool.true) x
    rfl
    (fun v => Bool.split (C := fun c => Eq (Rat.le (cond c (reward dir v anchor band) Rat.zero) Rat.one)
        Bool.true)
      (inDomain v dom) (fun _ => rfl) (fun _ => reward_le_one dir v anchor band))

/-- `exactValue` scores exactly 0 or exactly 1 (as terms, not only as values). -/
theorem reward_exact_zero_or_one (x anchor band : Rat) :
    Or (Eq (reward Direction.exactValue x anchor band) Rat.zero)
      (Eq (reward Direction.exactValue x anchor band) Rat.one) :=
  Bool.split (C := fun c => Or (Eq (cond c Rat.one Rat.zero) Rat.zero)
      (Eq (cond c Rat.one Rat.zero) Rat.one))
    (Rat.beq x anchor) (fun _ => Or.inl rfl) (fun _ => Or.inr rfl)

/-! ## The degenerate-band rule -/

/-- Widening never shrinks a band: `band ≤ b'`. When the rule fires,
`band < 2% |O| ≤ 5% |O| = b'`. -/
theorem effectiveBand_ge (anchor band : Rat) :
    Eq (Rat.le band (effectiveBand anchor band)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le band (cond c (Rat.mul widenedTo (Rat.abs anchor)) band))
      Bool.true)
    (bandWidened anchor band)
    (fun _ => Rat.le_refl band)
    (fun hw => Rat.le_trans (Rat.le_total (Bool.false_of_not hw))
      (Rat.mul_mono (rfl : Eq (Rat.le degenerateBelow widenedTo) Bool.true) (Rat.abs_nonneg anchor)))

/-- A positive band stays positive: `0 < band → 0 < b'`. -/
theorem effectiveBand_pos {anchor band : Rat} (h : Eq (Rat.lt Rat.zero band) Bool.true) :
    Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true :=
  congrArg not (Bool.eq_false_of_ne_true (fun hle =>
    Eq.trans (Eq.symm (Rat.le_trans (effectiveBand_ge anchor band) hle)) (Bool.false_of_not h)))

/-- A non-zero anchor makes the effective band positive, whatever the band: either the
rule widens it to `5% |O| > 0`, or it keeps `band ≥ 2% |O| > 0`. With `effectiveBand_pos`:
`0 < b'` whenever `0 < band` or `O ≠ 0`. -/
theorem effectiveBand_pos_of_anchor {anchor band : Rat}
    (h : Eq (Rat.beq anchor Rat.zero) Bool.false) :
    Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.lt Rat.zero (cond c (Rat.mul widenedTo (Rat.abs anchor)) band))
      Bool.true)
    (bandWidened anchor band)
    (fun hw => Rat.lt_of_lt_of_le
      (Rat.pos_of_num (q := Rat.mul degenerateBelow (Rat.abs anchor))
        (Int.pos_mul (u := Rat.num degenerateBelow) rfl (Rat.abs_pos h)))
      (Bool.true_of_not hw))
    (fun _ => Rat.pos_of_num (q := Rat.mul widenedTo (Rat.abs anchor))
      (Int.pos_mul (u := Rat.num widenedTo) rfl (Rat.abs_pos h)))

/-! ## One-sidedness and monotonicity (positive effective band) -/

/-- `higherIsBetter`: a value at or above the anchor scores 1. -/
theorem reward_higher_one_sided {x anchor band : Rat}
    (hb : Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true)
    (h : Eq (Rat.le anchor x) Bool.true) :
    Eq (reward Direction.higherIsBetter x anchor band) Rat.one :=
  Eq.trans (reward_eq_graded Direction.higherIsBetter x anchor band rfl (Bool.false_of_not hb))
    (Eq.subst (P := fun c => Eq (cond c Rat.one (decay (Rat.sub anchor x) (effectiveBand anchor band)))
      Rat.one) (Eq.symm h) rfl)

/-- `lowerIsBetter`: a value at or below the anchor scores 1. -/
theorem reward_lower_one_sided {x anchor band : Rat}
    (hb : Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true)
    (h : Eq (Rat.le x anchor) Bool.true) :
    Eq (reward Direction.lowerIsBetter x anchor band) Rat.one :=
  Eq.trans (reward_eq_graded Direction.lowerIsBetter x anchor band rfl (Bool.false_of_not hb))
    (Eq.subst (P := fun c => Eq (cond c Rat.one (decay (Rat.sub x anchor) (effectiveBand anchor band)))
      Rat.one) (Eq.symm h) rfl)

/-- `higherIsBetter`: a larger value never scores less. -/
theorem reward_higher_mono {x y anchor band : Rat}
    (hb : Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true)
    (h : Eq (Rat.le x y) Bool.true) :
    Eq (Rat.le (reward Direction.higherIsBetter x anchor band)
      (reward Direction.higherIsBetter y anchor band)) Bool.true :=
  Eq.trueOf
    (Eq.symm (congr2 Rat.le
      (reward_eq_graded Direction.higherIsBetter x anchor band rfl (Bool.false_of_not hb))
      (reward_eq_graded Direction.higherIsBetter y anchor band rfl (Bool.false_of_not hb))))
    (graded_higher_mono (Rat.le_total (Bool.false_of_not hb)) h)

/-- `lowerIsBetter`: a smaller value never scores less. -/
theorem reward_lower_anti {x y anchor band : Rat}
    (hb : Eq (Rat.lt Rat.zero (effectiveBand anchor band)) Bool.true)
    (h : Eq (Rat.le x y) Bool.true) :
    Eq (Rat.le (reward Direction.lowerIsBetter y anchor band)
      (reward Direction.lowerIsBetter x anchor band)) Bool.true :=
  Eq.trueOf
    (Eq.symm (congr2 Rat.le
      (reward_eq_graded Direction.lowerIsBetter y anchor band rfl (Bool.false_of_not hb))
      (reward_eq_graded Direction.lowerIsBetter x anchor band rfl (Bool.false_of_not hb))))
    (graded_lower_anti (Rat.le_total (Bool.false_of_not hb)) h)

/-! ## Task level: O-Eval, Robust BO-Eval and the gate -/

/-- O-Eval is at least 0. -/
theorem oEval_nonneg (raw oracle : Rat) : Eq (Rat.le Rat.zero (oEval raw oracle)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le Rat.zero
      (cond c Rat.zero (Rat.clamp (Rat.div raw oracle) Rat.zero Rat.one))) Bool.true)
    (Rat.le oracle Rat.zero) (fun _ => Rat.clamp_ge rfl) (fun _ => rfl)

/-- O-Eval is at most 1. -/
theorem oEval_le_one (raw oracle : Rat) : Eq (Rat.le (oEval raw oracle) Rat.one) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le
      (cond c Rat.zero (Rat.clamp (Rat.div raw oracle) Rat.zero Rat.one)) Rat.one) Bool.true)
    (Rat.le oracle Rat.zero) (fun _ => Rat.clamp_le rfl) (fun _ => rfl)

/-- Robust BO-Eval is at least −1. -/
theorem robustBo_ge_neg_one (raw oracle baseline : Rat) :
    Eq (Rat.le (Rat.negFrac 1 1) (robustBo raw oracle baseline)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (Rat.negFrac 1 1) (cond c
      (Rat.clamp (Rat.div (Rat.sub raw baseline) (Rat.sub oracle baseline)) (Rat.negFrac 1 1) Rat.one)
      (Rat.clamp (Rat.sub raw baseline) (Rat.negFrac 1 1) Rat.one))) Bool.true)
    (Rat.lt gapMin (Rat.sub oracle baseline)) (fun _ => Rat.clamp_ge rfl) (fun _ => Rat.clamp_ge rfl)

/-- Robust BO-Eval is at most 1. -/
theorem robustBo_le_one (raw oracle baseline : Rat) :
    Eq (Rat.le (robustBo raw oracle baseline) Rat.one) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c
      (Rat.clamp (Rat.div (Rat.sub raw baseline) (Rat.sub oracle baseline)) (Rat.negFrac 1 1) Rat.one)
      (Rat.clamp (Rat.sub raw baseline) (Rat.negFrac 1 1) Rat.one)) Rat.one) Bool.true)
    (Rat.lt gapMin (Rat.sub oracle baseline)) (fun _ => Rat.clamp_le rfl) (fun _ => Rat.clamp_le rfl)

/-- A failed gate zeroes O-Eval, whatever the scores. -/
theorem gatedOEval_infeasible (raw oracle : Rat) : Eq (gatedOEval Bool.false raw oracle) Rat.zero :=
  rfl

/-- A failed gate sets Robust BO-Eval to −1, whatever the scores. -/
theorem gatedRobustBo_infeasible (raw oracle baseline : Rat) :
    Eq (gatedRobustBo Bool.false raw oracle baseline) (Rat.negFrac 1 1) :=
  rfl

/-- A verdict's O-Eval, gated or not, lies in [0, 1]: lower bound. -/
theorem gatedOEval_nonneg (feasible : Bool) (raw oracle : Rat) :
    Eq (Rat.le Rat.zero (gatedOEval feasible raw oracle)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c (oEval raw oracle) Rat.zero)) Bool.true)
    feasible (fun _ => rfl) (fun _ => oEval_nonneg raw oracle)

/-- A verdict's O-Eval, gated or not, lies in [0, 1]: upper bound. -/
theorem gatedOEval_le_one (feasible : Bool) (raw oracle : Rat) :
    Eq (Rat.le (gatedOEval feasible raw oracle) Rat.one) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c (oEval raw oracle) Rat.zero) Rat.one) Bool.true)
    feasible (fun _ => rfl) (fun _ => oEval_le_one raw oracle)

/-! ## Why the band hypothesis: ground counterexamples -/

/-- Without a positive effective band one-sidedness fails: anchor 0, band 0,
`higherIsBetter`, value 1 ≥ 0 scores 0 (the rule falls back to exact matching). -/
theorem one_sided_needs_positive_band :
    Eq (reward Direction.higherIsBetter (Rat.frac 1 1) Rat.zero Rat.zero) Rat.zero := rfl

/-- Without a positive effective band monotonicity fails: with anchor 0 and band 0,
value 0 scores 1 and the larger value 1 scores 0. -/
theorem mono_needs_positive_band :
    Eq (Rat.le (reward Direction.higherIsBetter Rat.zero Rat.zero Rat.zero)
      (reward Direction.higherIsBetter (Rat.frac 1 1) Rat.zero Rat.zero)) Bool.false := rfl

end Reward
