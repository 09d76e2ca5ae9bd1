"""The package layout shows the pipeline: every import points down the layer order.

Layers, lowest first (README, "Architecture"). A module may import its own layer or any
lower one, at module level or inside a function (a lazy import is still a dependency).
The check reads the source with `ast`, so it sees imports that a test run never executes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (layer name, module prefixes); the longest matching prefix decides a module's layer
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("tbmm.core",)),
    ("suite", ("tbmm.suite",)),
    ("replay", ("tbmm.replay",)),
    ("verdict", ("tbmm.verdict",)),
    ("lean", ("tbmm.lean",)),
    ("public API", ("tbmm", "tbmm.verify", "tbmm.api", "tbmm.rewards")),
    ("integrations", ("tbmm.integrations",)),
    ("harness: sandbox", ("harness", "harness.sandbox")),
    ("harness: agents", ("harness.agents",)),
    ("harness: runs", ("harness.runs", "harness.testing")),
    ("harness: Harbor", ("harness.harbor",)),
    ("reports", ("tbmm.reports",)),
    ("tooling", ("tbmm.tooling",)),
    ("cli", ("tbmm.cli", "harness.cli")),
]
RANK = {prefix: i for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}


def layer(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        rank = RANK.get(".".join(parts[:n]))
        if rank is not None:
            return rank
    raise KeyError(module)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for base, top in ((ROOT / "py" / "tbmm", "tbmm"), (ROOT / "harness", "harness")):
        for path in sorted(base.rglob("*.py")):
            parts = [top, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _at_import(tree: ast.Module) -> list[ast.AST]:
    """The nodes run when the module is imported: not function bodies, not `if TYPE_CHECKING`."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def imports(name: str, path: Path, known: set[str], *, lazy: bool = True) -> set[str]:
    """Every project module `name` imports: anywhere in its code, or (`lazy=False`) only
    what runs when it is imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree) if lazy else _at_import(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def test_every_module_has_a_layer() -> None:
    for name in modules():
        layer(name)


def test_imports_point_down() -> None:
    found = modules()
    known = set(found)
    upward = []
    for name, path in found.items():
        for target in imports(name, path, known):
            if target in name.split(".") or name.startswith(target + "."):
                continue  # a package's own __init__ (imported with any submodule)
            if layer(target) > layer(name):
                upward.append(
                    f"{name} ({LAYERS[layer(name)][0]}) imports {target} "
                    f"({LAYERS[layer(target)][0]})"
                )
    assert not upward, "imports pointing up the layers:\n" + "\n".join(sorted(upward))


def test_no_import_cycles_at_import_time() -> None:
    """Within a layer a function may import a sibling lazily (the naive floor scores its
    answers with the scoring that reads the floor); what runs at import has no cycle."""
    found = modules()
    known = set(found)
    graph = {n: imports(n, p, known, lazy=False) for n, p in found.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if n.startswith(m + "."):
                continue  # the package's __init__
            if state.get(m) == 1:
                cycle = stack[stack.index(m) :] + [m]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
