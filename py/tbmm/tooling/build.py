"""`tbmm tasks build`: regenerate the generated files of every task from the source release.

Curated files (artifact_map.toml, scoring.toml, gate.toml, panel.json, baseline.json,
figures.toml) are inputs and are never written here. Everything else in a task folder is
derived from ../shared/tbmm-source plus those inputs, deterministically, so a rebuild on
a clean clone reproduces the committed tree byte for byte.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tbmm.core import exact
from tbmm.core.paths import PathError, resolve, set_path
from tbmm.suite.files import sha256_file, write_text_if_changed
from tbmm.suite.models import (
    REPLAYED,
    ArtifactMap,
    Attachment,
    Figure,
    HeldOut,
    Manifest,
    MissingAttachments,
    Provenance,
)
from tbmm.suite.split import HELDOUT_DIR, split_workbook
from tbmm.suite.split import load_spec as load_split_spec
from tbmm.suite.stack import PYTHON_IMAGE, PYTHON_MINOR, lock_text
from tbmm.suite.tasks import REPO_ROOT, TASKS_ROOT, Task, TaskFormatError, load_model, load_task

DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "tbmm-source"
CONTAINER_DATA = "/root/data"
CURATED = (
    "artifact_map.toml",
    "scoring.toml",
    "gate.toml",
    "panel.json",
    "baseline.json",
    "figures.toml",
    "replay.toml",
    "reference.json",
    "verification.md",
    "exploits.toml",
    "missing_attachments.toml",
    "split.toml",
    "naive.toml",
)


class BuildError(RuntimeError):
    """The source or a curated input cannot produce a valid task; the message says which."""


@dataclass(frozen=True)
class BuildResult:
    slug: str
    attachments: int
    missing: int
    figures: int
    fields: int


def _common_dir(files: list[Path]) -> Path:
    parts = [f.parent.parts for f in files]
    common: list[str] = []
    for group in zip(*parts, strict=False):
        if len(set(group)) != 1:
            break
        common.append(group[0])
    return Path(*common)


def _slug_parts(slug: str) -> tuple[str, int, str]:
    contest, year, problem, *_ = slug.split("-")
    return contest.upper(), int(year), problem.upper()


# The source release's MCM statements open with a preprocessing header (an internal source
# folder, a table of suggested modelling methods) and a machine translation before the
# official English text; only the official text is the statement.
MCM_ORIGINAL = "## 英文原文"
# Page furniture of the COMAP PDFs' extracted text (a running header), not statement text.
_COMAP_BANNER = re.compile(
    r"^[|\s]*(©\s*\d{4}\s+by\s+COMAP\s*\|\s*)?www\.comap\.(org|com)\s*\|\s*"
    r"www\.mathmodels\.org\s*\|\s*info@comap\.(org|com)[|\s]*$"
)


def _statement(source_instruction: str) -> str:
    """The verbatim official statement: the source instruction up to its old artifact block;
    for an MCM task, the official English text only (no translation, no method hints)."""
    head, sep, _ = source_instruction.partition("# Required Benchmark Artifact")
    if not sep:
        raise BuildError("source instruction.md has no '# Required Benchmark Artifact' block")
    if MCM_ORIGINAL not in head:
        return head.rstrip() + "\n"
    preamble, _, original = head.partition(MCM_ORIGINAL)
    lines = preamble.splitlines()
    canary = [ln for ln in lines[:2] if ln.startswith("<!--")]
    title = next((ln for ln in lines if ln.startswith("# ") and "MCM" in ln), None)
    if title is None:
        raise BuildError("source instruction.md: no MCM title line before the English original")
    body = [ln for ln in original.strip("\n").splitlines() if not _COMAP_BANNER.match(ln)]
    out = [*canary, *([""] if canary else []), "# Original Contest Problem", "", title, ""]
    out += ["## Official problem statement (COMAP, English original)", "", *body]
    return "\n".join(out).rstrip() + "\n"


def artifact_block(
    slug: str,
    schema: dict[str, Any],
    output_path: str,
    has_figures: bool,
    timeout_sec: int,
    verification: str = "",
) -> str:
    """The fixed block appended to every instruction (same wording for every task), plus
    the task's curated `verification.md` (how its decisions are replayed) when it has one."""
    figs = (
        f"- Figures of the statement, cropped from the official PDF: `{CONTAINER_DATA}/figures/` "
        "(each is shown inline above where the statement refers to it).\n"
        if has_figures
        else ""
    )
    return (
        "\n# Required Benchmark Artifact\n\n"
        "Solve the contest problem above in this terminal. You have no internet access.\n\n"
        f"- Official attachments: `{CONTAINER_DATA}/attachments/`\n"
        f"{figs}"
        f"- Artifact schema (field names and types): `{CONTAINER_DATA}/artifact_schema.json`\n"
        "- Scratch space: `/root/work`\n\n"
        "Write your final answer as ONE JSON object to:\n\n"
        f"```text\n{output_path}\n```\n\n"
        "It must be valid JSON (no NaN or Infinity) and follow this schema: every field is a number "
        "you computed (or, where the schema lists allowed ids, one of them), in the unit stated in "
        "the schema's description; a list holds as many entries as your answer needs, within the "
        "bounds its description states. Extra fields are allowed and ignored; missing fields score "
        "zero.\n\n"
        f"```json\n{json.dumps(schema, indent=2, ensure_ascii=False)}\n```\n\n"
        "Only this JSON file is scored. It is checked against the problem's constraints and "
        "against verified reference answers (values of award-winning papers where they hold up, "
        "otherwise answers computed or replayed by the benchmark). You may write supporting CSV, XLSX "
        f"or PNG files under `/root/results`. Time limit: {timeout_sec} seconds.\n"
        + (f"\n## How this answer is checked\n\n{verification.strip()}\n" if verification else "")
    )


