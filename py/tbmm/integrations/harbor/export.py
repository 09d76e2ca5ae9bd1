"""`tbmm export harbor OUT`: the suite as a self-contained Harbor dataset.

Layout of OUT (a Harbor local dataset: `harbor run -p OUT`)::

    dataset.toml              the dataset manifest: each task by name and content digest
    README.md
    <slug>/task.toml          Harbor task config: limits from our task.toml, separate verifier
    <slug>/instruction.md
    <slug>/environment/       the AGENT's environment: Dockerfile + data/ (attachments,
                              figures, artifact schema) — no anchor, panel, gate or scoring
    <slug>/solution/solve.sh  the oracle (uploaded by Harbor to the oracle agent only)
    <slug>/tests/             the VERIFIER's build context (separate verifier mode):
        Dockerfile            installs tbmm offline from wheelhouse/ into /opt/tbmm, builds
                              the Lean library, owns /tests/test.sh
        test.sh               -> python -m tbmm.integrations.harbor.reward (reward.json, reward.txt)
        wheelhouse/           the tbmm wheel (task data + Lean sources) and the wheels of its
                              locked dependencies (Lean runtime included), requirements.txt
                              with every file's sha256; hard links shared by all tasks

The wheelhouse is built from a source checkout (`uv build`, `uv export` from uv.lock, and
`pip download` of the locked versions for the verifier's Python and platform), or taken
from `--wheelhouse DIR` (a folder with one tbmm wheel and its requirements.txt, e.g. the
one of a previous export). Before anything is written, the wheel's copy of each task's
scoring data is compared with the suite being exported, so a stale wheel cannot score
against other anchors than the ones exported.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tbmm import __version__
from tbmm.integrations.harbor import layout
from tbmm.suite.stack import PYTHON_IMAGE, PYTHON_MINOR

# The verifier image's Python: the project's own minor version (the wheels of the
# dependencies are downloaded for it), on Debian bookworm (glibc 2.36; the Lean runtime
# wheel needs glibc >= 2.35): the agent image's base, pinned by the same digest.
VERIFIER_PYTHON = PYTHON_MINOR
DEFAULT_VERIFIER_BASE = PYTHON_IMAGE
_PINNED = re.compile(r"@sha256:[0-9a-f]{64}$")


def digest_pinned(image: str) -> bool:
    """Whether an image reference names its content (`name@sha256:<64 hex>`), so that
    the tag cannot move under the export."""
    return bool(_PINNED.search(image.strip()))


PLATFORM_GLIBC = (2, 35)  # the newest manylinux tag the verifier's platform accepts
# Data of a task that the score depends on: the wheel's copy must equal the exported one.
SCORING_FILES = (
    "anchor.json",
    "artifact_map.toml",
    "scoring.toml",
    "gate.toml",
    "panel.json",
    "baseline.json",
    "floor.json",
    "replay.toml",
    "reference.json",
    "manifest.json",
)
# Files Harbor never packages (its default ignore list); the digest skips them too.
_IGNORED = re.compile(r"(^|/)(__pycache__/|\.DS_Store$)|\.pyc$|\.sw[po]$|~$")


class ExportError(RuntimeError):
    """The dataset cannot be written; the message says why and what to do."""


@dataclass(frozen=True)
class Wheelhouse:
    """A folder with the tbmm wheel, its dependencies' wheels and requirements.txt."""

    path: Path
    wheel: Path
    wheel_sha256: str

    @property
    def files(self) -> list[Path]:
        return sorted(p for p in self.path.iterdir() if p.is_file())


@dataclass(frozen=True)
class ExportResult:
    out: Path
    tasks: list[str]
    digests: dict[str, str]
    wheel: str
    wheel_sha256: str
    wheelhouse_bytes: int


# ---------------------------------------------------------------------------- TOML text


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ExportError(f"cannot write {v!r} as a TOML value")


