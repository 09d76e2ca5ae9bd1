"""Per-trial cgroups: aggregate limits on processes, memory and CPU, and a kill switch.

Each trial gets its own cgroup, created as a child of the harness's OWN cgroup in every
hierarchy (so whatever limits the harness itself runs under still apply), named
`tbmm/<owner pid>-<owner start time>-<id>`. cgroup v1 (one hierarchy per controller) and
v2 (one unified hierarchy) are both supported, per controller: pids (`pids.max`), memory
(v1 `memory.limit_in_bytes` + `memory.memsw.limit_in_bytes`, v2 `memory.max` +
`memory.swap.max`: tmpfs pages written by the agent are charged here too), CPU (v1 CFS
quota, v2 `cpu.max`) and, on v1, the freezer (to empty the cgroup atomically). The limits
hold for the whole process tree, whatever it forks, unlike rlimits.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from harness.sandbox.supervise import cgroup_pids, kill_cgroups

LIMITED = ("pids", "memory", "cpu")
CFS_PERIOD_US = 100_000
PARENT = "tbmm"


@dataclass(frozen=True)
class Controller:
    """Where one controller lives for this process: `base` is our own cgroup dir in it."""

    name: str
    version: int
    base: Path


def _unescape(text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 3 < len(text) and text[i + 1 : i + 4].isdigit():
            out.append(chr(int(text[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _cgroup_mounts(mountinfo: str) -> list[tuple[str, Path, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup filesystem."""
    out = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        f, r = left.split(), right.split()
        if len(r) >= 3 and r[0] in ("cgroup", "cgroup2"):
            out.append((_unescape(f[3]), Path(_unescape(f[4])), r[0], set(r[2].split(","))))
    return out


def _under(path: str, root: str) -> Path | None:
    if root == "/":
        return Path(path.lstrip("/"))
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return Path(path[len(root) :].lstrip("/"))
    return None


@cache
def discover() -> dict[str, Controller]:
    """The controllers this process can use (v1 first, then the unified hierarchy)."""
    try:
        proc_cgroup = Path("/proc/self/cgroup").read_text()
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return {}
    return parse_controllers(proc_cgroup, mountinfo, _read_controllers)


def _read_controllers(base: Path) -> set[str]:
    try:
        return set((base / "cgroup.controllers").read_text().split())
    except OSError:
        return set()


def parse_controllers(
    proc_cgroup: str, mountinfo: str, v2_controllers: Callable[[Path], set[str]]
) -> dict[str, Controller]:
    """Controllers from /proc/self/cgroup and mountinfo texts (pure but for the callback
    that lists a v2 cgroup's controllers): v1 hierarchies first, then the unified one."""
    found: dict[str, Controller] = {}
    mounts = _cgroup_mounts(mountinfo)
    v2_path = None
    for line in proc_cgroup.splitlines():
        hid, ctrls, path = line.split(":", 2)
        if hid == "0" and ctrls == "":
            v2_path = path
            continue
        for ctrl in ctrls.split(","):
            if ctrl not in (*LIMITED, "freezer"):
                continue
            for root, point, fstype, opts in mounts:
                rel = _under(path, root)
                if fstype == "cgroup" and ctrl in opts and rel is not None:
                    found[ctrl] = Controller(ctrl, 1, point / rel)
                    break
    if v2_path is not None:
        for root, point, fstype, _ in mounts:
            rel = _under(v2_path, root)
            if fstype != "cgroup2" or rel is None:
                continue
            base = point / rel
            available = v2_controllers(base)
            for ctrl in LIMITED:
                if ctrl in available and ctrl not in found:
                    found[ctrl] = Controller(ctrl, 2, base)
            break
    return found


def _enable_v2(base: Path, ctrls: list[str]) -> list[str]:
    """Enable controllers for base's children; those that could not be enabled are dropped
    (the "no internal processes" rule refuses this in a non-root cgroup that has members)."""
    ok = []
    for c in ctrls:
        try:
            current = (base / "cgroup.subtree_control").read_text().split()
            if c not in current:
                (base / "cgroup.subtree_control").write_text(f"+{c}")
            ok.append(c)
        except OSError:
            continue
    return ok


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tag() -> str:
    """`<pid>-<start time>` of this process: stale resources are those whose owner is gone."""
    return f"{os.getpid()}-{_start_time(os.getpid())}"


def owner_alive(name: str) -> bool:
    """Whether the process that created a resource named `<pid>-<start>-...` still runs."""
    parts = name.split("-")
    if len(parts) < 2 or not parts[0].isdigit():
        return False
    return _start_time(int(parts[0])) == parts[1]


@dataclass(frozen=True)
class CgroupLimits:
    pids: int
    memory_bytes: int
    cpus: float


