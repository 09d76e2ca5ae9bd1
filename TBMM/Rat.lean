prelude
import TBMM.Int
/-!
# TBMM.Rat — exact rationals for the checkers

A rational is an integer numerator over a positive denominator. Positivity holds by
construction: the structure stores the denominator minus one (`denPred`), so no value
of type `Rat` can have a zero denominator and no proof has to be carried around.

Values are not reduced to lowest terms. Nothing needs it: every comparison is exact by
cross-multiplication (`a/b ≤ c/d ↔ a·d ≤ c·b` for positive `b`, `d`), and the kernel
multiplies numerals of any size with GMP. The Python side (`fractions.Fraction`) uses the
same values, so `Rat` results are compared with `Rat.beq`, never by representation.

Certificates write numbers only as `Rat.frac n d` (`n/d`) and `Rat.negFrac n d`
(`-(n/d)`) with decimal numerals `n`, `d ≥ 1`.
-/

set_option genCtorIdx false

/-- `num / (denPred + 1)`. -/
structure Rat where
  /-- The signed numerator. -/
  num : Int
  /-- The denominator minus one, so the denominator is positive by construction. -/
  denPred : Nat

noncomputable section

/-- The (positive) denominator. -/
def Rat.den (q : Rat) : Nat := Nat.succ q.denPred

/-- `n / d` for naturals; `d` must be at least 1 (`d = 0` would read as 1). -/
def Rat.frac (n d : Nat) : Rat := Rat.mk (Int.ofNat n) (Nat.pred d)

/-- `-(n / d)` for naturals; `d` must be at least 1 (`d = 0` would read as 1). -/
def Rat.negFrac (n d : Nat) : Rat := Rat.mk (Int.negOfNat n) (Nat.pred d)

/-- A natural `n` as a rational (used for list lengths). -/
def Rat.ofNat (n : Nat) : Rat := Rat.mk (Int.ofNat n) 0

/-- Zero. -/
def Rat.zero : Rat := Rat.ofNat 0

/-- One. -/
def Rat.one : Rat := Rat.ofNat 1

/-- `n / d` for an integer `n` and a denominator `d ≥ 1` computed by an operation. -/
def Rat.ofNumDen (n : Int) (d : Nat) : Rat := Rat.mk n (Nat.pred d)

/-- Addition: `a/d + c/d = (a + c)/d` over a shared denominator, else
`a/b + c/d = (a·d + c·b) / (b·d)`. The shared case keeps a long sum's denominator from
growing (certificates write each list over one common denominator). -/
def Rat.add (p q : Rat) : Rat :=
  cond (Nat.beq p.denPred q.denPred)
    (Rat.mk (Int.add p.num q.num) p.denPred)
    (Rat.ofNumDen
      (Int.add (Int.mul p.num (Int.ofNat q.den)) (Int.mul q.num (Int.ofNat p.den)))
      (Nat.mul p.den q.den))

/-- Negation. -/
def Rat.neg (q : Rat) : Rat := Rat.mk (Int.neg q.num) q.denPred

/-- Subtraction. -/
def Rat.sub (p q : Rat) : Rat := Rat.add p (Rat.neg q)

/-- Multiplication. -/
def Rat.mul (p q : Rat) : Rat := Rat.ofNumDen (Int.mul p.num q.num) (Nat.mul p.den q.den)

/-- Reciprocal, with `inv 0 = 0` (Lean's convention; the reward rules only ever divide
by values they have checked to be positive). -/
def Rat.inv (q : Rat) : Rat :=
  Int.casesOn q.num
    (fun n => Nat.casesOn n Rat.zero (fun k => Rat.mk (Int.ofNat q.den) k))
    (fun k => Rat.mk (Int.negOfNat q.den) k)

/-- Division, with `p / 0 = 0`. -/
def Rat.div (p q : Rat) : Rat := Rat.mul p (Rat.inv q)

/-- `p ≤ q`, by cross-multiplication. -/
def Rat.le (p q : Rat) : Bool :=
  Int.ble (Int.mul p.num (Int.ofNat q.den)) (Int.mul q.num (Int.ofNat p.den))

/-- `p < q`. -/
def Rat.lt (p q : Rat) : Bool := not (Rat.le q p)

/-- `p = q` as rational numbers (not as representations). -/
def Rat.beq (p q : Rat) : Bool :=
  Int.beq (Int.mul p.num (Int.ofNat q.den)) (Int.mul q.num (Int.ofNat p.den))

/-- Absolute value. -/
def Rat.abs (q : Rat) : Rat := Rat.mk (Int.ofNat (Int.natAbs q.num)) q.denPred

/-- The smaller of two values. -/
def Rat.min (p q : Rat) : Rat := cond (Rat.le p q) p q

/-- The larger of two values. -/
def Rat.max (p q : Rat) : Rat := cond (Rat.le p q) q p

/-- `lo` below `lo`, `hi` above `hi`, else `x` (the order of tests of Python's `clamp`). -/
def Rat.clamp (x lo hi : Rat) : Rat := cond (Rat.lt x lo) lo (cond (Rat.lt hi x) hi x)

/-- Whether `q` is an integer: the denominator divides the numerator. -/
def Rat.isInt (q : Rat) : Bool := Nat.beq (Nat.mod (Int.natAbs q.num) q.den) 0

/-- Sum of a list (0 for the empty list). -/
def Rat.sum (xs : List Rat) : Rat := List.foldr Rat.add Rat.zero xs

/-- Product of a list (1 for the empty list). -/
def Rat.prod (xs : List Rat) : Rat := List.foldr Rat.mul Rat.one xs

end
