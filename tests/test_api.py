"""The public Python API and the RL reward adapters (README's examples run in test_readme)."""

from __future__ import annotations

import json

import pytest

import tbmm
from tbmm import rewards
from tbmm.suite.tasks import Task


@pytest.fixture(scope="module")
def juneau() -> Task:
    return tbmm.load_task("mcm-2025-b-juneau-tourism")


@pytest.mark.slow
def test_tasks_lists_the_suite(suite: list[Task]) -> None:
    infos = tbmm.tasks()
    assert [i.slug for i in infos] == [t.slug for t in suite]
    by = {i.slug: i for i in infos}
    for t in suite:
        assert by[t.slug].metrics == [m.id for m in t.scoring.metric]
        assert by[t.slug].incomplete == t.incomplete
        assert by[t.slug].replayed == (t.replay_spec is not None)


def test_load_task_is_cached_and_names_unknown_slugs() -> None:
    assert tbmm.load_task("mcm-2025-b-juneau-tourism") is tbmm.load_task(
        "mcm-2025-b-juneau-tourism"
    )
    with pytest.raises(KeyError, match="unknown task"):
        tbmm.load_task("no-such-task")


def test_verify_anchor_text_bytes_and_dict(juneau: Task) -> None:
    text = juneau.anchor_artifact_bytes()
    for given in (text, text.decode(), json.loads(text)):
        v = tbmm.verify(juneau, given)
        assert (v.status, v.feasible, v.o_eval, v.gate) == ("scored", True, 1.0, "pass")
        assert v.score is not None and v.score.o_eval_exact == "1"


def test_verify_bad_inputs_never_raise(juneau: Task) -> None:
    assert tbmm.verify(juneau, None).status == "missing_artifact"
    v = tbmm.verify(juneau, "not json")
    assert v.status == "unreadable" and v.o_eval == 0 and "JSON" in v.error
    v = tbmm.verify(juneau, "{}")
    assert v.status == "scored" and v.o_eval == 0 and v.gate == "warn"
    v = tbmm.verify(juneau, '{"policy": {"daily_cap": 11000}}')
    assert v.o_eval == 0 and v.unverifiable  # omission never pays


def test_dict_floats_are_read_from_their_repr(juneau: Task) -> None:
    doc = json.loads(juneau.anchor_artifact_bytes())
    s = tbmm.score(juneau, doc)
    assert s.o_eval_exact == "1"
    metric = next(m for m in s.metrics if m.value is not None)
    assert "e" not in metric.value or metric.value == repr(float(metric.value))


def test_gate_and_score_and_replay(juneau: Task) -> None:
    g = tbmm.gate(juneau, juneau.anchor_artifact_bytes())
    assert g.verdict == "pass" and not g.failed and g.checks
    with pytest.raises(ValueError, match="no replay"):
        tbmm.replay(juneau, "{}")
    from tbmm.verdict.scoring import ArtifactError

    with pytest.raises(ArtifactError):
        tbmm.score(juneau, "[1, 2]")


@pytest.mark.parametrize(
    ("completion", "method", "text"),
    [
        ('{"a": 1.10}', "whole", '{"a": 1.10}'),
        (
            'Answer:\n```json\n{"a": 1}\n```\nand finally\n```json\n{"a": 2}\n```',
            "fenced",
            '{"a": 2}',
        ),
        ('```\n{"a": 3}\n```', "fenced", '{"a": 3}'),
        ('I think {"a": {"b": "}"}} is it, not {oops}', "object", '{"a": {"b": "}"}}'),
        ('```json\n{bad json}\n```\nso: {"a": 5}', "object", '{"a": 5}'),
    ],
)
def test_extract_artifact(completion: str, method: str, text: str) -> None:
    ex = tbmm.extract_artifact(completion)
    assert ex.found and ex.method == method and ex.text == text


@pytest.mark.parametrize(
    ("completion", "why"),
    [
        ("no json here", "contains no JSON object"),
        ("```json\n{nope}\n```", "none holds a valid JSON object"),
        ("[1, 2, 3] {unbalanced", "parses as a JSON object"),
    ],
)
def test_extract_artifact_says_why_not(completion: str, why: str) -> None:
    ex = tbmm.extract_artifact(completion)
    assert not ex.found and why in ex.reason


def test_verify_completion(juneau: Task) -> None:
    good = "Final answer:\n```json\n" + juneau.anchor_artifact_bytes().decode() + "```"
    assert tbmm.verify_completion(juneau, good).o_eval == 1
    v = tbmm.verify_completion(juneau, "I could not solve it.")
    assert v.status == "unreadable" and "no answer in the completion" in v.error


