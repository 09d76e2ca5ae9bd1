"""Soundness of the Init-free core against the kernel's by-name GMP arithmetic.

The kernel evaluates a fixed list of `Nat` functions on numerals with GMP and trusts any
definition bearing the name. Three things must hold, and each is tested here:

* the core declares every one of them (`ACCELERATED`), so no later module can claim one;
* each body computes what GMP computes, for every input we can afford to unfold
  (Lean's conventions: `n / 0 = 0`, `n % 0 = n`, `gcd 0 n = n`, `0 ^ 0 = 1`, …);
* the false proof that a free name allowed — `false = true`, then a certificate
  "proving" `1000 ≤ 104` — works against a core that leaves `Nat.div` free (so the test
  can fail) and is refused by the real core and by the audit.
"""

from __future__ import annotations

import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tbmm.core.lean_syntax import module
from tbmm.lean.audit import ACCELERATED, audit
from tbmm.lean.build import build, check_module, copy_project, project_root
from tbmm.lean.source import index
from tbmm.suite.tasks import Task

REPO = project_root(Path(__file__).resolve().parent)
CORE = REPO / "TBMM" / "Core.lean"


def _log2(n: int) -> int:
    return n.bit_length() - 1 if n > 0 else 0


# Lean's semantics of each accelerated name, which GMP implements on numerals.
REFERENCE: dict[str, Callable[..., int | bool]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: max(0, a - b),
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b if b else 0,
    "mod": lambda a, b: a % b if b else a,
    "gcd": math.gcd,
    "beq": lambda a, b: a == b,
    "ble": lambda a, b: a <= b,
    "land": lambda a, b: a & b,
    "lor": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "shiftLeft": lambda a, b: a << b,
    "shiftRight": lambda a, b: a >> b,
    "pow": lambda a, b: a**b,
    "log2": _log2,
}
# Bodies unfolded by the kernel: small arguments (the recursions are unary), plus larger
# ones where a body recurses on the binary length only.
SMALL = range(0, 8)
LARGE: dict[str, list[tuple[int, ...]]] = {
    "land": [(2**40 + 12345, 987654321), (0, 2**35), (2**33 - 1, 2**33 - 1)],
    "lor": [(2**40 + 12345, 987654321), (0, 2**35)],
    "xor": [(2**40 + 12345, 987654321), (2**33 - 1, 2**33 - 1)],
    "log2": [(2**50,), (2**50 - 1,), (10**15,)],
    "shiftRight": [(10**20, 40)],
    "pow": [(7, 30), (0, 0), (0, 5)],
    "gcd": [(2**40 * 3, 2**38 * 9), (0, 10**12), (10**12, 0)],
}


def test_reference_covers_every_accelerated_name() -> None:
    assert sorted(f"Nat.{n}" for n in REFERENCE) == sorted(ACCELERATED)


def test_core_claims_every_accelerated_name() -> None:
    defs = set(index(CORE.read_text()).names("def"))
    assert set(ACCELERATED) <= defs, set(ACCELERATED) - defs


def _body(text: str, name: str) -> str:
    """The source of `def Nat.<name>` as `def Body.<name>` (same body, not accelerated)."""
    lines = text.splitlines()
    start = next(i for i, s in enumerate(lines) if s.startswith(f"def Nat.{name} "))
    end = start + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    block = "\n".join(lines[start:end])
    return block.replace(f"def Nat.{name} ", f"def Body.{name} ", 1)


def _lit(v: int | bool) -> str:
    return ("Bool.true" if v else "Bool.false") if isinstance(v, bool) else str(v)


def _cases(name: str) -> list[tuple[int, ...]]:
    if name == "log2":
        return [(a,) for a in range(0, 70)] + LARGE[name]
    args = [(a, b) for a in SMALL for b in SMALL]
    return args + LARGE.get(name, [])


@pytest.mark.slow
def test_bodies_compute_what_gmp_computes(tmp_path: Path) -> None:
    """Each body, unfolded by the kernel under another name, agrees with Lean's semantics,
    and so does the accelerated name itself (GMP) — one module, one kernel run."""
    text = CORE.read_text()
    body = ["noncomputable section", *(_body(text, n) + "\n" for n in REFERENCE)]
    for name, ref in REFERENCE.items():
        for k, args in enumerate(_cases(name)):
            want = _lit(ref(*args))
            call = " ".join(str(a) for a in args)
            body.append(f"theorem body_{name}_{k} : Eq (Body.{name} {call}) {want} := rfl\n")
            body.append(f"theorem gmp_{name}_{k} : Eq (Nat.{name} {call}) {want} := rfl\n")
    body.append("end")
    f = tmp_path / "Agree.lean"
    f.write_text(module(body))
    res = check_module(f, REPO)
    failed = sorted({m.decl for m in res.messages if m.severity == "error"})
    assert res.ok and not failed, (failed[:10], res.failure and res.failure.message)


