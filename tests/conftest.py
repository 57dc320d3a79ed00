"""Shared test fixtures: where the real data beside the repository lives, and the shipped
study configs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

#: ``../shared/data`` relative to the repository root (override with CALIBKIT_SHARED_DATA).
SHARED_DATA = Path(
    os.environ.get("CALIBKIT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)

#: Every shipped study config: ``configs/*.toml`` of each reproduction in ``experiments/``.
SHIPPED_CONFIGS = sorted(
    (Path(__file__).resolve().parents[1] / "experiments").glob("*/configs/*.toml")
)


def shared_path(relative: str) -> Path:
    """Path of a file under ../shared/data, skipping the test with a reason when it is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent (../shared/data beside the repo)")
    return path


@pytest.fixture
def shared_data() -> Path:
    """The ../shared/data folder; skips the test with a reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"real data not available: {SHARED_DATA} is absent (../shared/data beside the repo)"
        )
    return SHARED_DATA


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One torch thread and a fixed seed for the test, restored afterwards.

    Bit-identical results need a fixed thread count, and the tests share busy cores. Modules
    that train or fit models use it with ``pytestmark = pytest.mark.usefixtures("one_thread")``.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _neural_clamping_in_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neural Clamping's ``precision="auto"`` picks bfloat16 on CPUs that compute it natively;
    the tests pin it to float32 so that they check the same numbers on every CPU (the choice
    itself is tested in tests/core/test_precision.py and tests/calibrators/model/clamping)."""
    monkeypatch.setattr(
        "calibkit.calibrators.model.clamping.settings.fastest_precision", lambda device: "float32"
    )


#: The integration tier (marker ``integration``; ``scripts/test.sh`` runs it after the unit
#: tier): the tests of these paths (relative to the repository root) build, package, run
#: whole commands, studies and executors, or every block of the documents. Every other test
#: is a unit test of the module it mirrors (a parametrization may join the tier with
#: ``pytest.param(..., marks=pytest.mark.integration)``: tests/calibrators/test_modules.py's
#: torch.export and ONNX Runtime paths).
INTEGRATION = (
    "experiments/",  # the reproductions' drivers, reports and figures
    "tests/study/",  # studies, their executors, interruptions and resumption
    "tests/workflows/test_demo.py",  # the demo: trains a model
    "tests/cli/test_demo_output.py",
    "tests/cli/test_default_outputs.py",
    "tests/cli/test_shift",  # test_shift*.py: the shift study on decoded JPEGs
    "tests/cli/test_command_imports.py",  # a fresh interpreter per command
    "tests/calibrators/test_export.py",  # torch.export and ONNX files
    "tests/test_api_docs.py",  # the Sphinx build
    "tests/test_packaging.py",  # sdist and wheel
    "tests/test_docs_run.py",  # every block of the README and docs/
    "tests/test_readme.py",
    "tests/test_demo_next.py",
)
ROOT = Path(__file__).resolve().parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of :data:`INTEGRATION` get the ``integration`` marker; tests marked ``gpu``
    need CUDA: skipped with a reason on a machine without it."""
    integration = pytest.mark.integration
    for item in items:
        path = item.path.resolve()
        if path.is_relative_to(ROOT) and path.relative_to(ROOT).as_posix().startswith(INTEGRATION):
            item.add_marker(integration)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False here)")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)
