"""The package's public API: every exported name resolves (the catalogued calibrators
too), ``dir`` lists only those; py.typed ships."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import calibkit


@pytest.mark.parametrize("name", calibkit.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(calibkit, name) is not None


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        calibkit.no_such_thing  # noqa: B018


def test_py_typed_ships() -> None:
    assert (Path(calibkit.__file__).parent / "py.typed").exists()


def test_dir_shows_the_public_names_only() -> None:
    # in a fresh interpreter: no test has loaded a name or a submodule yet
    code = "import calibkit, calibkit.metrics; calibkit.ece; print(dir(calibkit))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    shown = ast.literal_eval(out.stdout.strip())
    assert shown == sorted([*calibkit.__all__, "__version__"])


def test_every_catalogued_class_is_public() -> None:
    """A calibrator declared in the catalog is ``calibkit.X`` and ``calibkit.calibrators.X``
    with no other line (issue #45, item 1)."""
    import calibkit.calibrators
    from calibkit.core.catalog import ENTRIES

    for name, entry in ENTRIES.items():
        klass = calibkit.calibrators.CALIBRATORS.get(name)
        if entry.exported:
            assert getattr(calibkit, entry.class_name) is klass
            assert entry.class_name in calibkit.calibrators.__all__
        else:
            assert entry.class_name not in calibkit.__all__


@pytest.mark.parametrize(
    "package",
    ["calibkit.metrics", "calibkit.calibrators", "calibkit.workflows", "calibkit.reporting"],
)
def test_every_public_name_of_a_layer_resolves_at_the_root(package: str) -> None:
    module = importlib.import_module(package)
    missing = sorted(set(module.__all__) - set(calibkit.__all__))
    assert not missing, f"{package}.__all__ names missing at calibkit.: {missing}"
    for name in module.__all__:
        assert getattr(calibkit, name) is getattr(module, name)


def test_the_workflow_functions_named_like_their_modules_are_at_the_root() -> None:
    from calibkit.workflows.compare import compare
    from calibkit.workflows.label_shift import label_shift

    assert calibkit.compare is compare
    assert calibkit.label_shift is label_shift


def test_the_new_entry_points_resolve_at_the_root() -> None:
    for name in (
        "ConformalClassifier",
        "PriorShiftAdapter",
        "PostHoc",
        "load",
        "evaluate_groups",
        "calibration_tests",
        "spiegelhalter_test",
        "aurc",
        "risk_at_coverage",
        "ece_sweep",
        "BiasCorrectedTemperatureScaling",
        "GroupwiseTemperatureScaling",
        "Multicalibration",
        "adapt_priors",
        "estimate_priors_em",
    ):
        assert name in calibkit.__all__
        assert getattr(calibkit, name) is not None


def test_the_names_of_before_0_1_0_are_gone() -> None:
    """Issue #45, item 4: no user had the unreleased names, so no alias keeps them: the
    factory's old name and the calibrator modules' paths before the split by kind."""
    calibrators = importlib.import_module("calibkit.calibrators")
    for package in (calibkit, calibrators):
        with pytest.raises(AttributeError, match="get_calibrator"):
            package.get_calibrator  # noqa: B018
    with pytest.raises(ModuleNotFoundError, match=r"calibkit\.calibrators\.temperature"):
        importlib.import_module("calibkit.calibrators.temperature")
    assert not [f for f in sys.meta_path if type(f).__module__.startswith("calibkit")]
