"""MetricSuite and evaluate(): agreement with the functions, weights, bootstrap, noise floor."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibkit import Binning, Resampling
from calibkit.core.binning import equal_mass_index
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import EXTRA_METRICS, METRIC_NAMES, METRICS, evaluate
from calibkit.metrics.conformal import SET_METRICS
from calibkit.metrics.suite import MetricSuite
from tests.metrics import reference as ref

FUNCTIONAL = {name: METRICS.get(name).function for name in METRIC_NAMES}
UNBIASED = ("accuracy", "nll", "brier", "entropy")  # sample means: the estimate is central
BINNED = ("ece", "aece", "mce", "rmsce", "ece_debiased", "sce")


def functional_values(labels: np.ndarray, probs: np.ndarray, **kw: object) -> dict[str, float]:
    return {name: fn(labels, probs=probs, **kw) for name, fn in FUNCTIONAL.items()}


def test_registry_holds_every_metric() -> None:
    assert set(METRICS.names()) == set(METRIC_NAMES) | set(EXTRA_METRICS) | set(SET_METRICS)


@pytest.mark.parametrize(("k", "n_bins"), [(2, 15), (5, 10), (10, 7)])
def test_suite_equals_functions(k: int, n_bins: int) -> None:
    labels, probs = ref.overconfident_data(2000, k, seed=k)
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs), n_bins=n_bins)
    got = suite.compute()
    assert list(got) == list(METRIC_NAMES)
    for name, fn in FUNCTIONAL.items():
        kw = {"n_bins": n_bins} if name in BINNED else {}
        expected = fn(labels, probs=probs, **kw)
        assert got[name] == pytest.approx(expected, abs=1e-12), name


def test_suite_positive_class_mode() -> None:
    rng = np.random.default_rng(2)
    p = rng.random(1000)
    labels = (rng.random(1000) < p**1.5).astype(np.int64)
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=p), mode="positive_class")
    got = suite.compute()
    for name in ("ece", "aece", "mce", "rmsce", "ece_debiased", "ks", "mmce"):
        expected = FUNCTIONAL[name](labels, probs=p, mode="positive_class")
        assert got[name] == pytest.approx(expected, abs=1e-12), name


def test_suite_equal_mass_edges_are_its_own() -> None:
    """The equal-mass stats carry equal-mass edges, not the equal-width ones."""
    labels, probs = ref.overconfident_data(500, 3, seed=1)
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs), n_bins=10)
    idx, edges = suite._equal_mass_index(None)
    conf = probs.max(axis=1)
    exp_idx, exp_edges = equal_mass_index(conf, 10)
    np.testing.assert_array_equal(idx, exp_idx)
    np.testing.assert_array_equal(edges, exp_edges)
    assert not np.array_equal(edges, np.arange(11) / 10)


# --- sample weights: integer weights are repeated samples -------------------------------


@given(st.integers(0, 10_000), st.integers(1, 40), st.sampled_from([2, 3, 6]), st.data())
@settings(max_examples=40, deadline=None)
def test_integer_weights_equal_repeated_samples(
    seed: int, n: int, k: int, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.7), size=n)
    probs = np.round(probs * 8) / 8  # ties, exact zeros and ones, values on bin edges
    probs[:, 0] += 1.0 - probs.sum(axis=1)
    probs = np.abs(probs)
    probs /= probs.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    w = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    if w.sum() == 0:
        w[0] = 2
    rep = np.repeat(np.arange(n), w)
    n_bins = data.draw(st.sampled_from([1, 4, 15]))
    for name, fn in FUNCTIONAL.items():
        kw = {"n_bins": n_bins} if name in BINNED else {}
        weighted = _or_undefined(fn, labels, probs=probs, sample_weight=w, **kw)
        repeated = _or_undefined(fn, labels[rep], probs=probs[rep], **kw)
        assert weighted == pytest.approx(repeated, abs=1e-12), name
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs), n_bins=n_bins)
    one_shot = MetricSuite.from_outputs(as_outputs(labels[rep], probs=probs[rep]), n_bins=n_bins)
    got, expected = suite.compute(w.astype(np.float64)), one_shot.compute()
    for name in METRIC_NAMES:  # NaN: the failure AUROC of a sample with one outcome only
        assert got[name] == pytest.approx(expected[name], abs=1e-12, nan_ok=True), name


def _or_undefined(fn: Callable[..., float], *args: object, **kw: object) -> float | str:
    """``fn``'s value, or the argument its InputError names (an undefined metric: the
    failure AUROC without both correct and wrong predictions)."""
    try:
        return fn(*args, **kw)
    except InputError as err:
        return err.argument


# --- bootstrap --------------------------------------------------------------------------


def test_bootstrap_is_seeded() -> None:
    labels, probs = ref.overconfident_data(400, 3, seed=3)
    a = evaluate(labels, probs=probs, n_floor_draws=5, resampling=Resampling(n_boot=60, seed=7))
    b = evaluate(labels, probs=probs, n_floor_draws=5, resampling=Resampling(n_boot=60, seed=7))
    c = evaluate(labels, probs=probs, n_floor_draws=5, resampling=Resampling(n_boot=60, seed=8))
    assert a.ci == b.ci
    assert a.values == b.values
    assert a.ci != c.ci
    assert a.values["ece"] == c.values["ece"]  # the estimate itself has no randomness


#: The metrics evaluate prints an interval of (no honest interval for the others: their
#: entry's ``interval`` is "none", after the conformance study, experiments/intervals).
WITH_INTERVAL = [n for n in METRIC_NAMES if METRICS.get(n).interval != "none"]


def test_every_interval_contains_its_estimate() -> None:
    """Always: for sample means, and for the calibration errors, whose interval is of the
    true error and holds the printed plug-in value."""
    for labels, probs in (
        ref.overconfident_data(2000, 4, seed=4, temperature=0.4),
        ref.calibrated_data(1000, 3, seed=0),
    ):
        res = evaluate(
            labels, probs=probs, n_floor_draws=0, resampling=Resampling(n_boot=200, seed=0)
        )
        assert set(res.ci) == set(WITH_INTERVAL)
        for name, (lo, hi) in res.ci.items():
            assert lo <= res.values[name] <= hi, name
            assert lo < hi, name


def test_the_percentile_bootstrap_misses_a_calibrated_models_truth() -> None:
    """Why the calibration errors' intervals are of the true error: near calibration the
    percentile bootstrap of the plug-in lies above 0, the truth (and SCE's replicates all
    exceed the estimate); the interval evaluate prints starts at 0 and names its estimand."""
    labels, probs = ref.calibrated_data(1000, 3, seed=0)
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs))
    values, boot = suite.compute(), suite.bootstrap(Resampling(n_boot=100, level=0.95, seed=0))
    assert boot["ece"][0] > 0.0
    assert boot["sce"][0] > values["sce"]
    res = evaluate(labels, probs=probs, n_floor_draws=0, resampling=Resampling(n_boot=100, seed=0))
    for name in UNBIASED:
        lo, hi = res.ci[name]
        assert lo <= res.values[name] <= hi, name
    assert res.ci["ece"][0] == 0.0
    assert "sce" not in res.ci
    assert res.to_dict()["ci_estimand"]["ece"] == (
        "the population equal-width 15-bin L1 calibration error"
    )


def test_intervals_narrow_with_n() -> None:
    widths = []
    for n in (500, 8000):
        labels, probs = ref.overconfident_data(n, 3, seed=5)
        res = evaluate(
            labels, probs=probs, n_floor_draws=0, resampling=Resampling(n_boot=100, seed=0)
        )
        widths.append({k: hi - lo for k, (lo, hi) in res.ci.items()})
    for name in WITH_INTERVAL:
        ratio = widths[1][name] / widths[0][name]
        # 1/sqrt(16) = 0.25 expected for the bootstrap; the true error's bounds carry the
        # bins' standard errors, which also shrink as 1/sqrt(n)
        assert ratio < 0.5, (name, ratio)


# --- noise floor ------------------------------------------------------------------------


def test_noise_floor_matches_calibrated_ece() -> None:
    """For a calibrated model, the ECE's average over data sets equals its floor."""
    eces, floors = [], []
    for seed in range(12):
        labels, probs = ref.calibrated_data(1000, 3, seed)
        suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs))
        eces.append(suite.compute(names=("ece", "aece")))
        floors.append(suite.noise_floor(n_draws=40, seed=seed))
    for name in ("ece", "aece"):
        mean_value = np.mean([e[name] for e in eces])
        mean_floor = np.mean([f[name] for f in floors])
        assert mean_value == pytest.approx(mean_floor, rel=0.15), name
    # an overconfident model is far above its floor
    labels, probs = ref.overconfident_data(1000, 3, seed=0, temperature=0.4)
    res = evaluate(labels, probs=probs, n_floor_draws=40, resampling=Resampling(n_boot=0))
    assert res.values["ece"] > 3 * res.values["ece_floor"]


