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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tbmm.lean.audit import FORBIDDEN, AuditResult, audit
from tbmm.lean.build import CERT_DIR, build, check_module, copy_project, project_root
from tbmm.lean.certify import REGENERATE, render
from tbmm.mutate import violations, with_leaf
from tbmm.tasks import Task

REPO = project_root(Path(__file__).resolve().parent)
TARGET = "Cumcm2024BProductionDecision"  # its q3 gate states 57.666667 ≤ 104
CERT = CERT_DIR / f"{TARGET}.lean"
OPTION = "set_option maxRecDepth 65536 in\n"

Edit = Callable[[Path], None]


def on_line(theorem: str, old: str, new: str, count: int = 1) -> Edit:
    """Replace `old` by `new` in the line of `theorem` (exactly `count` occurrences)."""

    def edit(root: Path) -> None:
        f = root / CERT
        lines = f.read_text().split("\n")
        k = next(i for i, s in enumerate(lines) if s.startswith(f"theorem {theorem} :"))
        assert lines[k].count(old) == count, (theorem, old, lines[k].count(old))
        lines[k] = lines[k].replace(old, new)
        f.write_text("\n".join(lines))

    return edit


def whole_line(theorem: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        f = root / CERT
        lines = f.read_text().split("\n")
        k = next(i for i, s in enumerate(lines) if s.startswith(f"theorem {theorem} :"))
        lines[k] = new
        f.write_text("\n".join(lines))

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


def drop_theorem(theorem: str) -> Edit:
    def edit(root: Path) -> None:
        f = root / CERT
        text = f.read_text()
        lines = text.split("\n")
        k = next(i for i, s in enumerate(lines) if s.startswith(f"theorem {theorem} :"))
        f.write_text("\n".join(lines[: k - 1] + lines[k + 1 :]))

    return edit


def move_after_end(theorem: str) -> Edit:
    def edit(root: Path) -> None:
        f = root / CERT
        lines = f.read_text().split("\n")
        k = next(i for i, s in enumerate(lines) if s.startswith(f"theorem {theorem} :"))
        moved = lines[k - 1 : k + 1]
        rest = lines[: k - 1] + lines[k + 1 :]
        end = rest.index(f"end TBMM.Cert.{TARGET}")
        f.write_text("\n".join(rest[: end + 1] + moved + rest[end + 1 :]))

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


FALSE_PROOF = (
    "noncomputable def Nat.div (n m : Nat) : Nat := 0\n"
    "theorem div_body (x : Nat) : Eq (Nat.beq (Nat.div x 2) 0) Bool.true := rfl\n"
    "theorem false_eq_true : Eq Bool.false Bool.true := div_body 4\n"
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
    # The fourteen hand mutations of the issue; the first eight used to build and audit ok.
    M(
        "anchor_down_to_57",
        on_line(
            "score_q3_expected_profit",
            "(Rat.frac 28833333333 500000000)) (Rat.frac 28833333333 500000000)",
            "(Rat.frac 28833333333 500000000)) (Rat.frac 57 1)",
        ),
        True,
        "fidelity",
    ),
    M(
        "bound_104_to_105",
        on_line("gate_q3_profit_cap", "(Rat.frac 104 1)", "(Rat.frac 105 1)"),
        True,
        "fidelity",
    ),
    M(
        "weight_in_both_lists",
        on_line(
            "raw",
            "(Weighted.mk (Rat.frac 1 1) (Reward.score Direction.higherIsBetter Domain.any (Option.some (Rat.frac 28833333333 500000000))",
            "(Weighted.mk (Rat.frac 2 1) (Reward.score Direction.higherIsBetter Domain.any (Option.some (Rat.frac 28833333333 500000000))",
            count=2,
        ),
        True,
        "fidelity",
    ),
    M(
        "band_30_to_31",
        on_line(
            "score_q3_expected_profit",
            "(Rat.frac 28833333333 500000000) (Rat.frac 30 1)",
            "(Rat.frac 28833333333 500000000) (Rat.frac 31 1)",
        ),
        True,
        "fidelity",
    ),
    M(
        "baseline_F_in_robust_bo",
        on_line("robust_bo", "(Rat.frac 0 1)", "(Rat.frac 1 2)"),
        True,
        "fidelity",
    ),
    M(
        "statement_true_eq_true",
        whole_line(
            "gate_q3_profit_cap", "theorem gate_q3_profit_cap : Eq Bool.true Bool.true := rfl"
        ),
        True,
        "fidelity",
        "allowlist",
    ),
    M(
        "shadowing_forms_threshold",
        both(
            after_namespace(
                "def Forms.threshold (x : Rat) (op : Cmp) (c : Rat) : Bool := Bool.true\n"
            ),
            on_line("gate_q3_profit_cap", "(Rat.frac 57666667 1000000)", "(Rat.frac 1000 1)"),
        ),
        True,
        "fidelity",
        "allowlist",
    ),
    M(
        "oracle_raw_in_oeval",
        on_line(
            "oeval",
            "Reward.oEval (Rat.frac 1 1) (Rat.frac 1 1)",
            "Reward.oEval (Rat.frac 2 1) (Rat.frac 2 1)",
        ),
        True,
        "fidelity",
    ),
    M(
        "value_to_1000",
        on_line("gate_q3_profit_cap", "(Rat.frac 57666667 1000000)", "(Rat.frac 1000 1)"),
        False,
        "build",
        "fidelity",
    ),
    M(
        "reward_1_to_half",
        on_line(
            "score_q3_expected_profit",
            "(Rat.frac 30 1)) (Rat.frac 1 1))",
            "(Rat.frac 30 1)) (Rat.frac 1 2))",
        ),
        False,
        "build",
        "fidelity",
    ),
    M(
        "expect_flipped",
        on_line("gate_q1_type1_error", "Bool.true := rfl", "Bool.false := rfl"),
        False,
        "build",
        "fidelity",
        "allowlist",
    ),
    M(
        "theorem_deleted",
        drop_theorem("gate_q1_type1_error"),
        True,
        "fidelity",
        "allowlist",
        "sidecar",
    ),
    M(
        "sorry_proof",
        on_line("gate_q1_type1_error", ":= rfl", ":= sorry"),
        False,
        "build",
        "scan",
        "allowlist",
        "fidelity",
    ),
    M(
        "axiom_proof",
        both(
            after_namespace(
                "axiom trustMe : Eq (Forms.threshold (Rat.frac 1000 1) Cmp.le (Rat.frac 104 1)) Bool.true\n"
            ),
            whole_line(
                "gate_q3_profit_cap",
                "theorem gate_q3_profit_cap : Eq (Forms.threshold (Rat.frac 1000 1) Cmp.le (Rat.frac 104 1)) Bool.true := trustMe",
            ),
        ),
        True,
        "scan",
        "axioms",
        "allowlist",
        "fidelity",
    ),
    # Beyond the list: the false proof, and every construct the allowlist refuses.
    M("false_proof_nat_div", after_namespace(FALSE_PROOF), False, "build", "allowlist", "fidelity"),
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
            "gate_q1_type1_error",
            ":= rfl",
            ":= rfl\nset_option maxHeartbeats 0 in\ntheorem x : Eq Bool.true Bool.true := rfl",
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
        on_line(
            "gate_q1_type1_error", "theorem gate_q1_type1_error :", "theorem gate_q1_typeI_error :"
        ),
        True,
        "allowlist",
        "fidelity",
        "sidecar",
    ),
    M(
        "theorem_outside_namespace",
        move_after_end("gate_q1_type1_error"),
        True,
        "allowlist",
        "fidelity",
        "sidecar",
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


def test_the_pristine_copy_audits_clean(built: Path, suite: list[Task]) -> None:
    res = audit(built, tasks=suite)
    assert res.ok, (res.errors, res.findings, res.stale)
    assert caught(res) == set()


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


def test_project_mutations_forged_consistently_are_caught(
    built: Path, suite: list[Task], tmp_path: Path
) -> None:
    """The project's own mutation list (`tbmm.mutate.violations`, one breakable instance per
    task), written into each committed certificate as a regenerated-looking forgery that
    claims the mutated anchor feasible (module and sidecar both rendered by the generator):
    the kernel refuses each false claim, naming the instance, and the audit reports every
    module as not what the data generate."""
    root = copy_project(tmp_path / "p", built)
    named: dict[str, str] = {}
    for t in suite:
        inst, path, value = next(violations(t, t.anchor_artifact))
        cert = render(
            t,
            with_leaf(t.anchor_artifact, path, value),
            contract=True,
        )
        f = root / CERT_DIR / f"{cert.stem}.lean"
        f.write_text(cert.text)
        f.with_suffix(".json").write_text(json.dumps(cert.sidecar(), indent=1) + "\n")
        named[cert.module] = "gate_" + inst.name.replace("[", "_").replace("]", "")
    res = audit(root, tasks=suite)
    assert not res.ok and "build" in caught(res)
    stale = {s.split(" ", 1)[0] for s in res.stale}
    for mod in named:  # the sidecar names no values, so only the modules must differ
        assert (CERT_DIR / f"{mod.rsplit('.', 1)[-1]}.lean").as_posix() in stale, mod
    for mod, decl in named.items():
        checked = check_module(root / CERT_DIR / f"{mod.rsplit('.', 1)[-1]}.lean", root)
        refused = {msg.decl for msg in checked.messages if msg.severity == "error"}
        assert f"{mod}.{decl}" in refused, (mod, decl, refused)


def test_lean_build_refuses_stale_certificates(built: Path, tmp_path: Path) -> None:
    from tbmm.cli import app

    root = copy_project(tmp_path / "p", built)
    on_line("gate_q3_profit_cap", "(Rat.frac 104 1)", "(Rat.frac 105 1)")(root)
    r = CliRunner().invoke(app, ["lean", "build", "--root", str(root)])
    assert r.exit_code == 1
    assert f"{CERT.as_posix()} differs" in r.output and REGENERATE in r.output
    r = CliRunner().invoke(app, ["lean", "build", "--root", str(root), "--no-certs"])
    assert r.exit_code == 0, r.output


def test_lean_commands_without_a_toolchain_exit_2_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: list[Task]
) -> None:
    from tbmm.cli import app

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
