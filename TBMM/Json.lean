prelude
import TBMM.Rat
/-!
# TBMM.Json — an artifact as a Lean term, and the paths that reach into it

An agent's artifact is a JSON document; a certificate carries it (pruned to what the
task's paths can reach, see `tbmm.core.lean_syntax`) as a value of `Json`:

* objects map keys to values; a key is a `Nat` tag the certificate interns for each
  distinct key string of the task's paths (`obj keys vals`: parallel lists, first match
  wins — the reader keeps one value per key, so there is only one);
* numbers are exact rationals, read from their decimal text (never a binary float);
  a number the reader refuses (NaN, ±Infinity, an exponent beyond its cap) is
  `nonFinite`;
* strings are opaque tags: no artifact text ever reaches Lean, and nothing compares
  strings (a string where a number is wanted is simply not a number);
* `bool`, `null` and arrays as in JSON.

A path is a list of segments: an object key, a list index, or the wildcard `[*]`.
`Json.at` follows a path without wildcards; `Json.expand` enumerates every value a
path with wildcards reaches, as `tbmm.core.paths.expand` followed by `tbmm.verdict.scoring.lookup`
does. What a gate or a metric sees at a path is a `Lookup`: a number, `missing` (the
path does not resolve) or `bad` (it resolves to anything but a finite number).
-/

set_option genCtorIdx false

/-- A JSON value; object keys and strings are tags interned by the certificate. -/
inductive Json : Type
  | null
  | bool (b : Bool)
  | num (q : Rat)
  | str (tag : Nat)
  | nonFinite
  | arr (xs : List Json)
  | obj (keys : List Nat) (vals : List Json)

/-- One step of a path: an object key (its tag), a list index, or the wildcard `[*]`. -/
inductive Seg : Type
  | key (k : Nat)
  | index (i : Nat)
  | wild

/-- What a path yields for a gate check or a metric (`tbmm.verdict.scoring.lookup`). -/
inductive Lookup : Type
  | num (q : Rat)
  | missing
  | bad

noncomputable section

/-! ## Lists and options (the few combinators the verdict needs) -/

/-- `f` applied to every element. -/
def List.map {α β : Type} (f : α → β) (xs : List α) : List β :=
  List.foldr (fun x acc => List.cons (f x) acc) List.nil xs

/-- `xs ++ ys`. -/
def List.append {α : Type} (xs ys : List α) : List α := List.foldr List.cons ys xs

/-- The concatenation of `f x` over the elements `x`. -/
def List.flatMap {α β : Type} (f : α → List β) (xs : List α) : List β :=
  List.foldr (fun x acc => List.append (f x) acc) List.nil xs

/-- Whether some element satisfies `p`. -/
def List.any {α : Type} (p : α → Bool) (xs : List α) : Bool :=
  List.foldr (fun x acc => or (p x) acc) Bool.false xs

/-- Whether every element satisfies `p`. -/
def List.all {α : Type} (p : α → Bool) (xs : List α) : Bool :=
  List.foldr (fun x acc => and (p x) acc) Bool.true xs

/-- The element at index `i`, if the list is that long. -/
def List.nth {α : Type} (xs : List α) (i : Nat) : Option α :=
  List.rec (motive := fun _ => Nat → Option α)
    (fun _ => Option.none)
    (fun x _ r i => Nat.casesOn (motive := fun _ => Option α) i (Option.some x) (fun j => r j))
    xs i

/-- Whether the natural `n` is an element. -/
def List.memNat (n : Nat) (xs : List Nat) : Bool := List.any (fun m => Nat.beq n m) xs

/-- The list without its first element (`nil` stays `nil`). -/
def List.tail {α : Type} (xs : List α) : List α :=
  List.casesOn (motive := fun _ => List α) xs List.nil (fun _ t => t)

/-- `f` of the value, or `none`. -/
def Option.bind {α β : Type} (o : Option α) (f : α → Option β) : Option β :=
  Option.casesOn (motive := fun _ => Option β) o Option.none f

