"""The command line never offers nor accepts a Python-only parameter (issue 32):
``allow_full_sets`` is refused by ``calibkit fit --param``, and a calibration part too small
for alpha is refused by ``calibkit conformal`` and ``calibkit fit`` naming the option, with
no suggestion the command line cannot take, before any fit and writing nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, ConformalClassifier, TemperatureScaling
from calibkit.cli import main
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    z, y = random_problem(400, 3, seed=0)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    return tmp_path


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _refused(work: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    before = _listing(work)
    capsys.readouterr()
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("calibkit: error: ")
    assert _listing(work) == before
    return captured.err


def _no_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any fit (of the conformal predictor or of the calibrator underneath) fails the test."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("refused only after a fit")

    monkeypatch.setattr(ConformalClassifier, "fit", fail)
    monkeypatch.setattr(TemperatureScaling, "fit", fail)


@pytest.mark.parametrize("value", ["true", "false"])
def test_fit_refuses_a_python_only_parameter(
    work: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    args = ["fit", "preds.npz", "--method", "conformal", "--param", f"allow_full_sets={value}"]
    err = _refused(work, capsys, args)
    assert "--param: expected a parameter of conformal (score, alpha," in err
    assert "got 'allow_full_sets' (a Python-only parameter)" in err
    offered = err[err.index("(") : err.index(")")]
    assert "allow_full_sets" not in offered


def test_every_python_only_parameter_is_a_declared_one() -> None:
    for name in CALIBRATORS.names():
        klass = CALIBRATORS.get(name)
        assert set(klass.python_only) <= set(klass.param_constraints), name
    assert ConformalClassifier.python_only == ("allow_full_sets",)


def test_conformal_refuses_too_few_rows_naming_cal_size_before_any_fit(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fit(monkeypatch)
    args = ["conformal", "preds.npz", "--alpha", "0.001", "--method", "temperature"]
    err = _refused(work, capsys, [*args, "--out", "rep"])
    assert err.startswith("calibkit: error: --cal-size: expected at least 999 calibration rows")
    assert "or a larger alpha, got 100 calibration rows" in err  # 200 rows, half to T
    assert "allow_full_sets" not in err


def test_fit_refuses_too_few_rows_naming_the_file_before_any_fit(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fit(monkeypatch)
    args = ["fit", "preds.npz", "--method", "conformal", "--param", "alpha=0.001"]
    err = _refused(work, capsys, [*args, "--param", "calibrator=temperature"])
    assert err.startswith("calibkit: error: FILE preds.npz: expected at least 999 calibration")
    assert "or a larger alpha, got 200 calibration rows" in err
    assert "allow_full_sets" not in err


def test_python_still_offers_full_sets() -> None:
    z, y = random_problem(40, 3, seed=0)
    with pytest.raises(ValueError, match=r"or allow_full_sets=True, got 20 calibration rows"):
        ConformalClassifier(alpha=0.01, calibrator="temperature").fit(z, y)
    full = ConformalClassifier(alpha=0.01, calibrator="temperature", allow_full_sets=True)
    assert np.isinf(full.fit(z, y).thresholds_).all()


def test_a_tiny_alpha_gives_a_compact_message(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: alpha=1e-300 needs about 1e+300 rows, which the message wrote in 300 digits."""
    _no_fit(monkeypatch)
    err = _refused(work, capsys, ["conformal", "preds.npz", "--alpha", "1e-300"])
    assert err == (
        "calibkit: error: --cal-size: expected at least 1e+300 calibration rows for the quantile"
        " for alpha=1e-300 (ceil((n + 1)(1 - alpha)) <= n), or a larger alpha, got 200"
        " calibration rows for the quantile\n"
    )
    err = _refused(work, capsys, ["evaluate", "preds.npz", "--n-bins", str(10**400)])
    assert "--n-bins: expected an integer in [1, 100000], got 1e+400 (see" in err
