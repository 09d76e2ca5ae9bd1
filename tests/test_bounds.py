"""Bounded verification input: every cap rejects the artifact just over it (and accepts the
one at it), before any heavy work, with a one-line reason; the CLI exits 2; the time budget
is its own outcome; a UTF-8 BOM is accepted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tbmm.core import bounds
from tbmm.core.bounds import DEFAULT_CAPS, BoundsError, Caps
from tbmm.suite.tasks import Task
from tbmm.verdict.scoring import ArtifactError, read_artifact
from tbmm.verify import verify_artifact

C = DEFAULT_CAPS
TBMM = str(Path(sys.executable).with_name("tbmm"))  # the installed console script


def nested(depth: int) -> str:
    """An artifact whose containers nest `depth` deep (the root object counts as 1)."""
    return '{"a": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def over_each_cap() -> dict[str, str]:
    """The smallest artifact over each default cap (what the attacker would try)."""
    return {
        "bytes": '{"a": "' + "x" * C.max_bytes + '"}',
        "depth": nested(C.max_depth + 1),
        "digits": '{"a": 1.' + "1" * (C.max_digits - 1) + "}",
        "list": json.dumps({"a": list(range(C.max_list + 1))}),
        "total": json.dumps(
            {f"l{i}": [0] * C.max_list for i in range(C.max_list_total // C.max_list + 1)}
        ),
        "nested lists": json.dumps({"a": [[0] * 8 for _ in range(C.max_list_total // 8)]}),
        "very deep": '{"a": ' + "[" * 200_000 + "]" * 200_000 + "}",
    }


@pytest.mark.parametrize("cap", list(over_each_cap()))
def test_just_over_a_cap_is_rejected_with_a_reason(cap: str) -> None:
    text = over_each_cap()[cap]
    with pytest.raises(BoundsError) as info:
        bounds.check(text.encode())
    msg = str(info.value)
    assert "\n" not in msg and "cap" in msg, msg
    with pytest.raises(ArtifactError) as info2:  # the parser entry point refuses it too
        read_artifact(text)
    assert isinstance(info2.value.__cause__, BoundsError)


def test_at_the_caps_is_accepted() -> None:
    at = [
        nested(C.max_depth),
        '{"a": 1.' + "1" * (C.max_digits - 2) + "}",
        json.dumps({"a": list(range(C.max_list))}),
        json.dumps({f"l{i}": [0] * C.max_list for i in range(C.max_list_total // C.max_list)}),
        '{"a": "' + "x" * (C.max_bytes - 9) + '"}',
    ]
    for text in at:
        bounds.check(text)
        assert isinstance(read_artifact(text), dict)


def test_per_path_caps_override_the_generic_one() -> None:
    caps = Caps(per_path={"q5.uavs": 5, "q5.uavs[*].drops": 3})
    ok = {"q5": {"uavs": [{"drops": [1, 2, 3]}] * 5}}
    bounds.check(json.dumps(ok), caps)
    too_many_uavs = {"q5": {"uavs": [{"drops": [1]}] * 6}}
    with pytest.raises(BoundsError, match=r"list q5\.uavs has 6 entries, over the cap of 5"):
        bounds.check(json.dumps(too_many_uavs), caps)
    too_many_drops = {"q5": {"uavs": [{"drops": [1, 2, 3, 4]}]}}
    with pytest.raises(BoundsError, match=r"q5\.uavs\[\*\]\.drops has 4 entries"):
        bounds.check(json.dumps(too_many_drops), caps)
    # a larger per-path cap lets a statement's own maximum through the generic cap
    lenient = Caps(per_path={"days": 365}, max_list_total=400)
    bounds.check(json.dumps({"days": list(range(100))}), lenient)
    with pytest.raises(BoundsError, match="list days has 100 entries, over the cap of 32"):
        bounds.check(json.dumps({"days": list(range(100))}))


def test_not_json_is_left_to_the_parser_and_numbers_stay_cheap() -> None:
    bounds.check(b"{not json")  # the parser reports it, with its own reason
    with pytest.raises(ArtifactError, match="not valid JSON"):
        read_artifact(b"{not json")
    # huge exponents are short literals: bounds passes them, exact.py refuses the value
    doc = read_artifact('{"a": 1e999999999}')
    assert type(doc["a"]).__name__ == "NonFinite"


def test_utf8_bom_is_accepted(suite: list[Task]) -> None:
    t = min(suite, key=lambda t: len(t.anchor_artifact_bytes()))  # any task; a cheap verify
    plain = t.anchor_artifact_bytes()
    with_bom = bounds.UTF8_BOM + plain
    assert read_artifact(with_bom, t.caps) == read_artifact(plain, t.caps)
    assert read_artifact("\ufeff" + plain.decode(), t.caps) == read_artifact(plain, t.caps)
    a, b = verify_artifact(t, plain, lean=False), verify_artifact(t, with_bom, lean=False)
    assert (a.status, a.o_eval_exact) == (b.status, b.o_eval_exact) and b.readable


def _referenced_list(suite: list[Task]) -> tuple[Task, str]:
    """A task and one list its gate, fields or metrics reach into (verification expands it)."""
    for t in suite:
        for path in sorted(t.caps.referenced or ()):
            if "[*]" not in path:
                return t, path
    raise AssertionError("no task refers to a list")


def _over(t: Task, path: str) -> str:
    from tbmm.core import exact
    from tbmm.core.paths import set_path

    doc: dict = {}
    set_path(doc, path, [exact.Num(None, "0", True)] * (t.caps.list_cap(path) + 1))
    return exact.dumps(doc)


def test_verify_over_caps_is_its_own_status(suite: list[Task]) -> None:
    t, path = _referenced_list(suite)
    rep = verify_artifact(t, _over(t, path).encode(), lean=False)
    assert (rep.status, rep.exit_code, rep.readable) == ("over_caps", 2, False)
    assert f"list {path} has" in rep.error and "over the cap of" in rep.error
    assert rep.o_eval == 0.0


def test_an_unreferenced_extra_table_is_not_a_reason_to_refuse(suite: list[Task]) -> None:
    """Lists nothing verifies are only parsed: an honest answer may carry a long table."""
    t = min(suite, key=lambda t: len(t.anchor_artifact_bytes()))  # any task; a cheap verify
    doc = json.loads(t.anchor_artifact_bytes())
    doc["supporting_table"] = [[i, i * 0.5] for i in range(2000)]
    rep = verify_artifact(t, json.dumps(doc).encode(), lean=False)
    assert rep.readable and rep.status == "scored" and rep.o_eval == 1.0
    doc["supporting_table"] = list(range(Caps().max_list_unreferenced + 1))
    rep = verify_artifact(t, json.dumps(doc).encode(), lean=False)
    assert rep.status == "over_caps"


def test_task_caps_derive_from_the_declared_lists(suite: list[Task]) -> None:
    for t in suite:
        for ls in t.artifact_map.lists:
            assert t.caps.list_cap(ls.path) == ls.max_items
            assert ls.path in (t.caps.referenced or ())


def test_budget_exceeded_is_not_infeasible(suite: list[Task]) -> None:
    t = next(t for t in suite if t.replay_spec is None)  # a replay would run out first
    rep = verify_artifact(t, t.anchor_artifact_bytes(), lean=False, budget_s=0.0)
    assert (rep.status, rep.exit_code) == ("budget_exceeded", 3)
    assert rep.error.startswith("verification CPU budget of 0 s exceeded (after the gate")
    assert rep.o_eval == 0.0 and rep.gate == "skipped"
    # with time to spare the same artifact verifies normally
    assert verify_artifact(t, t.anchor_artifact_bytes(), lean=False).status != "budget_exceeded"


def test_budget_is_seen_by_code_deep_below_and_only_inside() -> None:
    def deep() -> None:
        bounds.check_budget("deep loop")

    deep()  # no budget: nothing to exceed
    assert bounds.remaining_budget() is None
    with bounds.cpu_budget(0.0), pytest.raises(bounds.BudgetExceeded, match="deep loop"):
        deep()
    with bounds.cpu_budget(100.0) as d:
        deep()
        assert 0 < d.remaining() <= 100


@pytest.mark.slow
def test_the_budget_counts_cpu_not_waiting() -> None:
    """Sleeping (what a loaded machine does to a verification) costs no budget; burning
    CPU does; work run `uncharged` (a replay's task data) costs nothing."""
    import time

    with bounds.cpu_budget(0.05) as d:
        time.sleep(0.2)  # four times the budget in wall-clock time
        bounds.check_budget("after waiting")  # nothing spent
        with bounds.uncharged():
            t0 = time.thread_time()
            while time.thread_time() - t0 < 0.1:  # twice the budget in CPU, uncharged
                pass
        bounds.check_budget("after uncharged work")
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.1:  # twice the budget in CPU, charged
            pass
        with pytest.raises(bounds.BudgetExceeded, match="CPU budget of 0.05 s"):
            bounds.check_budget("after charged work")
        assert d.spent >= 0.1
    assert bounds.remaining_budget() is None


@pytest.mark.slow
def test_cli_rejects_each_cap_with_exit_2(suite: list[Task], tmp_path: Path) -> None:
    """Real subprocesses: `tbmm score/gate/verify/replay` on an artifact over each cap."""
    t, path = _referenced_list(suite)
    cases = over_each_cap()
    cases["total"] = _over(t, path)  # an over-cap list the task's verification would expand
    # generic lists nothing refers to are only parsed (test_an_unreferenced_extra_table_...)
    del cases["list"], cases["nested lists"]
    huge = tmp_path / "huge.json"  # 50 GB, sparse: only a reader that stops at the cap returns
    with open(huge, "wb") as fh:
        fh.truncate(50 * 1024**3)
    files = {"sparse 50 GB": huge}
    for name, text in cases.items():
        files[name] = tmp_path / f"{name.replace(' ', '_')}.json"
        files[name].write_text(text)
    runs = [("score", name) for name in files]  # every cap through one command...
    runs += [(cmd, name) for cmd in ("gate", "verify") for name in ("sparse 50 GB", "total")]
    replayed = next((x for x in suite if x.replay_spec is not None), None)
    if replayed is not None:
        runs += [("replay", "sparse 50 GB")]
        # the structure cap only where the replayed task's verification expands a list
        if any("[*]" not in p for p in replayed.caps.referenced or ()):
            runs += [("replay", "total")]
    for cmd, name in runs:  # ...and the byte and structure caps through the other commands
        slug = replayed.slug if cmd == "replay" and replayed is not None else t.slug
        if cmd == "replay" and name == "total" and replayed is not None:
            rt, rpath = _referenced_list([replayed])
            files[name].write_text(_over(rt, rpath))
        proc = subprocess.run(
            [TBMM, cmd, str(files[name]), "--task", slug],
            capture_output=True,
            text=True,
            timeout=120,  # a guard against reading 50 GB, not a timing assertion
        )
        assert proc.returncode == 2, (cmd, name, proc.stderr)
        err = " ".join(proc.stderr.split())
        assert "over the cap" in err or "deeper than the cap" in err, (cmd, name, err)


def test_rows_of_leaves_count_toward_the_depth() -> None:
    """The walk settles an entry whose values are all leaves without stacking it (the fast
    path of long lists of rows): such an entry one level over the cap, in a list or in an
    object, is still refused, and at the cap accepted."""

    def in_lists(depth: int) -> str:  # the root, depth - 2 lists, the row
        return '{"a": ' + "[" * (depth - 2) + '{"x": 1, "y": "z"}' + "]" * (depth - 2) + "}"

    def in_objects(depth: int) -> str:  # depth - 1 objects, then a row in a list
        return '{"a": ' * (depth - 2) + '[{"x": 1}, {}]' + "}" * (depth - 2)

    for make in (in_lists, in_objects):
        bounds.check(make(C.max_depth))
        assert isinstance(read_artifact(make(C.max_depth)), dict)
        with pytest.raises(BoundsError, match="nested deeper"):
            bounds.check(make(C.max_depth + 1))
        with pytest.raises(ArtifactError):
            read_artifact(make(C.max_depth + 1))


def test_tables_of_leaf_rows_are_checked_whole_yet_the_same() -> None:
    """A list of flat rows is checked in one C pass; the depth cap and a nested row still
    count as they do row by row."""
    rows = '[{"a": 1, "b": "x"}, {"a": 2, "b": null}]'
    caps = bounds.Caps(max_depth=3)
    bounds.parse_exact('{"t": ' + rows + "}", caps)  # depth 3: within the cap
    with pytest.raises(bounds.BoundsError, match="nested deeper than the cap of 2"):
        bounds.parse_exact('{"t": ' + rows + "}", bounds.Caps(max_depth=2))
    nested = '{"t": [{"a": 1}, {"a": [[[1]]]}]}'
    with pytest.raises(bounds.BoundsError, match=r"nested deeper than the cap of 3 \(at t\[\*\]"):
        bounds.parse_exact(nested, caps)
    with pytest.raises(bounds.BoundsError, match="over the cap of 1"):
        bounds.parse_exact('{"t": [{"a": 1}, {"a": [1, 2]}]}', bounds.Caps(max_list=1))
