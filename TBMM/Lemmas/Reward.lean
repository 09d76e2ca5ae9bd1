prelude
import TBMM.Reward
import TBMM.Lemmas.Rat
/-!
# TBMM.Lemmas.Reward — the pieces of the reward rule, one lemma each

Bounds and monotonicity of `Reward.exact`, `Reward.decay` and `Reward.graded`, from
which `TBMM.Theorems` assembles the statements about `Reward.reward` and
`Reward.score`. Every `cond` of the definitions is taken apart with `Bool.split`.
-/

set_option genCtorIdx false

namespace Reward

theorem exact_nonneg (x o : Rat) : Eq (Rat.le Rat.zero (exact x o)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c Rat.one Rat.zero)) Bool.true)
    (Rat.beq x o) (fun _ => rfl) (fun _ => rfl)

theorem exact_le_one (x o : Rat) : Eq (Rat.le (exact x o) Rat.one) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c Rat.one Rat.zero) Rat.one) Bool.true)
    (Rat.beq x o) (fun _ => rfl) (fun _ => rfl)

theorem decay_nonneg (d b : Rat) : Eq (Rat.le Rat.zero (decay d b)) Bool.true :=
  Rat.max_zero_nonneg _

/-- `decay d b ≤ 1` once `d ≥ 0` and `b ≥ 0`: then `d/b ≥ 0`. -/
theorem decay_le_one {d b : Rat} (hd : Eq (Rat.le Rat.zero d) Bool.true)
    (hb : Eq (Rat.le Rat.zero b) Bool.true) : Eq (Rat.le (decay d b) Rat.one) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c (Rat.sub Rat.one (Rat.div d b)) Rat.zero) Rat.one)
      Bool.true)
    (Rat.le Rat.zero (Rat.sub Rat.one (Rat.div d b)))
    (fun _ => rfl) (fun _ => Rat.one_sub_le_one (Rat.div_nonneg hd hb))

/-- A longer distance never decays to more: `d₁ ≤ d₂ → decay d₂ b ≤ decay d₁ b` (`b ≥ 0`). -/
theorem decay_anti {d₁ d₂ b : Rat} (hb : Eq (Rat.le Rat.zero b) Bool.true)
    (h : Eq (Rat.le d₁ d₂) Bool.true) : Eq (Rat.le (decay d₂ b) (decay d₁ b)) Bool.true :=
  Rat.max_zero_mono (Rat.sub_anti Rat.one (Rat.mul_mono h (Rat.inv_nonneg hb)))

theorem graded_nonneg (dir : Direction) (x o b : Rat) :
    Eq (Rat.le Rat.zero (graded dir x o b)) Bool.true :=
  Direction.casesOn (motive := fun dir => Eq (Rat.le Rat.zero (graded dir x o b)) Bool.true) dir
    (Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c Rat.one (decay (Rat.sub o x) b))) Bool.true)
      (Rat.le o x) (fun _ => decay_nonneg _ _) (fun _ => rfl))
    (Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c Rat.one (decay (Rat.sub x o) b))) Bool.true)
      (Rat.le x o) (fun _ => decay_nonneg _ _) (fun _ => rfl))
    (decay_nonneg _ _)
    (exact_nonneg x o)

/-- `graded ≤ 1` for a non-negative band: a graded branch is reached only with the
value on the losing side of the anchor, so the decay distance is non-negative. -/
theorem graded_le_one (dir : Direction) (x o : Rat) {b : Rat}
    (hb : Eq (Rat.le Rat.zero b) Bool.true) : Eq (Rat.le (graded dir x o b) Rat.one) Bool.true :=
  Direction.casesOn (motive := fun dir => Eq (Rat.le (graded dir x o b) Rat.one) Bool.true) dir
    (Bool.split (C := fun c => Eq (Rat.le (cond c Rat.one (decay (Rat.sub o x) b)) Rat.one) Bool.true)
      (Rat.le o x) (fun h => decay_le_one (Rat.sub_nonneg (Rat.le_total h)) hb) (fun _ => rfl))
    (Bool.split (C := fun c => Eq (Rat.le (cond c Rat.one (decay (Rat.sub x o) b)) Rat.one) Bool.true)
      (Rat.le x o) (fun h => decay_le_one (Rat.sub_nonneg (Rat.le_total h)) hb) (fun _ => rfl))
    (decay_le_one (Rat.abs_nonneg _) hb)
    (exact_le_one x o)

