"""Throughput benchmarks (a command, not a timed test: absolute timings are noisy here).

`tbmm bench` measures, on one core, over a MIXED corpus of every task (each task's anchor
and perturbed copies: a metric's value nudged, an over-claim, an empty object), in CPU
seconds of this process (so other load on the machine does not count):

* json.loads: the same bytes parsed by the standard library (the in-run reference that
  turns the figures into ratios, which are stable across machines and loads; the three
  measurements take turns in slices of 0.05 s, so a change of load reaches them alike);
* scoring: artifacts parsed exactly within their caps and scored (all task-level scores);
* gate: parsed artifacts gated (every check instance evaluated);
* replays: each replayed task's own benchmark (`bench_replay_<module>`), artifacts/s.

Replayed tasks are scored and gated on their resolved artifact (the replay's outputs
pre-computed once): the replay's own cost is the separate line.

`tbmm bench --lean` measures the Lean layer instead (`LeanFigure`: wall and CPU seconds,
the Lean child processes included): a long-list artifact, `tbmm lean audit`, one
`tbmm verify` call, and `tbmm verify --batch`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tbmm.core import exact
from tbmm.suite.tasks import Task
from tbmm.verdict.gate import run_gate
from tbmm.verdict.scoring import read_artifact, score_task


@dataclass(frozen=True)
class BenchResult:
    name: str
    task: str
    count: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else float("inf")


def _variants(task: Task, n: int) -> list[bytes]:
    base = exact.dumps(
        {k: v for k, v in task.anchor_artifact.items() if k != "replayed"}, indent=None
    )
    m = task.metrics[0]
    out = []
    for i in range(n):
        bumped = exact.fraction_to_text(m.anchor + exact.parse_decimal(f"0.{i:06d}"))
        out.append(base.replace(m.anchor_text, bumped, 1).encode())
    return out


def corpus(tasks: list[Task]) -> list[tuple[Task, bytes, Any]]:
    """(task, artifact bytes, replayed subtree or None) over every task: the anchor, each
    metric's value nudged (the first three metrics), every number doubled (an over-claim
    or a gate failure) and an empty object."""
    out: list[tuple[Task, bytes, Any]] = []
    for t in tasks:
        base = {k: v for k, v in t.anchor_artifact.items() if k != "replayed"}
        text = exact.dumps(base, indent=None)
        variants = [text, "{}"]
        for m in t.metrics[:3]:
            variants.append(text.replace(m.anchor_text, m.anchor_text + "1", 1))
        variants.append(_doubled(text))
        replayed = t.anchor_artifact.get("replayed")
        for v in variants:
            try:
                json.loads(v)
            except ValueError:
                continue
            out.append((t, v.encode(), replayed))
    return out


def _doubled(text: str) -> str:
    doc = exact.loads(text)

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, exact.Num):
            q = x.value * 2
            t = exact.fraction_to_text(q)
            return exact.Num(q, t, "." not in t) if "/" not in t else x
        return x

    return exact.dumps(walk(doc), indent=None)


SLICE = 0.05  # CPU seconds of one measurement before the next one takes its turn


def _rates(
    named: list[tuple[str, list[Any], Callable[[Any], Any]]], seconds: float, group: str
) -> list[BenchResult]:
    """Each (name, items, fn) run over its items for `seconds` of CPU in all, the measurements
    taking turns in slices of about `SLICE` seconds, so that a change in the machine's load
    during the run reaches every measurement alike (their ratios are what `tbmm bench`
    reports); at least one pass over the items each."""
    for _, items, fn in named:
        for it in items[: min(len(items), 64)]:
            fn(it)  # warm the tasks' caches
    counts = [0] * len(named)
    spent = [0.0] * len(named)
    while True:
        for k, (_, items, fn) in enumerate(named):
            if counts[k] and spent[k] >= seconds:
                continue
            t0 = time.process_time()
            while True:  # one slice: whole passes over the items
                for it in items:
                    fn(it)
                counts[k] += len(items)
                if time.process_time() - t0 >= min(SLICE, seconds):
                    break
            spent[k] += time.process_time() - t0
        if all(c and s >= seconds for c, s in zip(counts, spent, strict=True)):
            break
    return [
        BenchResult(name, group, c, s)
        for (name, _, _), c, s in zip(named, counts, spent, strict=True)
    ]


def bench_mixed(tasks: list[Task], seconds: float = 2.0, group: str = "mixed") -> list[BenchResult]:
    """json.loads, scoring and gate over the mixed corpus (artifacts per CPU-second, the
    three taking turns: `_rates`); the rows carry `group` as their task so that several
    corpora can be reported side by side."""
    items = corpus(tasks)

    def parse_and_score(it: tuple[Task, bytes, Any]) -> None:
        t, data, replayed = it
        doc = read_artifact(data, t.caps)
        if replayed is not None and doc:
            doc["replayed"] = replayed
        score_task(t, doc)

    docs = []
    for t, data, replayed in items:
        doc = read_artifact(data, t.caps)
        if replayed is not None and doc:
            doc["replayed"] = replayed
        docs.append((t, doc))
    return _rates(
        [
            ("json.loads", items, lambda it: json.loads(it[1])),
            ("scoring", items, parse_and_score),
            ("gate", docs, lambda td: run_gate(td[0], td[1])),
        ],
        seconds,
        group,
    )


def bench_replays(tasks: list[Task], seconds: float = 1.0) -> list[BenchResult]:
    """Each replayed task's own `bench_replay_<module>` (largest legal inputs), every replay
    afresh (`tbmm.replay.cache` bypassed)."""
    from tbmm.replay.cache import bypass

    out = []
    for t in tasks:
        spec = t.replay_spec
        fn = globals().get(f"bench_replay_{spec.module}") if spec else None
        if fn is not None:
            with bypass():
                out.append(fn(t, seconds))
    return out


def bench_scoring(task: Task, seconds: float = 2.0) -> BenchResult:
    r = bench_mixed([task], seconds)[1]
    return BenchResult("scoring", task.slug, r.count, r.seconds)


def bench_json_reference(task: Task, seconds: float = 2.0) -> BenchResult:
    r = bench_mixed([task], seconds)[0]
    return BenchResult("json.loads", task.slug, r.count, r.seconds)


def bench_gate(task: Task, seconds: float = 2.0) -> BenchResult:
    r = bench_mixed([task], seconds)[2]
    return BenchResult("gate", task.slug, r.count, r.seconds)


def bench_replay_production_decision(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per CPU-second of CUMCM 2024 B artifacts at the largest legal input (the input's
    shape is fixed by the statement: 6 x 4 + 16 decision bits), cycling through 256
    pseudo-random decision vectors so that no result comes from a cache."""
    import random

    from tbmm.replay import run_replay, strip_replayed

    base, _ = strip_replayed(task.anchor_artifact)
    rng = random.Random(20240906)
    one, zero = exact.Num(None, "1", True), exact.Num(None, "0", True)

    def bit() -> exact.Num:
        return one if rng.random() < 0.5 else zero

    docs = []
    for _ in range(256):
        doc = exact.loads(exact.dumps(base))
        for case in doc["q2"]["cases"]:
            for k in ("inspect_part1", "inspect_part2", "inspect_product", "disassemble_defective"):
                case[k] = bit()
        q3 = doc["q3"]
        for entry in (*q3["parts"], *q3["semi_products"], q3["product"]):
            for k in ("inspect", "disassemble_defective"):
                if k in entry:
                    entry[k] = bit()
        docs.append(doc)
    run_replay(task, docs[0])
    n, t0 = 0, time.process_time()
    while n == 0 or time.process_time() - t0 < seconds:
        for d in docs:
            run_replay(task, d)
        n += len(docs)
    return BenchResult("replay", task.slug, n, time.process_time() - t0)


