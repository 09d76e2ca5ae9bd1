"""Auditing the Lean layer: what the kernel was trusted with, and what the sources contain.

Every check below is required for `ok`:

1. Soundness of the core: `TBMM.Core` declares every name the kernel treats specially
   (`KERNEL_NAMES`: the `Nat` functions it evaluates with GMP by name, `ACCELERATED`, and
   the names it builds literals and results from), and no other module declares one, so
   none can be given a wrong body or an empty type; no library module declares anything
   in a reserved namespace (`RESERVED_NAMESPACES`: the certificates', the verify and
   values modules'), nor a name that would shadow, inside a certificate's namespace, a
   name the certificates use. Every library module starts with `prelude` and imports
   only `TBMM` modules (Lean's own `Init` would bring a second, unchecked prelude).
2. Sources: every `.lean` file is scanned (comments and literals blanked by a lexer
   that follows Lean's: nested and doc comments, raw strings, escapes, character
   literals, `«»` names) for `sorry`, `native_decide`, `Lean.ofReduceBool`/`ofReduceNat`,
   `implemented_by`, `extern`, `axiom`, `unsafe`, `debug.skipKernelTC`, `trustCompiler`,
   `init_quot`, `dbg_trace`, and options outside a short whitelist. The one exception is the compiler marker `unsafe axiom lcAny : Type` in
   `TBMM/Core.lean`, which no safe declaration can mention. Every module under `TBMM/` is
   part of the library (imported by `TBMM.lean`), the theorem module, or a certificate.
3. Certificates, by allowlist (`tbmm.lean.allowlist`): nothing but the generated data
   `def task : Task`/`def artifact : Json` and `theorem NAME : Eq (TERM) Bool.true := (rfl)`
   of the expected names, in the module's namespace.
4. Fidelity: every certificate is regenerated in memory from the task data and anchors
   (`tbmm.lean.certify`) and must equal the committed file byte for byte, sidecar
   included; a missing, stale, edited or extra file fails.
5. Axioms: after a build, a generated module imports everything and runs
   `#print axioms` for every core declaration, every obligation and every theorem of
   `TBMM.Theorems` (the scoring rules proved for all inputs) and `TBMM.Meaning` (what the
   comparators, forms and verdict assembly mean), both listed apart. Each must report
   "does not depend on any axioms".

Obligations are described by sidecar files `TBMM/Cert/<Name>.json` next to each
certificate module: ``[{"decl", "task", "kind", "form", "check", "field", "expect"}, ...]``;
`kind` is `check` (one gate check over all its instances), `items` (a declared list's
minimum length), `task` (the oracle's and the baseline's raw scores), `verdict` or `replay`.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tbmm.lean.allowlist import check_certificate, library_names
from tbmm.lean.build import (
    CERT_DIR,
    LIBRARY,
    build,
    build_dir,
    build_order,
    cert_modules,
    check_module,
    module_file,
    module_name,
    project_root,
)
from tbmm.lean.certify import CERT_NAMESPACE, VALUES_MODULE, VERIFY_MODULE
from tbmm.lean.runtime import Toolchain, find_toolchain
from tbmm.lean.source import SourceIndex, blank_comments, index, read_imports
from tbmm.lean.theorems import THEOREMS_MODULE, parse_theorems, theorem_report, theorems_ok

if TYPE_CHECKING:
    from tbmm.suite.tasks import Task

CORE_MARKER = "unsafe axiom lcAny : Type"
CERT_TYPES = frozenset({"Task", "Json"})  # the types a certificate's data definitions name
CORE_MODULE = f"{LIBRARY}.Core"
MEANING_MODULE = f"{LIBRARY}.Meaning"  # what comparators, forms and the verdict mean
# The Nat functions the Lean kernel evaluates on numerals with GMP, trusting any
# definition that bears the name (see `TBMM/Core.lean` for how the list was probed).
ACCELERATED = (
    "Nat.add",
    "Nat.sub",
    "Nat.mul",
    "Nat.div",
    "Nat.mod",
    "Nat.gcd",
    "Nat.beq",
    "Nat.ble",
    "Nat.land",
    "Nat.lor",
    "Nat.xor",
    "Nat.shiftLeft",
    "Nat.shiftRight",
    "Nat.pow",
    "Nat.log2",
)
# Every name the v4.35 kernel treats specially (see `TBMM/Core.lean` for why each is
# there): the core declares them all with their genuine meaning, no other module any.
KERNEL_NAMES = (
    "Nat",
    "Nat.zero",
    "Nat.succ",
    *ACCELERATED,
    "Bool",
    "Bool.true",
    "Bool.false",
    "String",
    "String.ofList",
    "List",
    "List.cons",
    "List.nil",
    "Char",
    "Char.ofNat",
    "Lean.reduceBool",
    "Lean.reduceNat",
    "Eq",
    "OfNat",
    "OfNat.ofNat",
    "instOfNatNat",
)
# Namespaces generated code owns: a library declaration there would shadow (or stand in
# for) a certificate's own names.
RESERVED_NAMESPACES = (CERT_NAMESPACE, VERIFY_MODULE, VALUES_MODULE)
ALLOWED_OPTIONS = frozenset(
    {"genCtorIdx", "bootstrap.inductiveCheckResultingUniverse", "maxRecDepth", "maxHeartbeats"}
)
FORBIDDEN: dict[str, str] = {
    "sorry": "sorry (an unproved goal)",
    "native_decide": "native_decide (trusts compiled code, not the kernel)",
    "ofReduceBool": "Lean.ofReduceBool (trusts compiled code)",
    "ofReduceNat": "Lean.ofReduceNat (trusts compiled code)",
    "implemented_by": "implemented_by (code differing from the definition)",
    "extern": "extern (code differing from the definition)",
    "axiom": "a new axiom",
    "unsafe": "unsafe declaration",
    "skipKernelTC": "debug.skipKernelTC (skips the kernel)",
    "trustCompiler": "Lean.trustCompiler",
    "init_quot": "init_quot (adds quotient types and a kernel reduction rule)",
    "dbg_trace": "dbg_trace (its interpolated string is code the scan cannot delimit)",
}
_FORBIDDEN_RE = re.compile(r"\b(?:" + "|".join(map(re.escape, FORBIDDEN)) + r")\b")
_OPTION_RE = re.compile(r"\bset_option\s+(?P<name>[A-Za-z_][\w.]*)")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_']*(\.[A-Za-z_][A-Za-z0-9_']*)*$")
_AXIOMS_RE = re.compile(
    r"^'(?P<name>.+)' (?:does not depend on any axioms|depends on axioms: \[(?P<axioms>.*)\])",
    re.S,
)


@dataclass(frozen=True)
class Obligation:
    """One proved check, as described by a certificate's sidecar JSON."""

    decl: str
    task: str = ""
    form: str = ""
    check: str = ""
    field: str = ""
    module: str = ""
    kind: str = ""

    @classmethod
    def from_json(cls, obj: dict[str, object], module: str = "") -> Obligation:
        return cls(
            decl=str(obj["decl"]),
            task=str(obj.get("task", "")),
            form=str(obj.get("form", "")),
            check=str(obj.get("check", "")),
            field=str(obj.get("field", "")),
            module=str(obj.get("module", module)),
            kind=str(obj.get("kind", "")),
        )


