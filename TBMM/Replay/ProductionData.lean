prelude
import TBMM.Replay.Production
/-! # TBMM.Replay.ProductionData — Tables 1 and 2 of CUMCM 2024 B as Lean terms

Generated from `tasks/CUMCM/cumcm-2024-b-production-decision/reference/tables.json`
(itself extracted from the statement's PDF) by `tbmm.replay.production_decision`;
do not edit. `q2Case<k>` is case k of Table 1; `q3` is Table 2 with Figure 1's tree. -/

noncomputable section
namespace Production.Data

/-- Table 1, case 1. -/
def q2Case1 : Production.Q2Case :=
  Production.Q2Case.mk (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 4 1) (Rat.frac 2 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 18 1) (Rat.frac 3 1)) List.nil))
    (Production.Step.mk (Rat.frac 1 10) (Rat.frac 6 1) (Rat.frac 3 1) (Rat.frac 5 1)) (Production.Market.mk (Rat.frac 56 1) (Rat.frac 6 1))

/-- Table 1, case 2. -/
def q2Case2 : Production.Q2Case :=
  Production.Q2Case.mk (List.cons (Production.Part.mk (Rat.frac 1 5) (Rat.frac 4 1) (Rat.frac 2 1)) (List.cons (Production.Part.mk (Rat.frac 1 5) (Rat.frac 18 1) (Rat.frac 3 1)) List.nil))
    (Production.Step.mk (Rat.frac 1 5) (Rat.frac 6 1) (Rat.frac 3 1) (Rat.frac 5 1)) (Production.Market.mk (Rat.frac 56 1) (Rat.frac 6 1))

/-- Table 1, case 3. -/
def q2Case3 : Production.Q2Case :=
  Production.Q2Case.mk (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 4 1) (Rat.frac 2 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 18 1) (Rat.frac 3 1)) List.nil))
    (Production.Step.mk (Rat.frac 1 10) (Rat.frac 6 1) (Rat.frac 3 1) (Rat.frac 5 1)) (Production.Market.mk (Rat.frac 56 1) (Rat.frac 30 1))

/-- Table 1, case 4. -/
def q2Case4 : Production.Q2Case :=
  Production.Q2Case.mk (List.cons (Production.Part.mk (Rat.frac 1 5) (Rat.frac 4 1) (Rat.frac 1 1)) (List.cons (Production.Part.mk (Rat.frac 1 5) (Rat.frac 18 1) (Rat.frac 1 1)) List.nil))
    (Production.Step.mk (Rat.frac 1 5) (Rat.frac 6 1) (Rat.frac 2 1) (Rat.frac 5 1)) (Production.Market.mk (Rat.frac 56 1) (Rat.frac 30 1))

/-- Table 1, case 5. -/
def q2Case5 : Production.Q2Case :=
  Production.Q2Case.mk (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 4 1) (Rat.frac 8 1)) (List.cons (Production.Part.mk (Rat.frac 1 5) (Rat.frac 18 1) (Rat.frac 1 1)) List.nil))
    (Production.Step.mk (Rat.frac 1 10) (Rat.frac 6 1) (Rat.frac 2 1) (Rat.frac 5 1)) (Production.Market.mk (Rat.frac 56 1) (Rat.frac 10 1))

/-- Table 1, case 6. -/
def q2Case6 : Production.Q2Case :=
  Production.Q2Case.mk (List.cons (Production.Part.mk (Rat.frac 1 20) (Rat.frac 4 1) (Rat.frac 2 1)) (List.cons (Production.Part.mk (Rat.frac 1 20) (Rat.frac 18 1) (Rat.frac 3 1)) List.nil))
    (Production.Step.mk (Rat.frac 1 20) (Rat.frac 6 1) (Rat.frac 3 1) (Rat.frac 40 1)) (Production.Market.mk (Rat.frac 56 1) (Rat.frac 10 1))

/-- Table 1, every case in its order. -/
def q2Cases : List Production.Q2Case :=
  (List.cons q2Case1 (List.cons q2Case2 (List.cons q2Case3 (List.cons q2Case4 (List.cons q2Case5 (List.cons q2Case6 List.nil))))))

/-- Table 2 (with Figure 1's assembly tree). -/
def q3 : Production.Q3Line :=
  Production.Q3Line.mk (List.cons (Production.Semi.mk (Production.Step.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 4 1) (Rat.frac 6 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 2 1) (Rat.frac 1 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 1 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 12 1) (Rat.frac 2 1)) List.nil)))) (List.cons (Production.Semi.mk (Production.Step.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 4 1) (Rat.frac 6 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 2 1) (Rat.frac 1 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 1 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 12 1) (Rat.frac 2 1)) List.nil)))) (List.cons (Production.Semi.mk (Production.Step.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 4 1) (Rat.frac 6 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 1 1)) (List.cons (Production.Part.mk (Rat.frac 1 10) (Rat.frac 12 1) (Rat.frac 2 1)) List.nil))) List.nil)))
    (Production.Step.mk (Rat.frac 1 10) (Rat.frac 8 1) (Rat.frac 6 1) (Rat.frac 10 1)) (Production.Market.mk (Rat.frac 200 1) (Rat.frac 40 1))

end Production.Data
end
