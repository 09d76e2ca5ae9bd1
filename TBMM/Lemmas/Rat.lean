prelude
import TBMM.Rat
import TBMM.Lemmas.IntRing
/-!
# TBMM.Lemmas.Rat — the order of `Rat` and the operations the rewards use

`Rat` values are not normalised (`1/2` and `2/4` are different terms), so nothing here
assumes a canonical form: every lemma holds for every term of type `Rat`. Writing
`N q` for `q.num` and `D q` for `Int.ofNat q.den` (positive by construction, being
`succ q.denPred`), `Rat.le p q` is by definition `N p · D q ≤ N q · D p`; each lemma
unfolds to an integer inequality, proved with `TBMM.Lemmas.IntRing`.

`Rat.add` has two shapes (a shared denominator keeps it, otherwise denominators
multiply). `add_repr` states what both have in common, `N (p+r) · (D p · D r) =
(N p · D r + N r · D p) · D (p+r)`, and `repr_le` compares two values known only
through such an equation; the monotonicity of addition is proved that way, so it holds
whichever shape either sum takes.
-/

set_option genCtorIdx false

namespace Rat

/-- `p ≤ p`. -/
theorem le_refl (p : Rat) : Eq (Rat.le p p) Bool.true := Int.ble_refl _

/-- `¬(p ≤ q) → q ≤ p`. -/
theorem le_total {p q : Rat} (h : Eq (Rat.le p q) Bool.false) : Eq (Rat.le q p) Bool.true :=
  Int.ble_total h