@dataclass
class TrialCgroup:
    """One trial's cgroup in every usable hierarchy; `dirs` maps controller -> its dir."""

    name: str
    dirs: dict[str, Path] = field(default_factory=dict)
    enforced: dict[str, str] = field(default_factory=dict)  # limit -> what enforces it

    @property
    def unique_dirs(self) -> list[Path]:
        return sorted(set(self.dirs.values()))

    def join_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.unique_dirs]

    @classmethod
    def create(
        cls,
        limits: CgroupLimits,
        name: str | None = None,
        controllers: dict[str, Controller] | None = None,
    ) -> TrialCgroup:
        """Create the cgroup dirs and write the limits; raise OSError if a write fails."""
        cg = cls(name or f"{owner_tag()}-{uuid.uuid4().hex[:8]}")
        try:
            cg._create(limits, discover() if controllers is None else controllers)
        except BaseException:
            cg.remove()
            raise
        return cg

    def _create(self, limits: CgroupLimits, ctrls: dict[str, Controller]) -> None:
        by_base: dict[Path, list[str]] = {}
        for c in ctrls.values():
            if c.version == 2:
                by_base.setdefault(c.base, []).append(c.name)
        for base, names in by_base.items():
            usable = _enable_v2(base, names)
            if usable:
                parent = base / PARENT
                parent.mkdir(exist_ok=True)
                usable = _enable_v2(parent, usable)
            d = base / PARENT / self.name
            if usable:
                d.mkdir()
                for n in usable:
                    self.dirs[n] = d
        for c in ctrls.values():
            if c.version == 1:
                d = c.base / PARENT / self.name
                d.mkdir(parents=True)
                self.dirs[c.name] = d
        self._write_limits(limits, ctrls)

    def _write_limits(self, limits: CgroupLimits, ctrls: dict[str, Controller]) -> None:
        mem = limits.memory_bytes
        quota = int(limits.cpus * CFS_PERIOD_US)
        for name, d in self.dirs.items():
            v = ctrls[name].version
            if name == "pids":
                (d / "pids.max").write_text(str(limits.pids))
                self.enforced["pids"] = f"cgroup v{v} pids.max={limits.pids}"
            elif name == "memory" and v == 1:
                (d / "memory.limit_in_bytes").write_text(str(mem))
                swap = d / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(str(mem))
                self.enforced["memory"] = f"cgroup v1 memory.limit_in_bytes={mem >> 20} MiB"
            elif name == "memory":
                (d / "memory.max").write_text(str(mem))
                if (d / "memory.swap.max").exists():
                    (d / "memory.swap.max").write_text("0")
                self.enforced["memory"] = f"cgroup v2 memory.max={mem >> 20} MiB"
            elif name == "cpu" and v == 1:
                (d / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
                (d / "cpu.cfs_quota_us").write_text(str(quota))
                self.enforced["cpu"] = f"cgroup v1 cpu.cfs_quota_us={quota}/{CFS_PERIOD_US}"
            elif name == "cpu":
                (d / "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}")
                self.enforced["cpu"] = f"cgroup v2 cpu.max={quota} {CFS_PERIOD_US}"

    def pids(self) -> set[int]:
        return cgroup_pids(self.unique_dirs)

    def kill(self) -> int:
        return kill_cgroups(self.unique_dirs)

    def read(self, controller: str, name: str) -> str | None:
        d = self.dirs.get(controller)
        try:
            return (d / name).read_text().strip() if d else None
        except OSError:
            return None

    def remove(self) -> None:
        """Kill what is left and remove the dirs (retrying: an exiting task holds it briefly)."""
        self.kill()
        for d in self.unique_dirs:
            _rmdir(d)


def _rmdir(d: Path, tries: int = 50) -> None:
    for _ in range(tries):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            kill_cgroups([d], timeout=1.0)
            time.sleep(0.02)


def reap_stale() -> int:
    """Kill and remove trial cgroups whose owner process is gone (a SIGKILLed sweep)."""
    n = 0
    for c in discover().values():
        parent = c.base / PARENT
        if not parent.is_dir():
            continue
        for d in parent.iterdir():
            if d.is_dir() and not owner_alive(d.name):
                kill_cgroups([d], timeout=2.0)
                _rmdir(d)
                n += 1
    return n


@cache
def usable() -> tuple[str, ...]:
    """Controllers among pids/memory/cpu for which a trial cgroup can really be created."""
    try:
        cg = TrialCgroup.create(CgroupLimits(pids=64, memory_bytes=64 << 20, cpus=1))
    except OSError:
        return ()
    try:
        return tuple(sorted(cg.enforced))
    finally:
        cg.remove()
