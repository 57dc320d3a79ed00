"""Figures: bars are exactly the BinStats numbers, empty bins draw nothing, PNGs are atomic."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.lines import Line2D

from calibkit.core.binning import BinStats, bin_stats
from calibkit.core.errors import InputError
from calibkit.metrics import ece, reliability_stats
from calibkit.metrics.binned import error_from_stats
from calibkit.reporting.curves import ece_temperature_figure
from calibkit.reporting.figure_style import figure_png_bytes
from calibkit.reporting.figures import (
    ACCURACY_LABEL,
    FRACTION_LABEL,
    GAP_LABEL,
    bar_heights,
    reliability_figure,
    reliability_grid,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def sparse_stats() -> BinStats:
    """Bins 0, 1, 4, 9 of 10 hold samples; bin 4 has accuracy 0 (drawn, zero height)."""
    conf = np.array([0.05, 0.15, 0.16, 0.45, 0.92, 0.95, 0.99])
    outcome = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    return bin_stats(conf, outcome, n_bins=10)


def random_stats(seed: int, scheme: str = "equal_width") -> BinStats:
    rng = np.random.default_rng(seed)
    conf = rng.beta(5, 1.5, size=800)
    outcome = (rng.random(800) < conf**1.3).astype(np.float64)
    return bin_stats(conf, outcome, n_bins=15, scheme=scheme)  # type: ignore[arg-type]


def bar_lefts(ax: object, label: str) -> np.ndarray:
    for c in ax.containers:  # type: ignore[attr-defined]
        if c.get_label() == label:
            return np.array([p.get_x() for p in c.patches])
    raise AssertionError(label)


def test_bars_are_the_nonempty_bins_with_exact_accuracy() -> None:
    stats = sparse_stats()
    fig = reliability_figure(stats, title="t")
    ax = fig.axes[0]
    heights = bar_heights(ax, ACCURACY_LABEL)
    assert heights.shape == (4,)
    np.testing.assert_array_equal(heights, stats.accuracy[stats.nonempty])
    assert heights[2] == 0.0  # a non-empty bin with accuracy 0 is drawn with height 0
    np.testing.assert_allclose(bar_lefts(ax, ACCURACY_LABEL), [0.0, 0.1, 0.4, 0.9])


def test_gap_spans_accuracy_to_mean_confidence() -> None:
    stats = sparse_stats()
    ax = reliability_figure(stats, title="t").axes[0]
    gap = next(c for c in ax.containers if c.get_label() == GAP_LABEL)
    acc = stats.accuracy[stats.nonempty]
    conf = stats.mean_confidence[stats.nonempty]
    np.testing.assert_allclose([p.get_y() for p in gap.patches], np.minimum(acc, conf))
    np.testing.assert_allclose([p.get_height() for p in gap.patches], np.abs(acc - conf))


def test_histogram_shows_sample_fractions_of_nonempty_bins() -> None:
    stats = sparse_stats()
    hist = reliability_figure(stats, title="t").axes[1]
    np.testing.assert_array_equal(bar_heights(hist, FRACTION_LABEL), stats.weights[stats.nonempty])
    xs = sorted(ln.get_xdata()[0] for ln in hist.get_lines())
    overall = [stats.confidence_sum.sum() / 7, stats.accuracy_sum.sum() / 7]
    np.testing.assert_allclose(xs, sorted(overall))


@pytest.mark.parametrize(
    ("seed", "scheme"), [(0, "equal_width"), (1, "equal_width"), (2, "equal_mass")]
)
def test_bars_match_random_binnings(seed: int, scheme: str) -> None:
    stats = random_stats(seed, scheme)
    heights = bar_heights(reliability_figure(stats, title="r").axes[0], ACCURACY_LABEL)
    assert heights.shape == (int(stats.nonempty.sum()),)
    np.testing.assert_array_equal(heights, stats.accuracy[stats.nonempty])


def test_printed_ece_is_the_table_value() -> None:
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(4) * 0.3, size=500)
    y = rng.integers(0, 4, size=500)
    stats = reliability_stats(y, probs=p)
    value = ece(y, probs=p)
    assert error_from_stats(stats) == value
    fig = reliability_figure(stats, title="t", ece=value)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(f"ECE = {100 * value:.2f}%" in t for t in texts)


def test_bad_stats_are_input_errors() -> None:
    with pytest.raises(InputError, match="stats"):
        reliability_figure(np.zeros(3), title="t")  # type: ignore[arg-type]
    empty = BinStats(np.linspace(0, 1, 4), np.zeros(3), np.zeros(3), np.zeros(3))
    with pytest.raises(InputError, match="at least one sample"):
        reliability_figure(empty, title="t")
    with pytest.raises(InputError, match="panels"):
        reliability_grid([])


def test_grid_has_one_panel_per_entry_with_exact_bars() -> None:
    panels = [(f"m{i}", random_stats(i), 0.01 * i) for i in range(5)]
    fig = reliability_grid(panels)
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert len(visible) == 5
    for ax, (name, stats, _) in zip(visible, panels, strict=True):
        assert ax.get_title() == name
        np.testing.assert_array_equal(
            bar_heights(ax, ACCURACY_LABEL), stats.accuracy[stats.nonempty]
        )


def test_ece_temperature_marks_fitted_and_unit_temperature() -> None:
    t = np.linspace(0.05, 5, 100)
    e = (np.log(t) - np.log(1.5)) ** 2 / 10
    fig = ece_temperature_figure(t, e, fitted={"temperature": 1.5, "temperature_ece": 1.47})
    ax = fig.axes[0]
    vertical = {
        round(float(ln.get_xdata()[0]), 6)
        for ln in ax.get_lines()
        if isinstance(ln, Line2D)
        and len(ln.get_xdata()) == 2
        and ln.get_xdata()[0] == ln.get_xdata()[1]
    }
    assert {1.0, 1.5, 1.47} <= vertical
    labels = ax.get_legend_handles_labels()[1]
    assert any(lb.startswith("temperature: T = 1.500") for lb in labels)
    with pytest.raises(InputError, match="temperatures"):
        ece_temperature_figure(t, e[:-1], fitted={})


def test_user_text_is_never_mathtext() -> None:
    fig = reliability_figure(sparse_stats(), title="cost $a$ of $b", subtitle="x_$1$")
    assert fig.get_suptitle() == r"cost \$a\$ of \$b"
    assert figure_png_bytes(fig).startswith(PNG_MAGIC)
    grid = reliability_grid([("m$x$", sparse_stats(), 0.1)], title="$^$")
    assert grid.axes[0].get_title() == r"m\$x\$"
    assert figure_png_bytes(grid).startswith(PNG_MAGIC)