/-- `higherIsBetter` grading is monotone in the value (`b ≥ 0`). Cases on which side of
the anchor each value lies: both above (1 ≤ 1), `x` below and `y` above (decay ≤ 1),
both below (`o − y ≤ o − x`, `decay_anti`); `x` above and `y` below contradicts `x ≤ y`. -/
theorem graded_higher_mono {x y o b : Rat} (hb : Eq (Rat.le Rat.zero b) Bool.true)
    (h : Eq (Rat.le x y) Bool.true) :
    Eq (Rat.le (graded Direction.higherIsBetter x o b) (graded Direction.higherIsBetter y o b))
      Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c Rat.one (decay (Rat.sub o x) b))
      (graded Direction.higherIsBetter y o b)) Bool.true)
    (Rat.le o x)
    (fun hox => Bool.split (C := fun c => Eq (Rat.le (decay (Rat.sub o x) b)
        (cond c Rat.one (decay (Rat.sub o y) b))) Bool.true)
      (Rat.le o y)
      (fun _ => decay_anti hb (Rat.sub_anti o h))
      (fun _ => decay_le_one (Rat.sub_nonneg (Rat.le_total hox)) hb))
    (fun hox => Eq.subst (P := fun c => Eq (Rat.le Rat.one (cond c Rat.one (decay (Rat.sub o y) b)))
        Bool.true)
      (Eq.symm (Rat.le_trans hox h)) rfl)

/-- `lowerIsBetter` grading is antitone in the value (`b ≥ 0`), symmetrically. -/
theorem graded_lower_anti {x y o b : Rat} (hb : Eq (Rat.le Rat.zero b) Bool.true)
    (h : Eq (Rat.le x y) Bool.true) :
    Eq (Rat.le (graded Direction.lowerIsBetter y o b) (graded Direction.lowerIsBetter x o b))
      Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c Rat.one (decay (Rat.sub y o) b))
      (graded Direction.lowerIsBetter x o b)) Bool.true)
    (Rat.le y o)
    (fun hyo => Bool.split (C := fun c => Eq (Rat.le (decay (Rat.sub y o) b)
        (cond c Rat.one (decay (Rat.sub x o) b))) Bool.true)
      (Rat.le x o)
      (fun _ => decay_anti hb (Rat.sub_mono o h))
      (fun _ => decay_le_one (Rat.sub_nonneg (Rat.le_total hyo)) hb))
    (fun hyo => Eq.subst (P := fun c => Eq (Rat.le Rat.one (cond c Rat.one (decay (Rat.sub x o) b)))
        Bool.true)
      (Eq.symm (Rat.le_trans h hyo)) rfl)

/-- Outside `exactValue`, with a positive effective band, the reward is the graded one. -/
theorem reward_eq_graded (dir : Direction) (x anchor band : Rat)
    (hd : Eq (Direction.isExact dir) Bool.false)
    (hb : Eq (Rat.le (effectiveBand anchor band) Rat.zero) Bool.false) :
    Eq (reward dir x anchor band) (graded dir x anchor (effectiveBand anchor band)) :=
  Eq.subst (P := fun c => Eq (cond c (exact x anchor)
      (cond (Rat.le (effectiveBand anchor band) Rat.zero) (exact x anchor)
        (graded dir x anchor (effectiveBand anchor band))))
      (graded dir x anchor (effectiveBand anchor band)))
    (Eq.symm hd)
    (Eq.subst (P := fun c => Eq (cond c (exact x anchor) (graded dir x anchor (effectiveBand anchor band)))
        (graded dir x anchor (effectiveBand anchor band)))
      (Eq.symm hb) rfl)

end Reward
