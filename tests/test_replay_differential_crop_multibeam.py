"""The rewritten crop-planting and multibeam replays against their frozen v1 copies
(tests/reference_replays) on edge cases a faster algorithm could get wrong, and on
hypothesis-mutated anchors: same values, details and notes, or the same refusal. An
artifact the rewrite scores differently from the reference (better or worse) is a failure,
so an attacker gains nothing by aiming at the fast paths (column readers, int-coded rules,
filled coverage)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tbmm.core import exact
from tbmm.replay import CpuBudget, ReplayInputError, strip_replayed
from tbmm.replay import crop_planting as C
from tbmm.replay import multibeam_lines as M
from tbmm.suite.tasks import Task, find_task
from tests.reference_replays import crop_planting_v1 as CR
from tests.reference_replays import multibeam_lines_v1 as MR


@pytest.fixture(scope="module")
def crop() -> Task:
    return find_task("cumcm-2024-c-crop-planting")


@pytest.fixture(scope="module")
def beam() -> Task:
    return find_task("cumcm-2023-b-multibeam-lines")


def _outcome(fn: Any, task: Task, doc: dict[str, Any]) -> Any:
    try:
        out = fn(doc, task, task.replay_spec, CpuBudget(600))
    except ReplayInputError as exc:
        return ("refused", str(exc))
    return (out.values, out.details, out.notes)


def _same(old: Any, new: Any, task: Task, doc: dict[str, Any]) -> Any:
    """Both replays on fresh copies (a replay must not depend on what another cached on the
    numbers); the outcomes must be equal."""
    a = _outcome(old, task, copy.deepcopy(doc))
    b = _outcome(new, task, copy.deepcopy(doc))
    assert a == b
    return b


def _anchor(task: Task) -> dict[str, Any]:
    return strip_replayed(task.anchor_artifact)[0]


def _text_doc(obj: Any) -> dict[str, Any]:
    """A document built from JSON text (numbers exact, as an artifact arrives)."""
    return exact.loads(json.dumps(obj) if not isinstance(obj, str) else obj)


# --- crop planting ---------------------------------------------------------------------------


def _crop_plan(d: dict[str, Any], case: str) -> list[Any]:
    return d["q1"][case]["plan"]


def _crop_edge_cases(task: Task) -> dict[str, dict[str, Any]]:
    base = _anchor(task)
    out: dict[str, dict[str, Any]] = {}

    def edit(name: str, fn: Any) -> None:
        d = copy.deepcopy(base)
        fn(d)
        out[name] = d

    edit("empty plan", lambda d: _crop_plan(d, "case1").clear())
    edit("both plans empty", lambda d: [_crop_plan(d, c).clear() for c in ("case1", "case2")])
    edit(
        "duplicate of a zero-area row",
        lambda d: _crop_plan(d, "case1").extend(
            [{**_crop_plan(d, "case1")[0], "area_mu": exact.loads("0")}] * 2
        ),
    )
    edit(
        "zero areas",
        lambda d: [
            r.__setitem__("area_mu", exact.loads("0.0")) for r in _crop_plan(d, "case2")[::3]
        ],
    )
    edit("row not an object", lambda d: _crop_plan(d, "case1").insert(5, ["2024", "A1"]))
    edit("row null", lambda d: _crop_plan(d, "case2").append(None))
    edit(
        "area NaN",
        lambda d: _crop_plan(d, "case1")[4].__setitem__("area_mu", exact.NonFinite("NaN")),
    )
    edit("plot null", lambda d: _crop_plan(d, "case1")[2].__setitem__("plot", None))
    edit("season as a list", lambda d: _crop_plan(d, "case2")[1].__setitem__("season", ["first"]))
    edit(
        "year 2023 (the data's)",
        lambda d: _crop_plan(d, "case1")[0].__setitem__("year", exact.loads("2023")),
    )
    edit("plan not a list", lambda d: d["q1"]["case1"].__setitem__("plan", {"rows": []}))
    edit(
        "over the row cap",
        lambda d: d["q1"]["case1"].__setitem__(
            "plan",
            _crop_plan(d, "case1")
            * (
                1
                + C.max_rows(
                    C.load_data(task.data_dir / "attachments"),
                    C.Rules.from_params(task.replay_spec.params),
                )
                // len(_crop_plan(d, "case1"))
            ),
        ),
    )
    edit(
        "same plot, every crop (scatter, one crop per irrigated second)",
        lambda d: _crop_plan(d, "case2").extend(
            {
                "year": exact.loads("2025"),
                "plot": p,
                "season": "second",
                "crop": c,
                "area_mu": exact.loads("0.3"),
            }
            for p in ("D1", "D2", "D3", "D4", "D5", "D6", "D7", "D8")
            for c in map(str, range(17, 25))
        ),
    )
    return out


def test_crop_edge_cases_match_v1(crop: Task) -> None:
    refused = []
    for name, d in _crop_edge_cases(crop).items():
        got = _same(CR.replay, C.replay, crop, d)
        if got[0] == "refused":
            refused.append(name)
    # the edits did bite: each of these is refused (with the reference's own reason)
    for name in ("row not an object", "row null", "area NaN", "plot null", "over the row cap"):
        assert name in refused, name
    assert "empty plan" not in refused


_CROP_EDITS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "drop",
                "dup",
                "area",
                "crop",
                "plot",
                "season",
                "year",
                "zero",
                "many_decimals",
                "exponent",
                "swap",
            ]
        ),
        st.integers(min_value=0, max_value=10**6),
        st.integers(min_value=0, max_value=10**6),
    ),
    min_size=1,
    max_size=12,
)


def _mutate_crop(
    task: Task, base: dict[str, Any], edits: list[tuple[str, int, int]]
) -> dict[str, Any]:
    data = C.load_data(task.data_dir / "attachments")
    plots, crops = list(data.plots), list(data.crops)
    d = copy.deepcopy(base)
    for kind, a, b in edits:
        plan = _crop_plan(d, "case1" if a % 2 else "case2")
        if not plan:
            continue
        i = a % len(plan)
        row = plan[i]
        if kind == "drop":
            del plan[i]
        elif kind == "dup":
            plan.append(copy.deepcopy(row))
        elif kind == "area":
            row["area_mu"] = exact.loads(f"{b % 400 / 10}")
        elif kind == "crop":
            row["crop"] = crops[b % len(crops)]
        elif kind == "plot":
            row["plot"] = plots[b % len(plots)]
        elif kind == "season":
            row["season"] = ("first", "second")[b % 2]
        elif kind == "year":
            row["year"] = exact.loads(str(2024 + b % 7))
        elif kind == "zero":
            row["area_mu"] = exact.loads("0")
        elif kind == "many_decimals":
            row["area_mu"] = exact.loads("0." + "7" * (8 + b % 30))
        elif kind == "exponent":
            row["area_mu"] = exact.loads(f"{1 + b % 9}e-1")
        elif kind == "swap":
            j = b % len(plan)
            plan[i], plan[j] = plan[j], plan[i]
    return d


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edits=_CROP_EDITS)
def test_crop_mutated_anchors_match_v1(crop: Task, edits: list[tuple[str, int, int]]) -> None:
    _same(CR.replay, C.replay, crop, _mutate_crop(crop, _anchor(crop), edits))


# --- multibeam lines -------------------------------------------------------------------------


def _lines_doc(lines: list[Any]) -> dict[str, Any]:
    return _text_doc({"q4": {"lines": lines}})


def _seg(x0: Any, y0: Any, x1: Any, y1: Any) -> dict[str, Any]:
    return dict(zip(M.KEYS, (x0, y0, x1, y1), strict=True))


def _beam_edge_cases() -> dict[str, dict[str, Any]]:
    base = [_seg(0.5, 0.2, 0.5, 4.8), _seg(1.0, 0.2, 1.0, 4.8), _seg(1.5, 0.2, 1.5, 4.8)]
    cases: dict[str, Any] = {
        "three parallel lines": base,
        "touching end to end": [_seg(1, 1, 2, 1), _seg(2, 1, 3, 1)],
        "overlapping collinear": [_seg(1, 1, 3, 1), _seg(2, 1, 3.5, 1)],
        "exact repeat and reversed repeat": [_seg(1, 1, 2, 3)] * 3 + [_seg(2, 3, 1, 1)],
        "zero-length among others": base + [_seg(2, 2, 2, 2), _seg(2.5, 2, 2.5, 2)],
        "only a zero-length segment": [_seg(2, 2, 2, 2)],
        "zero length written two ways": [_seg("1.5", 2, "1.50", 2), _seg(1, 1, 1, 2)],
        "endpoints on the area's bounds": [
            _seg(0, 0, 4, 5),
            _seg(0, 5, 4, 0),
            _seg(0, 2.5, 4, 2.5),
        ],
        "partly outside": [_seg(-1, 1, 5, 1), _seg(2, -3, 2, 9)],
        "wholly outside": [_seg(10, 10, 11, 11), _seg(1, 1, 1, 2)],
        "outside by a hair": [_seg("4.0000000000000000001", 1, 3, 1), _seg(1, 1, 1, 2)],
        "shorter than 1e-9 inside": [_seg(1, 1, "1.0000000001", 1), _seg(2, 1, 2, 2)],
        "at the coordinate limit": [_seg(100, 1, 1, 1)],
        "beyond the coordinate limit": [_seg("100.0000000001", 1, 1, 1)],
        "crossing X": [_seg(0.5, 0.5, 3.5, 4.5), _seg(0.5, 4.5, 3.5, 0.5)],
        "NaN": [_seg(1, 1, 2, 2), {**_seg(1, 1, 2, 2), "x_end_nmi": "NaN"}],
        "entry not an object": [_seg(1, 1, 2, 2), [1, 1, 2, 2]],
        "missing key": [_seg(1, 1, 2, 2), {"x_start_nmi": 1, "y_start_nmi": 1, "x_end_nmi": 2}],
        "number as text": [_seg(1, 1, 2, "2")],
        "empty list": [],
    }
    out = {k: _lines_doc(v) for k, v in cases.items()}
    out["NaN"] = exact.loads(json.dumps({"q4": {"lines": cases["NaN"]}}).replace('"NaN"', "NaN"))
    return out


def test_multibeam_edge_cases_match_v1(beam: Task) -> None:
    refused = []
    for name, d in _beam_edge_cases().items():
        got = _same(MR.replay, M.replay, beam, d)
        if got[0] == "refused":
            refused.append(name)
    for name in ("NaN", "entry not an object", "missing key", "number as text", "empty list"):
        assert name in refused, name
    assert "beyond the coordinate limit" in refused and "at the coordinate limit" not in refused


def test_multibeam_over_caps_refused_with_the_same_reason(beam: Task) -> None:
    p = M.Params.from_spec(beam.replay_spec.params)
    too_many = _lines_doc([_seg(1, 1, 1, 1.001)] * (p.max_lines + 1))
    too_long = _lines_doc([_seg(0, 0, 4, 5)] * int(p.max_total_length_nmi // 6 + 2))
    for d in (too_many, too_long):
        got = _same(MR.replay, M.replay, beam, d)
        assert got[0] == "refused"


_BEAM_EDITS = st.lists(
    st.tuples(
        st.sampled_from(
            ["jitter", "bound", "outside", "zero", "dup", "reverse", "drop", "text"]
            + ["tilt", "near", "cross", "fan"]
        ),
        st.integers(min_value=0, max_value=10**6),
        st.integers(min_value=0, max_value=10**6),
    ),
    min_size=1,
    max_size=8,
)


def _mutate_beam(
    base: dict[str, Any], keep: int, edits: list[tuple[str, int, int]]
) -> dict[str, Any]:
    """A slice of the anchor's lines (a replay stays cheap) with edits, rebuilt from text."""
    lines = [{k: e[k].text for k in M.KEYS} for e in base["q4"]["lines"]]
    start = keep % max(1, len(lines) - 60)
    lines = lines[start : start + 60]
    for kind, a, b in edits:
        i = a % len(lines)
        e = lines[i]
        k = M.KEYS[b % 4]
        if kind == "jitter":
            e[k] = repr(float(e[k]) + (b % 2001 - 1000) * 1e-6)
        elif kind == "bound":
            e[k] = (
                ("0", "4", "5", "0.0")[b % 4]
                if k.startswith("x")
                else ("0", "5", "0.00", "5")[b % 4]
            )
        elif kind == "outside":
            e[k] = ("-0.5", "4.25", "5.5", "-1e-12")[b % 4]
        elif kind == "zero":
            e["x_end_nmi"], e["y_end_nmi"] = e["x_start_nmi"], e["y_start_nmi"]
        elif kind == "dup":
            lines.append(dict(e))
        elif kind == "reverse":
            e["x_start_nmi"], e["x_end_nmi"] = e["x_end_nmi"], e["x_start_nmi"]
            e["y_start_nmi"], e["y_end_nmi"] = e["y_end_nmi"], e["y_start_nmi"]
        elif kind == "drop" and len(lines) > 1:
            del lines[i]
        elif kind == "text":
            e[k] = f"{float(e[k]):.6e}"
        elif kind == "tilt":  # the end moved across the neighbours: crossing lines
            e[k] = repr(min(4.0, max(0.0, float(e[k]) + (b % 601 - 300) * 1e-3)))
        elif kind == "near":  # a copy 1e-5 to 1e-2 nmi aside: the nearest neighbour changes
            d = 10.0 ** -(2 + b % 4)
            lines.append({**e, "x_start_nmi": repr(float(e["x_start_nmi"]) + d)})
        elif kind == "cross":  # a line across the slice
            xs = [float(x[j]) for x in lines for j in ("x_start_nmi", "x_end_nmi")]
            ys = [float(x[j]) for x in lines for j in ("y_start_nmi", "y_end_nmi")]
            lines.append(
                dict(zip(M.KEYS, map(repr, (min(xs), min(ys), max(xs), max(ys))), strict=True))
            )
        elif kind == "fan":  # lines through one point within a few degrees
            x0, y0 = float(e["x_start_nmi"]), float(e["y_start_nmi"])
            for j in range(5):
                a = 0.3 + (b % 7) * 0.1 + j * 0.02
                x1 = min(4.0, x0 + 0.5 * math.cos(a))
                y1 = min(5.0, y0 + 0.5 * math.sin(a))
                lines.append(dict(zip(M.KEYS, map(repr, (x0, y0, x1, y1)), strict=True)))
    body = ",".join("{" + ",".join(f'"{k}": {v}' for k, v in e.items()) + "}" for e in lines)
    return exact.loads('{"q4": {"lines": [' + body + "]}}")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keep=st.integers(min_value=0, max_value=10**6), edits=_BEAM_EDITS)
