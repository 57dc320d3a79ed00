"""Calibration tests with p-values: parity with MAPIE, hand cases, uniformity and power."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from scipy import stats

from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.calibration_tests import (
    UndefinedTestError,
    brownian_max_abs_sf,
    brownian_range_sf,
    calibration_test_metric,
    calibration_tests,
    cumulative_differences,
    cumulative_statistic,
    hosmer_lemeshow_statistic,
    hosmer_lemeshow_test,
    ks_test,
    kuiper_test,
    normal_two_sided,
    spiegelhalter_test,
    spiegelhalter_z,
)
from tests.conftest import shared_path

mapie = pytest.importorskip("mapie.metrics.calibration")

#: The example vectors of MAPIE 1.6.0's docstrings (mapie/metrics/calibration.py), restated.
MAPIE_EXAMPLES = [
    (np.array([0, 1, 0, 1, 0]), np.array([0.1, 0.9, 0.21, 0.9, 0.5])),
    (np.array([1, 0, 1, 0, 1, 0]), np.array([0.8, 0.3, 0.5, 0.5, 0.7, 0.1])),
    (np.array([1, 0, 0]), np.array([0.7, 0.3, 0.6])),
]
#: Same formulas, same summation order, so agreement is to rounding of a few sums of n terms;
#: 1e-10 (the issue's bar) leaves room for the p-value series' own truncation (about 1e-12).
TOL = 1e-10
BINARY = {"mode": "positive_class"}
#: ECCE-R of MAPIE's first example, from C_0 = 0 (the path never rises above 0, so it equals
#: ECCE-MAD there: max |C| = 0.162 over sigma).
KUIPER_FIRST = 0.978


def _range_from_origin(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """ECCE-R and its p-value as the authors' code computes it (facebookresearch/ecevecce,
    codes/calibration.py: the range of the path with ``C_0 = 0`` inserted), from MAPIE's
    path, length scale and Kuiper CDF (MAPIE's own statistic leaves ``C_0`` out)."""
    path = np.insert(mapie.cumulative_differences(y, s), 0, 0.0)
    stat = float(np.ptp(path) / mapie.length_scale(s))
    return stat, 1 - mapie.kuiper_cdf(stat)


def _mapie_two_sided(y: np.ndarray, s: np.ndarray) -> float:
    one_sided = mapie.spiegelhalter_p_value(y, s)  # MAPIE: 1 - Phi(Z)
    return 2 * min(one_sided, 1 - one_sided)


@pytest.mark.parametrize(("y", "s"), MAPIE_EXAMPLES)
def test_equals_mapie_on_its_own_examples(y: np.ndarray, s: np.ndarray) -> None:
    ks, ku = ks_test(y, s, **BINARY, ties="jitter"), kuiper_test(y, s, **BINARY, ties="jitter")
    assert abs(ks.statistic - mapie.kolmogorov_smirnov_statistic(y, s)) < TOL
    assert abs(ks.p_value - mapie.kolmogorov_smirnov_p_value(y, s)) < TOL
    stat, p_value = _range_from_origin(y, s)
    assert abs(ku.statistic - stat) < TOL
    assert abs(ku.p_value - p_value) < TOL
    sp = spiegelhalter_test(y, s, **BINARY)
    assert abs(sp.statistic - mapie.spiegelhalter_statistic(y, s)) < TOL
    assert abs(sp.p_value - _mapie_two_sided(y, s)) < TOL
    path, _ = cumulative_differences(s, y.astype(float), "jitter")
    assert np.max(np.abs(path - mapie.cumulative_differences(y, s))) < TOL


def test_mapie_docstring_numbers() -> None:
    """The numbers MAPIE's docstrings print, restated (rounded as they print them)."""
    y, s = MAPIE_EXAMPLES[0]
    assert round(ks_test(y, s, **BINARY, ties="jitter").statistic, 3) == 0.978
    # MAPIE prints 0.857, the range without C_0; C_0 = 0 lies above the path (max -0.02)
    assert round(mapie.kuiper_statistic(y, s), 3) == 0.857
    assert round(kuiper_test(y, s, **BINARY, ties="jitter").statistic, 3) == KUIPER_FIRST
    assert round(spiegelhalter_test(y, s, **BINARY).statistic, 3) == -0.757
    y, s = MAPIE_EXAMPLES[1]
    assert round(ks_test(y, s, **BINARY, ties="jitter").p_value, 4) == 0.7857
    assert round(kuiper_test(y, s, **BINARY, ties="jitter").p_value, 4) == 0.9684
    assert round(1 - spiegelhalter_test(y, s, **BINARY).p_value / 2, 4) == 0.8486  # Z < 0
    assert round(float(brownian_max_abs_sf(np.array(1.0))), 4) == round(1 - 0.3708, 4)
    assert round(float(brownian_range_sf(np.array(1.0))), 4) == round(1 - 0.0634, 4)


def test_the_series_equal_mapie_cdfs() -> None:
    x = np.array([0.2, 0.5, 0.9, 1.3, 2.0, 3.1, 4.5, 6.0, 9.0])
    mine_ks, mine_ku = brownian_max_abs_sf(x), brownian_range_sf(x)
    for xi, a, b in zip(x, mine_ks, mine_ku, strict=True):
        assert abs(a - (1 - mapie.kolmogorov_smirnov_cdf(xi))) < TOL
        assert abs(b - (1 - mapie.kuiper_cdf(xi))) < TOL
    assert brownian_max_abs_sf(np.array([0.0, 50.0])).tolist() == [1.0, 0.0]


def test_group_rule_equals_mapie_without_jitter_on_distinct_scores() -> None:
    rng = np.random.default_rng(3)
    s = rng.uniform(0.05, 0.95, 400)
    y = (rng.uniform(size=400) < s).astype(int)
    ref = mapie.cumulative_differences(y, s, noise_amplitude=0.0)
    path, sigma = cumulative_differences(s, y.astype(float))
    assert np.max(np.abs(path - ref)) < 1e-12  # the same cumsum of the same sorted terms
    assert abs(sigma - mapie.length_scale(s)) < 1e-15
    ks = ks_test(y, s, **BINARY)
    assert abs(ks.statistic - np.max(np.abs(ref)) / mapie.length_scale(s)) < TOL
    # and MAPIE's own jittered statistic differs only by the jitter (1e-8 relative)
    assert ks.statistic == pytest.approx(mapie.kolmogorov_smirnov_statistic(y, s), rel=1e-6)


@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["cifar10_resnet18.npz", "cifar10_lenet-5.npz"])
def test_equals_mapie_on_shared_top_label_outputs(name: str) -> None:
    data = np.load(shared_path(f"predictions/{name}"))
    out = as_outputs(data["labels"], data["probs"].astype(np.float64))
    conf, correct = out.confidence, out.correct.astype(int)
    ks, ku = ks_test(out, ties="jitter"), kuiper_test(out, ties="jitter")
    assert abs(ks.statistic - mapie.kolmogorov_smirnov_statistic(correct, conf)) < TOL
    assert abs(ks.p_value - mapie.kolmogorov_smirnov_p_value(correct, conf)) < TOL
    stat, p_value = _range_from_origin(correct, conf)
    assert abs(ku.statistic - stat) < TOL * max(1.0, stat)
    assert abs(ku.p_value - p_value) < TOL
    sp = spiegelhalter_test(out)
    assert abs(sp.statistic - mapie.spiegelhalter_statistic(correct, conf)) < TOL
    assert abs(sp.p_value - _mapie_two_sided(correct, conf)) < TOL


