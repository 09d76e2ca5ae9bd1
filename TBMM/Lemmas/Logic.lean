prelude
import TBMM.Core
/-!
# TBMM.Lemmas.Logic — equality and Bool reasoning without `Init`

The proofs of `TBMM.Theorems` are terms, not tactic scripts: without `Init` no tactic
syntax is declared (`by exact …` fails with "unknown tactic"). This module supplies the
few combinators those terms are built from — symmetry, transitivity and congruence of
`Eq` (all by `Eq.rec`), case analysis on a Bool that remembers which case it is in, and
the absurdity of `true = false` — plus `Or` for the one theorem that states a
disjunction, and the four declarations the elaborator needs to compare numerals (below).
-/

set_option genCtorIdx false

universe u v w

/-! ## The elaborator's offset vocabulary

When the elaborator compares two natural-number terms that are successors or numeral
offsets of each other (`succ (succ x)` against `succ y`), it restates the comparison as
`x + 1 =?= y` and builds that term from `HAdd.hAdd` with `instHAdd Nat instAddNat`,
constants `Init` normally provides. Without them the comparison aborts with "unknown
constant" even when the terms are equal by definition. These four declarations give
those names their usual meaning (`x + y` is `Nat.add x y`); nothing in the library
states or proves anything with them, and the kernel never needs them. -/

/-- Homogeneous addition (the elaborator's `instHAdd` wants it). -/
class Add (α : Type u) where
  /-- `a + b`. -/
  add : α → α → α

/-- Heterogeneous addition, the head of the terms the elaborator builds for offsets. -/
class HAdd (α : Type u) (β : Type v) (γ : Type w) where
  /-- `a + b`. -/
  hAdd : α → β → γ

noncomputable section

/-- `+` on a type with `Add`. -/
instance instHAdd {α : Type u} [Add α] : HAdd α α α := HAdd.mk (fun a b => Add.add a b)

/-- `+` on `Nat` is `Nat.add`. -/
instance instAddNat : Add Nat := Add.mk Nat.add

end

/-! ## Equality -/

/-- Symmetry of equality. -/
theorem Eq.symm {α : Sort u} {a b : α} (h : Eq a b) : Eq b a :=
  Eq.rec (motive := fun x _ => Eq x a) rfl h

/-- Transitivity of equality. -/
theorem Eq.trans {α : Sort u} {a b c : α} (h₁ : Eq a b) (h₂ : Eq b c) : Eq a c :=
  Eq.rec (motive := fun x _ => Eq a x) h₁ h₂

/-- Equal arguments give equal values. -/
theorem congrArg {α : Sort u} {β : Sort v} {a b : α} (f : α → β) (h : Eq a b) :
    Eq (f a) (f b) :=
  Eq.rec (motive := fun x _ => Eq (f a) (f x)) rfl h

/-- Congruence in both arguments of a binary function. -/
theorem congr2 {α : Sort u} {β : Sort v} {γ : Sort w} (f : α → β → γ) {a a' : α} {b b' : β}
    (h₁ : Eq a a') (h₂ : Eq b b') : Eq (f a b) (f a' b') :=
  Eq.rec (motive := fun x _ => Eq (f a b) (f x b')) (congrArg (f a) h₂) h₁

/-- Rewriting a proposition along an equality (`h ▸ p` in Lean with `Init`). -/
theorem Eq.subst {α : Sort u} {P : α → Prop} {a b : α} (h : Eq a b) (p : P a) : P b :=
  Eq.rec (motive := fun x _ => P x) p h

/-- A Bool-valued fact `Eq x true` carried across `Eq x y`. -/
theorem Eq.trueOf {x y : Bool} (e : Eq x y) (h : Eq x Bool.true) : Eq y Bool.true :=
  Eq.trans (Eq.symm e) h

/-- `true = false` proves anything: the motive is `PUnit` at `true` and the goal at
`false`, so transporting `PUnit.unit` along the equation yields the goal. -/
theorem absurdTF {C : Prop} (h : Eq Bool.true Bool.false) : C :=
  @Eq.rec Bool Bool.true (fun b _ => Bool.casesOn (motive := fun _ => Prop) b C PUnit)
    PUnit.unit Bool.false h

/-- `false = true` proves anything. -/
theorem absurdFT {C : Prop} (h : Eq Bool.false Bool.true) : C := absurdTF (Eq.symm h)

/-- Case analysis on a Bool term `b`, each branch knowing the value of `b`: the way every
`cond` in the definitions is taken apart. -/
theorem Bool.split {C : Bool → Prop} (b : Bool) (hf : Eq b Bool.false → C Bool.false)
    (ht : Eq b Bool.true → C Bool.true) : C b :=
  Bool.casesOn (motive := fun c => Eq b c → C c) b hf ht rfl

/-- A Bool that is not `true` is `false`. -/
theorem Bool.eq_false_of_ne_true {b : Bool} (h : Eq b Bool.true → Eq Bool.true Bool.false) :
    Eq b Bool.false :=
  Bool.split (C := fun c => Eq b c → Eq b Bool.false) b (fun e _ => e)
    (fun e _ => absurdTF (h e)) rfl

/-- `not b = true` means `b = false`. -/
theorem Bool.false_of_not {b : Bool} (h : Eq (not b) Bool.true) : Eq b Bool.false :=
  Bool.split (C := fun c => Eq (not c) Bool.true → Eq c Bool.false) b
    (fun _ _ => rfl) (fun _ h' => absurdFT h') h

/-- `not b = false` means `b = true`. -/
theorem Bool.true_of_not {b : Bool} (h : Eq (not b) Bool.false) : Eq b Bool.true :=
  Bool.split (C := fun c => Eq (not c) Bool.false → Eq c Bool.true) b
    (fun _ h' => absurdTF h') (fun _ _ => rfl) h

noncomputable section

/-- Disjunction, impredicatively: whatever follows from `a` and from `b` holds. (An
inductive `Or` would need the compiler marker `lcErased`, which only the core may
declare; this encoding needs nothing.) Only `exactValue`'s reward ∈ {0, 1} states one. -/
def Or (a b : Prop) : Prop := (C : Prop) → (a → C) → (b → C) → C

/-- The left case of a disjunction. -/
theorem Or.inl {a b : Prop} (h : a) : Or a b := fun _ l _ => l h

/-- The right case of a disjunction. -/
theorem Or.inr {a b : Prop} (h : b) : Or a b := fun _ _ r => r h

end
