"""The Poisson bootstrap of large inputs (metrics/resampled.py): its weights and its intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import calibkit.metrics.resampled as rs
from calibkit.core.outputs import as_outputs
from calibkit.metrics import MetricSuite, evaluate

N = rs.POISSON_MIN_N  # the smallest input that gets Poisson weights


def _pmf(top: int) -> np.ndarray:
    """Poisson(1) probabilities of 0 .. top - 1, and of ``top`` or more last."""
    p = np.array([math.exp(-1.0) / math.factorial(k) for k in range(top)])
    return np.append(p, 1.0 - p.sum())


def test_table_matches_the_poisson_pmf_to_its_resolution() -> None:
    table = rs.poisson_table()
    assert table.dtype == np.uint8
    assert table.shape == (1 << rs.POISSON_BITS,)
    share = np.bincount(table) / table.size
    assert table.max() == 8
    # each share is within one entry of its probability (two rounded CDF ends); the tail
    # beyond 8 (1.1e-6) is folded in
    assert np.abs(share[:8] - _pmf(8)[:8]).max() <= 1.0 / table.size
    assert share[8] == pytest.approx(_pmf(8)[8], abs=1.0 / table.size)
    assert table.mean() == 1.0  # exactly
    assert table.var() == pytest.approx(1.0, abs=1e-4)


def test_drawn_weights_are_poisson_one() -> None:
    w = rs.poisson_counts(np.random.default_rng(0), 40, 50_001).reshape(-1)  # 2e6 weights
    assert w.dtype == np.uint8
    assert w.mean() == pytest.approx(1.0, abs=3e-3)  # sd of the mean: 7e-4
    assert w.var() == pytest.approx(1.0, abs=6e-3)
    observed = np.bincount(np.minimum(w, 5), minlength=6)
    expected = _pmf(5) * w.size
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_weights_do_not_depend_on_the_block_size() -> None:
    for n in (7, 8, 50_001):
        whole = rs.poisson_counts(np.random.default_rng(3), 3, n)
        rng = np.random.default_rng(3)
        rows = np.vstack([rs.poisson_counts(rng, 1, n) for _ in range(3)])
        np.testing.assert_array_equal(whole, rows)


def _suite(n: int = N) -> MetricSuite:
    rng = np.random.default_rng(11)
    z = rng.normal(size=(n, 3)) * 2.0
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in p**0.8 / (p**0.8).sum(1, keepdims=True)])
    return MetricSuite.from_outputs(as_outputs(y, probs=p), n_bins=15)


NAMES = ("accuracy", "nll", "brier", "ece", "ks")


@pytest.fixture(scope="module")
def intervals() -> dict[str, dict[str, tuple[float, float]]]:
    suite = _suite()
    poisson = suite.bootstrap(1000, seed=5, names=NAMES)
    saved = rs.POISSON_MIN_N
    rs.POISSON_MIN_N = 10**12
    try:
        multinomial = suite.bootstrap(1000, seed=5, names=NAMES)
    finally:
        rs.POISSON_MIN_N = saved
    return {"poisson": poisson, "multinomial": multinomial, "values": suite.compute(names=NAMES)}  # type: ignore[dict-item]


def test_poisson_and_multinomial_intervals_agree(intervals: dict) -> None:
    """Same spread (interval width, 3.92 standard errors) to 10% and the same centre."""
    poisson, multinomial = intervals["poisson"], intervals["multinomial"]
    assert poisson != multinomial  # other draws
    for name in NAMES:
        (lo_p, hi_p), (lo_m, hi_m) = poisson[name], multinomial[name]
        assert hi_p - lo_p == pytest.approx(hi_m - lo_m, rel=0.1), name
        assert (lo_p + hi_p) / 2 == pytest.approx((lo_m + hi_m) / 2, abs=0.15 * (hi_m - lo_m))


def test_poisson_intervals_have_the_analytic_width(intervals: dict) -> None:
    """Means of per-sample values: the interval spans 2 * 1.96 * sd / sqrt(N) and holds them."""
    suite = _suite()
    per_sample = {"accuracy": suite.correct, **suite.per_sample}
    for name in ("accuracy", "nll", "brier"):
        lo, hi = intervals["poisson"][name]
        want = 2 * 1.96 * per_sample[name].std() / math.sqrt(N)
        assert hi - lo == pytest.approx(want, rel=0.1), name
        assert lo < intervals["values"][name] < hi, name


def test_seeded_and_estimates_untouched() -> None:
    suite = _suite()
    names = ("nll", "ece", "sce")
    assert suite.bootstrap(20, seed=1, names=names) == suite.bootstrap(20, seed=1, names=names)
    assert suite.bootstrap(20, seed=1, names=names) != suite.bootstrap(20, seed=2, names=names)
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(4), size=N)
    y = rng.integers(0, 4, N)
    plain = evaluate(y, probs=p, n_boot=0, n_floor_draws=0)
    boot = evaluate(y, probs=p, n_boot=10, n_floor_draws=0)
    assert boot.values == plain.values  # bit for bit: the estimates do not resample
    assert all(lo <= hi for lo, hi in boot.ci.values())
