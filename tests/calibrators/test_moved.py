"""The calibrator modules' paths before ``calibrators/`` was split by kind still import:
the same module object (no class registered twice), with a DeprecationWarning."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import calibkit.calibrators as calibrators
from calibkit.calibrators import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_imports_the_module_at_its_new_place(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is new
    assert module.__spec__ is not None
    assert module.__spec__.name == MOVED[old]  # its own spec, not the alias's


def test_every_moved_module_exists_at_its_new_place() -> None:
    for new in MOVED.values():
        assert importlib.util.find_spec(new) is not None, new


def test_an_old_submodule_of_a_moved_package_is_not_loaded_twice() -> None:
    code = (
        "import warnings; warnings.simplefilter('ignore')\n"
        "from calibkit.calibrators.clamping.model import NeuralClamping as a\n"
        "from calibkit.calibrators.model.clamping.model import NeuralClamping as b\n"
        "import calibkit.calibrators.clamping.registry\n"  # registers nc_* once
        "print(a is b)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_an_old_module_is_an_attribute_too() -> None:
    sys.modules.pop("calibkit.calibrators.temperature", None)
    with pytest.warns(DeprecationWarning, match="calibkit.calibrators.temperature moved"):
        module = calibrators.__getattr__("temperature")
    assert module is importlib.import_module("calibkit.calibrators.logit.temperature")
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        calibrators.__getattr__("nothing")


def test_the_new_paths_import_without_a_warning() -> None:
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import calibkit, calibkit.calibrators\n"
        + "".join(f"import {new}\n" for new in MOVED.values())
        + "calibkit.ConformalClassifier; calibkit.PriorShiftAdapter; calibkit.NeuralClamping"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
