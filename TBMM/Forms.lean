prelude
import TBMM.Rat
/-!
# TBMM.Forms — the six decidable gate forms

Bool-valued checkers that mirror `tbmm.core.forms` (Python) exactly; a gate obligation in a
certificate states `Eq (Forms.<form> …) true` over the artifact's numbers and is proved
by `rfl`, i.e. by the kernel evaluating the checker. Field lookup and wildcard expansion
stay in Python: a certificate receives the already-selected values.

1. `interval`  — `lo ≤ x ≤ hi`, either bound optional
2. `count`     — `x` is an integer, `x ≥ 0`, and `x ≤ hi` when `hi` is given
3. `sumTo`     — `|Σ xs − total| ≤ tol`
4. `order`     — `Σ lhs ≤ Σ rhs + slack` (`<` when strict)
5. `threshold` — `x op c` for `op ∈ {≥, ≤, >, <}`
6. `product`   — `coef · Π factors op bound`

and the replay agreement check `agree` — a claimed value matches its replayed value,
`|x − y| ≤ tol + relTol · |y|` (a claim that disagrees with its replay is misreported).
-/

set_option genCtorIdx false

/-- The four comparison operators of `threshold` and `product` (`>=`, `<=`, `>`, `<`). -/
inductive Cmp : Type
  | ge
  | le
  | gt
  | lt

noncomputable section

/-- `x op c`, as `tbmm.core.forms.compare`. -/
def Cmp.eval (op : Cmp) (x c : Rat) : Bool :=
  Cmp.casesOn op (Rat.le c x) (Rat.le x c) (Rat.lt c x) (Rat.lt x c)

/-- `true` when the bound is absent, else the test applied to it: an open bound holds. -/
def Option.allOr {α : Type} (o : Option α) (test : α → Bool) : Bool :=
  Option.casesOn o Bool.true test

namespace Forms

/-- Form 1: `lo ≤ x ≤ hi`, a missing bound imposing nothing. -/
def interval (x : Rat) (lo hi : Option Rat) : Bool :=
  and (Option.allOr lo (fun l => Rat.le l x)) (Option.allOr hi (fun h => Rat.le x h))

/-- Form 2: a count is a non-negative integer, at most `hi` when given. -/
def count (x : Rat) (hi : Option Rat) : Bool :=
  and (Rat.isInt x) (and (Rat.le Rat.zero x) (Option.allOr hi (fun h => Rat.le x h)))

/-- Form 3: the values sum to `total` within `tol`. -/
def sumTo (xs : List Rat) (total tol : Rat) : Bool :=
  Rat.le (Rat.abs (Rat.sub (Rat.sum xs) total)) tol

/-- Form 4: `Σ lhs ≤ Σ rhs + slack`, or `<` when `strict`. -/
def order (lhs rhs : List Rat) (strict : Bool) (slack : Rat) : Bool :=
  cond strict
    (Rat.lt (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack))
    (Rat.le (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack))

/-- Form 5: `x op c`. -/
def threshold (x : Rat) (op : Cmp) (c : Rat) : Bool := Cmp.eval op x c

/-- Form 6: `coef · Π factors op bound` (a bound that is itself a product of fields is
evaluated by the caller with `Rat.prod`). -/
def product (factors : List Rat) (coef : Rat) (op : Cmp) (bound : Rat) : Bool :=
  Cmp.eval op (Rat.mul coef (Rat.prod factors)) bound

/-- Replay agreement: the claim `x` is within `tol + relTol · |y|` of the replayed `y`. -/
def agree (x y tol relTol : Rat) : Bool :=
  Rat.le (Rat.abs (Rat.sub x y)) (Rat.add tol (Rat.mul relTol (Rat.abs y)))

end Forms

end
