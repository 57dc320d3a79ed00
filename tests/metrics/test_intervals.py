"""Intervals for the true binned calibration error: the formulas against brute force, and
coverage of a known truth on simulated models (issue #43)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from calibkit.core.errors import InputError
from calibkit.metrics import ece
from calibkit.metrics.intervals import (
    _bins,
    _l2_moments,
    ece_interval,
    folded_normal_mean,
    l2_ece_interval,
    unfold,
)


def overconfident(n: int, gap: float, rng: np.random.Generator, k: int = 10) -> tuple:
    """A ``k``-class model: confidence ``c ~ U[0.15, 0.99]``, right with probability
    ``c - gap``: its true binned L1 and L2 errors both equal ``gap`` (any bins)."""
    c = rng.uniform(0.15, 0.99, n)
    correct = rng.uniform(size=n) < c - gap
    probs = np.empty((n, k))
    probs[:, 0] = c
    probs[:, 1:] = ((1 - c) / (k - 1))[:, None]
    labels = np.where(correct, 0, rng.integers(1, k, n))
    return labels, probs


def test_t_is_the_per_bin_u_statistic_over_pairs() -> None:
    """``T = sum_b (n_b / n) mean_{i != j in b} u_i u_j``, by brute force over the pairs."""
    rng = np.random.default_rng(0)
    labels, probs = overconfident(60, 0.1, rng)
    conf, correct = probs.max(1), (labels == 0).astype(float)
    u = correct - conf
    bins = np.minimum((conf * 4).astype(int), 3)
    t = 0.0
    for b in range(4):
        ub = u[bins == b]
        pairs = [ub[i] * ub[j] for i, j in itertools.permutations(range(ub.size), 2)]
        t += ub.size / u.size * (np.mean(pairs) if pairs else 0.0)
    got, _ = _l2_moments(_bins(labels, probs, None, 4, "equal_width", "top_label"))
    assert got == pytest.approx(t, rel=1e-10)


def test_the_standard_error_matches_the_spread_of_t_calibrated_and_not() -> None:
    """The analytic standard error against the standard deviation of ``T`` over 1,500
    simulated data sets, at calibration (measured 1.73x: the plug-in first-order term, as
    Sun et al. estimate it, is then as large as the second-order one: conservative) and away
    from it (1.15x)."""
    rng = np.random.default_rng(1)
    for gap in (0.0, 0.05):
        ts, ses = [], []
        for _ in range(1500):
            labels, probs = overconfident(2000, gap, rng)
            t, se = _l2_moments(_bins(labels, probs, None, 15, "equal_width", "top_label"))
            ts.append(t)
            ses.append(se)
        assert np.mean(ts) == pytest.approx(gap**2, abs=3 * np.std(ts) / np.sqrt(1500))
        ratio = np.sqrt(np.mean(np.square(ses))) / np.std(ts)
        assert 0.95 <= ratio <= (1.9 if gap == 0 else 1.25)


def test_folded_normal_mean_is_scipys_and_unfold_inverts_it() -> None:
    gap, scale = np.array([0.0, 0.01, 0.2, 1.5]), np.array([0.1, 0.05, 0.1, 0.5])
    want = [stats.foldnorm(g / s, scale=s).mean() for g, s in zip(gap, scale, strict=True)]
    np.testing.assert_allclose(folded_normal_mean(gap, scale), want, rtol=1e-9)
    np.testing.assert_allclose(unfold(folded_normal_mean(gap, scale), scale), gap, atol=1e-4)
    below = np.array([0.5 * 0.1 * np.sqrt(2 / np.pi)])  # under the mean at 0
    assert unfold(below, np.array([0.1]))[0] == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(("n", "gap"), [(1000, 0.0), (1000, 0.01), (5000, 0.03), (2000, 0.1)])
def test_the_intervals_cover_the_true_error(n: int, gap: float) -> None:
    """95% intervals cover the true error in at least 93% of 200 data sets (the percentile
    bootstrap of the plug-in ECE covered 0% of these at gaps up to 1%, issue #43), and every
    estimate lies in its own interval."""
    rng = np.random.default_rng(int(gap * 1000) + n)
    covered = {"l1": 0, "l2": 0}
    for _ in range(200):
        labels, probs = overconfident(n, gap, rng)
        for name, f in (("l1", ece_interval), ("l2", l2_ece_interval)):
            ci = f(labels, probs=probs)
            assert ci.low <= ci.estimate <= ci.high
            covered[name] += ci.low <= gap <= ci.high
    assert covered["l1"] / 200 >= 0.93
    assert covered["l2"] / 200 >= 0.93


def test_the_estimate_is_less_biased_than_the_plug_in_near_calibration() -> None:
    rng = np.random.default_rng(2)
    plug, debiased = [], []
    for _ in range(100):
        labels, probs = overconfident(1000, 0.0, rng)
        plug.append(ece(labels, probs=probs))
        debiased.append(ece_interval(labels, probs=probs).estimate)
    assert np.mean(debiased) < 0.75 * np.mean(plug)


def test_the_interval_names_its_estimand() -> None:
    ci = ece_interval([0, 1, 1], probs=[[0.9, 0.1], [0.3, 0.7], [0.4, 0.6]], n_bins=10)
    assert ci.estimand == "the population equal-width 10-bin L1 calibration error"
    assert ci.level == 0.95


@pytest.mark.parametrize("level", [0, 1, 1.5, True, "0.9"])
def test_a_bad_level_is_one_input_error(level: object) -> None:
    with pytest.raises(InputError, match=r"^level: expected a number in \(0, 1\)"):
        ece_interval([0, 1], probs=[[0.9, 0.1], [0.3, 0.7]], level=level)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["top_label", "positive_class"])
def test_group_intervals_are_each_groups_own_bit_for_bit(mode: str) -> None:
    """One pass over group x bin gives exactly what ece_interval gives on each group's rows
    (60 groups of uneven sizes, some with bins of one row), at two levels."""
    from calibkit.metrics.intervals import group_ece_intervals

    rng = np.random.default_rng(7)
    n, k, groups = 6_000, 4 if mode == "top_label" else 2, 60
    z = rng.normal(size=(n, k)) * rng.uniform(0.5, 3.0, size=(n, 1))
    y = rng.integers(0, k, n)
    codes = rng.choice(groups, size=n, p=rng.dirichlet(np.ones(groups)))
    codes[:groups] = np.arange(groups)  # every group has a row
    codes[np.isin(codes, [3, 4])] = 3  # group 4: its rows moved to group 3 ...
    codes[[0, 1, 2, 4]] = [0, 1, 4, 4]  # ... but two: bins of one row
    levels = (0.95, 1.0 - 0.05 / groups)
    got = group_ece_intervals(
        y, logits=z, codes=codes, n_groups=groups, n_bins=15, mode=mode, levels=levels
    )
    for i, level in enumerate(levels):
        for g in range(groups):
            rows = codes == g
            want = ece_interval(y[rows], logits=z[rows], n_bins=15, mode=mode, level=level)
            assert got[i][g] == want  # every field, exactly


def test_group_intervals_refuse_bad_codes() -> None:
    from calibkit.metrics.intervals import group_ece_intervals

    probs = [[0.7, 0.3], [0.4, 0.6], [0.9, 0.1]]
    with pytest.raises(InputError, match=r"^codes: "):
        group_ece_intervals([0, 1, 0], probs=probs, codes=[0, 1, 2], n_groups=2)
    with pytest.raises(InputError, match=r"^codes: .*none in 1"):
        group_ece_intervals([0, 1, 0], probs=probs, codes=[0, 0, 2], n_groups=3)


def test_t_and_its_first_order_variance_are_sun_et_al_s_t_mn_and_sigma_1() -> None:
    """Against Sun, Chaudhari, Barnett and Dobriban's own definitions (sylydya/CI-ECE,
    ``experiments/estimator.py``, ``T_mn_estimator`` with ``topk=1``), restated here bin by
    bin on identical inputs: ``T_mn = sum_b n_b/(n_b - 1) (n_b mean(u)^2 - mean(u^2)) / n``
    (no factor for a bin of one) and ``sigma_1^2 = sum_b (n_b/n)(4 mean(u)^2 mean(u^2) -
    3 mean(u)^4) - (sum_b (n_b/n) mean(u)^2)^2``; calibkit's standard error at a large
    miscalibrated sample is sqrt(sigma_1^2 / n) plus the second-order term it adds."""
    rng = np.random.default_rng(7)
    labels, probs = overconfident(3000, 0.07, rng)
    conf, u = probs.max(1), (labels == 0).astype(float) - probs.max(1)
    n, n_bins = u.size, 15
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    t_mn, first, second = 0.0, 0.0, 0.0
    for b in np.unique(bins):
        ub = u[bins == b]
        nb = ub.size
        est = nb * ub.mean() ** 2 - np.mean(ub**2)
        if nb > 1:
            est *= nb / (nb - 1)
        t_mn += est / n
        first += nb / n * (4 * ub.mean() ** 2 * np.mean(ub**2) - 3 * ub.mean() ** 4)
        second += nb / n * ub.mean() ** 2
    sigma_1 = first - second**2
    got_t, got_se = _l2_moments(_bins(labels, probs, None, n_bins, "equal_width", "top_label"))
    assert got_t == pytest.approx(t_mn, rel=1e-10)
    assert got_se >= np.sqrt(sigma_1 / n)  # plus the (small, here) second-order term
    assert got_se == pytest.approx(np.sqrt(sigma_1 / n), rel=0.05)
