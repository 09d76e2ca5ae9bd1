"""cgroup discovery and limit writing, for the layouts this machine does not have (pure v2,
a container's nested mount root) and for v1: parsed from texts, written into plain dirs."""

from __future__ import annotations

from pathlib import Path

from harness.sandbox.cgroups import CgroupLimits, Controller, TrialCgroup, parse_controllers

HYBRID_CGROUP = """9:name=systemd:/
8:pids:/
4:memory:/process_api/abc
1:cpu,cpuacct:/
6:freezer:/
0::/
"""
HYBRID_MOUNTS = """31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""


def test_hybrid_v1_layout() -> None:
    found = parse_controllers(HYBRID_CGROUP, HYBRID_MOUNTS, lambda base: {"hugetlb"})
    assert found["memory"] == Controller("memory", 1, Path("/sys/fs/cgroup/memory/process_api/abc"))
    assert found["cpu"] == Controller("cpu", 1, Path("/sys/fs/cgroup/cpu,cpuacct"))
    assert found["pids"].base == Path("/sys/fs/cgroup/pids")
    assert found["freezer"].version == 1


def test_pure_v2_and_a_containers_mount_root() -> None:
    mounts = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
    seen: list[Path] = []

    def controllers(base: Path) -> set[str]:
        seen.append(base)
        return {"cpuset", "cpu", "io", "memory", "pids"}

    found = parse_controllers("0::/user.slice/tbmm.scope\n", mounts, controllers)
    base = Path("/sys/fs/cgroup/user.slice/tbmm.scope")
    assert seen == [base]
    assert found == {c: Controller(c, 2, base) for c in ("pids", "memory", "cpu")}
    # inside a container the cgroup fs is mounted from the container's own cgroup
    nested = "30 25 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    found = parse_controllers("0::/docker/abc/sub\n", nested, controllers)
    assert found["pids"].base == Path("/sys/fs/cgroup/sub")
    # a controller missing from cgroup.controllers is not claimed
    assert parse_controllers("0::/\n", mounts, lambda b: {"memory"}).keys() == {"memory"}


def test_v2_limits_written(tmp_path: Path) -> None:
    ctrls = {c: Controller(c, 2, tmp_path) for c in ("pids", "memory", "cpu")}
    for d in (tmp_path, tmp_path / "tbmm"):  # what cgroupfs creates by itself
        d.mkdir(exist_ok=True)
        (d / "cgroup.subtree_control").write_text("")
    cg = TrialCgroup.create(CgroupLimits(pids=64, memory_bytes=256 << 20, cpus=1.5), "t", ctrls)
    d = tmp_path / "tbmm" / "t"
    assert cg.unique_dirs == [d] and cg.join_files() == [d / "cgroup.procs"]
    assert (d / "pids.max").read_text() == "64"
    assert (d / "memory.max").read_text() == str(256 << 20)
    assert (d / "cpu.max").read_text() == "150000 100000"
    assert set(cg.enforced) == {"pids", "memory", "cpu"}
    assert all(v.startswith("cgroup v2") for v in cg.enforced.values())


def test_v1_limits_written(tmp_path: Path) -> None:
    ctrls = {c: Controller(c, 1, tmp_path / c) for c in ("pids", "memory", "cpu", "freezer")}
    cg = TrialCgroup.create(CgroupLimits(pids=10, memory_bytes=1 << 30, cpus=2), "t", ctrls)
    d = {c: tmp_path / c / "tbmm" / "t" for c in ctrls}
    assert (d["pids"] / "pids.max").read_text() == "10"
    assert (d["memory"] / "memory.limit_in_bytes").read_text() == str(1 << 30)
    assert not (d["memory"] / "memory.memsw.limit_in_bytes").exists()  # no swap accounting
    assert (d["cpu"] / "cpu.cfs_quota_us").read_text() == "200000"
    assert (d["cpu"] / "cpu.cfs_period_us").read_text() == "100000"
    assert d["freezer"].is_dir() and len(cg.join_files()) == 4
    assert all(v.startswith("cgroup v1") for v in cg.enforced.values())
