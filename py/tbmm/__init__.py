"""TB-MathModel: agentic, verifiable mathematical-modeling benchmark.

The public API (see README, "Python API"): `tasks`, `load_task`, `score`, `gate`, `replay`,
`verify`, `verify_many`, `extract_artifact`, `verify_completion`, `schemas`, and the RL reward adapters in
`tbmm.rewards`. Names are imported on first use, so `import tbmm` stays cheap.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__version__ = "0.1.0"

_API = (
    "tasks",
    "load_task",
    "score",
    "gate",
    "replay",
    "verify",
    "verify_completion",
    "verify_many",
    "extract_artifact",
    "schemas",
    "TaskInfo",
    "ScoreResult",
    "GateResult",
    "ReplayResult",
    "Verdict",
    "Extraction",
    "SCHEMA_VERSION",
)
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:
        from tbmm import api

        return getattr(api, name)
    raise AttributeError(f"module 'tbmm' has no attribute {name!r}")


class _Package(types.ModuleType):
    """Four internal modules share a name with a public function (`tbmm.suite.tasks`, `tbmm.verdict.gate`,
    `tbmm.replay`, `tbmm.verify`); importing one must not replace the function on the
    package. Internal code imports them as `from tbmm.verdict.gate import run_gate`."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _API and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
