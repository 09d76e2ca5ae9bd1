"""Images for the Docker backend without a registry: an offline base built from Debian.

Each task's Dockerfile starts `FROM ${TBMM_BASE}`, by default `python:3.11-slim-bookworm`
pinned by digest (tbmm.suite.stack.PYTHON_IMAGE) for machines that reach Docker Hub. A machine
without a registry builds the same thing locally, once:

1. a Debian bookworm root filesystem from Debian's own archive (`mmdebstrap --variant=minbase
   --include=python3,python3-venv`), imported as `tbmm-rootfs:bookworm-<recipe hash>`;
2. the locked wheels (tbmm.suite.stack's lock) downloaded on the host by pip, whose hashes the
   lock pins;
3. `tbmm-base:py3.11-<lock digest>`: that rootfs plus /opt/tbmm/venv installed from those
   wheels with `pip --require-hashes --no-index`, built with no network at all. Its venv
   carries the lock, so a task's Dockerfile sees the stack present and skips the install.

Task images are then built from the task's `environment/` with `TBMM_BASE` set to that
base, also with no network. The rootfs tar and the wheels are cached under
`~/.cache/tbmm/docker` (or $TBMM_DOCKER_CACHE). The Debian packages are whatever the
bookworm archive holds on the day the rootfs is built (no snapshot archive is reachable
from the machines this was written on); the package list is recorded beside the tar.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tbmm.suite.stack import LOCK_FILE, PYTHON_MINOR, lock_digest

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PACKAGES = ("python3", "python3-venv")
ROOTFS_REPO = "tbmm-rootfs"
BASE_REPO = "tbmm-base"
WHEEL_PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)

BASE_DOCKERFILE = f"""\
# tbmm offline base: Debian {SUITE} + Python {PYTHON_MINOR} + the locked stack (no network).
ARG ROOTFS
FROM ${{ROOTFS}}
COPY requirements.lock /opt/tbmm/requirements.lock
COPY wheels /tmp/tbmm-wheels
RUN python3 -m venv /opt/tbmm/venv \\
 && /opt/tbmm/venv/bin/pip install --no-cache-dir --no-index --find-links /tmp/tbmm-wheels \\
      --no-deps --require-hashes -r /opt/tbmm/requirements.lock \\
 && cp /opt/tbmm/requirements.lock /opt/tbmm/venv/requirements.lock \\
 && rm -rf /tmp/tbmm-wheels
ENV PATH=/opt/tbmm/venv/bin:$PATH VIRTUAL_ENV=/opt/tbmm/venv LANG=C.UTF-8
"""

Log = Callable[[str], None]


def cache_dir() -> Path:
    env = os.environ.get("TBMM_DOCKER_CACHE")
    d = Path(env).expanduser() if env else Path.home() / ".cache" / "tbmm" / "docker"
    d.mkdir(parents=True, exist_ok=True)
    return d


def recipe_hash() -> str:
    blob = json.dumps(
        {"suite": SUITE, "mirror": MIRROR, "packages": PACKAGES, "variant": "minbase"}
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def rootfs_tag() -> str:
    return f"{ROOTFS_REPO}:{SUITE}-{recipe_hash()}"


def base_tag() -> str:
    """The offline base's tag: changes with the lock (and the rootfs recipe)."""
    h = hashlib.sha256(f"{lock_digest()} {recipe_hash()} {BASE_DOCKERFILE}".encode()).hexdigest()
    return f"{BASE_REPO}:py{PYTHON_MINOR}-{h[:12]}"


def _image_exists(client: Any, tag: str) -> bool:
    try:
        client.images.get(tag)
    except Exception:
        return False
    return True


