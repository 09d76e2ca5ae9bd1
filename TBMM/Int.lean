prelude
import TBMM.Core
/-!
# TBMM.Int — integers over the GMP-accelerated naturals

`Int` has Lean's own shape: `ofNat n` is `n`, `negSucc n` is `-(n+1)`. Every value has
exactly one representation, and each operation is one case split on the constructors
followed by `Nat` arithmetic, which the kernel evaluates with GMP. So integer
arithmetic on numerals is as cheap as natural arithmetic, however many digits.
-/

set_option genCtorIdx false

/-- Integers: `ofNat n` is `n`, `negSucc n` is `-(n+1)`. -/
inductive Int : Type
  | ofNat (n : Nat)
  | negSucc (n : Nat)

noncomputable section

/-- `-n` for a natural `n`. -/
def Int.negOfNat (n : Nat) : Int := Nat.casesOn n (Int.ofNat 0) (fun k => Int.negSucc k)

/-- Negation. -/
def Int.neg (a : Int) : Int :=
  Int.casesOn a (fun n => Int.negOfNat n) (fun n => Int.ofNat (Nat.succ n))

/-- `m - n` for naturals, as an integer. -/
def Int.subNatNat (m n : Nat) : Int :=
  cond (Nat.ble n m) (Int.ofNat (Nat.sub m n)) (Int.negSucc (Nat.pred (Nat.sub n m)))

/-- Addition. -/
def Int.add (a b : Int) : Int :=
  Int.casesOn a
    (fun m => Int.casesOn b
      (fun n => Int.ofNat (Nat.add m n))
      (fun n => Int.subNatNat m (Nat.succ n)))
    (fun m => Int.casesOn b
      (fun n => Int.subNatNat n (Nat.succ m))
      (fun n => Int.negSucc (Nat.succ (Nat.add m n))))

/-- Multiplication. -/
def Int.mul (a b : Int) : Int :=
  Int.casesOn a
    (fun m => Int.casesOn b
      (fun n => Int.ofNat (Nat.mul m n))
      (fun n => Int.negOfNat (Nat.mul m (Nat.succ n))))
    (fun m => Int.casesOn b
      (fun n => Int.negOfNat (Nat.mul (Nat.succ m) n))
      (fun n => Int.ofNat (Nat.mul (Nat.succ m) (Nat.succ n))))

/-- Absolute value, as a natural. -/
def Int.natAbs (a : Int) : Nat := Int.casesOn a (fun n => n) (fun n => Nat.succ n)

/-- `a ≤ b`. -/
def Int.ble (a b : Int) : Bool :=
  Int.casesOn a
    (fun m => Int.casesOn b (fun n => Nat.ble m n) (fun _ => Bool.false))
    (fun m => Int.casesOn b (fun _ => Bool.true) (fun n => Nat.ble n m))

/-- `a = b` (representations are unique, so this compares constructors and payloads). -/
def Int.beq (a b : Int) : Bool :=
  Int.casesOn a
    (fun m => Int.casesOn b (fun n => Nat.beq m n) (fun _ => Bool.false))
    (fun m => Int.casesOn b (fun _ => Bool.false) (fun n => Nat.beq m n))

end
