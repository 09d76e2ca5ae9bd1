"""The isolation properties a trial needs, and a report of what enforces each one.

Every backend answers `isolation(limits) -> {property: how | None}`; None means the
property is NOT enforced on this machine. `tbmm run` prints the report and refuses to start
a sweep while any property is missing, unless `--allow-weaker-isolation` is given.
"""

from __future__ import annotations

from rich.table import Table

PROPERTIES: dict[str, str] = {
    "unprivileged": "the agent runs as an unprivileged uid, never as host root",
    "capabilities": "no capabilities, no_new_privs",
    "kernel_knobs": "/proc/sys read-only or unwritable, /sys absent",
    "etc": "its own minimal /etc, not the host's",
    "network": "no network: own network namespace with loopback only",
    "processes": "own pid namespace: no host process visible",
    "host_paths": "no host path of the project or runs folder in mountinfo",
    "pids": "process limit for the whole tree",
    "memory": "memory limit for the whole tree (tmpfs included)",
    "cpu": "CPU limit",
    "tmpfs": "sized /tmp and /dev/shm",
    "storage": "size cap on /root/work + /root/results, across the trial's commands",
    "timeout": "at the timeout every process of the trial is killed",
}

Isolation = dict[str, str | None]


def missing(iso: Isolation) -> list[str]:
    """Required properties that are not enforced."""
    return [p for p in PROPERTIES if not iso.get(p)]


def table(iso: Isolation, title: str) -> Table:
    t = Table(title=title, title_justify="left")
    t.add_column("property")
    t.add_column("enforced by", overflow="fold")
    for key, what in PROPERTIES.items():
        how = iso.get(key)
        t.add_row(what, how if how else "[red]NOT ENFORCED[/red]")
    return t
