"""Simulated outputs: their shape and invariants, their refusals, and calibkit's estimates on
a large sample landing within a few standard errors of the truth.

The truths themselves are checked against brute-force integration in
``tests/metrics/test_simulated_truth.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import calibkit as ck
from calibkit import Resampling
from calibkit.core.binning import equal_width_index
from calibkit.core.errors import InputError
from calibkit.metrics.simulated import MAX_ENTRIES, SHAPES, Simulation, simulate

#: One declaration of each shape (a gap shape with a nonzero gap).
EACH_SHAPE: list[dict[str, Any]] = [
    {"shape": "constant", "gap": 0.1},
    {"shape": "constant", "gap": -0.08, "group_gaps": None, "confidence": (3.0, 0.5)},
    {"shape": "sign_change", "gap": 0.1, "low": 0.5, "high": 0.9},
    {"shape": "platt", "params": (2.0, 1.0)},
    {"shape": "beta", "params": (1.0, 0.5, 0.2), "concentration": 0.2},
    {"shape": "classwise", "gap": 0.1},
    {"shape": "groups", "group_gaps": (0.0, 0.1), "group_weights": (3.0, 1.0)},
]


def _predicted_is_the_unique_maximum(probs: np.ndarray) -> bool:
    top2 = np.sort(probs, axis=1)[:, -2:]
    return bool((top2[:, 1] > top2[:, 0]).all())


@pytest.mark.parametrize("k", [2, 3, 10, 1000])
@pytest.mark.parametrize("case", EACH_SHAPE, ids=lambda c: c["shape"])
def test_outputs_are_probabilities_with_the_top_class_predicted(
    k: int, case: dict[str, Any]
) -> None:
    sim = simulate(2000 if k < 1000 else 300, k, seed=7, **case)
    n = sim.probs.shape[0]
    assert sim.probs.shape == (n, k)
    assert sim.probs.dtype == np.float64
    assert sim.labels.shape == (n,)
    assert sim.labels.dtype == np.int64
    assert ((sim.labels >= 0) & (sim.labels < k)).all()
    assert (sim.probs >= 0).all()
    np.testing.assert_allclose(sim.probs.sum(axis=1), 1.0, atol=1e-12)
    assert _predicted_is_the_unique_maximum(sim.probs)
    conf = sim.probs.max(axis=1)
    law = sim.model.law
    assert (conf >= law.low).all()
    assert (conf <= law.high).all()
    assert law.low >= 1 / k
    assert sim.truth.classwise.shape == (k, sim.truth.n_bins)
    if case["shape"] == "groups":
        assert sim.groups is not None
        assert sim.groups.shape == (n,)
        assert sim.groups.dtype == np.int64
        assert set(np.unique(sim.groups)) <= {0, 1}
    else:
        assert sim.groups is None


def test_a_seed_reproduces_the_outputs_and_another_does_not() -> None:
    kw: dict[str, Any] = {"shape": "groups", "n_classes": 5}
    one, two, other = (
        simulate(500, seed=3, **kw),
        simulate(500, seed=3, **kw),
        simulate(500, seed=4, **kw),
    )
    for name in ("probs", "labels", "groups"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    assert not np.array_equal(one.probs, other.probs)
    assert one.seed == 3
    assert isinstance(one, Simulation)


@pytest.mark.parametrize(
    "case",
    [
        {"shape": "constant", "gap": 0.0},
        {"shape": "sign_change", "gap": 0.0},
        {"shape": "classwise", "gap": 0.0},
        {"shape": "groups", "gap": 0.0},
        {"shape": "constant", "group_gaps": (0.0, 0.0)},
        {"shape": "platt", "params": (1.0, 0.0)},
        {"shape": "beta", "params": (1.0, 1.0, 0.0), "confidence": (0.5, 0.5)},
    ],
    ids=lambda c: c["shape"],
)
@pytest.mark.parametrize("k", [2, 4, 100])
def test_a_calibrated_model_has_every_truth_zero(case: dict[str, Any], k: int) -> None:
    truth = simulate(10, k, seed=0, **case).truth
    values = [truth.true_ece, truth.true_rmsce, truth.ks, *truth.group_ece, *truth.group_true_ece]
    values += [truth.values[name] for name in ("ece", "aece", "mce", "rmsce", "sce")]
    assert np.abs(values).max() < 1e-12
    assert np.abs(truth.classwise).max() < 1e-12
    assert truth.group_gap in (None, 0.0) or abs(truth.group_gap) < 1e-12
    assert truth.accuracy == pytest.approx(truth.confidence, abs=1e-12)


def test_classwise_miscalibration_hides_from_the_top_label() -> None:
    """Even classes over-, odd ones under-confident: the top label calibrated, each class not."""
    truth = simulate(10, 4, shape="classwise", gap=0.1, low=0.25, high=0.85, seed=0).truth
    assert truth.true_ece < 1e-12
    assert truth.ece < 1e-12
    assert truth.sce > 0.01


def test_a_constant_gap_is_every_top_label_error() -> None:
    """Over-confident by 0.1 without clipping: every top-label error is 0.1 exactly."""
    truth = simulate(10, 5, gap=0.1, low=0.3, seed=0).truth
    for name in ("true_ece", "true_rmsce", "ece", "aece", "mce", "rmsce", "ks"):
        assert getattr(truth, name) == pytest.approx(0.1, abs=1e-12), name
    assert truth.accuracy == pytest.approx(0.65 - 0.1, abs=1e-12)


def test_clipping_is_in_the_truth() -> None:
    """``c - 0.3`` on [0.2, 1]: below c = 0.3 the probability is 0, not negative."""
    truth = simulate(10, 5, gap=0.3, low=0.2, seed=0).truth
    expected = (0.1 * 0.25 + 0.7 * 0.3) / 0.8  # E[c - f(c)]: c on [0.2, 0.3), 0.3 above
    assert truth.true_ece == pytest.approx(expected, abs=1e-12)


def _signed_bins(
    conf: np.ndarray, outcome: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per bin: the sample mean of ``(outcome - conf) 1{bin}`` and its standard error."""
    idx = equal_width_index(conf, n_bins)
    n = conf.shape[0]
    resid = outcome - conf
    mean = np.bincount(idx, resid, minlength=n_bins) / n
    second = np.bincount(idx, resid**2, minlength=n_bins) / n
    return mean, np.sqrt(np.maximum(second - mean**2, 0.0) / n)


