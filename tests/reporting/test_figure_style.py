"""The house layout of every figure (``calibkit.reporting.figure_style``): PNG bytes are
stable and written atomically."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from calibkit.core.binning import bin_stats
from calibkit.core.errors import InputError
from calibkit.reporting.figure_style import figure_png_bytes, save_figure
from calibkit.reporting.figures import reliability_figure

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_png_bytes_are_stable_and_saved_atomically(tmp_path: Path) -> None:
    stats = bin_stats(np.array([0.05, 0.45, 0.95]), np.array([1.0, 0.0, 1.0]), n_bins=10)
    fig = reliability_figure(stats, title="t", ece=0.1)  # laid out as it is drawn
    data = figure_png_bytes(fig)
    assert data.startswith(PNG_MAGIC)
    assert figure_png_bytes(fig) == data
    target = tmp_path / "fig.png"
    save_figure(fig, target)
    assert target.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]
    with pytest.raises(InputError, match="output"):
        save_figure(fig, tmp_path / "missing" / "fig.png")