def test_hand_computed_spiegelhalter_and_paths() -> None:
    # (y - s)(1 - 2s): 0.2 * -0.6 + (-0.3) * 0.4 = -0.24; variance 0.36*0.16 + 0.16*0.21
    z = spiegelhalter_z(np.array([0.8, 0.3]), np.array([1.0, 0.0]))
    assert float(z) == pytest.approx(-0.24 / np.sqrt(0.0576 + 0.0336), rel=1e-14)
    assert float(normal_two_sided(z)) == pytest.approx(2 * stats.norm.sf(abs(float(z))), 1e-14)
    # sorted 0.3 (y 0), 0.6 (y 0), 0.7 (y 1): C = -0.1, -0.3, -0.2 (over n = 3: /3 of sums)
    path, sigma = cumulative_differences(np.array([0.7, 0.3, 0.6]), np.array([1.0, 0.0, 0.0]))
    assert path.tolist() == pytest.approx([-0.1, -0.3, -0.2], abs=1e-15)
    assert float(sigma) == pytest.approx(np.sqrt(0.21 + 0.21 + 0.24) / 3, rel=1e-14)
    assert float(cumulative_statistic("ks", path, sigma)) == pytest.approx(0.3 / sigma)
    # the range from C_0 = 0: max(0, -0.1) - min(0, -0.3) = 0.3 (without the origin: 0.2)
    assert float(cumulative_statistic("kuiper", path, sigma)) == pytest.approx(0.3 / sigma)


def test_kuiper_of_constant_confidences_is_their_whole_gap_not_zero() -> None:
    """Issue 32: one run of tied confidences is one point of the path; its range from the
    origin is |C_n| (= the KS statistic), not 0 with a p-value of 1."""
    s = np.full(400, 0.7)
    y = np.r_[np.ones(220), np.zeros(180)]  # accuracy 0.55 at confidence 0.7
    ks, ku = ks_test(y, s, **BINARY), kuiper_test(y, s, **BINARY)
    sigma = np.sqrt(400 * 0.7 * 0.3) / 400
    assert ku.statistic == pytest.approx(0.15 / sigma, rel=1e-12)
    assert ku.statistic == pytest.approx(ks.statistic, rel=1e-12)
    assert ku.p_value < 1e-4


