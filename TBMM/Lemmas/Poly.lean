prelude
import TBMM.Lemmas.Nat
/-!
# TBMM.Lemmas.Poly — a normaliser for commutative-semiring identities on `Nat`

Proof by reflection, so that no later proof rearranges sums and products by hand. An
expression `NExpr` (variables, 0, 1, `+`, `·`) is evaluated in an environment (a list
of naturals), and normalised to a polynomial: a list of monomials, each a list of
variable indices, both kept sorted by insertion. `NExpr.eq` then proves
`eval env a = eval env b` from `beqP (norm a) (norm b) = true`, which the kernel checks by
computing and comparing both normal forms (`rfl`).

Only soundness is proved — every operation on normal forms preserves the value
(`evalP_addP`, `evalP_mulP`, …) — never that normal forms are unique: the sorting
order is irrelevant to soundness, and a failed `rfl` only means a proof attempt is
rejected, never that something false is accepted.
-/

set_option genCtorIdx false

noncomputable section

namespace Poly

/-- `xs[i]`, or 0 past the end: the value of variable `i`. -/
def getD (xs : List Nat) (i : Nat) : Nat :=
  List.rec (motive := fun _ => Nat → Nat) (fun _ => 0)
    (fun a _ f i => Nat.casesOn (motive := fun _ => Nat) i a f) xs i

/-- A monomial's value: the product of its variables (variable `i` is `env i`). -/
def evalM (env : Nat → Nat) (m : List Nat) : Nat :=
  List.foldr (fun i acc => Nat.mul (env i) acc) 1 m

/-- A polynomial's value: the sum of its monomials. -/
def evalP (env : Nat → Nat) (p : List (List Nat)) : Nat :=
  List.foldr (fun m acc => Nat.add (evalM env m) acc) 0 p

/-- Insert a variable into a monomial, before the first index it does not exceed. -/
def insertM (i : Nat) (m : List Nat) : List Nat :=
  List.rec (motive := fun _ => List Nat) (List.cons i List.nil)
    (fun j m' r => cond (Nat.ble i j) (List.cons i (List.cons j m')) (List.cons j r)) m

/-- Product of monomials. -/
def mulM (m₁ m₂ : List Nat) : List Nat := List.foldr insertM m₂ m₁

/-- Lexicographic order on monomials (the order of the sorted polynomial). -/
def monoLe (m₁ m₂ : List Nat) : Bool :=
  List.rec (motive := fun _ => List Nat → Bool) (fun _ => Bool.true)
    (fun i _ r m₂ => List.casesOn (motive := fun _ => Bool) m₂ Bool.false
      (fun j m₂' => cond (Nat.beq i j) (r m₂') (Nat.ble i j)))
    m₁ m₂

/-- Insert a monomial into a polynomial. -/
def insertP (m : List Nat) (p : List (List Nat)) : List (List Nat) :=
  List.rec (motive := fun _ => List (List Nat)) (List.cons m List.nil)
    (fun m' p' r => cond (monoLe m m') (List.cons m (List.cons m' p')) (List.cons m' r)) p

/-- Sum of polynomials. -/
def addP (p q : List (List Nat)) : List (List Nat) := List.foldr insertP q p

/-- A monomial times a polynomial. -/
def scaleP (m : List Nat) (q : List (List Nat)) : List (List Nat) :=
  List.foldr (fun m₂ acc => insertP (mulM m m₂) acc) List.nil q

/-- Product of polynomials. -/
def mulP (p q : List (List Nat)) : List (List Nat) :=
  List.foldr (fun m acc => addP (scaleP m q) acc) List.nil p

/-! Normal forms compared by a Boolean function: a reflection proof passes
`rfl : beqP p q = true`, which both the elaborator and the kernel settle by plain
evaluation. (Passing `rfl : p = q` instead let the elaborator's unifier try the two sides'
arguments against each other before evaluating them; `Lemmas.Rat` took twice as long.) -/

/-- `and a b = true` gives `a = true`. -/
theorem and_left {a b : Bool} (h : Eq (and a b) Bool.true) : Eq a Bool.true :=
  Bool.casesOn (motive := fun a => Eq (and a b) Bool.true → Eq a Bool.true) a
    (fun h => absurdFT h) (fun _ => rfl) h

/-- `and a b = true` gives `b = true`. -/
theorem and_right {a b : Bool} (h : Eq (and a b) Bool.true) : Eq b Bool.true :=
  Bool.casesOn (motive := fun a => Eq (and a b) Bool.true → Eq b Bool.true) a
    (fun h => absurdFT h) (fun h => h) h

