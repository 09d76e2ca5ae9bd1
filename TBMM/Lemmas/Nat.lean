prelude
import TBMM.Lemmas.Logic
/-!
# TBMM.Lemmas.Nat — the natural numbers as an ordered commutative semiring

Facts about the core's `Nat.add/mul/sub/ble/beq`, each by recursion on the argument the
definition recurses on (`add`, `mul`, `sub` recurse on the second argument, `ble` and
`beq` on the first). What later modules need:

* the semiring laws, consumed by the polynomial normaliser (`TBMM.Lemmas.Poly`), so
  that no later proof rearranges a sum or a product by hand;
* cancellation of addition (`add_right_cancel`, `ble_add_right`) and the congruence
  `ble_congr`, which turn an inequality into any other with the same difference;
* order: reflexivity and totality of `Nat.ble` (transitivity and monotonicity are
  proved once, for `Int`, by sign arguments);
* `sub` and `beq` as far as `Int.subNatNat` and `Rat.add` use them.
-/

set_option genCtorIdx false

namespace Nat

/-! ## Semiring laws -/

/-- `0 + n = n` (`n + 0 = n` holds by definition). -/
theorem zero_add (n : Nat) : Eq (Nat.add 0 n) n :=
  Nat.rec (motive := fun n => Eq (Nat.add 0 n) n) rfl (fun _ ih => congrArg Nat.succ ih) n

/-- `succ n + m = succ (n + m)`. -/
theorem succ_add (n m : Nat) : Eq (Nat.add (Nat.succ n) m) (Nat.succ (Nat.add n m)) :=
  Nat.rec (motive := fun m => Eq (Nat.add (Nat.succ n) m) (Nat.succ (Nat.add n m)))
    rfl (fun _ ih => congrArg Nat.succ ih) m

/-- Commutativity of addition. -/
theorem add_comm (n m : Nat) : Eq (Nat.add n m) (Nat.add m n) :=
  Nat.rec (motive := fun m => Eq (Nat.add n m) (Nat.add m n))
    (Eq.symm (zero_add n))
    (fun k ih => Eq.trans (congrArg Nat.succ ih) (Eq.symm (succ_add k n))) m

/-- Associativity of addition. -/
theorem add_assoc (a b c : Nat) : Eq (Nat.add (Nat.add a b) c) (Nat.add a (Nat.add b c)) :=
  Nat.rec (motive := fun c => Eq (Nat.add (Nat.add a b) c) (Nat.add a (Nat.add b c)))
    rfl (fun _ ih => congrArg Nat.succ ih) c

/-- `a + (b + c) = b + (a + c)`. -/
theorem add_left_comm (a b c : Nat) : Eq (Nat.add a (Nat.add b c)) (Nat.add b (Nat.add a c)) :=
  Eq.trans (Eq.symm (add_assoc a b c))
    (Eq.trans (congrArg (fun t => Nat.add t c) (add_comm a b)) (add_assoc b a c))

/-- `0 · n = 0` (`n · 0 = 0` holds by definition). -/
theorem zero_mul (n : Nat) : Eq (Nat.mul 0 n) 0 :=
  Nat.rec (motive := fun n => Eq (Nat.mul 0 n) 0) rfl (fun _ ih => ih) n

/-- `succ n · m = n · m + m`. -/
theorem succ_mul (n m : Nat) : Eq (Nat.mul (Nat.succ n) m) (Nat.add (Nat.mul n m) m) :=
  Nat.rec (motive := fun m => Eq (Nat.mul (Nat.succ n) m) (Nat.add (Nat.mul n m) m))
    rfl
    (fun k ih =>
      -- succ n · (k+1) = (n·k + k) + (n+1) = succ ((n·k + k) + n) = succ ((n·k + n) + k)
      Eq.trans (congrArg (fun t => Nat.add t (Nat.succ n)) ih)
        (congrArg Nat.succ
          (Eq.trans (add_assoc (Nat.mul n k) k n)
            (Eq.trans (congrArg (Nat.add (Nat.mul n k)) (add_comm k n))
              (Eq.symm (add_assoc (Nat.mul n k) n k))))))
    m

/-- Commutativity of multiplication. -/
theorem mul_comm (n m : Nat) : Eq (Nat.mul n m) (Nat.mul m n) :=
  Nat.rec (motive := fun m => Eq (Nat.mul n m) (Nat.mul m n))
    (Eq.symm (zero_mul n))
    (fun k ih => Eq.trans (congrArg (fun t => Nat.add t n) ih) (Eq.symm (succ_mul k n))) m

