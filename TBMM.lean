prelude
import TBMM.Core
import TBMM.Int
import TBMM.Rat
import TBMM.Forms
import TBMM.Reward
/-!
# TBMM — the Lean layer of TB-MathModel

An Init-free library (every module starts with `prelude`, see `TBMM.Core`): exact
integers and rationals, the six gate forms (`TBMM.Forms`) and the scoring rules
(`TBMM.Reward`), mirroring `tbmm.forms` and `tbmm.rules`. Generated certificates
(`TBMM/Cert/*.lean`) state their obligations as `Eq (checker …) true` and prove them by
`rfl`, so the Lean kernel itself evaluates every check.
-/
