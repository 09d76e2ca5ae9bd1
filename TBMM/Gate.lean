prelude
import TBMM.Json
import TBMM.Forms
/-!
# TBMM.Gate — a task's gate checks, expanded and evaluated on an artifact

The Lean counterpart of `tbmm.verdict.gate`: a `Check` is one entry of a task's `gate.toml`
(its form, constants and paths), `Check.run` evaluates it on a `Json` artifact and
returns the instances that do not pass, each a `Flag` with its index and status. The
same definitions decide the verdict (`TBMM.Verdict`) and the per-check lemmas of a
certificate, so a check's failure is named by the kernel, not by Python.

Expansion, as `tbmm.verdict.gate.instances`:

* no path holds `[*]`: one instance, index 0;
* `sumTo`: one instance over every value its paths reach (`Json.expand`: `[*]` means
  "sum over every entry"); a wildcard path that reaches no entry makes the whole check
  `noList`;
* otherwise one instance per entry of the list at the first wildcard path's prefix
  (index `i`), every wildcard path taking entry `i` of its own list at its first `[*]`
  (past the end of a shorter list, or a pre that is not a list: `missing`); an empty
  or absent list gives the single status `noList`.

An instance whose values include a non-number is `bad` (the check fails); else one
with a missing value is `missing` (the check cannot be evaluated: the metrics it
protects become unverifiable); else the form decides `pass` or `fail`. The forms are
`TBMM.Forms`'s checkers, applied to the values by role in `tbmm.verdict.gate.ROLES` order.
-/

set_option genCtorIdx false

/-- One gate check (`tbmm.suite.models.GateCheck`): the form, its paths by role, its constants. -/
inductive Check : Type
  /-- `lo ≤ field ≤ hi`. -/
  | interval (field : List Seg) (lo hi : Option Rat)
  /-- `field` is a non-negative integer, at most `hi`. -/
  | count (field : List Seg) (hi : Option Rat)
  /-- `|Σ fields − total| ≤ tol`. -/
  | sumTo (fields : List (List Seg)) (total tol : Rat)
  /-- `Σ lhs ≤ Σ rhs + slack` (`<` when strict). -/
  | order (lhs rhs : List (List Seg)) (strict : Bool) (slack : Rat)
  /-- `field op bound`. -/
  | threshold (field : List Seg) (op : Cmp) (bound : Rat)
  /-- `coef · Π factors op bound`. -/
  | product (factors : List (List Seg)) (coef : Rat) (op : Cmp) (bound : Rat)
  /-- `coef · Π factors op Π boundFactors`. -/
  | productOf (factors : List (List Seg)) (coef : Rat) (op : Cmp) (boundFactors : List (List Seg))
  /-- `|field − against| ≤ tol + relTol · |against|` (a claim against its replayed value). -/
  | agree (field against : List Seg) (tol relTol : Rat)

/-- A declared list's minimum length (`[[list]] min_items` of `artifact_map.toml`): every
list its path reaches must have at least `min` entries. -/
structure MinItems where
  /-- The list's path (`[*]` for a list inside a list's entries). -/
  path : List Seg
  /-- The statement's minimum number of entries. -/
  min : Nat

/-- An instance's status (`tbmm.verdict.gate.Instance.status`); `noList` is the single instance
of a check whose wildcard list is missing or empty. -/
inductive Status : Type
  | pass
  | fail
  | bad
  | missing
  | noList

/-- An instance that does not pass: its list index (0 without a wildcard) and status. -/
structure Flag where
  /-- The entry substituted for `[*]` (0 for a check without one, or a `sumTo`). -/
  index : Nat
  /-- `fail`, `bad`, `missing` or `noList`. -/
  status : Status

/-- Values gathered from several lookups: all numbers, or else `missing`/`bad` (`bad`
wins over `missing`, as in `tbmm.verdict.gate.evaluate`). -/
inductive Gather : Type
  | ok (xs : List Rat)
  | missing
  | bad

noncomputable section

namespace Status

/-- A numbering of the statuses, for equality. -/
def code (s : Status) : Nat := Status.casesOn s 0 1 2 3 4

/-- Equality of statuses. -/
def beq (a b : Status) : Bool := Nat.beq (code a) (code b)

/-- A violated or non-number instance: the check fails. -/
def fails (s : Status) : Bool := Status.casesOn s Bool.false Bool.true Bool.true Bool.false Bool.false

/-- An instance that could not be evaluated (missing input). -/
def unverifiable (s : Status) : Bool :=
  Status.casesOn s Bool.false Bool.false Bool.false Bool.true Bool.true

end Status

namespace Flag

/-- Equality of flags. -/
def beq (a b : Flag) : Bool := and (Nat.beq a.index b.index) (Status.beq a.status b.status)

/-- `rest` with the instance `i` of status `s` in front, unless it passes. -/
def prepend (i : Nat) (s : Status) (rest : List Flag) : List Flag :=
  Status.casesOn (motive := fun _ => List Flag) s rest
    (List.cons (Flag.mk i Status.fail) rest) (List.cons (Flag.mk i Status.bad) rest)
    (List.cons (Flag.mk i Status.missing) rest) (List.cons (Flag.mk i Status.noList) rest)

