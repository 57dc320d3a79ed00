"""The shift study from its settings (:mod:`calibkit.workflows.shift_study`): a whole run
from Python on a tiny synthetic dataset and model, its report, and every bad setting or
input refused naming its field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch

from calibkit.core.errors import InputError

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def tiny(tmp_path: Path) -> dict[str, Any]:
    """Settings of a run on a synthetic cifar10-jpeg.zip (16 images a class) and a LeNet-5
    with random weights (no ../shared)."""
    from calibkit.models import create_model
    from tests.data.synthetic import cifar10_jpeg_zip

    cifar10_jpeg_zip(tmp_path / "data", per_class=16)
    weights = tmp_path / "lenet.pt"
    torch.save(create_model("lenet5", 10).state_dict(), weights)
    return {
        "model": "lenet5",
        "weights": weights,
        "data_dir": tmp_path / "data",
        "cal_size": 60,
        "test_size": 50,
        "corruptions": ["gaussian_noise", "fog"],
        "severities": (1, 5),
        "methods": ("none", "temperature"),
        "scores": ("lac",),
        "n_floor_draws": 5,
        "device": "cpu",
    }


def test_run_shift_from_python(tiny: dict[str, Any]) -> None:
    import calibkit as ck

    result = ck.run_shift(ck.ShiftSettings(**tiny))
    assert (result.n_cal, result.n_test, result.device) == (60, 50, "cpu")
    assert len(result.classes) == 10
    assert [(r.method, r.corruption, r.severity) for r in result.rows[:5]] == [
        ("none", "clean", 0),
        ("none", "gaussian_noise", 1),
        ("none", "gaussian_noise", 5),
        ("none", "fog", 1),
        ("none", "fog", 5),
    ]
    assert {r.method for r in result.rows} == {"none", "temperature", "ts+lac"}
    assert all(r.n_samples == 50 for r in result.rows)
    config = result.config
    assert config["corruptions"] == ["gaussian_noise", "fog"]
    assert config["weights"] == str(tiny["weights"])
    assert (config["n_calibration"], config["n_test"], config["device"]) == (60, 50, "cpu")
    assert [m for m, s, n, _ in result.summary() if s == 5] == ["none", "temperature", "ts+lac"]
    again = ck.run_shift(ck.ShiftSettings(**tiny))  # seeded: the same numbers
    assert [r.as_dict() for r in again.rows] == [r.as_dict() for r in result.rows]


def test_the_report_of_a_python_run(tiny: dict[str, Any], tmp_path: Path) -> None:
    import calibkit as ck

    result = ck.run_shift(ck.ShiftSettings(**tiny))
    files = ck.write_shift_report(result, tmp_path / "out")
    assert {"report.md", "report.html", "results.json", "results.csv", "config.json"} <= set(files)
    assert "figures/shift_calibration.png" in files
    md = (tmp_path / "out" / "report.md").read_text()
    assert md.splitlines()[2].startswith("**Calibration ")  # the verdict, right under the title


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"model": "lenet6"}, "model", "did you mean 'lenet5'"),
        ({"weights": "/nonexistent.pt"}, "weights", "an existing checkpoint file"),
        ({"corruptions": "fogg"}, "corruptions", "did you mean 'fog'"),
        ({"corruptions": ["frost"]}, "corruptions", "frost is not available"),
        ({"severities": (0,)}, "severities", "[1, 5]"),
        ({"methods": ("temperatur",)}, "methods", "did you mean 'temperature'"),
        ({"scores": ("rap",)}, "scores", "did you mean 'raps'"),
        ({"alpha": 1.0}, "alpha", "(0, 1)"),
        ({"cal_size": 0}, "cal_size", "integer"),
        ({"test_size": 0}, "test_size", "integer"),
        ({"std": (1, 0, 1)}, "std", "a finite number > 0"),
        ({"mean": (0.5, 0.5)}, "std", "as many as mean"),
        ({"n_bins": 0}, "n_bins", "integer"),
        ({"seed": -1}, "seed", "integer"),
        ({"batch_size": 0}, "batch_size", "integer"),
    ],
)
def test_bad_settings_name_their_field(
    tiny: dict[str, Any], change: dict[str, Any], field: str, message: str
) -> None:
    from calibkit.workflows.shift_study import ShiftSettings

    with pytest.raises(InputError, match=re.escape(message)) as info:
        ShiftSettings(**(tiny | change))
    assert info.value.argument == field


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"split": "validation"}, "split", "a split among train, test"),
        ({"data": "cifar10-jpeg@fog:1"}, "data", "a clean dataset"),
        ({"data": "cifar10-jpegg"}, "data", "did you mean 'cifar10-jpeg'"),
        ({"mean": (0.5,), "std": (0.5,)}, "mean", "3 values (one per channel"),
        ({"cal_size": 10_000}, "cal_size", "10000"),
        ({"model": "resnet20"}, "weights", "a CIFAR ResNet checkpoint"),
        ({"device": "cuda:64"}, "device", "a device this machine has"),
    ],
)
def test_errors_found_while_running_name_their_field(
    tiny: dict[str, Any], change: dict[str, Any], field: str, message: str
) -> None:
    from calibkit.workflows.shift_study import ShiftSettings, run_shift

    with pytest.raises(InputError, match=re.escape(message)) as info:
        run_shift(ShiftSettings(**(tiny | change)))
    assert info.value.argument == field
