"""The package's layers point one way: a module never imports one of a higher layer.

Every ``import`` statement of every module counts, at the top or inside a function (a
lazy import is still a dependency), and so do imports for type checkers only. Layers of
the same rank (losses, models, data) do not import each other either.
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


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, node.module if node.module != "calibkit" else n) for n in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, m) for line, m in found if m == "calibkit" or m.startswith("calibkit.")]


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if p.parent != SRC or p.name not in ROOT_MODULES)


def test_every_module_is_in_a_layer() -> None:
    outside = [str(p.relative_to(SRC)) for p in _modules() if p.relative_to(SRC).parts[0] not in LAYERS]
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
