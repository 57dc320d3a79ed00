"""Stratified splits and method comparisons (synthetic data; one real-data check)."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.calibrators import CALIBRATORS, Calibrator, create_calibrator
from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.splits import split_outputs
from calibkit.metrics import ece, evaluate
from calibkit.metrics.bin_errors import error_from_stats
from calibkit.workflows.compare import compare
from calibkit.workflows.comparison import TEMPERATURE_GRID
from calibkit.workflows.methods import applicable_methods

REAL = "predictions/cifar10_resnet18.npz"


def synthetic(n: int = 600, k: int = 3, seed: int = 0) -> ClassifierOutputs:
    """Over-confident logits: labels drawn from softmax(z / 2)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3.0
    y = np.argmax(z / 2.0 + rng.gumbel(size=z.shape), axis=1)
    return as_outputs(y, logits=z)


class FakeBinary(Calibrator):
    """A binary-only method, registered only for the tests that need it."""

    binary_only: ClassVar[bool] = True

    def _fit(self, out: ClassifierOutputs) -> None:
        self.slope_ = 1.0

    def _transform(self, logits: Any) -> Any:
        return logits


@pytest.fixture
def fake_binary(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(FakeBinary, "name", "fake_binary")
    monkeypatch.setitem(CALIBRATORS._items, "fake_binary", FakeBinary)
    monkeypatch.setitem(CALIBRATORS._info, "fake_binary", {})
    return "fake_binary"


# ----- method lists ------------------------------------------------------------------------
def test_applicable_methods_follow_the_registry(fake_binary: str) -> None:
    multi = applicable_methods(3)
    assert "temperature" in multi
    assert "temperature_ece" in multi
    assert "auto" not in multi
    assert fake_binary not in multi
    assert fake_binary in applicable_methods(2)
    expected = [
        n
        for n in CALIBRATORS.defaults()
        if not CALIBRATORS.get(n).binary_only and not CALIBRATORS.get(n).needs_model
    ]
    assert multi == expected
    assert "nc_ce" in CALIBRATORS
    assert "nc_ce" not in multi  # it takes the model, not logits
    with pytest.raises(InputError, match="n_classes"):
        applicable_methods(1)


# ----- compare -----------------------------------------------------------------------------
def test_compare_rows_match_independent_computations(caplog: pytest.LogCaptureFixture) -> None:
    cal, test = split_outputs(synthetic(800), 0.5, seed=0)
    with caplog.at_level(logging.INFO, logger="calibkit"):
        comp = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=30, seed=3))
    msgs = [r.getMessage() for r in caplog.records]
    assert [r.method for r in comp.rows] == ["none", "temperature"]
    assert (comp.n_cal, comp.n_test, comp.n_classes, comp.n_bins) == (400, 400, 3, 15)
    none, ts = comp.rows
    assert none.evaluation.values == evaluate(test, resampling=Resampling(n_boot=30, seed=3)).values
    assert none.params == {}
    assert none.fit_seconds == 0.0
    fitted = create_calibrator("temperature").fit(cal.scores, cal.labels)
    assert ts.params == {"temperature": fitted.temperature_}
    probs = fitted.predict_proba(test.scores)
    assert ts.evaluation.values["ece"] == ece(test.labels, probs=probs)
    assert ts.evaluation.values["ece"] < none.evaluation.values["ece"]
    assert ts.evaluation.ci["ece"][0] <= ts.evaluation.ci["ece"][1]
    assert ts.fit_seconds > 0
    for row in comp.rows:  # the figure's bins are the table's bins
        assert error_from_stats(row.reliability) == row.evaluation.values["ece"]
    assert comp.fitted_temperatures == {"temperature": fitted.temperature_}
    assert len(msgs) == 3
    assert "temperature" in msgs[1]
    assert msgs[2] == "the test part's ECE at 199 temperatures (its figure)"