@dataclass(frozen=True)
class Finding:
    """A forbidden construct, or a departure from the allowlist, found in a source file."""

    path: str
    line: int
    token: str
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "token": self.token, "reason": self.reason}


@dataclass
class AuditResult:
    """The audit's verdict and its evidence."""

    obligations: list[Obligation] = field(default_factory=list)
    # TBMM.Theorems (proved for all inputs): `tbmm.lean.theorems.theorem_report`, None when
    # the library has no such module
    theorems: list[dict[str, object]] | None = None
    # TBMM.Meaning (the comparators', forms' and verdict's meaning, for all inputs)
    meaning: list[dict[str, object]] | None = None
    axioms: dict[str, list[str]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # certificate files the data do not generate
    errors: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    certificates_checked: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            not self.errors
            and not self.findings
            and not self.stale
            and not any(self.axioms.values())
            and (self.theorems is None or theorems_ok(self.theorems))
            and (self.meaning is None or theorems_ok(self.meaning))
        )

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "obligations": len(self.obligations),
            "tasks": dict(sorted(Counter(o.task for o in self.obligations).items())),
            "kinds": dict(sorted(Counter(o.kind for o in self.obligations).items())),
            "forms": dict(sorted(Counter(o.form for o in self.obligations).items())),
            "theorems": self.theorems or [],
            "theorems_ok": self.theorems is None or theorems_ok(self.theorems),
            "meaning": self.meaning or [],
            "meaning_ok": self.meaning is None or theorems_ok(self.meaning),
            "fidelity": {"certificates": self.certificates_checked, "stale": self.stale},
            "accelerated": list(ACCELERATED),
            "kernel_names": list(KERNEL_NAMES),
            "axioms": self.axioms,
            "findings": [f.to_json() for f in self.findings],
            "errors": self.errors,
            "modules": self.modules,
            "seconds": round(self.seconds, 3),
        }


