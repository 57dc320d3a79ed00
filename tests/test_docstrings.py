"""Every public function and class of the documented modules has numpydoc sections.

A public object is one defined in the module (not imported) whose name has no leading
underscore. Each needs an ``Examples`` section (run as a doctest by ``--doctest-modules``);
a callable that takes arguments needs ``Parameters``, a function returning something needs
``Returns``, and a dataclass with fields describes them under ``Attributes``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from types import ModuleType

import pytest

import calibkit.calibrators
from calibkit.core.params import Settings

DOCUMENTED = [
    "calibkit.metrics.streaming",
    "calibkit.metrics.bin_errors",
    "calibkit.metrics.binned",
    "calibkit.metrics.bootstrap",
    "calibkit.metrics.continuous",
    "calibkit.metrics.samples",
    "calibkit.metrics.scores",
    "calibkit.metrics.suite",
    "calibkit.metrics.evaluation",
    "calibkit.losses.basic",
    "calibkit.losses.focal",
    "calibkit.losses.penalties",
    "calibkit.workflows.compare",
    "calibkit.workflows.comparison",
]
CALIBRATOR_MODULES = sorted(
    f"calibkit.calibrators.{info.name}"
    for info in pkgutil.iter_modules(calibkit.calibrators.__path__)
    if not info.ispkg
)
VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def has_section(doc: str, title: str) -> bool:
    """Whether ``doc`` has a numpydoc section header ``title`` underlined with dashes."""
    return re.search(rf"^\s*{title}\n\s*-{{{len(title)}}}\s*$", doc, re.MULTILINE) is not None


def public_objects(module: ModuleType, classes_only: bool = False) -> list[tuple[str, object]]:
    """The functions and classes defined in ``module`` whose names are public."""
    found = []
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isclass(obj) or (inspect.isfunction(obj) and not classes_only):
            found.append((name, obj))
    return found


def missing_sections(obj: object) -> list[str]:
    """The numpydoc sections ``obj``'s own docstring lacks."""
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    required = ["Examples"]
    if inspect.isclass(obj) and issubclass(obj, Settings):
        required.append("Parameters")  # generated from the fields' param() declarations
    elif inspect.isclass(obj) and dataclasses.is_dataclass(obj):
        if dataclasses.fields(obj):
            required.append("Attributes")
    else:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
        params = [
            p for p in sig.parameters.values() if not (inspect.isclass(obj) and p.kind in VARIADIC)
        ]
        if params:
            required.append("Parameters")
        if inspect.isfunction(obj) and sig.return_annotation not in ("None", None, sig.empty):
            required.append("Returns")
    return [title for title in required if not has_section(doc, title)]


def check_module(name: str, classes_only: bool = False) -> None:
    module = importlib.import_module(name)
    objects = public_objects(module, classes_only)
    assert objects or classes_only, f"{name} has no public function or class"
    problems = [
        f"{obj_name}: no {', '.join(gaps)}"
        for obj_name, obj in objects
        if (gaps := missing_sections(obj))
    ]
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("name", DOCUMENTED)
def test_public_api_has_numpydoc_sections(name: str) -> None:
    check_module(name)


@pytest.mark.parametrize("name", CALIBRATOR_MODULES)
def test_calibrator_classes_have_numpydoc_sections(name: str) -> None:
    check_module(name, classes_only=True)


def test_section_detection() -> None:
    doc = inspect.cleandoc(
        """Summary.

        Parameters
        ----------
        x : int
            A number.

        Examples
        --------
        >>> 1
        1
        """
    )
    assert has_section(doc, "Parameters")
    assert has_section(doc, "Examples")
    assert not has_section(doc, "Returns")
    assert not has_section("Parameters\n---", "Parameters")


def test_missing_sections_are_reported() -> None:
    def undocumented(x: int) -> int:
        """Only a summary."""
        return x

    @dataclasses.dataclass
    class Record:
        """Only a summary."""

        value: int

    assert missing_sections(undocumented) == ["Examples", "Parameters", "Returns"]
    assert missing_sections(Record) == ["Examples", "Attributes"]
