prelude
import TBMM.Gate
import TBMM.Reward
/-!
# TBMM.Verdict — the whole verdict on an artifact, as one Lean function

`Verdict.eval task art` is what `tbmm.verdict.pipeline.evaluate` decides about a resolved
artifact, recomputed from the task's data and the artifact alone:

1. every gate check is expanded and evaluated (`Check.run`); a check with a `fail` or
   `bad` instance makes the artifact infeasible, as does a declared list shorter than the
   statement's minimum (`MinItems.run`);
2. a check with a `missing`/`noList` instance makes the metrics it protects
   unverifiable: they score as absent (0), whatever the artifact claims;
3. each metric's reward is `Reward.score` of the value at its path against the task's
   anchor; the raw score `R` is their weighted mean (0 without weight);
4. the oracle's raw score `O` is the same mean at the anchors, the baseline's `F` the
   same mean at the baseline entry's values (an unmapped metric counts as absent);
5. each reference paper's `R(m, S_p)` scores the artifact's values against that paper's
   values on its fields (eq. 1); the headline O-Eval is their mean clamped to [0, 1] —
   `oEval (mean) 1` — or, with no such paper, `oEval R O`;
6. the gate zeroes: `Reward.gatedOEval` and `Reward.gatedRobustBo` (infeasible: 0 and −1).

A certificate states `and (Verdict.is (Verdict.eval task art) feasible oEval robustBo)
(Verdict.flagsAre task art fs ls)`: the verdict, and which instances fail, as the task term
(generated once per task, imported by every verify certificate) runs every check.
-/

set_option genCtorIdx false

/-- A gate check with the metrics it protects (their positions in `Task.metrics`). -/
structure GateEntry where
  /-- The check. -/
  check : Check
  /-- The metrics a missing input of this check makes unverifiable. -/
  protects : List Nat

/-- A scored metric of the task (`tbmm.suite.tasks.Metric`; excluded metrics are not listed). -/
structure Metric where
  /-- Where the artifact reports it. -/
  path : List Seg
  /-- How it is scored. -/
  dir : Direction
  /-- Its value domain. -/
  dom : Domain
  /-- Its weight in the raw score. -/
  weight : Rat
  /-- Its tolerance band (before the degenerate-band rule). -/
  band : Rat
  /-- The task's anchor value `O`. -/
  anchor : Rat
  /-- The baseline entry's value (`none`: unmapped, scored as absent). -/
  baseline : Option Rat

/-- One value a reference paper reports: the metric's position and the paper's value. -/
structure PaperValue where
  /-- The metric's position in `Task.metrics`. -/
  metric : Nat
  /-- The paper's value, used as the anchor. -/
  value : Rat

/-- A task as the verdict needs it: gate, metric panel, reference panel (eq. 1). -/
structure Task where
  /-- The gate checks, in `gate.toml` order. -/
  checks : List GateEntry
  /-- The scored metrics, in `scoring.toml` order. -/
  metrics : List Metric
  /-- The reference papers with scored values (each a non-empty list). -/
  papers : List (List PaperValue)
  /-- The declared lists with a minimum length. -/
  lists : List MinItems

/-- What is decided about an artifact. -/
structure Verdict where
  /-- No gate check failed. -/
  feasible : Bool
  /-- The headline O-Eval (0 when infeasible). -/
  oEval : Rat
  /-- Robust BO-Eval against the baseline (−1 when infeasible). -/
  robustBo : Rat

noncomputable section

namespace Verdict

/-- A check's flags on the artifact: none on the empty artifact `{}`, which `tbmm.verdict.gate`
only warns about (every metric is absent from it anyway, so it scores 0). -/
def runCheck (e : GateEntry) (art : Json) : List Flag :=
  cond (Json.isEmpty art) List.nil (Check.run (GateEntry.check e) art)

/-- Each check's flags on the artifact, in order. -/
def flags (t : Task) (art : Json) : List (List Flag) :=
  List.map (fun e => runCheck e art) (Task.checks t)

/-- The flags of check `k` (the per-check lemmas of a certificate state them). -/
def checkFlags (t : Task) (k : Nat) (art : Json) : List Flag :=
  Option.getD (Option.bind (List.nth (Task.checks t) k) (fun e => Option.some (runCheck e art)))
    List.nil

/-- A declared list's flags on the artifact (none on the empty artifact, as for checks). -/
def runList (m : MinItems) (art : Json) : List Flag :=
  cond (Json.isEmpty art) List.nil (MinItems.run m art)

/-- The flags of the declared list `k` (those too short). -/
def listFlags (t : Task) (k : Nat) (art : Json) : List Flag :=
  Option.getD (Option.bind (List.nth (Task.lists t) k) (fun m => Option.some (runList m art)))
    List.nil

/-- Feasible: no instance of any check fails or is not a number. -/
def feasibleOf (fs : List (List Flag)) : Bool :=
  not (List.any (List.any (fun f => Status.fails (Flag.status f))) fs)

/-- The metrics made unverifiable: the `protects` of every check with a missing input. -/
def unverifiable (t : Task) (fs : List (List Flag)) : List Nat :=
  List.rec (motive := fun _ => List (List Flag) → List Nat)
    (fun _ => List.nil)
    (fun e _ r fs =>
      List.casesOn (motive := fun _ => List Nat) fs List.nil
        (fun f ft => cond (List.any (fun x => Status.unverifiable (Flag.status x)) f)
          (List.append (GateEntry.protects e) (r ft)) (r ft)))
    (Task.checks t) fs

