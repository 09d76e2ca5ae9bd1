"""Writes tests/data/nipt_overfit_rule.json: a judgement rule for CUMCM 2025 C Problem 4
fitted as hard as the artifact allows to the agent's rows only, the evidence that held-out
scoring is needed (tests/test_replay_nipt_judgement.py).

Greedy search: four rounds; each round tries 20,000 random unit directions over the 25
standardised features (numpy default_rng(2)) and every cut between distinct projected
values, and keeps the halfspace that most raises the in-sample F1 of the disjunction.
The rule is stored with its coefficients as decimal text, so the test replays it exactly
and never depends on this script's floating arithmetic.

    uv run python tests/data/nipt_overfit_rule.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tbmm.core import exact
from tbmm.replay import nipt_judgement as N
from tbmm.suite.tasks import find_task

SEED, DIRECTIONS, ROUNDS = 2, 20_000, 4


def main() -> None:
    task = find_task("cumcm-2025-c-nipt")
    p = N.Params.model_validate(task.replay_spec.params)  # type: ignore[union-attr]
    s = N.load_samples(task.data_dir, p)
    tags = p.tags()
    x = np.array([[v / s.denominators[f] for v in s.numerators[f]] for f in tags]).T
    mu, sd = x.mean(0), x.std(0)
    z = (x - mu) / sd
    y = np.array(s.abnormal)
    d = np.random.default_rng(SEED).standard_normal((DIRECTIONS, z.shape[1]))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    proj = z @ d.T
    cur = np.zeros(len(y), bool)
    rules = []
    for _ in range(ROUNDS):
        best: tuple[float, int, float] = (-1.0, 0, 0.0)
        for k in range(proj.shape[1]):
            v = proj[:, k]
            order = np.argsort(-v, kind="stable")
            vs, new = v[order], ~cur[order]
            tp = (y & cur).sum() + np.cumsum(y[order] & new)
            f1 = 2 * tp / (cur.sum() + np.cumsum(new) + y.sum())
            f1 = np.where(np.append(vs[:-1] > vs[1:], True), f1, -1)
            m = int(np.argmax(f1))
            if f1[m] > best[0] + 1e-12:
                best = (float(f1[m]), k, (vs[m] + vs[m + 1]) / 2 if m + 1 < len(vs) else vs[m] - 1)
        _, k, thr = best
        cur |= proj[:, k] >= thr
        coef = d[k] / sd
        rules.append(
            {
                "intercept": exact.Num(None, f"{-float(np.sum(d[k] * mu / sd)) - thr:.15g}", False),
                "terms": [
                    {"feature": f, "coef": exact.Num(None, f"{c:.15g}", False)}
                    for f, c in zip(tags, coef, strict=True)
                ],
            }
        )
    out = Path(__file__).with_suffix(".json")
    out.write_text(exact.dumps({"rules": rules}) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
