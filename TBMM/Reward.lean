prelude
import TBMM.Rat
/-!
# TBMM.Reward — the scoring rules

Mirrors `tbmm.core.rules` (Python) exactly, on exact rationals. With `O` the anchor, `x` the
reported value and `b` the band (the distance at which the reward reaches 0):

* degenerate band: `b < 2% |O|` cannot discriminate and is widened to `b' = 5% |O|`;
* `higherIsBetter`: 1 if `x ≥ O`, else `max 0 (1 − (O − x)/b')` (one-sided);
* `lowerIsBetter`:  1 if `x ≤ O`, else `max 0 (1 − (x − O)/b')` (one-sided);
* `targetValue`:    `max 0 (1 − |x − O|/b')`;
* `exactValue`:     1 if `x = O` else 0; also every direction when `b' ≤ 0`.

A missing value (`none`) or one outside the metric's domain scores 0. Task level:
weighted mean `R`, `O-Eval`, Robust `BO-Eval` and the Multi-BO cell.
-/

set_option genCtorIdx false

/-- How a metric is scored (`tbmm.core.rules.Direction`). -/
inductive Direction : Type
  | higherIsBetter
  | lowerIsBetter
  | targetValue
  | exactValue

/-- The value domain of a metric (`tbmm.core.rules.Domain`); outside it the reward is 0. -/
inductive Domain : Type
  | any
  | probability
  | share
  | correlation
  | percent
  | nonneg
  | count

/-- One metric's weight and reward, an input of the weighted mean. -/
structure Weighted where
  /-- The metric's weight in the task panel. -/
  weight : Rat
  /-- The metric's reward. -/
  reward : Rat

noncomputable section

/-- Whether the direction is `exactValue`, which ignores the band. -/
def Direction.isExact (dir : Direction) : Bool :=
  Direction.casesOn dir Bool.false Bool.false Bool.false Bool.true

namespace Reward

/-- Below `2/100 · |O|` a band is degenerate. -/
def degenerateBelow : Rat := Rat.frac 2 100

/-- A degenerate band is widened to `5/100 · |O|`. -/
def widenedTo : Rat := Rat.frac 5 100

/-- The O−F (or 1−f) gap under which the gap-compensated forms fall back: `1/10`. -/
def gapMin : Rat := Rat.frac 1 10

/-- Whether the degenerate-band rule widens `band` for this anchor. -/
def bandWidened (anchor band : Rat) : Bool :=
  Rat.lt band (Rat.mul degenerateBelow (Rat.abs anchor))

/-- The band actually used (`tbmm.core.rules.effective_band`, first component). -/
def effectiveBand (anchor band : Rat) : Rat :=
  cond (bandWidened anchor band) (Rat.mul widenedTo (Rat.abs anchor)) band

/-- Whether `x` lies in the domain (`tbmm.core.rules.in_domain`). -/
def inDomain (x : Rat) (d : Domain) : Bool :=
  Domain.casesOn d
    Bool.true
    (and (Rat.le Rat.zero x) (Rat.le x Rat.one))
    (and (Rat.le Rat.zero x) (Rat.le x Rat.one))
    (and (Rat.le (Rat.negFrac 1 1) x) (Rat.le x Rat.one))
    (and (Rat.le Rat.zero x) (Rat.le x (Rat.frac 100 1)))
    (Rat.le Rat.zero x)
    (and (Rat.le Rat.zero x) (Rat.isInt x))

/-- Linear decay: 1 at distance 0, 0 at distance ≥ band (band > 0). -/
def decay (distance band : Rat) : Rat :=
  Rat.max Rat.zero (Rat.sub Rat.one (Rat.div distance band))

/-- 1 when `x = anchor`, else 0. -/
def exact (x anchor : Rat) : Rat := cond (Rat.beq x anchor) Rat.one Rat.zero

/-- The reward of a finite in-domain value once the band is known to be positive. -/
def graded (dir : Direction) (x anchor b : Rat) : Rat :=
  Direction.casesOn dir
    (cond (Rat.le anchor x) Rat.one (decay (Rat.sub anchor x) b))
    (cond (Rat.le x anchor) Rat.one (decay (Rat.sub x anchor) b))
    (decay (Rat.abs (Rat.sub x anchor)) b)
    (exact x anchor)

