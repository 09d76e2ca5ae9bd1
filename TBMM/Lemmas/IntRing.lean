prelude
import TBMM.Lemmas.Int
/-!
# TBMM.Lemmas.IntRing — ring identities and order on `Int` by reflection

`IExpr` describes an integer expression over atoms `atom i` (the `i`-th entry of an
environment `List Int`). `parts e` computes two `Nat` polynomials over the atoms' parts
(variable `2i` is `posPart` of atom `i`, `2i+1` its `negPart`) such that
`posPart (eval e) + neg = negPart (eval e) + pos` (`sound`). From there:

* `IExpr.eq`: `eval a = eval b` when `pos a + neg b` and `pos b + neg a` normalise to
  the same polynomial (checked by `rfl`);
* `IExpr.ble_congr`: `Int.ble (eval a) (eval b) = Int.ble (eval c) (eval d)` when
  `b − a` and `d − c` have the same normal form — how an inequality is rearranged.

The order lemmas at the end only need signs (`pos_mul` for a strictly positive product);
everything else is moved into place by
`ble_congr`: `a ≤ b ⟺ 0 ≤ b − a`, so transitivity is `nonneg_add`, monotonicity of
`· c` is `nonneg_mul`, and cancellation of a positive `c` is `nonneg_of_mul_pos`.
-/

set_option genCtorIdx false

noncomputable section

/-- Integer ring expressions over numbered atoms. -/
inductive IExpr : Type
  | atom (i : Nat)
  | zero
  | one
  | add (a b : IExpr)
  | mul (a b : IExpr)
  | neg (a : IExpr)

/-- The positive and negative part of an integer expression, as `Nat` polynomials. -/
structure IExpr.Parts where
  /-- Polynomial for the positive part. -/
  pos : List (List Nat)
  /-- Polynomial for the negative part. -/
  neg : List (List Nat)

namespace IExpr

/-- `2i`, by a recursion the elaborator unfolds without numeral arithmetic. -/
def dbl (i : Nat) : Nat := Nat.rec (motive := fun _ => Nat) 0 (fun _ r => Nat.succ (Nat.succ r)) i

/-- `env[i]`, or 0 past the end. -/
def getI (env : List Int) (i : Nat) : Int :=
  List.rec (motive := fun _ => Nat → Int) (fun _ => Int.ofNat 0)
    (fun a _ f i => Nat.casesOn (motive := fun _ => Int) i a f) env i

/-- The value of an expression. -/
def eval (env : List Int) (e : IExpr) : Int :=
  IExpr.rec (motive := fun _ => Int) (fun i => getI env i) (Int.ofNat 0) (Int.ofNat 1)
    (fun _ _ a b => Int.add a b) (fun _ _ a b => Int.mul a b) (fun _ a => Int.neg a) e

/-- The part polynomials, as formal differences: `(p, n) + (p', n') = (p + p', n + n')`,
`(p, n) · (p', n') = (pp' + nn', pn' + np')`, `−(p, n) = (n, p)`. -/
def parts (e : IExpr) : Parts :=
  IExpr.rec (motive := fun _ => Parts)
    (fun i => Parts.mk (List.cons (List.cons (dbl i) List.nil) List.nil)
      (List.cons (List.cons (Nat.succ (dbl i)) List.nil) List.nil))
    (Parts.mk List.nil List.nil)
    (Parts.mk (List.cons List.nil List.nil) List.nil)
    (fun _ _ a b => Parts.mk (Poly.addP a.pos b.pos) (Poly.addP a.neg b.neg))
    (fun _ _ a b => Parts.mk (Poly.addP (Poly.mulP a.pos b.pos) (Poly.mulP a.neg b.neg))
      (Poly.addP (Poly.mulP a.pos b.neg) (Poly.mulP a.neg b.pos)))
    (fun _ a => Parts.mk a.neg a.pos)
    e

end IExpr

/-! ## Decoding a part variable: `2i ↦ posPart`, `2i+1 ↦ negPart` of atom `i` -/

namespace IExpr

