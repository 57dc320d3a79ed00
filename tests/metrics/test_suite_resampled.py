"""Replicates in confidence order (metrics/resampled.py) equal MetricSuite.compute row by row."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit import Resampling
from calibkit.core.outputs import as_outputs
from calibkit.metrics import METRIC_NAMES, METRICS, MetricSuite
from calibkit.metrics.kernels import RankStatistic
from calibkit.metrics.resampled import SortedSamples, resample_counts

#: The ranking metrics (failure AUROC, AURC, ...): the suite computes them from its ranking.
RANKED = tuple(n for n in METRIC_NAMES if isinstance(METRICS.get(n).kernel, RankStatistic))


def _suite(n: int, k: int, mode: str = "top_label") -> MetricSuite:
    rng = np.random.default_rng(n + k)
    p = rng.dirichlet(np.ones(k) * 0.3, size=n)
    p[: n // 4] = np.round(p[: n // 4], 1)  # ties and confidences on bin edges
    p /= p.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    return MetricSuite.from_outputs(as_outputs(y, probs=p), n_bins=7, mode=mode)  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "k", "mode"), [(600, 4, "top_label"), (301, 2, "positive_class")])
def test_sorted_replicates_match_compute(n: int, k: int, mode: str) -> None:
    suite = _suite(n, k, mode)
    means = {"accuracy": suite.correct, **suite.per_sample}
    ss = SortedSamples(suite.conf, suite.outcome, means, suite.n_bins)
    draws = np.random.default_rng(1).integers(0, n, (5, n))
    counts = resample_counts(draws)
    # SCE and the ranking metrics are added by the suite (SortedSCE, MetricSuite.ranked)
    names = tuple(n for n in METRIC_NAMES if n != "sce" and n not in RANKED)
    got = ss.compute(counts[:, ss.order], names)
    assert list(got) == list(names)
    for row, w in enumerate(counts.astype(np.float64)):
        one = suite.compute(w, names)
        for name in names:
            assert got[name][row] == pytest.approx(one[name], rel=1e-10, abs=1e-13), name


@pytest.mark.parametrize("mode", ["top_label", "positive_class"])
def test_ranking_metrics_of_sorted_counts_match_compute(mode: str) -> None:
    """The large-n bootstrap hands the ranking metrics its counts in confidence order with
    the column of each sample (no permutation of the block): the same values as compute."""
    suite = _suite(301, 2, mode)
    ss = SortedSamples(suite.conf, suite.outcome, {}, suite.n_bins)
    counts = resample_counts(np.random.default_rng(3).integers(0, 301, (4, 301)))
    got = suite.ranked(RANKED, counts[:, ss.order], ss.rank)
    assert list(got) == list(RANKED)
    for row, w in enumerate(counts.astype(np.float64)):
        one = suite.compute(w, RANKED)
        for name in RANKED:  # the same group sums; the counts are integers: no rounding
            assert got[name][row] == one[name], name


def test_resample_counts_are_bincounts_of_each_row() -> None:
    draws = np.random.default_rng(2).integers(0, 50, (4, 50))
    want = np.stack([np.bincount(row, minlength=50) for row in draws])
    np.testing.assert_array_equal(resample_counts(draws), want)


def test_noise_floor_equals_one_draw_at_a_time() -> None:
    """Blocks of draws give the floors of drawing and binning one outcome at a time (the same
    draws; the two paths may sum in another order, so not compared bit for bit)."""
    suite = _suite(900, 5)
    names = ("ece", "aece", "mce", "rmsce", "ece_debiased")
    rng = np.random.default_rng(4)
    draws = [
        suite.binned((rng.random(900) < suite.conf).astype(np.float64), None, names)
        for _ in range(30)
    ]
    want = {name: float(np.mean([d[name] for d in draws])) for name in names}
    got = suite.noise_floor(30, seed=4, names=names)
    assert list(got) == list(want)
    for name in names:
        assert got[name] == pytest.approx(want[name], rel=1e-12, abs=1e-15), name


def test_fixed_point_prefix_sums_are_within_their_bound() -> None:
    from calibkit.metrics.resampled import _fixed_cumsum

    rng = np.random.default_rng(5)
    values = rng.normal(size=1000) * 3.0
    w = rng.integers(0, 4, (3, 1000))
    cum, scale = _fixed_cumsum(w, values, float(w.sum(axis=1).max()))
    assert cum.dtype == np.int64
    assert scale < 1.0
    want = np.cumsum(w * values, axis=1)
    bound = w.sum(axis=1).max() * np.abs(values).max() * 2.0**-31
    assert np.abs(cum * scale - want).max() <= bound


@pytest.mark.parametrize("k", [6, 120])
def test_sce_of_kept_counts_equals_blockwise_sce(monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    """The large-input SCE (counts kept, class totals at the end; float32 products from 100
    classes) against the sums of the small-input path on the same draws."""
    import calibkit.metrics.resampled as resampled_module
    import calibkit.metrics.suite as suite_module

    rng = np.random.default_rng(k)
    p = rng.dirichlet(np.ones(k) * 0.2, size=500)
    y = rng.integers(0, k, 500)
    suite = MetricSuite.from_outputs(as_outputs(y, probs=p), n_bins=10)
    small = suite.bootstrap(Resampling(n_boot=40, seed=2))
    monkeypatch.setattr(suite_module, "_BATCH_MAX_N", 0)
    monkeypatch.setattr(resampled_module, "_SCE_SMALL", 0)
    large = MetricSuite.from_outputs(as_outputs(y, probs=p), n_bins=10).bootstrap(
        Resampling(n_boot=40, seed=2)
    )
    bound = 6.2e-5 / k if k >= 100 else 1e-12  # float32 class totals: see _class_totals
    for name in METRIC_NAMES:
        tol = bound if name == "sce" else 1e-12
        assert large[name] == pytest.approx(small[name], rel=1e-10, abs=tol), name


@pytest.mark.parametrize("ties", [False, True])
def test_rank_sums_of_prefix_sums_equal_the_rankings(ties: bool) -> None:
    """The bootstrap's ranking sums, taken from its ascending prefix sums, are the very
    integers of Ranking.sums on the same counts (so the ranking metrics are unchanged)."""
    suite = _suite(500, 3)
    conf = suite.conf if ties else suite.conf + np.arange(500) * 1e-9  # distinct
    ss = SortedSamples(conf, suite.outcome, {}, suite.n_bins)
    from calibkit.metrics.selective import Ranking

    ranking = Ranking(conf, suite.correct)
    assert ranking.tied == ties
    counts = resample_counts(np.random.default_rng(5).integers(0, 500, (6, 500)))
    ss.compute(counts[:, ss.order], ("ece",))
    got, want = ss.rank_sums(), ranking.sums(counts)
    for field in ("count", "wrong", "cum_count", "cum_wrong"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field), err_msg=field)
    for name in RANKED:
        kernel = METRICS.get(name).kernel
        assert isinstance(kernel, RankStatistic)
        np.testing.assert_array_equal(kernel.function(got), kernel.function(want), err_msg=name)


@pytest.mark.parametrize(("n", "ties"), [(500, False), (500, True), (40, True)])
def test_prefix_ranks_equal_the_ranking_functions(n: int, ties: bool) -> None:
    """The built-in ranking metrics from the per-sample prefix sums (tie groups corrected)
    equal the registered functions on the group sums: exactly where the formulas are integer
    (AUROC, AUGRC, the risk and coverage points), to rounding where a float sum is taken in
    another order (AURC, E-AURC)."""
    from calibkit.metrics.rank_prefix import prefix_functions

    suite = _suite(n, 3)
    conf = np.round(suite.conf, 1) if ties else suite.conf + np.arange(n) * 1e-9
    ss = SortedSamples(conf, suite.outcome, {}, suite.n_bins)
    counts = resample_counts(np.random.default_rng(6).integers(0, n, (7, n)))
    counts[0] = 0
    counts[0, :3] = 1  # a replicate of three samples
    ss.compute(counts[:, ss.order], ("ece",))
    fast, sums = ss.prefix_ranks(), ss.rank_sums()
    assert fast.inner.size > 0 if ties else fast.inner.size == 0
    exact = ("failure_auroc", "augrc", "risk_at_cov80", "cov_at_risk5")
    for name in RANKED:
        kernel = METRICS.get(name).kernel
        assert isinstance(kernel, RankStatistic)
        got, want = prefix_functions()[kernel.function](fast), kernel.function(sums)
        if name in exact:
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13, err_msg=name)


@pytest.mark.parametrize("ties", [False, True])
def test_risk_at_any_coverage_of_prefix_sums_is_the_ranking_functions(ties: bool) -> None:
    """The risk at a coverage, found from the prefix sums by one binary search per row,
    is the very number of risk_at_coverage_of for coverages whose product with the total
    rounds either way (0.7 of 10, thirds), all (1) and past it."""
    from calibkit.metrics.selective import risk_at_coverage_of

    n = 300
    suite = _suite(n, 3)
    conf = np.round(suite.conf, 1) if ties else suite.conf + np.arange(n) * 1e-9
    ss = SortedSamples(conf, suite.outcome, {}, suite.n_bins)
    counts = resample_counts(np.random.default_rng(8).integers(0, n, (9, n)))
    counts[0] = 0
    counts[0, :10] = 1  # a total of 10: 0.7 * 10 rounds above 7
    counts[1] = 0
    counts[1, -3:] = 1  # three samples at the top
    ss.compute(counts[:, ss.order], ("ece",))
    fast, sums = ss.prefix_ranks(), ss.rank_sums()
    for coverage in (0.05, 0.1, 0.3, 1 / 3, 2 / 3, 0.7, 0.8, 0.9, 0.99, 1.0, 1.5):
        np.testing.assert_array_equal(
            fast.risk_at_coverage(coverage), risk_at_coverage_of(sums, coverage), str(coverage)
        )


def test_least_weight_is_the_first_passing_integer() -> None:
    """_least_weight: the least m with m / T >= coverage in float64, by trying every m."""
    from calibkit.metrics.rank_prefix import _least_weight

    totals = np.array([1, 2, 3, 7, 10, 30, 99, 1000, 10_001], dtype=np.float64)
    for coverage in (0.0, 0.1, 0.3, 1 / 3, 0.7, 0.8, 0.95, 1.0, 1.2):
        want = [
            next((m for m in range(int(t) + 1) if m / t >= coverage), int(t) + 1) for t in totals
        ]
        assert _least_weight(totals, coverage).tolist() == want, coverage


@pytest.mark.parametrize(("n", "ties"), [(3000, False), (3000, True), (600, True)])
def test_coverage_at_any_risk_of_prefix_sums_is_the_ranking_functions(n: int, ties: bool) -> None:
    """The coverage at a risk, found from chunk bounds of the prefix sums and the risks of
    the first chunks that may pass, is the very number of coverage_at_risk_of, for risks
    that none, some and every threshold passes, and rows with no weight at the top."""
    from calibkit.metrics.selective import coverage_at_risk_of

    suite = _suite(n, 3)
    conf = np.round(suite.conf, 2) if ties else suite.conf + np.arange(n) * 1e-9
    ss = SortedSamples(conf, suite.outcome, {}, suite.n_bins)
    counts = resample_counts(np.random.default_rng(9).integers(0, n, (9, n)))
    counts[0] = 0
    counts[0, :20] = 1  # twenty samples
    counts[1, ss.order[-300:]] = 0  # nothing among the 300 most confident
    ss.compute(counts[:, ss.order], ("ece",))
    fast, sums = ss.prefix_ranks(), ss.rank_sums()
    for risk in (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 1 / 3, 0.5, 1.0):
        np.testing.assert_array_equal(
            fast.coverage_at_risk(risk), coverage_at_risk_of(sums, risk), str(risk)
        )


def test_kept_noise_draws_are_those_of_a_fresh_suite() -> None:
    """evaluate_outputs reads the ECE's draws that evaluate drew with the adaptive ECE's:
    the same numbers as drawing them alone, and a copy the caller may change."""
    suite = _suite(700, 4)
    both = suite.noise_draws(50, 3)
    kept = suite.noise_draws(50, 3, ("ece",))
    fresh = _suite(700, 4).noise_draws(50, 3, ("ece",))
    np.testing.assert_array_equal(kept["ece"], fresh["ece"])
    np.testing.assert_array_equal(kept["ece"], both["ece"])
    kept["ece"][:] = -1.0
    np.testing.assert_array_equal(suite.noise_draws(50, 3, ("ece",))["ece"], fresh["ece"])
