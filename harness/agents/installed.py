"""Installed CLI agents: pinned npm packages in a tbmm-managed prefix, bound into the sandbox.

Why not a global `npm install -g`: its prefix differs between machines (`/usr` with
Debian's npm, `/usr/local` with nodesource's, `~/.npm-global`, nvm's own tree), and only
`/usr` is inside every sandbox; a global install also drifts with whatever version the last
`npm -g` left. So `tbmm agents install codex` installs the pinned version with
`npm install --prefix ~/.cache/tbmm/cli/<package>-<version>` (or `$TBMM_CLI_DIR`), and each
trial binds that directory read-only at the same path and puts its `node_modules/.bin`
first on PATH. Node itself must be under `/usr` (the sandbox binds `/usr` read-only);
`tbmm run` checks both inside a sandbox before the sweep (pre-flight) and refuses with the
reason otherwise. A binary already installed under `/usr` is used when no managed install
exists (and its version is reported, since it is not pinned).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_MARKER = ".tbmm-cli.json"


@dataclass(frozen=True)
class CLIPackage:
    """One CLI agent's npm package, pinned."""

    name: str  # the --agent name
    npm: str  # npm package
    version: str  # pinned version
    bin: str  # executable name in node_modules/.bin

    @property
    def spec(self) -> str:
        return f"{self.npm}@{self.version}"


PACKAGES: dict[str, CLIPackage] = {
    "codex": CLIPackage("codex", "@openai/codex", "0.171.0", "codex"),
    "opencode": CLIPackage("opencode", "opencode-ai", "1.18.33", "opencode"),
    "claude-code": CLIPackage("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude"),
}


def cli_root() -> Path:
    env = os.environ.get("TBMM_CLI_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tbmm" / "cli"


def install_dir(pkg: CLIPackage) -> Path:
    safe = pkg.npm.replace("@", "").replace("/", "-")
    return cli_root() / f"{safe}-{pkg.version}"


def bin_dir(pkg: CLIPackage) -> Path:
    return install_dir(pkg) / "node_modules" / ".bin"


def is_installed(pkg: CLIPackage) -> bool:
    d = install_dir(pkg)
    try:
        got = json.loads((d / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return got.get("spec") == pkg.spec and (bin_dir(pkg) / pkg.bin).exists()


class InstallError(RuntimeError):
    """npm could not install the package; the message carries npm's own output."""


def ensure_installed(pkg: CLIPackage, *, timeout: float = 900.0) -> Path:
    """Install the pinned package once (npm, file lock against concurrent installs);
    returns its install dir."""
    d = install_dir(pkg)
    if is_installed(pkg):
        return d
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not installed (Debian: apt-get install npm)")
    d.parent.mkdir(parents=True, exist_ok=True)
    with open(d.parent / f".{d.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_installed(pkg):
            return d
        tmp = d.parent / f"{d.name}.building"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        proc = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(tmp),
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--omit=dev",
                pkg.spec,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "npm_config_update_notifier": "false"},
        )
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise InstallError(
                f"npm install {pkg.spec} failed:\n{(proc.stderr or proc.stdout)[-3000:]}"
            )
        # Files must be readable by the sandbox's unprivileged uid (npm keeps the umask).
        for root, dirs, files in os.walk(tmp):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    mode = os.stat(path).st_mode
                    os.chmod(path, 0o755 if mode & 0o111 else 0o644)
        (tmp / _MARKER).write_text(json.dumps({"spec": pkg.spec}))
        shutil.rmtree(d, ignore_errors=True)
        tmp.rename(d)  # npm's .bin symlinks are relative: the tree can move
    return d
