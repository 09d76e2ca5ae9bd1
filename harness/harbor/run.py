"""`tbmm run --backend harbor --env ENV`: run a sweep through Harbor, then ingest it.

Harbor (installed on its own, Python >= 3.12: `pip install harbor`) runs the agent on any of
its environments (local docker, or cloud ones: daytona, modal, e2b, ...) against the suite
exported by `tbmm export harbor`, its verifier scores each trial with tbmm in the task's
separate verifier environment, and the job directory is then read into the results store
by `tbmm ingest harbor` (every artifact verified again here). The agent is one of Harbor's
(`oracle`, `codex`, `claude-code`, `terminus-2`, ...; `harbor run --help` lists them), its
model a Harbor model name; `--seeds N` is Harbor's attempts per task.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.harbor.ingest import IngestSummary, ingest_job

HARBOR_ENV_VAR = "TBMM_HARBOR"  # path of the `harbor` executable, when not on PATH


class HarborUnavailable(RuntimeError):
    """Harbor is not installed where tbmm can run it."""


def harbor_executable() -> str:
    found = os.environ.get(HARBOR_ENV_VAR) or shutil.which("harbor")
    if not found or not Path(found).is_file():
        raise HarborUnavailable(
            "Harbor is not installed: install it in its own Python >= 3.12 environment "
            f"(`python3.12 -m venv ~/harbor && ~/harbor/bin/pip install harbor`) and put its "
            f"`harbor` on PATH or in ${HARBOR_ENV_VAR}"
        )
    return found


def harbor_command(
    harbor: str,
    *,
    dataset: Path,
    agent: str,
    model: str | None,
    env: str,
    attempts: int,
    concurrency: int,
    jobs_dir: Path,
    job_name: str,
) -> list[str]:
    cmd = [harbor, "run", "-p", str(dataset), "-a", agent, "-e", env]
    cmd += ["-k", str(attempts), "-n", str(concurrency), "-o", str(jobs_dir)]
    cmd += ["--job-name", job_name, "-y"]
    return cmd + (["-m", model] if model else [])


def run_with_harbor(
    *,
    agent: str,
    model: str | None,
    tasks: Sequence[Any],
    seeds: int,
    env: str,
    concurrency: int,
    db: Path,
    dataset: Path | None = None,
    say: Callable[[str], None] = print,
) -> tuple[IngestSummary, int]:
    """Export (unless `dataset` is given), `harbor run`, ingest. Returns the ingest summary
    and Harbor's exit code."""
    harbor = harbor_executable()
    work = Path(db).parent / "harbor"
    if dataset is None:
        from tbmm.integrations.harbor.export import export_harbor

        dataset = work / "dataset"
        say(f"exporting {len(tasks)} task(s) to {dataset}")
        export_harbor(dataset, list(tasks), force=dataset.exists())
    else:
        missing = [t.slug for t in tasks if not (Path(dataset) / t.slug / "task.toml").is_file()]
        if missing:
            raise ValueError(f"{dataset}: not in this Harbor dataset: {', '.join(missing)}")
        if len(tasks) != sum(1 for p in Path(dataset).iterdir() if (p / "task.toml").is_file()):
            raise ValueError(
                f"{dataset} holds other tasks than the selected ones: Harbor runs a whole "
                "dataset, so export exactly the tasks to run (tbmm export harbor --tasks ...)"
            )
    jobs = work / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    job_name = f"tbmm-{agent.replace(':', '_').replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    cmd = harbor_command(
        harbor,
        dataset=Path(dataset),
        agent=agent,
        model=model,
        env=env,
        attempts=seeds,
        concurrency=concurrency,
        jobs_dir=jobs,
        job_name=job_name,
    )
    say("running: " + " ".join(cmd))
    code = subprocess.run(cmd, check=False).returncode
    job_dir = jobs / job_name
    if not job_dir.is_dir():
        raise RuntimeError(f"harbor exited {code} without a job directory ({job_dir})")
    say(f"ingesting {job_dir}")
    return ingest_job(job_dir, db, say=lambda m: say(f"  {m}")), code
