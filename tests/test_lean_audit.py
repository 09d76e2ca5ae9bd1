"""The Lean audit: `#print axioms` over core and obligations, and the forbidden-source scan."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tbmm.lean.audit import (
    CORE_MARKER,
    Obligation,
    audit,
    print_axioms,
    scan_sources,
    scan_text,
)
from tbmm.lean.build import build, copy_project, project_root
from tbmm.lean.serialize import module, rat, theorem

REPO = project_root(Path(__file__).resolve().parent)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    build(root).raise_for_failure()
    return root


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Path:
    """A copy without the committed task certificates: these tests audit synthetic ones."""
    root = copy_project(tmp_path / "p", built)
    shutil.rmtree(root / "TBMM" / "Cert", ignore_errors=True)
    return root


def write_cert(
    root: Path, name: str, body: list[str], sidecar: list[dict[str, str]] | None
) -> Path:
    cert = root / "TBMM" / "Cert" / f"{name}.lean"
    cert.parent.mkdir(exist_ok=True)
    cert.write_text(module(body))
    if sidecar is not None:
        cert.with_suffix(".json").write_text(json.dumps(sidecar))
    return cert


def ob(decl: str, form: str, task: str = "cumcm-2099-a-synthetic") -> dict[str, str]:
    return {"decl": decl, "task": task, "form": form, "check": decl, "field": "q.x"}


def test_repository_sources_are_clean() -> None:
    assert scan_sources(REPO) == []


def test_core_has_no_axioms(project: Path) -> None:
    res = audit(project)
    assert res.ok, (res.errors, res.findings)
    assert {
        "Forms.interval",
        "Forms.product",
        "Reward.reward",
        "Reward.multiBoCell",
        "Nat.mod",
    } <= set(res.axioms)
    assert all(a == [] for a in res.axioms.values())
    doc = res.to_json()
    assert set(doc) >= {"ok", "obligations", "tasks", "forms", "axioms"}
    assert doc["ok"] is True and doc["obligations"] == 0


def test_certificate_obligations_are_audited(project: Path) -> None:
    write_cert(
        project,
        "Synthetic",
        [
            theorem(
                "syn_height",
                f"Forms.interval {rat(3)} (Option.some {rat(2)}) (Option.some {rat(6)})",
            ),
            theorem("syn_rated", f"Forms.threshold {rat(61)} Cmp.ge {rat(60)}"),
        ],
        [ob("syn_height", "interval"), ob("syn_rated", "threshold")],
    )
    res = audit(project)
    assert res.ok, (res.errors, res.findings)
    doc = res.to_json()
    assert doc["obligations"] == 2
    assert doc["tasks"] == {"cumcm-2099-a-synthetic": 2}
    assert doc["forms"] == {"interval": 1, "threshold": 1}
    assert doc["axioms"]["syn_height"] == [] and doc["axioms"]["syn_rated"] == []
    assert "TBMM.Cert.Synthetic" in res.modules


def test_sorry_is_rejected_twice(project: Path) -> None:
    # Without Init there is no `sorryAx`, so a `sorry` cannot even build; the scan names it too.
    write_cert(
        project,
        "Cheat",
        ["theorem cheat : Eq Bool.true Bool.false := sorry\n"],
        [ob("cheat", "order")],
    )
    res = audit(project)
    assert not res.ok
    assert [f.token for f in res.findings] == ["sorry"]
    assert any("build failed" in e and "cheat" in e for e in res.errors)


def test_new_axiom_is_rejected_twice(project: Path) -> None:
    body = [
        "axiom trustMe : Eq (Forms.threshold (Rat.frac 59 1) Cmp.ge (Rat.frac 60 1)) Bool.true\n",
        "theorem power : Eq (Forms.threshold (Rat.frac 59 1) Cmp.ge (Rat.frac 60 1)) Bool.true := trustMe\n",
    ]
    write_cert(project, "Axiom", body, [ob("power", "threshold")])
    res = audit(project)
    assert not res.ok
    assert any(f.token == "axiom" for f in res.findings)
    assert res.axioms["power"] == ["trustMe"]


def test_native_decide_is_rejected(project: Path) -> None:
    write_cert(
        project,
        "Native",
        ["theorem t : Eq Bool.true Bool.true := by native_decide\n"],
        [ob("t", "count")],
    )
    res = audit(project)
    assert not res.ok
    assert any(f.token == "native_decide" for f in res.findings)


@pytest.mark.parametrize(
    ("src", "token"),
    [
        ("theorem t : Eq Bool.true Bool.true := sorry", "sorry"),
        ("theorem t : Eq Bool.true Bool.true := by native_decide", "native_decide"),
        ("theorem t : Eq Bool.true Bool.true := Lean.ofReduceBool _ _ rfl", "ofReduceBool"),
        ("@[implemented_by f] def g : Nat := 0", "implemented_by"),
        ("axiom a : Eq Bool.true Bool.false", "axiom"),
        (CORE_MARKER, "axiom"),
        ("set_option debug.skipKernelTC true in\ntheorem t : Eq 1 2 := rfl", "debug.skipKernelTC"),
    ],
)
def test_scan_flags(src: str, token: str) -> None:
    found = scan_text(src, "X.lean")
    assert token in [f.token for f in found]


def test_scan_ignores_comments_and_allows_the_core_marker() -> None:
    assert (
        scan_text("/-- no `sorry` here, no axiom -/\n-- native_decide\ndef x : Nat := 0", "X.lean")
        == []
    )
    assert scan_text(CORE_MARKER, "TBMM/Core.lean", allow_marker=True) == []
    assert scan_text(CORE_MARKER + "\n" + CORE_MARKER, "TBMM/Core.lean", allow_marker=True) != []
    assert scan_text("set_option maxRecDepth 100000 in\ntheorem t : Eq 1 1 := rfl", "X.lean") == []


def test_sidecar_must_name_theorems(project: Path) -> None:
    write_cert(
        project,
        "Named",
        [theorem("real_one", f"Forms.count {rat(7)} Option.none")],
        [ob("real_one", "count"), ob("missing_one", "count"), ob("Rat.add", "count")],
    )
    res = audit(project)
    assert not res.ok
    assert any("missing_one is not declared" in e for e in res.errors)
    assert any("Rat.add is not declared" in e for e in res.errors)


def test_print_axioms_rejects_odd_names(project: Path) -> None:
    axioms, errors = print_axioms(project, ["Forms.count", "x\n#eval 1", "nope.nothing"], ["TBMM"])
    assert axioms == {"Forms.count": []}
    assert any("not a plain declaration name" in e for e in errors)
    assert any(e.startswith("nope.nothing") or "nope.nothing" in e for e in errors)


def test_explicit_obligations(project: Path) -> None:
    res = audit(project, obligations=[Obligation("Forms.count", task="t", form="count")])
    # A core definition is not a certificate theorem: the module check does not apply.
    assert res.ok, res.errors
    assert res.to_json()["forms"] == {"count": 1}
