"""Figures a reader takes in at a glance, checked on the rendered figure: the bin counts clear
the bars, the intervals, the legend and the ECE line (and each other); every ECE is stated
beside its noise floor and every ECE panel draws the floor; each legend lists each thing once;
rows of panels do not crowd; curves stay within [0, 1]; titles wrap without an orphan."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from calibkit.core.binning import BinStats, bin_stats
from calibkit.metrics.smooth import SmoothReliability
from calibkit.reporting.curves import ece_temperature_figure
from calibkit.reporting.display import ReliabilityDisplay
from calibkit.reporting.document import Document, Gallery
from calibkit.reporting.document import Figure as FigureBlock
from calibkit.reporting.figure_style import ECE_GID, FLOOR_GID, figure_png_bytes, wrapped
from calibkit.reporting.figures import (
    COUNT_GID,
    group_reliability_figure,
    reliability_figure,
    reliability_grid,
    smooth_reliability_figure,
)
from calibkit.reporting.render import WIDE_PX, to_html


def stats(seed: int = 0, n: int = 800, bins: int = 15) -> BinStats:
    rng = np.random.default_rng(seed)
    conf = np.concatenate([rng.beta(5, 1.5, size=n), [1.0, 0.999]])
    outcome = (rng.random(conf.size) < conf**1.3).astype(np.float64)
    return bin_stats(conf, outcome, n_bins=bins)


def box(artist: Text, fig: Figure) -> Bbox:
    return artist.get_window_extent(fig.canvas.get_renderer())  # type: ignore[attr-defined]


def overlap(a: Bbox, b: Bbox) -> bool:
    """Whether two boxes share more than a pixel each way."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > 1 and min(a.y1, b.y1) - max(a.y0, b.y0) > 1


def counts_of(ax: object) -> list[Text]:
    return [t for t in ax.texts if t.get_gid() == COUNT_GID]  # type: ignore[attr-defined]


def assert_counts_clear(fig: Figure, axes: list[object]) -> None:
    """Every count lies under its axes' y = 0 (so under every bar and interval, which start
    at 0), inside the axes, apart from the other counts, the legends and the ECE lines."""
    fig.canvas.draw()
    legends = [box(legend, fig) for legend in fig.legends]  # type: ignore[arg-type]
    legends += [box(ax.get_legend(), fig) for ax in axes if ax.get_legend()]  # type: ignore[attr-defined]
    for ax in axes:
        texts = counts_of(ax)
        assert texts
        zero = ax.transData.transform((0.0, 0.0))[1]  # type: ignore[attr-defined]
        frame = ax.get_window_extent()  # type: ignore[attr-defined]
        eces = [box(t, fig) for t in ax.texts if t.get_gid() == ECE_GID]  # type: ignore[attr-defined]
        boxes = [box(t, fig) for t in texts]
        for i, b in enumerate(boxes):
            assert b.y1 <= zero + 0.5, texts[i].get_text()
            assert frame.y0 - 0.5 <= b.y0
            assert frame.x0 - 0.5 <= b.x0 <= b.x1 <= frame.x1 + 0.5
            assert not any(overlap(b, other) for other in boxes[i + 1 :]), texts[i].get_text()
            assert not any(overlap(b, other) for other in legends + eces)


def test_counts_clear_bars_intervals_legend_and_ece_on_a_reliability_figure() -> None:
    fig = reliability_figure(stats(n=20000), title="t", ece=0.05, floor=0.006, subtitle="s")
    assert_counts_clear(fig, [fig.axes[0]])
    # the ECE line and the legend lie outside the data: above and below the diagram
    fig.canvas.draw()
    top = fig.axes[0].get_window_extent()
    (ece,) = [t for t in fig.axes[0].texts if t.get_gid() == ECE_GID]
    assert box(ece, fig).y0 >= top.y1
    assert box(fig.legends[0], fig).y1 <= fig.axes[1].get_window_extent().y0  # type: ignore[arg-type]


def test_counts_clear_everything_on_a_grid_and_on_displays() -> None:
    grid = reliability_grid([(f"m{i}", stats(i, n=5000), 0.02, 0.01) for i in range(6)])
    assert_counts_clear(grid, [ax for ax in grid.axes if ax.get_visible()])
    rng = np.random.default_rng(0)
    p = rng.dirichlet([0.3] * 4, size=3000)
    y = rng.integers(0, 4, 3000)
    two = ReliabilityDisplay.from_predictions(y, {"a": p, "b": p**2 / (p**2).sum(1, keepdims=True)})
    assert_counts_clear(two.figure_, two.axes_)  # type: ignore[arg-type]
    per_class = ReliabilityDisplay.from_predictions(y, {"a": p, "b": p}, per_class=True)
    assert_counts_clear(per_class.figure_, per_class.axes_)  # type: ignore[arg-type]


