prelude
import TBMM.Core
import TBMM.Int
import TBMM.Rat
import TBMM.Forms
import TBMM.Reward
import TBMM.Json
import TBMM.Gate
import TBMM.Verdict
import TBMM.Meaning
import TBMM.Theorems
import TBMM.Replay.Production
import TBMM.Replay.ProductionData
import TBMM.Replay.Crop
import TBMM.Replay.CropData
/-!
# TBMM — the Lean layer of TB-MathModel

An Init-free library (every module starts with `prelude`, see `TBMM.Core`): exact
integers and rationals, the six gate forms (`TBMM.Forms`) and the scoring rules
(`TBMM.Reward`), mirroring `tbmm.core.forms` and `tbmm.core.rules`, theorems about those rules
for all inputs (`TBMM.Theorems`, on the lemma library `TBMM.Lemmas.*`), and exact replays
stated as Lean functions (`TBMM.Replay.*`, with their tasks' data generated as Lean terms).
Generated certificates
(`TBMM/Cert/*.lean`) state their obligations as `Eq (checker …) true` and prove them by
`rfl`, so the Lean kernel itself evaluates every check.
-/