def test_multibeam_mutated_anchors_match_v1(
    beam: Task, keep: int, edits: list[tuple[str, int, int]]
) -> None:
    _same(MR.replay, M.replay, beam, _mutate_beam(_anchor(beam), keep, edits))


def test_multibeam_coverage_fill_matches_v1_on_random_designs(beam: Task) -> None:
    """The coverage grid cell for cell (the filled sure parts and the exact tests) on
    random short segments, long diagonals and near-parallel pairs."""
    import numpy as np

    g = M.load_grid(beam.data_dir)
    p = M.Params.from_spec(beam.replay_spec.params)
    rng = np.random.default_rng(25)
    for trial in range(4):
        n = 40
        a = rng.uniform([0, 0], [4, 5], (n, 2))
        ang = rng.uniform(0, np.pi, n) if trial % 2 else np.full(n, rng.uniform(0, np.pi))
        ln = rng.uniform(0.05, 2.0, n)
        b = np.clip(a + ln[:, None] * np.stack([np.cos(ang), np.sin(ang)], axis=1), 0, [4, 5])
        geo = np.concatenate([a, b], axis=1)
        geo = geo[np.hypot(*(geo[:, 2:] - geo[:, :2]).T) > 1e-6]
        sw = M.build_swaths(g, geo, list(range(len(geo))), p)
        got = M.coverage(g, sw, p, CpuBudget(60))
        assert np.array_equal(got, MR.coverage(g, sw, p, CpuBudget(60))), trial