# --- source scan --------------------------------------------------------------------


def scan_text(text: str, path: str, *, allow_marker: bool = False) -> list[Finding]:
    """Forbidden constructs in one Lean source (comments and strings ignored)."""
    code = blank_comments(text)
    if allow_marker:
        # The compiler marker is allowed once, exactly, and nowhere but the core.
        code = code.replace(CORE_MARKER, " " * len(CORE_MARKER), 1)
    found: list[Finding] = []
    if not _FORBIDDEN_RE.search(code) and "set_option" not in code:
        return found
    for lineno, line in enumerate(code.splitlines(), start=1):
        for m in _FORBIDDEN_RE.finditer(line):
            found.append(Finding(path, lineno, m.group(0), FORBIDDEN[m.group(0)]))
        for m in _OPTION_RE.finditer(line):
            if m["name"] not in ALLOWED_OPTIONS:
                found.append(Finding(path, lineno, m["name"], "option outside the whitelist"))
    return found


def scan_sources(root: Path, paths: Iterable[Path] | None = None) -> list[Finding]:
    """Scan the library root `TBMM.lean` and every `.lean` file under `TBMM/`."""
    files = sorted(paths) if paths is not None else _library_files(root)
    found: list[Finding] = []
    core = module_file(root, CORE_MODULE).resolve()
    for p in files:
        rel = _rel(root, p)
        text = p.read_text(encoding="utf-8")
        found += scan_text(text, rel, allow_marker=p.resolve() == core)
    return found


def _rel(root: Path, p: Path) -> str:
    rp = p.resolve()
    return str(rp.relative_to(root)) if rp.is_relative_to(root) else str(p)


def _library_files(root: Path) -> list[Path]:
    files = [root / f"{LIBRARY}.lean"] if (root / f"{LIBRARY}.lean").is_file() else []
    return files + sorted((root / LIBRARY).rglob("*.lean"))


# --- the core and the layout ---------------------------------------------------------


def core_modules(root: Path) -> list[str]:
    """The library's hand-written modules: `TBMM`'s imports, then `TBMM.Theorems` if present."""
    mods = build_order(root, [LIBRARY])
    if module_file(root, THEOREMS_MODULE).is_file() and THEOREMS_MODULE not in mods:
        mods += [m for m in build_order(root, [THEOREMS_MODULE]) if m not in mods]
    return mods


def core_declarations(root: Path) -> list[str]:
    """Definitions and theorems of the library's own modules (certificates excluded)."""
    names: list[str] = []
    for mod in core_modules(root):
        text = module_file(root, mod).read_text(encoding="utf-8")
        names += index(text).names("def", "theorem", "abbrev")
    return names


def check_core(root: Path, indexes: dict[str, SourceIndex]) -> list[str]:
    """The core claims every kernel name, no other module does, nothing uses a reserved
    namespace, and nothing shadows a certificate's names."""
    errors: list[str] = []
    declared = {m: {*i.names(), *i.constructors, *i.fields} for m, i in indexes.items()}
    claimed = declared.get(CORE_MODULE, set())
    for name in KERNEL_NAMES:
        if name not in claimed:
            errors.append(
                f"{CORE_MODULE} does not define {name}: the kernel treats it specially by "
                "name, so any module could give it a wrong body or an empty type"
            )
        owners = [m for m, names in declared.items() if m != CORE_MODULE and name in names]
        errors += [f"{m} redeclares the kernel name {name}" for m in owners]
    for mod, names in declared.items():
        for name in sorted(names):
            for ns in RESERVED_NAMESPACES:
                if name == ns or name.startswith(ns + "."):
                    errors.append(
                        f"{mod} declares {name} in the reserved namespace {ns} "
                        "(generated certificates own it)"
                    )
    used = library_names(root) | CERT_TYPES
    for mod, idx in indexes.items():
        for d in idx.decls:
            for prefix in ("TBMM.Cert.", "TBMM."):
                if d.name.startswith(prefix) and d.name.removeprefix(prefix) in used:
                    errors.append(
                        f"{mod} declares {d.name}, which shadows "
                        f"{d.name.removeprefix(prefix)} inside every certificate's namespace"
                    )
    return errors


