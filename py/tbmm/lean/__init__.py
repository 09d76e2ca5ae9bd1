"""The bridge to Lean: toolchain discovery, library build, kernel checks and audit.

Entry points for the rest of `tbmm`:

* `find_toolchain()` / `run_lean(args, cwd, env)` — `tbmm.lean.runtime`
* `build(root)` and `check_module(path, root)` — `tbmm.lean.build`
* `audit(root, obligations=...)` — `tbmm.lean.audit`
* `rat`, `rat_list`, `theorem`, `module`, … — `tbmm.core.lean_syntax`
"""
