"""The reference judgement rule of CUMCM 2025 C Problem 4 (reference.json's q4.rules).

A logistic regression of "abnormal" (AB column non-empty) on every feature the replay lists
(tbmm.replay.nipt_judgement, replay.toml [params]), fitted by Newton's method (IRLS) on the
standardised features with a small ridge (1e-3, for the collinear height/weight/BMI), and cut
at the linear-predictor threshold that maximises the in-sample F1 of the abnormal class. The
rule is written back in the columns' own units with every coefficient rounded to 6
significant digits; its F1 and balanced accuracy are then the replay's exact values of that
rounded rule (not the floating fit's).

Run from the repository root:  uv run python tasks/CUMCM/cumcm-2025-c-nipt/reference/fit_rule.py
It prints the rule as JSON (the q4.rules of reference.json) and writes reference/fit.json.
"""

from __future__ import annotations

import json
import sys
import tomllib
from fractions import Fraction
from pathlib import Path

import numpy as np

TASK = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TASK.parents[2] / "py"))

from tbmm.core import exact  # noqa: E402
from tbmm.replay import CpuBudget  # noqa: E402
from tbmm.replay import nipt_judgement as nj  # noqa: E402

RIDGE = 1e-3
ITERATIONS = 50
SIGNIFICANT = 6


def _text(x: float) -> str:
    return f"{x:.{SIGNIFICANT}g}" if x else "0"


def fit() -> dict:
    spec = tomllib.loads((TASK / "replay.toml").read_text(encoding="utf-8"))
    p = nj.Params.model_validate(spec["params"])
    s = nj.load_samples(TASK / "environment" / "data", p)
    tags = p.tags()
    x = np.array([[float(Fraction(v, s.denominators[t])) for v in s.numerators[t]] for t in tags]).T
    y = np.array([1.0 if a else 0.0 for a in s.abnormal])
    mu, sd = x.mean(0), x.std(0)
    z = np.hstack([np.ones((len(y), 1)), (x - mu) / sd])
    w = np.zeros(z.shape[1])
    for _ in range(ITERATIONS):
        prob = 1 / (1 + np.exp(-z @ w))
        h = z.T @ (z * (prob * (1 - prob))[:, None]) + RIDGE * np.eye(len(w))
        w += np.linalg.solve(h, z.T @ (y - prob) - RIDGE * w)
    score = z @ w

    def f1_at(t: float) -> float:
        pred = score >= t
        tp = float(np.sum(pred & (y == 1)))
        return 2 * tp / (float(np.sum(pred)) + float(np.sum(y)))

    cuts = np.unique(score)
    best = max(cuts, key=lambda t: (f1_at(t), -t))
    # midway to the next lower score, so rounding cannot move the cut onto a sample
    lower = cuts[cuts < best]
    cut = (best + lower.max()) / 2 if len(lower) else best - 1.0
    coefs = w[1:] / sd
    intercept = w[0] - float(np.sum(w[1:] * mu / sd)) - cut
    terms = [
        {"feature": t, "coef": exact.Num(None, _text(c), False)}
        for t, c in zip(tags, coefs, strict=True)
    ]
    rule = [{"intercept": exact.Num(None, _text(intercept), False), "terms": terms}]
    doc = exact.loads(exact.dumps({"q4": {"rules": rule}}))

    class _Task:  # the replay needs only the task's folders
        dir = TASK
        data_dir = TASK / "environment" / "data"

    class _Spec:
        params = spec["params"]

    out = nj.replay(doc, _Task, _Spec, CpuBudget(60.0))
    return {
        "method": __doc__.split("\n\n")[1].replace("\n", " "),
        "ridge": RIDGE,
        "iterations": ITERATIONS,
        "float_fit_in_sample_f1": round(f1_at(best), 6),
        "rules": json.loads(exact.dumps(rule)),
        "replayed": {k: exact.fraction_to_text(Fraction(v)) for k, v in out.values.items()},
    }


if __name__ == "__main__":
    result = fit()
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    (TASK / "reference" / "fit.json").write_text(text, encoding="utf-8")
    print(json.dumps(result["rules"], indent=2))
    print(json.dumps(result["replayed"], indent=2), file=sys.stderr)