/-- The value the metric at position `k` is scored on: absent when unverifiable. -/
def value (art : Json) (unv : List Nat) (k : Nat) (m : Metric) : Option Rat :=
  cond (List.memNat k unv) Option.none (Lookup.toOption (Json.lookup (Json.at (Metric.path m) art)))

/-- `Σ w·r / Σ w` over the metrics with their positions, the reward of each given by `r`;
0 without weight (`tbmm.verdict.scoring.raw_score … or 0`). -/
def meanOver (ms : List Metric) (r : Nat → Metric → Rat) : Rat :=
  Option.getD
    (Reward.weightedMean
      (List.rec (motive := fun _ => Nat → List Weighted)
        (fun _ => List.nil)
        (fun m _ acc k => List.cons (Weighted.mk (Metric.weight m) (r k m)) (acc (Nat.succ k)))
        ms 0))
    Rat.zero

/-- The metric's reward for a value against an anchor. -/
def reward (m : Metric) (x : Option Rat) (anchor : Rat) : Rat :=
  Reward.score (Metric.dir m) (Metric.dom m) x anchor (Metric.band m)

/-- The raw score `R` of the artifact against the task's anchors. -/
def raw (t : Task) (art : Json) (unv : List Nat) : Rat :=
  meanOver (Task.metrics t) (fun k m => reward m (value art unv k m) (Metric.anchor m))

/-- The oracle's raw score `O`: the anchors scored against themselves. -/
def oracle (t : Task) : Rat :=
  meanOver (Task.metrics t) (fun _ m => reward m (Option.some (Metric.anchor m)) (Metric.anchor m))

/-- The baseline's raw score `F`. -/
def baseline (t : Task) : Rat :=
  meanOver (Task.metrics t) (fun _ m => reward m (Metric.baseline m) (Metric.anchor m))

/-- `R(m, S_p)`: the artifact's values on the paper's fields, the paper's values as anchors,
weights renormalised over those fields (`none` without weight). -/
def paper (t : Task) (art : Json) (unv : List Nat) (p : List PaperValue) : Option Rat :=
  Reward.weightedMean
    (List.map
      (fun pv => Option.casesOn (motive := fun _ => Weighted) (List.nth (Task.metrics t) (PaperValue.metric pv))
        (Weighted.mk Rat.zero Rat.zero)
        (fun m => Weighted.mk (Metric.weight m)
          (reward m (value art unv (PaperValue.metric pv) m) (PaperValue.value pv))))
      p)

/-- The papers' scores (those with weight). -/
def paperScores (t : Task) (art : Json) (unv : List Nat) : List Rat :=
  List.foldr
    (fun p acc => Option.casesOn (motive := fun _ => List Rat) (paper t art unv p) acc
      (fun s => List.cons s acc))
    List.nil (Task.papers t)

/-- The headline O-Eval, zeroed when infeasible: eq. (1) over the papers, clamped to
[0, 1] (`oEval mean 1`), or the single-anchor `oEval R O` when no paper scores. -/
def headline (feasible : Bool) (t : Task) (art : Json) (unv : List Nat) (r o : Rat) : Rat :=
  Option.casesOn (motive := fun _ => Rat) (Reward.mean (paperScores t art unv))
    (Reward.gatedOEval feasible r o)
    (fun m => Reward.gatedOEval feasible m Rat.one)

/-- The verdict, given each check's flags `fs`, each declared list's flags `ls`, the
oracle's raw score `o` and the baseline's `f` (a certificate states each of them in a
lemma of its own, so the gate is evaluated once and `o`, `f` once per task): feasible
when nothing fails. -/
def given (t : Task) (art : Json) (fs ls : List (List Flag)) (o f : Rat) : Verdict :=
  Verdict.mk (and (feasibleOf fs) (feasibleOf ls))
    (headline (and (feasibleOf fs) (feasibleOf ls)) t art (unverifiable t fs)
      (raw t art (unverifiable t fs)) o)
    (Reward.gatedRobustBo (and (feasibleOf fs) (feasibleOf ls)) (raw t art (unverifiable t fs)) o f)

/-- The declared lists' flags on the artifact, in order. -/
def lists (t : Task) (art : Json) : List (List Flag) :=
  List.map (fun m => runList m art) (Task.lists t)

/-- The verdict on an artifact. -/
def eval (t : Task) (art : Json) : Verdict :=
  given t art (flags t art) (lists t art) (oracle t) (baseline t)

/-- Flags group by group: as many groups, each the same flags in the same order. -/
def groupsBeq (xs ys : List (List Flag)) : Bool :=
  List.rec (motive := fun _ => List (List Flag) → Bool)
    (fun ys => List.casesOn (motive := fun _ => Bool) ys Bool.true (fun _ _ => Bool.false))
    (fun x _ r ys => List.casesOn (motive := fun _ => Bool) ys Bool.false
      (fun y yt => and (Flag.listBeq x y) (r yt)))
    xs ys

/-- Whether the artifact's flags are exactly `fs` (per check, in the task's order) and `ls`
(per declared list): the failing instances a certificate names, every check run by the task
term itself, so none can be left out. -/
def flagsAre (t : Task) (art : Json) (fs ls : List (List Flag)) : Bool :=
  and (groupsBeq (flags t art) fs) (groupsBeq (lists t art) ls)

/-- Whether the verdict is `⟨feasible, oEval, robustBo⟩` (rationals compared as numbers). -/
def is (v : Verdict) (feasible : Bool) (oEval robustBo : Rat) : Bool :=
  and (Nat.beq (cond (Verdict.feasible v) 1 0) (cond feasible 1 0))
    (and (Rat.beq (Verdict.oEval v) oEval) (Rat.beq (Verdict.robustBo v) robustBo))

end Verdict

end