def test_temperature_scaling_lowers_ece_on_over_confident_logits() -> None:
    """The workflow end to end: split, compare, the calibrated row beats the raw one."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(600, 3)) * 3
    y = np.argmax(z + rng.gumbel(size=z.shape) * 3, axis=1)
    cal, test = split_outputs(as_outputs(y, logits=z), 0.5, seed=0)
    assert (cal.n_samples, test.n_samples) == (300, 300)
    comp = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=20))
    assert [row.method for row in comp.rows] == ["none", "temperature"]
    assert comp.rows[1].evaluation.values["ece"] < comp.rows[0].evaluation.values["ece"]


def test_ece_curve_at_unit_temperature_is_the_uncalibrated_ece() -> None:
    cal, test = split_outputs(synthetic(500, 4, seed=2), 250, seed=1)
    comp = compare(cal, test, [], resampling=Resampling(n_boot=0))
    assert [r.method for r in comp.rows] == ["none"]
    np.testing.assert_array_equal(comp.temperatures, TEMPERATURE_GRID)
    assert comp.temperatures[0] == 0.05
    assert comp.temperatures[-1] == 5.0
    at_one = comp.ece_curve[comp.temperatures == 1.0]
    assert at_one.shape == (1,)
    assert at_one[0] == pytest.approx(comp.rows[0].evaluation.values["ece"], abs=1e-12)


def test_method_names_are_checked() -> None:
    cal, test = split_outputs(synthetic(), 0.5, seed=0)
    with pytest.raises(UnknownNameError, match="temperature"):
        compare(cal, test, ["no_such_method"], resampling=Resampling(n_boot=0))
    with pytest.raises(InputError, match="list of method names"):
        compare(cal, test, "temperature", resampling=Resampling(n_boot=0))
    comp = compare(
        cal, test, ["none", "temperature", "temperature"], resampling=Resampling(n_boot=0)
    )
    assert [r.method for r in comp.rows] == ["none", "temperature"]


def test_binary_method_on_multiclass_is_an_input_error(fake_binary: str) -> None:
    cal, test = split_outputs(synthetic(k=3), 0.5, seed=0)
    with pytest.raises(InputError, match="2 classes only"):
        compare(cal, test, [fake_binary], resampling=Resampling(n_boot=0))
    cal2, test2 = split_outputs(synthetic(k=2), 0.5, seed=0)
    comp = compare(cal2, test2, [fake_binary], resampling=Resampling(n_boot=0))
    assert comp.rows[1].params == {"slope": 1.0}


def test_class_count_mismatch_is_an_input_error() -> None:
    cal, _ = split_outputs(synthetic(k=3), 0.5, seed=0)
    _, test = split_outputs(synthetic(k=4), 0.5, seed=0)
    with pytest.raises(InputError, match="3 classes"):
        compare(cal, test, ["temperature"], resampling=Resampling(n_boot=0))
    with pytest.raises(InputError, match="ClassifierOutputs"):
        compare(cal, np.zeros((3, 3)), resampling=Resampling(n_boot=0))  # type: ignore[arg-type]


def test_a_failing_method_propagates(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: object, out: object) -> None:
        raise RuntimeError("fit failed")

    monkeypatch.setattr(TemperatureScaling, "_fit", boom)
    cal, test = split_outputs(synthetic(), 0.5, seed=0)
    with pytest.raises(RuntimeError, match="fit failed"):
        compare(cal, test, ["temperature"], resampling=Resampling(n_boot=0))


@pytest.mark.shared_data
def test_temperature_scaling_lowers_ece_on_real_predictions(shared_data: Path) -> None:
    path = shared_data / REAL
    if not path.exists():
        pytest.skip(f"real data not available: {path} is absent")
    data = np.load(path)
    out = as_outputs(data["labels"], logits=np.log(data["probs"]))
    cal, test = split_outputs(out, 5000, seed=0)
    assert (cal.n_samples, test.n_samples) == (5000, 5000)
    np.testing.assert_array_equal(np.bincount(cal.labels), np.bincount(test.labels))
    comp = compare(cal, test, ["temperature"], source=path.name, resampling=Resampling(n_boot=50))
    none, ts = comp.rows
    assert 1.2 < ts.params["temperature"] < 2.0  # over-confident ResNet-18
    assert ts.evaluation.values["ece"] < 0.6 * none.evaluation.values["ece"]
    assert ts.evaluation.values["nll"] < none.evaluation.values["nll"]
    assert ts.evaluation.values["accuracy"] == none.evaluation.values["accuracy"]


def test_default_methods_leave_out_those_a_missing_class_makes_refuse() -> None:
    """A calibration part without one of four classes: the default comparison runs the
    methods that keep the class by construction and leaves out those that would refuse."""
    import numpy as np

    from calibkit.calibrators import CALIBRATORS
    from calibkit.core.outputs import as_outputs
    from calibkit.workflows.compare import compare

    rng = np.random.default_rng(0)
    z = rng.normal(size=(600, 4)) * 2
    y = np.argmax(z + rng.gumbel(size=z.shape), axis=1)
    cal_rows = y != 3
    cal = as_outputs(y[cal_rows][:300], logits=z[cal_rows][:300])
    test = as_outputs(y[300:], logits=z[300:])
    comp = compare(cal, test, None, resampling=Resampling(n_boot=0, seed=0))
    names = [r.method for r in comp.rows]
    assert "temperature" in names
    left_out = [n for n in names if n != "none" and CALIBRATORS.get(n).needs_every_class]
    assert not left_out
    # never silently dropped: each one left out is said, with why
    refusing = [n for n in CALIBRATORS.defaults("logits") if CALIBRATORS.get(n).needs_every_class]
    assert refusing
    assert sorted(comp.declined) == sorted(refusing)
    assert all("a class is absent from the calibration part" in w for w in comp.declined.values())
    assert all(np.isfinite(r.evaluation.values["nll"]) for r in comp.rows)


def test_the_recommendation_is_autos_rule_on_the_calibration_part_alone() -> None:
    """The method to use comes from cross-fitting on the calibration part (the test part
    only judges): the same choice as ``auto`` over the compared methods and TS."""
    import numpy as np

    from calibkit.calibrators import AutoCalibrator
    from calibkit.core.outputs import as_outputs
    from calibkit.workflows.compare import compare

    rng = np.random.default_rng(1)
    z = rng.normal(size=(1200, 4)) * 3
    scale = np.array([0.3, 1.0, 2.5, 4.0])  # each class miscalibrated its own way
    p = np.exp(z * scale) / np.exp(z * scale).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(4, p=row) for row in p])
    cal, test = as_outputs(y[:800], logits=z[:800]), as_outputs(y[800:], logits=z[800:])
    comp = compare(
        cal, test, ["vector", "histogram"], recommend=True, resampling=Resampling(n_boot=0, seed=0)
    )
    rec = comp.recommendation
    assert rec is not None
    auto = AutoCalibrator(methods=["temperature", "vector", "histogram"]).fit(z[:800], y[:800])
    assert rec.method == auto.chosen_ == "vector"
    assert "beat temperature by more than 3.5 standard errors" in rec.reason
    scrambled = as_outputs(y[800:][::-1], logits=z[800:])  # another test part: same choice
    again = compare(
        cal, scrambled, ["vector", "histogram"], recommend=True, resampling=Resampling(n_boot=0)
    )
    assert again.recommendation == rec
    assert (
        compare(cal, test, ["vector"], resampling=Resampling(n_boot=0)).recommendation is None
    )  # only when asked


def test_compare_parts_splits_once_and_recommends() -> None:
    from calibkit.workflows.compare import compare_parts

    rng = np.random.default_rng(4)
    z = rng.normal(size=(300, 3)) * 3
    y = np.argmax(z / 2 + rng.gumbel(size=z.shape), axis=1)
    whole = as_outputs(y, logits=z)
    comp = compare_parts(
        whole, cal_size=0.4, methods=["temperature"], resampling=Resampling(n_boot=0, seed=3)
    )
    cal, test = split_outputs(whole, 0.4, seed=3)
    direct = compare(cal, test, ["temperature"], resampling=Resampling(n_boot=0, seed=3))
    assert [r.evaluation.values for r in comp.rows] == [r.evaluation.values for r in direct.rows]
    assert comp.source == "split 120 / 180 (seed 3)"
    assert comp.recommendation is not None
    assert comp.recommendation.method == "temperature"
    same = compare_parts(
        cal=cal, test=test, methods=["temperature"], resampling=Resampling(n_boot=0, seed=3)
    )
    assert [r.evaluation.values for r in same.rows] == [r.evaluation.values for r in comp.rows]
    with pytest.raises(InputError, match=r"^cal_size: "):
        compare_parts(cal=cal, test=test, cal_size=0.5)
    with pytest.raises(InputError, match=r"^cal_size: "):
        compare_parts(whole, cal_size=1.5)
    with pytest.raises(InputError, match="either whole or both cal and test"):
        compare_parts(whole, cal=cal)
    groups = np.where(np.arange(300) % 2 == 0, "a", "b")
    grouped = compare_parts(
        whole, groups=groups, methods=["temperature"], resampling=Resampling(n_boot=0)
    )
    assert grouped.rows[1].groups is not None
    assert sum(grouped.rows[1].groups.sizes) == grouped.n_test
    assert grouped.smallest_gap == "temperature"


def test_each_fit_after_the_first_says_the_time_left_of_the_fits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cal, test = split_outputs(synthetic(400), 0.5, seed=0)
    with caplog.at_level(logging.INFO, logger="calibkit.workflows.compare"):
        compare(
            cal, test, ["temperature", "histogram", "isotonic"], resampling=Resampling(n_boot=0)
        )
    fits = [r.getMessage() for r in caplog.records if "fitting" in r.getMessage()]
    assert fits[0] == "[1/3] fitting temperature on 200 calibration samples"  # nothing to go by
    for k, line in enumerate(fits[1:], 2):
        assert line.startswith(f"[{k}/3] fitting ")
        assert re.search(r" \(\d+s spent, about \d+s left of the fits\)$", line)


def test_the_recommendation_takes_the_rows_tuned_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """sms_cv's row fit is the fit auto tunes (same folds and seed): auto's search is not
    run again, only its folds; with another seed auto tunes its own."""
    from calibkit.calibrators.logit.structured import StructuredMatrixScalingCV
    from calibkit.core.outputs import as_outputs
    from calibkit.workflows.compare import compare

    rng = np.random.default_rng(0)
    z = rng.normal(size=(800, 3)) * 3
    y = np.array([rng.choice(3, p=np.exp(r / 2) / np.exp(r / 2).sum()) for r in z])
    cal, test = as_outputs(y[:500], logits=z[:500]), as_outputs(y[500:], logits=z[500:])
    fits: list[object] = []
    fit = StructuredMatrixScalingCV._fit

    def counted(self: StructuredMatrixScalingCV, *args: Any, **kwargs: Any) -> None:
        fits.append(self)
        fit(self, *args, **kwargs)

    monkeypatch.setattr(StructuredMatrixScalingCV, "_fit", counted)
    compare(cal, test, ["sms_cv"], recommend=True, resampling=Resampling(n_boot=0))
    assert len(fits) == 1 + 5  # the row, then auto's 5 folds
    fits.clear()
    compare(cal, test, ["sms_cv"], recommend=True, resampling=Resampling(n_boot=0, seed=1))
    assert len(fits) == 1 + 1 + 5  # the row (seed 0), auto's own tuning, its folds