/-- Equality of flag lists (same flags in the same order). -/
def listBeq (xs ys : List Flag) : Bool :=
  List.rec (motive := fun _ => List Flag → Bool)
    (fun ys => List.casesOn (motive := fun _ => Bool) ys Bool.true (fun _ _ => Bool.false))
    (fun x _ r ys => List.casesOn (motive := fun _ => Bool) ys Bool.false
      (fun y yt => and (beq x y) (r yt)))
    xs ys

end Flag

namespace Check

/-- The check's paths in `tbmm.verdict.gate.ROLES` order (field, against, fields, lhs, rhs,
factors, bound_factors): the first wildcard path among them drives the expansion. -/
def paths (c : Check) : List (List Seg) :=
  Check.casesOn (motive := fun _ => List (List Seg)) c
    (fun f _ _ => List.cons f List.nil)
    (fun f _ => List.cons f List.nil)
    (fun fs _ _ => fs)
    (fun l r _ _ => List.append l r)
    (fun f _ _ => List.cons f List.nil)
    (fun fs _ _ _ => fs)
    (fun fs _ _ bs => List.append fs bs)
    (fun f a _ _ => List.cons f (List.cons a List.nil))

/-- Whether this is a `sumTo` (its wildcards sum over entries instead of expanding). -/
def isSum (c : Check) : Bool :=
  Check.casesOn (motive := fun _ => Bool) c
    (fun _ _ _ => Bool.false) (fun _ _ => Bool.false) (fun _ _ _ => Bool.true)
    (fun _ _ _ _ => Bool.false) (fun _ _ _ => Bool.false) (fun _ _ _ _ => Bool.false)
    (fun _ _ _ _ => Bool.false) (fun _ _ _ _ => Bool.false)

/-- The status from a single lookup and the form's test on its number. -/
def ofOne (l : Lookup) (f : Rat → Bool) : Status :=
  Lookup.casesOn (motive := fun _ => Status) l (fun q => cond (f q) Status.pass Status.fail)
    Status.missing Status.bad

/-- The status from two lookups (`bad` if either is not a number, else `missing` if
either is missing). -/
def ofTwo (a b : Lookup) (f : Rat → Rat → Bool) : Status :=
  Lookup.casesOn (motive := fun _ => Status) a
    (fun x => Lookup.casesOn (motive := fun _ => Status) b
      (fun y => cond (f x y) Status.pass Status.fail) Status.missing Status.bad)
    (Lookup.casesOn (motive := fun _ => Status) b (fun _ => Status.missing) Status.missing
      Status.bad)
    Status.bad

/-- Gather a list of lookups into their numbers, or `missing`/`bad`. -/
def gather (ls : List Lookup) : Gather :=
  List.foldr
    (fun l acc => Lookup.casesOn (motive := fun _ => Gather) l
      (fun q => Gather.casesOn (motive := fun _ => Gather) acc
        (fun xs => Gather.ok (List.cons q xs)) Gather.missing Gather.bad)
      (Gather.casesOn (motive := fun _ => Gather) acc (fun _ => Gather.missing) Gather.missing
        Gather.bad)
      Gather.bad)
    (Gather.ok List.nil) ls

/-- The status from two lists of lookups and the form's test on their numbers. -/
def ofLists (a b : List Lookup) (f : List Rat → List Rat → Bool) : Status :=
  Gather.casesOn (motive := fun _ => Status) (gather a)
    (fun xs => Gather.casesOn (motive := fun _ => Status) (gather b)
      (fun ys => cond (f xs ys) Status.pass Status.fail) Status.missing Status.bad)
    (Gather.casesOn (motive := fun _ => Status) (gather b) (fun _ => Status.missing)
      Status.missing Status.bad)
    Status.bad

/-- The status of one instance (`tbmm.verdict.gate.evaluate`), `get` giving the lookup of each of
the check's paths in this instance: `bad` if any is not a number, else `missing` if any
is missing, else what the form says. -/
def status (c : Check) (get : List Seg → Lookup) : Status :=
  Check.casesOn (motive := fun _ => Status) c
    (fun f lo hi => ofOne (get f) (fun x => Forms.interval x lo hi))
    (fun f hi => ofOne (get f) (fun x => Forms.count x hi))
    (fun fs total tol => ofLists (List.map get fs) List.nil (fun xs _ => Forms.sumTo xs total tol))
    (fun l r strict slack =>
      ofLists (List.map get l) (List.map get r) (fun a b => Forms.order a b strict slack))
    (fun f op bound => ofOne (get f) (fun x => Forms.threshold x op bound))
    (fun fs coef op bound => ofLists (List.map get fs) List.nil (fun a _ => Forms.product a coef op bound))
    (fun fs coef op bs =>
      ofLists (List.map get fs) (List.map get bs) (fun a b => Forms.product a coef op (Rat.prod b)))
    (fun f a tol relTol => ofTwo (get f) (get a) (fun x y => Forms.agree x y tol relTol))