def test_group_rule_reads_tied_runs_at_their_ends_whatever_the_row_order() -> None:
    s = np.array([0.5, 0.5, 0.2, 0.9])
    a, _ = cumulative_differences(s, np.array([1.0, 0.0, 0.0, 1.0]))
    b, _ = cumulative_differences(s, np.array([0.0, 1.0, 0.0, 1.0]))  # the tie's rows swapped
    # sorted: 0.2 (y 0) -> -0.2; run 0.5 (y 1 and 0) -> -0.2; 0.9 (y 1) -> -0.1; over n = 4
    expected = np.array([-0.2, -0.2, -0.2, -0.1]) / 4
    assert a.tolist() == pytest.approx(expected.tolist(), abs=1e-15)
    assert np.max(np.abs(a - b)) < 1e-15  # the run's terms summed in another order
    # vectorised over datasets: each row as alone
    both, sig = cumulative_differences(np.stack([s, s[::-1]]), np.stack([[1.0, 0, 0, 1]] * 2))
    alone, _ = cumulative_differences(s[::-1], np.array([1.0, 0, 0, 1]))
    assert np.array_equal(both[1], alone)
    assert sig.shape == (2,)


def test_hosmer_lemeshow_by_hand_and_scipy_chi2() -> None:
    # 6 samples, 3 groups of 2: (0.1, 0.2 | y 0, 0), (0.5, 0.5 | 1, 0), (0.8, 0.9 | 1, 1)
    s = np.array([0.5, 0.1, 0.9, 0.2, 0.8, 0.5])
    y = np.array([1, 0, 1, 0, 1, 0])
    by_hand = (
        (0 - 0.3) ** 2 / (0.3 * (1 - 0.3 / 2))
        + (1 - 1.0) ** 2 / (1.0 * (1 - 1.0 / 2))
        + (2 - 1.7) ** 2 / (1.7 * (1 - 1.7 / 2))
    )
    stat, groups = hosmer_lemeshow_statistic(s, y.astype(float), 3)
    assert (stat, groups) == (pytest.approx(by_hand, rel=1e-13), 3)
    t = hosmer_lemeshow_test(y, s, **BINARY, n_groups=3)  # held-out data: G df by default
    assert t.df == 3
    assert t.p_value == pytest.approx(stats.chi2.sf(by_hand, 3), rel=1e-12)
    t2 = hosmer_lemeshow_test(y, s, **BINARY, n_groups=3, df_offset=2)
    assert t2.df == 1
    assert t2.p_value == pytest.approx(stats.chi2.sf(by_hand, 1), rel=1e-12)
    # a tie run is never split: four equal scores stay in one group of four
    _, groups = hosmer_lemeshow_statistic(np.array([0.3] * 4 + [0.6, 0.7]), np.ones(6), 3)
    assert groups == 2


def test_top_label_uses_confidence_and_correctness() -> None:
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])
    labels = np.array([0, 2, 2, 0])
    conf, correct = probs.max(axis=1), np.array([1, 0, 1, 1])
    assert ks_test(labels, probs).statistic == ks_test(correct, conf, **BINARY).statistic
    assert spiegelhalter_test(labels, probs).p_value == pytest.approx(
        spiegelhalter_test(correct, conf, **BINARY).p_value, rel=1e-14
    )


def test_bad_input_is_one_clear_error() -> None:
    with pytest.raises(InputError, match="at least 2 samples"):
        ks_test([1], [0.7], **BINARY)
    with pytest.raises(InputError, match="too few distinct confidences"):
        hosmer_lemeshow_test([0, 1, 1, 0], [0.6] * 4, **BINARY)
    with pytest.raises(InputError, match="ties"):
        ks_test([0, 1], [0.3, 0.6], **BINARY, ties="random")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="n_groups"):
        hosmer_lemeshow_test([0, 1], [0.3, 0.6], **BINARY, n_groups=1)
    # the suite of every test keeps going: Hosmer-Lemeshow's NaN, the others computed
    tests = calibration_tests([0, 1, 1, 0], [0.6] * 4, **BINARY)
    assert np.isnan(tests["hosmer_lemeshow"].p_value)
    assert 0 < tests["ks"].p_value <= 1


# ----- undefined tests: a reason, never a bare NaN (issue #32) ---------------------------------
HL_WHY = "too few distinct confidences: 1 group of them, at least 2 needed"


