"""ReliabilityDisplay: several models on one diagram, per-class panels, bars = the tables."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB

from calibkit.core.binning import bin_stats
from calibkit.core.errors import InputError
from calibkit.metrics import reliability_stats
from calibkit.reporting.display import ReliabilityDisplay, bar_heights


def _outputs(n: int = 2000, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(n, k)) * 2.5
    labels = np.argmax(logits / 2.0 + rng.gumbel(size=logits.shape), axis=1)
    return logits, labels


def test_several_models_on_one_diagram_have_the_tables_bars() -> None:
    logits, labels = _outputs()
    models = {"raw": logits, "T = 2": logits / 2.0}
    display = ReliabilityDisplay.from_predictions(labels, models, kind="logits", n_bins=12)
    assert isinstance(display.figure_, Figure)
    (ax,) = display.axes_
    for name, z in models.items():
        stats = reliability_stats(labels, logits=z, n_bins=12)
        np.testing.assert_array_equal(bar_heights(ax, name), stats.accuracy[stats.nonempty])


def test_per_class_panels_bin_each_class_one_vs_rest() -> None:
    logits, labels = _outputs()
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    display = ReliabilityDisplay.from_predictions(
        labels, {"a": probs}, per_class=True, class_names="wxyz", scheme="equal_mass"
    )
    assert [ax.get_title() for ax in display.axes_] == [f"class {c}" for c in "wxyz"]
    for k, ax in enumerate(display.axes_):
        stats = bin_stats(probs[:, k], (labels == k).astype(float), 10, scheme="equal_mass")
        np.testing.assert_array_equal(bar_heights(ax, "a"), stats.accuracy[stats.nonempty])


def test_from_estimator_uses_the_estimators_classes_and_a_given_axes() -> None:
    x, y = make_classification(n_samples=400, random_state=0)
    names = np.array(["neg", "pos"])[y]
    models = {"lr": LogisticRegression().fit(x, names), "nb": GaussianNB().fit(x, names)}
    fig = Figure()
    ax = fig.add_subplot()
    display = ReliabilityDisplay.from_estimator(models, x, names, ax=ax, mode="positive_class")
    assert display.axes_ == [ax]
    assert display.figure_ is fig
    p = models["nb"].predict_proba(x)
    stats = reliability_stats(y, probs=p, n_bins=10, mode="positive_class")
    np.testing.assert_array_equal(bar_heights(ax, "nb"), stats.accuracy[stats.nonempty])


def test_bad_inputs_are_refused_by_name() -> None:
    logits, labels = _outputs()
    with pytest.raises(InputError, match="ax"):
        ReliabilityDisplay.from_predictions(
            labels, logits, kind="logits", per_class=True, ax=Figure().add_subplot()
        )
    with pytest.raises(InputError, match="panels"):
        ReliabilityDisplay({})
    x, y = make_classification(n_samples=100, random_state=0)
    with pytest.raises(InputError, match="y"):
        ReliabilityDisplay.from_estimator(LogisticRegression().fit(x, y), x, y + 5)