/-- Left distributivity `a · (b + c) = a·b + a·c`. -/
theorem mul_add (a b c : Nat) :
    Eq (Nat.mul a (Nat.add b c)) (Nat.add (Nat.mul a b) (Nat.mul a c)) :=
  Nat.rec (motive := fun c => Eq (Nat.mul a (Nat.add b c)) (Nat.add (Nat.mul a b) (Nat.mul a c)))
    rfl
    (fun k ih =>
      Eq.trans (congrArg (fun t => Nat.add t a) ih)
        (add_assoc (Nat.mul a b) (Nat.mul a k) a))
    c

/-- Right distributivity `(a + b) · c = a·c + b·c`. -/
theorem add_mul (a b c : Nat) :
    Eq (Nat.mul (Nat.add a b) c) (Nat.add (Nat.mul a c) (Nat.mul b c)) :=
  Eq.trans (mul_comm (Nat.add a b) c)
    (Eq.trans (mul_add c a b) (congr2 Nat.add (mul_comm c a) (mul_comm c b)))

/-- Associativity of multiplication. -/
theorem mul_assoc (a b c : Nat) : Eq (Nat.mul (Nat.mul a b) c) (Nat.mul a (Nat.mul b c)) :=
  Nat.rec (motive := fun c => Eq (Nat.mul (Nat.mul a b) c) (Nat.mul a (Nat.mul b c)))
    rfl
    (fun k ih =>
      Eq.trans (congrArg (fun t => Nat.add t (Nat.mul a b)) ih)
        (Eq.symm (mul_add a (Nat.mul b k) b)))
    c

/-- `a · (b · c) = b · (a · c)`. -/
theorem mul_left_comm (a b c : Nat) : Eq (Nat.mul a (Nat.mul b c)) (Nat.mul b (Nat.mul a c)) :=
  Eq.trans (Eq.symm (mul_assoc a b c))
    (Eq.trans (congrArg (fun t => Nat.mul t c) (mul_comm a b)) (mul_assoc b a c))

/-- `1 · n = n`. -/
theorem one_mul (n : Nat) : Eq (Nat.mul 1 n) n :=
  Eq.trans (mul_comm 1 n) (zero_add n)

/-! ## Cancellation and order -/

/-- `succ` is injective. -/
theorem succ_inj {n m : Nat} (h : Eq (Nat.succ n) (Nat.succ m)) : Eq n m := congrArg Nat.pred h

/-- `succ n ≠ 0`: a Bool test that tells them apart turns the equation into `true = false`. -/
theorem succ_ne_zero {C : Prop} {n : Nat} (h : Eq (Nat.succ n) 0) : C :=
  absurdTF (congrArg (fun t => Nat.casesOn (motive := fun _ => Bool) t Bool.false
    (fun _ => Bool.true)) h)

/-- Addition cancels on the right. -/
theorem add_right_cancel {a b : Nat} (c : Nat) (h : Eq (Nat.add a c) (Nat.add b c)) : Eq a b :=
  Nat.rec (motive := fun c => Eq (Nat.add a c) (Nat.add b c) → Eq a b)
    (fun h => h) (fun _ ih h => ih (succ_inj h)) c h

/-- `n ≤ n`. -/
theorem ble_refl (n : Nat) : Eq (Nat.ble n n) Bool.true :=
  Nat.rec (motive := fun n => Eq (Nat.ble n n) Bool.true) rfl (fun _ ih => ih) n

/-- Adding the same number to both sides does not change `≤`. -/
theorem ble_add_right (a b c : Nat) : Eq (Nat.ble (Nat.add a c) (Nat.add b c)) (Nat.ble a b) :=
  Nat.rec (motive := fun c => Eq (Nat.ble (Nat.add a c) (Nat.add b c)) (Nat.ble a b))
    rfl (fun _ ih => ih) c