/-- Whether `v` is odd. -/
def parity (v : Nat) : Bool := Nat.rec (motive := fun _ => Bool) Bool.false (fun _ p => not p) v

/-- `⌊v/2⌋`. -/
def half (v : Nat) : Nat :=
  Nat.rec (motive := fun _ => Nat) 0 (fun k h => cond (parity k) (Nat.succ h) h) v

theorem parity_dbl (i : Nat) : Eq (parity (dbl i)) Bool.false :=
  Nat.rec (motive := fun i => Eq (parity (dbl i)) Bool.false) rfl
    (fun _ ih => congrArg (fun t => not (not t)) ih) i

theorem half_dbl (i : Nat) : Eq (half (dbl i)) i :=
  Nat.rec (motive := fun i => Eq (half (dbl i)) i) rfl
    (fun j ih => Eq.subst
      (P := fun t => Eq (cond (not t) (Nat.succ (cond t (Nat.succ (half (dbl j))) (half (dbl j))))
        (cond t (Nat.succ (half (dbl j))) (half (dbl j)))) (Nat.succ j))
      (Eq.symm (parity_dbl j)) (congrArg Nat.succ ih))
    i

theorem half_succ_dbl (i : Nat) : Eq (half (Nat.succ (dbl i))) i :=
  Eq.subst (P := fun t => Eq (cond t (Nat.succ (half (dbl i))) (half (dbl i))) i)
    (Eq.symm (parity_dbl i)) (half_dbl i)

/-- The environment of the part polynomials: variable `2i` is `posPart` of atom `i`,
`2i+1` its `negPart`. -/
def flat (env : List Int) (v : Nat) : Nat :=
  cond (parity v) (Int.negPart (getI env (half v))) (Int.posPart (getI env (half v)))

theorem flat_pos (env : List Int) (i : Nat) : Eq (flat env (dbl i)) (Int.posPart (getI env i)) :=
  Eq.trans
    (congrArg (fun t => cond t (Int.negPart (getI env (half (dbl i))))
      (Int.posPart (getI env (half (dbl i))))) (parity_dbl i))
    (congrArg (fun k => Int.posPart (getI env k)) (half_dbl i))

theorem flat_neg (env : List Int) (i : Nat) :
    Eq (flat env (Nat.succ (dbl i))) (Int.negPart (getI env i)) :=
  Eq.trans
    (congrArg (fun t => cond (not t) (Int.negPart (getI env (half (Nat.succ (dbl i)))))
      (Int.posPart (getI env (half (Nat.succ (dbl i)))))) (parity_dbl i))
    (congrArg (fun k => Int.negPart (getI env k)) (half_succ_dbl i))

/-! ## Soundness of the part polynomials -/

theorem evalP_addP_mulP (fe : Nat → Nat) (p₁ q₁ p₂ q₂ : List (List Nat)) :
    Eq (Poly.evalP fe (Poly.addP (Poly.mulP p₁ q₁) (Poly.mulP p₂ q₂)))
      (Nat.add (Nat.mul (Poly.evalP fe p₁) (Poly.evalP fe q₁))
        (Nat.mul (Poly.evalP fe p₂) (Poly.evalP fe q₂))) :=
  Eq.trans (Poly.evalP_addP fe (Poly.mulP p₁ q₁) (Poly.mulP p₂ q₂))
    (congr2 Nat.add (Poly.evalP_mulP fe p₁ q₁) (Poly.evalP_mulP fe p₂ q₂))