def test_noise_floor_shrinks_like_one_over_sqrt_n() -> None:
    floors = []
    for n in (1000, 16000):
        labels, probs = ref.calibrated_data(n, 3, seed=1)
        suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs))
        floors.append(suite.noise_floor(n_draws=30, seed=0))
    for name in ("ece", "aece"):
        ratio = floors[1][name] / floors[0][name]
        assert ratio == pytest.approx(0.25, abs=0.07), (name, ratio)


def test_noise_floor_is_seeded() -> None:
    labels, probs = ref.calibrated_data(300, 3, seed=2)
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs))
    assert suite.noise_floor(10, seed=1) == suite.noise_floor(10, seed=1)
    assert suite.noise_floor(10, seed=1) != suite.noise_floor(10, seed=2)


# --- evaluate() -------------------------------------------------------------------------


def test_evaluate_result() -> None:
    labels, probs = ref.overconfident_data(300, 3, seed=6)
    res = evaluate(labels, probs=probs, n_floor_draws=3, resampling=Resampling(n_boot=0))
    assert res.ci == {}
    assert set(res.values) == set(METRIC_NAMES) | {"ece_floor", "aece_floor"}
    assert (res.n_samples, res.n_classes, res.n_bins) == (300, 3, 15)
    d = res.to_dict()
    assert d["n_samples"] == 300
    assert d["ci_level"] == 0.95
    no_floor = evaluate(labels, probs=probs, n_floor_draws=0, resampling=Resampling(n_boot=0))
    assert "ece_floor" not in no_floor.values
    np.testing.assert_allclose(
        [no_floor.values[n] for n in METRIC_NAMES],
        [functional_values(labels, probs)[n] for n in METRIC_NAMES],
        rtol=0,
        atol=1e-12,
    )


