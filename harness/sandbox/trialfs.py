"""Host-side resources of one trial: the agent's uid, its size-capped disk, its own /etc.

* **Agent uid.** Each trial's sandbox runs as a dedicated unprivileged host uid/gid
  (`AGENT_UID_BASE + slot`, held by a file lock so concurrent sweeps never share one),
  mapped to uid 1000 inside the sandbox's user namespace. Files the agent creates belong
  to that uid on the host, never to root.
* **Disk.** `/root/work`, `/root/results`, the read-only copy of the task data and the
  commands' stdout/stderr files live on one ext4 filesystem in a sparse loop file of `storage_mb` (the task's `storage_mb`),
  mounted on the host under `RUNTIME_DIR/trials/<name>/fs`. The cap therefore holds across
  all the commands of the trial (each command is a fresh sandbox over the same dirs), and
  bind mounts from it show only `/workdir`, `/results`, ... in the sandbox's mountinfo,
  not the host path of the runs folder or of the project.
* **/etc.** Generated: passwd/group with the agent, empty resolv.conf, hosts, hostname,
  nsswitch.conf, plus a short allow-list of public files the system tools need
  (ld.so.cache, the alternatives symlinks, protocols, services). Never the host's /etc.
* **Staged binds.** Other host paths the sandbox needs (the agent venv, a proxy socket dir)
  are bind-mounted read-only under `trials/<name>/binds/`, a path the agent uid can reach,
  so bubblewrap (running as that uid) can bind them without access to their parents.

Everything is named `<owner pid>-<owner start time>-<id>`; `reap_stale()` unmounts and
removes what a killed sweep left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from harness.sandbox.cgroups import owner_alive, owner_tag

RUNTIME_DIR = Path(os.environ.get("TBMM_RUNTIME_DIR", "/run/tbmm"))
AGENT_UID_BASE = 2_100_000  # above the usual subordinate-uid ranges; not in /etc/passwd
AGENT_UID_SLOTS = 4096
INSIDE_UID = 1000  # what the agent sees as its uid / gid
HOSTNAME = "tbmm"
ETC_COPY = ("ld.so.cache", "protocols", "services")  # public, needed by system tools
ETC_SYMLINK_DIRS = ("alternatives",)  # only their symlinks are copied


@dataclass
class AgentIds:
    """A dedicated unprivileged host uid/gid for one trial; the lock file keeps it ours."""

    uid: int
    gid: int
    _lock: int = -1

    @classmethod
    def acquire(cls) -> AgentIds:
        d = RUNTIME_DIR / "uids"
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(RUNTIME_DIR, 0o711)
        start = os.getpid() % AGENT_UID_SLOTS
        for i in range(AGENT_UID_SLOTS):
            slot = (start + i) % AGENT_UID_SLOTS
            fd = os.open(d / f"{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            uid = AGENT_UID_BASE + slot
            return cls(uid, uid, fd)
        raise RuntimeError(f"all {AGENT_UID_SLOTS} agent uids are in use")

    def release(self) -> None:
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1


def write_etc(dest: Path, uid: int = INSIDE_UID, gid: int = INSIDE_UID) -> None:
    """The sandbox's own /etc (see the module docstring)."""
    dest.mkdir(parents=True, exist_ok=True)
    files = {
        "passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"agent:x:{uid}:{gid}:tbmm agent:/root:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
        "group": f"root:x:0:\nagent:x:{gid}:\nnogroup:x:65534:\n",
        "hosts": f"127.0.0.1\tlocalhost {HOSTNAME}\n::1\tlocalhost\n",
        "hostname": f"{HOSTNAME}\n",
        "resolv.conf": "",
        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
    }
    for name, text in files.items():
        (dest / name).write_text(text)
    for name in ETC_COPY:
        src = Path("/etc") / name
        if src.is_file():
            shutil.copyfile(src, dest / name)
    for name in ETC_SYMLINK_DIRS:
        src = Path("/etc") / name
        if not src.is_dir():
            continue
        (dest / name).mkdir(exist_ok=True)
        for entry in src.iterdir():
            if entry.is_symlink():
                with contextlib.suppress(FileExistsError):
                    os.symlink(os.readlink(entry), dest / name / entry.name)
    zone = Path("/usr/share/zoneinfo/UTC")
    if zone.exists():
        with contextlib.suppress(FileExistsError):
            os.symlink(str(zone), dest / "localtime")
    _chmod_tree(dest, 0o755, 0o644)


def _chmod_tree(root: Path, dmode: int, fmode: int) -> None:
    os.chmod(root, dmode)
    for d, dirs, files in os.walk(root):
        for n in dirs:
            os.chmod(Path(d) / n, dmode)
        for n in files:
            p = Path(d) / n
            if not p.is_symlink():
                os.chmod(p, fmode)


def _run(*argv: str) -> None:
    proc = subprocess.run(list(argv), capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.returncode}")


# mount(2) / umount2(2) directly: a bind mount is two system calls, not two processes.
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)