def _toml_table(name: str, items: dict[str, Any]) -> str:
    lines = [f"[{name}]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in items.items() if v is not None]
    return "\n".join(lines) + "\n"


def task_toml(task: Any) -> str:
    """Harbor's task.toml for a task: our limits and metadata, the artifact declared, the
    network off for the agent and the verifier, and the verifier in its own environment
    built from tests/ (Harbor's `separate` mode)."""
    src = tomllib.loads((task.dir / "task.toml").read_text(encoding="utf-8"))
    info, env = src.get("task", {}), src.get("environment", {})
    agent, verifier = src.get("agent", {}), src.get("verifier", {})
    head = (
        f"# Generated by `tbmm export harbor` (tbmm {__version__}) from "
        f"tasks/{task.suite}/{task.slug}/task.toml.\n"
        f"schema_version = {_toml_value(src.get('schema_version', '1.3'))}\n"
        f"artifacts = {_toml_value([task.manifest.output_path])}\n"
    )
    parts = [
        head,
        _toml_table(
            "task",
            {
                "name": f"{layout.ORG}/{task.slug}",
                "version": __version__,
                "description": info.get("description", ""),
                "keywords": info.get("keywords", []),
            },
        ),
        _toml_table("metadata", dict(src.get("metadata", {}))),
        _toml_table(
            "verifier",
            {
                "timeout_sec": float(verifier.get("timeout_sec", 300.0)),
                "environment_mode": "separate",
            },
        ),
        _toml_table(
            "verifier.environment",
            {
                # the image build installs wheels offline and builds the Lean library
                "build_timeout_sec": 1800.0,
                "network_mode": "no-network",
                "cpus": 1,
                "memory_mb": 4096,
                "storage_mb": 4096,
            },
        ),
        _toml_table("agent", {"timeout_sec": float(agent.get("timeout_sec", 14400.0))}),
        _toml_table(
            "environment",
            {
                "build_timeout_sec": float(env.get("build_timeout_sec", 900.0)),
                "network_mode": "public" if env.get("allow_internet") else "no-network",
                "cpus": env.get("cpus"),
                "memory_mb": env.get("memory_mb"),
                "storage_mb": env.get("storage_mb"),
                "gpus": env.get("gpus"),
            },
        ),
    ]
    return "\n".join(parts)


# ---------------------------------------------------------------------------- Dockerfiles


def verifier_dockerfile(base: str, wheel_name: str) -> str:
    venv, cache = layout.VERIFIER_VENV, layout.VERIFIER_CACHE
    return f"""# Generated by `tbmm export harbor` (tbmm {__version__}): Harbor's separate verifier
# environment. tbmm (every task's scoring data and the Lean sources are in its wheel) and
# its locked dependencies (the Lean runtime included) install offline from wheelhouse/,
# each file checked against the sha256 in requirements.txt; the Lean library is built
# into the image; the image owns /tests/test.sh. Python {VERIFIER_PYTHON} (the wheels are for it).
FROM {base}
COPY wheelhouse /tmp/tbmm-wheelhouse
RUN python3 -m venv {venv} \\
 && {venv}/bin/python -m pip install --no-index --no-cache-dir --disable-pip-version-check \\
      --find-links /tmp/tbmm-wheelhouse --require-hashes --only-binary :all: \\
      -r /tmp/tbmm-wheelhouse/requirements.txt \\
 && TBMM_CACHE={cache} {venv}/bin/tbmm lean build \\
 && {venv}/bin/python -c "import tbmm; print('tbmm', tbmm.__version__, '({wheel_name})')" \\
 && rm -rf /tmp/tbmm-wheelhouse
ENV TBMM_CACHE={cache}
COPY test.sh /tests/test.sh
RUN chmod 0755 /tests/test.sh && mkdir -p /logs/verifier
WORKDIR /root
"""


def agent_dockerfile(task: Any, agent_image: str | None) -> str:
    """The agent's Dockerfile: ours (the hashed lock of tbmm.suite.stack on Python 3.11), or
    with `agent_image`, a prebuilt image that already has that stack."""
    if agent_image is None:
        return (task.dir / "environment" / "Dockerfile").read_text(encoding="utf-8")
    return (
        f"# Generated by `tbmm export harbor --agent-image`: the agent's environment on a\n"
        f"# prebuilt image (it must provide python3 and the scientific stack of tbmm.suite.stack).\n"
        f"FROM {agent_image}\n"
        "WORKDIR /root\n"
        "COPY data /root/data\n"
        "RUN mkdir -p /root/results /root/work\n"
    )


# ---------------------------------------------------------------------------- wheelhouse


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"{what}: {' '.join(cmd[:3])}…: {exc}") from exc
    if r.returncode != 0:
        tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-6:])
        raise ExportError(f"{what} failed (exit {r.returncode}):\n{tail}")
    return r.stdout