def crop_planting_largest(task: Task) -> dict:
    """The largest legal CUMCM 2024 C artifact: every suitable (year, plot, season, crop)
    combination of 附件1/附件2 as a row, in both cases (7 x 1062 = 7434 rows each), with
    areas that differ per row so that nothing is shared."""
    from tbmm.replay.crop_planting import Rules, load_data

    data = load_data(task.data_dir / "attachments")
    rules = Rules.from_params(task.replay_spec.params)
    rows = []
    i = 0
    for y in rules.years:
        for pid, p in data.plots.items():
            for kind, season, crop in data.stats:
                if kind == p.kind:
                    i += 1
                    area = exact.fraction_to_text(p.area * (1 + i % 7) / 100)
                    rows.append(
                        f'{{"year": {y}, "plot": "{pid}", "season": "{season}", '
                        f'"crop": "{crop}", "area_mu": {area}}}'
                    )
    plan = "[" + ", ".join(rows) + "]"
    text = (
        f'{{"q1": {{"case1": {{"profit_yuan": 0, "plan": {plan}}}, '
        f'"case2": {{"profit_yuan": 0, "plan": {plan}}}}}}}'
    )
    return read_artifact(text, task.caps)


def bench_replay_crop_planting(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per CPU-second of the largest legal CUMCM 2024 C artifact (2 x 7434 rows); the
    reciprocal is the CPU time per artifact (target <= 2 s)."""
    from tbmm.replay import run_replay

    doc = crop_planting_largest(task)
    run_replay(task, doc)
    n, t0 = 0, time.process_time()
    while n == 0 or time.process_time() - t0 < seconds:
        _, rep = run_replay(task, doc)
        assert rep is not None and rep.status == "ok", rep
        n += 1
    return BenchResult("replay", task.slug, n, time.process_time() - t0)


def multibeam_lines_largest() -> dict[str, list[tuple[float, float, float, float]]]:
    """The most expensive legal CUMCM 2023 B Problem 4 designs (segments x0, y0, x1, y1 in
    nmi): at the caps of 1,000 segments, 1,000 nmi and 200 candidate neighbours per segment."""
    import numpy as np

    rng = np.random.default_rng(7)
    diag = float(np.hypot(4, 5))
    starts = rng.uniform([0, 0], [4, 5], (1000, 2))
    ang = rng.uniform(0, 2 * np.pi, 1000)
    ends = np.clip(starts + 0.99 * np.c_[np.cos(ang), np.sin(ang)], [0, 0], [4, 5])
    ys = np.linspace(0, 5, 21)
    xs = (np.arange(50) + 0.5) * 4 / 50
    stacks = [(0.6 + 0.7 * i, 3.0) for i in range(5)]
    fans = [(0.8, 0.0), (3.2, 0.0), (0.8, 2.0), (3.2, 2.0)]
    # bundles of lines crossing at their midpoints within 10 degrees: every pair changes
    # side at the crossing, which defeats the whole-segment pruning of the overlap search
    spread = np.linspace(np.pi / 2 - 0.09, np.pi / 2 + 0.09, 200)
    bundles = [(3.4, 0.6), (3.4, 2.5), (3.4, 4.4), (1.5, 1.5), (1.5, 3.5)]
    return {
        "5 stacks of 200 x 1 nmi": [(x, y, x, y + 1.0) for x, y in stacks for _ in range(200)],
        f"stacked {int(1000 // diag)} full diagonals": [(0, 0, 4, 5)] * int(1000 // diag),
        "4 fans of 200 x 0.8 nmi": [
            (x, y, x + 0.8 * np.cos(a), y + 0.8 * np.sin(a))
            for x, y in fans
            for a in np.linspace(0.0, np.pi, 200, endpoint=False)
        ],
        "5 X bundles of 200 x 0.98 nmi": [
            (x - 0.49 * np.cos(a), y - 0.49 * np.sin(a), x + 0.49 * np.cos(a), y + 0.49 * np.sin(a))
            for x, y in bundles
            for a in spread
        ],
        "200 parallel N-S lines": [(x, 0, x, 5) for x in np.linspace(0.01, 3.99, 200)],
        "250 parallel E-W lines": [(0, y, 4, y) for y in np.linspace(0.01, 4.99, 250)],
        "random 1000 x <= 1 nmi": [tuple(np.r_[s, e]) for s, e in zip(starts, ends, strict=True)],
        "bands 20 x 50 (1000 segments)": [(x, ys[b], x, ys[b + 1]) for b in range(20) for x in xs],
    }


def multibeam_lines_artifact(task: Task, segs: list[tuple[float, float, float, float]]) -> dict:
    """A CUMCM 2023 B artifact carrying `segs` (claims 0: the replay's cost does not depend
    on them), parsed within the task's caps."""
    keys = ("x_start_nmi", "y_start_nmi", "x_end_nmi", "y_end_nmi")
    lines = [dict(zip(keys, (round(float(v), 6) for v in s), strict=True)) for s in segs]
    doc = {
        "q4": {
            "lines": lines,
            "total_line_length_nmi": 0,
            "missed_area_pct": 0,
            "overlap_over_20pct_length_nmi": 0,
        },
        "q3": {"total_line_length_m": 125936, "line_count": 34},
    }
    return read_artifact(json.dumps(doc), task.caps)


def bench_replay_multibeam_lines(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per CPU second of the most expensive legal CUMCM 2023 B Problem 4 designs
    (`multibeam_lines_largest`, in rotation); the reciprocal is the CPU time per artifact
    (target <= 2 s; tests/bench/bench_replay_multibeam_lines.py reports each design, cold
    and warm, wall and CPU)."""
    from tbmm.core.bounds import CpuBudget
    from tbmm.replay import run_replay

    docs = [multibeam_lines_artifact(task, s) for s in multibeam_lines_largest().values()]
    run_replay(task, docs[0], CpuBudget(600))
    n, t0 = 0, time.process_time()
    while n == 0 or time.process_time() - t0 < seconds:
        for d in docs:
            _, rep = run_replay(task, d, CpuBudget(600))
            assert rep is not None and rep.status == "ok", rep
        n += len(docs)
    return BenchResult("replay", task.slug, n, time.process_time() - t0)


def largest_smoke_screen_input(task: Task) -> dict:
    """The smoke-screen reference padded to the statement's maximum: every UAV drops 3
    grenades in Problem 5 (the added drops repeat the UAV's last drop 1.5 s later, so their
    clouds sit near the sightlines and cost the search real work), plus Problems 2-4."""
    import copy

    from tbmm.replay import strip_replayed

    doc = copy.deepcopy(strip_replayed(task.anchor_artifact)[0])
    drops = doc["q5"]["drops"]
    for uav in ("FY1", "FY2", "FY3", "FY4", "FY5"):
        mine = [d for d in drops if d["uav"] == uav]
        while 0 < len(mine) < 3:
            last = dict(mine[-1])
            shifted = last["release_time_s"].value + exact.parse_decimal("1.5")
            last["release_time_s"] = exact.Num(shifted, exact.fraction_to_text(shifted), False)
            drops.append(last)
            mine.append(last)
    return doc


def bench_replay_smoke_screen(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per CPU-second of the largest legal smoke-screen input (at least one); the
    reciprocal is the replay time per artifact (target <= 2 s)."""
    from tbmm.replay import CpuBudget, load_module

    spec = task.replay_spec
    assert spec is not None
    fn = load_module(spec.module)
    doc = largest_smoke_screen_input(task)
    fn(doc, task, spec, CpuBudget(600))  # warm-up (imports, caches)
    n, t0 = 0, time.process_time()
    while n == 0 or time.process_time() - t0 < seconds:
        out = fn(doc, task, spec, CpuBudget(600))
        assert out.values, out.notes
        n += 1
    return BenchResult("replay", task.slug, n, time.process_time() - t0)


def heliostat_field_largest(task: Task) -> dict:
    """The largest legal CUMCM 2023 A artifact: in both questions the densest hexagonal
    lattice of 2 m mirrors at the minimum spacing (7 m) with the tower on the field's edge
    (the most mirrors, about 8700, and the longest blocking corridors); see
    tests/bench/bench_replay_heliostat_field.py for the other largest cases."""
    import math

    import numpy as np

    pitch, ty = 7.01, -350.0  # the minimum spacing + 1 cm: legal after rounding to 1 mm
    m = int(350 / pitch) + 2
    jj, ii = np.meshgrid(np.arange(-m, m + 1), np.arange(-2 * m, 2 * m + 1))
    x = np.round(((jj + 0.5 * (ii % 2)) * pitch).ravel(), 3)
    y = np.round((ii * pitch * math.sqrt(3) / 2).ravel(), 3)
    ok = (x * x + y * y <= 350**2) & (x * x + (y - ty) ** 2 >= 100**2)
    pts = [(float(a), float(b)) for a, b in zip(x[ok], y[ok], strict=True)]
    q2 = {"tower_x_m": 0, "tower_y_m": ty, "mirror_width_m": 2, "mirror_height_m": 2}
    q2 |= {"installation_height_m": 2, "mirrors": [{"x_m": a, "y_m": b} for a, b in pts]}
    one = {"width_m": 2, "height_m": 2, "installation_height_m": 2}
    q3 = {"tower_x_m": 0, "tower_y_m": ty, "mirrors": [{"x_m": a, "y_m": b, **one} for a, b in pts]}
    return read_artifact(json.dumps({"q2": q2, "q3": q3}), task.caps)


def bench_replay_heliostat_field(task: Task, seconds: float = 2.0) -> BenchResult:
    """Replays per CPU-second of the largest legal CUMCM 2023 A artifact (both field designs);
    the reciprocal is the CPU time per artifact (target <= 5 s)."""
    from tbmm.replay import run_replay

    doc = heliostat_field_largest(task)
    n, t0 = 0, time.process_time()
    while n == 0 or time.process_time() - t0 < seconds:
        _, rep = run_replay(task, doc)
        assert rep is not None and rep.status == "ok" and not rep.error, rep
        assert not any("not replayed" in note for note in rep.notes), rep.notes
        n += 1
    return BenchResult("replay", task.slug, n, time.process_time() - t0)


# --- replays against their frozen pre-rewrite copies ---------------------------------


@dataclass(frozen=True)
class Speedup:
    """CPU time of a replay's frozen reference copy over the production replay's, on the
    same parsed artifact, the two alternating `runs` times; `ratio` is the median of the
    per-round ratios (> 1: the production replay is the cheaper)."""

    task: str
    input: str
    reference: str
    ratio: float
    reference_cpu: float  # median CPU seconds per replay
    cpu: float
    runs: int
    same_values: bool


def reference_replay(module: str) -> Any | None:
    """The frozen copy `tests/reference_replays/<module>_v1.py` of a checkout (None when
    tbmm runs from an installed wheel, which ships no tests)."""
    import importlib.util
    from pathlib import Path

    from tbmm.suite.tasks import TASKS_ROOT

    path = Path(TASKS_ROOT).parent / "tests" / "reference_replays" / f"{module}_v1.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_tbmm_reference_{module}_v1", path)
    if spec is None or spec.loader is None:
        return None
    import sys

    if spec.name in sys.modules:
        return sys.modules[spec.name]
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return mod


def replay_speedup(task: Task, doc: dict, label: str, runs: int = 3) -> Speedup | None:
    """Interleaved CPU-time ratio of the task's reference replay copy to its replay on one
    parsed artifact (see `Speedup`); None when the task has no reference copy."""
    import statistics

    from tbmm.replay import CpuBudget, load_module

    spec = task.replay_spec
    if spec is None:
        return None
    ref = reference_replay(spec.module)
    if ref is None:
        return None
    new = load_module(spec.module)
    old_cpu, new_cpu, same = [], [], True
    for _ in range(max(runs, 1)):
        c0 = time.process_time()
        a = ref.replay(doc, task, spec, CpuBudget(600))
        c1 = time.process_time()
        b = new(doc, task, spec, CpuBudget(600))
        c2 = time.process_time()
        old_cpu.append(c1 - c0)
        new_cpu.append(c2 - c1)
        same = same and a.values == b.values and a.notes == b.notes
    ratios = [o / n for o, n in zip(old_cpu, new_cpu, strict=True) if n > 0]
    return Speedup(
        task=task.slug,
        input=label,
        reference=f"tests/reference_replays/{spec.module}_v1.py",
        ratio=statistics.median(ratios) if ratios else float("inf"),
        reference_cpu=statistics.median(old_cpu),
        cpu=statistics.median(new_cpu),
        runs=len(old_cpu),
        same_values=same,
    )


def bench_replay_speedups(tasks: list[Task], runs: int = 3) -> list[Speedup]:
    """`replay_speedup` on the anchor of every replayed task that has a reference copy."""
    from tbmm.replay import strip_replayed

    out = []
    for t in tasks:
        if t.replay_spec is None or reference_replay(t.replay_spec.module) is None:
            continue
        doc = read_artifact(exact.dumps(strip_replayed(t.anchor_artifact)[0], indent=None), t.caps)
        r = replay_speedup(t, doc, "anchor", runs)
        if r is not None:
            out.append(r)
    return out


# --- the Lean layer's costs (`tbmm bench --lean`) -------------------------------------


@dataclass(frozen=True)
class LeanFigure:
    """One measurement: wall and CPU seconds (this process and its children, the Lean run
    included), what was measured, and its outcome."""

    name: str
    detail: str
    seconds: float
    cpu_seconds: float
    outcome: str
    count: int = 1

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else float("inf")

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "count": self.count,
            "outcome": self.outcome,
        }


