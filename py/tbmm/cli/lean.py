"""`tbmm lean …`: toolchain doctor, library build, kernel check of one module, audit."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from tbmm.cli.help import typer_app
from tbmm.lean.audit import audit as run_audit
from tbmm.lean.build import BuildFailure, build, check_module, lean_path, project_root
from tbmm.lean.runtime import ToolchainError, find_toolchain

lean_app = typer_app(
    no_args_is_help=True,
    add_completion=False,
    help="The Lean layer: toolchain, build of the TBMM library, kernel checks, audit.",
)
console = Console()
err = Console(stderr=True)

RootOpt = Annotated[
    Path | None, typer.Option("--root", help="Project root (holds lakefile.lean and TBMM/).")
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _root(root: Path | None) -> Path:
    try:
        return project_root(root)
    except FileNotFoundError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from exc


@contextlib.contextmanager
def _toolchain() -> Iterator[None]:
    """No Lean toolchain: one line on stderr and exit 2, never a traceback."""
    try:
        yield
    except ToolchainError as exc:
        err.print(f"error: {' '.join(str(exc).split())}", highlight=False, markup=False)
        raise typer.Exit(2) from exc


def _refuse_stale(r: Path) -> None:
    """Exit 1 when a certificate is not what the task data generate (stale or edited)."""
    from tbmm.lean.certify import REGENERATE, stale_certificates
    from tbmm.suite.tasks import TaskFormatError, load_suite

    try:
        stale = stale_certificates(r, load_suite())
    except (TaskFormatError, ValueError) as exc:
        err.print(f"error: cannot regenerate the certificates: {exc}", highlight=False)
        raise typer.Exit(1) from exc
    if stale:
        for s in stale:
            err.print(f"[red]refused:[/red] {s}", highlight=False, soft_wrap=True)
        err.print(
            f"the certificates must be what the task data generate: run `{REGENERATE}` "
            "(or build with --no-certs)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


def _report_failure(f: BuildFailure) -> None:
    err.print(f"[red]FAILED[/red] module {f.module}", highlight=False)
    if f.decl:
        err.print(f"  declaration: {f.decl}", highlight=False)
    err.print(f"  exit code:   {f.exit_code}", highlight=False)
    err.print("  message:", highlight=False)
    for line in f.message.splitlines():
        err.print(f"    {line}", highlight=False, markup=False)


@lean_app.command()
def doctor(as_json: JsonFlag = False) -> None:
    """Which Lean toolchain is used, its version and commit."""
    with _toolchain():
        tc = find_toolchain()
    info = {
        "kind": tc.kind,
        "path": str(tc.path),
        "version": tc.version,
        "commit": tc.commit,
        "pinned": tc.pinned,
        "lake": str(tc.lake) if tc.lake else None,
    }
    if as_json:
        print(json.dumps(info, indent=2))
        return
    for k, v in info.items():
        console.print(f"{k:8} {v}", highlight=False)
    if not tc.pinned:
        err.print("[yellow]warning:[/yellow] the project pins Lean 4.35.0 (lean-toolchain)")


@lean_app.command("build")
def build_cmd(
    root: RootOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild every module.")] = False,
    certs: Annotated[
        bool, typer.Option("--certs/--no-certs", help="Also build TBMM/Cert/* modules.")
    ] = True,
) -> None:
    """Build the TBMM library (and its certificates); exit 1 naming the failing module.

    Certificates that differ from what the task data generate are refused before any
    Lean runs (exit 1, naming the file and the command that regenerates it).
    """
    r = _root(root)
    if certs:
        _refuse_stale(r)

    def progress(event: str, module: str) -> None:
        if event != "skip":
            console.print(f"{event:6} {module}", highlight=False)

    with _toolchain():
        result = build(r, force=force, certs=certs, progress=progress)
    if result.failure is not None:
        _report_failure(result.failure)
        raise typer.Exit(1)
    console.print(
        f"ok: {len(result.built)} built, {len(result.skipped)} up to date, "
        f"{result.seconds:.2f} s ({result.toolchain.kind} Lean {result.toolchain.version}); "
        f".olean files in {lean_path(r, result.toolchain)}",
        highlight=False,
        soft_wrap=True,
    )


@lean_app.command()
def check(
    path: Annotated[
        Path, typer.Argument(help="A Lean module importing TBMM (e.g. a certificate).")
    ],
    root: RootOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Kernel-check one module against the built library (no .olean is written)."""
    r = _root(root)
    with _toolchain():
        res = check_module(path, r)
    if as_json:
        doc = {
            "ok": res.ok,
            "path": str(res.path),
            "exit_code": res.exit_code,
            "seconds": round(res.seconds, 3),
            "failure": res.failure.to_json() if res.failure else None,
            "messages": [m.to_json() for m in res.messages],
        }
        print(json.dumps(doc, indent=2))
    elif res.failure is not None:
        _report_failure(res.failure)
    else:
        for info in res.infos:
            console.print(info, highlight=False, markup=False)
        console.print(f"ok: {path} checked in {res.seconds:.2f} s", highlight=False)
    if not res.ok:
        raise typer.Exit(1)