def _pip_command() -> list[str]:
    """A pip to download wheels with (any pip: the target platform is given explicitly)."""
    import importlib.util

    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        if found := shutil.which(name):
            return [found]
    if uvx := shutil.which("uvx"):
        return [uvx, "--from", "pip", "pip"]
    raise ExportError("no pip found to download the dependency wheels (pip install pip)")


def platform_tags() -> list[str]:
    """manylinux tags the verifier's platform (x86_64, glibc 2.36) accepts, newest first."""
    major, newest = PLATFORM_GLIBC
    tags = [f"manylinux_{major}_{m}_x86_64" for m in range(newest, 16, -1)]
    return [*tags, "manylinux2014_x86_64"]


def build_wheelhouse(dest: Path, checkout: Path) -> Wheelhouse:
    """Build the tbmm wheel from `checkout`, export the locked dependency set from its
    uv.lock and download those wheels for the verifier's Python and platform."""
    uv = shutil.which("uv")
    if uv is None:
        raise ExportError(
            "`uv` is needed to build the wheel (pip install uv), or pass --wheelhouse"
        )
    dest.mkdir(parents=True, exist_ok=True)
    _run([uv, "build", "--wheel", "-o", str(dest), str(checkout)], "uv build", cwd=checkout)
    deps = _run(
        [uv, "export", "--frozen", "--no-dev", "--no-emit-project", "--no-header"],
        "uv export",
        cwd=checkout,
    )
    (dest / "requirements-deps.txt").write_text(deps)
    cmd = [*_pip_command(), "download", "--disable-pip-version-check", "--no-deps"]
    cmd += ["--only-binary", ":all:", "--python-version", VERIFIER_PYTHON]
    cmd += ["--implementation", "cp", "-d", str(dest), "-r", str(dest / "requirements-deps.txt")]
    for tag in platform_tags():
        cmd += ["--platform", tag]
    _run(cmd, "pip download of the locked dependencies")
    wheels = sorted(dest.glob("tbmm-*.whl"))
    if len(wheels) != 1:
        raise ExportError(f"{dest}: expected one tbmm wheel after the build, found {len(wheels)}")
    wheel = wheels[0]
    sha = _sha256(wheel)
    req = deps.rstrip("\n") + (
        f"\ntbmm @ file:///tmp/tbmm-wheelhouse/{wheel.name} \\\n    --hash=sha256:{sha}\n"
    )
    (dest / "requirements.txt").write_text(req)
    (dest / "requirements-deps.txt").unlink()
    (dest / ".gitignore").unlink(missing_ok=True)  # uv build leaves one
    return Wheelhouse(dest, wheel, sha)


def load_wheelhouse(path: Path) -> Wheelhouse:
    """A prepared wheelhouse: one tbmm wheel, whose hash requirements.txt states."""
    wheels = sorted(path.glob("tbmm-*.whl"))
    req = path / "requirements.txt"
    if len(wheels) != 1 or not req.is_file():
        raise ExportError(
            f"{path}: a wheelhouse needs exactly one tbmm-*.whl and a requirements.txt "
            f"(found {len(wheels)} wheel(s), requirements.txt {'present' if req.is_file() else 'absent'})"
        )
    sha = _sha256(wheels[0])
    if f"--hash=sha256:{sha}" not in req.read_text():
        raise ExportError(f"{req}: does not pin {wheels[0].name} by its sha256 {sha}")
    return Wheelhouse(path, wheels[0], sha)


def check_wheel_tasks(wheel: Path, tasks: Iterable[Any]) -> None:
    """Every exported task's scoring data in the wheel equals the exported suite's."""
    bad: list[str] = []
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for t in tasks:
            base = f"tbmm/_data/tasks/{t.suite}/{t.slug}"
            if f"{base}/task.toml" not in names:
                bad.append(f"{t.slug}: not in the wheel")
                continue
            for f in SCORING_FILES:
                local = t.dir / f
                inside = f"{base}/{f}"
                if local.is_file() != (inside in names) or (
                    local.is_file() and zf.read(inside) != local.read_bytes()
                ):
                    bad.append(f"{t.slug}/{f}")
    if bad:
        raise ExportError(
            f"the wheel {wheel.name} scores against other task data than the suite being "
            f"exported ({', '.join(bad[:6])}{'…' if len(bad) > 6 else ''}): rebuild it "
            "(export without --wheelhouse from a checkout)"
        )