def _cpu() -> float:
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def wildcard_list(task: Task) -> str:
    """The list the task's first wildcard check runs over (its path before the `[*]`)."""
    for c in task.gate.check:
        for p in c.paths():
            if "[*]" in p:
                return p.split("[*]", 1)[0]
    raise ValueError(f"{task.slug}: no gate check runs over a list")


def grown(task: Task, path: str, entries: int) -> dict:
    """The task's anchor artifact with the list at `path` grown to `entries` entries (its
    own entries repeated; in the replayed outputs too, when the same list is there)."""
    import copy

    from tbmm.core.paths import resolve
    from tbmm.suite.models import REPLAYED

    doc = copy.deepcopy(task.anchor_artifact)
    for p in (path, f"{REPLAYED}.{path}"):
        try:
            xs = resolve(doc, p)
        except KeyError:
            continue
        if isinstance(xs, list) and xs:
            xs[:] = [copy.deepcopy(xs[i % len(xs)]) for i in range(entries)]
    return doc


def bench_lean_list(task: Task, entries: int = 1000) -> LeanFigure:
    """Python's verdict and the kernel's check of the anchor with one list grown to `entries`
    entries (the caps are not applied: this measures the Lean layer, not the input limits)."""
    from tbmm.lean.certify import check_artifact
    from tbmm.verdict.gate import run_gate
    from tbmm.verdict.scoring import score_task

    path = wildcard_list(task)
    doc = grown(task, path, entries)
    c0, t0 = _cpu(), time.perf_counter()
    g = run_gate(task, doc)
    s = score_task(task, doc, gate_failed=g.verdict == "fail", unverifiable=g.unverifiable)
    res = check_artifact(task, doc, gate_report=g, score=s)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    checks = sum(1 for c in task.gate.check if any("[*]" in p for p in c.paths()))
    detail = (
        f"{task.slug}: {path} x {entries}, {checks} check(s) over it, {res.obligations} obligations"
    )
    return LeanFigure("lean list", detail, wall, cpu, res.outcome)


