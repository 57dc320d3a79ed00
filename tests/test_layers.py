"""The package's layers point one way: a module never imports one of a higher layer.

Every ``import`` statement of every module counts, at the top or inside a function (a
lazy import is still a dependency), relative ones too, and so do imports for type checkers
only. Layers of the same rank (losses, models, data) do not import each other either, and
inside a layer the modules import each other without a cycle (a cycle means two concepts
that cannot be read apart).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import calibkit

SRC = Path(calibkit.__file__).parent
#: Layer -> rank, lowest first (the README's "How the code is laid out").
LAYERS = {
    "core": 0,
    "io": 1,
    "metrics": 2,
    "losses": 3,
    "calibrators": 4,
    "models": 5,
    "data": 5,
    "training": 6,
    "workflows": 7,
    "reporting": 8,
    "study": 9,
    "cli": 10,
}
#: Modules outside the layers: the lazy package root and ``python -m calibkit``.
ROOT_MODULES = ("__init__.py", "__main__.py")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "calibkit" else None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every ``calibkit`` module or name ``path`` imports, with its line."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    return imports_in(path.read_text(encoding="utf-8"), package)


def imports_in(text: str, package: str) -> list[tuple[int, str]]:
    """Every ``calibkit`` module or name the source ``text`` of a module of ``package``
    imports, with its line (relative imports resolved against ``package``).

    >>> imports_in("from ..cli import main\\nfrom .config import X", "calibkit.study")
    [(1, 'calibkit.cli.main'), (2, 'calibkit.study.config.X')]
    """
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*up, *([node.module] if node.module else [])])
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in found if m == "calibkit" or m.startswith("calibkit.")]


def _graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (a name imported from a module counts as
    that module)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for _, target in _imports(path):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm).

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if p.parent != SRC or p.name not in ROOT_MODULES)


def test_every_module_is_in_a_layer() -> None:
    outside = [
        str(p.relative_to(SRC)) for p in _modules() if p.relative_to(SRC).parts[0] not in LAYERS
    ]
    assert outside == []


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_import(path: Path) -> None:
    own = path.relative_to(SRC).parts[0]
    bad = []
    for line, module in _imports(path):
        other = _layer(module)
        if other is None:
            bad.append(f"line {line}: {module} (the package root: import the module itself)")
        elif other != own and LAYERS.get(other, 99) >= LAYERS[own]:
            bad.append(f"line {line}: {module} ({other} is not below {own})")
    assert bad == [], f"{path.relative_to(SRC)} imports upward"


def test_readme_lists_the_layers_in_order() -> None:
    readme = (SRC.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    listed = [
        name
        for line in section.splitlines()
        if line.startswith("- `")
        for name in (p.strip("`/,: ") for p in line[2:].split(":")[0].split(","))
    ]
    assert listed == sorted(LAYERS, key=lambda name: (LAYERS[name], listed.index(name)))
    assert set(listed) == set(LAYERS)


def test_no_import_cycle() -> None:
    """Lazy and type-checking imports count: a cycle is a cycle however it is spelled."""
    assert cycles(_graph()) == []


def test_relative_imports_are_read() -> None:
    """A relative import counts like the absolute one (so it cannot hide an upward edge)."""
    found = imports_in("from ..cli import main\nfrom . import config\n", "calibkit.study")
    assert found == [(1, "calibkit.cli.main"), (2, "calibkit.study.config")]
    assert "calibkit.cli" in {m.rsplit(".", 1)[0] for _, m in found}
    assert cycles({"calibkit.a": {"calibkit.b"}, "calibkit.b": {"calibkit.a"}}) != []