def test_evaluate_argument_errors() -> None:
    labels, probs = ref.overconfident_data(50, 3, seed=7)
    with pytest.raises(InputError, match=r"^n_floor_draws: expected an integer"):
        evaluate(labels, probs=probs, n_floor_draws=-1)
    suite = MetricSuite.from_outputs(as_outputs(labels, probs=probs))
    with pytest.raises(InputError, match=r"^n_boot: expected at least 1"):
        suite.bootstrap(Resampling(n_boot=0))


@pytest.mark.parametrize("k", [2, 7, 60])
def test_sce_split_equals_sample_order_sums(k: int) -> None:
    """The large-N SCE (first bin from class totals) equals the per-bin sums, row by row."""
    from calibkit.metrics.bin_errors import (
        sce_batch,
        sce_batch_split,
        sce_from_index,
        sce_index,
        sce_maps,
        sce_split_map,
    )

    rng = np.random.default_rng(k)
    probs = rng.dirichlet(np.full(k, 0.3), size=300)
    labels = rng.integers(0, k, 300)
    weights = rng.integers(0, 3, size=(4, 300)).astype(np.float64)
    exact = sce_batch(sce_maps(probs, labels, 15), k, weights)
    split = sce_batch_split(probs, sce_split_map(probs, labels, 15), 15, weights)
    one = [sce_from_index(sce_index(probs, 15), probs, labels, 15, w) for w in weights]
    np.testing.assert_allclose(split, exact, rtol=1e-12, atol=0)
    np.testing.assert_allclose(exact, one, rtol=1e-12, atol=0)


def test_the_binning_object_is_what_reaches_the_metrics() -> None:
    """evaluate bins as its Binning says: its ECE is ece's with the same bins and mode."""
    from calibkit.metrics import ece

    labels, probs = ref.overconfident_data(300, 2, seed=4)
    for binning in (Binning(n_bins=7), Binning(n_bins=7, mode="positive_class")):
        res = evaluate(labels, probs=probs, binning=binning, resampling=Resampling(n_boot=0))
        want = ece(labels, probs=probs, n_bins=7, mode=binning.mode)
        assert res.values["ece"] == pytest.approx(want, rel=1e-9)
        assert res.n_bins == 7
