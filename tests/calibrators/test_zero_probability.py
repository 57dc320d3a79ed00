"""The binning methods' protection against zero probabilities (smoothing toward uniform)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.calibrators import ClasswiseHistogramBinning, HistogramBinning, IsotonicCalibrator
from calibkit.core.errors import InputError
from calibkit.metrics import nll
from tests.calibrators.problems import CIFAR100, load_logits, needs_cifar100, random_problem

BINNINGS = [HistogramBinning, ClasswiseHistogramBinning, IsotonicCalibrator]


@pytest.mark.parametrize("cls", BINNINGS)
def test_the_output_is_the_unsmoothed_output_mixed_with_uniform(cls: type) -> None:
    z, y = random_problem(300, 4, seed=11)
    plain = cls(smoothing=0).fit(z, y)
    smoothed = cls().fit(z, y)
    assert (plain.smoothing_, smoothed.smoothing_) == (0.0, 1 / 301)
    expected = (1 - 1 / 301) * plain.predict_proba(z) + 1 / 301 / 4
    np.testing.assert_allclose(smoothed.predict_proba(z), expected, rtol=0, atol=1e-15)
    chosen = cls(smoothing=0.2).fit(z, y)
    np.testing.assert_allclose(
        chosen.predict_proba(z), 0.8 * plain.predict_proba(z) + 0.05, rtol=0, atol=1e-15
    )


@pytest.mark.parametrize("cls", BINNINGS)
def test_weights_count_as_rows_in_the_default_smoothing(cls: type) -> None:
    z, y = random_problem(100, 3, seed=12)
    assert cls().fit(z, y, sample_weight=np.full(100, 2.0)).smoothing_ == 1 / 201


@pytest.mark.parametrize("cls", BINNINGS)
def test_a_smoothing_of_one_or_more_is_refused(cls: type) -> None:
    with pytest.raises(InputError, match="smoothing"):
        cls(smoothing=1.0)


@needs_cifar100
@pytest.mark.parametrize("cls", BINNINGS)
def test_no_true_class_gets_probability_zero_on_cifar100(cls: type) -> None:
    z, y = load_logits(CIFAR100)
    cal, test = np.arange(0, 10_000, 2), np.arange(1, 10_000, 2)
    p = cls().fit(z[cal], y[cal]).predict_proba(z[test])
    assert p[np.arange(test.size), y[test]].min() >= 1 / 5001 / 100 * (1 - 1e-12)
    # without the smoothing, isotonic and class-wise binning give NLL 13-43 on this file
    assert float(nll(y[test], probs=p)) < 2.0
