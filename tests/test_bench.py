"""`tbmm bench` runs to the end: every replayed task's benchmark returns (one round each)."""

from __future__ import annotations

from tbmm.bench import bench_mixed, bench_replays
from tbmm.tasks import Task


def test_every_replay_benchmark_returns(suite: list[Task]) -> None:
    replayed = [t for t in suite if t.replay_spec is not None]
    results = bench_replays(replayed, seconds=0.0)
    missing = {t.slug for t in replayed} - {r.task for r in results}
    # a replay without a benchmark is allowed only when its module has none (named here)
    import tbmm.bench as B

    for slug in missing:
        t = next(t for t in replayed if t.slug == slug)
        assert not hasattr(B, f"bench_replay_{t.replay_spec.module}"), slug
    assert all(r.count >= 1 and r.seconds >= 0 for r in results)


def test_mixed_corpus_rows(suite: list[Task]) -> None:
    rows = bench_mixed(suite, seconds=0.0)
    assert [r.name for r in rows] == ["json.loads", "scoring", "gate"]
    assert all(r.count > 0 for r in rows)
