"""How long the largest artifacts within the caps take to verify (a script, not a test).

`uv run python -m tbmm.tooling.bounds_bench [--no-lean] [SLUG ...]` builds, for every task, the two
most expensive artifacts `tbmm.core.bounds.DEFAULT_CAPS` admit and times `verify_artifact` on
each (after one warm-up verification of the anchor, so the Lean build is not counted):

* **lists**: the anchor with every list grown to its cap (the same entries repeated; the
  total over all lists kept within `max_list_total`) and every number literal lengthened
  to `max_digits` characters; this drives the gate, the scorer and the Lean certificate,
  whose costs grow with the entries they expand;
* **bytes**: the anchor plus unreferenced padding up to `max_bytes` (numbers of
  `max_digits` characters, a chain nested `max_depth` deep); this drives parsing.

The caps are meant to keep every such artifact under 5 s on the project's 2-core machine.
Wall time on a shared machine is mostly waiting; CPU time (this process and its children,
which includes the Lean run) is printed beside it and is what the caps are sized on.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from tbmm.core import exact
from tbmm.core.bounds import DEFAULT_CAPS, BoundsError, Caps
from tbmm.suite.tasks import TASKS_ROOT, Task, load_suite

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


def _lists(doc: Any) -> int:
    if isinstance(doc, dict):
        return sum(_lists(v) for v in doc.values())
    if isinstance(doc, list):
        return 1 + sum(_lists(v) for v in doc)
    return 0


def _entries(doc: Any) -> int:
    if isinstance(doc, dict):
        return sum(_entries(v) for v in doc.values())
    if isinstance(doc, list):
        return len(doc) + sum(_entries(v) for v in doc)
    return 0


def _long_digits(doc: Any, width: int) -> Any:
    """Every decimal literal padded with trailing digits to `width` characters (the value
    moves by less than 1e-(width-10): the same decision, the most digits to carry)."""
    if isinstance(doc, dict):
        return {k: _long_digits(v, width) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_long_digits(v, width) for v in doc]
    if isinstance(doc, exact.Num) and _NUMBER.match(doc.text):
        text = doc.text if "." in doc.text else doc.text + "."
        text = (text + "0" * width)[: width - 1] + "1"
        return exact.Num(None, text, False)
    return doc


def _grow_to_caps(doc: Any, caps: Caps, scale: float, path: str = "") -> Any:
    """Each referenced list grown to `scale` x its cap (the task's per-path caps included)."""
    if isinstance(doc, dict):
        return {
            k: _grow_to_caps(v, caps, scale, f"{path}.{k}" if path else k) for k, v in doc.items()
        }
    if isinstance(doc, list):
        sub = f"{path}[*]"
        base = [_grow_to_caps(v, caps, scale, sub) for v in doc] or [exact.Num(None, "0", True)]
        if not caps.is_referenced(path):
            return base
        n = max(1, int(caps.list_cap(path) * scale))
        return [base[i % len(base)] for i in range(n)]
    return doc


def worst_lists(task: Task, caps: Caps | None = None) -> bytes:
    """The anchor with its referenced lists as long as the caps admit (each at its own cap,
    scaled down together until the total fits) and its numbers at the digit cap."""
    caps = caps or task.caps
    doc = {k: v for k, v in task.anchor_artifact.items() if k != "replayed"}
    grown, scale = doc, 1.0
    if _lists(doc):
        while scale > 0.01:
            grown = _grow_to_caps(doc, caps, scale)
            try:
                bounds_check(grown, caps)
                break
            except BoundsError:
                scale *= 0.9
    return exact.dumps(_long_digits(grown, caps.max_digits), indent=None).encode()


def bounds_check(doc: Any, caps: Caps) -> None:
    from tbmm.core.bounds import check

    check(exact.dumps(doc, indent=None), caps)


def worst_bytes(task: Task, caps: Caps | None = None) -> bytes:
    """The anchor padded to the byte cap with long numbers and a chain at the depth cap."""
    caps = caps or task.caps
    base = exact.dumps(
        {k: v for k, v in task.anchor_artifact.items() if k != "replayed"}, indent=None
    )
    number = "1." + "2" * (caps.max_digits - 2)
    chain = "[" * (caps.max_depth - 2) + "]" * (caps.max_depth - 2)
    head = base[:-1] + ', "tbmm_chain": ' + chain + ', "tbmm_padding": {'
    item = f'"p{{}}": {number}, '
    room = caps.max_bytes - len(head) - 2
    parts, used, i = [], 0, 0
    while used + len(item) + 8 <= room:
        piece = item.format(i)
        parts.append(piece)
        used += len(piece)
        i += 1
    body = "".join(parts).rstrip(", ")
    return (head + body + "}}").encode()


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass(frozen=True)
class Timing:
    task: str
    kind: str
    size: int
    entries: int
    seconds: float  # wall clock
    cpu_seconds: float  # user + system, this process and its children (the Lean run)
    status: str


def bench_task(task: Task, *, lean: bool = True, caps: Caps | None = None) -> list[Timing]:
    from tbmm.verify import verify_artifact

    verify_artifact(task, task.anchor_artifact_bytes(), lean=lean)  # warm-up (Lean build)
    out = []
    for kind, data in (("lists", worst_lists(task, caps)), ("bytes", worst_bytes(task, caps))):
        doc = exact.loads(data)
        c0, t0 = _cpu(), time.perf_counter()
        rep = verify_artifact(task, data, lean=lean)
        dt, cpu = time.perf_counter() - t0, _cpu() - c0
        out.append(Timing(task.slug, kind, len(data), _entries(doc), dt, cpu, rep.status))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("slugs", nargs="*")
    ap.add_argument("--no-lean", action="store_true")
    args = ap.parse_args()
    tasks = [t for t in load_suite(TASKS_ROOT) if not args.slugs or t.slug in args.slugs]
    c = DEFAULT_CAPS
    print(
        f"caps: {c.max_bytes} bytes, depth {c.max_depth}, {c.max_digits} characters per "
        f"number, {c.max_list} entries per list, {c.max_list_total} in all"
    )
    rows: list[Timing] = []
    for t in tasks:
        for r in bench_task(t, lean=not args.no_lean):
            rows.append(r)
            print(
                f"{r.task:34s} {r.kind:5s} {r.size:8d} B {r.entries:4d} entries "
                f"{r.seconds:6.2f} s wall {r.cpu_seconds:6.2f} s CPU  {r.status}",
                flush=True,
            )
    worst = max(rows, key=lambda r: r.cpu_seconds)
    print(
        f"most expensive: {worst.task} ({worst.kind}) {worst.cpu_seconds:.2f} s CPU, "
        f"{worst.seconds:.2f} s wall (load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
