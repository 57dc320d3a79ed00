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
#: Layer -> rank, lowest first (docs/layout.md, "How the code is laid out").
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
#: The sub-layers of ``study`` -> rank, lowest first (docs/layout.md's "How the code is laid
#: out"): what a study is, what it keeps on disk, running it, its report. ``run`` and
#: ``report`` share a rank: the report reads the store, never the runner, and the runner
#: writes no report (``calibkit.study.run_study``, the package root, joins them).
STUDY_LAYERS = {"definition": 0, "store": 1, "run": 2, "report": 2}
#: Where a study's file names are spelled (:class:`~calibkit.study.store.run_folder.RunFolder`
#: and the study folder's record).
STORE = SRC / "study" / "store"
#: The sources besides the library that use run folders (their tests may name the files).
USERS = [SRC.parents[1] / d for d in ("experiments", "scripts", "benchmarks")]


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


def test_the_map_lists_the_layers_in_order() -> None:
    layout = (SRC.parents[1] / "docs" / "layout.md").read_text(encoding="utf-8")
    section = layout.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
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


def _study_modules() -> list[Path]:
    return sorted(p for p in (SRC / "study").rglob("*.py") if p != SRC / "study" / "__init__.py")


def test_every_study_module_is_in_a_sub_layer() -> None:
    outside = [
        str(p.relative_to(SRC))
        for p in _study_modules()
        if p.relative_to(SRC / "study").parts[0] not in STUDY_LAYERS
    ]
    assert outside == []


def study_upward(path: Path, imports: list[tuple[int, str]]) -> list[str]:
    """The imports of the study module ``path`` that run up (or across) its sub-layers:
    another sub-layer of the same or a higher rank, or the ``calibkit.study`` root."""
    own = path.relative_to(SRC / "study").parts[0]
    bad = []
    for line, module in imports:
        parts = module.split(".")
        if parts[:2] != ["calibkit", "study"]:
            continue
        other = parts[2] if len(parts) > 2 else ""
        if other not in STUDY_LAYERS:
            bad.append(f"line {line}: {module} (the study root: import the sub-layer's module)")
        elif other != own and STUDY_LAYERS[other] >= STUDY_LAYERS[own]:
            bad.append(f"line {line}: {module} (study.{other} is not below study.{own})")
    return bad


