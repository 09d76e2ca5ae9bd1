"""tbmm.replay.cache: a cached replay is the fresh one to the byte, never crosses task data,
and no artifact can poison another's entry."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.core.bounds import BudgetExceeded
from tbmm.replay import CpuBudget, load_module, run_replay
from tbmm.replay import cache as C
from tbmm.suite.tasks import Task, find_task, load_suite, load_task
from tbmm.verdict.scoring import read_artifact

CHEAP = "cumcm-2024-b-production-decision"  # a replay reading a table under reference/


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> C.ReplayCache:
    monkeypatch.setenv("TBMM_REPLAY_CACHE", "memory")
    C.CACHE.clear()
    yield C.CACHE
    C.CACHE.clear()


def _doc(task: Task, text: str | None = None) -> dict[str, Any]:
    return read_artifact(text if text is not None else task.anchor_artifact_bytes(), task.caps)


def _typed(node: Any) -> Any:
    """The tree with every number as (text, is_int_literal, value): dumps shows texts only."""
    if isinstance(node, dict):
        return {k: _typed(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_typed(v) for v in node]
    if isinstance(node, exact.Num):
        return ("num", node.text, node.is_int_literal, node.value)
    return node


def _result(task: Task, doc: dict[str, Any]) -> tuple[Any, ...]:
    resolved, rep = run_replay(task, doc)
    assert rep is not None
    return exact.dumps(resolved), _typed(resolved), rep.to_json(), rep.cached


@pytest.mark.slow
def test_cached_replays_are_the_fresh_ones_to_the_byte(
    memory: C.ReplayCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every replayed task's anchor and an unusable artifact: fresh (cache off), first (a
    miss, stored) and second (a hit) results are the same text, types and report."""
    tasks = [t for t in load_suite() if t.replay_spec is not None]
    assert tasks
    for t in tasks:
        for doc in (_doc(t), {"replayed": {"x": 1}}):
            monkeypatch.setenv("TBMM_REPLAY_CACHE", "off")
            fresh = _result(t, doc)
            monkeypatch.setenv("TBMM_REPLAY_CACHE", "memory")
            first = _result(t, doc)
            second = _result(t, doc)
            assert (fresh[3], first[3], second[3]) == (False, False, True), t.slug
            assert fresh[:3] == first[:3] == second[:3], t.slug


def test_a_hit_cannot_be_altered_by_its_caller(memory: C.ReplayCache) -> None:
    task = find_task(CHEAP)
    resolved, rep = run_replay(task, _doc(task))
    want = exact.dumps(resolved)
    resolved["replayed"].clear()
    rep.values.clear()
    rep.details.clear()
    resolved2, rep2 = run_replay(task, _doc(task))
    assert rep2.cached and exact.dumps(resolved2) == want and rep2.values


def _copy(task: Task, tmp_path: Path) -> Path:
    dst = tmp_path / task.dir.name
    shutil.copytree(task.dir, dst)
    return dst


def test_task_data_is_in_the_key(memory: C.ReplayCache, tmp_path: Path) -> None:
    """An identical copy of the task shares the entries (content-addressed); a copy with one
    replay param edited, or with a data table edited, misses."""
    task = find_task(CHEAP)
    run_replay(task, _doc(task))
    same = load_task(_copy(task, tmp_path / "same"))
    assert run_replay(same, _doc(same))[1].cached

    edited = _copy(task, tmp_path / "param")
    toml = (edited / "replay.toml").read_text(encoding="utf-8")
    assert "decimals = 9" in toml
    (edited / "replay.toml").write_text(toml.replace("decimals = 9", "decimals = 8"), "utf-8")
    t2 = load_task(edited)
    _, rep = run_replay(t2, _doc(t2))
    assert not rep.cached

    table = _copy(task, tmp_path / "table")
    path = table / task.replay_spec.params["tables"]
    path.write_text(path.read_text(encoding="utf-8") + "\n", "utf-8")  # same tables, new bytes
    t3 = load_task(table)
    assert not run_replay(t3, _doc(t3))[1].cached


def test_a_spec_replaced_in_memory_misses(memory: C.ReplayCache) -> None:
    task = find_task(CHEAP)
    run_replay(task, _doc(task))
    other = find_task(CHEAP)
    spec = other.replay_spec.model_copy(update={"digits": other.replay_spec.digits - 1})
    other.__dict__["replay_spec"] = spec
    assert other.replay_spec is spec, "replay_spec is not a cached attribute any more"
    _, rep = run_replay(other, _doc(other))
    assert not rep.cached


def test_no_two_different_inputs_share_a_key(memory: C.ReplayCache) -> None:
    """Artifacts a dumps-based key would confuse (null vs NaN, 1 vs 1.0 vs "1", key order,
    nesting) have distinct keys; only the reserved `replayed` key is not the replay's input."""
    task = find_task(CHEAP)
    spec = task.replay_spec
    load_module(spec.module)
    texts = [
        '{"a": null}',
        '{"a": NaN}',
        '{"a": 1}',
        '{"a": 1.0}',
        '{"a": "1"}',
        '{"a": true}',
        '{"a": [1]}',
        '{"a": {"1": 1}}',
        '{"a": 1, "b": 2}',
        '{"b": 2, "a": 1}',
        '{"a": "1\\"}"}',
        '{"a\\"": "1"}',
        "{}",
    ]
    keys = [C.key(task, spec, exact.loads(t)) for t in texts]
    assert None not in keys and len(set(keys)) == len(keys)
    # a caller's float or Fraction in the tree has no literal text: not cached at all
    assert C.key(task, spec, {"a": 1.5}) is None


