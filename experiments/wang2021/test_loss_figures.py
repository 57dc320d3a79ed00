"""Loss-study figures: one panel per method, plotted values are the inputs, no pyplot."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from calibkit.core.errors import InputError
from experiments.wang2021.loss_figures import (
    calibration_size_figure,
    ece_vs_coefficient_figure,
    epoch_bands,
    max_logit_by_learned_epoch_figure,
    optimal_ece_per_epoch_figure,
)
from experiments.wang2021.test_analysis import ECES, METHODS, study_rows


@pytest.fixture(autouse=True)
def no_pyplot_figures() -> Iterator[None]:
    """No figure of these tests may be registered with pyplot."""
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before
    assert matplotlib.get_backend()  # still usable


def _line(ax: Axes, label: str) -> Line2D:
    found = [ln for ln in ax.lines if ln.get_label() == label]
    assert len(found) == 1, [ln.get_label() for ln in ax.lines]
    return found[0]


def _check_plain(fig: Figure) -> None:
    assert isinstance(fig, Figure)
    assert isinstance(fig.canvas, FigureCanvasAgg)


def test_ece_vs_coefficient_panels_and_values() -> None:
    fig = ece_vs_coefficient_figure(study_rows(), METHODS)
    _check_plain(fig)
    assert [ax.get_title() for ax in fig.axes] == ["Label smoothing", "Focal", "Inverse focal"]
    ls, focal, _ = fig.axes
    data = [ln for ln in ls.lines if not ln.get_label().startswith(("_", "CE"))]
    assert sorted(ln.get_label() for ln in data) == ["HB", "TS", "no post-hoc"]
    ts = _line(ls, "TS")
    np.testing.assert_allclose(ts.get_xdata(), [0.01, 0.05])
    np.testing.assert_allclose(
        ts.get_ydata(),
        [ECES["ls_0.01"]["temperature_ece"].mean(), ECES["ls_0.05"]["temperature_ece"].mean()],
    )
    np.testing.assert_allclose(_line(focal, "no post-hoc").get_ydata(), [0.04, 0.01])
    for cal, name in (("none", "no post-hoc"), ("temperature_ece", "TS"), ("histogram", "HB")):
        ce = _line(focal, f"CE, {name}")
        assert ce.get_linestyle() == "--"
        np.testing.assert_allclose(ce.get_ydata(), [ECES["ce"][cal].mean()] * 2)
    assert len(ls.containers) == 3  # one errorbar container per calibrator


def test_ece_vs_coefficient_error_bars_are_the_std() -> None:
    fig = ece_vs_coefficient_figure(study_rows(), METHODS, calibrators=("temperature_ece",))
    focal = fig.axes[1]
    (_, _, (segments,)) = focal.containers[1]  # TS: the second calibrator drawn
    lo_hi = np.array([seg[:, 1] for seg in segments.get_segments()])
    std = ECES["focal_1"]["temperature_ece"].std(ddof=1)
    np.testing.assert_allclose(lo_hi[0], [0.0102 - std, 0.0102 + std])


def test_ece_vs_coefficient_needs_methods_besides_ce() -> None:
    with pytest.raises(InputError):
        ece_vs_coefficient_figure(study_rows(), {"ce": METHODS["ce"]})


def _histories(offset: float, n_seeds: int = 3, n_epochs: int = 4) -> list[list[dict[str, float]]]:
    return [
        [
            {
                "epoch": float(e + 1),
                "test_ece": offset + 0.01 * e + 0.001 * s,
                "test_optimal_ece": offset / 2 + 0.001 * s,
            }
            for e in range(n_epochs)
        ]
        for s in range(n_seeds)
    ]


def test_optimal_ece_per_epoch_lines_are_seed_means() -> None:
    hist = {"ce": _histories(0.05), "focal_3": _histories(0.02), "ls_0.01": _histories(0.09)}
    fig = optimal_ece_per_epoch_figure(hist, ["ce", "focal_3"], names={"focal_3": "Focal 3"})
    _check_plain(fig)
    assert len(fig.axes) == 2
    optimal, raw = fig.axes
    for ax in fig.axes:
        assert [ln.get_label() for ln in ax.lines] == ["ce", "Focal 3"]
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 2
    np.testing.assert_allclose(optimal.lines[1].get_xdata(), [1, 2, 3, 4])
    np.testing.assert_allclose(optimal.lines[1].get_ydata(), [0.011] * 4)
    np.testing.assert_allclose(raw.lines[0].get_ydata(), [0.051, 0.061, 0.071, 0.081])


def test_optimal_ece_per_epoch_rejects_unknown_labels() -> None:
    with pytest.raises(InputError, match="labels"):
        optimal_ece_per_epoch_figure({"ce": _histories(0.05)}, ["ce", "focal_3"])


def test_epoch_bands_cover_every_epoch_once() -> None:
    for n in (1, 2, 5, 30, 100, 400):
        bands = epoch_bands(n)
        assert len(bands) <= 6
        covered = [e for lo, hi in bands for e in range(lo, hi + 1)]
        assert covered == list(range(1, n + 1))
    assert epoch_bands(3) == [(1, 1), (2, 3)]


def test_max_logit_histogram_stacks_counts_by_learned_epoch() -> None:
    rng = np.random.default_rng(0)
    n = 500
    logits = rng.normal(5.0, 2.0, n)
    learned = rng.integers(0, 11, n)
    learned[learned == 5] = 4  # epochs 4-7 still present; no sample learned at epoch 5
    fig = max_logit_by_learned_epoch_figure(logits, learned, 10, title="seed 0", n_bins=20)
    _check_plain(fig)
    (ax,) = fig.axes
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    labels = [c.get_label() for c in bars]
    assert labels == ["epoch 1", "epochs 2-3", "epochs 4-7", "epochs 8-10", "never learned"]
    edges = np.linspace(logits.min(), logits.max(), 21)
    masks = [learned == 1, (learned >= 2) & (learned <= 3), (learned >= 4) & (learned <= 7)]
    masks += [learned >= 8, learned == 0]
    bottom = np.zeros(20)
    for container, mask in zip(bars, masks, strict=True):
        heights = np.array([p.get_height() for p in container.patches])
        np.testing.assert_array_equal(heights, np.histogram(logits[mask], bins=edges)[0])
        np.testing.assert_array_equal([p.get_y() for p in container.patches], bottom)
        bottom += heights
    assert bottom.sum() == n
    assert bars[-1].patches[0].get_facecolor()[:3] == pytest.approx(
        matplotlib.colors.to_rgb("#9e9e9e")
    )


def test_max_logit_histogram_skips_empty_groups_and_checks_input() -> None:
    fig = max_logit_by_learned_epoch_figure([1.0, 2.0, 3.0], np.array([1, 1, 2]), 3, title="t")
    assert [c.get_label() for c in fig.axes[0].containers] == ["epoch 1", "epochs 2-3"]
    with pytest.raises(InputError):
        max_logit_by_learned_epoch_figure([1.0, 2.0], np.array([1, 4]), 3, title="t")
    with pytest.raises(InputError):
        max_logit_by_learned_epoch_figure([1.0, 2.0], np.array([1]), 3, title="t")


def test_calibration_size_figure_panels_lines_and_bands() -> None:
    sizes = [50, 100, 400]
    ce = {
        "temperature_ece": np.array([[0.03, 0.01], [0.02, 0.005], [0.015, 0.002]]),
        "histogram": np.array([[0.06, 0.02], [0.04, 0.01], [0.02, 0.004]]),
    }
    focal = {"temperature_ece": np.array([[0.05, 0.01], [0.04, 0.01], [0.03, 0.01]])}
    fig = calibration_size_figure(sizes, {"CE": ce, "Focal 3": focal}, title="ECE by size")
    _check_plain(fig)
    ts, hb = fig.axes
    assert [ax.get_title() for ax in (ts, hb)] == ["after TS", "after HB"]
    assert ts.get_xscale() == "log"
    assert [ln.get_label() for ln in ts.lines] == ["CE", "Focal 3"]
    assert [ln.get_label() for ln in hb.lines] == ["CE"]  # focal has no HB curve
    for line, curve in zip(ts.lines, (ce, focal), strict=True):
        np.testing.assert_allclose(line.get_xdata(), sizes)
        np.testing.assert_allclose(line.get_ydata(), curve["temperature_ece"][:, 0])
    band = hb.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() == pytest.approx(0.02 - 0.004)
    assert band.max() == pytest.approx(0.06 + 0.02)
    with pytest.raises(InputError, match="Focal"):
        calibration_size_figure(sizes, {"Focal": {"histogram": np.zeros((2, 2))}}, title="t")