@pytest.fixture(scope="module")
def large() -> Simulation:
    return simulate(1_000_000, 3, shape="groups", gap=0.1, confidence=(2.0, 1.0), seed=11)


def test_large_sample_bins_are_within_a_few_standard_errors(large: Simulation) -> None:
    """Each equal-width bin's signed gap, top-label and class by class (n = 10**6)."""
    truth, probs, labels = large.truth, large.probs, large.labels
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    mean, se = _signed_bins(conf, correct, truth.n_bins)
    expected = truth.bins.accuracy_sum - truth.bins.confidence_sum
    assert np.all(np.abs(mean - expected) <= 4.5 * se + 1e-12)
    for k in range(probs.shape[1]):
        mean, se = _signed_bins(probs[:, k], (labels == k).astype(float), truth.n_bins)
        assert np.all(np.abs(mean - truth.classwise[k]) <= 4.5 * se + 1e-12), k


def test_calibkit_estimates_approach_the_truth(large: Simulation) -> None:
    """calibkit's own estimates on 10**6 samples: within a few standard errors."""
    truth, probs, labels = large.truth, large.probs, large.labels
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    se = np.sqrt(np.var(correct - conf) / conf.shape[0])  # the standard error of a mean gap
    assert ck.accuracy(labels, probs=probs) == pytest.approx(truth.accuracy, abs=4 * se)
    for name, metric in [
        ("ece", ck.ece),
        ("aece", ck.aece),
        ("rmsce", ck.rmsce),
        ("ks", ck.ks_error),
    ]:
        assert metric(labels, probs=probs) == pytest.approx(getattr(truth, name), abs=4 * se), name
    assert ck.sce(labels, probs=probs) == pytest.approx(truth.sce, abs=6 * se)
    groups = ck.evaluate_groups(
        labels, probs=probs, groups=large.groups, n_floor_draws=0, resampling=Resampling(n_boot=0)
    )
    for g, name in enumerate(groups.names):
        assert groups.values[name]["ece"] == pytest.approx(truth.group_ece[g], abs=8 * se)
    assert groups.gap == pytest.approx(truth.group_gap, abs=12 * se)