def check_layout(root: Path, core: Sequence[str]) -> list[str]:
    """Every module under `TBMM/` is a core module or a certificate under `TBMM/Cert/`;
    every module of the library starts with `prelude` and imports only `TBMM` modules."""
    known = set(core)
    errors = []
    for p in sorted((root / LIBRARY).rglob("*.lean")):
        mod = module_name(root, p)
        if mod not in known and not mod.startswith(f"{LIBRARY}.Cert."):
            errors.append(f"{_rel(root, p)}: module {mod} is not imported by {LIBRARY}.lean")
    for mod in core:
        text = module_file(root, mod).read_text(encoding="utf-8")
        if blank_comments(text).split()[:1] != ["prelude"]:
            errors.append(f"{mod} does not start with `prelude` (it would import Lean's Init)")
        foreign = [
            m for m in read_imports(text) if m != LIBRARY and not m.startswith(LIBRARY + ".")
        ]
        if foreign:
            errors.append(f"{mod} imports {', '.join(foreign)}: only {LIBRARY} modules may be")
    return errors


# --- certificates -------------------------------------------------------------------


def load_obligations(root: Path) -> tuple[list[Obligation], list[str]]:
    """Obligations listed by the sidecars `TBMM/Cert/<Name>.json`, and problems found."""
    obligations: list[Obligation] = []
    errors: list[str] = []
    cert_dir = root / CERT_DIR
    if not cert_dir.is_dir():
        return obligations, errors
    for sidecar in sorted(cert_dir.rglob("*.json")):
        lean = sidecar.with_suffix(".lean")
        rel = sidecar.relative_to(root)
        if not lean.is_file():
            errors.append(f"{rel}: no certificate module {lean.name} beside it")
            continue
        module = ".".join(lean.relative_to(root).with_suffix("").parts)
        try:
            items = json.loads(sidecar.read_text(encoding="utf-8"))
            if not isinstance(items, list):
                raise ValueError("expected a JSON list of obligations")
            obligations += [Obligation.from_json(o, module) for o in items]
        except (ValueError, KeyError, TypeError) as exc:
            errors.append(f"{rel}: {exc}")
    return obligations, errors