/-- Monomials compared entry by entry. -/
def beqM (a b : List Nat) : Bool :=
  List.rec (motive := fun _ => List Nat → Bool)
    (fun ys => List.casesOn (motive := fun _ => Bool) ys Bool.true (fun _ _ => Bool.false))
    (fun x _ r ys => List.casesOn (motive := fun _ => Bool) ys Bool.false
      (fun y ys' => and (Nat.beq x y) (r ys'))) a b

/-- Polynomials compared monomial by monomial. -/
def beqP (a b : List (List Nat)) : Bool :=
  List.rec (motive := fun _ => List (List Nat) → Bool)
    (fun ys => List.casesOn (motive := fun _ => Bool) ys Bool.true (fun _ _ => Bool.false))
    (fun x _ r ys => List.casesOn (motive := fun _ => Bool) ys Bool.false
      (fun y ys' => and (beqM x y) (r ys'))) a b

/-- Monomials that test equal are equal. -/
theorem eq_of_beqM {xs ys : List Nat} (h : Eq (beqM xs ys) Bool.true) : Eq xs ys :=
  List.rec (motive := fun xs => (ys : List Nat) → Eq (beqM xs ys) Bool.true → Eq xs ys)
    (fun ys => List.casesOn (motive := fun ys => Eq (beqM List.nil ys) Bool.true →
        Eq List.nil ys) ys
      (fun _ => rfl) (fun _ _ h => absurdFT h))
    (fun x xt ih ys => List.casesOn (motive := fun ys =>
        Eq (beqM (List.cons x xt) ys) Bool.true → Eq (List.cons x xt) ys) ys
      (fun h => absurdFT h)
      (fun _ yt h => congr2 List.cons (Nat.eq_of_beq (and_left h)) (ih yt (and_right h))))
    xs ys h

/-- Polynomials that test equal are equal. -/
theorem eq_of_beqP {xs ys : List (List Nat)} (h : Eq (beqP xs ys) Bool.true) : Eq xs ys :=
  List.rec (motive := fun xs => (ys : List (List Nat)) → Eq (beqP xs ys) Bool.true → Eq xs ys)
    (fun ys => List.casesOn (motive := fun ys => Eq (beqP List.nil ys) Bool.true →
        Eq List.nil ys) ys
      (fun _ => rfl) (fun _ _ h => absurdFT h))
    (fun x xt ih ys => List.casesOn (motive := fun ys =>
        Eq (beqP (List.cons x xt) ys) Bool.true → Eq (List.cons x xt) ys) ys
      (fun h => absurdFT h)
      (fun _ yt h => congr2 List.cons (eq_of_beqM (and_left h)) (ih yt (and_right h))))
    xs ys h

/-! Each operation preserves the value. -/

