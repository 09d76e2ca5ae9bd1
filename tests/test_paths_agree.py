"""One input, one verdict, whichever way it comes in.

The same corpus — every task's anchor, its generated adversarial artifacts, mutants of the
anchor (numbers scaled, made NaN or over-long) and inputs over each cap of tbmm.core.bounds
(bytes, digits, depth, a referenced list, an unreferenced list) — goes through the command
line (`tbmm verify --manifest --json`), the Python API (`tbmm.verify`, given the text and,
for objects, the parsed exact tree), `tbmm serve` (each artifact once as JSON text and once
as an object inside the request) and the Harbor verifier entry (every input refused
before Lean, and a sample with the Lean kernel). Their verdicts must agree on everything
that decides a score — status, feasibility, gate, exact O-Eval and Robust BO-Eval — and
on the reason of a refusal. (Before, an object artifact holding a 10^6-digit number was
scored by serve and refused by the CLI.)
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tbmm.core import exact
from tbmm.core.exact import Num
from tbmm.suite.tasks import Task
from tbmm.verdict import exploits

pytestmark = pytest.mark.slow

HEAVY = {"cumcm-2023-a-heliostat-field"}  # ~2 s of CPU per replay: its anchor only
MUTANTS_PER_TASK = 40
SERVE_CHUNK = 100


def _leaves(doc: Any, path: tuple = ()) -> list[tuple]:
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in _leaves(v, (*path, k))]
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _leaves(v, (*path, i))]
    return [path] if isinstance(doc, Num) else []


def _set(doc: Any, path: tuple, value: Any) -> Any:
    out = json.loads(exact.dumps(doc))  # a plain copy; numbers re-read below
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def _mutants(task: Task, rng: random.Random) -> list[str]:
    anchor = exact.loads(task.anchor_artifact_bytes())
    leaves = _leaves(anchor)
    out = []
    for _ in range(MUTANTS_PER_TASK if leaves else 0):
        path = rng.choice(leaves)
        kind = rng.choice(["scale", "scale", "negate", "nan", "huge", "string"])
        if kind in ("scale", "negate"):
            node = anchor
            for k in path:
                node = node[k]
            q = node.value * (rng.choice([-1, 1]) if kind == "negate" else 1)
            q = q * rng.choice([0, 1, 2, 10]) / rng.choice([1, 3, 7])
            text = exact.fraction_to_text(round(q, 6) if q.denominator > 10**6 else q)
            if "/" in text:
                text = str(float(q))
            mutated = _set(anchor, path, "__X__")
            out.append(json.dumps(mutated).replace('"__X__"', text))
        elif kind == "nan":
            out.append(json.dumps(_set(anchor, path, "__X__")).replace('"__X__"', "NaN"))
        elif kind == "huge":
            big = "9" * rng.choice([41, 5000, 20_000])
            out.append(json.dumps(_set(anchor, path, "__X__")).replace('"__X__"', big))
        else:
            out.append(json.dumps(_set(anchor, path, "seven")))
    return out


def _over_caps(task: Task) -> list[str]:
    deep = "[" * 40 + "1" + "]" * 40
    anchor = task.anchor_artifact_bytes().decode().strip()
    room = task.caps.max_bytes - len(anchor.encode())
    out = [
        '{"q": {"x": 1' + "0" * 20_000 + "}}",  # past the exponent limit: NonFinite
        '{"deep": ' + deep + "}",
        '{"pad": [' + ",".join(["1"] * 100_001) + "]}",  # one over the unreferenced cap
        "[1, 2, 3]",
        '{"broken": ',
        "",
        "null",
        '{"lone": "' + chr(0xD800) + '"}',  # a lone surrogate: not UTF-8 in a file
        # over the byte cap by one byte and by a lot: the anchor with an extra key
        anchor[:-1] + ', "pad": "' + "x" * (room - 10) + '"}',
        anchor[:-1] + ', "pad": [' + "1," * (task.caps.max_bytes // 2) + "1]}",
    ]
    out += _at_caps(task, anchor) + _mixed(task, anchor)
    doc = json.loads(anchor)
    for path, cap in task.caps.per_path.items():  # a referenced list one over its cap
        if "[*]" in path:
            continue
        node, keys = doc, path.split(".")
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), list) and node[keys[-1]]:
            lst = node[keys[-1]]
            node[keys[-1]] = (lst * (cap + 1))[: cap + 1]
            out.append(json.dumps(doc))
            node[keys[-1]] = lst
    return out


def _with(anchor: str, key: str, value: str) -> str:
    """The anchor with one more (unreferenced) key, written as raw JSON text."""
    return anchor[:-1].rstrip() + f', "{key}": {value}}}'


def _deep(depth: int) -> str:
    """A value whose containers nest `depth` deep, alternating lists and objects."""
    return (
        "".join("[" if k % 2 else '{"d": ' for k in range(depth))
        + "1"
        + "".join("]" if k % 2 else "}" for k in reversed(range(depth)))
    )


def _at_caps(task: Task, anchor: str) -> list[str]:
    """Each cap of the task at its limit and one past it: digits (plain, exponent,
    negative), depth (the anchor's root counts), an unreferenced list, the bytes; at
    the limit is accepted and verified in full (skipped for the heavy replays, whose
    over-cap side is kept)."""
    c = task.caps
    out: list[str] = []
    for n in (c.max_digits, c.max_digits + 1):
        out.append(_with(anchor, "pad_n", "1." + "1" * (n - 2)))
        out.append(_with(anchor, "pad_e", "-" + "2" * (n - 4) + "e-9"))
    out.append(_with(anchor, "pad_d", _deep(c.max_depth)))  # one past (the root is 1)
    out.append(_with(anchor, "pad_l", "[" + ",".join(["0"] * (c.max_list_unreferenced + 1)) + "]"))
    room = c.max_bytes - len(_with(anchor, "pad", '""').encode())
    out.append(_with(anchor, "pad", '"' + "y" * (room + 1) + '"'))  # one byte over
    if task.slug not in HEAVY:  # at each limit: accepted, and a verdict on every path
        out.append(_with(anchor, "pad_d", _deep(c.max_depth - 1)))
        out.append(_with(anchor, "pad_l", "[" + ",".join(["0"] * c.max_list_unreferenced) + "]"))
        out.append(_with(anchor, "pad", '"' + "y" * room + '"'))
    return out


def _mixed(task: Task, anchor: str) -> list[str]:
    """Several caps passed in one artifact, and a cap next to a syntax error: the first in
    the text decides the reason, on every path."""
    c = task.caps
    long = "7" * (c.max_digits + 1)
    deep = _deep(c.max_depth)
    many = "[" + ",".join(["0"] * (c.max_list_unreferenced + 1)) + "]"
    return [
        _with(anchor, "a", long)[:-1] + f', "b": {deep}}}',
        _with(anchor, "a", deep)[:-1] + f', "b": {long}}}',
        _with(anchor, "a", many)[:-1] + f', "b": {long}}}',
        _with(anchor, "a", many)[:-1] + ', "b": [1,]}',  # the list first, then not JSON
        _with(anchor, "a", "[1,]")[:-1] + f', "b": {many}}}',  # not JSON first
        _with(anchor, "a", many)[:-1] + ', "a": 1}',  # replaced by a duplicate key: still sent
        '{"pad": "' + "z" * c.max_bytes + '", "d": ' + deep + "}",  # the bytes before all
    ]


def corpus(suite: list[Task]) -> list[tuple[Task, str]]:
    rng = random.Random(20261201)
    items: list[tuple[Task, str]] = []
    for t in suite:
        items.append((t, t.anchor_artifact_bytes().decode()))
        items += [(t, x) for x in _over_caps(t)]
        if t.slug in HEAVY:
            continue
        items += [(t, exact.dumps(d, indent=None)) for _, _, d in exploits.attempts(t)]
        items += [(t, x) for x in _mutants(t, rng)]
    return items


def core_of_report(r: dict[str, Any]) -> tuple:
    status = "unreadable" if r["status"] == "over_caps" else r["status"]
    return (
        status,
        r["exit_code"] == 0,
        r["gate"],
        r["o_eval_exact"],
        r["robust_bo_eval_exact"],
        r["error"],
    )


def core_of_verdict(v: dict[str, Any]) -> tuple:
    return (
        v["status"],
        v["feasible"],
        v["gate"],
        v["o_eval_exact"],
        v["robust_bo_exact"],
        v["error"],
    )


_SIZE = re.compile(r"^artifact is \d+ bytes")


def _sizeless(core: tuple) -> tuple:
    """A verdict core without the byte count of a size refusal: an object re-serialised by
    the Python API has other whitespace than the text it was parsed from."""
    return (*core[:-1], _SIZE.sub("artifact is N bytes", core[-1]))


def _duplicate_keys(text: str) -> bool:
    seen = False

    def pairs(kv: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal seen
        seen = seen or len({k for k, _ in kv}) < len(kv)
        return dict(kv)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    return seen


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate as the bytes it stands for


def test_cli_api_serve_and_harbor_give_the_same_verdicts(suite: list[Task], tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    import tbmm
    from tbmm.integrations.harbor.reward import verify_for_harbor
    from tbmm.integrations.serve import create_app

    items = corpus(suite)
    assert len(items) >= 1000, len(items)
    over = [k for k, (t, text) in enumerate(items) if len(_utf8(text)) > t.caps.max_bytes]
    assert len(over) >= 2 * len(suite)  # the byte cap is in the corpus, for every task

    api = [core_of_verdict(tbmm.verify(t, text, lean=False).model_dump()) for t, text in items]
    statuses = {c[0] for c in api}
    assert {"scored", "gate_failed", "unreadable"} <= statuses, statuses
    reasons = " ".join(c[-1] for c in api)
    for cap in (
        "bytes, over the cap",
        "characters, over the cap",
        "nested deeper",
        "entries, over the cap",
    ):
        assert cap in reasons, cap  # each cap of tbmm.core.bounds is hit by some input

    # the Python API given the parsed exact tree of every text that is a JSON object (a
    # text with a duplicate key is not: its tree lost the replaced value the text carried)
    api_object: dict[int, tuple] = {}
    for k, (t, text) in enumerate(items):
        try:
            doc = exact.loads(_utf8(text))
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and not _duplicate_keys(text):
            api_object[k] = core_of_verdict(tbmm.verify(t, doc, lean=False).model_dump())

    # the command line: one process, every file named in a manifest
    manifest = {}
    for k, (t, text) in enumerate(items):
        (tmp_path / f"a{k}.json").write_bytes(_utf8(text))
        manifest[f"a{k}.json"] = t.slug
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tbmm.cli.entry import main; main()",
            "verify",
            "--manifest",
            str(tmp_path / "manifest.json"),
            "--json",
            "--no-lean",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr[-2000:]
    cli = [core_of_report(r) for r in json.loads(proc.stdout)]
    for k, c in enumerate(cli):  # a refusal of the command line names the file first
        prefix = f"{tmp_path / f'a{k}.json'}: "
        if c[-1].startswith(prefix):
            cli[k] = (*c[:-1], c[-1].removeprefix(prefix))

    # serve: each artifact as JSON text, and (when it looks like an object) as the object
    client = TestClient(create_app())
    as_text, as_object = [], {}
    for i in range(0, len(items), SERVE_CHUNK):
        chunk = items[i : i + SERVE_CHUNK]
        body = {"items": [{"task": t.slug, "artifact": text} for t, text in chunk]}
        r = client.post("/v1/verify", content=json.dumps(body))
        assert r.status_code == 200, r.text[:500]
        as_text += [core_of_verdict(v) for v in r.json()["verdicts"]]
        objs = []
        for k, (t, text) in enumerate(chunk):
            stripped = text.strip()
            if stripped.startswith("{") and stripped.endswith("}"):
                objs.append((i + k, f'{{"task": {json.dumps(t.slug)}, "artifact": {stripped}}}'))
        r = client.post(
            "/v1/verify", content=_utf8('{"items": [' + ",".join(o for _, o in objs) + "]}")
        )
        if r.status_code == 400:  # a chunk holding an unbalanced object: each alone
            for k, o in objs:
                one = client.post("/v1/verify", content=_utf8('{"items": [' + o + "]}"))
                if one.status_code == 200:
                    as_object[k] = core_of_verdict(one.json()["verdicts"][0])
            continue
        assert r.status_code == 200, r.text[:500]
        for (k, _), v in zip(objs, r.json()["verdicts"], strict=True):
            as_object[k] = core_of_verdict(v)

    differ = [
        (items[k][0].slug, items[k][1][:80], api[k], cli[k], as_text[k], as_object.get(k))
        for k in range(len(items))
        if not (api[k] == cli[k] == as_text[k] and as_object.get(k, api[k]) == api[k])
    ]
    assert not differ, differ[:5]
    assert len(as_object) >= 900, len(as_object)  # most inputs went in as objects too
    assert all(k in as_object for k in over)  # over the byte cap, as objects too
    # a parsed object has no byte size of its own: the API measures its compact
    # serialisation, which an indented text over the cap by a few bytes fits under
    differ = [
        (items[k][0].slug, items[k][1][:80], api[k], v)
        for k, v in api_object.items()
        if k not in over and _sizeless(v) != _sizeless(api[k])
    ]
    assert not differ, differ[:5]
    assert len(api_object) >= 900, len(api_object)

    # the Harbor verifier entry: every input refused before Lean (unreadable or over a
    # cap), and a sample of small claims-only tasks with the Lean kernel
    refused = [k for k in range(len(items)) if api[k][0] == "unreadable"]
    assert len(refused) >= len(over)
    rng = random.Random(7)
    sample = [
        k for k, (t, text) in enumerate(items) if t.replay_spec is None and len(text) < 20_000
    ]
    for k in refused + rng.sample(sample, 12):
        t, text = items[k]
        path = tmp_path / f"a{k}.json"
        res = verify_for_harbor(t.slug, path)
        assert res["report"] is not None, res["error"]
        assert core_of_report(res["report"]) == api[k], (t.slug, text[:80])