def schema_from_map(amap: ArtifactMap) -> dict[str, Any]:
    """Field names -> types (plus unit/description text that is generic, never anchor-specific).

    A declared list is shown as a one-entry list whose entry describes every entry, preceded
    by a `"…": "list: min..max entries — description"` key on its parent so the bounds
    the statement sets (never the reference's own count) are visible."""
    schema: dict[str, Any] = {}
    for ls in amap.lists:
        parent, _, name = ls.path.replace("[*]", "[0]").rpartition(".")
        key = f"{name} (list)"
        desc = f"list of {ls.min_items} to {ls.max_items} entries — {ls.description}"
        # `key` is not a path token (it has a space and parentheses): create the parent
        # object, then set the key on it directly.
        if parent:
            try:
                node = resolve(schema, parent)
            except PathError:
                set_path(schema, parent, {})
                node = resolve(schema, parent)
        else:
            node = schema
        node[key] = desc
    for f in amap.field:
        kind = f"one of {', '.join(f.tags)}" if f.type == "tag" else f.type
        desc = kind + (f" [{f.unit}]" if f.unit else "") + f" — {f.description}"
        set_path(schema, f.path.replace("[*]", "[0]"), desc)
    return schema


def anchor_artifact(amap: ArtifactMap, source_doc: Any, where: str) -> dict[str, Any]:
    """The anchor's artifact picked from the source's expected_result.json by each field's
    `source` (a task whose reference is curated in reference.json does not come here)."""
    out: dict[str, Any] = {}
    for f in amap.field:
        if not f.source:
            raise BuildError(
                f"{where}: field {f.path} has no source: give the reference in reference.json"
            )
        try:
            node = resolve(source_doc, f.source)
        except PathError as exc:
            raise BuildError(f"{where}: field {f.path}: source {f.source}: {exc}") from exc
        if f.type == "list[number]":
            if not isinstance(node, list) or not all(isinstance(x, exact.Num) for x in node):
                raise BuildError(
                    f"{where}: field {f.path}: source {f.source} is not a list of finite numbers"
                )
        elif not isinstance(node, exact.Num):
            raise BuildError(
                f"{where}: field {f.path}: source {f.source} is not a finite number ({node!r})"
            )
        elif f.type == "integer" and node.value.denominator != 1:
            raise BuildError(f"{where}: field {f.path}: source value {node.text} is not an integer")
        set_path(out, f.path, node)
    return out