/-- `posPart (eval e) + N = negPart (eval e) + P`, with `P`, `N` the values of the part
polynomials: the parts are a formal difference equal to `eval e`. Each constructor case
adds the induction hypotheses to the matching `*_parts` lemma and cancels what both
sides share, the rearrangements being `NExpr.eq` identities. -/
theorem sound (env : List Int) (e : IExpr) :
    Eq (Nat.add (Int.posPart (eval env e)) (Poly.evalP (flat env) (parts e).neg))
      (Nat.add (Int.negPart (eval env e)) (Poly.evalP (flat env) (parts e).pos)) :=
  IExpr.rec (motive := fun e =>
      Eq (Nat.add (Int.posPart (eval env e)) (Poly.evalP (flat env) (parts e).neg))
        (Nat.add (Int.negPart (eval env e)) (Poly.evalP (flat env) (parts e).pos)))
    (fun i => Eq.trans
      (congrArg (fun x => Nat.add (Int.posPart (getI env i)) (Nat.add 0 x)) (flat_neg env i))
      (Eq.trans
        (NExpr.eq (List.cons (Int.posPart (getI env i)) (List.cons (Int.negPart (getI env i)) List.nil))
          (.add (.var 0) (.add .zero (.var 1))) (.add (.var 1) (.add .zero (.var 0))) rfl)
        (congrArg (fun x => Nat.add (Int.negPart (getI env i)) (Nat.add 0 x))
          (Eq.symm (flat_pos env i)))))
    rfl rfl
    (fun a b iha ihb =>
      let fe := flat env
      let PS := Int.posPart (Int.add (eval env a) (eval env b))
      let NS := Int.negPart (Int.add (eval env a) (eval env b))
      let Pa := Int.posPart (eval env a)
      let Na := Int.negPart (eval env a)
      let Pb := Int.posPart (eval env b)
      let Nb := Int.negPart (eval env b)
      let pa := Poly.evalP fe (parts a).pos
      let na := Poly.evalP fe (parts a).neg
      let pb := Poly.evalP fe (parts b).pos
      let nb := Poly.evalP fe (parts b).neg
      let env' := List.cons PS (List.cons NS (List.cons Pa (List.cons Na (List.cons Pb
        (List.cons Nb (List.cons pa (List.cons na (List.cons pb (List.cons nb List.nil)))))))))
      let K := Nat.add (Nat.add Pa Pb) (Nat.add Na Nb)
      let E := congr2 Nat.add (congr2 Nat.add iha ihb) (Int.add_parts (eval env a) (eval env b))
      let r₁ := NExpr.eq env'
        (.add (.add (.var 0) (.add (.var 7) (.var 9))) (.add (.add (.var 2) (.var 4)) (.add (.var 3) (.var 5))))
        (.add (.add (.add (.var 2) (.var 7)) (.add (.var 4) (.var 9))) (.add (.var 0) (.add (.var 3) (.var 5))))
        rfl
      let r₂ := NExpr.eq env'
        (.add (.add (.add (.var 3) (.var 6)) (.add (.var 5) (.var 8))) (.add (.var 1) (.add (.var 2) (.var 4))))
        (.add (.add (.var 1) (.add (.var 6) (.var 8))) (.add (.add (.var 2) (.var 4)) (.add (.var 3) (.var 5))))
        rfl
      let core : Eq (Nat.add PS (Nat.add na nb)) (Nat.add NS (Nat.add pa pb)) :=
        Nat.add_right_cancel K (Eq.trans r₁ (Eq.trans E r₂))
      Eq.trans (congrArg (Nat.add PS) (Poly.evalP_addP fe (parts a).neg (parts b).neg))
        (Eq.trans core (congrArg (Nat.add NS) (Eq.symm (Poly.evalP_addP fe (parts a).pos (parts b).pos)))))
    (fun a b iha ihb =>
      let fe := flat env
      let PS := Int.posPart (Int.mul (eval env a) (eval env b))
      let NS := Int.negPart (Int.mul (eval env a) (eval env b))
      let Pa := Int.posPart (eval env a)
      let Na := Int.negPart (eval env a)
      let Pb := Int.posPart (eval env b)
      let Nb := Int.negPart (eval env b)
      let pa := Poly.evalP fe (parts a).pos
      let na := Poly.evalP fe (parts a).neg
      let pb := Poly.evalP fe (parts b).pos
      let nb := Poly.evalP fe (parts b).neg
      let env' := List.cons PS (List.cons NS (List.cons Pa (List.cons Na (List.cons Pb
        (List.cons Nb (List.cons pa (List.cons na (List.cons pb (List.cons nb List.nil)))))))))
      let K := Nat.add (Nat.add (Nat.add (Nat.mul Pa Nb) (Nat.mul Na Pb))
          (Nat.add (Nat.mul Pa Pb) (Nat.mul na Pb)))
        (Nat.add (Nat.add (Nat.mul Na Nb) (Nat.mul pa Nb)) (Nat.add (Nat.mul pa Pb) (Nat.mul na Nb)))
      -- (PS, NS) ~ (Pa,Na)(Pb,Nb); (Pa,Na) ~ (pa,na) and (Pb,Nb) ~ (pb,nb), each scaled
      let E := congr2 Nat.add (congr2 Nat.add (congr2 Nat.add (congr2 Nat.add
        (Int.mul_parts (eval env a) (eval env b))
        (congrArg (fun t => Nat.mul t Pb) iha))
        (congrArg (fun t => Nat.mul t Nb) (Eq.symm iha)))
        (congrArg (Nat.mul pa) ihb))
        (congrArg (Nat.mul na) (Eq.symm ihb))
      let r₁ := NExpr.eq env'
        (.add (.add (.var 0) (.add (.mul (.var 6) (.var 9)) (.mul (.var 7) (.var 8)))) (.add (.add (.add (.mul (.var 2) (.var 5)) (.mul (.var 3) (.var 4))) (.add (.mul (.var 2) (.var 4)) (.mul (.var 7) (.var 4)))) (.add (.add (.mul (.var 3) (.var 5)) (.mul (.var 6) (.var 5))) (.add (.mul (.var 6) (.var 4)) (.mul (.var 7) (.var 5))))))
        (.add (.add (.add (.add (.add (.var 0) (.add (.mul (.var 2) (.var 5)) (.mul (.var 3) (.var 4)))) (.mul (.add (.var 2) (.var 7)) (.var 4))) (.mul (.add (.var 3) (.var 6)) (.var 5))) (.mul (.var 6) (.add (.var 4) (.var 9)))) (.mul (.var 7) (.add (.var 5) (.var 8))))
        rfl
      let r₂ := NExpr.eq env'
        (.add (.add (.add (.add (.add (.var 1) (.add (.mul (.var 2) (.var 4)) (.mul (.var 3) (.var 5)))) (.mul (.add (.var 3) (.var 6)) (.var 4))) (.mul (.add (.var 2) (.var 7)) (.var 5))) (.mul (.var 6) (.add (.var 5) (.var 8)))) (.mul (.var 7) (.add (.var 4) (.var 9))))
        (.add (.add (.var 1) (.add (.mul (.var 6) (.var 8)) (.mul (.var 7) (.var 9)))) (.add (.add (.add (.mul (.var 2) (.var 5)) (.mul (.var 3) (.var 4))) (.add (.mul (.var 2) (.var 4)) (.mul (.var 7) (.var 4)))) (.add (.add (.mul (.var 3) (.var 5)) (.mul (.var 6) (.var 5))) (.add (.mul (.var 6) (.var 4)) (.mul (.var 7) (.var 5))))))
        rfl
      let core : Eq (Nat.add PS (Nat.add (Nat.mul pa nb) (Nat.mul na pb)))
          (Nat.add NS (Nat.add (Nat.mul pa pb) (Nat.mul na nb))) :=
        Nat.add_right_cancel K (Eq.trans r₁ (Eq.trans E r₂))
      Eq.trans (congrArg (Nat.add PS) (evalP_addP_mulP fe (parts a).pos (parts b).neg (parts a).neg (parts b).pos))
        (Eq.trans core (congrArg (Nat.add NS)
          (Eq.symm (evalP_addP_mulP fe (parts a).pos (parts b).pos (parts a).neg (parts b).neg)))))
    (fun a iha => Eq.trans
      (congrArg (fun t => Nat.add t (Poly.evalP (flat env) (parts a).pos)) (Int.neg_posPart (eval env a)))
      (Eq.trans (Eq.symm iha)
        (congrArg (fun t => Nat.add t (Poly.evalP (flat env) (parts a).neg))
          (Eq.symm (Int.neg_negPart (eval env a))))))
    e