# --- the false proof ------------------------------------------------------------------

FALSE_PROOF = """prelude
import TBMM

/-- A wrong body under a name the kernel evaluates with GMP. -/
noncomputable def Nat.div (n m : Nat) : Nat := 0

/-- Unfolding the body: `x / 2 = 0`, so `(x / 2 == 0) = true` for every `x`. -/
theorem div_body (x : Nat) : Eq (Nat.beq (Nat.div x 2) 0) Bool.true := rfl

/-- At `x = 4` the kernel computes `4 / 2 = 2` with GMP, so the left side is `false`. -/
theorem false_eq_true : Eq Bool.false Bool.true := div_body 4

/-- Any Bool statement follows: here, a violated gate check (`1000 ≤ 104`). -/
theorem gate_q3_profit_cap : Eq (Forms.threshold (Rat.frac 1000 1) Cmp.le (Rat.frac 104 1)) Bool.true :=
  false_eq_true
"""


@pytest.fixture(scope="module")
def unclaimed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the library whose core leaves `Nat.div` free (as the core once did)."""
    root = copy_project(tmp_path_factory.mktemp("lean") / "unclaimed", REPO, with_build=False)
    shutil.rmtree(root / "TBMM" / "Cert")
    # every library module, not only the core: library code may use `Nat.div` (a replay's
    # rounding does), and must follow the core's renaming to build
    for f in (root / "TBMM").rglob("*.lean"):
        f.write_text(re.sub(r"\bNat\.div\b", "Nat.divFree", f.read_text()))
    # the crop data's self-checks evaluate digit arithmetic on large naturals: with a division
    # by unary recursion they exhaust Lean's recursion depth, and the attack needs none of them
    data = root / "TBMM" / "Replay" / "CropData.lean"
    text = data.read_text()
    data.write_text(text[: text.index("set_option maxRecDepth 65536 in\n/-- The expected sales")])
    build(root, certs=False).raise_for_failure()
    return root


@pytest.mark.slow
def test_false_proof_works_when_the_name_is_free(unclaimed: Path, tmp_path: Path) -> None:
    """The attack is real: with `Nat.div` unclaimed, the kernel accepts `false = true` and
    the violated gate check, with no axioms at all."""
    f = tmp_path / "Attack.lean"
    f.write_text(FALSE_PROOF + "\n#print axioms false_eq_true\n#print axioms gate_q3_profit_cap\n")
    res = check_module(f, unclaimed)
    assert res.ok, res.failure and res.failure.summary()
    assert res.infos == [
        "'false_eq_true' does not depend on any axioms",
        "'gate_q3_profit_cap' does not depend on any axioms",
    ]


def test_false_proof_fails_against_the_core(tmp_path: Path) -> None:
    f = tmp_path / "Attack.lean"
    f.write_text(FALSE_PROOF)
    res = check_module(f, REPO)
    assert not res.ok and res.failure is not None
    first = next(m for m in res.messages if m.severity == "error")
    assert "Nat.div" in first.text and "already been declared" in first.text, first.text
    assert (
        first.line
        == FALSE_PROOF.splitlines().index("noncomputable def Nat.div (n m : Nat) : Nat := 0") + 1
    )


@pytest.mark.slow
def test_false_proof_in_a_certificate_is_refused_by_build_and_audit(
    tmp_path: Path, suite: list[Task]
) -> None:
    root = copy_project(tmp_path / "p", REPO)
    cert = root / "TBMM" / "Cert" / "Cumcm2024BProductionDecision.lean"
    text = cert.read_text()
    attack = FALSE_PROOF.split("import TBMM\n", 1)[1]
    cert.write_text(text.replace("noncomputable section\n", "noncomputable section\n" + attack, 1))
    res = build(root)
    assert not res.ok and res.failure is not None
    assert res.failure.module == "TBMM.Cert.Cumcm2024BProductionDecision"
    assert "already been declared" in res.failure.message
    a = audit(root, tasks=suite)
    assert not a.ok
    assert any("build failed" in e for e in a.errors)
    assert any("Cumcm2024BProductionDecision.lean" in s for s in a.stale)
    assert any(f.path.endswith("Cumcm2024BProductionDecision.lean") for f in a.findings)
