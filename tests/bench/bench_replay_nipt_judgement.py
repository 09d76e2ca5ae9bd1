"""Benchmark of the CUMCM 2025 C judgement replay (a script, not a test: timings are noisy).

    uv run python tests/bench/bench_replay_nipt_judgement.py [repeats]

Cold = the first replay in a process (parses the female sheet of 附件.xlsx into exact
rationals; cached afterwards per file version); warm = every later artifact. Largest legal
input: 4 rules x 25 terms (the declared lists' caps), every coefficient with 17 significant
digits and a 35-character intercept, so the common denominators are as large as the input
caps allow.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from tbmm.replay import nipt_judgement as nj
from tbmm.suite.tasks import find_task
from tbmm.verdict.pipeline import evaluate
from tbmm.verdict.scoring import read_artifact

SLUG = "cumcm-2025-c-nipt"


def main(repeats: int = 5) -> int:
    task = find_task(SLUG)
    ref = json.loads((task.dir / "reference.json").read_text(encoding="utf-8"))["artifact"]
    tags = nj.Params.model_validate(task.replay_spec.params).tags()  # type: ignore[union-attr]
    big = json.loads(json.dumps(ref))
    big["q4"]["rules"] = [
        {
            "intercept": -1.2345678901234567,
            "terms": [
                {"feature": f, "coef": float(f"1.2345678901234567e-{5 + i}")}
                for i, f in enumerate(tags)
            ],
        }
        for _ in range(4)
    ]
    rows = []
    for name, doc in (("reference (1 rule x 25)", ref), ("largest (4 rules x 25)", big)):
        text = json.dumps(doc)
        cold, warm = [], []
        for _ in range(repeats):
            nj._samples_cached.cache_clear()
            t0 = time.perf_counter()
            ev = evaluate(task, read_artifact(text, task.caps))
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            evaluate(task, read_artifact(text, task.caps))
            warm.append(time.perf_counter() - t0)
        assert ev.replay is not None and ev.replay.status == "ok", ev.replay
        rows.append((name, statistics.median(cold), max(cold), statistics.median(warm)))
    print(f"{'artifact':26s} {'cold median':>12s} {'cold max':>9s} {'warm median':>12s}  (s)")
    for name, cm, cx, wm in rows:
        print(f"{name:26s} {cm:12.3f} {cx:9.3f} {wm:12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
