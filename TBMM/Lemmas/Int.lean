prelude
import TBMM.Int
import TBMM.Lemmas.Poly
/-!
# TBMM.Lemmas.Int — integers as differences of naturals

Every integer is read as a difference of two naturals, `a = posPart a − negPart a`
(`ofNat n ↦ n − 0`, `negSucc n ↦ 0 − (n+1)`). Under that reading

* `Int.ble a b` is `Nat.ble (posPart a + negPart b) (posPart b + negPart a)` (`ble_parts`);
* `+`, `·` and negation act on the parts as on formal differences (`add_parts`,
  `mul_parts`, `neg_posPart`/`neg_negPart`), up to the equivalence
  `(p, n) ~ (p', n') ⟺ p + n' = p' + n`;
* equivalent parts mean equal integers (`eq_of_parts`): representations are unique.

Each lemma is a case split on the constructors (the definitions' own shape) closed by
`Nat` facts, the rearrangements by `NExpr.eq`. `TBMM.Lemmas.IntRing` builds the ring
normaliser and the order lemmas on these.
-/

set_option genCtorIdx false

noncomputable section

namespace Int

/-- The positive part: `n` for `ofNat n`, 0 for a negative number. -/
def posPart (a : Int) : Nat := Int.casesOn a (fun n => n) (fun _ => 0)

/-- The negative part: 0 for `ofNat n`, `n + 1` for `negSucc n`. -/
def negPart (a : Int) : Nat := Int.casesOn a (fun _ => 0) (fun n => Nat.succ n)

/-! ## The parts of `≤`, `+`, `·`, `−` -/

theorem ble_parts (a b : Int) :
    Eq (Int.ble a b) (Nat.ble (Nat.add (posPart a) (negPart b)) (Nat.add (posPart b) (negPart a))) :=
  Int.casesOn (motive := fun a => Eq (Int.ble a b)
      (Nat.ble (Nat.add (posPart a) (negPart b)) (Nat.add (posPart b) (negPart a)))) a
    (fun m => Int.casesOn (motive := fun b => Eq (Int.ble (Int.ofNat m) b)
        (Nat.ble (Nat.add m (negPart b)) (Nat.add (posPart b) 0))) b
      (fun _ => rfl) (fun _ => rfl))
    (fun m => Int.casesOn (motive := fun b => Eq (Int.ble (Int.negSucc m) b)
        (Nat.ble (Nat.add 0 (negPart b)) (Nat.add (posPart b) (Nat.succ m)))) b
      (fun _ => rfl)
      (fun n => (congr2 Nat.ble (Eq.symm (Nat.zero_add n)) (Eq.symm (Nat.zero_add m)) :
        Eq (Nat.ble n m) (Nat.ble (Nat.add 0 n) (Nat.add 0 m)))))

theorem negOfNat_posPart (k : Nat) : Eq (posPart (Int.negOfNat k)) 0 :=
  Nat.casesOn (motive := fun k => Eq (posPart (Int.negOfNat k)) 0) k rfl (fun _ => rfl)

theorem negOfNat_negPart (k : Nat) : Eq (negPart (Int.negOfNat k)) k :=
  Nat.casesOn (motive := fun k => Eq (negPart (Int.negOfNat k)) k) k rfl (fun _ => rfl)

theorem subNatNat_parts (m n : Nat) :
    Eq (Nat.add (posPart (Int.subNatNat m n)) n) (Nat.add (negPart (Int.subNatNat m n)) m) :=
  Bool.split (C := fun c => Eq (Nat.add (posPart (cond c (Int.ofNat (Nat.sub m n))
        (Int.negSucc (Nat.pred (Nat.sub n m))))) n)
      (Nat.add (negPart (cond c (Int.ofNat (Nat.sub m n))
        (Int.negSucc (Nat.pred (Nat.sub n m))))) m))
    (Nat.ble n m)
    -- m < n: 0 + n = (n - m) + m
    (fun h => Eq.trans (Nat.zero_add n)
      (Eq.symm (Eq.trans (congrArg (fun t => Nat.add t m) (Nat.sub_pos h))
        (Nat.sub_add_cancel (Nat.ble_total h)))))
    -- n ≤ m: (m - n) + n = 0 + m
    (fun h => Eq.trans (Nat.sub_add_cancel h) (Eq.symm (Nat.zero_add m)))

theorem add_parts (a b : Int) :
    Eq (Nat.add (posPart (Int.add a b)) (Nat.add (negPart a) (negPart b)))
      (Nat.add (negPart (Int.add a b)) (Nat.add (posPart a) (posPart b))) :=
  Int.casesOn (motive := fun a => Eq (Nat.add (posPart (Int.add a b)) (Nat.add (negPart a) (negPart b)))
      (Nat.add (negPart (Int.add a b)) (Nat.add (posPart a) (posPart b)))) a
    (fun m => Int.casesOn (motive := fun b =>
        Eq (Nat.add (posPart (Int.add (Int.ofNat m) b)) (Nat.add 0 (negPart b)))
          (Nat.add (negPart (Int.add (Int.ofNat m) b)) (Nat.add m (posPart b)))) b
      (fun n => Eq.symm (Nat.zero_add (Nat.add m n)))
      (fun n => Eq.trans
        (congrArg (Nat.add (posPart (Int.subNatNat m (Nat.succ n)))) (Nat.zero_add (Nat.succ n)))
        (subNatNat_parts m (Nat.succ n))))
    (fun m => Int.casesOn (motive := fun b =>
        Eq (Nat.add (posPart (Int.add (Int.negSucc m) b)) (Nat.add (Nat.succ m) (negPart b)))
          (Nat.add (negPart (Int.add (Int.negSucc m) b)) (Nat.add 0 (posPart b)))) b
      (fun n => Eq.trans (subNatNat_parts n (Nat.succ m))
        (Eq.symm (congrArg (Nat.add (negPart (Int.subNatNat n (Nat.succ m)))) (Nat.zero_add n))))
      (fun n => Eq.trans (Nat.zero_add (Nat.add (Nat.succ m) (Nat.succ n)))
        (congrArg Nat.succ (Nat.succ_add m n))))

/-- The parts of a product are the formal product of the parts (up to `~`). -/
theorem mul_parts (a b : Int) :
    Eq (Nat.add (posPart (Int.mul a b))
        (Nat.add (Nat.mul (posPart a) (negPart b)) (Nat.mul (negPart a) (posPart b))))
      (Nat.add (negPart (Int.mul a b))
        (Nat.add (Nat.mul (posPart a) (posPart b)) (Nat.mul (negPart a) (negPart b)))) :=
  Int.casesOn (motive := fun a => Eq (Nat.add (posPart (Int.mul a b))
        (Nat.add (Nat.mul (posPart a) (negPart b)) (Nat.mul (negPart a) (posPart b))))
      (Nat.add (negPart (Int.mul a b))
        (Nat.add (Nat.mul (posPart a) (posPart b)) (Nat.mul (negPart a) (negPart b))))) a
    (fun m => Int.casesOn (motive := fun b => Eq (Nat.add (posPart (Int.mul (Int.ofNat m) b))
          (Nat.add (Nat.mul m (negPart b)) (Nat.mul 0 (posPart b))))
        (Nat.add (negPart (Int.mul (Int.ofNat m) b))
          (Nat.add (Nat.mul m (posPart b)) (Nat.mul 0 (negPart b))))) b
      (fun n => NExpr.eq (List.cons m (List.cons n List.nil))
        (NExpr.add (NExpr.mul (NExpr.var 0) (NExpr.var 1))
          (NExpr.add (NExpr.mul (NExpr.var 0) NExpr.zero) (NExpr.mul NExpr.zero (NExpr.var 1))))
        (NExpr.add NExpr.zero
          (NExpr.add (NExpr.mul (NExpr.var 0) (NExpr.var 1)) (NExpr.mul NExpr.zero NExpr.zero)))
        rfl)
      (fun n => Eq.trans
        (congrArg (fun t => Nat.add t (Nat.add (Nat.mul m (Nat.succ n)) (Nat.mul 0 0)))
          (negOfNat_posPart (Nat.mul m (Nat.succ n))))
        (Eq.trans
          (NExpr.eq (List.cons m (List.cons (Nat.succ n) List.nil))
            (NExpr.add NExpr.zero
              (NExpr.add (NExpr.mul (NExpr.var 0) (NExpr.var 1)) (NExpr.mul NExpr.zero NExpr.zero)))
            (NExpr.add (NExpr.mul (NExpr.var 0) (NExpr.var 1))
              (NExpr.add (NExpr.mul (NExpr.var 0) NExpr.zero) (NExpr.mul NExpr.zero (NExpr.var 1))))
            rfl)
          (congrArg (fun t => Nat.add t (Nat.add (Nat.mul m 0) (Nat.mul 0 (Nat.succ n))))
            (Eq.symm (negOfNat_negPart (Nat.mul m (Nat.succ n))))))))
    (fun m => Int.casesOn (motive := fun b => Eq (Nat.add (posPart (Int.mul (Int.negSucc m) b))
          (Nat.add (Nat.mul 0 (negPart b)) (Nat.mul (Nat.succ m) (posPart b))))
        (Nat.add (negPart (Int.mul (Int.negSucc m) b))
          (Nat.add (Nat.mul 0 (posPart b)) (Nat.mul (Nat.succ m) (negPart b))))) b
      (fun n => Eq.trans
        (congrArg (fun t => Nat.add t (Nat.add (Nat.mul 0 0) (Nat.mul (Nat.succ m) n)))
          (negOfNat_posPart (Nat.mul (Nat.succ m) n)))
        (Eq.trans
          (NExpr.eq (List.cons (Nat.succ m) (List.cons n List.nil))
            (NExpr.add NExpr.zero
              (NExpr.add (NExpr.mul NExpr.zero NExpr.zero) (NExpr.mul (NExpr.var 0) (NExpr.var 1))))
            (NExpr.add (NExpr.mul (NExpr.var 0) (NExpr.var 1))
              (NExpr.add (NExpr.mul NExpr.zero (NExpr.var 1)) (NExpr.mul (NExpr.var 0) NExpr.zero)))
            rfl)
          (congrArg (fun t => Nat.add t (Nat.add (Nat.mul 0 n) (Nat.mul (Nat.succ m) 0)))
            (Eq.symm (negOfNat_negPart (Nat.mul (Nat.succ m) n))))))
      (fun n => NExpr.eq (List.cons (Nat.succ m) (List.cons (Nat.succ n) List.nil))
        (NExpr.add (NExpr.mul (NExpr.var 0) (NExpr.var 1))
          (NExpr.add (NExpr.mul NExpr.zero (NExpr.var 1)) (NExpr.mul (NExpr.var 0) NExpr.zero)))
        (NExpr.add NExpr.zero
          (NExpr.add (NExpr.mul NExpr.zero NExpr.zero) (NExpr.mul (NExpr.var 0) (NExpr.var 1))))
        rfl))

theorem neg_posPart (a : Int) : Eq (posPart (Int.neg a)) (negPart a) :=
  Int.casesOn (motive := fun a => Eq (posPart (Int.neg a)) (negPart a)) a
    (fun n => negOfNat_posPart n) (fun _ => rfl)

theorem neg_negPart (a : Int) : Eq (negPart (Int.neg a)) (posPart a) :=
  Int.casesOn (motive := fun a => Eq (negPart (Int.neg a)) (posPart a)) a
    (fun n => negOfNat_negPart n) (fun _ => rfl)

/-- Integers with equivalent parts are equal (each integer has one representation). -/
theorem eq_of_parts {a b : Int}
    (h : Eq (Nat.add (posPart a) (negPart b)) (Nat.add (posPart b) (negPart a))) : Eq a b :=
  Int.casesOn (motive := fun a => Eq (Nat.add (posPart a) (negPart b)) (Nat.add (posPart b) (negPart a)) →
      Eq a b) a
    (fun m => Int.casesOn (motive := fun b =>
        Eq (Nat.add m (negPart b)) (Nat.add (posPart b) 0) → Eq (Int.ofNat m) b) b
      (fun _ h => congrArg Int.ofNat h)
      (fun _ h => Nat.succ_ne_zero h))
    (fun m => Int.casesOn (motive := fun b =>
        Eq (Nat.add 0 (negPart b)) (Nat.add (posPart b) (Nat.succ m)) → Eq (Int.negSucc m) b) b
      (fun _ h => Nat.succ_ne_zero (Eq.symm h))
      (fun n h => congrArg Int.negSucc (Eq.symm (Nat.succ_inj
        (Eq.trans (Eq.symm (Nat.zero_add (Nat.succ n))) (Eq.trans h (Nat.zero_add (Nat.succ m))))))))
    h

end Int
