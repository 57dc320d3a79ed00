"""The Poisson bootstrap of large inputs (metrics/resampled.py): its intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibkit.metrics.resampled as rs
from calibkit import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.metrics import MetricSuite, evaluate

N = rs.POISSON_MIN_N  # the smallest input that gets Poisson weights


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
    poisson = suite.bootstrap(Resampling(n_boot=1000, seed=5), names=NAMES)
    saved = rs.POISSON_MIN_N
    rs.POISSON_MIN_N = 10**12
    try:
        multinomial = suite.bootstrap(Resampling(n_boot=1000, seed=5), names=NAMES)
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
    assert suite.bootstrap(Resampling(n_boot=20, seed=1), names=names) == suite.bootstrap(
        Resampling(n_boot=20, seed=1), names=names
    )
    assert suite.bootstrap(Resampling(n_boot=20, seed=1), names=names) != suite.bootstrap(
        Resampling(n_boot=20, seed=2), names=names
    )
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(4), size=N)
    y = rng.integers(0, 4, N)
    plain = evaluate(y, probs=p, n_floor_draws=0, resampling=Resampling(n_boot=0))
    boot = evaluate(y, probs=p, n_floor_draws=0, resampling=Resampling(n_boot=10))
    assert boot.values == plain.values  # bit for bit: the estimates do not resample
    assert all(lo <= hi for lo, hi in boot.ci.values())


@pytest.mark.parametrize("k", [5, 120])
def test_poisson_sce_of_kept_counts_equals_blockwise_sce(
    monkeypatch: pytest.MonkeyPatch, k: int
) -> None:
    """Poisson weights (forced on a small input): SCE from the kept uint8 counts equals the
    blockwise SCE of the same draws (float32 class totals from 100 classes: see _class_totals)."""
    import calibkit.metrics.suite as suite_module

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k) * 0.3, size=700)
    y = rng.integers(0, k, 700)
    monkeypatch.setattr(suite_module, "_BATCH_MAX_N", 0)
    monkeypatch.setattr(rs, "POISSON_MIN_N", 0)
    blockwise = MetricSuite.from_outputs(as_outputs(y, probs=p)).bootstrap(
        Resampling(n_boot=30, seed=4)
    )
    monkeypatch.setattr(rs, "_SCE_SMALL", 0)
    kept = MetricSuite.from_outputs(as_outputs(y, probs=p)).bootstrap(Resampling(n_boot=30, seed=4))
    bound = 6.2e-5 / k if k >= 100 else 1e-12
    assert kept["sce"] == pytest.approx(blockwise["sce"], rel=1e-10, abs=bound)
    assert kept["ece"] == blockwise["ece"]  # the same draws


def test_kept_counts_widen_beyond_a_byte() -> None:
    """Multinomial counts above 255 (tiny inputs) widen the kept uint8 counts, losslessly."""
    from calibkit.metrics.bin_errors import sce_batch_split, sce_split_map

    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=4)
    y = rng.integers(0, 3, 4)
    split = sce_split_map(p, y, 10)
    sce = rs.SortedSCE(p, split, 10, np.arange(4), 2)
    sce.store = np.zeros((2, 4), np.uint8)  # as above _SCE_SMALL
    counts = np.array([[300, 0, 1, 3], [1, 70_000, 0, 2]])
    sce.add(0, counts[:1])
    sce.add(1, counts[1:])
    assert sce.store is not None
    np.testing.assert_array_equal(sce.store, counts)
    want = sce_batch_split(p, split, 10, counts.astype(np.float64))
    np.testing.assert_allclose(sce.values(), want, rtol=1e-12)
