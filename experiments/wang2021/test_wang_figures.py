"""Wang et al. figures: best coefficient per size, reliability after TS, loss curves."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.study.store.record import RunRecord
from calibkit.study.store.run_folder import RunFolder
from experiments.wang2021.wang_figures import (
    best_coefficient_figure,
    best_coefficients,
    ece_by_coefficient,
    loss_curves_figure,
    reliability_after_ts_figure,
)


def _record(label: str, seed: int, eces: dict[str, float], folder: Path | None = None) -> RunRecord:
    rows = [{"calibrator": c, "ece": e, "temperature": 2.0} for c, e in eces.items()]
    history = [
        {"train_loss": 1.0 / (i + 1), "test_nll": 0.5 + 0.01 * i, "test_accuracy": 0.7}
        for i in range(4)
    ]
    return RunRecord(label, seed, history, rows, 1.0, 10, folder or Path("."))


def test_ece_by_coefficient_groups_seeds_in_order() -> None:
    recs = [_record("ce", 1, {"none": 0.2}), _record("ce", 0, {"none": 0.1}), _record("x", 0, {})]
    table = ece_by_coefficient(recs, {"ce": 0.0})
    assert list(table) == [0.0]
    assert table[0.0]["none"].tolist() == [0.1, 0.2]


def test_best_coefficients_pick_the_lowest_mean() -> None:
    table = {
        500: {0.0: {"none": np.array([0.2, 0.4])}, 0.05: {"none": np.array([0.1, 0.2])}},
        9000: {0.0: {"none": np.array([0.1])}, 0.05: {"none": np.array([0.2])}},
    }
    assert best_coefficients(table, "none") == {500: 0.05, 9000: 0.0}
    fig = best_coefficient_figure(table, ("none",))
    assert fig.axes[0].lines[0].get_ydata().tolist() == [0.05, 0.0]
    with pytest.raises(InputError):
        best_coefficient_figure({})


def test_reliability_after_ts_divides_by_the_rows_temperature(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    z = 4.0 * (np.eye(2)[y] - 0.5) + rng.normal(size=(300, 2))
    buf = io.BytesIO()
    np.savez(buf, test_logits=z, test_labels=y)
    (tmp_path / RunFolder.LOGITS).write_bytes(buf.getvalue())
    rec = _record("ce", 0, {"temperature_ece": 0.01}, tmp_path)
    fig = reliability_after_ts_figure([rec], {"ce": "CE"}, title="t")
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert titles == ["CE: raw", "CE: TS, T = 2.00"]
    with pytest.raises(InputError, match="labels"):
        reliability_after_ts_figure([rec], {"ls": "LS"}, title="t")


def test_loss_curves_plot_the_seed_mean_per_epoch() -> None:
    recs = {"ce": [_record("ce", s, {}).history for s in (0, 1)]}
    fig = loss_curves_figure(recs, {"ce": "CE"}, title="t")
    assert fig.axes[0].lines[0].get_ydata().tolist() == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
    assert fig.axes[1].lines[0].get_ydata().tolist() == pytest.approx([0.5, 0.51, 0.52, 0.53])