/-- `≤` between two sums with the same difference: if `A + B' = A' + B` then
`A ≤ B ↔ A' ≤ B'`. This is how every rearranged inequality is proved: the normaliser
checks the equation, this lemma moves the inequality. -/
theorem ble_congr {A B A' B' : Nat} (h : Eq (Nat.add A B') (Nat.add A' B)) :
    Eq (Nat.ble A B) (Nat.ble A' B') :=
  -- A ≤ B ↔ A + B' ≤ B + B' = A' + B ≤ B' + B ↔ A' ≤ B'
  Eq.trans (Eq.symm (ble_add_right A B B'))
    (Eq.trans (congr2 Nat.ble h (add_comm B B')) (ble_add_right A' B' B))

/-- Totality: `¬(n ≤ m) → m ≤ n`. -/
theorem ble_total {n m : Nat} (h : Eq (Nat.ble n m) Bool.false) : Eq (Nat.ble m n) Bool.true :=
  Nat.rec
    (motive := fun n => (m : Nat) → Eq (Nat.ble n m) Bool.false → Eq (Nat.ble m n) Bool.true)
    (fun _ h => absurdTF h)
    (fun n' ih m =>
      Nat.casesOn (motive := fun m => Eq (Nat.ble (Nat.succ n') m) Bool.false →
          Eq (Nat.ble m (Nat.succ n')) Bool.true) m
        (fun _ => rfl)
        (fun m' h => ih m' h))
    n m h

/-! ## Subtraction and equality test -/

/-- `(n+1) - (m+1) = n - m`. -/
theorem succ_sub_succ (n m : Nat) : Eq (Nat.sub (Nat.succ n) (Nat.succ m)) (Nat.sub n m) :=
  Nat.rec (motive := fun m => Eq (Nat.sub (Nat.succ n) (Nat.succ m)) (Nat.sub n m))
    rfl (fun _ ih => congrArg Nat.pred ih) m

/-- `m ≤ n → (n - m) + m = n`. -/
theorem sub_add_cancel {n m : Nat} (h : Eq (Nat.ble m n) Bool.true) :
    Eq (Nat.add (Nat.sub n m) m) n :=
  Nat.rec
    (motive := fun m => (n : Nat) → Eq (Nat.ble m n) Bool.true → Eq (Nat.add (Nat.sub n m) m) n)
    (fun _ _ => rfl)
    (fun m' ih n =>
      Nat.casesOn (motive := fun n => Eq (Nat.ble (Nat.succ m') n) Bool.true →
          Eq (Nat.add (Nat.sub n (Nat.succ m')) (Nat.succ m')) n) n
        (fun h => absurdFT h)
        (fun n' h => congrArg Nat.succ
          (Eq.trans (congrArg (fun t => Nat.add t m') (succ_sub_succ n' m')) (ih n' h))))
    m n h

/-- `¬(n ≤ m) → n - m` is a successor (so `succ (pred (n - m)) = n - m`). -/
theorem sub_pos {n m : Nat} (h : Eq (Nat.ble n m) Bool.false) :
    Eq (Nat.succ (Nat.pred (Nat.sub n m))) (Nat.sub n m) :=
  Nat.rec
    (motive := fun m => (n : Nat) → Eq (Nat.ble n m) Bool.false →
      Eq (Nat.succ (Nat.pred (Nat.sub n m))) (Nat.sub n m))
    (fun n => Nat.casesOn (motive := fun n => Eq (Nat.ble n 0) Bool.false →
        Eq (Nat.succ (Nat.pred (Nat.sub n 0))) (Nat.sub n 0)) n
      (fun h => absurdTF h) (fun _ _ => rfl))
    (fun m' ih n => Nat.casesOn (motive := fun n => Eq (Nat.ble n (Nat.succ m')) Bool.false →
        Eq (Nat.succ (Nat.pred (Nat.sub n (Nat.succ m')))) (Nat.sub n (Nat.succ m'))) n
      (fun h => absurdTF h)
      (fun n' h => Eq.subst (P := fun t => Eq (Nat.succ (Nat.pred t)) t)
        (Eq.symm (succ_sub_succ n' m')) (ih n' h)))
    m n h

/-- `Nat.beq n m = true → n = m`. -/
theorem eq_of_beq {n m : Nat} (h : Eq (Nat.beq n m) Bool.true) : Eq n m :=
  Nat.rec (motive := fun n => (m : Nat) → Eq (Nat.beq n m) Bool.true → Eq n m)
    (fun m => Nat.casesOn (motive := fun m => Eq (Nat.beq 0 m) Bool.true → Eq 0 m) m
      (fun _ => rfl) (fun _ h => absurdFT h))
    (fun n' ih m => Nat.casesOn (motive := fun m => Eq (Nat.beq (Nat.succ n') m) Bool.true →
        Eq (Nat.succ n') m) m
      (fun h => absurdFT h) (fun m' h => congrArg Nat.succ (ih m' h)))
    n m h

end Nat