/-- The value, or `d` when there is none. -/
def Option.getD {α : Type} (o : Option α) (d : α) : α :=
  Option.casesOn (motive := fun _ => α) o d (fun a => a)

/-! ## Following a path -/

namespace Json

/-- `k` nulls: a run of list entries no path reads (only the list's length counts), written
by the certificate generator as one numeral instead of `k` nested constructors, so the
elaborator's cost follows what the paths reach, not a long list's length. -/
def nulls (k : Nat) : List Json := Nat.rec List.nil (fun _ t => List.cons Json.null t) k

/-- The value under key `k` in the parallel lists `ks`, `vs` (the first match). -/
def fieldIn (k : Nat) (ks : List Nat) (vs : List Json) : Option Json :=
  List.rec (motive := fun _ => List Json → Option Json)
    (fun _ => Option.none)
    (fun k' _ r vs =>
      List.casesOn (motive := fun _ => Option Json) vs Option.none
        (fun v vt => cond (Nat.beq k k') (Option.some v) (r vt)))
    ks vs

/-- The value under key `k` of an object; `none` for a missing key or a non-object. -/
def field (k : Nat) (j : Json) : Option Json :=
  Json.casesOn (motive_1 := fun _ => Option Json) j
    Option.none (fun _ => Option.none) (fun _ => Option.none) (fun _ => Option.none)
    Option.none (fun _ => Option.none) (fun ks vs => fieldIn k ks vs)

/-- Whether the value is the empty object `{}` (`tbmm.verdict.gate` checks nothing in it). -/
def isEmpty (j : Json) : Bool :=
  Json.casesOn (motive_1 := fun _ => Bool) j
    Bool.false (fun _ => Bool.false) (fun _ => Bool.false) (fun _ => Bool.false)
    Bool.false (fun _ => Bool.false)
    (fun ks _ => List.casesOn (motive := fun _ => Bool) ks Bool.true (fun _ _ => Bool.false))

/-- Entry `i` of a list; `none` past its end or for a non-list. -/
def entry (i : Nat) (j : Json) : Option Json :=
  Json.casesOn (motive_1 := fun _ => Option Json) j
    Option.none (fun _ => Option.none) (fun _ => Option.none) (fun _ => Option.none)
    Option.none (fun xs => List.nth xs i) (fun _ _ => Option.none)

/-- The entries of a list; `none` for anything else. -/
def entries (j : Json) : Option (List Json) :=
  Json.casesOn (motive_1 := fun _ => Option (List Json)) j
    Option.none (fun _ => Option.none) (fun _ => Option.none) (fun _ => Option.none)
    Option.none (fun xs => Option.some xs) (fun _ _ => Option.none)

/-- One step without wildcards: a wildcard resolves nothing (`tbmm.core.paths.resolve` refuses
it, so a path still holding one is missing). -/
def step (s : Seg) (j : Json) : Option Json :=
  Seg.casesOn (motive := fun _ => Option Json) s (fun k => field k j) (fun i => entry i j)
    Option.none

/-- The value at a path without wildcards (`tbmm.core.paths.resolve`); `none` when it does
not resolve. -/
def at (p : List Seg) (j : Json) : Option Json :=
  List.rec (motive := fun _ => Json → Option Json)
    (fun j => Option.some j)
    (fun s _ r j => Option.bind (step s j) r)
    p j

/-- Whether a value is a number: only `num` is; every other value is "not a number". -/
def lookup (o : Option Json) : Lookup :=
  Option.casesOn (motive := fun _ => Lookup) o Lookup.missing
    (fun j => Json.casesOn (motive_1 := fun _ => Lookup) j
      Lookup.bad (fun _ => Lookup.bad) (fun q => Lookup.num q) (fun _ => Lookup.bad)
      Lookup.bad (fun _ => Lookup.bad) (fun _ _ => Lookup.bad))

/-- Every node a path reaches, wildcards expanded over every entry, as `tbmm.core.paths.expand`
then `tbmm.core.paths.resolve` on each concrete path: a key or index only extends the path
(`none` at the end if it does not resolve), while a wildcard needs a list there — anything
else (or a path already missing) expands to nothing. -/
def reach (p : List Seg) (o : Option Json) : List (Option Json) :=
  List.rec (motive := fun _ => Option Json → List (Option Json))
    (fun o => List.cons o List.nil)
    (fun s _ r o =>
      Seg.casesOn (motive := fun _ => List (Option Json)) s
        (fun k => r (Option.bind o (field k)))
        (fun i => r (Option.bind o (entry i)))
        (Option.casesOn (motive := fun _ => List (Option Json)) (Option.bind o entries) List.nil
          (fun xs => List.flatMap (fun x => r (Option.some x)) xs)))
    p o

/-- What a path with wildcards yields for a `sumTo`: the lookup of every node it reaches. -/
def expand (p : List Seg) (o : Option Json) : List Lookup := List.map lookup (reach p o)

end Json

namespace Seg

/-- Whether the segment is the wildcard. -/
def isWild (s : Seg) : Bool := Seg.casesOn s (fun _ => Bool.false) (fun _ => Bool.false) Bool.true

end Seg

namespace Path

/-- Whether a path holds a wildcard. -/
def hasWild (p : List Seg) : Bool := List.any Seg.isWild p

/-- Equality of segments. -/
def segBeq (a b : Seg) : Bool :=
  Seg.casesOn (motive := fun _ => Bool) a
    (fun k => Seg.casesOn (motive := fun _ => Bool) b (fun k' => Nat.beq k k') (fun _ => Bool.false) Bool.false)
    (fun i => Seg.casesOn (motive := fun _ => Bool) b (fun _ => Bool.false) (fun i' => Nat.beq i i') Bool.false)
    (Seg.casesOn (motive := fun _ => Bool) b (fun _ => Bool.false) (fun _ => Bool.false) Bool.true)

/-- Equality of paths. -/
def beq (p q : List Seg) : Bool :=
  List.rec (motive := fun _ => List Seg → Bool)
    (fun q => List.casesOn (motive := fun _ => Bool) q Bool.true (fun _ _ => Bool.false))
    (fun s _ r q => List.casesOn (motive := fun _ => Bool) q Bool.false
      (fun s' qt => and (segBeq s s') (r qt)))
    p q

/-- The segments before the first wildcard (all of them when there is none). -/
def before (p : List Seg) : List Seg :=
  List.foldr (fun s acc => cond (Seg.isWild s) List.nil (List.cons s acc)) List.nil p

/-- The segments after the first wildcard (none when there is no wildcard). -/
def after (p : List Seg) : List Seg :=
  List.rec (motive := fun _ => List Seg)
    List.nil (fun s t acc => cond (Seg.isWild s) t acc) p

end Path

namespace Lookup

/-- Whether the lookup found a number. -/
def isNum (l : Lookup) : Bool := Lookup.casesOn l (fun _ => Bool.true) Bool.false Bool.false

/-- Whether the path did not resolve. -/
def isMissing (l : Lookup) : Bool := Lookup.casesOn l (fun _ => Bool.false) Bool.true Bool.false

/-- Whether the path resolved to something other than a finite number. -/
def isBad (l : Lookup) : Bool := Lookup.casesOn l (fun _ => Bool.false) Bool.false Bool.true

/-- The number found, `0` otherwise (only read once every lookup is known to be a number). -/
def val (l : Lookup) : Rat := Lookup.casesOn l (fun q => q) Rat.zero Rat.zero

/-- The number found as an option (`none`: missing or not a number). -/
def toOption (l : Lookup) : Option Rat :=
  Lookup.casesOn l (fun q => Option.some q) Option.none Option.none

end Lookup

end