/-- Transitivity: scale `p ≤ q` by `D r` and `q ≤ r` by `D p`, chain, cancel `D q`. -/
theorem le_trans {p q r : Rat} (h₁ : Eq (Rat.le p q) Bool.true) (h₂ : Eq (Rat.le q r) Bool.true) :
    Eq (Rat.le p r) Bool.true :=
  let env := List.cons p.num (List.cons (Int.ofNat p.den) (List.cons q.num
    (List.cons (Int.ofNat q.den) (List.cons r.num (List.cons (Int.ofNat r.den) List.nil)))))
  let m₁ := Int.mul_mono (c := Int.ofNat r.den) h₁ rfl
  let m₂ := Int.mul_mono (c := Int.ofNat p.den) h₂ rfl
  let m₂' := Eq.trueOf (IExpr.ble_congr env
      (.mul (.mul (.atom 2) (.atom 5)) (.atom 1)) (.mul (.mul (.atom 4) (.atom 3)) (.atom 1))
      (.mul (.mul (.atom 2) (.atom 1)) (.atom 5)) (.mul (.mul (.atom 4) (.atom 3)) (.atom 1)) rfl) m₂
  let t := Eq.trueOf (IExpr.ble_congr env
      (.mul (.mul (.atom 0) (.atom 3)) (.atom 5)) (.mul (.mul (.atom 4) (.atom 3)) (.atom 1))
      (.mul (.mul (.atom 0) (.atom 5)) (.atom 3)) (.mul (.mul (.atom 4) (.atom 1)) (.atom 3)) rfl)
    (Int.ble_trans m₁ m₂')
  Int.mul_cancel (c := Int.ofNat q.den) t rfl

/-- Negation reverses `≤`. -/
theorem neg_anti {p q : Rat} (h : Eq (Rat.le p q) Bool.true) :
    Eq (Rat.le (Rat.neg q) (Rat.neg p)) Bool.true :=
  let env := List.cons p.num (List.cons (Int.ofNat p.den) (List.cons q.num
    (List.cons (Int.ofNat q.den) List.nil)))
  Eq.trueOf (IExpr.ble_congr env (.mul (.atom 0) (.atom 3)) (.mul (.atom 2) (.atom 1))
    (.mul (.neg (.atom 2)) (.atom 1)) (.mul (.neg (.atom 0)) (.atom 3)) rfl) h

/-- What both shapes of `Rat.add` share: `N (p+r) · (D p · D r) = (N p · D r + N r · D p) ·
D (p+r)`. With a shared denominator `D p = D r` it is a ring identity; otherwise the
sum's denominator is `D p · D r` by definition. -/
theorem add_repr (p r : Rat) :
    Eq (Int.mul (Rat.add p r).num (Int.mul (Int.ofNat p.den) (Int.ofNat r.den)))
      (Int.mul (Int.add (Int.mul p.num (Int.ofNat r.den)) (Int.mul r.num (Int.ofNat p.den)))
        (Int.ofNat (Rat.add p r).den)) :=
  let F := Int.add (Int.mul p.num (Int.ofNat r.den)) (Int.mul r.num (Int.ofNat p.den))
  Bool.split (C := fun c =>
      Eq (Int.mul (cond c (Rat.mk (Int.add p.num r.num) p.denPred) (Rat.ofNumDen F (Nat.mul p.den r.den))).num
          (Int.mul (Int.ofNat p.den) (Int.ofNat r.den)))
        (Int.mul F (Int.ofNat (cond c (Rat.mk (Int.add p.num r.num) p.denPred)
          (Rat.ofNumDen F (Nat.mul p.den r.den))).den)))
    (Nat.beq p.denPred r.denPred)
    (fun _ => rfl)
    (fun h => Eq.subst
      (P := fun t => Eq (Int.mul (Int.add p.num r.num) (Int.mul (Int.ofNat p.den) (Int.ofNat (Nat.succ t))))
        (Int.mul (Int.add (Int.mul p.num (Int.ofNat (Nat.succ t))) (Int.mul r.num (Int.ofNat p.den)))
          (Int.ofNat p.den)))
      (Nat.eq_of_beq h)
      (IExpr.eq (List.cons p.num (List.cons r.num (List.cons (Int.ofNat p.den) List.nil)))
        (.mul (.add (.atom 0) (.atom 1)) (.mul (.atom 2) (.atom 2)))
        (.mul (.add (.mul (.atom 0) (.atom 2)) (.mul (.atom 1) (.atom 2))) (.atom 2)) rfl))

/-- Comparing two values known through `N S · E = F · D S` and `N T · E' = F' · D T`
(`E`, `E'` positive): `F · E' ≤ F' · E` gives `S ≤ T`. Scale the goal by `E · E'`,
substitute the two equations, cancel `D S · D T`. -/
theorem repr_le {S T : Rat} {F E F' E' : Int}
    (hS : Eq (Int.mul S.num E) (Int.mul F (Int.ofNat S.den)))
    (hT : Eq (Int.mul T.num E') (Int.mul F' (Int.ofNat T.den)))
    (hE : Eq (Int.ble (Int.ofNat 1) (Int.mul E E')) Bool.true)
    (h : Eq (Int.ble (Int.mul F E') (Int.mul F' E)) Bool.true) : Eq (Rat.le S T) Bool.true :=
  let DS := Int.ofNat S.den
  let DT := Int.ofNat T.den
  let env := List.cons S.num (List.cons DS (List.cons T.num (List.cons DT
    (List.cons F (List.cons E (List.cons F' (List.cons E' List.nil)))))))
  let m := Int.mul_mono (c := Int.mul DS DT) h rfl
  let b₁ := IExpr.ble_congr env
    (.mul (.mul (.atom 4) (.atom 1)) (.mul (.atom 3) (.atom 7)))
    (.mul (.mul (.atom 6) (.atom 3)) (.mul (.atom 1) (.atom 5)))
    (.mul (.mul (.atom 4) (.atom 7)) (.mul (.atom 1) (.atom 3)))
    (.mul (.mul (.atom 6) (.atom 5)) (.mul (.atom 1) (.atom 3))) rfl
  let subst := congr2 (fun x y => Int.ble (Int.mul x (Int.mul DT E')) (Int.mul y (Int.mul DS E))) hS hT
  let b₀ := IExpr.ble_congr env
    (.mul (.mul (.atom 0) (.atom 3)) (.mul (.atom 5) (.atom 7)))
    (.mul (.mul (.atom 2) (.atom 1)) (.mul (.atom 5) (.atom 7)))
    (.mul (.mul (.atom 0) (.atom 5)) (.mul (.atom 3) (.atom 7)))
    (.mul (.mul (.atom 2) (.atom 7)) (.mul (.atom 1) (.atom 5))) rfl
  Int.mul_cancel (Eq.trueOf (Eq.symm b₀) (Eq.trueOf (Eq.symm subst) (Eq.trueOf (Eq.symm b₁) m))) hE

/-- Adding `r` on the right keeps `≤`. -/
theorem add_mono {p q : Rat} (r : Rat) (h : Eq (Rat.le p q) Bool.true) :
    Eq (Rat.le (Rat.add p r) (Rat.add q r)) Bool.true :=
  let env := List.cons p.num (List.cons (Int.ofNat p.den) (List.cons q.num
    (List.cons (Int.ofNat q.den) (List.cons r.num (List.cons (Int.ofNat r.den) List.nil)))))
  repr_le (add_repr p r) (add_repr q r) rfl
    (Eq.trueOf (IExpr.ble_congr env
      (.mul (.mul (.atom 0) (.atom 3)) (.mul (.atom 5) (.atom 5)))
      (.mul (.mul (.atom 2) (.atom 1)) (.mul (.atom 5) (.atom 5)))
      (.mul (.add (.mul (.atom 0) (.atom 5)) (.mul (.atom 4) (.atom 1))) (.mul (.atom 3) (.atom 5)))
      (.mul (.add (.mul (.atom 2) (.atom 5)) (.mul (.atom 4) (.atom 3))) (.mul (.atom 1) (.atom 5))) rfl)
      (Int.mul_mono (c := Int.mul (Int.ofNat r.den) (Int.ofNat r.den)) h rfl))

/-- Adding `r` on the left keeps `≤`. -/
theorem add_mono_left {p q : Rat} (r : Rat) (h : Eq (Rat.le p q) Bool.true) :
    Eq (Rat.le (Rat.add r p) (Rat.add r q)) Bool.true :=
  let env := List.cons p.num (List.cons (Int.ofNat p.den) (List.cons q.num
    (List.cons (Int.ofNat q.den) (List.cons r.num (List.cons (Int.ofNat r.den) List.nil)))))
  repr_le (add_repr r p) (add_repr r q) rfl
    (Eq.trueOf (IExpr.ble_congr env
      (.mul (.mul (.atom 0) (.atom 3)) (.mul (.atom 5) (.atom 5)))
      (.mul (.mul (.atom 2) (.atom 1)) (.mul (.atom 5) (.atom 5)))
      (.mul (.add (.mul (.atom 4) (.atom 1)) (.mul (.atom 0) (.atom 5))) (.mul (.atom 5) (.atom 3)))
      (.mul (.add (.mul (.atom 4) (.atom 3)) (.mul (.atom 2) (.atom 5))) (.mul (.atom 5) (.atom 1))) rfl)
      (Int.mul_mono (c := Int.mul (Int.ofNat r.den) (Int.ofNat r.den)) h rfl))

/-! ## Signs -/

/-- `0 ≤ q` means a non-negative numerator. -/
theorem num_nonneg {q : Rat} (h : Eq (Rat.le Rat.zero q) Bool.true) :
    Eq (Int.ble (Int.ofNat 0) q.num) Bool.true :=
  Eq.trueOf (IExpr.ble_congr (List.cons q.num (List.cons (Int.ofNat q.den) List.nil))
    (.mul .zero (.atom 1)) (.mul (.atom 0) .one) .zero (.atom 0) rfl) h

/-- A non-negative numerator means `0 ≤ q`. -/
theorem nonneg_of_num {q : Rat} (h : Eq (Int.ble (Int.ofNat 0) q.num) Bool.true) :
    Eq (Rat.le Rat.zero q) Bool.true :=
  Eq.trueOf (IExpr.ble_congr (List.cons q.num (List.cons (Int.ofNat q.den) List.nil))
    .zero (.atom 0) (.mul .zero (.atom 1)) (.mul (.atom 0) .one) rfl) h

/-- `0 ≤ p → 0 ≤ q → 0 ≤ p · q`. -/
theorem nonneg_mul {p q : Rat} (hp : Eq (Rat.le Rat.zero p) Bool.true)
    (hq : Eq (Rat.le Rat.zero q) Bool.true) : Eq (Rat.le Rat.zero (Rat.mul p q)) Bool.true :=
  nonneg_of_num (Int.nonneg_mul (num_nonneg hp) (num_nonneg hq))

/-- `0 ≤ |q|`: the numerator of `Rat.abs q` is an `ofNat`. -/
theorem abs_nonneg (q : Rat) : Eq (Rat.le Rat.zero (Rat.abs q)) Bool.true := nonneg_of_num rfl

/-- `0 ≤ b → 0 ≤ 1/b` (`1/0 = 0`). -/
theorem inv_nonneg {b : Rat} (hb : Eq (Rat.le Rat.zero b) Bool.true) :
    Eq (Rat.le Rat.zero (Rat.inv b)) Bool.true :=
  Int.casesOn (motive := fun n => Eq (Int.ble (Int.ofNat 0) n) Bool.true →
      Eq (Rat.le Rat.zero (Int.casesOn (motive := fun _ => Rat) n
        (fun n => Nat.casesOn (motive := fun _ => Rat) n Rat.zero
          (fun k => Rat.mk (Int.ofNat b.den) k))
        (fun k => Rat.mk (Int.negOfNat b.den) k))) Bool.true) b.num
    (fun n _ => Nat.casesOn (motive := fun n =>
        Eq (Rat.le Rat.zero (Nat.casesOn (motive := fun _ => Rat) n Rat.zero
          (fun k => Rat.mk (Int.ofNat b.den) k))) Bool.true) n
      rfl (fun _ => nonneg_of_num rfl))
    (fun _ h => absurdFT h)
    (num_nonneg hb)

/-- `0 ≤ d → 0 ≤ b → 0 ≤ d / b`. -/
theorem div_nonneg {d b : Rat} (hd : Eq (Rat.le Rat.zero d) Bool.true)
    (hb : Eq (Rat.le Rat.zero b) Bool.true) : Eq (Rat.le Rat.zero (Rat.div d b)) Bool.true :=
  nonneg_mul hd (inv_nonneg hb)

/-- A numerator of at least 1 means `0 < q`: `q ≤ 0` would give `1 ≤ N q ≤ 0`. -/
theorem pos_of_num {q : Rat} (h : Eq (Int.ble (Int.ofNat 1) q.num) Bool.true) :
    Eq (Rat.lt Rat.zero q) Bool.true :=
  congrArg not (Bool.eq_false_of_ne_true (fun hle => Eq.symm (Int.ble_trans h
    (Eq.trueOf (IExpr.ble_congr (List.cons q.num (List.cons (Int.ofNat q.den) List.nil))
      (.mul (.atom 0) .one) (.mul .zero (.atom 1)) (.atom 0) .zero rfl) hle))))

/-- A non-zero value has a positive absolute value. -/
theorem abs_pos {q : Rat} (h : Eq (Rat.beq q Rat.zero) Bool.false) :
    Eq (Int.ble (Int.ofNat 1) (Rat.abs q).num) Bool.true :=
  let env := List.cons q.num (List.cons (Int.ofNat q.den) List.nil)
  Int.casesOn (motive := fun n => Eq (Int.beq n (Int.ofNat 0)) Bool.false →
      Eq (Int.ble (Int.ofNat 1) (Int.ofNat (Int.natAbs n))) Bool.true) q.num
    (fun n => Nat.casesOn (motive := fun n => Eq (Int.beq (Int.ofNat n) (Int.ofNat 0)) Bool.false →
        Eq (Int.ble (Int.ofNat 1) (Int.ofNat (Int.natAbs (Int.ofNat n)))) Bool.true) n
      (fun h => absurdTF h) (fun _ _ => rfl))
    (fun _ _ => rfl)
    (Eq.trans (Eq.symm (congr2 Int.beq
      (IExpr.eq env (.mul (.atom 0) .one) (.atom 0) rfl)
      (IExpr.eq env (.mul .zero (.atom 1)) .zero rfl))) h)

/-- `0 < p → p ≤ q → 0 < q`. -/
theorem lt_of_lt_of_le {p q : Rat} (h₁ : Eq (Rat.lt Rat.zero p) Bool.true)
    (h₂ : Eq (Rat.le p q) Bool.true) : Eq (Rat.lt Rat.zero q) Bool.true :=
  congrArg not (Bool.eq_false_of_ne_true (fun hq =>
    Eq.trans (Eq.symm (le_trans h₂ hq)) (Bool.false_of_not h₁)))

/-! ## Products, differences, `max`, `clamp` -/

/-- Multiplying by a non-negative `r` keeps `≤`. -/
theorem mul_mono {p q r : Rat} (h : Eq (Rat.le p q) Bool.true)
    (hr : Eq (Rat.le Rat.zero r) Bool.true) :
    Eq (Rat.le (Rat.mul p r) (Rat.mul q r)) Bool.true :=
  let env := List.cons p.num (List.cons (Int.ofNat p.den) (List.cons q.num
    (List.cons (Int.ofNat q.den) (List.cons r.num (List.cons (Int.ofNat r.den) List.nil)))))
  Eq.trueOf (IExpr.ble_congr env
      (.mul (.mul (.atom 0) (.atom 3)) (.mul (.atom 4) (.atom 5)))
      (.mul (.mul (.atom 2) (.atom 1)) (.mul (.atom 4) (.atom 5)))
      (.mul (.mul (.atom 0) (.atom 4)) (.mul (.atom 3) (.atom 5)))
      (.mul (.mul (.atom 2) (.atom 4)) (.mul (.atom 1) (.atom 5))) rfl)
    (Int.mul_mono h (Int.nonneg_mul (num_nonneg hr) (rfl : Eq (Int.ble (Int.ofNat 0) (Int.ofNat r.den)) Bool.true)))

/-- `x ≤ o → 0 ≤ o − x`. -/
theorem sub_nonneg {x o : Rat} (h : Eq (Rat.le x o) Bool.true) :
    Eq (Rat.le Rat.zero (Rat.sub o x)) Bool.true :=
  let env := List.cons x.num (List.cons (Int.ofNat x.den) (List.cons o.num
    (List.cons (Int.ofNat o.den) List.nil)))
  repr_le (S := Rat.zero) (F := Int.ofNat 0) (E := Int.ofNat 1) rfl (add_repr o (Rat.neg x)) rfl
    (Eq.trueOf (IExpr.ble_congr env (.mul (.atom 0) (.atom 3)) (.mul (.atom 2) (.atom 1))
      (.mul .zero (.mul (.atom 3) (.atom 1)))
      (.mul (.add (.mul (.atom 2) (.atom 1)) (.mul (.neg (.atom 0)) (.atom 3))) .one) rfl) h)

/-- `x ≤ y → o − y ≤ o − x`. -/
theorem sub_anti {x y : Rat} (o : Rat) (h : Eq (Rat.le x y) Bool.true) :
    Eq (Rat.le (Rat.sub o y) (Rat.sub o x)) Bool.true :=
  add_mono_left o (neg_anti h)

/-- `x ≤ y → x − o ≤ y − o`. -/
theorem sub_mono {x y : Rat} (o : Rat) (h : Eq (Rat.le x y) Bool.true) :
    Eq (Rat.le (Rat.sub x o) (Rat.sub y o)) Bool.true :=
  add_mono (Rat.neg o) h

/-- `0 ≤ z → 1 − z ≤ 1`. -/
theorem one_sub_le_one {z : Rat} (h : Eq (Rat.le Rat.zero z) Bool.true) :
    Eq (Rat.le (Rat.sub Rat.one z) Rat.one) Bool.true :=
  le_trans (sub_anti Rat.one h) (rfl : Eq (Rat.le (Rat.sub Rat.one Rat.zero) Rat.one) Bool.true)

/-- `0 ≤ max 0 u`. -/
theorem max_zero_nonneg (u : Rat) : Eq (Rat.le Rat.zero (Rat.max Rat.zero u)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le Rat.zero (cond c u Rat.zero)) Bool.true) (Rat.le Rat.zero u)
    (fun _ => rfl) (fun h => h)

/-- `u ≤ v → max 0 u ≤ max 0 v`. -/
theorem max_zero_mono {u v : Rat} (h : Eq (Rat.le u v) Bool.true) :
    Eq (Rat.le (Rat.max Rat.zero u) (Rat.max Rat.zero v)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c u Rat.zero) (Rat.max Rat.zero v)) Bool.true)
    (Rat.le Rat.zero u)
    (fun _ => max_zero_nonneg v)
    (fun hu => Bool.split (C := fun c => Eq (Rat.le u (cond c v Rat.zero)) Bool.true)
      (Rat.le Rat.zero v)
      (fun hv => absurdTF (Eq.trans (Eq.symm (le_trans hu h)) hv))
      (fun _ => h))

/-- `lo ≤ hi → lo ≤ clamp x lo hi`. -/
theorem clamp_ge {x lo hi : Rat} (h : Eq (Rat.le lo hi) Bool.true) :
    Eq (Rat.le lo (Rat.clamp x lo hi)) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le lo (cond c lo (cond (Rat.lt hi x) hi x))) Bool.true)
    (Rat.lt x lo)
    (fun hx => Bool.split (C := fun c => Eq (Rat.le lo (cond c hi x)) Bool.true) (Rat.lt hi x)
      (fun _ => Bool.true_of_not hx) (fun _ => h))
    (fun _ => le_refl lo)

/-- `lo ≤ hi → clamp x lo hi ≤ hi`. -/
theorem clamp_le {x lo hi : Rat} (h : Eq (Rat.le lo hi) Bool.true) :
    Eq (Rat.le (Rat.clamp x lo hi) hi) Bool.true :=
  Bool.split (C := fun c => Eq (Rat.le (cond c lo (cond (Rat.lt hi x) hi x)) hi) Bool.true)
    (Rat.lt x lo)
    (fun _ => Bool.split (C := fun c => Eq (Rat.le (cond c hi x) hi) Bool.true) (Rat.lt hi x)
      (fun hx => Bool.true_of_not hx) (fun _ => le_refl hi))
    (fun _ => h)

end Rat
