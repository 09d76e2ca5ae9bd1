"""The Lean audit: core soundness, forbidden-source scan, certificate allowlist, fidelity, axioms.

These audit synthetic projects (a copy of the library with no task certificates, or with
the certificate of the synthetic task of `conftest.py`); `test_lean_fidelity.py` attacks
the committed certificates of the real suite.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tbmm.core.lean_syntax import module, rat, theorem
from tbmm.lean.allowlist import check_certificate, check_term, library_names
from tbmm.lean.audit import (
    ACCELERATED,
    CORE_MARKER,
    THEOREMS_MODULE,
    Obligation,
    audit,
    print_axioms,
    scan_sources,
    scan_text,
)
from tbmm.lean.build import build, copy_project, project_root
from tbmm.lean.certify import render, write_anchor_certificates
from tbmm.suite.tasks import Task

REPO = project_root(Path(__file__).resolve().parent)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    build(root, certs=False).raise_for_failure()
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


@pytest.mark.slow
def test_repository_sources_are_clean() -> None:
    assert scan_sources(REPO) == []


@pytest.mark.slow
def test_core_has_no_axioms(project: Path) -> None:
    res = audit(project, tasks=[])
    assert res.ok, (res.errors, res.findings, res.stale)
    assert {
        "Forms.interval",
        "Forms.product",
        "Reward.reward",
        "Reward.multiBoCell",
        *ACCELERATED,
    } <= set(res.axioms)
    assert all(a == [] for a in res.axioms.values())
    doc = res.to_json()
    assert set(doc) >= {"ok", "obligations", "tasks", "forms", "axioms", "theorems", "fidelity"}
    assert doc["ok"] is True and doc["obligations"] == 0


@pytest.mark.slow
def test_synthetic_certificate_is_audited(project: Path, syn: Task) -> None:
    (cert,) = write_anchor_certificates([syn], project)
    res = audit(project, tasks=[syn])
    assert res.ok, (res.errors, res.findings, res.stale)
    doc = res.to_json()
    # the task's O and F, and the verdict over every check (none flags the anchor)
    assert doc["obligations"] == len(cert.stated) == 3
    assert doc["kinds"] == {"task": 2, "verdict": 1}
    assert doc["tasks"] == {syn.slug: len(cert.stated)}
    assert doc["fidelity"] == {"certificates": 1, "stale": []}
    assert all(doc["axioms"][o["decl"]] == [] for o in cert.sidecar())
    assert cert.module in res.modules


@pytest.mark.slow
def test_certificate_of_a_task_not_given_is_unexpected(project: Path, syn: Task) -> None:
    write_anchor_certificates([syn], project)
    res = audit(project, tasks=[])
    assert not res.ok
    assert any("is not generated from any task" in s for s in res.stale)


@pytest.mark.slow
def test_sorry_is_rejected_three_times(project: Path) -> None:
    # Without Init there is no `sorryAx`, so a `sorry` cannot even build; the scan names it
    # and the allowlist refuses any proof but `rfl`.
    write_cert(
        project,
        "Cheat",
        ["theorem cheat : Eq Bool.true Bool.false := sorry\n"],
        [ob("cheat", "order")],
    )
    res = audit(project, tasks=[])
    assert not res.ok
    assert "sorry" in [f.token for f in res.findings]
    assert any("header" in f.reason for f in res.findings)  # the allowlist: no frame
    assert any("build failed" in e and "cheat" in e for e in res.errors)


@pytest.mark.slow
def test_new_axiom_is_rejected(project: Path) -> None:
    body = [
        "axiom trustMe : Eq (Forms.threshold (Rat.frac 59 1) Cmp.ge (Rat.frac 60 1)) Bool.true\n",
        "theorem power : Eq (Forms.threshold (Rat.frac 59 1) Cmp.ge (Rat.frac 60 1)) Bool.true := trustMe\n",
    ]
    write_cert(project, "Axiom", body, [ob("power", "threshold")])
    res = audit(project, tasks=[])
    assert not res.ok
    assert any(f.token == "axiom" for f in res.findings)
    assert res.axioms["power"] == ["trustMe"]


@pytest.mark.slow
def test_native_decide_is_rejected(project: Path) -> None:
    write_cert(
        project,
        "Native",
        ["theorem t : Eq Bool.true Bool.true := by native_decide\n"],
        [ob("t", "count")],
    )
    res = audit(project, tasks=[])
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


@pytest.mark.slow
def test_sidecar_must_name_theorems(project: Path) -> None:
    write_cert(
        project,
        "Named",
        [theorem("real_one", f"Forms.count {rat(7)} Option.none")],
        [ob("real_one", "count"), ob("missing_one", "count"), ob("Rat.add", "count")],
    )
    res = audit(project, tasks=[])
    assert not res.ok
    assert any("missing_one is not declared" in e for e in res.errors)
    assert any("Rat.add is not declared" in e for e in res.errors)


@pytest.mark.slow
def test_print_axioms_rejects_odd_names(project: Path) -> None:
    axioms, errors = print_axioms(project, ["Forms.count", "x\n#eval 1", "nope.nothing"], ["TBMM"])
    assert axioms == {"Forms.count": []}
    assert any("not a plain declaration name" in e for e in errors)
    assert any(e.startswith("nope.nothing") or "nope.nothing" in e for e in errors)


@pytest.mark.slow
def test_explicit_obligations(project: Path) -> None:
    res = audit(project, tasks=[], obligations=[Obligation("Forms.count", task="t", form="count")])
    # A core definition is not a certificate theorem: the module check does not apply.
    assert res.ok, res.errors
    assert res.to_json()["forms"] == {"count": 1}


# --- the core and the layout ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Nat.gcd", "Nat.log2"])
def test_core_must_claim_every_accelerated_name(project: Path, name: str) -> None:
    core = project / "TBMM" / "Core.lean"
    short = name.removeprefix("Nat.")
    text = re.sub(rf"\bNat\.{short}\b", f"Nat.{short}Unclaimed", core.read_text())
    core.write_text(text)
    res = audit(project, tasks=[])
    assert not res.ok
    assert any(f"does not define {name}" in e for e in res.errors), res.errors


@pytest.mark.slow
def test_library_names_shadowing_a_certificate_name_are_rejected(project: Path) -> None:
    forms = project / "TBMM" / "Forms.lean"
    forms.write_text(
        forms.read_text()
        + "\nnamespace TBMM\nnoncomputable def Rat.frac (n d : Nat) : Rat := Rat.zero\nend TBMM\n"
    )
    res = audit(project, tasks=[])
    assert not res.ok
    assert any("TBMM.Rat.frac" in e and "shadows" in e for e in res.errors), res.errors


@pytest.mark.slow
def test_stray_module_is_rejected(project: Path) -> None:
    (project / "TBMM" / "Extra.lean").write_text("prelude\nimport TBMM.Core\n")
    res = audit(project, tasks=[])
    assert not res.ok
    assert any("TBMM.Extra is not imported" in e for e in res.errors), res.errors


@pytest.mark.slow
def test_theorems_module_is_listed_apart(project: Path) -> None:
    res = audit(project, tasks=[])
    assert res.ok, (res.errors, res.findings)
    doc = res.to_json()
    names = [t["name"] for t in doc["theorems"]]
    assert len(names) >= 5 and doc["theorems_ok"] is True
    assert all(t["audited"] and t["axioms"] == [] for t in doc["theorems"])
    assert not set(names) & {o.decl for o in res.obligations}  # apart from the obligations
    assert THEOREMS_MODULE in res.modules


@pytest.mark.slow
def test_theorem_resting_on_an_axiom_fails_the_audit(project: Path) -> None:
    thm = project / "TBMM" / "Theorems.lean"
    thm.write_text(
        thm.read_text() + "\naxiom cheat : Eq Bool.true Bool.false\n"
        "theorem Theorems.bad : Eq Bool.true Bool.false := cheat\n"
    )
    res = audit(project, tasks=[])
    assert not res.ok
    assert res.axioms["Theorems.bad"] == ["cheat"]
    assert res.to_json()["theorems_ok"] is False
    assert any("rests on an axiom" in e for e in res.errors)


# --- the allowlist, line by line ------------------------------------------------------


@pytest.fixture
def syn_cert(syn: Task) -> tuple[str, str, list[str]]:
    cert = render(syn, syn.anchor_artifact, checks="all")  # a lemma per check, to edit
    return cert.text, cert.module, [o.name for o in cert.stated]


def test_generated_certificate_is_allowed(syn_cert: tuple[str, str, list]) -> None:
    text, mod, expected = syn_cert
    assert check_certificate(text, mod, library_names(REPO), expected=expected) == []


FIRST = "set_option maxRecDepth 65536 in\ntheorem "
DEF = "set_option maxRecDepth 65536 in\ndef "


def _after_namespace(text: str, extra: str) -> str:
    head, rest = text.split("\n\n", 1)
    return f"{head}\n{extra}\n\n{rest}"


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (
            lambda t: _after_namespace(
                t, "def Forms.threshold (x : Rat) (o : Cmp) (c : Rat) : Bool := Bool.true"
            ),
            "before each definition",
        ),
        (
            lambda t: _after_namespace(t, "instance : OfNat Rat 7 := OfNat.mk (Rat.frac 7 1)"),
            "before each definition",
        ),
        (lambda t: _after_namespace(t, "open Forms"), "before each definition"),
        (lambda t: _after_namespace(t, "attribute [irreducible] Rat.le"), "before each definition"),
        (lambda t: _after_namespace(t, 'notation "T" => Bool.true'), "before each definition"),
        (lambda t: _after_namespace(t, "-- a comment"), "before each definition"),
        (
            lambda t: t.replace(FIRST, "set_option maxHeartbeats 0 in\ntheorem ", 1),
            "before each definition",
        ),
        # the data definitions: fixed names, types and order, library terms only
        (
            lambda t: _after_namespace(
                t, DEF + "Forms.threshold : Task := Task.mk List.nil List.nil List.nil"
            ),
            "not a `theorem",
        ),
        (lambda t: t.replace(DEF + "task : Task", DEF + "task : Bool", 1), "not a `theorem"),
        (lambda t: t.replace(DEF + "artifact : Json", DEF + "art : Json", 1), "definitions differ"),
        (lambda t: t.replace("checkFlags task ", "checkFlags art ", 1), "not a library definition"),
        (
            lambda t: t.replace(FIRST, DEF + "extra : Json := Json.null\n\n" + FIRST, 2),
            "after the first theorem",
        ),
        (lambda t: t.replace(DEF + "task : Task", DEF + "Rat : Task", 1), "shadow"),
        (lambda t: t.replace("checkFlags task 1 ", "checkFlags task 0 ", 1), "after number"),
        (
            lambda t: re.sub(
                r"(theorem check_\w+ : Eq \()[^\n]*(\) Bool\.true := \(rfl\))",
                r"\1Bool.true\2",
                t,
                count=1,
            ),
            "must state",
        ),
        (lambda t: t.replace("(Verdict.eval task", "(Verdict.given task", 1), "must state"),
        # the verdict: over `Verdict.eval` of the module's task, with every flag, one per artifact
        (
            lambda t: re.sub(
                r"and \((Verdict\.is [^\n]*?)\) \(Verdict\.flagsAre [^\n]*\)\)", r"\1)", t, count=1
            ),
            "must state",
        ),
        (
            lambda t: t.replace("(Verdict.eval task artifact)", "(Verdict.eval task task)", 1),
            "must state",
        ),
        (lambda t: re.sub(r"theorem verdict [^\n]*\n", "", t), "0 verdicts"),
        (lambda t: t.replace(FIRST, FIRST + "_root_.", 1), "not a `theorem"),
        (lambda t: t.replace(":= (rfl)", ":= by decide", 1), "not a `theorem"),
        (lambda t: t.replace(":= (rfl)", ":= sorry", 1), "not a `theorem"),
        (lambda t: t.replace(":= (rfl)", ":= rfl", 1), "not a `theorem"),
        (lambda t: t.replace("import TBMM", "import TBMM.Core", 1), "first import"),
        (lambda t: t.replace("namespace ", "namespace Other.", 1), "namespace"),
        (lambda t: t.replace("Check.", "Check.Other.", 1), "not a library definition"),
        (lambda t: t.replace("(Rat.frac", "(fun x => x) (Rat.frac", 1), "not a library definition"),
        (lambda t: t.replace("(Rat.frac", '(Rat.frac "1"', 1), "not allowed"),
        (lambda t: t.replace(FIRST + "check_", FIRST + "Rat ", 1), "not a `theorem"),
        (lambda t: t.replace(FIRST + "check_ratio_ge_one ", FIRST + "Rat ", 1), "shadow"),
        (lambda t: t.replace("Bool.true := (rfl)", "Bool.false := (rfl)", 1), "not a `theorem"),
        (lambda t: t.replace(FIRST + "check_", FIRST + "check_x", 1), "differ"),
        (lambda t: t + "theorem extra : Eq Bool.true Bool.true := rfl\n", "close with"),
        (
            lambda t: re.sub(
                r"(end TBMM\.Cert\.\w+\n)",
                r"\1" + FIRST + "late : Eq (Bool.true) Bool.true := rfl\n",
                t,
            ),
            "close with",
        ),
    ],
)
def test_allowlist_rejects(syn_cert: tuple[str, str, list], edit, reason: str) -> None:  # noqa: ANN001
    text, mod, expected = syn_cert
    mutated = edit(text)
    assert mutated != text
    found = check_certificate(mutated, mod, library_names(REPO), expected=expected)
    assert any(reason in v.reason for v in found), [str(v) for v in found]


def test_check_term() -> None:
    allowed = frozenset({"Rat.frac", "Forms.count", "Option.none"})
    assert check_term("Forms.count (Rat.frac 7 1) Option.none", allowed) is None
    assert check_term("Forms.count (Rat.frac 7 1) Option.none)", allowed) is not None
    assert check_term("Forms.count (Rat.frac 07 1) Option.none", allowed) is not None
    assert check_term("Forms.count (Rat.frac 7 1) @Option.none", allowed) is not None
    assert check_term("Forms.count (Rat.frac 7 1) Option.none.x", allowed) is not None