def reference_artifact(path: Path) -> dict[str, Any]:
    """A curated reference (`reference.json`: `{"artifact": {...}, ...}`), exact."""
    try:
        doc = exact.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BuildError(f"{path}: cannot parse: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("artifact"), dict):
        raise BuildError(f"{path}: field artifact: must be an object")
    if REPLAYED in doc["artifact"]:
        raise BuildError(f"{path}: the reference artifact must not carry `{REPLAYED}`")
    return doc["artifact"]


def with_replay(task: Task, artifact: dict[str, Any]) -> dict[str, Any]:
    """The anchor artifact plus its replayed values (a task with replay.toml), so the
    anchors of replayed metrics are what the reference's decisions achieve."""
    if task.replay_spec is None:
        return artifact
    from tbmm.replay import run_replay

    resolved, rep = run_replay(task, artifact)
    assert rep is not None
    if rep.status != "ok":
        raise BuildError(f"{task.dir}: the reference cannot be replayed: {rep.error}")
    return resolved


def provenance(source_doc: dict[str, Any], rel_source: str, sha: str) -> Provenance:
    def pick(*keys: str) -> str:
        for k in keys:
            v = source_doc.get(k)
            if isinstance(v, str) and v:
                return v
        return "unspecified"

    return Provenance(
        paper_id=pick("paper_id"),
        paper_title=pick("paper_title"),
        reproduction_level=pick("reproduction_level"),
        reproduction_scope=pick("reproduction_scope"),
        anchor_source=rel_source,
        anchor_sha256=sha,
    )


def task_toml(slug: str, suite: str, year: int, problem: str, title: str, output_path: str) -> str:
    """Harbor / Terminal-Bench task config (schema 1.x) with tbmm's limits."""
    return f"""# Generated by `tbmm tasks build`; do not edit.
schema_version = "1.3"
artifacts = ["{output_path}"]

[task]
name = "tbmm/{slug}"
description = "{suite} {year} {problem}: {title}"
keywords = ["math-modeling", "{suite.lower()}", "{year}", "problem-{problem.lower()}", "tb-mathmodel"]

[metadata]
author_name = "TB-MathModel"
difficulty = "hard"
category = "math-modeling"
tags = ["math-modeling", "{suite.lower()}", "{year}", "problem-{problem.lower()}"]
suite = "{suite}"
year = {year}
problem = "{problem}"

[verifier]
timeout_sec = 300.0
environment_mode = "separate"

[agent]
timeout_sec = 14400.0

[environment]
build_timeout_sec = 900.0
allow_internet = false
cpus = 2
memory_mb = 8192
storage_mb = 20480
gpus = 0
"""


def dockerfile() -> str:
    """The agent's image: Python 3.11 with the locked stack (tbmm.suite.stack). The lock is the
    sandbox venv's; a base whose venv already holds this exact lock (the offline base of
    `tbmm docker base`) skips the install, any other base installs it, hashes checked."""
    return f"""# Generated by `tbmm tasks build`; do not edit.
# The agent's environment: Python {PYTHON_MINOR} with the locked scientific stack
# (requirements.lock, every file hashed: the same lock as the sandbox's agent venv).
# TBMM_BASE is pinned by digest; offline, `tbmm docker base` builds an equivalent base
# from Debian packages and the same locked wheels, and the harness passes it here.
ARG TBMM_BASE={PYTHON_IMAGE}
FROM ${{TBMM_BASE}}
COPY requirements.lock /opt/tbmm/requirements.lock
RUN if cmp -s /opt/tbmm/requirements.lock /opt/tbmm/venv/requirements.lock; then \\
        echo "tbmm: the base image already holds the locked stack"; \\
    else \\
        python3 -m venv /opt/tbmm/venv \\
        && /opt/tbmm/venv/bin/pip install --no-cache-dir --no-deps --require-hashes \\
            --only-binary :all: -r /opt/tbmm/requirements.lock \\
        && cp /opt/tbmm/requirements.lock /opt/tbmm/venv/requirements.lock; \\
    fi
ENV PATH=/opt/tbmm/venv/bin:$PATH VIRTUAL_ENV=/opt/tbmm/venv
WORKDIR /root
COPY data /root/data
RUN mkdir -p /root/results /root/work
"""


def solve_sh(output_path: str, artifact_text: str) -> str:
    return (
        "#!/usr/bin/env bash\n"
        "# Generated by `tbmm tasks build`: the oracle writes the anchor reproduction's artifact.\n"
        "set -euo pipefail\n"
        f"mkdir -p {Path(output_path).parent}\n"
        f"cat > {output_path} <<'TBMM_ANCHOR_EOF'\n{artifact_text}TBMM_ANCHOR_EOF\n"
    )


def test_sh(slug: str, output_path: str) -> str:
    """Harbor's verifier entry point. It runs in the separate verifier environment that
    `tbmm export harbor` builds from `tests/Dockerfile` (tbmm with the task data and the
    Lean runtime in a venv), never in the agent's container."""
    return (
        "#!/usr/bin/env bash\n"
        "# Generated by `tbmm tasks build`: Harbor verifier entry point (separate verifier mode).\n"
        "# Runs in the verifier environment that `tbmm export harbor` builds from tests/Dockerfile\n"
        "# (tbmm, the task data and the Lean runtime); anchors, panels and gates are never in the\n"
        "# agent's container. Writes /logs/verifier/reward.json, reward.txt and verdict.json; no\n"
        "# reward file when verification gives no verdict (Harbor then records a verifier error).\n"
        "set -uo pipefail\n"
        f'exec "${{TBMM_PYTHON:-/opt/tbmm/bin/python}}" -m tbmm.integrations.harbor.reward --task {slug} '
        f"--artifact {output_path}\n"
    )


def build_task(src: Path, source_root: Path, out_root: Path) -> BuildResult:
    slug = src.name
    suite, year, problem = _slug_parts(slug)
    dst = out_root / suite / slug
    if not (dst / "artifact_map.toml").is_file():
        raise BuildError(f"{dst}: curated artifact_map.toml is missing (see tasks/FORMAT.md)")
    amap = load_model(dst / "artifact_map.toml", ArtifactMap)
    output_path = f"/root/results/{slug}_result.json"
    src_toml = tomllib.loads((src / "task.toml").read_text(encoding="utf-8"))
    title = src_toml["task"]["description"].split(":", 1)[-1].strip()

    # Attachments: every file under the source's data/repo, relative to their common folder.
    repo = src / "environment" / "data" / "repo"
    files = sorted(p for p in repo.rglob("*") if p.is_file())
    missing_path = dst / "missing_attachments.toml"
    missing = load_model(missing_path, MissingAttachments).missing if missing_path.is_file() else []
    if not files and not missing:
        raise BuildError(f"{src}: no attachments")
    base = _common_dir(files) if len(files) > 1 else files[0].parent
    att_dir = dst / "environment" / "data" / "attachments"
    if att_dir.exists():
        shutil.rmtree(att_dir)
    attachments: list[Attachment] = []
    for f in files:
        rel = f.relative_to(base)
        target = att_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
        attachments.append(
            Attachment(
                path=str(target.relative_to(dst)),
                bytes=f.stat().st_size,
                sha256=sha256_file(f),
                upstream=str(f.relative_to(source_root)),
                present=True,
            )
        )
    for m in missing:
        attachments.append(
            Attachment(
                path=f"environment/data/attachments/{m.path}",
                bytes=None,
                sha256=None,
                upstream=f"{m.upstream} <{m.url}>" + (f" member {m.member}" if m.member else ""),
                present=False,
                note="absent from the source release (>= 4 MiB upstream); size and sha256 unpublished; "
                "`tbmm tasks fetch-assets` downloads it where a network exists",
            )
        )

    # Held-out rows (split.toml): the agent's copy loses them, tests/heldout/ keeps them.
    heldout: list[HeldOut] = []
    split = load_split_spec(dst)
    held_dir = dst / HELDOUT_DIR
    if held_dir.exists():
        shutil.rmtree(held_dir)
    if split is not None:
        target = att_dir / split.attachment
        if not target.is_file():
            raise BuildError(f"{dst / 'split.toml'}: attachment {split.attachment} not found")
        try:
            res = split_workbook(target.read_bytes(), split)
        except (ValueError, KeyError) as exc:
            raise BuildError(f"{dst / 'split.toml'}: {exc}") from exc
        target.write_bytes(res.agent_xlsx)
        rel = str(target.relative_to(dst))
        attachments = [
            a.model_copy(
                update={
                    "bytes": len(res.agent_xlsx),
                    "sha256": sha256_file(target),
                    "note": f"sheet {split.sheet}: {res.heldout_rows} rows of "
                    f"{res.heldout_subjects} subjects held out (split.toml, seed {split.seed}; "
                    f"{split.heldout_path}); {res.kept_rows} rows of {res.kept_subjects} "
                    "subjects kept",
                }
            )
            if a.path == rel
            else a
            for a in attachments
        ]
        held_path = dst / split.heldout_path
        held_path.parent.mkdir(parents=True, exist_ok=True)
        held_path.write_text(res.heldout_csv, encoding="utf-8")
        heldout.append(
            HeldOut(
                path=split.heldout_path,
                bytes=held_path.stat().st_size,
                sha256=sha256_file(held_path),
                attachment=rel,
                sheet=split.sheet,
                rows=res.heldout_rows,
                subjects=res.heldout_subjects,
                seed=split.seed,
            )
        )

    # Figures.
    figures: list[Figure] = []
    statement = _statement((src / "instruction.md").read_text(encoding="utf-8"))
    fig_dir = dst / "environment" / "data" / "figures"
    if fig_dir.exists():
        shutil.rmtree(fig_dir)
    if (dst / "figures.toml").is_file():
        from tbmm.tooling import figures as figmod

        specs = figmod.load_figure_specs(dst)
        if specs is not None and specs.figures:
            pdf = repo / specs.pdf
            if not pdf.is_file():
                raise BuildError(f"{dst / 'figures.toml'}: field pdf: {pdf} does not exist")
            crops = figmod.crop_figures(pdf, specs.figures, fig_dir)
            for c in crops:
                figures.append(
                    Figure(
                        id=c.id,
                        path=str(Path(c.path).relative_to(dst)),
                        container_path=f"{CONTAINER_DATA}/figures/{c.id}.png",
                        page=c.page,
                        bbox=tuple(float(v) for v in c.bbox),  # type: ignore[arg-type]
                        caption=next(s.caption for s in specs.figures if s.id == c.id),
                        sha256=c.sha256,
                        width=c.width,
                        height=c.height,
                    )
                )
            statement = figmod.inline_figures(statement, specs.figures, f"{CONTAINER_DATA}/figures")

    # Schema, anchor, provenance.
    schema = schema_from_map(amap)
    src_expected = src / "tests" / "expected_result.json"
    source_doc = exact.loads(src_expected.read_text(encoding="utf-8"))
    reference = dst / "reference.json"
    if reference.is_file():
        artifact = reference_artifact(reference)
    else:
        artifact = anchor_artifact(amap, source_doc, str(dst / "artifact_map.toml"))
    oracle_text = exact.dumps(artifact) + "\n"
    prov = provenance(
        source_doc, str(src_expected.relative_to(source_root)), sha256_file(src_expected)
    )
    manifest = Manifest(
        slug=slug,
        suite=suite,  # type: ignore[arg-type]
        year=year,
        problem=problem,  # type: ignore[arg-type]
        title=title,
        output_path=output_path,
        attachments=attachments,
        figures=figures,
        provenance=prov,
        heldout=heldout,
    )
    artifact = with_replay(Task(dst, manifest), artifact)
    schema_text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    write_text_if_changed(dst / "artifact_schema.json", schema_text)
    write_text_if_changed(dst / "environment" / "data" / "artifact_schema.json", schema_text)
    write_text_if_changed(
        dst / "anchor.json",
        exact.dumps({"provenance": prov.model_dump(mode="json"), "artifact": artifact}) + "\n",
    )
    write_text_if_changed(
        dst / "manifest.json",
        json.dumps(
            manifest.model_dump(mode="json", exclude=None if heldout else {"heldout"}),
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
    )
    write_text_if_changed(
        dst / "task.toml", task_toml(slug, suite, year, problem, title, output_path)
    )
    write_text_if_changed(
        dst / "instruction.md",
        statement
        + artifact_block(
            slug,
            schema,
            output_path,
            bool(figures),
            14400,
            (dst / "verification.md").read_text(encoding="utf-8")
            if (dst / "verification.md").is_file()
            else "",
        ),
    )
    write_text_if_changed(dst / "environment" / "Dockerfile", dockerfile())
    write_text_if_changed(dst / "environment" / "requirements.lock", lock_text())
    write_text_if_changed(dst / "solution" / "solve.sh", solve_sh(output_path, oracle_text))
    write_text_if_changed(dst / "tests" / "test.sh", test_sh(slug, output_path))
    for sh in (dst / "solution" / "solve.sh", dst / "tests" / "test.sh"):
        sh.chmod(0o755)
    from tbmm.verdict.floor import write_floor

    write_floor(load_task(dst))  # after anchor.json: F and the naive floor are scored against it
    return BuildResult(
        slug,
        sum(a.present for a in attachments),
        sum(not a.present for a in attachments),
        len(figures),
        len(amap.field),
    )


def source_task_dirs(source_root: Path) -> list[Path]:
    tasks = source_root / "tasks"
    if not tasks.is_dir():
        raise BuildError(f"{source_root}: not a tbmm source release (no tasks/ folder)")
    return sorted(
        p
        for suite in sorted(tasks.iterdir())
        if suite.is_dir()
        for p in suite.glob("*")
        if p.is_dir()
    )


def build_all(
    source_root: Path = DEFAULT_SOURCE,
    out_root: Path = TASKS_ROOT,
    only: set[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[BuildResult]:
    results = []
    for src in source_task_dirs(source_root):
        if only and src.name not in only:
            continue
        if progress:
            progress(src.name)
        try:
            results.append(build_task(src, source_root, out_root))
        except TaskFormatError as exc:
            raise BuildError(str(exc)) from exc
    return results