def test_schemas_are_versioned() -> None:
    s = tbmm.schemas()
    assert {
        "Verdict",
        "ScoreResult",
        "GateResult",
        "ReplayResult",
        "TaskInfo",
        "Extraction",
    } <= set(s)
    assert all("schema_version" in x["properties"] for x in s.values())


# ---------------------------------------------------------------------------- rewards


def test_verl_compute_score(juneau: Task) -> None:
    good = "```json\n" + juneau.anchor_artifact_bytes().decode() + "```"
    assert rewards.compute_score("tbmm", good, juneau.slug) == 1.0
    assert rewards.compute_score(f"tbmm/{juneau.slug}", good, None) == 1.0
    assert rewards.compute_score("tbmm", "nothing", juneau.slug) == 0.0
    assert rewards.compute_score("tbmm", "nothing", juneau.slug, {"reward": "robust_bo"}) == -1.0
    with pytest.raises(ValueError, match="name the task"):
        rewards.compute_score("other", good, None)


def test_gate_failure_gets_the_floor(juneau: Task) -> None:
    doc = json.loads(juneau.anchor_artifact_bytes())
    doc["policy"]["daily_cap"] = -5  # a negative visitor cap fails the gate
    text = json.dumps(doc)
    v = tbmm.verify(juneau, text)
    assert v.status == "gate_failed"
    assert rewards.compute_score("tbmm", text, juneau.slug) == 0.0
    assert rewards.compute_score("tbmm", text, juneau.slug, {"reward": "robust_bo"}) == -1.0


def test_trl_reward(juneau: Task) -> None:
    good = juneau.anchor_artifact_bytes().decode()
    conv = [{"role": "user", "content": "solve"}, {"role": "assistant", "content": good}]
    assert rewards.trl_reward(["p", "p"], [good, conv], task=[juneau.slug, juneau.slug]) == [
        1.0,
        1.0,
    ]
    with pytest.raises(ValueError, match="task"):
        rewards.trl_reward(["p"], [good])
    with pytest.raises(ValueError, match="2 completions but 1"):
        rewards.trl_reward(None, [good, good], task=[juneau.slug])


def test_openrlhf_reward(juneau: Task) -> None:
    good = juneau.anchor_artifact_bytes().decode()
    out = rewards.openrlhf_reward(
        {"query": ["Q:" + good, "Q:nothing"], "prompts": ["Q:", "Q:"], "labels": [juneau.slug] * 2}
    )
    assert out["rewards"] == [1.0, 0.0] and out["extra_logs"]["status"] == ["scored", "unreadable"]
    with pytest.raises(ValueError, match="labels"):
        rewards.openrlhf_reward({"query": ["x"]})


def test_verify_without_a_lean_runtime_says_unavailable(
    juneau: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tbmm.lean import certify, runtime

    def missing(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise runtime.ToolchainError("no Lean toolchain (test)")

    monkeypatch.setattr(certify, "check_artifact", missing)
    v = tbmm.verify(juneau, juneau.anchor_artifact_bytes(), lean=True)
    assert v.lean == "unavailable" and v.o_eval == 1 and "no Lean toolchain" in v.error


@pytest.mark.slow
def test_verify_many_checks_a_batch_in_one_lean_run(
    juneau: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mixed batch (feasible, gate-breaking, no answer, unreadable): one Lean run for all,
    each verdict the one `verify` gives alone, in order."""
    from tbmm.lean import certify

    good = juneau.anchor_artifact_bytes().decode()
    doc = json.loads(good)
    doc["policy"]["daily_cap"] = -5  # outside the statement's range: the gate fails
    bad = json.dumps(doc)
    runs: list[int] = []
    real = certify.check_batch

    def counting(entries, *a, **k):  # noqa: ANN001, ANN002, ANN003, ANN202
        runs.append(len(entries))
        return real(entries, *a, **k)

    monkeypatch.setattr(certify, "check_batch", counting)
    items = [(juneau, good), (juneau, bad), (juneau, "not json"), (juneau, good)]
    many = tbmm.verify_many(items, lean=True)
    assert runs == [3]  # the unreadable one never reaches Lean
    alone = [tbmm.verify(t, a, lean=True) for t, a in items]
    assert [(v.status, v.o_eval_exact, v.gate, v.lean) for v in many] == [
        (v.status, v.o_eval_exact, v.gate, v.lean) for v in alone
    ]
    assert [v.lean for v in many] == ["ok", "fail", "skipped", "ok"]
    comps = tbmm.verify_many(
        [(juneau, "```json\n" + good + "\n```"), (juneau, "no answer here")],
        lean=True,
        completions=True,
    )
    assert [v.status for v in comps] == ["scored", "unreadable"]
    assert comps[0].lean == "ok" and "no answer in the completion" in comps[1].error