end IExpr

namespace IExpr

/-- An integer identity from an identity of normal forms: `a = b` when
`pos a + neg b` and `pos b + neg a` normalise alike (pass `rfl`). -/
theorem eq (env : List Int) (a b : IExpr)
    (hb : Eq (Poly.beqP (Poly.addP (parts a).pos (parts b).neg)
      (Poly.addP (parts b).pos (parts a).neg)) Bool.true) :
    Eq (eval env a) (eval env b) :=
  let h := Poly.eq_of_beqP hb
  let fe := flat env
  let PA := Int.posPart (eval env a)
  let NA := Int.negPart (eval env a)
  let PB := Int.posPart (eval env b)
  let NB := Int.negPart (eval env b)
  let pA := Poly.evalP fe (parts a).pos
  let nA := Poly.evalP fe (parts a).neg
  let pB := Poly.evalP fe (parts b).pos
  let nB := Poly.evalP fe (parts b).neg
  let env' := List.cons PA (List.cons NA (List.cons PB (List.cons NB
    (List.cons pA (List.cons nA (List.cons pB (List.cons nB List.nil)))))))
  let hh : Eq (Nat.add pA nB) (Nat.add pB nA) :=
    Eq.trans (Eq.symm (Poly.evalP_addP fe (parts a).pos (parts b).neg))
      (Eq.trans (congrArg (Poly.evalP fe) h) (Poly.evalP_addP fe (parts b).pos (parts a).neg))
  let E := congr2 Nat.add (congr2 Nat.add (sound env a) (Eq.symm (sound env b))) hh
  let K := Nat.add (Nat.add nA pB) (Nat.add pA nB)
  let r₁ := NExpr.eq env'
    (.add (.add (.var 0) (.var 3)) (.add (.add (.var 5) (.var 6)) (.add (.var 4) (.var 7))))
    (.add (.add (.add (.var 0) (.var 5)) (.add (.var 3) (.var 6))) (.add (.var 4) (.var 7)))
    rfl
  let r₂ := NExpr.eq env'
    (.add (.add (.add (.var 1) (.var 4)) (.add (.var 2) (.var 7))) (.add (.var 6) (.var 5)))
    (.add (.add (.var 2) (.var 1)) (.add (.add (.var 5) (.var 6)) (.add (.var 4) (.var 7))))
    rfl
  Int.eq_of_parts (Nat.add_right_cancel K (Eq.trans r₁ (Eq.trans E r₂)))

