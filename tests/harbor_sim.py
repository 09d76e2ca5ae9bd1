"""Harbor's verifier as it runs an exported task, simulated with bubblewrap (no container
engine needed): the verifier image is the host's Debian bookworm `/usr` (Python 3.11, what
`python:3.11-slim-bookworm` has) plus `/opt/tbmm` built by the RUN instruction of the
exported `tests/Dockerfile`, run as written; a trial sees `/tests/test.sh`, a writable
`/logs/verifier`, the agent's artifact at its declared path, no network, and nothing of the
checkout (`/work` and `/root` are empty). The oracle's artifact is produced by running the
exported `solution/solve.sh` in the same kind of sandbox."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

WHEELHOUSE_IN_IMAGE = "/tmp/tbmm-wheelhouse"


def bwrap_available() -> str | None:
    return shutil.which("bwrap")


def _base(extra: list[str]) -> list[str]:
    return [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin",
        "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64",
        "--symlink", "usr/sbin", "/sbin",
        "--ro-bind", "/etc", "/etc",
        "--proc", "/proc",
        "--dev", "/dev",
        "--tmpfs", "/tmp",
        "--tmpfs", "/root",
        "--tmpfs", "/work",
        "--setenv", "PATH", "/usr/bin:/bin",
        "--setenv", "HOME", "/root",
        "--setenv", "PIP_CONFIG_FILE", "/dev/null",
        *extra,
    ]  # fmt: skip


def dockerfile_instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            op, _, rest = line.partition(" ")
            out.append((op.upper(), rest.strip()))
    return out


def build_verifier_image(task_dir: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    """Run the install RUN of `tests/Dockerfile` with the wheelhouse where its COPY puts it
    and `/opt/tbmm` bound to `venv` (kept as the image's layer for `run_test_sh`). Only the
    final clean-up of the read-only wheelhouse mount is left out."""
    steps = dockerfile_instructions(task_dir / "tests" / "Dockerfile")
    copies = [a.split() for op, a in steps if op == "COPY"]
    assert ["wheelhouse", WHEELHOUSE_IN_IMAGE] in copies, copies
    runs = [a for op, a in steps if op == "RUN"]
    install = next(r for r in runs if "pip install" in r)
    tail = f" && rm -rf {WHEELHOUSE_IN_IMAGE}"
    assert install.endswith(tail), install
    venv.mkdir(parents=True, exist_ok=True)
    argv = _base(
        [
            "--ro-bind", str(task_dir / "tests" / "wheelhouse"), WHEELHOUSE_IN_IMAGE,
            "--bind", str(venv), "/opt/tbmm",
            "bash", "-c", install[: -len(tail)],
        ]
    )  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=1800)


def image_env(task_dir: Path) -> list[str]:
    """`--setenv` pairs for the ENV instructions of `tests/Dockerfile`."""
    out: list[str] = []
    for op, args in dockerfile_instructions(task_dir / "tests" / "Dockerfile"):
        if op == "ENV":
            key, _, value = args.partition("=")
            out += ["--setenv", key.strip(), value.strip()]
    return out


def run_solution(task_dir: Path, results: Path) -> subprocess.CompletedProcess[str]:
    """Harbor's oracle: `bash /solution/solve.sh` in the agent's place, writing into `results`."""
    results.mkdir(parents=True, exist_ok=True)
    argv = _base(
        [
            "--ro-bind", str(task_dir / "solution"), "/solution",
            "--bind", str(results), "/root/results",
            "bash", "/solution/solve.sh",
        ]
    )  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def run_test_sh(
    task_dir: Path, venv: Path, artifact_dir: Path | None, logs: Path
) -> subprocess.CompletedProcess[str]:
    """`bash /tests/test.sh` as Harbor's verifier runs it (stdout to test-stdout.txt; the image
    layer `venv` writable, as a container's is: the Lean build cache takes a lock), with
    the collected artifacts of `artifact_dir` at /root/results (None: the agent wrote none)."""
    logs.mkdir(parents=True, exist_ok=True)
    binds = ["--bind", str(venv), "/opt/tbmm", "--bind", str(logs), "/logs/verifier"]
    binds += ["--ro-bind", str(task_dir / "tests" / "test.sh"), "/tests/test.sh"]
    if artifact_dir is not None:
        binds += ["--ro-bind", str(artifact_dir), "/root/results"]
    argv = _base(
        [
            *binds,
            *image_env(task_dir),
            "bash",
            "-c",
            "bash /tests/test.sh > /logs/verifier/test-stdout.txt 2>&1",
        ]
    )
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)