def test_undefined_tests_carry_their_reason() -> None:
    tests = calibration_tests([0, 1, 1, 0], [0.6] * 4, **BINARY)
    assert tests["hosmer_lemeshow"].reason == HL_WHY
    assert tests["hosmer_lemeshow"].to_dict()["undefined"] == HL_WHY
    assert [tests[n].reason for n in ("spiegelhalter", "ks", "kuiper")] == [None] * 3
    half = spiegelhalter_test([0, 1, 1], [0.5, 0.5, 1.0], **BINARY)  # scores 0, 1/2, 1 only
    assert np.isnan(half.statistic)
    assert half.reason == "every confidence is 0, 1/2 or 1 (Z's null variance is 0)"
    for test in (ks_test, kuiper_test):
        sure = test([0, 1, 1], [0.0, 1.0, 1.0], **BINARY)  # sigma = 0
        assert np.isnan(sure.statistic)
        assert sure.reason == "every confidence is 0 or 1 (sigma is 0)"
    with pytest.raises(UndefinedTestError) as info:
        hosmer_lemeshow_test([0, 1, 1, 0], [0.6] * 4, **BINARY)
    assert info.value.reason == HL_WHY
    assert isinstance(info.value, InputError)  # as before: callers catching InputError
    again = pickle.loads(pickle.dumps(info.value))  # crosses a process boundary in a study
    assert (type(again), again.reason, str(again)) == (UndefinedTestError, HL_WHY, str(info.value))


@pytest.mark.parametrize(("test", "part"), [("hosmer_lemeshow", "p_value"), ("ks", "statistic")])
def test_registry_metric_of_an_undefined_test_raises_its_reason(test: str, part: str) -> None:
    metric = calibration_test_metric(test, part)
    scores = [0.6] * 4 if test == "hosmer_lemeshow" else [0.0, 1.0, 1.0, 0.0]
    with pytest.raises(UndefinedTestError, match=r"too few distinct|sigma is 0"):
        metric([0, 1, 1, 0], scores, mode="positive_class")


# ----- simulations ----------------------------------------------------------------------------
def _datasets(n_sets: int, n: int, seed: int, temperature: float = 1.0) -> tuple:
    """``n_sets`` binary datasets of ``n`` samples: outcomes drawn from the true probability
    ``sigmoid(z)``; the scores are ``sigmoid(z / temperature)`` (1: perfectly calibrated,
    0.5: overconfident)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.5, size=(n_sets, n))
    y = (rng.uniform(size=z.shape) < 1 / (1 + np.exp(-z))).astype(np.float64)
    return 1 / (1 + np.exp(-z / temperature)), y


def _p_values(s: np.ndarray, y: np.ndarray, df_offset: int = 0) -> dict[str, np.ndarray]:
    path, sigma = cumulative_differences(s, y)
    ks, ku = cumulative_statistic("ks", path, sigma), cumulative_statistic("kuiper", path, sigma)
    hl = [hosmer_lemeshow_statistic(si, yi, 10) for si, yi in zip(s, y, strict=True)]
    return {
        "spiegelhalter": normal_two_sided(spiegelhalter_z(s, y)),
        "ks": brownian_max_abs_sf(ks),
        "kuiper": brownian_range_sf(ku),
        "hosmer_lemeshow": np.array([stats.chi2.sf(c, g - df_offset) for c, g in hl]),
    }


#: A p-value uniformity check fails by chance once in 1,000 runs per test at this threshold
#: (the seeds are fixed, so a given run always passes or always fails).
UNIFORM_THRESHOLD = 1e-3


def _check_uniform(n_sets: int, n: int, seed: int) -> None:
    s, y = _datasets(n_sets, n, seed)
    for name, p in _p_values(s, y).items():
        assert stats.kstest(p, "uniform").pvalue > UNIFORM_THRESHOLD, name
        # never anti-conservative beyond chance: rejections at 0.05 within 3 standard errors
        assert np.mean(p < 0.05) < 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_sets), name
    # Hosmer-Lemeshow's textbook G - 2 degrees of freedom reject too often on held-out data
    # (the truth is G): about 11.5% at alpha = 0.05 for G = 10
    assert np.mean(_p_values(s, y, df_offset=2)["hosmer_lemeshow"] < 0.05) > 0.08


def test_p_values_are_uniform_on_300_calibrated_datasets() -> None:
    _check_uniform(300, 500, seed=11)


def test_p_values_are_uniform_on_2000_calibrated_datasets() -> None:
    """2,000 datasets of 5,000 samples (about 6 s here). With 500 samples, 2,000 datasets
    see that Kuiper's p-values are conservative (KS test of the p-values: 2e-4): the range of
    a 500-step path falls short of the Brownian motion's, an O(n^-1/2) effect."""
    _check_uniform(2000, 5000, seed=12)


def test_each_test_rejects_overconfidence() -> None:
    s, y = _datasets(300, 500, seed=21, temperature=0.5)  # overconfident by T = 0.5
    for name, p in _p_values(s, y).items():
        assert np.mean(p < 0.05) > 0.9, name
