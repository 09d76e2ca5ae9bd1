"""Harbor's conventions that tbmm writes to and reads from (Harbor 0.26, its task schema
1.x and its job directories), in one place so export, the verifier entry point and ingest
agree on them.

Verifier side (inside any Harbor environment): the tests live in `/tests`, the verifier
writes into `/logs/verifier`; Harbor reads `reward.json` (a flat object of finite numbers)
if it exists, else `reward.txt` (one number), and a verifier that writes neither is a
verifier error, not a score. In `separate` verifier mode the artifacts a task declares are
copied from the agent's environment into the verifier's at their original paths.

Job side: `<jobs_dir>/<job_name>/` holds `config.json`, `result.json` and one directory
per trial, `<trial_name>/` with `config.json`, `result.json` (Harbor's TrialResult),
`agent/` (the agent's logs; `trajectory.json` in ATIF when the agent writes one),
`verifier/` (what the verifier wrote, reward files included) and `artifacts/` (the
collected artifacts, each under its source path without the leading `/`).
"""

from __future__ import annotations

from pathlib import PurePosixPath

TESTS_DIR = PurePosixPath("/tests")
VERIFIER_DIR = PurePosixPath("/logs/verifier")
REWARD_TXT = "reward.txt"
REWARD_JSON = "reward.json"
VERDICT_JSON = "verdict.json"  # ours: the full VerifyReport, exact values as text
TEST_STDOUT = "test-stdout.txt"

# Job directory
TRIAL_RESULT = "result.json"
TRIAL_CONFIG = "config.json"
AGENT_DIR = "agent"
TRAJECTORY = "trajectory.json"  # ATIF, written by agents that support it
ARTIFACTS_DIR = "artifacts"

# Where the verifier image keeps tbmm (a venv), and its Lean build cache.
VERIFIER_VENV = PurePosixPath("/opt/tbmm")
VERIFIER_PYTHON = VERIFIER_VENV / "bin" / "python"
VERIFIER_CACHE = VERIFIER_VENV / "cache"

# The dataset (org/name, as Harbor names packages) and the task name prefix.
ORG = "tbmm"
DATASET_NAME = f"{ORG}/tb-mathmodel"


def artifact_host_path(trial_dir: str, source: str) -> str:
    """Where Harbor puts an artifact collected from `source` in a trial directory."""
    rel = "/".join(p for p in PurePosixPath(source).parts if p not in ("/", "", ".."))
    return f"{trial_dir}/{ARTIFACTS_DIR}/{rel}"
