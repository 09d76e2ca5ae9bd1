"""Every base image of a Harbor export is pinned by digest (`harbor lint --select ALL`
flags a FROM that is not), and README and `tbmm export harbor --help` name the images the
export really writes. Exported with a prepared wheelhouse (no download): a stand-in wheel
holding only what the export checks, the exported task's scoring data."""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tbmm.cli.root import app
from tbmm.integrations.harbor import export as hx
from tbmm.suite.stack import PYTHON_IMAGE
from tbmm.suite.tasks import Task, load_suite

from .conftest import REPO

DIGEST = "@sha256:" + "ab" * 32


def from_images(dockerfile: str) -> list[str]:
    """The image of every FROM, `${ARG}`/`$ARG` replaced by the ARG's default (as the build
    resolves it when no --build-arg is given), flags (`--platform=`) and `AS name` left out."""
    args: dict[str, str] = {}
    out = []
    for line in dockerfile.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0].upper() == "ARG" and len(words) > 1:
            name, _, default = words[1].partition("=")
            args[name] = default
        elif words[0].upper() == "FROM":
            image = next(w for w in words[1:] if not w.startswith("--"))
            out.append(
                re.sub(
                    r"\$\{(\w+)\}|\$(\w+)",
                    lambda m: args.get(m.group(1) or m.group(2), ""),
                    image,
                )
            )
    return out


def test_the_pin_check_sees_through_args_and_flags() -> None:
    assert from_images(f"ARG B=python:3.11{DIGEST}\nFROM ${{B}}\n") == [f"python:3.11{DIGEST}"]
    assert from_images("ARG B=python:3.11\nFROM $B\n") == ["python:3.11"]
    assert from_images("FROM --platform=linux/amd64 python:3.11 AS build\n") == ["python:3.11"]
    assert hx.digest_pinned(f"python:3.11{DIGEST}")
    for loose in ("python:3.11", "python:3.11@sha256:abc", f"python:3.11{DIGEST}x", ""):
        assert not hx.digest_pinned(loose), loose


def _wheelhouse(tmp: Path, tasks: list[Task]) -> Path:
    wh = tmp / "wh"
    wh.mkdir()
    wheel = wh / "tbmm-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for t in tasks:
            base = f"tbmm/_data/tasks/{t.suite}/{t.slug}"
            zf.writestr(f"{base}/task.toml", (t.dir / "task.toml").read_bytes())
            for f in hx.SCORING_FILES:
                if (t.dir / f).is_file():
                    zf.writestr(f"{base}/{f}", (t.dir / f).read_bytes())
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (wh / "requirements.txt").write_text(f"tbmm @ file:///x/{wheel.name} --hash=sha256:{sha}\n")
    return wh


@pytest.fixture(scope="module")
def two_tasks() -> list[Task]:
    suite = [t for t in load_suite() if not t.incomplete]
    return [suite[0], suite[-1]]


@pytest.mark.slow
def test_every_from_of_a_default_export_is_digest_pinned(
    two_tasks: list[Task], tmp_path: Path
) -> None:
    out = tmp_path / "ds"
    hx.export_harbor(out, two_tasks, wheelhouse=_wheelhouse(tmp_path, two_tasks))
    dockerfiles = sorted(out.rglob("Dockerfile"))
    assert len(dockerfiles) == 2 * len(two_tasks)  # agent's and verifier's, per task
    for d in dockerfiles:
        images = from_images(d.read_text(encoding="utf-8"))
        assert images and all(hx.digest_pinned(i) for i in images), (d, images)
    assert hx.DEFAULT_VERIFIER_BASE == PYTHON_IMAGE
    assert PYTHON_IMAGE in (out / "dataset.toml").read_text()


@pytest.mark.slow
def test_an_unpinned_image_given_on_the_command_line_gets_a_note(
    two_tasks: list[Task], tmp_path: Path
) -> None:
    t = two_tasks[0]
    args = ["export", "harbor", str(tmp_path / "ds"), "--tasks", t.slug]
    args += ["--wheelhouse", str(_wheelhouse(tmp_path, [t]))]
    r = CliRunner().invoke(app, [*args, "--verifier-base", "python:3.11-slim-bookworm"])
    assert r.exit_code == 0, r.output
    assert "--verifier-base python:3.11-slim-bookworm is not pinned by digest" in r.stderr
    assert "--agent-image" not in r.stderr
    r = CliRunner().invoke(app, [*args, "--force"])
    assert r.exit_code == 0 and "not pinned" not in r.stderr, r.output


def test_readme_and_help_name_the_images_the_export_writes() -> None:
    """Every Python image tag README's export paragraph and `export harbor --help` mention is
    the one of tbmm.suite.stack.PYTHON_IMAGE (which the export writes, pinned), and the help's
    default for --verifier-base is that pinned reference."""
    tag = PYTHON_IMAGE.rsplit("/", 1)[-1].split("@")[0]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    para = readme[readme.index("The export (a folder `harbor run -p` reads)") :]
    para = para[: para.index("\n\n")]
    r = CliRunner().invoke(app, ["export", "harbor", "--help"], terminal_width=200)
    assert r.exit_code == 0
    for where, text in (("README", para), ("--help", r.stdout)):
        named = set(re.findall(r"python:\d[\w.\-]*", text))
        assert named == {tag}, (where, named)
    assert "pinned by digest" in para and "pinned by digest" in r.stdout
    from typer.main import get_command

    cmd = get_command(app).get_command(None, "export").get_command(None, "harbor")  # type: ignore[union-attr,arg-type]
    defaults = {p.name: p.default for p in cmd.params}
    assert defaults["verifier_base"] == PYTHON_IMAGE and hx.digest_pinned(PYTHON_IMAGE)