def rootfs_tar(log: Log = print) -> Path:
    """The Debian root filesystem as a tar (built once with mmdebstrap; needs root)."""
    out = cache_dir() / f"rootfs-{SUITE}-{recipe_hash()}.tar"
    if out.is_file():
        return out
    mm = shutil.which("mmdebstrap")
    if mm is None:
        raise RuntimeError("mmdebstrap is not installed (apt-get install mmdebstrap)")
    tmp = out.with_name(out.stem + ".part.tar")  # mmdebstrap picks the format by suffix
    log(f"building the Debian {SUITE} root filesystem with mmdebstrap (a few minutes)")
    proc = subprocess.run(
        [mm, "--variant=minbase", f"--include={','.join(PACKAGES)}", SUITE, str(tmp), MIRROR],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise RuntimeError(f"mmdebstrap failed:\n{proc.stderr[-3000:]}")
    _record_packages(tmp, out.with_suffix(".packages.txt"))
    tmp.rename(out)
    return out


def _record_packages(tar_path: Path, dest: Path) -> None:
    """name version lines from the rootfs' dpkg status (what exactly was installed)."""
    with tarfile.open(tar_path) as tar:
        member = next((m for m in tar.getmembers() if m.name.endswith("var/lib/dpkg/status")), None)
        if member is None:
            return
        fh = tar.extractfile(member)
        text = fh.read().decode("utf-8", "replace") if fh else ""
    rows, name = [], None
    for line in text.splitlines():
        if line.startswith("Package: "):
            name = line[9:].strip()
        elif line.startswith("Version: ") and name:
            rows.append(f"{name} {line[9:].strip()}")
    dest.write_text("\n".join(sorted(rows)) + "\n")


def _pip() -> list[str]:
    for py in (sys.executable, "/usr/bin/python3", shutil.which("python3") or ""):
        if (
            py
            and subprocess.run([py, "-m", "pip", "--version"], capture_output=True).returncode == 0
        ):
            return [py, "-m", "pip"]
    raise RuntimeError("no pip found to download the locked wheels (apt-get install python3-pip)")


def wheelhouse(log: Log = print) -> Path:
    """The lock's wheels for CPython 3.11 on Linux x86_64, downloaded by the host's pip with
    the lock's hashes enforced."""
    out = cache_dir() / f"wheels-{lock_digest()}"
    ok = out / ".complete"
    if ok.is_file():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    log("downloading the locked wheels (pip --require-hashes)")
    cmd = [
        *_pip(),
        "download",
        "--quiet",
        "--no-deps",
        "--require-hashes",
        "--only-binary",
        ":all:",
    ]
    cmd += ["--python-version", PYTHON_MINOR, "--implementation", "cp", "-d", str(out)]
    for plat in WHEEL_PLATFORMS:
        cmd += ["--platform", plat]
    cmd += ["-r", str(LOCK_FILE)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(out, ignore_errors=True)
        raise RuntimeError(f"downloading the locked wheels failed:\n{proc.stderr[-3000:]}")
    ok.write_text(lock_digest())
    return out


def ensure_rootfs_image(client: Any, log: Log = print) -> str:
    tag = rootfs_tag()
    if _image_exists(client, tag):
        return tag
    tar = rootfs_tar(log)
    log(f"importing {tar.name} as {tag}")
    repo, _, version = tag.partition(":")
    client.api.import_image_from_file(str(tar), repository=repo, tag=version)
    return tag


def ensure_local_base(client: Any, log: Log = print) -> str:
    """The offline base image (built once per lock); returns its tag."""
    tag = base_tag()
    if _image_exists(client, tag):
        return tag
    rootfs = ensure_rootfs_image(client, log)
    wheels = wheelhouse(log)
    with tempfile.TemporaryDirectory(prefix="tbmm-base-") as tmp:
        ctx = Path(tmp)
        (ctx / "Dockerfile").write_text(BASE_DOCKERFILE)
        shutil.copy(LOCK_FILE, ctx / "requirements.lock")
        shutil.copytree(wheels, ctx / "wheels", ignore=shutil.ignore_patterns(".complete"))
        log(f"building {tag} (no network)")
        build(client, ctx, tag, {"ROOTFS": rootfs})
    return tag


def build(
    client: Any, context: Path, tag: str, buildargs: dict[str, str], network: str = "none"
) -> None:
    """`docker build` through the engine's API; a failure raises with the build's log tail."""
    from docker.errors import BuildError

    try:
        client.images.build(
            path=str(context),
            tag=tag,
            rm=True,
            forcerm=True,
            buildargs=buildargs,
            network_mode=network,
            pull=False,
        )
    except BuildError as exc:
        lines = [str(c.get("stream") or c.get("error") or "") for c in exc.build_log]
        raise RuntimeError(
            f"docker build of {tag} failed: {exc.msg}\n{''.join(lines)[-3000:]}"
        ) from exc


def task_image_tag(slug: str, env_dir: Path, base: str) -> str:
    """Tag from the Dockerfile, the lock in the context and the base: any change rebuilds."""
    h = hashlib.sha256()
    for name in ("Dockerfile", "requirements.lock"):
        p = env_dir / name
        h.update(p.read_bytes() if p.is_file() else b"-")
    h.update(base.encode())
    return f"tbmm-task/{slug}:{h.hexdigest()[:12]}"


def packages_in(client: Any, tag: str) -> str:
    """pip freeze of an image's venv (for tests and reports)."""
    out = client.containers.run(
        tag,
        ["/opt/tbmm/venv/bin/python", "-m", "pip", "freeze"],
        remove=True,
        network_mode="none",
        stdout=True,
        stderr=False,
    )
    return out.decode() if isinstance(out, bytes) else str(out)
