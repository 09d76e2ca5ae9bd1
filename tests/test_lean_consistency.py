"""A consistent core (issue 21, item 1): the kernel's special names, reserved namespaces,
and a source scan that no lexical form can desynchronise.

The kernel types a string literal as the constant `String` and reduces a recursor on it
by building `String.ofList [Char.ofNat c, …]` from names, never checking the result. A
module free to declare those names proves `false = true` with no axiom; these tests keep
that attack (and the others) as data, generated in a temporary copy of the project.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tbmm.lean.audit import (
    CORE_MODULE,
    KERNEL_NAMES,
    RESERVED_NAMESPACES,
    audit,
    check_core,
    check_layout,
    core_modules,
    scan_text,
)
from tbmm.lean.build import build, check_module, copy_project, module_file, project_root
from tbmm.lean.source import blank_comments, index

REPO = project_root(Path(__file__).resolve().parent)
CORE = REPO / "TBMM" / "Core.lean"

# The attack: a module importing only the core gives `String` an empty type; the literal
# "abc" then inhabits it, and `String.rec` closes any goal.
STRING_ATTACK = """prelude
import TBMM.Core

inductive String : Prop

theorem Evil.false_eq_true : Eq Bool.false Bool.true :=
  String.rec (motive := fun _ => Eq Bool.false Bool.true) "abc"
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    shutil.rmtree(root / "TBMM" / "Cert", ignore_errors=True)
    build(root, certs=False).raise_for_failure()
    return root


@pytest.fixture
def project(built: Path, tmp_path: Path) -> Path:
    return copy_project(tmp_path / "p", built)


def _indexes(root: Path) -> dict[str, object]:
    return {m: index(module_file(root, m).read_text()) for m in core_modules(root)}


def _add_module(root: Path, name: str, text: str) -> None:
    """Add `TBMM.<name>` to the library (imported by `TBMM.lean`, so the layout allows it)."""
    (root / "TBMM" / f"{name}.lean").write_text(text)
    lib = root / "TBMM.lean"
    lib.write_text(
        lib.read_text().replace("import TBMM.Core\n", f"import TBMM.Core\nimport TBMM.{name}\n", 1)
    )


# --- the String route -----------------------------------------------------------------


@pytest.mark.slow
def test_string_attack_is_refused_by_build_and_audit(project: Path) -> None:
    """The attack module in the library: the core already declares `String`, so the build
    fails, and the audit names the redeclared kernel name."""
    _add_module(project, "Evil", STRING_ATTACK)
    res = audit(project, tasks=[])
    assert not res.ok
    assert any("redeclares the kernel name String" in e for e in res.errors), res.errors
    assert any("build failed" in e and "already been declared" in e for e in res.errors), res.errors


@pytest.mark.slow
def test_string_attack_needs_the_names_free(tmp_path: Path) -> None:
    """The attack is real: against a core without `String` (main's), the kernel accepts
    `false = true` with no axiom — so the core's declarations are what stops it."""
    root = copy_project(tmp_path / "free", REPO, with_build=False)
    shutil.rmtree(root / "TBMM" / "Cert")
    core = root / "TBMM" / "Core.lean"
    text = core.read_text()
    cut = text.index("/-- A character: a Unicode scalar value")
    core.write_text(text[:cut])
    (root / "TBMM.lean").write_text("prelude\nimport TBMM.Core\n")
    build(root, certs=False, targets=["TBMM.Core"]).raise_for_failure()
    f = tmp_path / "Attack.lean"
    f.write_text(STRING_ATTACK + "\n#print axioms Evil.false_eq_true\n")
    res = check_module(f, root)
    assert res.ok, res.failure and res.failure.summary()
    assert res.infos == ["'Evil.false_eq_true' does not depend on any axioms"]


def test_core_declares_every_kernel_name() -> None:
    idx = index(CORE.read_text())
    declared = {*idx.names(), *idx.constructors, *idx.fields}
    assert set(KERNEL_NAMES) <= declared, set(KERNEL_NAMES) - declared
    # the literal types, their expansion, and the native-evaluation hooks are all there
    assert {"String", "String.ofList", "Char", "Char.ofNat", "Lean.reduceBool"} <= set(KERNEL_NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["String", "Char.ofNat", "Lean.reduceNat", "Nat.succ"])
def test_core_must_claim_each_kernel_name(project: Path, name: str) -> None:
    core = project / "TBMM" / "Core.lean"
    short = name.rsplit(".", 1)[-1]
    if name == "Nat.succ":  # a constructor: rename it at its declaration only
        text = core.read_text().replace("  | succ (n : Nat)", "  | succFree (n : Nat)", 1)
    elif name == "String":
        text = core.read_text().replace("structure String where", "structure Text where", 1)
    else:
        text = re.sub(rf"(opaque|def) {re.escape(name)}\b", rf"\1 {name}Free", core.read_text())
    assert text != core.read_text(), short
    core.write_text(text)
    errors = check_core(project, _indexes(project))
    assert any(f"does not define {name}:" in e for e in errors), errors