def _expected(root: Path, module: str) -> list[str] | None:
    """The theorem names the module's sidecar lists, or None when unreadable."""
    sidecar = module_file(root, module).with_suffix(".json")
    try:
        items = json.loads(sidecar.read_text(encoding="utf-8"))
        prefix = module + "."
        return [
            str(o["decl"]).removeprefix(prefix) for o in items if str(o["decl"]).startswith(prefix)
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def check_certificates(root: Path, allowed: frozenset[str]) -> list[Finding]:
    """The allowlist over every committed certificate, against its sidecar's theorem list."""
    found: list[Finding] = []
    for mod in cert_modules(root):
        path = module_file(root, mod)
        expected = _expected(root, mod)
        rel = _rel(root, path)
        if expected is None:
            found.append(Finding(rel, 0, "", "no readable sidecar listing its theorems"))
        for v in check_certificate(
            path.read_text(encoding="utf-8"), mod, allowed, expected=expected, path=rel
        ):
            found.append(Finding(v.path, v.line, v.text[:80], v.reason))
    return found


def _check_obligation_sources(root: Path, obligations: Sequence[Obligation]) -> list[str]:
    """Each obligation must be a `theorem` of the module its sidecar names."""
    errors: list[str] = []
    cache: dict[str, dict[str, str]] = {}
    for o in obligations:
        if not o.module:
            continue
        if o.module not in cache:
            f = module_file(root, o.module)
            text = f.read_text(encoding="utf-8") if f.is_file() else ""
            cache[o.module] = {d.name: d.kind for d in index(text).decls}
        kind = cache[o.module].get(o.decl)
        if kind != "theorem":
            what = "is not declared" if kind is None else f"is a {kind}, not a theorem"
            errors.append(f"obligation {o.decl} {what} in {o.module}")
    return errors


def check_fidelity(root: Path, tasks: Sequence[Task]) -> tuple[list[str], int]:
    """Certificate files that differ from a fresh rendering, and how many were rendered."""
    from tbmm.lean.certify import anchor_certificates, stale_certificates

    certs = anchor_certificates(tasks)
    return [str(s) for s in stale_certificates(root, tasks, certs)], len(certs)


# --- axioms -------------------------------------------------------------------------


def print_axioms(
    root: Path,
    decls: Sequence[str],
    modules: Sequence[str],
    *,
    toolchain: Toolchain | None = None,
    timeout: float | None = 600.0,
) -> tuple[dict[str, list[str]], list[str]]:
    """`#print axioms` for each declaration, in a module importing `modules`.

    Returns the axioms per declaration and the errors (an unknown name, no report).
    """
    errors = [f"not a plain declaration name: {d!r}" for d in decls if not _IDENT_RE.match(d)]
    names = list(dict.fromkeys(d for d in decls if _IDENT_RE.match(d)))
    if not names:
        return {}, errors
    header = ["prelude", *(f"import {m}" for m in modules)]
    body = [f"#print axioms {n}" for n in names]
    audit_dir = build_dir(root) / "_audit"
    audit_dir.mkdir(parents=True, exist_ok=True)
    tmp = audit_dir / f"Audit{time.time_ns()}.lean"
    tmp.write_text("\n".join(header + body) + "\n", encoding="utf-8")
    try:
        res = check_module(tmp, root, toolchain=toolchain, timeout=timeout, build_deps=False)
    finally:
        tmp.unlink(missing_ok=True)
    first = len(header) + 1  # line of the first #print
    by_line: dict[int, str] = {first + i: n for i, n in enumerate(names)}
    axioms: dict[str, list[str]] = {}
    for m in res.messages:
        name = by_line.get(m.line)
        if name is None:
            if m.severity == "error":
                errors.append(m.text)
            continue
        hit = _AXIOMS_RE.match(m.text)
        if m.severity == "error" or hit is None:
            errors.append(f"{name}: {m.text}")
            continue
        listed = hit["axioms"]
        axioms[name] = [a.strip() for a in listed.split(",") if a.strip()] if listed else []
    errors += [
        f"{n}: no axiom report" for n in names if n not in axioms and not _mentioned(n, errors)
    ]
    if res.failure is not None and not errors:
        errors.append(res.failure.summary())
    return axioms, errors


def _mentioned(name: str, errors: Sequence[str]) -> bool:
    return any(e.startswith(f"{name}: ") for e in errors)


# --- the audit ----------------------------------------------------------------------


def audit(
    root: Path | None = None,
    *,
    tasks: Sequence[Task] | None = None,
    obligations: Sequence[Obligation] | None = None,
    extra_decls: Sequence[str] = (),
    toolchain: Toolchain | None = None,
    timeout: float | None = 600.0,
) -> AuditResult:
    """Check the core, the sources, the certificates' shape and fidelity, then the axioms.

    `tasks` are the tasks whose anchors the certificates must reproduce (default: the
    suite under `tasks/`); `obligations` default to those the sidecars list. Raises
    `ToolchainError` when no Lean is available.
    """
    root = (root or project_root()).resolve()
    tc = toolchain or find_toolchain()
    t0 = time.monotonic()
    result = AuditResult()
    core = core_modules(root)
    indexes = {m: index(module_file(root, m).read_text(encoding="utf-8")) for m in core}
    result.findings = scan_sources(root)
    result.errors += check_core(root, indexes)
    result.errors += check_layout(root, core)
    result.findings += check_certificates(root, library_names(root))
    if tasks is None:
        from tbmm.suite.tasks import TaskFormatError, load_suite

        try:
            tasks = load_suite()
        except TaskFormatError as exc:
            result.errors.append(f"cannot load the tasks to regenerate the certificates: {exc}")
    if tasks is not None:
        try:
            result.stale, result.certificates_checked = check_fidelity(root, tasks)
        except ValueError as exc:
            result.errors.append(f"cannot regenerate the certificates: {exc}")
    if obligations is None:
        obligations, errs = load_obligations(root)
        result.errors += errs
    result.obligations = list(obligations)
    certs = cert_modules(root)
    built = build(root, targets=[*core, *certs], toolchain=tc, timeout=timeout)
    if built.failure is not None:
        result.errors.append(f"build failed: {built.failure.summary()}")
        result.seconds = time.monotonic() - t0
        return result
    result.modules = [LIBRARY, *([THEOREMS_MODULE] if THEOREMS_MODULE in indexes else []), *certs]
    result.errors += _check_obligation_sources(root, result.obligations)
    decls = [
        *(n for m in core for n in indexes[m].names("def", "theorem", "abbrev")),
        *(o.decl for o in result.obligations),
        *extra_decls,
    ]
    axioms, errs = print_axioms(root, decls, result.modules, toolchain=tc, timeout=timeout)
    result.axioms = axioms
    result.errors += errs
    if THEOREMS_MODULE in indexes:
        text = module_file(root, THEOREMS_MODULE).read_text(encoding="utf-8")
        result.theorems = theorem_report(parse_theorems(text), axioms)
        if not theorems_ok(result.theorems):
            result.errors.append(
                f"{THEOREMS_MODULE}: a theorem rests on an axiom or was not audited (or none)"
            )
    if MEANING_MODULE in indexes:
        text = module_file(root, MEANING_MODULE).read_text(encoding="utf-8")
        result.meaning = theorem_report(parse_theorems(text), axioms)
        if not theorems_ok(result.meaning):
            result.errors.append(
                f"{MEANING_MODULE}: a theorem rests on an axiom or was not audited (or none)"
            )
    result.seconds = time.monotonic() - t0
    return result