/-- Per-metric reward of a finite in-domain value (`tbmm.core.rules.reward`). A band that is
still `≤ 0` after widening (band 0 at anchor 0) lets only the anchor itself count. -/
def reward (dir : Direction) (x anchor band : Rat) : Rat :=
  cond (Direction.isExact dir) (exact x anchor)
    (cond (Rat.le (effectiveBand anchor band) Rat.zero) (exact x anchor)
      (graded dir x anchor (effectiveBand anchor band)))

/-- The reward of a reported value: 0 when it is missing or outside the domain. -/
def score (dir : Direction) (dom : Domain) (x : Option Rat) (anchor band : Rat) : Rat :=
  Option.casesOn x Rat.zero
    (fun v => cond (inDomain v dom) (reward dir v anchor band) Rat.zero)

/-- `Σ w` over the metrics. -/
def totalWeight (ms : List Weighted) : Rat :=
  List.foldr (fun m acc => Rat.add m.weight acc) Rat.zero ms

/-- `Σ w·r` over the metrics. -/
def weightedSum (ms : List Weighted) : Rat :=
  List.foldr (fun m acc => Rat.add (Rat.mul m.weight m.reward) acc) Rat.zero ms

/-- `Σ w·r / Σ w`, or `none` when the weights sum to 0 (`tbmm.core.rules.weighted_mean`). -/
def weightedMean (ms : List Weighted) : Option Rat :=
  cond (Rat.beq (totalWeight ms) Rat.zero) Option.none
    (Option.some (Rat.div (weightedSum ms) (totalWeight ms)))

/-- Arithmetic mean, `none` for the empty list (`tbmm.core.rules.mean`). -/
def mean (xs : List Rat) : Option Rat :=
  cond (Nat.beq (List.length xs) 0) Option.none
    (Option.some (Rat.div (Rat.sum xs) (Rat.ofNat (List.length xs))))

/-- O-Eval `= clamp (R/O) 0 1`; 0 when the oracle's raw score is not positive. -/
def oEval (raw oracle : Rat) : Rat :=
  cond (Rat.le oracle Rat.zero) Rat.zero (Rat.clamp (Rat.div raw oracle) Rat.zero Rat.one)

/-- Robust BO-Eval against the baseline `F`: `clip ((R−F)/(O−F)) (−1) 1` when
`O − F > 1/10`, else `clip (R − F) (−1) 1`. -/
def robustBo (raw oracle baseline : Rat) : Rat :=
  cond (Rat.lt gapMin (Rat.sub oracle baseline))
    (Rat.clamp (Rat.div (Rat.sub raw baseline) (Rat.sub oracle baseline))
      (Rat.negFrac 1 1) Rat.one)
    (Rat.clamp (Rat.sub raw baseline) (Rat.negFrac 1 1) Rat.one)

/-- Multi-BO cell (eq. 2): `1 + clip ((o−f)/(1−f)) (−1) 1` when `1 − f ≥ 1/10`, else
`1 + clip (o − f) (−1/10) (1/10)`. -/
def multiBoCell (o f : Rat) : Rat :=
  cond (Rat.le gapMin (Rat.sub Rat.one f))
    (Rat.add Rat.one
      (Rat.clamp (Rat.div (Rat.sub o f) (Rat.sub Rat.one f)) (Rat.negFrac 1 1) Rat.one))
    (Rat.add Rat.one (Rat.clamp (Rat.sub o f) (Rat.neg gapMin) gapMin))

end Reward

end

noncomputable section

namespace Reward

/-- O-Eval of a verdict, with the gate's zeroing: an infeasible artifact (a failed gate
check) scores 0 whatever its metrics, a feasible one `oEval raw oracle`
(`tbmm.verdict.scoring.score_task`, status `gate_failed`). -/
def gatedOEval (feasible : Bool) (raw oracle : Rat) : Rat :=
  cond feasible (oEval raw oracle) Rat.zero

/-- Robust BO-Eval of a verdict, with the gate's zeroing: −1 for an infeasible artifact,
else `robustBo raw oracle baseline`. -/
def gatedRobustBo (feasible : Bool) (raw oracle baseline : Rat) : Rat :=
  cond feasible (robustBo raw oracle baseline) (Rat.negFrac 1 1)

end Reward

end
