"""Hand edits of a committed certificate: each one is caught by the build or the audit.

Every case edits a temporary copy of the project (never the committed files), then runs
the audit against the real suite. `builds` records what the kernel alone says: a third of
these edits still state true facts (a moved anchor or bound that the value still
satisfies, a statement replaced by `true = true`, a shadowing definition), so only the
fidelity check (regenerate and compare) and the allowlist can catch them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tbmm.core import exact
from tbmm.core.exact import fraction_to_text as text_of
from tbmm.lean.audit import FORBIDDEN, AuditResult, audit
from tbmm.lean.build import CERT_DIR, build, check_module, copy_project, project_root
from tbmm.lean.certify import REGENERATE, module_name, render
from tbmm.lean.terms import artifact_term
from tbmm.suite.tasks import Task, load_suite, load_task
from tbmm.verdict.gate import run_gate
from tbmm.verdict.mutate import violations, with_leaf

REPO = project_root(Path(__file__).resolve().parent)
SLUG = "mcm-2025-b-juneau-tourism"  # a feasible anchor without a replay
TARGET = module_name(SLUG).rsplit(".", 1)[-1]
CERT = CERT_DIR / f"{TARGET}.lean"

Edit = Callable[[Path], None]


def _task() -> Task:
    return next(t for t in load_suite() if t.slug == SLUG)


# The theorems of a committed module edited below: its verdict (over every check) and F.
FIRST_CHECK, SECOND_CHECK = "verdict", "baseline"


def _line(root: Path, start: str) -> tuple[list[str], int]:
    lines = (root / CERT).read_text().split("\n")
    return lines, next(i for i, s in enumerate(lines) if s.startswith(start))


def on_line(start: str, old: str, new: str, count: int = 1) -> Edit:
    """Replace `old` by `new` in the line starting with `start` (exactly `count` occurrences)."""

    def edit(root: Path) -> None:
        lines, k = _line(root, start)
        assert lines[k].count(old) == count, (start, old, lines[k].count(old))
        lines[k] = lines[k].replace(old, new)
        (root / CERT).write_text("\n".join(lines))

    return edit


def theorem(name: str) -> str:
    return f"theorem {name} :"


def _args(term: str, head: str) -> list[tuple[int, int]]:
    """The spans of the top-level arguments of the first `(head …)` in `term`."""
    pos = term.index(f"({head} ")
    spans, depth, i, start = [], 0, pos + len(head) + 2, None
    while True:
        c = term[i]
        if depth == 0 and c == ")":
            if start is not None:
                spans.append((start, i))
            return spans
        if depth == 0 and c == " ":
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None:
            start = i
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        i += 1


def claim(start: str, head: str, k: int, new: str) -> Edit:
    """Replace argument `k` of the first `(head …)` in the line starting with `start`."""

    def edit(root: Path) -> None:
        lines, j = _line(root, start)
        a, b = _args(lines[j], head)[k]
        assert lines[j][a:b] != new
        lines[j] = lines[j][:a] + new + lines[j][b:]
        (root / CERT).write_text("\n".join(lines))

    return edit


def whole_line(start: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        lines, k = _line(root, start)
        lines[k] = new
        (root / CERT).write_text("\n".join(lines))

    return edit


def after_namespace(extra: str) -> Edit:
    def edit(root: Path) -> None:
        f = root / CERT
        ns = f"namespace TBMM.Cert.{TARGET}\n"
        text = f.read_text()
        assert ns in text
        f.write_text(text.replace(ns, ns + extra, 1))

    return edit


def both(*edits: Edit) -> Edit:
    def edit(root: Path) -> None:
        for e in edits:
            e(root)

    return edit


def drop_theorem(name: str) -> Edit:
    def edit(root: Path) -> None:
        lines, k = _line(root, theorem(name))
        (root / CERT).write_text("\n".join(lines[: k - 1] + lines[k + 1 :]))

    return edit


def move_after_end(name: str) -> Edit:
    def edit(root: Path) -> None:
        lines, k = _line(root, theorem(name))
        moved = lines[k - 1 : k + 1]
        rest = lines[: k - 1] + lines[k + 1 :]
        end = rest.index(f"end TBMM.Cert.{TARGET}")
        (root / CERT).write_text("\n".join(rest[: end + 1] + moved + rest[end + 1 :]))

    return edit


def edit_sidecar(root: Path) -> None:
    f = (root / CERT).with_suffix(".json")
    items = json.loads(f.read_text())
    items[0]["field"] = "q9.somewhere_else"
    f.write_text(json.dumps(items, indent=1) + "\n")


def extra_certificate(root: Path) -> None:
    text = (root / CERT).read_text().replace(f"TBMM.Cert.{TARGET}", "TBMM.Cert.Extra")
    (root / CERT_DIR / "Extra.lean").write_text(text)


def delete_certificate(root: Path) -> None:
    (root / CERT).unlink()


def forged(change: Callable[[Path], None]) -> Edit:
    """A forgery the generator itself writes: the task's data edited in a copy of its folder
    (`change` gets the folder), the certificate and sidecar rendered from the edited data —
    true statements about the wrong data, which the kernel accepts and only fidelity
    (regenerate from the real data and compare) can catch."""

    def edit(root: Path) -> None:
        src = _task().dir
        dst = root / "forged" / src.parent.name / src.name
        shutil.copytree(src, dst)
        change(dst)
        # the generated floor (F) follows the edited data, as `tbmm tasks build` would write it
        (dst / "floor.json").unlink()
        t = load_task(dst)
        cert = render(t, t.anchor_artifact)
        (root / CERT).write_text(cert.text)
        (root / CERT).with_suffix(".json").write_text(json.dumps(cert.sidecar(), indent=1) + "\n")

    return edit


def _sub(file: str, pattern: str, repl: Callable[[re.Match[str]], str]) -> Callable[[Path], None]:
    def change(d: Path) -> None:
        f = d / file
        text, n = re.subn(pattern, repl, f.read_text(), count=1, flags=re.M)
        assert n == 1, (file, pattern)
        f.write_text(text)

    return change


def _panel_value(d: Path) -> None:
    f = d / "panel.json"
    panel = json.loads(f.read_text())
    paper = next(p for p in panel["papers"] if p.get("values"))
    k = next(iter(paper["values"]))
    paper["values"][k] = text_of(Fraction(paper["values"][k]) * 2)
    f.write_text(json.dumps(panel))


def _baseline_value(d: Path) -> None:
    f = d / "baseline.json"
    bl = json.loads(f.read_text())
    values = bl["pipelines"][bl["default_pipeline"]]
    k = next(iter(values))
    values[k]["value"] = text_of(Fraction(values[k]["value"]) * 2)
    f.write_text(json.dumps(bl))


def _violating_artifact(root: Path) -> None:
    """The artifact's def replaced by that of an artifact one leaf over a check's bound."""
    t = _task()
    _, path, value = next(violations(t, t.anchor_artifact))
    text = artifact_term(t, with_leaf(t.anchor_artifact, path, value))
    lines, k = _line(root, "def artifact :")
    lines[k] = f"def artifact : Json := {text}"
    (root / CERT).write_text("\n".join(lines))


def _write_violating_anchor(d: Path) -> None:
    """The task copy's anchor artifact replaced by one leaf over a check's bound."""
    t = load_task(d)
    _, path, value = next(violations(t, t.anchor_artifact))
    anchor = exact.loads((d / "anchor.json").read_text())
    anchor["artifact"] = with_leaf(t.anchor_artifact, path, value)
    (d / "anchor.json").write_text(exact.dumps(anchor))


FALSE_PROOF = (
    "noncomputable def Nat.div (n m : Nat) : Nat := 0\n"
    "theorem div_body (x : Nat) : Eq (Nat.beq (Nat.div x 2) 0) Bool.true := rfl\n"
    "theorem false_eq_true : Eq Bool.false Bool.true := div_body 4\n"
)
VERDICT = theorem("verdict")
ONE_THIRD = "(Rat.frac 1 3)"  # a claim no anchor verdict of the suite makes
LIE = (
    "Eq (Flag.listBeq (Verdict.checkFlags task 0 artifact) "
    "(List.cons (Flag.mk 0 Status.fail) List.nil)) Bool.true"
)


@dataclass(frozen=True)
class Mutation:
    id: str
    edit: Edit
    builds: bool  # whether the kernel alone accepts the edited project
    caught_by: frozenset[str]  # audit layers that must flag it (others may too)


def M(id: str, edit: Edit, builds: bool, *caught_by: str) -> Mutation:  # noqa: A002, N802
    return Mutation(id, edit, builds, frozenset(caught_by))


MUTATIONS = [
    # The fourteen hand mutations of the issue, on the certificate's new shape. The first
    # eight state true facts about edited data (the generator rendered them from a copy of
    # the task folder with one number or rule changed, or one statement made trivial): the
    # kernel accepts them, only fidelity (and the allowlist, for the non-generated ones)
    # can catch them.
    M(
        "anchor_band_moved",
        forged(
            _sub(
                "scoring.toml",
                r'^band = "([^"]+)"',
                lambda m: f'band = "{text_of(Fraction(m[1]) * 2 + 1)}"',
            )
        ),
        True,
        "fidelity",
    ),
    M(
        "bound_moved",
        forged(
            _sub("gate.toml", r'^hi = "([^"]+)"', lambda m: f'hi = "{text_of(Fraction(m[1]) + 1)}"')
        ),
        True,
        "fidelity",
    ),
    M(
        "weight_changed",
        forged(_sub("scoring.toml", r'^weight = "([^"]+)"', lambda m: 'weight = "3"')),
        True,
        "fidelity",
    ),
    M("paper_value_changed", forged(_panel_value), True, "fidelity"),
    M("baseline_F_changed", forged(_baseline_value), True, "fidelity"),
    M(
        "statement_true_eq_true",
        whole_line(
            theorem(SECOND_CHECK), f"theorem {SECOND_CHECK} : Eq (Bool.true) Bool.true := (rfl)"
        ),
        True,
        "fidelity",
        "allowlist",
    ),
    M(
        "shadowing_verdict_is",
        both(
            after_namespace(
                "def Verdict.is (v : Verdict) (f : Bool) (o r : Rat) : Bool := Bool.true\n"
            ),
            claim(VERDICT, "Verdict.is", 2, ONE_THIRD),
        ),
        True,
        "fidelity",
        "allowlist",
    ),
    M(
        "direction_changed",
        forged(
            _sub("scoring.toml", r'^direction = "([^"]+)"', lambda m: 'direction = "exact_value"')
        ),
        True,
        "fidelity",
    ),
    M("value_breaks_a_check", _violating_artifact, False, "build", "fidelity"),
    M(
        "oeval_claim_changed",
        claim(VERDICT, "Verdict.is", 2, ONE_THIRD),
        False,
        "build",
        "fidelity",
    ),
    M(
        "expect_flipped",
        on_line(theorem(FIRST_CHECK), "Bool.true := (rfl)", "Bool.false := (rfl)"),
        False,
        "build",
        "fidelity",
        "allowlist",
    ),
    M("theorem_deleted", drop_theorem(SECOND_CHECK), True, "fidelity", "allowlist", "sidecar"),
    M(
        "sorry_proof",
        on_line(theorem(FIRST_CHECK), ":= (rfl)", ":= sorry"),
        False,
        "build",
        "scan",
        "allowlist",
        "fidelity",
    ),
    M(
        "axiom_proof",
        both(
            after_namespace(f"axiom trustMe : {LIE}\n"),
            whole_line(theorem(FIRST_CHECK), f"theorem {FIRST_CHECK} : {LIE} := trustMe"),
        ),
        True,
        "scan",
        "axioms",
        "allowlist",
        "fidelity",
    ),
    # Beyond the list: the false proof, the task's own numbers, and every construct
    # the allowlist refuses.
    M("false_proof_nat_div", after_namespace(FALSE_PROOF), False, "build", "allowlist", "fidelity"),
    M(
        "oracle_claim_changed",
        claim(theorem("oracle"), "Rat.beq", 1, ONE_THIRD),
        False,
        "build",
        "fidelity",
    ),
    M(
        "violation_forged_consistently",  # the kernel agrees: these are the claims of that artifact
        forged(_write_violating_anchor),
        True,
        "fidelity",
    ),
    M(
        "artifact_def_retyped",
        on_line("def artifact :", "def artifact : Json :=", "def artifact : Task :="),
        False,
        "build",
        "allowlist",
        "fidelity",
    ),
    M(
        "root_theorem",
        after_namespace("theorem _root_.extra : Eq Bool.true Bool.true := rfl\n"),
        True,
        "allowlist",
        "fidelity",
    ),
    M("open_namespace", after_namespace("open Forms\n"), True, "allowlist", "fidelity"),
    M(
        "other_option",
        on_line(
            theorem(FIRST_CHECK),
            ":= (rfl)",
            ":= (rfl)\nset_option maxHeartbeats 0 in\ntheorem x : Eq Bool.true Bool.true := rfl",
        ),
        True,
        "allowlist",
        "fidelity",
    ),
    M(
        "local_instance",
        after_namespace("instance instSeven : OfNat Rat 7 := OfNat.mk (Rat.frac 7 1)\n"),
        True,
        "allowlist",
        "fidelity",
    ),
    M(
        "attribute",
        after_namespace("attribute [irreducible] Rat.le\n"),
        False,  # Lean itself refuses to change a definition's reducibility here
        "allowlist",
        "fidelity",
    ),
    M("sidecar_edited", edit_sidecar, True, "fidelity"),
    M("extra_certificate", extra_certificate, True, "fidelity", "allowlist"),
    M(
        "theorem_renamed",
        on_line(theorem(FIRST_CHECK), f"theorem {FIRST_CHECK} :", "theorem check_renamed :"),
        True,
        "allowlist",
        "fidelity",
        "sidecar",
    ),
    M(
        "theorem_outside_namespace",  # outside, `task` and `artifact` do not even resolve
        move_after_end(FIRST_CHECK),
        False,
        "build",
        "allowlist",
        "fidelity",
    ),
    M(
        "verdict_from_given_flags",  # true (it is `eval` unfolded), but flags Python could pick
        on_line(
            theorem(FIRST_CHECK),
            "(Verdict.is (Verdict.eval task artifact)",
            "(Verdict.is (Verdict.given task artifact (Verdict.flags task artifact) "
            "(Verdict.lists task artifact) (Verdict.oracle task) (Verdict.baseline task))",
        ),
        True,
        "allowlist",
        "fidelity",
    ),
    M("certificate_deleted", delete_certificate, True, "fidelity", "sidecar"),
]


def caught(res: AuditResult) -> set[str]:
    """Which audit layers flagged something."""
    layers = set()
    if any(e.startswith("build failed") for e in res.errors):
        layers.add("build")
    if any(f.token in FORBIDDEN for f in res.findings):
        layers.add("scan")
    if any(f.token not in FORBIDDEN for f in res.findings):
        layers.add("allowlist")
    if res.stale:
        layers.add("fidelity")
    if any(res.axioms.values()):
        layers.add("axioms")
    if any(("obligation" in e or ".json:" in e) for e in res.errors):
        layers.add("sidecar")
    return layers


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    build(root).raise_for_failure()
    return root


@pytest.mark.slow
def test_the_pristine_copy_audits_clean(built: Path, suite: list[Task]) -> None:
    res = audit(built, tasks=suite)
    assert res.ok, (res.errors, res.findings, res.stale)
    assert caught(res) == set()


@pytest.mark.slow
@pytest.mark.parametrize("m", MUTATIONS, ids=[m.id for m in MUTATIONS])
def test_mutation_is_caught(m: Mutation, built: Path, suite: list[Task], tmp_path: Path) -> None:
    root = copy_project(tmp_path / "p", built)
    before = {p: p.read_bytes() for p in (root / CERT_DIR).iterdir()}
    m.edit(root)
    assert {p: p.read_bytes() for p in (root / CERT_DIR).iterdir() if p.exists()} != before
    res = audit(root, tasks=suite)
    assert not res.ok
    layers = caught(res)
    assert m.caught_by <= layers, (m.id, sorted(layers), res.errors, res.findings[:3], res.stale)
    assert ("build" not in layers) == m.builds, (m.id, res.errors)


@pytest.mark.slow
def test_project_mutations_forged_consistently_are_caught(
    built: Path, suite: list[Task], tmp_path: Path
) -> None:
    """The project's own mutation list (`tbmm.verdict.mutate.violations`, one breakable instance per
    task), written into each committed certificate as a regenerated-looking forgery that
    claims the mutated anchor passes (module and sidecar both rendered by the generator,
    with the anchor's own claims): the kernel refuses each false claim at the verdict
    (which runs every check), and the audit reports every module as not what the data generate."""
    from tbmm.lean.certify import expected_from
    from tbmm.verdict.scoring import score_task

    root = copy_project(tmp_path / "p", built)
    named: dict[str, str] = {}
    for t in suite:
        inst, path, value = next(violations(t, t.anchor_artifact))
        claims = expected_from(t, run_gate(t, t.anchor_artifact), score_task(t, t.anchor_artifact))
        cert = render(t, with_leaf(t.anchor_artifact, path, value), expected=claims)
        f = root / CERT_DIR / f"{cert.stem}.lean"
        f.write_text(cert.text)
        f.with_suffix(".json").write_text(json.dumps(cert.sidecar(), indent=1) + "\n")
        named[cert.module] = "verdict"  # it runs every check, the broken one included
    res = audit(root, tasks=suite)
    assert not res.ok and "build" in caught(res)
    stale = {s.split(" ", 1)[0] for s in res.stale}
    for mod in named:  # the sidecar names no values, so only the modules must differ
        assert (CERT_DIR / f"{mod.rsplit('.', 1)[-1]}.lean").as_posix() in stale, mod
    for mod, decl in named.items():
        checked = check_module(root / CERT_DIR / f"{mod.rsplit('.', 1)[-1]}.lean", root)
        refused = {msg.decl for msg in checked.messages if msg.severity == "error"}
        assert f"{mod}.{decl}" in refused, (mod, decl, refused)


@pytest.mark.slow
def test_lean_build_refuses_stale_certificates(built: Path, tmp_path: Path) -> None:
    from tbmm.cli.root import app

    root = copy_project(tmp_path / "p", built)
    claim(VERDICT, "Verdict.is", 2, ONE_THIRD)(root)
    r = CliRunner().invoke(app, ["lean", "build", "--root", str(root)])
    assert r.exit_code == 1
    assert f"{CERT.as_posix()} differs" in r.output and REGENERATE in r.output
    r = CliRunner().invoke(app, ["lean", "build", "--root", str(root), "--no-certs"])
    assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_lean_commands_without_a_toolchain_exit_2_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: list[Task]
) -> None:
    from tbmm.cli.root import app

    monkeypatch.setenv("TBMM_LEAN_KIND", "elan")
    monkeypatch.setenv("PATH", str(tmp_path))  # no `lean` there
    t = next(t for t in suite if t.slug == "mcm-2025-b-juneau-tourism")
    art = tmp_path / "a.json"
    art.write_bytes(t.anchor_artifact_bytes())
    out = tmp_path / "X.lean"
    for args in (
        ["lean", "doctor"],
        ["lean", "build"],
        ["lean", "check", str(REPO / "TBMM" / "Core.lean")],
        ["lean", "audit"],
        ["lean", "audit", "--json"],
        ["lean", "emit", str(art), "--task", t.slug, "--out", str(out), "--check"],
        ["verify", str(art), "--task", t.slug],
        ["verify", str(art), "--task", t.slug, "--json"],
    ):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
        err = [s for s in r.stderr.splitlines() if s.strip()]
        assert len(err) == 1 and "no Lean toolchain" in err[0], (args, r.stderr)
    assert os.environ["PATH"] == str(tmp_path)