end Check


namespace Check

/-- A path's lookup in instance `i`, whose entry of the driving list (the list at
`pre`, the first wildcard path's part before its `[*]`) is `x`: a path without wildcard
is looked up from the root; a wildcard path takes entry `i` of the list at its own first
`[*]` — `x` itself when that list is the driving one — and follows the rest of the path
from there (a second `[*]` resolves nothing: `missing`). -/
def lookupIn (root : Json) (pre : List Seg) (i : Nat) (x : Json) (p : List Seg) : Lookup :=
  cond (Path.hasWild p)
    (cond (Path.beq (Path.before p) pre)
      (Json.lookup (Json.at (Path.after p) x))
      (Json.lookup (Option.bind (Option.bind (Json.at (Path.before p) root) (Json.entry i))
        (Json.at (Path.after p)))))
    (Json.lookup (Json.at p root))

/-- The flags of the instances `i, i+1, …`, one per remaining entry of the driving list. -/
def sweep (c : Check) (root : Json) (pre : List Seg) (entries : List Json) : Nat → List Flag :=
  List.rec (motive := fun _ => Nat → List Flag)
    (fun _ => List.nil)
    (fun x _ r i => Flag.prepend i (status c (lookupIn root pre i x)) (r (Nat.succ i)))
    entries

/-- The first wildcard path's part before its `[*]` (the driving list's path). -/
def drivingPrefix (ps : List (List Seg)) : List Seg :=
  List.foldr (fun p acc => cond (Path.hasWild p) (Path.before p) acc) List.nil ps

/-- The one flag of a single-instance check with status `s` (none when it passes). -/
def single (s : Status) : List Flag := Flag.prepend 0 s List.nil

/-- Whether a wildcard path of a `sumTo` reached no entry (the whole check is `noList`). -/
def noEntries (p : List Seg) (ls : List Lookup) : Bool :=
  and (Path.hasWild p) (List.casesOn (motive := fun _ => Bool) ls Bool.true (fun _ _ => Bool.false))

/-- A `sumTo` over every value its paths reach: `noList` if a wildcard path reaches none. -/
def runSum (c : Check) (root : Json) (ps : List (List Seg)) : List Flag :=
  cond (List.any (fun p => noEntries p (Json.expand p (Option.some root))) ps)
    (single Status.noList)
    (Gather.casesOn (motive := fun _ => List Flag)
      (gather (List.flatMap (fun p => Json.expand p (Option.some root)) ps))
      (fun xs => single (cond (Check.casesOn (motive := fun _ => Bool) c
          (fun _ _ _ => Bool.false) (fun _ _ => Bool.false)
          (fun _ total tol => Forms.sumTo xs total tol)
          (fun _ _ _ _ => Bool.false) (fun _ _ _ => Bool.false) (fun _ _ _ _ => Bool.false)
          (fun _ _ _ _ => Bool.false) (fun _ _ _ _ => Bool.false))
        Status.pass Status.fail))
      (single Status.missing) (single Status.bad))

/-- The wildcard expansion: one instance per entry of the driving list; none (`noList`)
when that list is missing, empty or not a list. -/
def runWild (c : Check) (root : Json) (pre : List Seg) : List Flag :=
  List.casesOn (motive := fun _ => List Flag)
    (Option.getD (Option.bind (Json.at pre root) Json.entries) List.nil)
    (single Status.noList)
    (fun x xs => sweep c root pre (List.cons x xs) 0)

/-- The instances of the check on `root` that do not pass (`tbmm.verdict.gate.run_gate`, one check). -/
def run (c : Check) (root : Json) : List Flag :=
  cond (isSum c) (runSum c root (paths c))
    (cond (List.any Path.hasWild (paths c))
      (runWild c root (drivingPrefix (paths c)))
      (single (status c (fun p => Json.lookup (Json.at p root)))))

end Check

namespace MinItems

/-- The flag of a reached node: `fail` for a list shorter than `min` (a missing node or
anything but a list imposes nothing: the checks that read it say what is missing). -/
def flagOf (m : MinItems) (i : Nat) (o : Option Json) (rest : List Flag) : List Flag :=
  Option.casesOn (motive := fun _ => List Flag) (Option.bind o Json.entries) rest
    (fun xs => cond (Nat.ble (MinItems.min m) (List.length xs)) rest
      (List.cons (Flag.mk i Status.fail) rest))

/-- The lists the path reaches that are too short (`tbmm.verdict.gate` before its checks), each
flagged with its position among the nodes the path reaches. -/
def run (m : MinItems) (root : Json) : List Flag :=
  List.rec (motive := fun _ => Nat → List Flag)
    (fun _ => List.nil)
    (fun o _ r i => flagOf m i o (r (Nat.succ i)))
    (Json.reach (MinItems.path m) (Option.some root)) 0

end MinItems

end
