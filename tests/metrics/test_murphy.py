"""Murphy's decomposition of the Brier score: hand values, the exact identity for forecasts
constant within bins, the shared bins, weights."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.metrics import (
    METRICS,
    brier,
    brier_decomposition,
    brier_reliability,
    brier_resolution,
    brier_uncertainty,
    rmsce,
)


def test_constant_forecasts_by_hand() -> None:
    # labels 0, 0, 1, 1 with (0.9, 0.1) twice and (0.3, 0.7) twice, 10 bins:
    # class 0: bin of 0.9 has o = 1, bin of 0.3 has o = 0, each weight 1/2, base rate 1/2
    #   REL = 0.5 * 0.1^2 + 0.5 * 0.3^2 = 0.05, RES = 0.5 * 0.25 * 2 = 0.25, UNC = 0.25
    # class 1 mirrors it: totals REL 0.1, RES 0.5, UNC 0.5
    # Brier: (0.02 + 0.02 + 0.18 + 0.18) / 4 = 0.1 = 0.1 - 0.5 + 0.5
    d = brier_decomposition([0, 0, 1, 1], probs=[[0.9, 0.1]] * 2 + [[0.3, 0.7]] * 2, n_bins=10)
    assert d.reliability == pytest.approx(0.1, abs=1e-12)
    assert d.resolution == pytest.approx(0.5, abs=1e-12)
    assert d.uncertainty == pytest.approx(0.5, abs=1e-12)
    assert d.brier == pytest.approx(0.1, abs=1e-12)
    assert d.residual == pytest.approx(0.0, abs=1e-12)


def test_within_bin_spread_leaves_a_residual_by_hand() -> None:
    # labels 0, 1; forecasts (0.61, 0.39) and (0.65, 0.35): one bin per class, 10 bins
    # class 0: f = 0.63, o = 0.5: REL 0.13^2 = 0.0169, RES 0, UNC 0.25; class 1 the same
    # Brier: (2 * 0.39^2 + 2 * 0.65^2) / 2 = 0.5746; REL - RES + UNC = 0.5338
    # residual per class: var(p) - 2 cov(p, o) = 0.0004 + 0.02 = 0.0204; two classes 0.0408
    d = brier_decomposition([0, 1], probs=[[0.61, 0.39], [0.65, 0.35]], n_bins=10)
    assert d.reliability == pytest.approx(0.0338, abs=1e-12)
    assert d.resolution == pytest.approx(0.0, abs=1e-12)
    assert d.uncertainty == pytest.approx(0.5, abs=1e-12)
    assert d.brier == pytest.approx(0.5746, abs=1e-12)
    assert d.residual == pytest.approx(0.0408, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identity_is_exact_when_forecasts_are_constant_within_bins(seed: int) -> None:
    # three prototypes whose class-k probabilities fall in different bins (10 bins):
    # class 0: 0.7, 0.1, 0.25; class 1: 0.2, 0.45, 0.05; class 2: 0.1, 0.45, 0.7
    prototypes = np.array([[0.7, 0.2, 0.1], [0.1, 0.45, 0.45], [0.25, 0.05, 0.7]])
    rng = np.random.default_rng(seed)
    probs = prototypes[rng.integers(0, 3, 500)]
    labels = rng.integers(0, 3, 500)
    d = brier_decomposition(labels, probs, n_bins=10)
    assert d.brier == pytest.approx(brier(labels, probs), rel=1e-12)
    assert d.reliability - d.resolution + d.uncertainty == pytest.approx(d.brier, abs=1e-12)
    freq = np.bincount(labels, minlength=3) / 500
    assert d.uncertainty == pytest.approx(float(freq @ (1 - freq)), rel=1e-12)


def test_binary_reliability_uses_the_shared_bins() -> None:
    # two classes, no forecast on an edge: class 0's bins mirror class 1's, so the
    # reliability is twice the squared positive-class RMSCE over the same 15 bins
    rng = np.random.default_rng(3)
    p1 = rng.uniform(0.01, 0.99, 400)
    edges = np.arange(16) / 15
    assert np.abs(p1[:, None] - edges).min() > 1e-9
    labels = (rng.uniform(size=400) < p1**1.5).astype(int)
    rel = brier_reliability(labels, probs=p1)
    want = 2 * rmsce(labels, probs=p1, n_bins=15, mode="positive_class") ** 2
    assert rel == pytest.approx(want, rel=1e-10)


def test_weights_count_samples_and_parts_are_registered() -> None:
    probs = np.array([[0.8, 0.2], [0.35, 0.65], [0.55, 0.45]])
    labels = np.array([0, 1, 1])
    weighted = brier_decomposition(labels, probs, sample_weight=[2, 1, 3])
    repeated = brier_decomposition(np.repeat(labels, [2, 1, 3]), np.repeat(probs, [2, 1, 3], 0))
    for part in ("reliability", "resolution", "uncertainty", "brier", "residual"):
        assert getattr(weighted, part) == pytest.approx(getattr(repeated, part), abs=1e-12)
    for name, function, better in [
        ("brier_reliability", brier_reliability, "min"),
        ("brier_resolution", brier_resolution, "max"),
        ("brier_uncertainty", brier_uncertainty, None),
    ]:
        info = METRICS.get(name)
        assert info.better == better
        assert not info.in_suite
        assert info(labels, probs) == pytest.approx(function(labels, probs), abs=1e-15)


def test_bad_bins_are_refused() -> None:
    with pytest.raises(InputError, match=r"^n_bins"):
        brier_decomposition([0, 1], probs=[[0.5, 0.5]] * 2, n_bins=0)