@lean_app.command("audit")
def audit_cmd(root: RootOpt = None, as_json: JsonFlag = False) -> None:
    """Core soundness, forbidden-source scan, certificate allowlist and fidelity, axioms."""
    r = _root(root)
    with _toolchain():
        res = run_audit(r)
    if as_json:
        print(json.dumps(res.to_json(), indent=2))
    else:
        with_axioms = {d: a for d, a in res.axioms.items() if a}
        console.print(
            f"{len(res.axioms)} declarations audited ({len(res.obligations)} obligations, "
            f"{len(res.theorems or [])} theorems for all inputs, {len(res.meaning or [])} "
            f"on the library's meaning, {res.certificates_checked} "
            f"certificates regenerated and compared), {res.seconds:.2f} s",
            highlight=False,
        )
        for d, a in with_axioms.items():
            err.print(f"[red]axioms[/red] {d}: {', '.join(a)}", highlight=False)
        for f in res.findings:
            err.print(
                f"[red]forbidden[/red] {f.path}:{f.line}: {f.reason}"
                + (f" ({f.token})" if f.token else ""),
                highlight=False,
                markup=False,
            )
        for s in res.stale:
            err.print(f"stale {s}", highlight=False, markup=False, soft_wrap=True)
        if res.stale:
            from tbmm.lean.certify import REGENERATE

            err.print(
                f"regenerate the certificates with `{REGENERATE}`", highlight=False, soft_wrap=True
            )
        for e in res.errors:
            err.print(f"[red]error[/red] {e}", highlight=False, markup=False)
        console.print(
            "ok: no axioms, no forbidden constructs, certificates as generated"
            if res.ok
            else "[red]audit FAILED[/red]"
        )
    if not res.ok:
        raise typer.Exit(1)


@lean_app.command("certify")
def certify_cmd(
    root: RootOpt = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only check the committed certificates are up to date.")
    ] = False,
) -> None:
    """(Re)generate TBMM/Cert/<Task>.lean + .json from every task's anchor artifact."""
    from tbmm.lean.certify import (
        CERT_DIR,
        REGENERATE,
        stale_certificates,
        write_anchor_certificates,
    )
    from tbmm.suite.tasks import load_suite

    r = _root(root)
    tasks = load_suite()
    if check:
        stale = stale_certificates(r, tasks)
        for f in stale:
            err.print(f"[red]stale:[/red] {f}", highlight=False, soft_wrap=True)
        if stale:
            err.print(f"run `{REGENERATE}`", highlight=False, soft_wrap=True)
            raise typer.Exit(1)
        console.print(f"{len(tasks)} certificates up to date")
        return
    certs = write_anchor_certificates(tasks, r)
    total = sum(len(c.obligations) for c in certs)
    for c in certs:
        (it,) = c.items
        failing = sum(1 for fs in it.expected.flags for f in fs if f.status in ("fail", "bad"))
        console.print(
            f"{c.module}: {len(c.obligations)} obligations"
            + (
                f" ([yellow]{failing} failing instance(s), kernel-proved[/yellow])"
                if failing
                else ""
            )
        )
    console.print(f"{len(certs)} certificates, {total} obligations written to {r / CERT_DIR}")


@lean_app.command("emit")
def emit_cmd(
    artifact: Annotated[Path, typer.Argument(help="The JSON artifact.")],
    task: Annotated[str, typer.Option("--task", help="Task slug.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the module here (default: stdout).")
    ] = None,
    check_it: Annotated[
        bool, typer.Option("--check", help="Also kernel-check the emitted module.")
    ] = False,
) -> None:
    """Write the certificate module of any artifact (only numbers and generated names reach Lean).

    Every statement is Python's verdict (each check's failing instances, feasibility,
    O-Eval, Robust BO-Eval) on the artifact as given (no replay is run), so `--check`
    passes exactly when the kernel agrees with Python.
    """
    from tbmm.lean.certify import render
    from tbmm.suite.tasks import TaskFormatError, find_task
    from tbmm.verdict.scoring import ArtifactError, read_artifact

    try:
        t = find_task(task)
        doc = read_artifact(artifact.read_bytes(), t.caps)
    except (KeyError, TaskFormatError, ArtifactError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(2) from exc
    cert = render(t, doc, module="TBMMArtifact")
    if check_it:
        with _toolchain():
            find_toolchain()  # before writing anything: no toolchain is one line, exit 2
    if out is None:
        print(cert.text, end="")
    else:
        out.write_text(cert.text, encoding="utf-8")
        out.with_suffix(".json").write_text(
            json.dumps(cert.sidecar(), indent=1) + "\n", encoding="utf-8"
        )
        err.print(f"wrote {out} ({len(cert.obligations)} obligations)")
    if check_it:
        if out is None:
            err.print("[red]error:[/red] --check needs --out")
            raise typer.Exit(2)
        with _toolchain():
            res = check_module(out)
        if not res.ok:
            _report_failure(res.failure)  # type: ignore[arg-type]
            raise typer.Exit(1)
        err.print(
            f"[green]kernel-checked[/green] {len(cert.obligations)} obligations in {res.seconds:.2f} s"
        )
