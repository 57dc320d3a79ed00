"""A temperature fitted at a bound of its searched range gives a BoundWarning naming the
bound and what to do; a fit inside the range gives none. The CLI shows the warning as one
line ``calibkit: warning: ...`` (fit, compare), once however often it is raised."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from calibkit.calibrators import create_calibrator
from calibkit.cli import main
from calibkit.core.errors import BoundWarning, CalibkitWarning
from tests.calibrators.problems import random_problem

#: Each method with a bounded temperature, and its (lower, upper) bound by default.
BOUNDS = {
    "temperature": (0.1, 10.0),
    "temperature_smoothed": (0.1, 10.0),
    "bias_corrected_temperature": (0.05, 20.0),
    "temperature_ece": (0.001, 5.0),
    "temperature_groupwise": (0.1, 10.0),
    "multicalibration": (0.1, 10.0),
}


def _too_flat() -> tuple[np.ndarray, np.ndarray]:
    """Logits divided by 100 after the labels were drawn at T = 2: the best T is 0.02."""
    z, y = random_problem(3000, 4, seed=3)
    return z / 100.0, y


def _unrelated() -> tuple[np.ndarray, np.ndarray]:
    """Labels drawn independently of the logits: the best T is infinite (uniform)."""
    z, _ = random_problem(3000, 4, seed=3)
    return z, np.random.default_rng(4).integers(0, 4, size=3000)


def _fit(name: str, z: np.ndarray, y: np.ndarray) -> tuple[float, list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fitted = create_calibrator(name).fit(z, y)
    messages = [str(w.message) for w in seen if issubclass(w.category, BoundWarning)]
    return float(fitted.temperature_), messages


@pytest.mark.parametrize("name", BOUNDS)
def test_a_temperature_at_its_lower_bound_warns(name: str) -> None:
    low, _ = BOUNDS[name]
    t, messages = _fit(name, *_too_flat())
    if name == "temperature_ece":  # the ECE's optimum, 0.015 here, is inside its grid
        assert t > low
        assert messages == []
        return
    assert t == pytest.approx(low)
    assert len(messages) == 1
    assert messages[0].startswith(f"{name}: T reached its lower bound t_min = {low:g}")
    assert "pass a smaller t_min" in messages[0]


@pytest.mark.parametrize("name", BOUNDS)
def test_a_temperature_at_its_upper_bound_warns(name: str) -> None:
    _, high = BOUNDS[name]
    t, messages = _fit(name, *_unrelated())
    assert t == pytest.approx(high)
    assert len(messages) == 1
    assert messages[0].startswith(f"{name}: T reached its upper bound t_max = {high:g}")
    assert "check the labels, or pass a larger t_max" in messages[0]


@pytest.mark.parametrize("name", BOUNDS)
def test_a_temperature_inside_its_range_does_not_warn(name: str) -> None:
    z, y = random_problem(3000, 4, seed=3)  # the best T is about 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibkitWarning)
        t = float(create_calibrator(name).fit(z, y).temperature_)
    low, high = BOUNDS[name]
    assert low * 2 < t < high / 2


def test_the_bound_given_is_the_one_named() -> None:
    with pytest.warns(BoundWarning, match=r"upper bound t_max = 3;"):
        create_calibrator("temperature", t_max=3.0).fit(*_unrelated())


def test_bound_warning_is_a_user_warning() -> None:
    assert issubclass(BoundWarning, CalibkitWarning)
    assert issubclass(CalibkitWarning, UserWarning)


# ----- the command line: one line, once -----------------------------------------------------
@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current folder (where the commands write), holding ``unrelated.npz`` and
    ``fine.npz``."""
    monkeypatch.chdir(tmp_path)
    z, y = _unrelated()
    np.savez(tmp_path / "unrelated.npz", logits=z, labels=y)
    z, y = random_problem(3000, 4, seed=3)
    np.savez(tmp_path / "fine.npz", logits=z, labels=y)
    return tmp_path


def _stderr(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[str]:
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr().err.splitlines()


def test_fit_shows_the_warning_as_one_line(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fit", str(files / "unrelated.npz"), "--method", "temperature"]
    err = _stderr(capsys, [*argv, "--out", str(files / "ts.json")])
    warned = [line for line in err if "warning" in line]
    assert len(warned) == 1
    assert warned[0].startswith("calibkit: warning: temperature: T reached its upper bound")
    err = _stderr(capsys, ["fit", str(files / "fine.npz"), "--method", "temperature"])
    assert not [line for line in err if "warning" in line]


def test_compare_shows_each_warning_once(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Temperature scaling is fitted for its row and again, five times, to cross-fit the
    recommendation: one line all the same."""
    argv = ["compare", str(files / "unrelated.npz"), "--methods", "temperature,vector"]
    err = _stderr(capsys, [*argv, "--n-boot", "0"])
    warned = [line for line in err if line.startswith("calibkit: warning: ")]
    assert [line.split(":")[2].strip() for line in warned] == ["temperature"]
