"""Auditing the Lean layer: what the kernel was trusted with, and what the sources contain.

Two independent checks, both required for `ok`:

1. Axioms: a generated module imports the library and the certificates and runs
   `#print axioms` for every core definition and every obligation. Each must report
   "does not depend on any axioms" (no `sorryAx`, no `propext`, no `Lean.ofReduceBool`).
2. Sources: every `.lean` file of the library is scanned (comments and strings
   blanked) for `sorry`, `native_decide`, `Lean.ofReduceBool`/`ofReduceNat`,
   `implemented_by`, `extern`, `axiom`, `unsafe`, `debug.skipKernelTC`,
   `trustCompiler`, and options outside a short whitelist. The one exception is the
   compiler marker `unsafe axiom lcAny : Type` in `TBMM/Core.lean`, which no safe
   declaration can mention.

Obligations are described by sidecar files `TBMM/Cert/<Name>.json` next to each
certificate module: ``[{"decl", "task", "form", "check", "field"}, ...]``.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tbmm.lean.build import (
    BUILD_DIR,
    CERT_DIR,
    LIBRARY,
    build,
    build_order,
    cert_modules,
    check_module,
    module_file,
    project_root,
)
from tbmm.lean.runtime import Toolchain, find_toolchain
from tbmm.lean.source import blank_comments, declarations

CORE_MARKER = "unsafe axiom lcAny : Type"
CORE_MODULE = f"{LIBRARY}.Core"
ALLOWED_OPTIONS = frozenset(
    {"genCtorIdx", "bootstrap.inductiveCheckResultingUniverse", "maxRecDepth", "maxHeartbeats"}
)
FORBIDDEN: dict[str, str] = {
    r"\bsorry\b": "sorry (an unproved goal)",
    r"\bnative_decide\b": "native_decide (trusts compiled code, not the kernel)",
    r"\bofReduceBool\b": "Lean.ofReduceBool (trusts compiled code)",
    r"\bofReduceNat\b": "Lean.ofReduceNat (trusts compiled code)",
    r"\bimplemented_by\b": "implemented_by (code differing from the definition)",
    r"\bextern\b": "extern (code differing from the definition)",
    r"\baxiom\b": "a new axiom",
    r"\bunsafe\b": "unsafe declaration",
    r"\bskipKernelTC\b": "debug.skipKernelTC (skips the kernel)",
    r"\btrustCompiler\b": "Lean.trustCompiler",
}
_OPTION_RE = re.compile(r"\bset_option\s+(?P<name>[A-Za-z_][\w.]*)")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_']*(\.[A-Za-z_][A-Za-z0-9_']*)*$")
_AXIOMS_RE = re.compile(
    r"^'(?P<name>.+)' (?:does not depend on any axioms|depends on axioms: \[(?P<axioms>.*)\])",
    re.S,
)


@dataclass(frozen=True)
class Obligation:
    """One proved gate check, as described by a certificate's sidecar JSON."""

    decl: str
    task: str = ""
    form: str = ""
    check: str = ""
    field: str = ""
    module: str = ""

    @classmethod
    def from_json(cls, obj: dict[str, object], module: str = "") -> Obligation:
        return cls(
            decl=str(obj["decl"]),
            task=str(obj.get("task", "")),
            form=str(obj.get("form", "")),
            check=str(obj.get("check", "")),
            field=str(obj.get("field", "")),
            module=str(obj.get("module", module)),
        )


@dataclass(frozen=True)
class Finding:
    """A forbidden construct found in a source file."""

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
    axioms: dict[str, list[str]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and not self.findings and not any(self.axioms.values())

    def to_json(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "obligations": len(self.obligations),
            "tasks": dict(sorted(Counter(o.task for o in self.obligations).items())),
            "forms": dict(sorted(Counter(o.form for o in self.obligations).items())),
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
    lines = code.splitlines()
    for lineno, line in enumerate(lines, start=1):
        for pattern, reason in FORBIDDEN.items():
            for m in re.finditer(pattern, line):
                found.append(Finding(path, lineno, m.group(0), reason))
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
        rel = str(p.resolve().relative_to(root)) if p.resolve().is_relative_to(root) else str(p)
        text = p.read_text(encoding="utf-8")
        found += scan_text(text, rel, allow_marker=p.resolve() == core)
    return found


def _library_files(root: Path) -> list[Path]:
    files = [root / f"{LIBRARY}.lean"] if (root / f"{LIBRARY}.lean").is_file() else []
    return files + sorted((root / LIBRARY).rglob("*.lean"))


# --- obligations --------------------------------------------------------------------


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


def core_declarations(root: Path) -> list[str]:
    """Definitions and theorems of the library's own modules (certificates excluded)."""
    names: list[str] = []
    for mod in build_order(root, [LIBRARY]):
        text = module_file(root, mod).read_text(encoding="utf-8")
        names += [d.name for d in declarations(text) if d.kind in ("def", "theorem", "abbrev")]
    return names


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
            cache[o.module] = {d.name: d.kind for d in declarations(text)}
        kind = cache[o.module].get(o.decl)
        if kind != "theorem":
            what = "is not declared" if kind is None else f"is a {kind}, not a theorem"
            errors.append(f"obligation {o.decl} {what} in {o.module}")
    return errors


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
    audit_dir = root / BUILD_DIR / "_audit"
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


def audit(
    root: Path | None = None,
    *,
    obligations: Sequence[Obligation] | None = None,
    extra_decls: Sequence[str] = (),
    toolchain: Toolchain | None = None,
    timeout: float | None = 600.0,
) -> AuditResult:
    """Build, then audit the core and the certificates (or the given obligations).

    `obligations` defaults to those listed in the `TBMM/Cert/*.json` sidecars.
    """
    root = (root or project_root()).resolve()
    tc = toolchain or find_toolchain()
    t0 = time.monotonic()
    result = AuditResult()
    result.findings = scan_sources(root)
    if obligations is None:
        obligations, errs = load_obligations(root)
        result.errors += errs
    result.obligations = list(obligations)
    built = build(root, toolchain=tc, timeout=timeout)
    if built.failure is not None:
        result.errors.append(f"build failed: {built.failure.summary()}")
        result.seconds = time.monotonic() - t0
        return result
    result.modules = [LIBRARY, *cert_modules(root)]
    result.errors += _check_obligation_sources(root, result.obligations)
    decls = [*core_declarations(root), *(o.decl for o in result.obligations), *extra_decls]
    axioms, errs = print_axioms(root, decls, result.modules, toolchain=tc, timeout=timeout)
    result.axioms = axioms
    result.errors += errs
    result.seconds = time.monotonic() - t0
    return result