def _sys_mount(src: str | None, dst: Path, flags: int) -> None:
    if _libc.mount(src.encode() if src else None, str(dst).encode(), None, flags, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {src} {dst}: {os.strerror(err)}")


def _sys_umount(target: Path, flags: int = 0) -> None:
    if _libc.umount2(str(target).encode(), flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount {target}: {os.strerror(err)}")


def mounts_under(root: Path) -> list[Path]:
    """Mount points at or below `root` (deepest first), from this process's mountinfo."""
    out = []
    prefix = str(root).rstrip("/") + "/"
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(root) or point.startswith(prefix):
            out.append(Path(point))
    return sorted(set(out), key=lambda p: len(p.parts), reverse=True)


def loop_supported() -> bool:
    return (
        os.geteuid() == 0
        and shutil.which("mke2fs") is not None
        and Path("/dev/loop-control").exists()
    )


@dataclass
class TrialFS:
    """One trial's disk and staging area (root only). `fs` is the loop mount."""

    root: Path
    image: Path
    uid: int
    gid: int
    staged: list[Path] = field(default_factory=list)

    @property
    def fs(self) -> Path:
        return self.root / "fs"

    @property
    def work(self) -> Path:
        return self.fs / "workdir"

    @property
    def results(self) -> Path:
        return self.fs / "results"

    @property
    def io(self) -> Path:
        """Where commands' stdout/stderr go (root-only dir; the cap covers them too)."""
        return self.fs / "io"

    @property
    def data(self) -> Path:
        return self.fs / "data"

    @property
    def etc(self) -> Path:
        return self.fs / "etc"

    @classmethod
    def create(
        cls, *, scratch: Path, storage_mb: int | None, data_src: Path, uid: int, gid: int
    ) -> TrialFS:
        """Make, mount and fill the trial's filesystem; undo everything if a step fails.
        `storage_mb=None` (no loop devices): a plain host dir, with no size cap."""
        trials = RUNTIME_DIR / "trials"
        trials.mkdir(parents=True, exist_ok=True)
        os.chmod(RUNTIME_DIR, 0o711)
        os.chmod(trials, 0o711)
        root = trials / f"{owner_tag()}-{uuid.uuid4().hex[:8]}"
        root.mkdir(mode=0o711)
        os.chmod(root, 0o711)
        tfs = cls(root, scratch / "disk.img", uid, gid)
        try:
            tfs._build(storage_mb, data_src)
        except BaseException:
            tfs.close()
            raise
        return tfs

    def _build(self, storage_mb: int | None, data_src: Path) -> None:
        if storage_mb is None:
            self.fs.mkdir(mode=0o711)
        else:
            self._mount_loop(storage_mb)
        for d in (self.work, self.results):
            d.mkdir(mode=0o700)
            os.chown(d, self.uid, self.gid)
        self.io.mkdir(mode=0o700)
        shutil.copytree(data_src, self.data, symlinks=False)
        _chmod_tree(self.data, 0o755, 0o644)
        write_etc(self.etc)

    def _mount_loop(self, storage_mb: int) -> None:
        self.image.parent.mkdir(parents=True, exist_ok=True)
        with open(self.image, "wb") as fh:
            fh.truncate(storage_mb * 1024 * 1024)  # sparse: disk is used as files are written
        # No journal (the disk dies with the trial); inode tables are initialised lazily
        # and never zeroed in the background (noinit_itable), so creation costs ~10 ms.
        _run(
            "mke2fs", "-q", "-F", "-t", "ext4", "-m", "0", "-O", "^has_journal",
            "-E", "lazy_itable_init=1,root_owner=0:0", "-L", "tbmm-trial", str(self.image),
        )  # fmt: skip
        self.fs.mkdir(mode=0o711)
        _run(
            "mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noatime,noinit_itable",
            str(self.image), str(self.fs),
        )  # fmt: skip
        os.chmod(self.fs, 0o711)
        shutil.rmtree(self.fs / "lost+found", ignore_errors=True)

    def stage(self, src: Path, *, rw: bool = False) -> Path:
        """Bind `src` (host) under `binds/` so that the agent uid can reach it."""
        binds = self.root / "binds"
        binds.mkdir(mode=0o711, exist_ok=True)
        dest = binds / str(len(self.staged))
        if src.is_dir():
            dest.mkdir()
        else:
            dest.touch()
        self.staged.append(dest)
        _sys_mount(str(src), dest, MS_BIND)
        ro = 0 if rw else MS_RDONLY
        _sys_mount(None, dest, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | ro)
        return dest

    def close(self) -> None:
        """Unmount everything under the trial's root and remove it (the image goes with the
        trial's scratch dir). Call after every process of the trial is dead."""
        _teardown(self.root)
        with contextlib.suppress(FileNotFoundError):
            self.image.unlink()


def _teardown(root: Path) -> None:
    for point in mounts_under(root):
        try:
            _sys_umount(point)
        except OSError:
            with contextlib.suppress(OSError):
                _sys_umount(point, MNT_DETACH)
    if mounts_under(root):
        raise OSError(f"could not unmount everything under {root}")
    shutil.rmtree(root, ignore_errors=True)


def reap_stale() -> int:
    """Unmount and remove trial roots whose owner process is gone (a SIGKILLed sweep)."""
    trials = RUNTIME_DIR / "trials"
    if not trials.is_dir():
        return 0
    n = 0
    for root in trials.iterdir():
        if not owner_alive(root.name):
            with contextlib.suppress(OSError):
                _teardown(root)
                n += 1
    return n
