"""Smooth ECE and the smoothed reliability curve: hand values, invariants, and relplot."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import smooth_ece, smooth_reliability
from calibkit.metrics.smooth import kernel_sums, smooth_ece_bandwidth
from tests.conftest import SHARED_DATA, shared_path

#: The shared prediction files (one placeholder, skipped, when the folder is absent).
FILES = sorted(p.name for p in (SHARED_DATA / "predictions").glob("*.npz")) or ["absent.npz"]


def _constant(n_right: int, n_wrong: int, conf: float) -> tuple[np.ndarray, np.ndarray]:
    labels = np.array([1] * n_right + [0] * n_wrong)
    return labels, np.tile([1.0 - conf, conf], (labels.size, 1))


def test_one_confidence_gives_its_gap_at_any_bandwidth() -> None:
    # Every sample at 0.8, three of four right: the smoothed residual is -0.05 everywhere
    # (up to the density floor of 1e-4 against a density of about 4 samples per unit).
    labels, probs = _constant(3, 1, 0.8)
    for sigma in (0.01, 0.1, 0.5):
        assert smooth_ece(labels, probs, bandwidth=sigma) == pytest.approx(0.05, abs=1e-5)


def test_perfect_predictions_score_zero_and_weights_act_as_repeats() -> None:
    assert smooth_ece([1, 0], probs=[[0.0, 1.0], [1.0, 0.0]]) == 0.0
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=40)
    y = rng.integers(0, 3, 40)
    counts = rng.integers(0, 3, 40)
    repeated = smooth_ece(np.repeat(y, counts), np.repeat(p, counts, axis=0), bandwidth=0.07)
    assert smooth_ece(y, p, bandwidth=0.07, sample_weight=counts) == pytest.approx(repeated)


def test_kernel_sums_integrate_the_mass_and_reflect_at_the_ends() -> None:
    conf = np.array([0.02, 0.5, 0.98])
    points = np.linspace(0.0, 1.0, 2001)
    sums = kernel_sums(conf, np.ones((1, 3)), 0.05, points)[0]
    # Reflection keeps each sample's whole mass in [0, 1]: the integral is 3.
    assert np.trapezoid(sums, points) == pytest.approx(3.0, rel=1e-3)
    assert sums[0] == pytest.approx(sums[-1])  # symmetric data, symmetric result
    # A confidence exactly at an end is not mirrored onto itself (the reference's grid
    # reflection): it keeps half its mass.
    edge = kernel_sums(np.array([1.0]), np.ones((1, 1)), 0.05, points)[0]
    assert np.trapezoid(edge, points) == pytest.approx(0.5, rel=1e-3)


def test_the_default_bandwidth_is_the_fixed_point() -> None:
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(4) * 0.5, size=500)
    y = rng.integers(0, 4, 500)
    sigma = smooth_ece_bandwidth(y, p)
    assert smooth_ece(y, p) == smooth_ece(y, p, bandwidth=sigma)
    assert smooth_ece(y, p, bandwidth=sigma) <= sigma  # not too small
    assert smooth_ece(y, p, bandwidth=sigma - 2.0**-10) > sigma - 2.0**-10  # one step below is


def test_positive_class_mode_smooths_p1() -> None:
    y = np.array([1, 0, 1, 1, 0])
    p1 = np.array([0.9, 0.2, 0.6, 0.7, 0.4])
    probs = np.stack([1 - p1, p1], axis=1)
    two_sided = smooth_ece(y, probs, mode="positive_class", bandwidth=0.1)
    flipped = smooth_ece(1 - y, probs[:, ::-1], mode="positive_class", bandwidth=0.1)
    assert two_sided == pytest.approx(flipped)
    with pytest.raises(InputError, match="mode"):
        smooth_ece([0, 1, 2], np.full((3, 3), 1 / 3), mode="positive_class")
    with pytest.raises(InputError, match="bandwidth"):
        smooth_ece(y, probs, bandwidth=0.0)


def test_the_curve_and_its_band() -> None:
    labels, probs = _constant(3, 1, 0.8)
    rel = smooth_reliability(labels, probs, bandwidth=0.1, resampling=Resampling(n_boot=30, seed=0))
    assert np.interp(0.8, rel.grid, rel.curve) == pytest.approx(0.75, abs=1e-5)
    assert np.all(rel.lower <= rel.upper + 1e-12)
    assert rel.interval[0] <= rel.interval[1]
    assert np.trapezoid(rel.density, rel.grid) == pytest.approx(1.0, abs=0.02)
    again = smooth_reliability(
        labels, probs, bandwidth=0.1, resampling=Resampling(n_boot=30, seed=0)
    )
    assert np.array_equal(rel.upper, again.upper)


def test_the_curve_and_its_band_stay_within_zero_and_one() -> None:
    # confidence 0.9, every prediction wrong: near the data the raw estimate
    # t + (0 - 0.9) is negative for t < 0.9; a rate is clipped at 0
    labels, probs = _constant(0, 4, 0.9)
    rel = smooth_reliability(
        labels, probs, bandwidth=0.05, resampling=Resampling(n_boot=20, seed=0)
    )
    for values in (rel.curve, rel.lower, rel.upper):
        assert values.min() >= 0.0
        assert values.max() <= 1.0
    assert np.count_nonzero(rel.curve == 0.0) > 10  # the clip acted (the raw curve dips below 0)
    assert np.interp(0.9, rel.grid, rel.curve) == pytest.approx(0.0, abs=1e-3)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", FILES)
def test_equals_relplot_on_the_shared_predictions(name: str) -> None:
    relplot = pytest.importorskip("relplot")
    from relplot.estimators import CenteredRegressor, KernelSmoother
    from relplot.kernels import ReflectedGaussianKernel

    data = np.load(shared_path(f"predictions/{name}"))
    probs, labels = data["probs"].astype(np.float64), data["labels"]
    out = as_outputs(labels, probs)
    conf, correct = relplot.multiclass_logits_to_confidences(probs, labels, probs=True)
    assert np.array_equal(conf, out.confidence)
    assert np.array_equal(correct, out.correct)
    reference, sigma = relplot.smECE(conf, correct, return_width=True)
    assert smooth_ece_bandwidth(out) == sigma
    assert abs(smooth_ece(out) - reference) < 1e-6
    regressor = CenteredRegressor(KernelSmoother(ReflectedGaussianKernel(sigma)))
    regressor.fit(conf.reshape(-1, 1), correct)
    rel = smooth_reliability(out, resampling=Resampling(n_boot=1))
    curve = np.clip(regressor.predict(rel.grid.reshape(-1, 1)), 0.0, 1.0)  # ours: a rate
    assert np.max(np.abs(rel.curve - curve)) < 1e-6
    assert abs(rel.value - reference) < 1e-6
