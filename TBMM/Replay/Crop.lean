prelude
import TBMM.Rat
/-!
# TBMM.Replay.Crop — the crop-planting replay (CUMCM 2024 C, Problem 1) in Lean

A 2024–2030 planting plan's rule violations and its profit under either sale rule, as
functions of the plan and the village's data (`TBMM.Replay.CropData`, generated from the
attachments 附件1/附件2 by `tbmm.replay.crop_planting`). It restates the Python replay
`tbmm.replay.crop_planting` rule by rule; the task's `verification.md` states the model.

Representation (written by the certificate generator, never from artifact strings):

* a plan is one list per plot of 附件1 (in its order), each holding one `Year` per year
  2024–2030; a `Year` holds the first- and second-season plantings, each a list of
  `Planting`s (crop number, area) with strictly increasing crop numbers and positive areas
  (a season of up to three written `plant1`–`plant3`, which only spell the list shorter);
* areas are natural numbers in units of `1/(10·k)` mu for the plan's scale `k`; the data's
  plot areas, minimum areas and the 2023 plan are in tenths of a mu (scale 1);
* prices are natural numbers in units of `1/priceDen` yuan per jin.

The profit is computed exactly in integers scaled by `20·k·priceDen` and returned as a `Rat`:
per (year, season, crop) the production `Q` and the expected sales `D` (2023's production),
revenue `p·min(Q, D)` (case 1) or `p·min(Q, D) + p/2·(Q − min(Q, D))` (case 2), minus the
planting cost of every planting. Sums over many cells — per crop in a season's tally, per
rule over the plots — are kept as the digits of one natural number in a base the plan
bounds (`base`, `cbase`: no digit can reach it, so digits never carry), so that each step
is one GMP addition that both the elaborator and the kernel evaluate at once, rather than
a walk along a list or nine lazily evaluated fields; this halved the certificate's
evaluation. Every definition follows `TBMM.Core`'s rules: recursors
and `cond`, no `match`, everything `noncomputable`, obligations by kernel evaluation.
-/

set_option genCtorIdx false

namespace Crop

/-- One planting of a season: the crop number (附件1) and the area in plan units. -/
structure Planting where
  /-- 作物编号. -/
  crop : Nat
  /-- Area, in units of `1/(10·k)` mu. -/
  area : Nat

/-- A plot's year: its first- and second-season plantings. -/
structure Year where
  /-- 第一季 (single-season crops included). -/
  first : List Planting
  /-- 第二季. -/
  second : List Planting

/-- A plot of 附件1 and its 2023 plan (附件2). -/
structure Plot where
  /-- Land type: 0 flat, 1 terrace, 2 hillside, 3 irrigated, 4 greenhouse, 5 smart greenhouse. -/
  kind : Nat
  /-- Area in tenths of a mu. -/
  area : Nat
  /-- The 2023 plan of the plot, areas in tenths of a mu. -/
  history : Year

/-- One statistics row of 附件2 for a land type and season. -/
structure Stat where
  /-- 作物编号. -/
  crop : Nat
  /-- 亩产量, jin per mu. -/
  yield : Nat
  /-- 种植成本, yuan per mu. -/
  cost : Nat

/-- What a crop is: legume (豆类), grain (粮食: a single season filling the year). -/
structure Info where
  /-- A legume. -/
  legume : Bool
  /-- A grain crop. -/
  grain : Bool

/-- Crop numbers `lo` to `hi`. -/
structure Range where
  /-- First crop number. -/
  lo : Nat
  /-- Last crop number. -/
  hi : Nat

/-- The village's data and the rules' parameters. Lists indexed by a crop number have an
unused entry at index 0. -/
structure Data where
  /-- The plots of 附件1, in order. -/
  plots : List Plot
  /-- Statistics per land type, then season (0 first, 1 second), sorted by crop. -/
  stats : List (List (List Stat))
  /-- Per crop number. -/
  crops : List Info
  /-- The legumes as runs of crop numbers (an index of `crops`, checked against it). -/
  legumes : List Range
  /-- The grain crops as runs of crop numbers (an index of `crops`, checked against it). -/
  grains : List Range
  /-- Price per season, then crop number, in `1/priceDen` yuan per jin. -/
  prices : List (List Nat)
  /-- Expected sales (2023 production) per season, then crop number, in tenths of a jin. -/
  demand : List (List Nat)
  /-- Denominator of the prices. -/
  priceDen : Nat
  /-- Minimum planting area on open-air land (kinds below `openKinds`), tenths of a mu. -/
  minOpen : Nat
  /-- Minimum planting area in a greenhouse, tenths of a mu. -/
  minGreen : Nat
  /-- Land types below this code are open-air. -/
  openKinds : Nat
  /-- Land type of irrigated land. -/
  irrigated : Nat
  /-- Crop number of rice. -/
  rice : Nat
  /-- Most plots a crop may occupy in one season. -/
  maxPlots : Nat
  /-- Legume window in years. -/
  window : Nat
  /-- Number of planned years. -/
  years : Nat

/-- Broken rules per rule, counted as the Python replay counts them (`RULES` of
`tbmm.replay.crop_planting`, in that order), plus `form`: a plan not in the written form
(a season's crops not strictly increasing or an area not positive, a plot without one
`Year` per planned year, or not one list per plot) — the generator never writes one. -/
structure Counts where
  /-- Plantings the statistics do not list for their land type and season. -/
  suitability : Nat
  /-- Seasons planted beyond their plot's area. -/
  plotArea : Nat
  /-- Plantings below the minimum area. -/
  minArea : Nat
  /-- Irrigated plots with rice and anything else in one year. -/
  irrigatedMode : Nat
  /-- Irrigated plots with more than one second-season crop. -/
  irrigatedSecond : Nat
  /-- Repeated cropping. -/
  rotation : Nat
  /-- Legume windows short of the plot's area. -/
  legume : Nat
  /-- (year, season, crop) on more than `maxPlots` plots. -/
  scatter : Nat
  /-- A plan not in the written form. -/
  form : Nat

/-- What a plan achieves: broken rules per rule and the profit under the sale rule. -/
structure Result where
  /-- Rule violations, per rule. -/
  counts : Counts
  /-- Total profit in yuan. -/
  profit : Rat

/-- Plots and production of every crop in one season of one year, each as the digits of a
natural number in base `base` (crop number `c` is digit `c`), so that adding a planting is
two GMP additions instead of a walk along a list of crop numbers; the planting cost (yuan
times `10·k`) and the plantings the statistics do not list (unsuitable). -/
structure Tally where
  /-- Per crop number (digit), plots planted with it. -/
  plots : Nat
  /-- Per crop number (digit), production in jin times `10·k`. -/
  prod : Nat
  /-- Planting cost, in yuan times `10·k`. -/
  cost : Nat
  /-- Unsuitable plantings. -/
  unsuitable : Nat

end Crop

noncomputable section

namespace Crop

/-- A season of one planting (the certificates' short form of a one-element list). -/
def plant1 (c a : Nat) : List Planting := List.cons (Planting.mk c a) List.nil

/-- A season of two plantings. -/
def plant2 (c a c' a' : Nat) : List Planting :=
  List.cons (Planting.mk c a) (List.cons (Planting.mk c' a') List.nil)

/-- A season of three plantings. -/
def plant3 (c a c' a' c'' a'' : Nat) : List Planting :=
  List.cons (Planting.mk c a) (List.cons (Planting.mk c' a') (List.cons (Planting.mk c'' a'') List.nil))

/-- Boolean equality. -/
def boolEq (a b : Bool) : Bool := cond a b (not b)

/-- `a < b`. -/
def lt (a b : Nat) : Bool := not (Nat.ble b a)

/-- No broken rule. -/
def Counts.zero : Counts := Counts.mk 0 0 0 0 0 0 0 0 0

/-- Counts added rule by rule. -/
def Counts.add (a b : Counts) : Counts :=
  Counts.mk (Nat.add (Counts.suitability a) (Counts.suitability b))
    (Nat.add (Counts.plotArea a) (Counts.plotArea b)) (Nat.add (Counts.minArea a) (Counts.minArea b))
    (Nat.add (Counts.irrigatedMode a) (Counts.irrigatedMode b))
    (Nat.add (Counts.irrigatedSecond a) (Counts.irrigatedSecond b))
    (Nat.add (Counts.rotation a) (Counts.rotation b)) (Nat.add (Counts.legume a) (Counts.legume b))
    (Nat.add (Counts.scatter a) (Counts.scatter b)) (Nat.add (Counts.form a) (Counts.form b))

/-- Every broken rule, summed (the replay's `rule_violations`). -/
def Counts.total (c : Counts) : Nat :=
  Nat.add (Counts.suitability c) (Nat.add (Counts.plotArea c) (Nat.add (Counts.minArea c)
    (Nat.add (Counts.irrigatedMode c) (Nat.add (Counts.irrigatedSecond c) (Nat.add
      (Counts.rotation c) (Nat.add (Counts.legume c) (Nat.add (Counts.scatter c)
        (Counts.form c))))))))

/-- Rule-by-rule equality. -/
def Counts.beq (a b : Counts) : Bool :=
  and (Nat.beq (Counts.suitability a) (Counts.suitability b))
    (and (Nat.beq (Counts.plotArea a) (Counts.plotArea b))
      (and (Nat.beq (Counts.minArea a) (Counts.minArea b))
        (and (Nat.beq (Counts.irrigatedMode a) (Counts.irrigatedMode b))
          (and (Nat.beq (Counts.irrigatedSecond a) (Counts.irrigatedSecond b))
            (and (Nat.beq (Counts.rotation a) (Counts.rotation b))
              (and (Nat.beq (Counts.legume a) (Counts.legume b))
                (and (Nat.beq (Counts.scatter a) (Counts.scatter b))
                  (Nat.beq (Counts.form a) (Counts.form b)))))))))

/-- The element at index `i`, or `d` past the end. -/
def nth {α : Type} (d : α) (xs : List α) (i : Nat) : α :=
  List.rec (motive := fun _ => Nat → α) (fun _ => d)
    (fun a _ rest i => Nat.casesOn (motive := fun _ => α) i a (fun j => rest j)) xs i

/-- `xs` with `v` added at index `i` (unchanged past the end). -/
def addAt (xs : List Nat) (i v : Nat) : List Nat :=
  List.rec (motive := fun _ => Nat → List Nat) (fun _ => List.nil)
    (fun a t rest i =>
      Nat.casesOn (motive := fun _ => List Nat) i (List.cons (Nat.add a v) t)
        (fun j => List.cons a (rest j)))
    xs i

/-- Digit `i` of `n` in base `b`. -/
def digit (b n i : Nat) : Nat := Nat.mod (Nat.div n (Nat.pow b i)) b

/-- `n` zeros. -/
def zeros (n : Nat) : List Nat := Nat.rec List.nil (fun _ t => List.cons 0 t) n

/-- Whether a list is empty. -/
def isNil {α : Type} (xs : List α) : Bool :=
  List.casesOn (motive := fun _ => Bool) xs Bool.true (fun _ _ => Bool.false)

/-- Number of plantings satisfying `p`. -/
def countIf (p : Planting → Bool) (xs : List Planting) : Nat :=
  List.foldr (fun a n => cond (p a) (Nat.succ n) n) 0 xs

/-- Total area. -/
def sumArea (xs : List Planting) : Nat := List.foldr (fun a n => Nat.add (Planting.area a) n) 0 xs

/-- Whether crop `c` is planted. -/
def mem (c : Nat) (xs : List Planting) : Bool :=
  List.foldr (fun a b => or (Nat.beq (Planting.crop a) c) b) Bool.false xs

/-- Crop numbers strictly increasing and areas positive (the form every cell is written in). -/
def wellFormed (xs : List Planting) : Bool :=
  (List.rec (motive := fun _ => Nat → Bool) (fun _ => Bool.true)
    (fun a _ rest prev =>
      and (lt prev (Planting.crop a)) (and (lt 0 (Planting.area a)) (rest (Planting.crop a))))
    xs 0)

/-- The statistics row of a crop in a list sorted by crop, if any. -/
def findStat (c : Nat) (xs : List Stat) : Option Stat :=
  List.foldr (fun s o => cond (Nat.beq (Stat.crop s) c) (Option.some s) o) Option.none xs

/-- The statistics row of (land type, season, crop): `none` means the crop cannot grow there. -/
def statOf (d : Data) (kind season crop : Nat) : Option Stat :=
  findStat crop (nth List.nil (nth List.nil (Data.stats d) kind) season)

/-- What crop `c` is, from the table. -/
def info (d : Data) (c : Nat) : Info := nth (Info.mk Bool.false Bool.false) (Data.crops d) c

/-- Whether `c` lies in one of the runs. -/
def inRanges (rs : List Range) (c : Nat) : Bool :=
  List.foldr (fun r b => or (and (Nat.ble (Range.lo r) c) (Nat.ble c (Range.hi r))) b) Bool.false rs

/-- A legume (by the runs: a few comparisons instead of a table walk). -/
def isLegume (d : Data) (c : Nat) : Bool := inRanges (Data.legumes d) c

/-- A grain crop (by the runs). -/
def isGrain (d : Data) (c : Nat) : Bool := inRanges (Data.grains d) c

/-- The runs agree with the table for every crop number of the table. -/
def rangesMatch (d : Data) : Bool :=
  (List.rec (motive := fun _ => Nat → Bool) (fun _ => Bool.true)
    (fun i _ rest c =>
      and (and (boolEq (Info.legume i) (isLegume d c)) (boolEq (Info.grain i) (isGrain d c)))
        (rest (Nat.succ c)))
    (Data.crops d) 0)

/-- Minimum planting area on land type `kind`, tenths of a mu. -/
def minArea (d : Data) (kind : Nat) : Nat :=
  cond (lt kind (Data.openKinds d)) (Data.minOpen d) (Data.minGreen d)

/-- Number of plantings of a plot's years. -/
def plantings (ys : List Year) : Nat :=
  List.foldr (fun y n => Nat.add (List.length (Year.first y)) (Nat.add (List.length (Year.second y)) n))
    0 ys

/-- The base in which the per-plot violations are summed, rule `r` being digit `r` (the
order of `Counts`): three times one more than the plan's plots, years and plantings and the
2023 plantings. No rule counts more than twice per planting (rotation: a planting against
the year before and within its year; a 2023 planting once), twice per year (two seasons),
once per plot, and once for the whole plan, so each digit stays below the base: digits
never carry into each other, and the sum is one GMP addition per step instead of nine. -/
def cbase (d : Data) (plan : List (List Year)) : Nat :=
  Nat.mul 3 (Nat.succ (Nat.add (List.length plan)
    (List.foldr (fun ys n => Nat.add (Nat.add (List.length ys) (plantings ys)) n)
      (List.foldr (fun p n => Nat.add (plantings (List.cons (Plot.history p) List.nil)) n) 0
        (Data.plots d))
      plan)))

/-- `n` violations of rule `r` (digit `r` in base `c`). -/
def rule (c r n : Nat) : Nat := Nat.mul n (Nat.pow c r)

/-- Violations of one season of one plot, digits in base `c`: plantings below the minimum
area, an overfull season (scale `k`), a season not in the written form. (Unsuitable
plantings are counted by the tallies, which look every planting up anyway.) -/
def seasonViolations (d : Data) (c k kind area : Nat) (xs : List Planting) : Nat :=
  Nat.add (rule c 1 (cond (lt (Nat.mul area k) (sumArea xs)) 1 0))
    (Nat.add (rule c 2 (countIf (fun a => lt (Planting.area a) (Nat.mul (minArea d kind) k)) xs))
      (rule c 8 (cond (wellFormed xs) 0 1)))

/-- Violations of one year of one plot, digits in base `c`: both seasons; on irrigated
land, rice with anything else that year, and more than one second-season crop. -/
def yearViolations (d : Data) (c k : Nat) (p : Plot) (y : Year) : Nat :=
  let irr := Nat.beq (Plot.kind p) (Data.irrigated d)
  let f := Year.first y
  let s := Year.second y
  Nat.add (seasonViolations d c k (Plot.kind p) (Plot.area p) f)
    (Nat.add (seasonViolations d c k (Plot.kind p) (Plot.area p) s)
      (Nat.add
        (rule c 3 (cond (and irr (and (mem (Data.rice d) f)
          (or (lt 1 (List.length f)) (not (isNil s))))) 1 0))
        (rule c 4 (cond (and irr (lt 1 (List.length s))) 1 0))))

/-- Crops of `xs` also in `ys`. -/
def common (xs ys : List Planting) : Nat := countIf (fun a => mem (Planting.crop a) ys) xs

/-- Grain crops of `xs` also in `ys`. -/
def commonGrain (d : Data) (xs ys : List Planting) : Nat :=
  countIf (fun a => and (mem (Planting.crop a) ys) (isGrain d (Planting.crop a))) xs

/-- Repeated cropping along a plot's years, `prev` being the year before the first:
second → next first, a grain's first → next first, and first → second within a year. -/
def rotation (d : Data) (prev : Year) (ys : List Year) : Nat :=
  List.rec (motive := fun _ => Year → Nat) (fun _ => 0)
    (fun cur _ rest prev =>
      Nat.add (common (Year.second prev) (Year.first cur))
        (Nat.add (commonGrain d (Year.first prev) (Year.first cur))
          (Nat.add (common (Year.first cur) (Year.second cur)) (rest cur))))
    ys prev

/-- Legume area of a year. -/
def legumeArea (d : Data) (y : Year) : Nat :=
  let add := fun a n => cond (isLegume d (Planting.crop a)) (Nat.add (Planting.area a) n) n
  List.foldr add (List.foldr add 0 (Year.second y)) (Year.first y)

/-- Sum of the first `w` values. -/
def takeSum (w : Nat) (xs : List Nat) : Nat :=
  List.rec (motive := fun _ => Nat → Nat) (fun _ => 0)
    (fun a _ rest w => Nat.casesOn (motive := fun _ => Nat) w 0 (fun w' => Nat.add a (rest w')))
    xs w

/-- Windows of `w` consecutive values whose sum is below `need`. -/
def shortWindows (w need : Nat) (xs : List Nat) : Nat :=
  List.rec (motive := fun _ => Nat) 0
    (fun a t rest =>
      cond (and (Nat.ble w (List.length (List.cons a t))) (lt (takeSum w (List.cons a t)) need))
        (Nat.succ rest) rest)
    xs

/-- Legume windows of a plot that fall short of its area (2023's plan included, scaled). -/
def legume (d : Data) (k : Nat) (p : Plot) (ys : List Year) : Nat :=
  shortWindows (Data.window d) (Nat.mul (Plot.area p) k)
    (List.cons (Nat.mul (legumeArea d (Plot.history p)) k)
      (List.foldr (fun y t => List.cons (legumeArea d y) t) List.nil ys))

/-- Every per-plot violation of a plan (scale `k`), digits in base `c`: seasons, years,
rotation, legumes, and a plot whose list of years is not `years` long. -/
def plotViolations (d : Data) (c k : Nat) (p : Plot) (ys : List Year) : Nat :=
  Nat.add (List.foldr (fun y n => Nat.add (yearViolations d c k p y) n) 0 ys)
    (Nat.add (rule c 5 (rotation d (Plot.history p) ys))
      (Nat.add (rule c 6 (legume d k p ys))
        (rule c 8 (cond (Nat.beq (List.length ys) (Data.years d)) 0 1))))

/-- `f` over plots and their plan years in parallel, summed (digits in base `c`); a plan
with a different number of plots than 附件1 is not in the written form. -/
def overPlots (d : Data) (c : Nat) (f : Plot → List Year → Nat) (plan : List (List Year)) : Nat :=
  Nat.add
    (List.rec (motive := fun _ => List (List Year) → Nat) (fun _ => 0)
      (fun p _ rest plan =>
        List.casesOn (motive := fun _ => Nat) plan 0
          (fun ys plan' => Nat.add (f p ys) (rest plan')))
      (Data.plots d) plan)
    (rule c 8 (cond (Nat.beq (List.length plan) (List.length (Data.plots d))) 0 1))

/-- The counts whose rule `r` is digit `r` of `n` in base `c`. -/
def Counts.ofDigits (c n : Nat) : Counts :=
  Counts.mk (digit c n 0) (digit c n 1) (digit c n 2) (digit c n 3) (digit c n 4) (digit c n 5)
    (digit c n 6) (digit c n 7) (digit c n 8)

/-- The larger of two numbers. -/
def max (a b : Nat) : Nat := cond (Nat.ble a b) b a

/-- The largest yield of the statistics. -/
def maxYield (d : Data) : Nat :=
  List.foldr (fun kind m => List.foldr (fun season m =>
      List.foldr (fun s m => max (Stat.yield s) m) m season) m kind)
    0 (Data.stats d)

/-- `n` plus, per planting, its area times `y`, plus one. -/
def weigh (y : Nat) (xs : List Planting) (n : Nat) : Nat :=
  List.foldr (fun a n => Nat.add (Nat.succ (Nat.mul (Planting.area a) y)) n) n xs

/-- The base of a tally's digits for a plan: one more than the sum, over all its plantings,
of area times the largest yield plus one. A digit of a tally sums a subset of these terms
(production: area times a yield of the statistics, at most the largest; plots: one per
planting), so it stays below the base: digits never carry into each other. -/
def base (d : Data) (plan : List (List Year)) : Nat :=
  let y := maxYield d
  Nat.succ (List.foldr (fun ys n =>
      List.foldr (fun yr n => weigh y (Year.first yr) (weigh y (Year.second yr) n)) n ys)
    0 plan)

/-- One season's plantings of a plot added to a tally (digits in base `b`): each planting
is looked up once and adds `b ^ crop` times its plot and production. -/
def tallySeason (d : Data) (b kind season : Nat) (xs : List Planting) (t : Tally) : Tally :=
  List.foldr (fun a t =>
    let w := Nat.pow b (Planting.crop a)
    Option.casesOn (motive := fun _ => Tally) (statOf d kind season (Planting.crop a))
      (Tally.mk (Nat.add (Tally.plots t) w) (Tally.prod t) (Tally.cost t)
        (Nat.succ (Tally.unsuitable t)))
      (fun s => Tally.mk (Nat.add (Tally.plots t) w)
        (Nat.add (Tally.prod t) (Nat.mul (Nat.mul (Planting.area a) (Stat.yield s)) w))
        (Nat.add (Tally.cost t) (Nat.mul (Planting.area a) (Stat.cost s))) (Tally.unsuitable t)))
    t xs

/-- The tally of nothing. -/
def emptyTally : Tally := Tally.mk 0 0 0 0

/-- The tally of one season of year `i` over every plot (digits in base `b`). -/
def tally (d : Data) (b : Nat) (plan : List (List Year)) (i season : Nat) : Tally :=
  List.rec (motive := fun _ => List (List Year) → Tally)
    (fun _ => emptyTally)
    (fun p _ rest plan =>
      List.casesOn (motive := fun _ => Tally) plan emptyTally
        (fun ys plan' =>
          let y := nth (Year.mk List.nil List.nil) ys i
          tallySeason d b (Plot.kind p) season
            (cond (Nat.beq season 0) (Year.first y) (Year.second y)) (rest plan')))
    (Data.plots d) plan

/-- Sums of a season: unsuitable plantings, scattered crops, and revenue and cost in yuan
times `20·k·priceDen`. -/
structure Sums where
  /-- Unsuitable plantings. -/
  unsuitable : Nat
  /-- Crops on more than `maxPlots` plots. -/
  scatter : Nat
  /-- Revenue. -/
  revenue : Nat
  /-- Cost, in yuan times `20·k·priceDen`. -/
  cost : Nat

/-- One season of one year: crops on more than `maxPlots` plots and unsuitable plantings;
revenue per crop `2·p·min(Q, D)`, plus `p·(Q − min(Q, D))` when the surplus sells at half
price (`half`); the cost. One walk over the crop numbers. -/
def seasonSums (d : Data) (half : Bool) (k b season : Nat) (t : Tally) : Sums :=
  List.rec (motive := fun _ => Nat → List Nat → List Nat → Sums)
    (fun _ _ _ => Sums.mk (Tally.unsuitable t) 0 0
      (Nat.mul (Nat.mul 2 (Data.priceDen d)) (Tally.cost t)))
    (fun _ _ rest i prices demand =>
      List.casesOn (motive := fun _ => Sums) prices (rest (Nat.succ i) List.nil List.nil)
        (fun p prices' =>
        List.casesOn (motive := fun _ => Sums) demand (rest (Nat.succ i) List.nil List.nil)
          (fun dm demand' =>
          let n := digit b (Tally.plots t) i
          let q := digit b (Tally.prod t) i
          let dk := Nat.mul dm k
          let sold := cond (Nat.ble q dk) q dk
          let r := rest (Nat.succ i) prices' demand'
          -- a crop on no plot produces nothing: it adds no revenue and scatters nowhere
          cond (Nat.beq n 0) r
          (Sums.mk (Sums.unsuitable r)
            (cond (lt (Data.maxPlots d) n) (Nat.succ (Sums.scatter r)) (Sums.scatter r))
            (Nat.add (Nat.add (Nat.mul 2 (Nat.mul p sold))
                (cond half (Nat.mul p (Nat.sub q sold)) 0))
              (Sums.revenue r))
            (Sums.cost r)))))
    (Data.crops d) 0 (nth List.nil (Data.prices d) season) (nth List.nil (Data.demand d) season)

/-- Two sums added. -/
def Sums.add (a b : Sums) : Sums :=
  Sums.mk (Nat.add (Sums.unsuitable a) (Sums.unsuitable b)) (Nat.add (Sums.scatter a) (Sums.scatter b))
    (Nat.add (Sums.revenue a) (Sums.revenue b)) (Nat.add (Sums.cost a) (Sums.cost b))

/-- The replay of a plan at scale `k` (areas in `1/(10·k)` mu) under the sale rule `half`
(false: case 1, surplus wasted; true: case 2, surplus at half price). -/
def replay (d : Data) (half : Bool) (k : Nat) (plan : List (List Year)) : Result :=
  let b := base d plan
  let sums := Nat.rec (motive := fun _ => Sums) (Sums.mk 0 0 0 0)
    (fun i acc =>
      Sums.add (Sums.add (seasonSums d half k b 0 (tally d b plan i 0))
        (seasonSums d half k b 1 (tally d b plan i 1))) acc)
    (Data.years d)
  Result.mk
    (Counts.add (Counts.ofDigits (cbase d plan) (overPlots d (cbase d plan) (plotViolations d (cbase d plan) k) plan))
      (Counts.mk (Sums.unsuitable sums) 0 0 0 0 0 0 (Sums.scatter sums) 0))
    (Rat.ofNumDen (Int.subNatNat (Sums.revenue sums) (Sums.cost sums))
      (Nat.mul (Nat.mul 20 k) (Data.priceDen d)))

/-- The certificate's statement: the replay finds exactly the broken rules `counts`, rule
by rule (what the gate reads), `violations` of them in all, and the profit `profit`
(compared as rationals). -/
def agrees (d : Data) (half : Bool) (k : Nat) (plan : List (List Year)) (counts : Counts)
    (violations : Nat) (profit : Rat) : Bool :=
  let r := replay d half k plan
  and (Counts.beq (Result.counts r) counts)
    (and (Nat.beq (Counts.total (Result.counts r)) violations) (Rat.beq (Result.profit r) profit))

/-- Consistency of generated data: each statistics row's crop has a price for that season
(the revenue reads one price per season and crop). -/
def pricesCover (d : Data) : Bool :=
  List.foldr (fun kind b => and
    (and (List.foldr (fun s b => and (lt 0 (nth 0 (nth List.nil (Data.prices d) 0) (Stat.crop s))) b)
        Bool.true (nth List.nil kind 0))
      (List.foldr (fun s b => and (lt 0 (nth 0 (nth List.nil (Data.prices d) 1) (Stat.crop s))) b)
        Bool.true (nth List.nil kind 1)))
    b) Bool.true (Data.stats d)

/-- The expected sales recomputed from the 2023 plan (tenths of a jin, per season and crop):
what `Data.demand` must equal. -/
def demandOf (d : Data) : List (List Nat) :=
  let hist := List.foldr (fun p t => List.cons (List.cons (Plot.history p) List.nil) t) List.nil
    (Data.plots d)
  let b := base d hist
  let prods := fun (t : Tally) =>
    List.rec (motive := fun _ => Nat → List Nat) (fun _ => List.nil)
      (fun _ _ rest i => List.cons (digit b (Tally.prod t) i) (rest (Nat.succ i))) (Data.crops d) 0
  List.cons (prods (tally d b hist 0 0)) (List.cons (prods (tally d b hist 0 1)) List.nil)

/-- Equality of lists of naturals. -/
def natsEq (xs ys : List Nat) : Bool :=
  List.rec (motive := fun _ => List Nat → Bool) (fun ys => isNil ys)
    (fun a _ rest ys => List.casesOn (motive := fun _ => Bool) ys Bool.false
      (fun b ys' => and (Nat.beq a b) (rest ys')))
    xs ys

/-- Equality of lists of lists of naturals. -/
def natss (xs ys : List (List Nat)) : Bool :=
  List.rec (motive := fun _ => List (List Nat) → Bool) (fun ys => isNil ys)
    (fun a _ rest ys => List.casesOn (motive := fun _ => Bool) ys Bool.false
      (fun b ys' => and (natsEq a b) (rest ys')))
    xs ys

end Crop

end