@pytest.mark.parametrize("corp", [False, True])
def test_a_two_model_display_lists_each_thing_once(corp: bool) -> None:
    rng = np.random.default_rng(1)
    p = rng.dirichlet([1.0, 1.0], size=300)
    y = (rng.uniform(size=300) < p[:, 1]).astype(int)
    models = {"lr": p, "nb": np.sqrt(p) / np.sqrt(p).sum(1, keepdims=True)}
    display = ReliabilityDisplay.from_predictions(y, models, corp=corp, n_resamples=5)
    (legend,) = display.figure_.legends  # type: ignore[union-attr]
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) == len(set(labels))
    assert sum("interval" in lb for lb in labels) == 1
    assert {"lr", "nb"} <= set(labels)
    # the user's own axes: one legend there, each label once too
    fig = Figure()
    ax = fig.add_subplot()
    ReliabilityDisplay.from_predictions(y, models, corp=corp, n_resamples=5, ax=ax)
    mine = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(mine) == len(set(mine))


def test_every_reliability_ece_is_stated_beside_its_noise_floor() -> None:
    fig = reliability_figure(stats(), title="t", ece=0.0535, floor=0.0061)
    (line,) = [t.get_text() for t in fig.axes[0].texts if t.get_gid() == ECE_GID]
    assert line == "ECE = 5.35%  (noise floor 0.61%),  n = 802"
    grid = reliability_grid([("a", stats(), 0.02, 0.011), ("b", stats(1), 0.03)])
    lines = [t.get_text() for ax in grid.axes for t in ax.texts if t.get_gid() == ECE_GID]
    assert lines == ["ECE = 2.00%  (noise floor 1.10%)", "ECE = 3.00%"]  # b: floor unknown
    s = stats()
    groups = group_reliability_figure([("g", {"none": (s, 0.05, 0.02), "ts": (s, 0.03)})])
    labels = [line.get_label() for line in groups.axes[0].lines]
    assert labels[:2] == ["none (ECE 5.00%, floor 2.00%)", "ts (ECE 3.00%)"]


def test_the_ece_temperature_curve_draws_the_floor_and_its_legend_below() -> None:
    t = np.geomspace(0.05, 5, 60)
    e = np.abs(np.log(t / 1.5)) / 10 + 0.01
    fig = ece_temperature_figure(t, e, fitted={"temperature": 1.5}, floor=0.004)
    ax = fig.axes[0]
    (floor,) = [ln for ln in ax.get_lines() if ln.get_gid() == FLOOR_GID]
    assert list(floor.get_ydata()) == [0.004, 0.004]
    assert "Noise floor at T = 1.50: 0.40%" in [t.get_text() for t in fig.legends[0].get_texts()]
    fig.canvas.draw()
    assert box(fig.legends[0], fig).y1 <= ax.get_window_extent().y0  # type: ignore[arg-type]
    none = ece_temperature_figure(t, e, fitted={"temperature": 1.5})
    assert not [ln for ln in none.axes[0].get_lines() if ln.get_gid() == FLOOR_GID]


def test_rows_of_panels_leave_room_for_the_titles_below() -> None:
    grid = reliability_grid([(f"m{i}", stats(i), 0.02, 0.01) for i in range(8)], ncols=4)
    grid.canvas.draw()
    renderer = grid.canvas.get_renderer()  # type: ignore[attr-defined]
    upper, lower = grid.axes[0], grid.axes[4]
    lowest = min(t.get_window_extent(renderer).y0 for t in upper.get_xticklabels())
    title = lower.title.get_window_extent(renderer)
    assert title.y1 < lowest - 12  # a clear gap (more than a line of 10 pt at 120 dpi)


def test_the_smoothed_curve_and_band_are_drawn_within_zero_and_one() -> None:
    grid = np.linspace(0, 1, 50)
    raw = grid - 0.3  # an unclipped estimate: below 0 under t = 0.3
    rel = SmoothReliability(
        grid, raw, raw - 0.1, raw + 0.5, np.ones(50), 0.05, 0.1, (0.08, 0.12), 0.95
    )
    fig = smooth_reliability_figure(rel, title="t")
    ax = fig.axes[0]
    curve = next(ln for ln in ax.get_lines() if ln.get_label() == "Smoothed accuracy")
    assert np.min(curve.get_ydata()) >= 0.0
    assert np.max(curve.get_ydata()) <= 1.0
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band.min() >= 0.0
    assert band.max() <= 1.0
    assert np.min(curve.get_ydata()) == 0.0  # clipped, not shifted


def test_a_wrapped_title_never_leaves_a_word_alone() -> None:
    title = "cifar10_resnet18.npz: test-part ECE of the uncalibrated logits / T"
    lines = wrapped(title, 6.2, 11).split("\n")
    assert len(lines) == 2
    assert min(len(line) for line in lines) > 20  # balanced: no lone "T"
    assert " ".join(lines) == title


def test_a_gallery_shows_two_figures_per_row_and_a_wide_one_alone() -> None:
    narrow = reliability_figure(stats(), title="t")
    wide = reliability_grid([(f"m{i}", stats(i), 0.02) for i in range(4)])
    blocks = [
        FigureBlock("a.png", "a", figure_png_bytes(narrow)),
        FigureBlock("b.png", "b", figure_png_bytes(wide)),
    ]
    html = to_html(Document("d", [Gallery(blocks)]))
    assert narrow.bbox.width <= WIDE_PX < wide.bbox.width
    assert html.count('<figure class="wide">') == 1
    assert html.index('<figure><a href="figures/a.png"') < html.index('class="wide"')
    assert ".gallery figure{flex:0 1 calc(50% - .5rem)" in html