# ---------------------------------------------------------------------------- digests


def task_files(task_dir: Path) -> list[Path]:
    """The files Harbor packages for a task (config, instruction, README, environment,
    tests, solution), sorted by their relative path."""
    out = [
        task_dir / f
        for f in ("task.toml", "instruction.md", "README.md")
        if (task_dir / f).is_file()
    ]
    for sub in ("environment", "tests", "solution"):
        d = task_dir / sub
        if d.is_dir():
            out += [p for p in d.rglob("*") if p.is_file()]
    out = [p for p in out if not _IGNORED.search(p.relative_to(task_dir).as_posix())]
    return sorted(out, key=lambda p: p.relative_to(task_dir).as_posix())


def content_digest(task_dir: Path, cache: dict[tuple[int, int], str] | None = None) -> str:
    """A task's content digest as Harbor's dataset manifest pins it: sha256 over one line
    `relative_path NUL sha256(file) LF` per packaged file, in path order. `cache` maps
    (device, inode) to a file's hash, so the shared wheelhouse is hashed once."""
    outer = hashlib.sha256()
    for p in task_files(task_dir):
        st = p.stat()
        key = (st.st_dev, st.st_ino)
        if cache is not None and key in cache:
            fh = cache[key]
        else:
            fh = _sha256(p)
            if cache is not None:
                cache[key] = fh
        outer.update(f"{p.relative_to(task_dir).as_posix()}\0{fh}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def dataset_toml(digests: dict[str, str], wh: Wheelhouse, verifier_base: str) -> str:
    lines = [
        f"# Generated by `tbmm export harbor` (tbmm {__version__}). Run with `harbor run -p <this folder>`;",
        "# after editing a task, `harbor sync` recomputes its digest.",
        _toml_table(
            "dataset",
            {
                "name": layout.DATASET_NAME,
                "version": __version__,
                "description": "TB-MathModel: CUMCM/MCM mathematical-modeling problems as "
                "agentic tasks, scored exactly, gate-checked and Lean-verified",
                "keywords": ["math-modeling", "cumcm", "mcm", "lean", "tb-mathmodel"],
            },
        ),
    ]
    for slug, digest in digests.items():
        lines.append(_toml_table("[tasks]", {"name": f"{layout.ORG}/{slug}", "digest": digest}))
    lines.append(
        _toml_table(
            "metadata",
            {
                "tbmm_version": __version__,
                "tbmm_wheel": wh.wheel.name,
                "tbmm_wheel_sha256": wh.wheel_sha256,
                "verifier_python": VERIFIER_PYTHON,
                "verifier_base": verifier_base,
            },
        )
    )
    return "\n".join(lines)


def readme(tasks: list[str], verifier_base: str, reward: str = "skill") -> str:
    return f"""# TB-MathModel as a Harbor dataset (tbmm {__version__})

Written by `tbmm export harbor`; {len(tasks)} tasks. Each task's agent environment
(`environment/`) holds only the statement's data; the scoring data, the Lean runtime and
tbmm live in the separate verifier environment built from `tests/` ({verifier_base},
installed offline from `tests/wheelhouse/`, every file pinned by sha256).

    harbor run -p . -a oracle -e docker            # every task, the oracle, local Docker
    harbor run -p . -a <agent> -m <model> -e <env> # e.g. -e daytona | modal | e2b
    tbmm ingest harbor jobs/<job>                  # into tbmm's results store; then
    tbmm leaderboard                               # or tbmm report --html report.html

`reward` = {reward}; `reward.json` also has skill, o_eval, robust_bo and 0/1 verdict flags; the exact
verdict is `verifier/verdict.json` of each trial. A trial whose verification gave no verdict
has no reward (a verifier error in Harbor, an error in tbmm), never a 0.
"""


# ---------------------------------------------------------------------------- export


def _select_reward(test_sh: Path, reward: str) -> str:
    """The task's test.sh with `--reward REWARD` on its one `exec` line of the verifier."""
    lines = test_sh.read_text(encoding="utf-8").splitlines(keepends=True)
    execs = [i for i, ln in enumerate(lines) if ln.startswith("exec ") and ".harbor.reward " in ln]
    if len(execs) != 1:
        raise ExportError(f"{test_sh}: expected one verifier exec line, found {len(execs)}")
    i = execs[0]
    lines[i] = lines[i].rstrip("\n") + f" --reward {reward}\n"
    return "".join(lines)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def export_harbor(
    out: Path,
    tasks: list[Any],
    *,
    wheelhouse: Path | None = None,
    verifier_base: str = DEFAULT_VERIFIER_BASE,
    agent_image: str | None = None,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
    reward: str = "skill",
) -> ExportResult:
    """Write the Harbor dataset for `tasks` into `out` (see the module docstring); `reward`
    is what each trial's `reward` holds (tbmm.integrations.harbor.reward.REWARDS)."""
    from tbmm.integrations.harbor.reward import DEFAULT_REWARD, REWARDS
    from tbmm.suite.resources import checkout_root

    if reward not in REWARDS:
        raise ExportError(f"unknown reward {reward!r}: use {', '.join(REWARDS)}")

    say = progress or (lambda _m: None)
    if not tasks:
        raise ExportError("no tasks to export")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        if not force:
            raise ExportError(f"{out} exists and is not empty (pass --force to replace it)")
        if not (out / "dataset.toml").is_file():
            raise ExportError(f"{out} is not a previous export (no dataset.toml): not replacing it")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tbmm-wheelhouse-", dir=out) as tmp:
        if wheelhouse is not None:
            wh = load_wheelhouse(Path(wheelhouse))
        else:
            root = checkout_root()
            if root is None:
                raise ExportError(
                    "not a source checkout: pass --wheelhouse DIR (a tbmm wheel and its "
                    "requirements.txt, e.g. tests/wheelhouse of a previous export)"
                )
            say("building the tbmm wheel and downloading its locked dependencies")
            wh = build_wheelhouse(Path(tmp) / "wh", root)
        check_wheel_tasks(wh.wheel, tasks)
        digests: dict[str, str] = {}
        first: Path | None = None
        cache: dict[tuple[int, int], str] = {}
        for t in tasks:
            say(t.slug)
            d = out / t.slug
            (d / "environment").mkdir(parents=True)
            (d / "task.toml").write_text(task_toml(t), encoding="utf-8")
            shutil.copyfile(t.dir / "instruction.md", d / "instruction.md")
            shutil.copytree(t.dir / "environment" / "data", d / "environment" / "data")
            (d / "environment" / "Dockerfile").write_text(
                agent_dockerfile(t, agent_image), encoding="utf-8"
            )
            if agent_image is None:  # our Dockerfile installs the hashed lock it COPYs
                shutil.copyfile(
                    t.dir / "environment" / "requirements.lock",
                    d / "environment" / "requirements.lock",
                )
            (d / "solution").mkdir()
            shutil.copyfile(t.dir / "solution" / "solve.sh", d / "solution" / "solve.sh")
            tests = d / "tests"
            (tests / "wheelhouse").mkdir(parents=True)
            shutil.copyfile(t.dir / "tests" / "test.sh", tests / "test.sh")
            if reward != DEFAULT_REWARD:
                (tests / "test.sh").write_text(
                    _select_reward(t.dir / "tests" / "test.sh", reward), encoding="utf-8"
                )
            for sh in (d / "solution" / "solve.sh", tests / "test.sh"):
                sh.chmod(0o755)
            (tests / "Dockerfile").write_text(
                verifier_dockerfile(verifier_base, wh.wheel.name), encoding="utf-8"
            )
            src_dir = first if first is not None else wh.path
            for f in wh.files:
                if f.name.startswith("."):
                    continue
                src = src_dir / f.name
                if first is None:
                    shutil.copy2(src, tests / "wheelhouse" / f.name)
                else:
                    _link_or_copy(src, tests / "wheelhouse" / f.name)
            if first is None:
                first = tests / "wheelhouse"
            digests[t.slug] = content_digest(d, cache)
        size = sum(p.stat().st_size for p in (first or wh.path).iterdir() if p.is_file())
        wheel_name, wheel_sha = wh.wheel.name, wh.wheel_sha256
        (out / "dataset.toml").write_text(dataset_toml(digests, wh, verifier_base))
        (out / "README.md").write_text(readme(list(digests), verifier_base, reward))
    return ExportResult(out, list(digests), digests, wheel_name, wheel_sha, size)