/-- Rearranging an inequality: `a ≤ b` and `c ≤ d` are the same statement when
`b − a` and `d − c` normalise alike, i.e. when `pos a + neg b + pos d + neg c` and
`pos c + neg d + pos b + neg a` do (pass `rfl`). -/
theorem ble_congr (env : List Int) (a b c d : IExpr)
    (hb : Eq (Poly.beqP
      (Poly.addP (Poly.addP (parts a).pos (parts b).neg) (Poly.addP (parts d).pos (parts c).neg))
      (Poly.addP (Poly.addP (parts c).pos (parts d).neg) (Poly.addP (parts b).pos (parts a).neg)))
      Bool.true) :
    Eq (Int.ble (eval env a) (eval env b)) (Int.ble (eval env c) (eval env d)) :=
  let h := Poly.eq_of_beqP hb
  let fe := flat env
  let PA := Int.posPart (eval env a)
  let NA := Int.negPart (eval env a)
  let PB := Int.posPart (eval env b)
  let NB := Int.negPart (eval env b)
  let PC := Int.posPart (eval env c)
  let NC := Int.negPart (eval env c)
  let PD := Int.posPart (eval env d)
  let ND := Int.negPart (eval env d)
  let pA := Poly.evalP fe (parts a).pos
  let nA := Poly.evalP fe (parts a).neg
  let pB := Poly.evalP fe (parts b).pos
  let nB := Poly.evalP fe (parts b).neg
  let pC := Poly.evalP fe (parts c).pos
  let nC := Poly.evalP fe (parts c).neg
  let pD := Poly.evalP fe (parts d).pos
  let nD := Poly.evalP fe (parts d).neg
  let env' := List.cons PA (List.cons NA (List.cons PB (List.cons NB (List.cons PC
    (List.cons NC (List.cons PD (List.cons ND (List.cons pA (List.cons nA (List.cons pB
    (List.cons nB (List.cons pC (List.cons nC (List.cons pD (List.cons nD List.nil)))))))))))))))
  let hh : Eq (Nat.add (Nat.add pA nB) (Nat.add pD nC)) (Nat.add (Nat.add pC nD) (Nat.add pB nA)) :=
    Eq.trans
      (Eq.symm (Eq.trans
        (Poly.evalP_addP fe (Poly.addP (parts a).pos (parts b).neg) (Poly.addP (parts d).pos (parts c).neg))
        (congr2 Nat.add (Poly.evalP_addP fe (parts a).pos (parts b).neg)
          (Poly.evalP_addP fe (parts d).pos (parts c).neg))))
      (Eq.trans (congrArg (Poly.evalP fe) h)
        (Eq.trans
          (Poly.evalP_addP fe (Poly.addP (parts c).pos (parts d).neg) (Poly.addP (parts b).pos (parts a).neg))
          (congr2 Nat.add (Poly.evalP_addP fe (parts c).pos (parts d).neg)
            (Poly.evalP_addP fe (parts b).pos (parts a).neg))))
  let E := congr2 Nat.add (congr2 Nat.add (congr2 Nat.add (congr2 Nat.add
    (sound env a) (Eq.symm (sound env b))) (Eq.symm (sound env c))) (sound env d)) hh
  let K := Nat.add (Nat.add (Nat.add nA pB) (Nat.add pC nD)) (Nat.add (Nat.add pA nB) (Nat.add pD nC))
  let r₁ := NExpr.eq env'
    (.add (.add (.add (.var 0) (.var 3)) (.add (.var 6) (.var 5))) (.add (.add (.add (.var 9) (.var 10)) (.add (.var 12) (.var 15))) (.add (.add (.var 8) (.var 11)) (.add (.var 14) (.var 13)))))
    (.add (.add (.add (.add (.add (.var 0) (.var 9)) (.add (.var 3) (.var 10))) (.add (.var 5) (.var 12))) (.add (.var 6) (.var 15))) (.add (.add (.var 8) (.var 11)) (.add (.var 14) (.var 13))))
    rfl
  let r₂ := NExpr.eq env'
    (.add (.add (.add (.add (.add (.var 1) (.var 8)) (.add (.var 2) (.var 11))) (.add (.var 4) (.var 13))) (.add (.var 7) (.var 14))) (.add (.add (.var 12) (.var 15)) (.add (.var 10) (.var 9))))
    (.add (.add (.add (.var 4) (.var 7)) (.add (.var 2) (.var 1))) (.add (.add (.add (.var 9) (.var 10)) (.add (.var 12) (.var 15))) (.add (.add (.var 8) (.var 11)) (.add (.var 14) (.var 13)))))
    rfl
  let core : Eq (Nat.add (Nat.add PA NB) (Nat.add PD NC)) (Nat.add (Nat.add PC ND) (Nat.add PB NA)) :=
    Nat.add_right_cancel K (Eq.trans r₁ (Eq.trans E r₂))
  Eq.trans (Int.ble_parts (eval env a) (eval env b))
    (Eq.trans (Nat.ble_congr core) (Eq.symm (Int.ble_parts (eval env c) (eval env d))))