@pytest.mark.parametrize("path", _study_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_import_between_study_sub_layers(path: Path) -> None:
    assert study_upward(path, _imports(path)) == [], f"{path.relative_to(SRC)} imports upward"


def test_the_study_rank_test_can_fail() -> None:
    """A store importing the runner, a definition importing the store, and the report
    importing the runner are each caught."""
    study = SRC / "study"
    cases = {
        study / "store" / "x.py": "from calibkit.study.run.runner import StudyRuns",
        study / "definition" / "x.py": "from ..store.run_folder import RunFolder",
        study / "report" / "x.py": "import calibkit.study.run.units",
        study / "run" / "x.py": "from calibkit.study import run_study",
    }
    for path, text in cases.items():
        package = ".".join(["calibkit", "study", path.parent.name])
        assert study_upward(path, imports_in(text, package)) != [], text


def test_the_map_lists_the_study_sub_layers_in_order() -> None:
    layout = (SRC.parents[1] / "docs" / "layout.md").read_text(encoding="utf-8")
    section = layout.split("## How the code is laid out", 1)[1].split("\n## ", 1)[0]
    listed = [
        line.split("`study/", 1)[1].split("/`", 1)[0]
        for line in section.splitlines()
        if line.startswith("  - `study/")
    ]
    assert listed == sorted(STUDY_LAYERS, key=lambda n: (STUDY_LAYERS[n], listed.index(n)))
    assert set(listed) == set(STUDY_LAYERS)


#: The sub-layers of ``calibrators`` -> rank (docs/layout.md, "How the code is laid out"):
#: the contract and the export modules (the modules at its top), the calibrators of logits,
#: the kinds built on them, and the scikit-learn wrapper over all of them.
CALIBRATOR_LAYERS = {
    "": 0,
    "logit": 1,
    "groups": 2,
    "model": 2,
    "sets": 2,
    "priors": 2,
    "sklearn_wrapper": 3,
}


def _calibrator_layer(parts: list[str]) -> str:
    """The sub-layer of ``calibkit.calibrators.<parts>`` (a top module or name: ``""``)."""
    head = parts[0] if parts else ""
    return head if head in CALIBRATOR_LAYERS else ""


def calibrators_upward(path: Path, imports: list[tuple[int, str]]) -> list[str]:
    """The imports of the calibrators module ``path`` that run up or across its sub-layers
    (the package root ``calibkit.calibrators`` imports every kind: it is the only exception)."""
    own = _calibrator_layer(list(path.relative_to(SRC / "calibrators").with_suffix("").parts))
    bad = []
    for line, module in imports:
        parts = module.split(".")
        if parts[:2] != ["calibkit", "calibrators"]:
            continue
        other = _calibrator_layer(parts[2:])
        if other != own and CALIBRATOR_LAYERS[other] >= CALIBRATOR_LAYERS[own]:
            bad.append(f"line {line}: {module} (calibrators.{other or '<top>'} is not below {own})")
    return bad


def _calibrator_modules() -> list[Path]:
    root = SRC / "calibrators" / "__init__.py"
    return sorted(p for p in (SRC / "calibrators").rglob("*.py") if p != root)


@pytest.mark.parametrize("path", _calibrator_modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_upward_import_between_calibrator_kinds(path: Path) -> None:
    assert calibrators_upward(path, _imports(path)) == [], f"{path.relative_to(SRC)} imports upward"


def test_the_calibrator_rank_test_can_fail() -> None:
    """The contract importing a kind, a kind importing another, and a calibrator of logits
    importing a kind built on them are each caught."""
    cal = SRC / "calibrators"
    cases = {
        cal / "fitted.py": "from calibkit.calibrators.logit.temperature import TemperatureScaling",
        cal / "sets" / "x.py": "from calibkit.calibrators.priors.label_shift import adapt_priors",
        cal / "logit" / "x.py": "from ..groups.groupwise import Multicalibration",
        cal / "groups" / "x.py": "from calibkit.calibrators.sklearn_wrapper import KINDS",
    }
    for path, text in cases.items():
        package = ".".join(["calibkit", *path.parent.relative_to(SRC.parent).parts[1:]])
        assert calibrators_upward(path, imports_in(text, package)) != [], text


def test_every_calibrator_folder_is_a_sub_layer() -> None:
    folders = {
        p.name for p in (SRC / "calibrators").iterdir() if p.is_dir() and p.name != "__pycache__"
    }
    assert folders == {name for name in CALIBRATOR_LAYERS if name and name != "sklearn_wrapper"}


def run_folder_names() -> tuple[str, ...]:
    """The names only the store may spell: every file of a run folder, the prefix of an
    input calibrator's, and the study folder's record."""
    from calibkit.study.store.folder import RECORD
    from calibkit.study.store.run_folder import RunFolder

    return (*RunFolder.FILES, "clamping-", RECORD)


def spelled_names(text: str, names: tuple[str, ...]) -> list[tuple[int, str]]:
    """The string literals of the source ``text`` (docstrings aside, f-strings' parts
    included) that hold one of ``names``, with their lines.

    >>> spelled_names("'''About train.json.'''\\np = f'seed-{s}/train.json'", ("train.json",))
    [(2, '/train.json')]
    """
    tree = ast.parse(text)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and any(name in node.value for name in names)
    ]


def _sources_outside_the_store() -> list[Path]:
    found = [p for p in SRC.rglob("*.py") if STORE not in p.parents]
    for folder in USERS:
        found += [p for p in folder.rglob("*.py") if not p.name.startswith("test_")]
    return sorted(found)


def test_only_the_store_spells_a_run_folder_file_name() -> None:
    """One source of truth for a run folder's files: every other module asks
    :class:`~calibkit.study.store.run_folder.RunFolder` (its tests may name them)."""
    names = run_folder_names()
    spelled = {
        str(p.relative_to(SRC.parents[1])): found
        for p in _sources_outside_the_store()
        if (found := spelled_names(p.read_text(encoding="utf-8"), names))
    }
    assert spelled == {}
    inside = [p for p in STORE.rglob("*.py") if spelled_names(p.read_text("utf-8"), names)]
    assert inside != []  # the names are where the test looks for them