def test_a_large_sample_of_many_classes_is_quick_enough() -> None:
    """n = 10**4 with K = 1000 (ten million probabilities): the shares' draws are vectorised."""
    sim = simulate(10_000, 1000, seed=0, concentration=0.3)
    assert sim.probs.shape == (10_000, 1000)
    assert _predicted_is_the_unique_maximum(sim.probs)


@pytest.mark.parametrize(
    ("argument", "kwargs"),
    [
        ("n", {"n": 0}),
        ("n", {"n": 2.5}),
        ("n", {"n": True}),
        ("n", {"n": MAX_ENTRIES // 10 + 1, "n_classes": 10}),
        ("n_classes", {"n_classes": 1}),
        ("n_classes", {"n_classes": 3.0}),
        ("seed", {"seed": None}),
        ("seed", {"seed": -1}),
        ("shape", {"shape": "constnat"}),
        ("shape", {"shape": 3}),
        ("gap", {"gap": 1.5}),
        ("gap", {"gap": float("nan")}),
        ("gap", {"gap": "0.1"}),
        ("gap", {"shape": "platt", "gap": 0.1}),
        ("gap", {"group_gaps": (0.1, 0.2), "gap": 0.1}),
        ("params", {"params": (1.0, 0.0)}),
        ("params", {"shape": "platt", "params": (0.0, 0.0)}),
        ("params", {"shape": "platt", "params": (1.0,)}),
        ("params", {"shape": "beta", "params": (-1.0, 1.0, 0.0)}),
        ("params", {"shape": "beta", "params": "abc"}),
        ("low", {"n_classes": 4, "low": 0.2}),
        ("low", {"low": 0.9, "high": 0.8}),
        ("high", {"high": 1.2}),
        ("high", {"n_classes": 4, "high": 0.2}),
        ("confidence", {"confidence": (0.0, 1.0)}),
        ("confidence", {"confidence": (1.0,)}),
        ("confidence", {"confidence": 2.0}),
        ("concentration", {"concentration": 0.01}),
        ("group_gaps", {"group_gaps": ()}),
        ("group_gaps", {"group_gaps": (0.1, 2.0)}),
        ("group_gaps", {"group_gaps": [0.0] * 101}),
        ("group_gaps", {"shape": "platt", "group_gaps": (0.1,)}),
        ("group_weights", {"group_gaps": (0.1, 0.2), "group_weights": (1.0,)}),
        ("group_weights", {"group_gaps": (0.1, 0.2), "group_weights": (1.0, 0.0)}),
        ("group_weights", {"group_weights": (1.0, 1.0)}),
        ("class_gaps", {"shape": "classwise", "n_classes": 3, "class_gaps": (0.1, 0.2)}),
        ("class_gaps", {"class_gaps": [0.1] * 10}),
        ("class_gaps", {"shape": "classwise", "n_classes": 40, "class_gaps": np.arange(40) / 100}),
        ("n_bins", {"n_bins": 0}),
    ],
)
def test_a_bad_argument_is_an_input_error_naming_it(argument: str, kwargs: dict[str, Any]) -> None:
    call: dict[str, Any] = {"n": 10, "n_classes": 10, "seed": 0, **kwargs}
    with pytest.raises(InputError) as caught:
        simulate(**call)
    assert caught.value.argument == argument
    assert str(caught.value).startswith(f"{argument}: expected ")


def test_an_unknown_shape_suggests_the_nearest() -> None:
    with pytest.raises(InputError, match="did you mean 'constant'"):
        simulate(10, seed=0, shape="constnat")  # type: ignore[arg-type]
    assert set(SHAPES) == {"constant", "sign_change", "platt", "beta", "classwise", "groups"}


def test_a_group_is_refused_by_a_model_without_groups() -> None:
    truth = simulate(10, 3, seed=0).truth
    with pytest.raises(InputError, match="group: expected None"):
        truth.p_correct([0.5], group=0)
    grouped = simulate(10, 3, shape="groups", seed=0).truth
    with pytest.raises(InputError, match=r"group: expected a group in \[0, 2\]"):
        grouped.p_correct([0.5], group=3)


def test_the_package_root_exports_the_simulator() -> None:
    assert ck.simulate is simulate
    assert ck.Simulation is Simulation
    assert ck.SimulationTruth is type(simulate(10, 3, seed=0).truth)