theorem evalM_insertM (env : Nat → Nat) (i : Nat) (m : List Nat) :
    Eq (evalM env (insertM i m)) (Nat.mul (env i) (evalM env m)) :=
  List.rec (motive := fun m => Eq (evalM env (insertM i m)) (Nat.mul (env i) (evalM env m)))
    rfl
    (fun j m' ih =>
      Bool.split (C := fun c => Eq (evalM env (cond c (List.cons i (List.cons j m'))
          (List.cons j (insertM i m')))) (Nat.mul (env i) (evalM env (List.cons j m'))))
        (Nat.ble i j)
        (fun _ => Eq.trans (congrArg (Nat.mul (env j)) ih)
          (Nat.mul_left_comm (env j) (env i) (evalM env m')))
        (fun _ => rfl))
    m

theorem evalM_mulM (env : Nat → Nat) (m₁ m₂ : List Nat) :
    Eq (evalM env (mulM m₁ m₂)) (Nat.mul (evalM env m₁) (evalM env m₂)) :=
  List.rec (motive := fun m₁ => Eq (evalM env (mulM m₁ m₂)) (Nat.mul (evalM env m₁) (evalM env m₂)))
    (Eq.symm (Nat.one_mul (evalM env m₂)))
    (fun i m ih => Eq.trans (evalM_insertM env i (mulM m m₂))
      (Eq.trans (congrArg (Nat.mul (env i)) ih)
        (Eq.symm (Nat.mul_assoc (env i) (evalM env m) (evalM env m₂)))))
    m₁

theorem evalP_insertP (env : Nat → Nat) (m : List Nat) (p : List (List Nat)) :
    Eq (evalP env (insertP m p)) (Nat.add (evalM env m) (evalP env p)) :=
  List.rec (motive := fun p => Eq (evalP env (insertP m p)) (Nat.add (evalM env m) (evalP env p)))
    rfl
    (fun m' p' ih =>
      Bool.split (C := fun c => Eq (evalP env (cond c (List.cons m (List.cons m' p'))
          (List.cons m' (insertP m p')))) (Nat.add (evalM env m) (evalP env (List.cons m' p'))))
        (monoLe m m')
        (fun _ => Eq.trans (congrArg (Nat.add (evalM env m')) ih)
          (Nat.add_left_comm (evalM env m') (evalM env m) (evalP env p')))
        (fun _ => rfl))
    p

theorem evalP_addP (env : Nat → Nat) (p q : List (List Nat)) :
    Eq (evalP env (addP p q)) (Nat.add (evalP env p) (evalP env q)) :=
  List.rec (motive := fun p => Eq (evalP env (addP p q)) (Nat.add (evalP env p) (evalP env q)))
    (Eq.symm (Nat.zero_add (evalP env q)))
    (fun m p' ih => Eq.trans (evalP_insertP env m (addP p' q))
      (Eq.trans (congrArg (Nat.add (evalM env m)) ih)
        (Eq.symm (Nat.add_assoc (evalM env m) (evalP env p') (evalP env q)))))
    p

theorem evalP_scaleP (env : Nat → Nat) (m : List Nat) (q : List (List Nat)) :
    Eq (evalP env (scaleP m q)) (Nat.mul (evalM env m) (evalP env q)) :=
  List.rec (motive := fun q => Eq (evalP env (scaleP m q)) (Nat.mul (evalM env m) (evalP env q)))
    rfl
    (fun m₂ q' ih => Eq.trans (evalP_insertP env (mulM m m₂) (scaleP m q'))
      (Eq.trans (congr2 Nat.add (evalM_mulM env m m₂) ih)
        (Eq.symm (Nat.mul_add (evalM env m) (evalM env m₂) (evalP env q')))))
    q

theorem evalP_mulP (env : Nat → Nat) (p q : List (List Nat)) :
    Eq (evalP env (mulP p q)) (Nat.mul (evalP env p) (evalP env q)) :=
  List.rec (motive := fun p => Eq (evalP env (mulP p q)) (Nat.mul (evalP env p) (evalP env q)))
    (Eq.symm (Nat.zero_mul (evalP env q)))
    (fun m p' ih => Eq.trans (evalP_addP env (scaleP m q) (mulP p' q))
      (Eq.trans (congr2 Nat.add (evalP_scaleP env m q) ih)
        (Eq.symm (Nat.add_mul (evalM env m) (evalP env p') (evalP env q)))))
    p

end Poly

/-- Expressions of commutative-semiring arithmetic over variables `var i`. -/
inductive NExpr : Type
  | var (i : Nat)
  | zero
  | one
  | add (a b : NExpr)
  | mul (a b : NExpr)

namespace NExpr

/-- The value of an expression, variable `i` being `env[i]`. -/
def eval (env : List Nat) (e : NExpr) : Nat :=
  NExpr.rec (motive := fun _ => Nat) (fun i => Poly.getD env i) 0 1
    (fun _ _ a b => Nat.add a b) (fun _ _ a b => Nat.mul a b) e

/-- The normal form of an expression. -/
def norm (e : NExpr) : List (List Nat) :=
  NExpr.rec (motive := fun _ => List (List Nat))
    (fun i => List.cons (List.cons i List.nil) List.nil) List.nil
    (List.cons List.nil List.nil)
    (fun _ _ a b => Poly.addP a b) (fun _ _ a b => Poly.mulP a b) e

/-- Normalising preserves the value. -/
theorem norm_sound (env : List Nat) (e : NExpr) :
    Eq (eval env e) (Poly.evalP (Poly.getD env) (norm e)) :=
  NExpr.rec (motive := fun e => Eq (eval env e) (Poly.evalP (Poly.getD env) (norm e)))
    (fun i => Eq.symm (Nat.zero_add (Poly.getD env i)))
    rfl rfl
    (fun a b iha ihb => Eq.trans (congr2 Nat.add iha ihb)
      (Eq.symm (Poly.evalP_addP (Poly.getD env) (norm a) (norm b))))
    (fun a b iha ihb => Eq.trans (congr2 Nat.mul iha ihb)
      (Eq.symm (Poly.evalP_mulP (Poly.getD env) (norm a) (norm b))))
    e

/-- The ring identity `a = b` holds when both sides have the same normal form (checked by
the kernel: pass `rfl`). -/
theorem eq (env : List Nat) (a b : NExpr) (h : Eq (Poly.beqP (norm a) (norm b)) Bool.true) :
    Eq (eval env a) (eval env b) :=
  Eq.trans (norm_sound env a)
    (Eq.trans (congrArg (Poly.evalP (Poly.getD env)) (Poly.eq_of_beqP h))
      (Eq.symm (norm_sound env b)))

end NExpr

end