def _tbmm(args: list[str]) -> tuple[float, float, int, str]:
    """Run the `tbmm` command line in a fresh process: (wall, CPU of the child, exit, stdout);
    every replay afresh (the replay cache off: a benchmark measures replays)."""
    import os
    import subprocess
    import sys

    exe = [sys.executable, "-c", "import sys; from tbmm.cli.entry import main; sys.exit(main())"]
    t = os.times()
    c0 = t.children_user + t.children_system
    t0 = time.perf_counter()
    env = {**os.environ, "TBMM_REPLAY_CACHE": "off"}
    proc = subprocess.run([*exe, *args], capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - t0
    t = os.times()
    return wall, t.children_user + t.children_system - c0, proc.returncode, proc.stdout


def bench_cli(task: Task, runs: int = 3) -> list[LeanFigure]:
    """`tbmm score` (table and --json) and `tbmm gate` of the task's anchor artifact, each in
    a fresh process as a user runs them: the best of `runs` after one warm-up call (which
    validates and stores the task files for lite mode, `tbmm.suite.compiled`)."""
    import tempfile
    from pathlib import Path

    out = []
    with tempfile.TemporaryDirectory(prefix="tbmm-bench-") as tmp:
        art = Path(tmp) / "anchor.json"
        art.write_bytes(task.anchor_artifact_bytes())
        for cmd in (["score"], ["score", "--json"], ["gate"]):
            args = [cmd[0], str(art), "--task", task.slug, *cmd[1:]]
            _tbmm(args)
            best = min((_tbmm(args) for _ in range(runs)), key=lambda r: r[1])
            out.append(
                LeanFigure(
                    f"tbmm {' '.join(cmd)}",
                    f"{task.slug} anchor, best of {runs}",
                    best[0],
                    best[1],
                    f"exit {best[2]}",
                )
            )
    return out


def bench_audit() -> LeanFigure:
    """`tbmm lean audit` as a user runs it (a fresh process; the library already built)."""
    wall, cpu, code, _ = _tbmm(["lean", "audit"])
    return LeanFigure("lean audit", "tbmm lean audit (CLI)", wall, cpu, f"exit {code}")


def bench_verify_cli(task: Task, runs: int = 3) -> LeanFigure:
    """`tbmm verify` of the task's anchor artifact in a fresh process; the best of `runs`
    (the task files' lite copies stored first: `warm_lite`)."""
    import tempfile
    from pathlib import Path

    warm_lite(task)
    best: tuple[float, float, int] | None = None
    with tempfile.TemporaryDirectory(prefix="tbmm-bench-") as tmp:
        art = Path(tmp) / "anchor.json"
        art.write_bytes(task.anchor_artifact_bytes())
        for _ in range(runs):
            wall, cpu, code, _ = _tbmm(["verify", str(art), "--task", task.slug])
            if best is None or wall < best[0]:
                best = (wall, cpu, code)
    assert best is not None
    return LeanFigure(
        "verify CLI",
        f"tbmm verify (anchor of {task.slug}), best of {runs}",
        best[0],
        best[1],
        f"exit {best[2]}",
    )


def bench_batch(task: Task, n: int = 40) -> LeanFigure:
    """`tbmm verify --batch` over `n` distinct anchor-size artifacts of the task (the anchor
    with one scored value nudged each time), in a fresh process: all in one Lean run."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="tbmm-bench-") as tmp:
        for i, data in enumerate(nudged(task, n)):
            (Path(tmp) / f"a{i:04d}.json").write_bytes(data)
        wall, cpu, code, out = _tbmm(["verify", "--batch", tmp, "--task", task.slug])
    return LeanFigure(
        "verify batch",
        f"tbmm verify --batch: {n} artifacts of {task.slug}, one Lean run",
        wall,
        cpu,
        f"exit {code}",
        count=n,
    )


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the Lean runs), from getrusage."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass(frozen=True)
class AnchorLean:
    """The Lean side of one task's anchor: the Lean child's CPU seconds for its kernel check
    (the verify certificate; Python's stages apart), `tbmm verify` in a fresh process (CPU,
    Lean included), and the check instances its verdict theorem runs."""

    task: str
    lean_cpu: float
    verify_cpu: float
    instances: int
    outcome: str

    def to_json(self) -> dict[str, object]:
        return {
            "task": self.task,
            "lean_cpu_seconds": round(self.lean_cpu, 3),
            "verify_cpu_seconds": round(self.verify_cpu, 3),
            "instances": self.instances,
            "outcome": self.outcome,
        }


def warm_lite(task: Task) -> None:
    """Store the task files' validated plain copies (`tbmm.suite.compiled`) as the first lite
    `tbmm score`/`gate`/`verify` call does: a figure of a command line then measures what
    every later call costs, not that one validation (pydantic, ≈0.5 s)."""
    from tbmm.suite import tasks as tasks_mod

    tasks_mod.LITE = True
    try:
        t = tasks_mod.load_task(task.dir)
        for name in ("artifact_map", "scoring", "gate", "replay_spec", "panel", "baseline"):
            getattr(t, name)
    finally:
        tasks_mod.LITE = False


def bench_anchor_lean(task: Task, cli: bool = True) -> AnchorLean:
    """`AnchorLean` of the task's anchor: the kernel check's CPU (the best of two, after the
    task module is built) and, with `cli`, one `tbmm verify` command line (replay cache off,
    the task files' lite copies stored: `warm_lite`)."""
    import tempfile
    from pathlib import Path

    from tbmm.lean.certify import check_artifact
    from tbmm.verify import _python_stage

    early, ev, _ = _python_stage(task, task.anchor_artifact_bytes())
    assert early is None and ev is not None, f"{task.slug}: the anchor did not reach Lean"
    best = float("inf")
    res = None
    for _ in range(2):
        c0 = _children_cpu()
        res = check_artifact(task, ev.doc, gate_report=ev.gate, score=ev.score)
        best = min(best, _children_cpu() - c0)
    assert res is not None
    verify = float("nan")
    if cli:
        warm_lite(task)
        with tempfile.TemporaryDirectory(prefix="tbmm-bench-") as tmp:
            art = Path(tmp) / "anchor.json"
            art.write_bytes(task.anchor_artifact_bytes())
            _, verify, _, _ = _tbmm(["verify", str(art), "--task", task.slug])
    return AnchorLean(task.slug, best, verify, res.instances, res.outcome)


def bench_clean_build() -> LeanFigure:
    """`tbmm lean build` from nothing (every module compiled: core, lemmas, replays, the
    task certificates) in a copy of the project's Lean sources: the Lean children's CPU."""
    import tempfile
    from pathlib import Path

    from tbmm.lean.build import build, copy_project

    with tempfile.TemporaryDirectory(prefix="tbmm-bench-build-") as tmp:
        root = copy_project(Path(tmp), with_build=False)
        c0, t0 = _children_cpu(), time.perf_counter()
        res = build(root, force=True, use_lake=False)
        wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    outcome = "ok" if res.failure is None else f"failed: {res.failure.summary()}"
    detail = f"clean tbmm lean build: {len(res.built)} modules compiled"
    return LeanFigure("clean build", detail, wall, cpu, outcome, count=len(res.built))


def nudged(task: Task, n: int) -> list[bytes]:
    """`n` distinct anchor-size artifacts of the task: its anchor with the first metric's
    value nudged by i·1e-9 (so that no cache can serve one artifact for another)."""
    from tbmm.core.paths import resolve

    m = task.metrics[0]
    base = json.loads(task.anchor_artifact_bytes())
    out = []
    for i in range(n):
        doc = json.loads(json.dumps(base))
        leaf = resolve(doc, m.path.rsplit(".", 1)[0]) if "." in m.path else doc
        key = m.path.rsplit(".", 1)[-1]
        if isinstance(leaf, dict) and isinstance(leaf.get(key), (int, float)):
            leaf[key] = leaf[key] + i * 1e-9
        out.append(json.dumps(doc).encode())
    return out


def bench_amortise(items: list[tuple[Task, bytes]], what: str) -> tuple[LeanFigure, LeanFigure]:
    """The same artifacts kernel-checked one Lean run each, then all in one run
    (`check_batch`, as `verify --batch`, serve, rescore and Harbor ingest do): the Lean
    children's CPU of both (Python's stages apart), whose ratio is what one run saves."""
    from tbmm.lean.certify import check_artifact, check_batch
    from tbmm.verify import _python_stage

    staged = []
    for t, data in items:
        early, ev, _ = _python_stage(t, data)
        if early is None and ev is not None:
            staged.append((t, ev.doc, ev.gate, ev.score))
    c0, t0 = _children_cpu(), time.perf_counter()
    singles = [check_artifact(t, d, gate_report=g, score=s) for t, d, g, s in staged]
    one = LeanFigure(
        "lean singles",
        f"{len(staged)} {what}, one Lean run each",
        time.perf_counter() - t0,
        _children_cpu() - c0,
        ",".join(sorted({r.outcome for r in singles})),
        count=len(staged),
    )
    c0, t0 = _children_cpu(), time.perf_counter()
    batch = check_batch(staged)
    many = LeanFigure(
        "lean batch",
        f"the same {len(staged)} {what} in one Lean run",
        time.perf_counter() - t0,
        _children_cpu() - c0,
        ",".join(sorted({r.outcome for r in batch})),
        count=len(staged),
    )
    return one, many