@pytest.mark.slow
@pytest.mark.parametrize(
    "decl",
    [
        "noncomputable def Char.ofNat (n : Nat) : Nat := n",
        "namespace Lean\nnoncomputable def reduceBool (b : Bool) : Bool := b\nend Lean",
        "inductive Foo : Type\n  | String",  # a constructor named `Foo.String`: allowed
        "namespace String\nnoncomputable def ofList (n : Nat) : Nat := n\nend String",
        "structure Lean where\n  reduceBool : Bool",  # a projection is a declaration too
    ],
)
def test_no_other_module_declares_a_kernel_name(project: Path, decl: str) -> None:
    forms = project / "TBMM" / "Forms.lean"
    forms.write_text(forms.read_text() + "\n" + decl + "\n")
    errors = check_core(project, _indexes(project))
    kernel = [e for e in errors if "redeclares the kernel name" in e]
    if "Foo" in decl:
        assert kernel == [], kernel
    else:
        assert kernel and all(e.startswith("TBMM.Forms ") for e in kernel), errors


# --- reserved namespaces ----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("decl", "name"),
    [
        (
            "namespace TBMM.Cert.Cumcm2024BProductionDecision\nnoncomputable def bonus : Nat := 0\nend TBMM.Cert.Cumcm2024BProductionDecision",
            "TBMM.Cert.Cumcm2024BProductionDecision.bonus",
        ),
        (
            "namespace TBMM\nnamespace Cert\nnoncomputable def x : Nat := 0\nend Cert\nend TBMM",
            "TBMM.Cert.x",
        ),
        ("noncomputable def TBMMVerify.verdict : Nat := 0", "TBMMVerify.verdict"),
        ("namespace TBMMValues\ninductive V : Type\n  | v\nend TBMMValues", "TBMMValues.V"),
        ("noncomputable def _root_.TBMMVerify : Nat := 0", "TBMMVerify"),
    ],
)
def test_library_declaration_in_a_reserved_namespace_is_refused(
    project: Path, decl: str, name: str
) -> None:
    assert set(RESERVED_NAMESPACES) == {"TBMM.Cert", "TBMMVerify", "TBMMValues"}
    forms = project / "TBMM" / "Forms.lean"
    forms.write_text(forms.read_text() + "\n" + decl + "\n")
    errors = check_core(project, _indexes(project))
    assert any(f"declares {name} in the reserved namespace" in e for e in errors), errors


def test_repository_core_passes_the_core_check() -> None:
    assert check_core(REPO, _indexes(REPO)) == []
    assert check_layout(REPO, core_modules(REPO)) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda t: t.replace("prelude\n", "", 1), "does not start with `prelude`"),
        (lambda t: t.replace("prelude\n", "prelude\nimport Init\n", 1), "imports Init"),
    ],
)
def test_library_module_must_be_init_free(project: Path, edit, reason: str) -> None:  # noqa: ANN001
    forms = project / "TBMM" / "Forms.lean"
    forms.write_text(edit(forms.read_text()))
    errors = check_layout(project, core_modules(project))
    assert any(e.startswith("TBMM.Forms ") and reason in e for e in errors), errors


# --- the source scan: every lexical form ---------------------------------------------------

# What must be reported wherever it is code. Each case below opens a lexical form, and
# the payload follows it; the last line holds the closing character an out-of-step scan
# would pair with (so such a scan blanks the whole payload).
PAYLOAD = """
set_option debug.skipKernelTC true
axiom bad : Eq Bool.true Bool.false
unsafe def u : Nat := 0
theorem s : Eq Bool.true Bool.false := sorry
theorem n : Eq Bool.true Bool.true := by native_decide
"""
WANT = {"skipKernelTC", "axiom", "unsafe", "sorry", "native_decide"}
LEXICAL = {
    "raw_string": ('def s : String := r"\\"', '-- "'),
    "raw_string_hashes": ('def s : String := r#"a"b\\"#', '-- "'),
    "raw_string_in_application": ('def s : List String := List.cons r##"x"#"## List.nil', '-- "'),
    "doc_comment_slash": ('/--/ " -/', '-- "'),
    "doc_comment_nested": ('/--/ /- -/ " -/', '-- "'),
    "char_literal_quote": ("def c : Char := '\"'", '-- "'),
    "char_literal_escape": ("def c : Char := '\\\"'", '-- "'),
    "guillemet_name": ("def «x /-» : Nat := 0", "-- -/"),
    "guillemet_name_quote": ('def «a"b» : Nat := 0', '-- "'),
}