end IExpr

/-! ## Order -/

namespace Int

/-- `a ≤ a`. -/
theorem ble_refl (a : Int) : Eq (Int.ble a a) Bool.true :=
  Int.casesOn (motive := fun a => Eq (Int.ble a a) Bool.true) a
    (fun n => Nat.ble_refl n) (fun n => Nat.ble_refl n)

/-- Totality: `¬(a ≤ b) → b ≤ a`. -/
theorem ble_total {a b : Int} (h : Eq (Int.ble a b) Bool.false) : Eq (Int.ble b a) Bool.true :=
  Eq.trans (ble_parts b a) (Nat.ble_total (Eq.trans (Eq.symm (ble_parts a b)) h))

/-- `0 ≤ u → 0 ≤ v → 0 ≤ u + v`: only `ofNat` is non-negative, and `ofNat + ofNat` is
`ofNat`. -/
theorem nonneg_add {u v : Int} (hu : Eq (Int.ble (Int.ofNat 0) u) Bool.true)
    (hv : Eq (Int.ble (Int.ofNat 0) v) Bool.true) :
    Eq (Int.ble (Int.ofNat 0) (Int.add u v)) Bool.true :=
  Int.casesOn (motive := fun u => Eq (Int.ble (Int.ofNat 0) u) Bool.true →
      Eq (Int.ble (Int.ofNat 0) (Int.add u v)) Bool.true) u
    (fun m _ => Int.casesOn (motive := fun v => Eq (Int.ble (Int.ofNat 0) v) Bool.true →
        Eq (Int.ble (Int.ofNat 0) (Int.add (Int.ofNat m) v)) Bool.true) v
      (fun _ _ => rfl) (fun _ h => absurdFT h) hv)
    (fun _ h => absurdFT h) hu

