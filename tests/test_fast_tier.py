"""The fast tier (`uv run pytest -m "not slow"`, README) still touches every module.

Marking a test `slow` takes it out of the day-to-day tier; if the last fast test of a module
went that way, a change breaking that module would pass the fast tier unnoticed. This reads
the test files (no import, no collection): a module of `py/tbmm` or `harness` counts as
covered when a test file with at least one fast test imports it at module level, or a fast
test (or a fixture) imports it itself, directly or through a helper module of `tests/`."""

from __future__ import annotations

import ast
from pathlib import Path

from .conftest import REPO

TESTS = REPO / "tests"
PACKAGES = {"tbmm": REPO / "py" / "tbmm", "harness": REPO / "harness"}


def package_modules() -> set[str]:
    """Dotted names of every module of the two packages (a package's __init__ by its name;
    a `__main__` is only ever run, by `python -m`: tests/test_entry_points.py runs it)."""
    out = set()
    for top, root in PACKAGES.items():
        for f in root.rglob("*.py"):
            parts = [top, *f.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__main__":
                continue
            if parts[-1] == "__init__":
                parts.pop()
            out.add(".".join(parts))
    return out


def _is_slow(node: ast.expr) -> bool:
    """`pytest.mark.slow` (or a list/tuple holding it)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_slow(e) for e in node.elts)
    return ast.unparse(node) in ("pytest.mark.slow", "mark.slow")


def _imports(nodes: list[ast.AST], here: str) -> set[str]:
    """Modules named by the import statements under `nodes` (a `from X import y` counts X and,
    when X.y is a module, X.y too; relative imports resolve against `here`)."""
    out: set[str] = set()
    for top in nodes:
        for node in ast.walk(top):
            if isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = here.split(".")[: -node.level]
                    base = ".".join([*pkg, base] if base else pkg)
                parts = base.split(".")
                out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
                out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _defs(tree: ast.Module) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Every top-level function and method with whether a decorator (its own or its class's)
    marks it slow."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node, any(_is_slow(d) for d in node.decorator_list)))
        elif isinstance(node, ast.ClassDef):
            cls_slow = any(_is_slow(d) for d in node.decorator_list)
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    slow = cls_slow or any(_is_slow(d) for d in sub.decorator_list)
                    out.append((sub, slow))
    return out


def fast_imports(test_file: Path, seen: set[Path] | None = None) -> set[str]:
    """What the fast tests of `test_file` import (with the `tests/` helpers they use)."""
    seen = seen if seen is not None else set()
    if test_file in seen:
        return set()
    seen.add(test_file)
    here = "tests." + test_file.stem
    tree = ast.parse(test_file.read_text(encoding="utf-8"))
    module_slow = any(
        isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
        and _is_slow(n.value)
        for n in tree.body
    )
    defs = _defs(tree)
    is_test_file = test_file.name.startswith("test_")
    fast_tests = [
        f for f, slow in defs if f.name.startswith("test_") and not slow and not module_slow
    ]
    if is_test_file and not fast_tests:
        return set()
    # module-level statements, and every function but the slow tests (fixtures and helpers
    # serve the fast tests too)
    top = [
        n
        for n in tree.body
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    funcs = [f for f, slow in defs if not (slow or (module_slow and f.name.startswith("test_")))]
    found = _imports([*top, *funcs], here)
    for name in sorted(found):
        if name.startswith("tests.") and name != "tests.conftest":
            helper = TESTS / (name.split(".", 1)[1].replace(".", "/") + ".py")
            if helper.is_file():
                found |= fast_imports(helper, seen)
    return found


def module_level_imports(module: str) -> set[str]:
    """What importing `module` imports in turn: its module-level import statements (those
    under `if TYPE_CHECKING:` run for the type checker only and do not count), and modules
    it names in a string (a lazy import by name: `tbmm.cli.root` loads `tbmm.cli.lean` that way
    when a test runs `tbmm lean`)."""
    top, _, rest = module.partition(".")
    root = PACKAGES[top]
    path = root.joinpath(*rest.split(".")) if rest else root
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module if path.name == "__init__.py" else module.rpartition(".")[0]
    nodes: list[ast.AST] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # runs when called, not on import
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            todo.extend(n.orelse)
            continue
        if isinstance(n, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for sub in getattr(n, field, []):
                    todo.extend(sub.body if isinstance(sub, ast.ExceptHandler) else [sub])
            continue
        nodes.append(n)
    named = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    # `here + "._"` so that a level-1 relative import resolves against the package itself
    return _imports(nodes, here + "._") | named


def covered_by_fast_tests() -> set[str]:
    """The modules the fast tests import, closed under what importing a module imports."""
    modules = package_modules()
    found: set[str] = set()
    for f in sorted(TESTS.glob("test_*.py")):
        found |= fast_imports(f)
    todo = sorted(found & modules)
    covered = set(todo)
    while todo:
        for dep in module_level_imports(todo.pop()) & modules:
            if dep not in covered:
                covered.add(dep)
                todo.append(dep)
    return covered


def test_every_module_is_imported_by_a_fast_test() -> None:
    modules = package_modules()
    assert "tbmm.verdict.scoring" in modules and "harness.runs.runner" in modules  # the walk found them
    missing = sorted(modules - covered_by_fast_tests())
    assert not missing, f"no fast test imports these modules (mark fewer tests slow): {missing}"


def test_the_check_sees_slow_marks(tmp_path: Path) -> None:
    """A module imported only by a slow test, or only inside one, is not covered; a fixture
    or a fast test importing it is."""
    f = tmp_path / "test_x.py"
    f.write_text(
        "import pytest\n"
        "from tbmm import a\n"
        "pytestmark = pytest.mark.slow\n"
        "def test_one():\n    import tbmm.b\n"
    )
    assert fast_imports(f) == set()
    f.write_text(
        "import pytest\n"
        "from tbmm import a\n"
        "@pytest.mark.slow\n"
        "def test_slow():\n    import tbmm.b\n"
        "@pytest.fixture\n"
        "def fx():\n    from tbmm.c import thing\n"
        "def test_fast(fx):\n    pass\n"
    )
    got = fast_imports(f)
    assert {"tbmm.a", "tbmm.c"} <= got and "tbmm.b" not in got
    f.write_text(
        "import pytest\n"
        "from tbmm import a\n"
        "@pytest.mark.slow\n"
        "class TestAll:\n    def test_x(self):\n        pass\n"
    )
    assert fast_imports(f) == set()
