"""Tests of scaling-binning: the split, the scaler, the bins' means, the debiased error."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from calibkit.calibrators import ScalingBinning, TemperatureScaling
from calibkit.calibrators.logit.scaling_binning import top_log_odds
from calibkit.core.errors import InputError
from calibkit.core.splits import stratified_split
from calibkit.metrics import debiased_ece
from tests.calibrators.problems import random_problem, softmax


def test_top_log_odds_hand_computed() -> None:
    # probabilities (.5, .3, .2): top class 0, log(.5 / .5) = 0
    top, probs, s = top_log_odds(np.log([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]]))
    assert top.tolist() == [0, 1]
    np.testing.assert_allclose(s, [0.0, np.log(0.6 / 0.4)], atol=1e-12)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)


def test_temperature_on_the_first_part_bins_on_the_second() -> None:
    z, y = random_problem(1200, 4, seed=3)
    sb = ScalingBinning(n_bins=5, scaler_fraction=0.4, seed=2).fit(z, y)
    first, second = stratified_split(y, 0.6, 2, every_class_in_both=False)
    t = TemperatureScaling().fit(z[first], y[first]).temperature_
    assert sb.temperature_ == pytest.approx(t, rel=1e-12)
    conf = np.sort(softmax(z[second] / t).max(axis=1))
    # 720 second-part rows in 5 equal-mass bins of 144: each bin's mean scaled confidence
    assert sb.bin_counts_.tolist() == [144] * 5
    np.testing.assert_allclose(sb.bin_mean_, conf.reshape(5, 144).mean(axis=1), rtol=1e-12)


def test_platt_scaler_is_the_maximum_likelihood_fit() -> None:
    from sklearn.linear_model import LogisticRegression

    z, y = random_problem(1000, 3, seed=4)
    sb = ScalingBinning(scaler="platt").fit(z, y)
    first, _ = stratified_split(y, 0.5, 0, every_class_in_both=False)
    top, _, s = top_log_odds(z[first])
    ref = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000).fit(s[:, None], top == y[first])
    assert sb.slope_ == pytest.approx(ref.coef_[0, 0], rel=1e-4)
    assert sb.intercept_ == pytest.approx(ref.intercept_[0], rel=1e-4, abs=1e-6)
    assert sb.temperature_ == 1.0


@pytest.mark.parametrize("scaler", ["temperature", "platt"])
def test_outputs_take_one_value_per_bin(scaler: str) -> None:
    z, y = random_problem(3000, 5, seed=5)
    sb = ScalingBinning(n_bins=10, scaler=scaler).fit(z[:2000], y[:2000])  # type: ignore[arg-type]
    p = sb.predict_proba(z[2000:])
    top = p[np.arange(1000), z[2000:].argmax(axis=1)]
    assert set(np.round(top, 12)) <= set(np.round(sb.bin_mean_, 12))
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert p.min() > 0.0
    # the scaled value of a row is in its bin: the bin mean lies between the bin's edges
    assert np.all(sb.bin_mean_ >= sb.edges_[:-1])
    assert np.all(sb.bin_mean_ <= sb.edges_[1:])


def test_the_other_classes_share_from_the_tempered_probabilities() -> None:
    z, y = random_problem(1000, 4, seed=6)
    sb = ScalingBinning(n_bins=4).fit(z, y)
    q = softmax(z / sb.temperature_)
    p = sb.predict_proba(z)
    top = q.argmax(axis=1)
    rows = np.arange(1000)
    others = np.delete(p / q, top + 4 * rows)  # row-major flat index of the top entries
    ratio = (1 - p[rows, top]) / (1 - q[rows, top])
    np.testing.assert_allclose(others, np.repeat(ratio, 3), rtol=1e-9)


def test_debiased_error_is_small_after_scaling_binning() -> None:
    z, y = random_problem(20_000, 4, seed=7, temperature=2.0)
    sb = ScalingBinning(n_bins=10).fit(z[:10_000], y[:10_000])
    before = debiased_ece(y[10_000:], logits=z[10_000:], n_bins=10, scheme="equal_mass")
    after = debiased_ece(y[10_000:], probs=sb.predict_proba(z[10_000:]), n_bins=10)
    assert after < before / 3


def test_platt_output_is_expit_of_the_scaled_log_odds_when_no_bin_is_hit() -> None:
    # a bin that no second-part row fell into keeps the scaled value (not used here: every
    # equal-mass bin of distinct scores is filled)
    z, y = random_problem(400, 3, seed=8)
    sb = ScalingBinning(n_bins=4, scaler="platt").fit(z, y)
    assert np.all(sb.bin_counts_ > 0)
    _, _, s = top_log_odds(z)
    scaled = expit(sb.slope_ * s + sb.intercept_)
    idx = np.searchsorted(sb.edges_[1:-1], scaled, side="right")
    top = sb.predict_proba(z)[np.arange(400), z.argmax(axis=1)]
    np.testing.assert_allclose(top, sb.bin_mean_[idx], rtol=1e-12)


def test_platt_scaler_refuses_confidences_that_rank_correctness_backwards() -> None:
    """A decreasing Platt map (a slope <= 0, refused on load too) is refused at fit."""
    rng = np.random.default_rng(0)
    margin = rng.uniform(0.0, 6.0, size=400)
    z = np.column_stack([margin, np.zeros(400), np.zeros(400)])
    wrong = rng.uniform(size=400) < margin / 6.0  # the more confident, the more often wrong
    y = np.where(wrong, 1 + (np.arange(400) % 2), 0)
    with pytest.raises(InputError, match="logits: expected top-label confidences that rank"):
        ScalingBinning(scaler="platt").fit(z, y)