def test_the_reserved_key_changes_only_the_note(memory: C.ReplayCache) -> None:
    task = find_task(CHEAP)
    doc = _doc(task)
    doc.pop("replayed", None)
    _, plain = run_replay(task, doc)
    assert not plain.cached and not any("top-level `replayed`" in n for n in plain.notes)
    doc["replayed"] = {"anything": 1}
    _, marked = run_replay(task, doc)
    assert marked.cached and marked.values == plain.values
    assert marked.notes[0].startswith("the artifact's own top-level `replayed` key was ignored")
    assert marked.notes[1:] == plain.notes


@pytest.mark.slow
def test_budgets_decide_as_without_the_cache(memory: C.ReplayCache) -> None:
    """A replay stopped by its budget is not stored; a stored replay that took more CPU than
    the caller's budget allows is not a hit: the replay runs (and stops) as it would have."""
    task = find_task("cumcm-2023-a-heliostat-field")
    with pytest.raises(BudgetExceeded):
        run_replay(task, _doc(task), CpuBudget(0.0))
    assert len(memory) == 0
    _, rep = run_replay(task, _doc(task), CpuBudget(600))
    assert rep.status == "ok" and len(memory) == 1
    with pytest.raises(BudgetExceeded):
        run_replay(task, _doc(task), CpuBudget(0.0))
    assert run_replay(task, _doc(task))[1].cached  # within the spec's own budget: a hit


def test_a_synthetic_module_is_never_cached(memory: C.ReplayCache) -> None:
    """A replay module that is not a file of the package has no code digest."""
    import sys
    import types

    task = find_task(CHEAP)
    fake = task.replay_spec.model_copy(update={"module": "cache_probe"})
    mod = types.ModuleType("tbmm.replay.cache_probe")
    sys.modules["tbmm.replay.cache_probe"] = mod
    try:
        assert C.key(task, fake, {}) is None
    finally:
        del sys.modules["tbmm.replay.cache_probe"]


def test_the_lru_is_bounded_in_entries_and_bytes() -> None:
    c = C.ReplayCache(max_entries=3, max_bytes=4000)
    for i in range(5):
        c.put(f"k{i}", "x" * 10)
    assert len(c) == 3 and c.get("k0") is None and c.get("k4") == "x" * 10
    c.get("k2")  # now the most recent: k3 goes first
    c.put("k5", "y" * 10)
    assert c.get("k3") is None and c.get("k2") is not None
    c.put("big", "z" * 900)
    c.put("big2", "z" * 900)
    c.put("big3", "z" * 900)
    assert c.nbytes <= 4000 and c.get("k2") is None
    c.put("huge", "z" * 1500)  # more than a quarter of the bytes: not kept
    assert c.get("huge") is None and c.nbytes <= 4000


def test_the_disk_cache_survives_the_process_and_refuses_torn_files(
    memory: C.ReplayCache, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TBMM_REPLAY_CACHE", "disk")
    monkeypatch.setenv("TBMM_CACHE_DIR", str(tmp_path))
    task = find_task(CHEAP)
    fresh = _result(task, _doc(task))
    files = list((tmp_path / "replays").glob("*.json"))
    assert len(files) == 1
    memory.clear()  # a new process: only the disk has it
    again = _result(task, _doc(task))
    assert again[3] and again[:3] == fresh[:3]
    memory.clear()
    files[0].write_text('{"key": "another", "entry": "{}"}', "utf-8")
    torn = _result(task, _doc(task))
    assert not torn[3] and torn[:3] == fresh[:3]


def test_verify_shares_the_cache(memory: C.ReplayCache) -> None:
    """`tbmm.verify` (the path of verify, serve and rescore) replays once per decisions."""
    from tbmm.verdict.pipeline import evaluate

    task = find_task(CHEAP)
    a = evaluate(task, _doc(task))
    b = evaluate(task, _doc(task))
    assert not a.replay.cached and b.replay.cached
    assert a.score == b.score and a.gate.verdict == b.gate.verdict


def test_benchmarks_bypass_the_cache(memory: C.ReplayCache) -> None:
    from tbmm.tooling.bench import bench_replays

    bench_replays([find_task(CHEAP)], seconds=0.0)
    assert (memory.hits, memory.misses, len(memory)) == (0, 0, 0)


def test_the_code_is_in_the_key(memory: C.ReplayCache, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another version of the package (or of numpy, Python) never reads this one's entries."""
    task = find_task(CHEAP)
    load_module(task.replay_spec.module)
    doc = {"a": exact.loads("1")}
    before = C.key(task, task.replay_spec, doc)
    monkeypatch.setattr(C, "_CODE", b"another version")
    assert C.key(task, task.replay_spec, doc) != before


def test_the_disk_cache_is_placed_like_the_compiled_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TBMM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert C.disk_dir() == tmp_path / "tbmm" / "replays"
    monkeypatch.setenv("TBMM_CACHE_DIR", str(tmp_path / "own"))
    assert C.disk_dir() == tmp_path / "own" / "replays"
    for value, want in (("off", "off"), ("DISK", "disk"), ("bogus", "memory")):
        monkeypatch.setenv("TBMM_REPLAY_CACHE", value)
        assert C.mode() == want
        with C.bypass():
            assert C.mode() == "off"