/-- `0 ≤ u → 0 ≤ v → 0 ≤ u · v`. -/
theorem nonneg_mul {u v : Int} (hu : Eq (Int.ble (Int.ofNat 0) u) Bool.true)
    (hv : Eq (Int.ble (Int.ofNat 0) v) Bool.true) :
    Eq (Int.ble (Int.ofNat 0) (Int.mul u v)) Bool.true :=
  Int.casesOn (motive := fun u => Eq (Int.ble (Int.ofNat 0) u) Bool.true →
      Eq (Int.ble (Int.ofNat 0) (Int.mul u v)) Bool.true) u
    (fun m _ => Int.casesOn (motive := fun v => Eq (Int.ble (Int.ofNat 0) v) Bool.true →
        Eq (Int.ble (Int.ofNat 0) (Int.mul (Int.ofNat m) v)) Bool.true) v
      (fun _ _ => rfl) (fun _ h => absurdFT h) hv)
    (fun _ h => absurdFT h) hu

/-- `0 ≤ u · c` with `c ≥ 1` gives `0 ≤ u`: a negative `u` times a positive `c` is
`negSucc _` by definition. -/
theorem nonneg_of_mul_pos {u c : Int} (h : Eq (Int.ble (Int.ofNat 0) (Int.mul u c)) Bool.true)
    (hc : Eq (Int.ble (Int.ofNat 1) c) Bool.true) : Eq (Int.ble (Int.ofNat 0) u) Bool.true :=
  Int.casesOn (motive := fun u => Eq (Int.ble (Int.ofNat 0) (Int.mul u c)) Bool.true →
      Eq (Int.ble (Int.ofNat 0) u) Bool.true) u
    (fun _ _ => rfl)
    (fun m h => Int.casesOn (motive := fun c => Eq (Int.ble (Int.ofNat 1) c) Bool.true →
        Eq (Int.ble (Int.ofNat 0) (Int.mul (Int.negSucc m) c)) Bool.true →
        Eq (Int.ble (Int.ofNat 0) (Int.negSucc m)) Bool.true) c
      (fun n => Nat.casesOn (motive := fun n => Eq (Int.ble (Int.ofNat 1) (Int.ofNat n)) Bool.true →
          Eq (Int.ble (Int.ofNat 0) (Int.mul (Int.negSucc m) (Int.ofNat n))) Bool.true →
          Eq (Int.ble (Int.ofNat 0) (Int.negSucc m)) Bool.true) n
        (fun hc _ => absurdFT hc)
        (fun _ _ h => absurdFT h))
      (fun _ hc _ => absurdFT hc) hc h)
    h