@pytest.mark.parametrize("case", sorted(LEXICAL))
def test_scan_is_not_desynchronised(case: str) -> None:
    opener, closer = LEXICAL[case]
    text = f"prelude\nimport TBMM.Core\n{opener}\n{PAYLOAD}{closer}\n"
    found = scan_text(text, "X.lean")
    tokens = {f.token for f in found}
    assert tokens >= WANT, (case, tokens)
    lines = text.splitlines()
    for f in found:  # each at its true line
        assert f.token.split(".")[-1] in lines[f.line - 1], (case, f)


@pytest.mark.parametrize(
    "text",
    [
        "/- /- -/ axiom -/ def x : Nat := 0",  # nested: still inside the outer comment
        "/-- doc /- nested -/ still doc: sorry -/ def x : Nat := 0",
        'def s : Nat := r#"axiom " sorry"# 0',  # inside a raw string with a quote in it
        'def s := "a\\"axiom\\\\"',  # escaped quote, then an escaped backslash closes
        'def x₁r := 0 def y := x₁r"axiom"',  # `x₁r` is a name: `\"…\"` is a plain string
        "def c : Char := 'a' -- axiom",
    ],
)
def test_scan_keeps_literals_and_comments_blank(text: str) -> None:
    found = {f.token for f in scan_text(text, "X.lean")}
    assert not found & {"axiom", "sorry"}, found


def test_guillemets_do_not_hide_a_forbidden_name() -> None:
    found = {f.token for f in scan_text("set_option «debug».«skipKernelTC» true\n", "X.lean")}
    assert "skipKernelTC" in found
    code = blank_comments("set_option «maxHeartbeats2» 1\n")
    assert "maxHeartbeats2" in code


@pytest.mark.parametrize("case", sorted(LEXICAL))
def test_lean_reads_the_payload_as_code(case: str, tmp_path: Path) -> None:
    """The lexer agrees with Lean: after each form, Lean elaborates the axiom (so its
    `#print axioms` names it) — the scan is reporting what the kernel would see."""
    opener, _ = LEXICAL[case]
    body = (
        "noncomputable section\n"
        f"{opener}\n"
        "axiom bad : Eq Bool.true Bool.false\n"
        "theorem t : Eq Bool.true Bool.false := bad\n"
        "end\n"
        "#print axioms t\n"
    )
    f = tmp_path / "Lex.lean"
    f.write_text("prelude\nimport TBMM\n" + body)
    res = check_module(f, REPO)
    assert "'t' depends on axioms: [bad]" in res.infos, (case, res.messages)
    # and the scan, on the same file, reports the axiom on its line
    found = [x for x in scan_text(f.read_text(), "Lex.lean") if x.token == "axiom"]
    assert [x.line for x in found] == [
        f.read_text().splitlines().index("axiom bad : Eq Bool.true Bool.false") + 1
    ]


def test_init_quot_and_dbg_trace_are_refused() -> None:
    found = {f.token for f in scan_text('init_quot\ndef x := dbg_trace "{y}"; 0\n', "X.lean")}
    assert {"init_quot", "dbg_trace"} <= found


def test_core_module_constant() -> None:
    assert CORE_MODULE == "TBMM.Core"


# --- the library's meaning, audited ------------------------------------------------------


@pytest.mark.slow
def test_meaning_theorems_are_audited_apart(project: Path) -> None:
    from tbmm.lean.audit import MEANING_MODULE

    res = audit(project, tasks=[])
    assert res.ok, (res.errors, res.findings)
    doc = res.to_json()
    names = {t["name"] for t in doc["meaning"]}
    assert doc["meaning_ok"] is True and MEANING_MODULE == "TBMM.Meaning"
    # the pins the mutations rely on are among them, each audited without axioms
    assert {"Flag.eq_of_listBeq", "Verdict.is_feasible", "Forms.interval_both"} <= names
    assert all(t["audited"] and t["axioms"] == [] for t in doc["meaning"])


@pytest.mark.slow
def test_meaning_theorem_resting_on_an_axiom_fails_the_audit(project: Path) -> None:
    meaning = project / "TBMM" / "Meaning.lean"
    meaning.write_text(
        meaning.read_text() + "\naxiom cheat : Eq Bool.true Bool.false\n"
        "theorem Meaning.bad : Eq Bool.true Bool.false := cheat\n"
    )
    res = audit(project, tasks=[])
    assert not res.ok
    assert res.axioms["Meaning.bad"] == ["cheat"]
    assert res.to_json()["meaning_ok"] is False
    assert any("TBMM.Meaning: a theorem rests on an axiom" in e for e in res.errors)
