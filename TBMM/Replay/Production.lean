prelude
import TBMM.Rat
/-!
# TBMM.Replay.Production — the production-decision replay (CUMCM 2024 B) in Lean

The expected profit per product sold of a set of inspection/disassembly decisions, as
exact rational functions of the decisions and the statement's tables. It restates
`tbmm.replay.production_decision` (Python) step by step; a certificate of an artifact of
that task states, for each replayed number, `Rat.beq (Production.q2Profit data decisions
scale) value` (or `q3Profit`, `q2MeanProfit`, the loop counts, `q2Ok`/`q3Ok`), and the
kernel evaluates the replay itself.

The model (the task's verification.md states it and its readings for the agent): every component that
enters an assembly step, bought or recovered, goes through its inspection step; an
inspected defective part is discarded and another bought; an inspected defective
assembly is disassembled (its components are re-inspected and reassembled) or scrapped;
a product that is not inspected reaches the customer, and a defective one is returned,
exchanged (exchange loss) and then disassembled or scrapped. Each repetition is a
geometric series, summed in closed form. A disassembly that recovers a component that
may be defective and is never inspected loops forever: such a step makes the result not
`ok` and is counted in `loops`.

Every definition follows `TBMM.Core`'s rules: recursors and `cond`, no `match`,
everything `noncomputable`, obligations by kernel evaluation.
-/

set_option genCtorIdx false

namespace Production

/-- A part: defect rate, purchase price, inspection cost. -/
structure Part where
  /-- Defect rate. -/
  rate : Rat
  /-- Purchase price. -/
  price : Rat
  /-- Inspection cost. -/
  inspect : Rat

/-- An assembly step (a semi-finished product or the product): the defect rate of an
assembly of good components, and the assembly, inspection and disassembly costs. -/
structure Step where
  /-- Defect rate given good components. -/
  rate : Rat
  /-- Assembly cost. -/
  assembly : Rat
  /-- Inspection cost. -/
  inspect : Rat
  /-- Disassembly cost. -/
  disassembly : Rat

/-- The market: selling price and the exchange loss of a returned defective product. -/
structure Market where
  /-- Selling price. -/
  price : Rat
  /-- Exchange loss (beyond the replacement product itself). -/
  exchangeLoss : Rat

/-- A case of Table 1: the parts of the product, its step, its market. -/
structure Q2Case where
  /-- The parts, in the table's order. -/
  parts : List Part
  /-- The product's assembly step. -/
  product : Step
  /-- The product's market. -/
  market : Market

/-- A semi-finished product of Table 2 and the parts it is assembled from (Figure 1). -/
structure Semi where
  /-- Its assembly step. -/
  step : Step
  /-- Its parts. -/
  parts : List Part

/-- Table 2: the semi-finished products, the product's step, its market. -/
structure Q3Line where
  /-- The semi-finished products, in the table's order. -/
  semis : List Semi
  /-- The product's assembly step. -/
  product : Step
  /-- The product's market. -/
  market : Market

/-- Problem 2 decisions of one case. -/
structure Q2Decision where
  /-- Inspect each part (in the case's order). -/
  inspectParts : List Bool
  /-- Inspect the product. -/
  inspectProduct : Bool
  /-- Disassemble defective products. -/
  disassemble : Bool

/-- Problem 3 decisions of one semi-finished product and its parts. -/
structure SemiDecision where
  /-- Inspect the semi-finished product. -/
  inspect : Bool
  /-- Disassemble defective ones. -/
  disassemble : Bool
  /-- Inspect each of its parts (in Figure 1's order). -/
  inspectParts : List Bool

/-- Problem 3 decisions. -/
structure Q3Decision where
  /-- Per semi-finished product, in the table's order. -/
  semis : List SemiDecision
  /-- Inspect the product. -/
  inspectProduct : Bool
  /-- Disassemble defective products. -/
  disassemble : Bool

/-- A reading of the statement's accounting (the task's verification.md argues each):
whether a recovered component pays its inspection again, and whether the profit is
counted per product assembled instead of per product sold. -/
structure Reading where
  /-- Per product assembled (every assembly of the product, reassemblies included). -/
  perAssembly : Bool
  /-- A component recovered from a disassembly pays its inspection again. -/
  reinspect : Bool

/-- A component as delivered to its assembly step, per delivered unit. -/
structure Item where
  /-- Bounded: no endless recovery loop at or below it (else `cost` means nothing). -/
  ok : Bool
  /-- Expected cost of delivering one. -/
  cost : Rat
  /-- Probability that it is defective. -/
  defect : Rat
  /-- Cost of putting a recovered one through its inspection step again. -/
  recheck : Rat
  /-- Endless recovery loops at or below it. -/
  loops : Nat

/-- The result for the product: bounded, expected profit per product sold, loops. -/
structure Outcome where
  /-- Bounded (else `profit` means nothing). -/
  ok : Bool
  /-- Expected profit per product sold. -/
  profit : Rat
  /-- Endless recovery loops. -/
  loops : Nat

end Production

noncomputable section

namespace Production

/-- The stated readings, by the names `tbmm.replay.production_decision.READINGS` gives
them; `sold` is the declared one (the score's). -/
def Readings.sold : Reading := Reading.mk Bool.false Bool.true
/-- Per product sold, recovered components known good (not inspected again). -/
def Readings.soldKnownGood : Reading := Reading.mk Bool.false Bool.false
/-- Per product assembled, recovered components re-inspected. -/
def Readings.assembled : Reading := Reading.mk Bool.true Bool.true
/-- Per product assembled, recovered components known good. -/
def Readings.assembledKnownGood : Reading := Reading.mk Bool.true Bool.false

/-- `1 - q`. -/
def compl (q : Rat) : Rat := Rat.sub Rat.one q

/-- Pairwise application, stopping at the shorter list (callers check the lengths). -/
def zipWith {α β γ : Type} (f : α → β → γ) (xs : List α) (ys : List β) : List γ :=
  List.rec (motive := fun _ => List β → List γ)
    (fun _ => List.nil)
    (fun a _ rest ys =>
      List.casesOn (motive := fun _ => List γ) ys List.nil (fun b ys' => List.cons (f a b) (rest ys')))
    xs ys

/-- Whether two lists have the same length. -/
def sameLength {α β : Type} (xs : List α) (ys : List β) : Bool :=
  Nat.beq (List.length xs) (List.length ys)

/-- `f` applied to every element. -/
def map {α β : Type} (f : α → β) (xs : List α) : List β :=
  List.foldr (fun a acc => List.cons (f a) acc) List.nil xs

/-- Total expected cost of the components. -/
def sumCost (xs : List Item) : Rat := List.foldr (fun i acc => Rat.add (Item.cost i) acc) Rat.zero xs

/-- Total cost of re-inspecting recovered components. -/
def sumRecheck (xs : List Item) : Rat :=
  List.foldr (fun i acc => Rat.add (Item.recheck i) acc) Rat.zero xs

/-- Probability that every component is good (independent components). -/
def goodAll (xs : List Item) : Rat :=
  List.foldr (fun i acc => Rat.mul (compl (Item.defect i)) acc) Rat.one xs

/-- Every component bounded. -/
def allOk (xs : List Item) : Bool := List.foldr (fun i acc => and (Item.ok i) acc) Bool.true xs

/-- Every component known good (defect probability 0): a recovery loop can end. -/
def allKnownGood (xs : List Item) : Bool :=
  List.foldr (fun i acc => and (Rat.beq (Item.defect i) Rat.zero) acc) Bool.true xs

/-- Endless recovery loops of the components. -/
def sumLoops (xs : List Item) : Nat := List.foldr (fun i acc => Nat.add (Item.loops i) acc) 0 xs

/-- A recovery loop that never ends: defective assemblies are disassembled while a
component may be defective (it is never inspected). -/
def endlessAt (z : Bool) (xs : List Item) : Bool := and z (not (allKnownGood xs))

/-- `i` with its `ok` also requiring `b`. -/
def Item.withOk (b : Bool) (i : Item) : Item :=
  Item.mk (and b (Item.ok i)) (Item.cost i) (Item.defect i) (Item.recheck i) (Item.loops i)

/-- What a recovered component pays to go through its inspection step again: its
inspection cost `d` under a re-inspecting reading, else nothing. -/
def recheckOf (rd : Reading) (d : Rat) : Rat := cond (Reading.reinspect rd) d Rat.zero

/-- A bought part through its inspection step: inspected, defective ones are discarded
and others bought, `(price + inspect)/(1 - rate)` per good part; else as bought. -/
def part (rd : Reading) (p : Part) (x : Bool) : Item :=
  cond x
    (Item.mk Bool.true (Rat.div (Rat.add (Part.price p) (Part.inspect p)) (compl (Part.rate p)))
      Rat.zero (recheckOf rd (Part.inspect p)) 0)
    (Item.mk Bool.true (Part.price p) (Part.rate p) Rat.zero 0)

/-- An intermediate assembly through its inspection step (`x`), defective ones
disassembled (`z`) or scrapped. With `B = Σ cost + a` and `g = Π (1 - defect) · (1 - rate)`:
not inspected `B` (defect `1 - g`); scrapped `(B + d)/g`; disassembled
`B + d + (1 - g)(e + Σ recheck + a + d)/(1 - rate)`. -/
def assembly (rd : Reading) (s : Step) (x z : Bool) (xs : List Item) : Item :=
  let b := Rat.add (sumCost xs) (Step.assembly s)
  let g := Rat.mul (goodAll xs) (compl (Step.rate s))
  let endless := and x (endlessAt z xs)
  let loops := Nat.add (sumLoops xs) (cond endless 1 0)
  let redo := Rat.add (Rat.add (Rat.add (Step.disassembly s) (sumRecheck xs)) (Step.assembly s))
    (Step.inspect s)
  cond x
    (cond z
      (Item.mk (and (allOk xs) (not endless))
        (Rat.add (Rat.add b (Step.inspect s))
          (Rat.mul (compl g) (Rat.div redo (compl (Step.rate s)))))
        Rat.zero (recheckOf rd (Step.inspect s)) loops)
      (Item.mk (allOk xs) (Rat.div (Rat.add b (Step.inspect s)) g) Rat.zero
        (recheckOf rd (Step.inspect s)) loops))
    (Item.mk (allOk xs) b (compl g) Rat.zero loops)

/-- The product: expected profit per product sold. With `d' = d, r' = 0` when inspected
and `d' = 0, r' = r` when not, `B = Σ cost + a + d'`: scrapped `V = (B + (1 - g) r')/g`;
disassembled `V = B + (1 - g)(r' + e + Σ recheck + a + d')/(1 - rate)`; profit `price - V`
per product sold, or `(price - V)/N` per product assembled, with `N` the expected
assemblies of the product per product sold: `1/g` scrapped, `1 + (1 - g)/(1 - rate)`
disassembled. -/
def market (rd : Reading) (s : Step) (m : Market) (y z : Bool) (xs : List Item) : Outcome :=
  let d := cond y (Step.inspect s) Rat.zero
  let r := cond y Rat.zero (Market.exchangeLoss m)
  let b := Rat.add (Rat.add (sumCost xs) (Step.assembly s)) d
  let g := Rat.mul (goodAll xs) (compl (Step.rate s))
  let endless := endlessAt z xs
  let loops := Nat.add (sumLoops xs) (cond endless 1 0)
  let redo := Rat.add (Rat.add (Rat.add (Rat.add r (Step.disassembly s)) (sumRecheck xs))
    (Step.assembly s)) d
  let v := cond z
    (Rat.add b (Rat.mul (compl g) (Rat.div redo (compl (Step.rate s)))))
    (Rat.div (Rat.add b (Rat.mul (compl g) r)) g)
  let n := cond z (Rat.add Rat.one (Rat.div (compl g) (compl (Step.rate s)))) (Rat.div Rat.one g)
  let perSold := Rat.sub (Market.price m) v
  Outcome.mk (and (allOk xs) (not endless))
    (cond (Reading.perAssembly rd) (Rat.div perSold n) perSold) loops

/-- Problem 2, one case of Table 1. -/
def q2 (rd : Reading) (c : Q2Case) (d : Q2Decision) : Outcome :=
  let o := market rd (Q2Case.product c) (Q2Case.market c) (Q2Decision.inspectProduct d)
    (Q2Decision.disassemble d) (zipWith (part rd) (Q2Case.parts c) (Q2Decision.inspectParts d))
  Outcome.mk (and (sameLength (Q2Case.parts c) (Q2Decision.inspectParts d)) (Outcome.ok o))
    (Outcome.profit o) (Outcome.loops o)

/-- Problem 3, a semi-finished product and its parts. -/
def semi (rd : Reading) (s : Semi) (d : SemiDecision) : Item :=
  Item.withOk (sameLength (Semi.parts s) (SemiDecision.inspectParts d))
    (assembly rd (Semi.step s) (SemiDecision.inspect d) (SemiDecision.disassemble d)
      (zipWith (part rd) (Semi.parts s) (SemiDecision.inspectParts d)))

/-- Problem 3: the product of Table 2. -/
def q3 (rd : Reading) (l : Q3Line) (d : Q3Decision) : Outcome :=
  let o := market rd (Q3Line.product l) (Q3Line.market l) (Q3Decision.inspectProduct d)
    (Q3Decision.disassemble d) (zipWith (semi rd) (Q3Line.semis l) (Q3Decision.semis d))
  Outcome.mk (and (sameLength (Q3Line.semis l) (Q3Decision.semis d)) (Outcome.ok o))
    (Outcome.profit o) (Outcome.loops o)

/-- Problem 2, every case with its decisions. -/
def q2Outcomes (rd : Reading) (cs : List Q2Case) (ds : List Q2Decision) : List Outcome :=
  zipWith (q2 rd) cs ds

/-- Every case bounded, one decision per case. -/
def q2AllOk (rd : Reading) (cs : List Q2Case) (ds : List Q2Decision) : Bool :=
  and (sameLength cs ds)
    (List.foldr (fun o acc => and (Outcome.ok o) acc) Bool.true (q2Outcomes rd cs ds))

/-- The mean over the cases of the expected profit (per product sold, or assembled). -/
def q2Mean (rd : Reading) (cs : List Q2Case) (ds : List Q2Decision) : Rat :=
  let ps := map Outcome.profit (q2Outcomes rd cs ds)
  Rat.div (Rat.sum ps) (Rat.ofNat (List.length ps))

/-- `x` rounded down to a multiple of `1/scale` (`scale ≥ 1`): `⌊x · scale⌋ / scale`. A
replayed profit is written as a terminating decimal (JSON has no `158/9`), rounded down to
the replay's decimals; the certificate states that the value scored is this of the exact
Lean replay. -/
def floorTo (x : Rat) (scale : Nat) : Rat :=
  Rat.ofNumDen
    (Int.casesOn (Rat.num x)
      (fun n => Int.ofNat (Nat.div (Nat.mul n scale) (Rat.den x)))
      (fun k => Int.negOfNat
        (Nat.div (Nat.sub (Nat.add (Nat.mul (Nat.succ k) scale) (Rat.den x)) 1) (Rat.den x))))
    scale

/-! What a certificate states (library definitions only: no projections in its terms).
Every function takes the reading it is stated under: the scored values name the declared
reading (`Readings.sold`), the value a claim is checked against names the stated reading
Python found nearest to the claim. Which reading is nearest is not restated (any stated
reading is acceptable for a claim); that the value is this reading's replay is. -/

/-- Problem 2, one case: bounded (no endless recovery loop) and well formed. -/
def q2Ok (rd : Reading) (c : Q2Case) (d : Q2Decision) : Bool := Outcome.ok (q2 rd c d)

/-- Problem 2, one case: the endless recovery loops. -/
def q2Loops (rd : Reading) (c : Q2Case) (d : Q2Decision) : Nat := Outcome.loops (q2 rd c d)

/-- Problem 2, one case: the expected profit under a reading, rounded down to `1/scale`. -/
def q2Profit (rd : Reading) (c : Q2Case) (d : Q2Decision) (scale : Nat) : Rat :=
  floorTo (Outcome.profit (q2 rd c d)) scale

/-- Problem 2: the mean over the cases under a reading, rounded down to `1/scale`. -/
def q2MeanProfit (rd : Reading) (cs : List Q2Case) (ds : List Q2Decision) (scale : Nat) : Rat :=
  floorTo (q2Mean rd cs ds) scale

/-- Problem 3: bounded and well formed. -/
def q3Ok (rd : Reading) (l : Q3Line) (d : Q3Decision) : Bool := Outcome.ok (q3 rd l d)

/-- Problem 3: the endless recovery loops. -/
def q3Loops (rd : Reading) (l : Q3Line) (d : Q3Decision) : Nat := Outcome.loops (q3 rd l d)

/-- Problem 3: the expected profit under a reading, rounded down to `1/scale`. -/
def q3Profit (rd : Reading) (l : Q3Line) (d : Q3Decision) (scale : Nat) : Rat :=
  floorTo (Outcome.profit (q3 rd l d)) scale

end Production

end
