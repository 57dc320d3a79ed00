"""Reliability diagrams draw intervals and counts per non-empty bin, nothing for an empty one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.container import BarContainer

from calibkit.cli import main
from calibkit.core.binning import bin_stats
from calibkit.metrics.reliability_bands import bin_intervals
from calibkit.reporting.display import ReliabilityDisplay
from calibkit.reporting.figures import (
    ACCURACY_LABEL,
    CORP_LABEL,
    COUNT_GID,
    INTERVAL_GID,
    reliability_figure,
)


def _intervals(ax) -> np.ndarray:  # type: ignore[no-untyped-def]
    cols = [
        c for c in ax.collections if isinstance(c, LineCollection) and c.get_gid() == INTERVAL_GID
    ]
    return np.array([seg[:, 1] for c in cols for seg in c.get_segments()])


def test_empty_bins_get_no_bar_no_interval_no_count() -> None:
    conf = np.array([0.05, 0.08, 0.55, 0.95, 0.97])
    stats = bin_stats(conf, np.array([1.0, 0.0, 1.0, 1.0, 0.0]), 10)  # 7 bins empty
    fig = reliability_figure(stats, title="t", interval="clopper-pearson")
    ax = fig.axes[0]
    bars = next(
        c for c in ax.containers if isinstance(c, BarContainer) and c.get_label() == ACCURACY_LABEL
    )
    lefts = sorted(round(p.get_x(), 10) for p in bars.patches)
    assert lefts == [0.0, 0.5, 0.9]  # bars only where there are samples
    iv = bin_intervals(stats, "clopper-pearson")
    keep = stats.nonempty
    drawn = _intervals(ax)
    assert drawn.shape == (3, 2)
    assert np.allclose(np.sort(drawn, axis=1), np.c_[iv.lower[keep], iv.upper[keep]])
    counts = [t.get_text() for t in ax.texts if t.get_gid() == COUNT_GID]
    assert counts == ["2", "1", "2"]


def test_display_draws_intervals_counts_and_corp() -> None:
    rng = np.random.default_rng(0)
    p = rng.dirichlet([1.0, 1.0], size=400)
    y = (rng.uniform(size=400) < p[:, 1]).astype(int)
    display = ReliabilityDisplay.from_predictions(y, {"m": p}, n_bins=10, corp=True, n_resamples=20)
    ax = display.axes_[0]
    stats = display.panels[""]["m"]
    assert _intervals(ax).shape[0] == int(stats.nonempty.sum())
    assert len([t for t in ax.texts if t.get_gid() == COUNT_GID]) == int(stats.nonempty.sum())
    assert CORP_LABEL in [line.get_label() for line in ax.lines]
    plain = ReliabilityDisplay.from_predictions(y, {"m": p}, n_bins=10, interval=None, counts=False)
    assert _intervals(plain.axes_[0]).size == 0
    assert not plain.axes_[0].texts


def test_evaluate_plot_with_corp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savez("p.npz", logits=rng.normal(size=(200, 3)) * 2, labels=rng.integers(0, 3, 200))
    argv = ["evaluate", "p.npz", "--n-boot", "0", "--plot", "r.png", "--corp"]
    assert main([*argv, "--interval", "clopper-pearson"]) == 0
    assert Path("r.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["evaluate", "p.npz", "--interval", "beta"]) == 2  # argparse: one clear error