/-- `1 ≤ u → 1 ≤ v → 1 ≤ u · v`: both are `ofNat (succ _)`, and so is their product. -/
theorem pos_mul {u v : Int} (hu : Eq (Int.ble (Int.ofNat 1) u) Bool.true)
    (hv : Eq (Int.ble (Int.ofNat 1) v) Bool.true) :
    Eq (Int.ble (Int.ofNat 1) (Int.mul u v)) Bool.true :=
  Int.casesOn (motive := fun u => Eq (Int.ble (Int.ofNat 1) u) Bool.true →
      Eq (Int.ble (Int.ofNat 1) (Int.mul u v)) Bool.true) u
    (fun m => Nat.casesOn (motive := fun m => Eq (Int.ble (Int.ofNat 1) (Int.ofNat m)) Bool.true →
        Eq (Int.ble (Int.ofNat 1) (Int.mul (Int.ofNat m) v)) Bool.true) m
      (fun h => absurdFT h)
      (fun a _ => Int.casesOn (motive := fun v => Eq (Int.ble (Int.ofNat 1) v) Bool.true →
          Eq (Int.ble (Int.ofNat 1) (Int.mul (Int.ofNat (Nat.succ a)) v)) Bool.true) v
        (fun n => Nat.casesOn (motive := fun n => Eq (Int.ble (Int.ofNat 1) (Int.ofNat n)) Bool.true →
            Eq (Int.ble (Int.ofNat 1) (Int.mul (Int.ofNat (Nat.succ a)) (Int.ofNat n))) Bool.true) n
          (fun h => absurdFT h) (fun _ _ => rfl))
        (fun _ h => absurdFT h) hv))
    (fun _ h => absurdFT h) hu

/-- Transitivity: `b − a ≥ 0` and `c − b ≥ 0` add up to `c − a ≥ 0`. -/
theorem ble_trans {a b c : Int} (h₁ : Eq (Int.ble a b) Bool.true)
    (h₂ : Eq (Int.ble b c) Bool.true) : Eq (Int.ble a c) Bool.true :=
  let env := List.cons a (List.cons b (List.cons c List.nil))
  Eq.trueOf
    (IExpr.ble_congr env .zero (.add (.add (.atom 1) (.neg (.atom 0))) (.add (.atom 2) (.neg (.atom 1))))
      (.atom 0) (.atom 2) rfl)
    (nonneg_add
      (Eq.trueOf (IExpr.ble_congr env (.atom 0) (.atom 1) .zero (.add (.atom 1) (.neg (.atom 0))) rfl) h₁)
      (Eq.trueOf (IExpr.ble_congr env (.atom 1) (.atom 2) .zero (.add (.atom 2) (.neg (.atom 1))) rfl) h₂))

/-- Multiplying by a non-negative `c` keeps `≤`: `(b − a) · c ≥ 0`. -/
theorem mul_mono {a b c : Int} (h : Eq (Int.ble a b) Bool.true)
    (hc : Eq (Int.ble (Int.ofNat 0) c) Bool.true) :
    Eq (Int.ble (Int.mul a c) (Int.mul b c)) Bool.true :=
  let env := List.cons a (List.cons b (List.cons c List.nil))
  Eq.trueOf
    (IExpr.ble_congr env .zero (.mul (.add (.atom 1) (.neg (.atom 0))) (.atom 2))
      (.mul (.atom 0) (.atom 2)) (.mul (.atom 1) (.atom 2)) rfl)
    (nonneg_mul
      (Eq.trueOf (IExpr.ble_congr env (.atom 0) (.atom 1) .zero (.add (.atom 1) (.neg (.atom 0))) rfl) h)
      hc)

/-- A positive factor `c ≥ 1` cancels from both sides of `≤`. -/
theorem mul_cancel {a b c : Int} (h : Eq (Int.ble (Int.mul a c) (Int.mul b c)) Bool.true)
    (hc : Eq (Int.ble (Int.ofNat 1) c) Bool.true) : Eq (Int.ble a b) Bool.true :=
  let env := List.cons a (List.cons b (List.cons c List.nil))
  Eq.trueOf
    (IExpr.ble_congr env .zero (.add (.atom 1) (.neg (.atom 0))) (.atom 0) (.atom 1) rfl)
    (nonneg_of_mul_pos
      (Eq.trueOf (IExpr.ble_congr env (.mul (.atom 0) (.atom 2)) (.mul (.atom 1) (.atom 2))
        .zero (.mul (.add (.atom 1) (.neg (.atom 0))) (.atom 2)) rfl) h)
      hc)

end Int
