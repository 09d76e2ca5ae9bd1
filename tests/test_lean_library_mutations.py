"""Library mutations (issue 21, item 2): a wrong meaning fails the build or the audit.

Each mutation of `tbmm.lean.mutations` gives one library definition a wrong meaning — a
comparator always true or always false, a swapped comparison, a gate form or the verdict
assembly accepting everything, a missing input scored, a name shadowing generated code —
in a temporary copy of the library (no certificates: the library must catch it alone).
`python -m tbmm.lean.mutations` prints the caught/total count quoted in the README.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tbmm.lean.build import project_root
from tbmm.lean.mutations import MUTATIONS, LibraryMutation, prepare, run

REPO = project_root(Path(__file__).resolve().parent)


def test_every_mutation_applies_to_the_library_once() -> None:
    """A mutation whose text the library no longer has would be a no-op, not a catch."""
    assert len({m.id for m in MUTATIONS}) == len(MUTATIONS)
    for m in MUTATIONS:
        assert (REPO / m.file).read_text().count(m.old) == 1, m.id
        assert m.old != m.new, m.id


def test_a_stale_mutation_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "X.lean").write_text("def x := 0\n")
    with pytest.raises(ValueError, match="occurs 0 times"):
        LibraryMutation("stale", "X.lean", "def y", "def z").apply(tmp_path)


def test_the_kinds_asked_for_are_all_there() -> None:
    kinds = Counter(m.id.rsplit("_", 1)[-1] for m in MUTATIONS)
    assert kinds["true"] >= 8 and kinds["false"] >= 2  # always-true / always-false
    assert sum("swapped" in m.id for m in MUTATIONS) >= 4
    assert sum(m.id.startswith("shadow") for m in MUTATIONS) >= 3


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare(tmp_path_factory.mktemp("mut"), REPO)


@pytest.mark.slow
@pytest.mark.parametrize("m", MUTATIONS, ids=[m.id for m in MUTATIONS])
def test_library_mutation_is_caught(m: LibraryMutation, base: Path, tmp_path: Path) -> None:
    out = run(m, base, tmp_path)
    assert out.caught, (m.id, out.detail)
