prelude
import TBMM.Verdict
import TBMM.Lemmas.Rat
/-!
# TBMM.Meaning — what the comparators, the gate forms and the verdict assembly mean

A certificate proves `Eq (checker …) true`, so it says what the checker means and no
more. These theorems, for all inputs and without axioms, pin that meaning:

* the Boolean connectives and equality tests say what their names say
  (`beq … = true` exactly when the values are equal, for `Nat`, `Int`, statuses, flags
  and flag lists: a certificate's check lemma compares flag lists);
* each comparison operator and each of the six gate forms (and `agree`) is its
  mathematical statement, stated per shape of its optional bounds in terms of the order
  `Rat.le` (whose own properties are proved in `TBMM.Lemmas.Rat`);
* a missing input is never scored (a check with a missing input makes the metrics it
  protects unverifiable, `Verdict.value` is absent for an unverifiable metric,
  `Reward.score` of an absent value is 0), a failing or non-number instance makes the
  verdict infeasible, and `Verdict.is v f o r = true` gives `v`'s fields exactly.

Each is a guard: `python -m tbmm.lean.mutations` gives a definition a wrong meaning and
checks that building or auditing the library refuses it. Most proofs are a case split
and `rfl`, so they cost the build little.
-/

set_option genCtorIdx false

/-! ## Connectives -/

/-- `and a b = true` gives `a = true`. -/
theorem and_left {a b : Bool} (h : Eq (and a b) Bool.true) : Eq a Bool.true :=
  Bool.casesOn (motive := fun a => Eq (and a b) Bool.true → Eq a Bool.true) a
    (fun h => absurdFT h) (fun _ => rfl) h

/-- `and a b = true` gives `b = true`. -/
theorem and_right {a b : Bool} (h : Eq (and a b) Bool.true) : Eq b Bool.true :=
  Bool.casesOn (motive := fun a => Eq (and a b) Bool.true → Eq b Bool.true) a
    (fun h => absurdFT h) (fun h => h) h

/-- Both true make `and` true. -/
theorem and_intro {a b : Bool} (ha : Eq a Bool.true) (hb : Eq b Bool.true) :
    Eq (and a b) Bool.true :=
  Eq.subst (P := fun x => Eq (and x b) Bool.true) (Eq.symm ha) hb

/-- `or` is true when its left side is. -/
theorem or_inl (b : Bool) : Eq (or Bool.true b) Bool.true := rfl

/-- `or false b` is `b`. -/
theorem or_false (b : Bool) : Eq (or Bool.false b) b := rfl

/-- `not` swaps the two values. -/
theorem not_true : Eq (not Bool.true) Bool.false := rfl

/-- `not` swaps the two values. -/
theorem not_false : Eq (not Bool.false) Bool.true := rfl

/-! ## Equality tests: `beq x y = true` exactly when `x = y` -/

namespace Nat

/-- Every natural equals itself. -/
theorem beq_refl (n : Nat) : Eq (Nat.beq n n) Bool.true :=
  Nat.rec (motive := fun n => Eq (Nat.beq n n) Bool.true) rfl (fun _ ih => ih) n

/-- Equal naturals test equal. -/
theorem beq_of_eq {n m : Nat} (h : Eq n m) : Eq (Nat.beq n m) Bool.true :=
  Eq.subst (P := fun x => Eq (Nat.beq n x) Bool.true) h (beq_refl n)

/-- `n ≤ n + k`: with `sub_add_cancel`, `ble n m = true` exactly when `m = n + k` for some
`k`. -/
theorem ble_add (n k : Nat) : Eq (Nat.ble n (Nat.add n k)) Bool.true :=
  Nat.rec (motive := fun n => Eq (Nat.ble n (Nat.add n k)) Bool.true) rfl
    (fun n ih => Eq.subst (P := fun x => Eq (Nat.ble (Nat.succ n) x) Bool.true)
      (Eq.symm (Nat.succ_add n k)) ih) n

/-- `succ n ≤ n` never holds. -/
theorem ble_succ_self (n : Nat) : Eq (Nat.ble (Nat.succ n) n) Bool.false :=
  Nat.rec (motive := fun n => Eq (Nat.ble (Nat.succ n) n) Bool.false) rfl (fun _ ih => ih) n

end Nat

namespace Int

/-- Every integer equals itself. -/
theorem beq_refl (a : Int) : Eq (Int.beq a a) Bool.true :=
  Int.casesOn (motive := fun a => Eq (Int.beq a a) Bool.true) a
    (fun n => Nat.beq_refl n) (fun n => Nat.beq_refl n)

/-- Equal integers test equal. -/
theorem beq_of_eq {a b : Int} (h : Eq a b) : Eq (Int.beq a b) Bool.true :=
  Eq.subst (P := fun x => Eq (Int.beq a x) Bool.true) h (beq_refl a)

/-- On integers, `≤` is the order of the naturals on `ofNat`… -/
theorem ble_ofNat (m n : Nat) : Eq (Int.ble (Int.ofNat m) (Int.ofNat n)) (Nat.ble m n) := rfl

/-- …every negative number is below every natural… -/
theorem ble_negSucc_ofNat (m n : Nat) : Eq (Int.ble (Int.negSucc m) (Int.ofNat n)) Bool.true :=
  rfl

/-- …and no natural is below a negative number… -/
theorem ble_ofNat_negSucc (m n : Nat) : Eq (Int.ble (Int.ofNat m) (Int.negSucc n)) Bool.false :=
  rfl

/-- …and `-(m+1) ≤ -(n+1)` exactly when `n ≤ m`. -/
theorem ble_negSucc (m n : Nat) : Eq (Int.ble (Int.negSucc m) (Int.negSucc n)) (Nat.ble n m) :=
  rfl

/-- Integers that test equal are equal. -/
theorem eq_of_beq {a b : Int} (h : Eq (Int.beq a b) Bool.true) : Eq a b :=
  Int.casesOn (motive := fun a => Eq (Int.beq a b) Bool.true → Eq a b) a
    (fun m => Int.casesOn (motive := fun b => Eq (Int.beq (Int.ofNat m) b) Bool.true →
        Eq (Int.ofNat m) b) b
      (fun _ h => congrArg Int.ofNat (Nat.eq_of_beq h)) (fun _ h => absurdFT h))
    (fun m => Int.casesOn (motive := fun b => Eq (Int.beq (Int.negSucc m) b) Bool.true →
        Eq (Int.negSucc m) b) b
      (fun _ h => absurdFT h) (fun _ h => congrArg Int.negSucc (Nat.eq_of_beq h)))
    h

end Int

namespace Status

/-- The status numbered `n` by `code` (`noList` past the end). -/
noncomputable def ofCode (n : Nat) : Status :=
  Nat.casesOn n Status.pass (fun n => Nat.casesOn n Status.fail (fun n =>
    Nat.casesOn n Status.bad (fun n => Nat.casesOn n Status.missing (fun _ => Status.noList))))

/-- `code` loses nothing: `ofCode` reads every status back. -/
theorem ofCode_code (s : Status) : Eq (ofCode (code s)) s :=
  Status.casesOn (motive := fun s => Eq (ofCode (code s)) s) s rfl rfl rfl rfl rfl

/-- Statuses that test equal are equal. -/
theorem eq_of_beq {a b : Status} (h : Eq (Status.beq a b) Bool.true) : Eq a b :=
  Eq.trans (Eq.symm (ofCode_code a))
    (Eq.trans (congrArg ofCode (Nat.eq_of_beq h)) (ofCode_code b))

/-- Every status equals itself. -/
theorem beq_refl (s : Status) : Eq (Status.beq s s) Bool.true := Nat.beq_refl (code s)

end Status

namespace Flag

/-- Flags that test equal are equal (same instance, same status). -/
theorem eq_of_beq {a b : Flag} (h : Eq (Flag.beq a b) Bool.true) : Eq a b :=
  Flag.casesOn (motive := fun a => Eq (Flag.beq a b) Bool.true → Eq a b) a
    (fun i s => Flag.casesOn (motive := fun b => Eq (Flag.beq (Flag.mk i s) b) Bool.true →
        Eq (Flag.mk i s) b) b
      (fun j t h => congr2 Flag.mk (Nat.eq_of_beq (and_left h))
        (Status.eq_of_beq (and_right h))))
    h

/-- Every flag equals itself. -/
theorem beq_refl (f : Flag) : Eq (Flag.beq f f) Bool.true :=
  and_intro (Nat.beq_refl (Flag.index f)) (Status.beq_refl (Flag.status f))

/-- Flag lists that test equal are equal: same flags, same order, same length (a check
lemma's expected flags are exactly the kernel's). -/
theorem eq_of_listBeq {xs ys : List Flag} (h : Eq (Flag.listBeq xs ys) Bool.true) : Eq xs ys :=
  List.rec (motive := fun xs => (ys : List Flag) → Eq (Flag.listBeq xs ys) Bool.true → Eq xs ys)
    (fun ys => List.casesOn (motive := fun ys => Eq (Flag.listBeq List.nil ys) Bool.true →
        Eq List.nil ys) ys
      (fun _ => rfl) (fun _ _ h => absurdFT h))
    (fun x xt ih ys => List.casesOn (motive := fun ys =>
        Eq (Flag.listBeq (List.cons x xt) ys) Bool.true → Eq (List.cons x xt) ys) ys
      (fun h => absurdFT h)
      (fun y yt h => congr2 List.cons (eq_of_beq (and_left h)) (ih yt (and_right h))))
    xs ys h

/-- Every flag list equals itself. -/
theorem listBeq_refl (xs : List Flag) : Eq (Flag.listBeq xs xs) Bool.true :=
  List.rec (motive := fun xs => Eq (Flag.listBeq xs xs) Bool.true) rfl
    (fun x _ ih => and_intro (beq_refl x) ih) xs

end Flag

namespace Nat

/-- `≤` on naturals is antisymmetric. -/
theorem eq_of_ble_ble {m n : Nat} (h₁ : Eq (Nat.ble m n) Bool.true)
    (h₂ : Eq (Nat.ble n m) Bool.true) : Eq m n :=
  Nat.rec (motive := fun m => (n : Nat) → Eq (Nat.ble m n) Bool.true →
      Eq (Nat.ble n m) Bool.true → Eq m n)
    (fun n _ h₂ => Nat.casesOn (motive := fun n => Eq (Nat.ble n 0) Bool.true → Eq 0 n) n
      (fun _ => rfl) (fun _ h => absurdFT h) h₂)
    (fun m ih n h₁ h₂ => Nat.casesOn (motive := fun n => Eq (Nat.ble (Nat.succ m) n) Bool.true →
        Eq (Nat.ble n (Nat.succ m)) Bool.true → Eq (Nat.succ m) n) n
      (fun h _ => absurdFT h) (fun n h₁ h₂ => congrArg Nat.succ (ih n h₁ h₂)) h₁ h₂)
    m n h₁ h₂

end Nat

namespace Int

/-- `≤` on integers is antisymmetric. -/
theorem eq_of_ble_ble {a b : Int} (h₁ : Eq (Int.ble a b) Bool.true)
    (h₂ : Eq (Int.ble b a) Bool.true) : Eq a b :=
  Int.casesOn (motive := fun a => Eq (Int.ble a b) Bool.true → Eq (Int.ble b a) Bool.true →
      Eq a b) a
    (fun m => Int.casesOn (motive := fun b => Eq (Int.ble (Int.ofNat m) b) Bool.true →
        Eq (Int.ble b (Int.ofNat m)) Bool.true → Eq (Int.ofNat m) b) b
      (fun _ h₁ h₂ => congrArg Int.ofNat (Nat.eq_of_ble_ble h₁ h₂)) (fun _ h _ => absurdFT h))
    (fun m => Int.casesOn (motive := fun b => Eq (Int.ble (Int.negSucc m) b) Bool.true →
        Eq (Int.ble b (Int.negSucc m)) Bool.true → Eq (Int.negSucc m) b) b
      (fun _ _ h => absurdFT h)
      (fun _ h₁ h₂ => congrArg Int.negSucc (Nat.eq_of_ble_ble h₂ h₁)))
    h₁ h₂

end Int

namespace Rat

/-- Equal rationals are ordered both ways: `beq` implies `≤`. -/
theorem le_of_beq {p q : Rat} (h : Eq (Rat.beq p q) Bool.true) : Eq (Rat.le p q) Bool.true :=
  Eq.subst (P := fun y => Eq (Int.ble (Int.mul p.num (Int.ofNat q.den)) y) Bool.true)
    (Int.eq_of_beq h) (Int.ble_refl _)

/-- `≤` both ways is equality of rationals: with `le_refl`, `le_trans` and `le_total`
(`TBMM.Lemmas.Rat`), `Rat.le` is a total order whose equivalence is `Rat.beq`. -/
theorem beq_of_le_le {p q : Rat} (h₁ : Eq (Rat.le p q) Bool.true)
    (h₂ : Eq (Rat.le q p) Bool.true) : Eq (Rat.beq p q) Bool.true :=
  Int.beq_of_eq (Int.eq_of_ble_ble h₁ h₂)

/-- `n/b ≤ m/d` for positive denominators `b`, `d` is `n·d ≤ m·b`: the order of the
rationals, on their numerators and (positive by construction) denominators. -/
theorem le_def (p q : Rat) :
    Eq (Rat.le p q)
      (Int.ble (Int.mul (Rat.num p) (Int.ofNat (Rat.den q))) (Int.mul (Rat.num q) (Int.ofNat (Rat.den p)))) :=
  rfl

/-- `n/b = m/d` is `n·d = m·b`: equality as numbers, not as representations. -/
theorem beq_def (p q : Rat) :
    Eq (Rat.beq p q)
      (Int.beq (Int.mul (Rat.num p) (Int.ofNat (Rat.den q))) (Int.mul (Rat.num q) (Int.ofNat (Rat.den p)))) :=
  rfl

/-- `p < q` is "not `q ≤ p`". -/
theorem lt_def (p q : Rat) : Eq (Rat.lt p q) (not (Rat.le q p)) := rfl

/-- Every denominator is positive. -/
theorem den_pos (q : Rat) : Eq (Nat.ble 1 (Rat.den q)) Bool.true := rfl

/-- On naturals, `Rat.le` is the order of the naturals. -/
theorem le_ofNat (a b : Nat) : Eq (Rat.le (Rat.ofNat a) (Rat.ofNat b)) (Nat.ble a b) :=
  congr2 Nat.ble (Nat.zero_add a) (Nat.zero_add b)

/-- On naturals, `Rat.beq` is equality of the naturals. -/
theorem beq_ofNat (a b : Nat) : Eq (Rat.beq (Rat.ofNat a) (Rat.ofNat b)) (Nat.beq a b) :=
  congr2 Nat.beq (Nat.zero_add a) (Nat.zero_add b)

/-- `0 < 1`, so neither `Rat.le` nor `Rat.lt` is constant. -/
theorem zero_lt_one : Eq (Rat.lt Rat.zero Rat.one) Bool.true := rfl

end Rat

/-! ## The comparison operators and the gate forms, as their mathematical statements -/

namespace Cmp

/-- `x ≥ c` is `c ≤ x`. -/
theorem eval_ge (x c : Rat) : Eq (Cmp.eval Cmp.ge x c) (Rat.le c x) := rfl

/-- `x ≤ c`. -/
theorem eval_le (x c : Rat) : Eq (Cmp.eval Cmp.le x c) (Rat.le x c) := rfl

/-- `x > c` is `c < x`, and `c < x` is "not `x ≤ c`". -/
theorem eval_gt (x c : Rat) : Eq (Cmp.eval Cmp.gt x c) (not (Rat.le x c)) := rfl

/-- `x < c` is "not `c ≤ x`". -/
theorem eval_lt (x c : Rat) : Eq (Cmp.eval Cmp.lt x c) (not (Rat.le c x)) := rfl

end Cmp

/-- An absent bound imposes nothing. -/
theorem Option.allOr_none {α : Type} (test : α → Bool) :
    Eq (Option.allOr Option.none test) Bool.true := rfl

/-- A present bound is tested. -/
theorem Option.allOr_some {α : Type} (a : α) (test : α → Bool) :
    Eq (Option.allOr (Option.some a) test) (test a) := rfl

/-- The empty sum is 0; a sum is its head plus the sum of its tail. -/
theorem Rat.sum_nil : Eq (Rat.sum List.nil) Rat.zero := rfl

/-- The sum of `x :: xs` is `x + Σ xs`. -/
theorem Rat.sum_cons (x : Rat) (xs : List Rat) :
    Eq (Rat.sum (List.cons x xs)) (Rat.add x (Rat.sum xs)) := rfl

/-- The empty product is 1. -/
theorem Rat.prod_nil : Eq (Rat.prod List.nil) Rat.one := rfl

/-- The product of `x :: xs` is `x · Π xs`. -/
theorem Rat.prod_cons (x : Rat) (xs : List Rat) :
    Eq (Rat.prod (List.cons x xs)) (Rat.mul x (Rat.prod xs)) := rfl

namespace Forms

/-- Form 1 with both bounds: `lo ≤ x ∧ x ≤ hi`. -/
theorem interval_both (x lo hi : Rat) :
    Eq (interval x (Option.some lo) (Option.some hi)) (and (Rat.le lo x) (Rat.le x hi)) := rfl

/-- Form 1 with a lower bound only: `lo ≤ x`. -/
theorem interval_lo (x lo : Rat) :
    Eq (interval x (Option.some lo) Option.none) (Rat.le lo x) :=
  Bool.casesOn (motive := fun b => Eq (and b Bool.true) b) (Rat.le lo x) rfl rfl

/-- Form 1 with an upper bound only: `x ≤ hi`. -/
theorem interval_hi (x hi : Rat) : Eq (interval x Option.none (Option.some hi)) (Rat.le x hi) :=
  rfl

/-- Form 1 without bounds holds. -/
theorem interval_none (x : Rat) : Eq (interval x Option.none Option.none) Bool.true := rfl

/-- Form 2 without a bound: `x` is a non-negative integer. -/
theorem count_none (x : Rat) :
    Eq (count x Option.none) (and (Rat.isInt x) (Rat.le Rat.zero x)) :=
  congrArg (and (Rat.isInt x))
    (Bool.casesOn (motive := fun b => Eq (and b Bool.true) b) (Rat.le Rat.zero x) rfl rfl)

/-- Form 2 with a bound: a non-negative integer at most `hi`. -/
theorem count_some (x hi : Rat) :
    Eq (count x (Option.some hi))
      (and (Rat.isInt x) (and (Rat.le Rat.zero x) (Rat.le x hi))) := rfl

/-- `q` is an integer when its denominator divides its numerator. -/
theorem isInt_def (q : Rat) :
    Eq (Rat.isInt q) (Nat.beq (Nat.mod (Int.natAbs (Rat.num q)) (Rat.den q)) 0) := rfl

/-- Form 3: `|Σ xs − total| ≤ tol`. -/
theorem sumTo_def (xs : List Rat) (total tol : Rat) :
    Eq (sumTo xs total tol) (Rat.le (Rat.abs (Rat.sub (Rat.sum xs) total)) tol) := rfl

/-- Form 4, non-strict: `Σ lhs ≤ Σ rhs + slack`. -/
theorem order_le (lhs rhs : List Rat) (slack : Rat) :
    Eq (order lhs rhs Bool.false slack) (Rat.le (Rat.sum lhs) (Rat.add (Rat.sum rhs) slack)) :=
  rfl

/-- Form 4, strict: `Σ lhs < Σ rhs + slack`, i.e. not `Σ rhs + slack ≤ Σ lhs`. -/
theorem order_lt (lhs rhs : List Rat) (slack : Rat) :
    Eq (order lhs rhs Bool.true slack)
      (not (Rat.le (Rat.add (Rat.sum rhs) slack) (Rat.sum lhs))) := rfl

/-- Form 5: `x ≥ c`. -/
theorem threshold_ge (x c : Rat) : Eq (threshold x Cmp.ge c) (Rat.le c x) := rfl

/-- Form 5: `x ≤ c`. -/
theorem threshold_le (x c : Rat) : Eq (threshold x Cmp.le c) (Rat.le x c) := rfl

/-- Form 5: `x > c`. -/
theorem threshold_gt (x c : Rat) : Eq (threshold x Cmp.gt c) (not (Rat.le x c)) := rfl

/-- Form 5: `x < c`. -/
theorem threshold_lt (x c : Rat) : Eq (threshold x Cmp.lt c) (not (Rat.le c x)) := rfl

/-- Form 6: `coef · Π factors op bound`. -/
theorem product_def (factors : List Rat) (coef : Rat) (op : Cmp) (bound : Rat) :
    Eq (product factors coef op bound) (Cmp.eval op (Rat.mul coef (Rat.prod factors)) bound) :=
  rfl

/-- Replay agreement: `|x − y| ≤ tol + relTol · |y|`. -/
theorem agree_def (x y tol relTol : Rat) :
    Eq (agree x y tol relTol)
      (Rat.le (Rat.abs (Rat.sub x y)) (Rat.add tol (Rat.mul relTol (Rat.abs y)))) := rfl

end Forms

/-! ## Missing inputs, infeasibility and the verdict -/

namespace Verdict

/-- A metric made unverifiable (a check protecting it had a missing input) is not scored
on the artifact's value: its value is absent. -/
theorem value_unverifiable {art : Json} {unv : List Nat} {k : Nat} (m : Metric)
    (h : Eq (List.memNat k unv) Bool.true) : Eq (value art unv k m) Option.none :=
  congrArg (fun c => cond c Option.none
    (Lookup.toOption (Json.lookup (Json.at (Metric.path m) art)))) h

/-- `memNat k xs` holds when `k` heads the list… -/
theorem memNat_head (k : Nat) (xs : List Nat) : Eq (List.memNat k (List.cons k xs)) Bool.true :=
  congrArg (fun b => or b (List.memNat k xs)) (Nat.beq_refl k)

/-- …or is in its tail, -/
theorem memNat_tail {k : Nat} {xs : List Nat} (y : Nat) (h : Eq (List.memNat k xs) Bool.true) :
    Eq (List.memNat k (List.cons y xs)) Bool.true :=
  Bool.casesOn (motive := fun b => Eq (or b (List.memNat k xs)) Bool.true) (Nat.beq k y) h rfl

/-- …and never in the empty list. -/
theorem memNat_nil (k : Nat) : Eq (List.memNat k List.nil) Bool.false := rfl

/-- A check with a missing input makes every metric it protects unverifiable. -/
theorem unverifiable_missing (e : GateEntry) (es : List GateEntry) (ms : List Metric)
    (ps : List (List PaperValue)) (ls : List MinItems) (i : Nat) (rest : List Flag)
    (ft : List (List Flag)) :
    Eq (unverifiable (Task.mk (List.cons e es) ms ps ls)
        (List.cons (List.cons (Flag.mk i Status.missing) rest) ft))
      (List.append (GateEntry.protects e) (unverifiable (Task.mk es ms ps ls) ft)) := rfl

/-- So does a check whose wildcard list is missing or empty. -/
theorem unverifiable_noList (e : GateEntry) (es : List GateEntry) (ms : List Metric)
    (ps : List (List PaperValue)) (ls : List MinItems) (i : Nat) (rest : List Flag)
    (ft : List (List Flag)) :
    Eq (unverifiable (Task.mk (List.cons e es) ms ps ls)
        (List.cons (List.cons (Flag.mk i Status.noList) rest) ft))
      (List.append (GateEntry.protects e) (unverifiable (Task.mk es ms ps ls) ft)) := rfl

/-- An absent value scores 0, whatever the direction, domain, anchor and band. -/
theorem score_none (dir : Direction) (dom : Domain) (anchor band : Rat) :
    Eq (Reward.score dir dom Option.none anchor band) Rat.zero := rfl

/-- A failed instance anywhere in a check's flags makes the checks infeasible. -/
theorem feasibleOf_fail (i : Nat) (rest : List Flag) (earlier later : List (List Flag)) :
    Eq (feasibleOf (List.append earlier (List.cons (List.cons (Flag.mk i Status.fail) rest) later)))
      Bool.false :=
  List.rec (motive := fun e => Eq (feasibleOf
      (List.append e (List.cons (List.cons (Flag.mk i Status.fail) rest) later))) Bool.false)
    rfl
    (fun f ft ih => Bool.casesOn (motive := fun b =>
        Eq (not (List.any (List.any (fun f => Status.fails (Flag.status f)))
          (List.append ft (List.cons (List.cons (Flag.mk i Status.fail) rest) later)))) Bool.false →
        Eq (not (or b (List.any (List.any (fun f => Status.fails (Flag.status f)))
          (List.append ft (List.cons (List.cons (Flag.mk i Status.fail) rest) later))))) Bool.false)
      (List.any (fun f => Status.fails (Flag.status f)) f) (fun h => h) (fun _ => rfl) ih)
    earlier

/-- A non-number (`bad`) instance makes the checks infeasible too. -/
theorem feasibleOf_bad (i : Nat) (rest : List Flag) (later : List (List Flag)) :
    Eq (feasibleOf (List.cons (List.cons (Flag.mk i Status.bad) rest) later)) Bool.false := rfl

/-- No flags, no failure: feasible. -/
theorem feasibleOf_nil : Eq (feasibleOf List.nil) Bool.true := rfl

/-- The verdict is feasible exactly when neither the checks nor the declared lists fail. -/
theorem given_feasible (t : Task) (art : Json) (fs ls : List (List Flag)) (o f : Rat) :
    Eq (Verdict.feasible (given t art fs ls o f)) (and (feasibleOf fs) (feasibleOf ls)) := rfl

/-- `Verdict.is v f o r = true` gives the feasibility `f`. -/
theorem is_feasible {v : Verdict} {f : Bool} {o r : Rat} (h : Eq (is v f o r) Bool.true) :
    Eq (Verdict.feasible v) f :=
  Bool.casesOn (motive := fun a => Eq (Nat.beq (cond a 1 0) (cond f 1 0)) Bool.true → Eq a f)
    (Verdict.feasible v)
    (Bool.casesOn (motive := fun b => Eq (Nat.beq (cond Bool.false 1 0) (cond b 1 0)) Bool.true →
        Eq Bool.false b) f (fun _ => rfl) (fun h => absurdFT h))
    (Bool.casesOn (motive := fun b => Eq (Nat.beq (cond Bool.true 1 0) (cond b 1 0)) Bool.true →
        Eq Bool.true b) f (fun h => absurdFT h) (fun _ => rfl))
    (and_left h)

/-- `Verdict.is v f o r = true` gives O-Eval equal to `o` (as a rational number). -/
theorem is_oEval {v : Verdict} {f : Bool} {o r : Rat} (h : Eq (is v f o r) Bool.true) :
    Eq (Rat.beq (Verdict.oEval v) o) Bool.true :=
  and_left (and_right h)

/-- `Verdict.is v f o r = true` gives Robust BO-Eval equal to `r`. -/
theorem is_robustBo {v : Verdict} {f : Bool} {o r : Rat} (h : Eq (is v f o r) Bool.true) :
    Eq (Rat.beq (Verdict.robustBo v) r) Bool.true :=
  and_right (and_right h)

/-- Conversely, a verdict is what its fields are. -/
theorem is_of {v : Verdict} {o r : Rat} (ho : Eq (Rat.beq (Verdict.oEval v) o) Bool.true)
    (hr : Eq (Rat.beq (Verdict.robustBo v) r) Bool.true) :
    Eq (is v (Verdict.feasible v) o r) Bool.true :=
  and_intro (Nat.beq_refl _) (and_intro ho hr)

end Verdict
