"""Neural Clamping sensitivity figures: loading fits, plotted values are the inputs."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.metrics import ece
from experiments.neural_clamping.clamping_figures import (
    BIN_COUNTS,
    bins_figure,
    gamma_figure,
    init_box_figure,
    load_fits,
    write_clamping_figures,
)


def _write(path: Path, **arrays: object) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # type: ignore[arg-type]
    path.write_bytes(buf.getvalue())


def _fits(folder: Path, seeds: int = 2) -> None:
    rng = np.random.default_rng(0)
    names = ["none", "ts_focal@g0", "ts_focal@g1", "nc@g0", "nc@g1", "nc_sgd@g0", "nc_sgd@g1"]
    for s in range(seeds):
        sdir = folder / f"seed-{s}"
        sdir.mkdir(parents=True)
        y = rng.integers(0, 2, 200)
        for name in [*names, "nc_random@g1"]:
            z = rng.normal(size=(200, 2)) + 2.0 * np.eye(2)[y]
            _write(sdir / f"{name}.npz", logits=z, labels=y, temperature=1.5, seconds=0.0)


def test_gamma_figure_plots_means_and_reference_lines() -> None:
    fig = gamma_figure(
        [0.0, 1.0, 2.0],
        {"NC": np.array([[0.01, 0.02, 0.03], [0.03, 0.04, 0.05]])},
        title="t",
        lines={"TS by NLL": 0.015},
    )
    ax = fig.axes[0]
    assert ax.lines[0].get_ydata().tolist() == pytest.approx([0.02, 0.03, 0.04])
    assert [ln.get_label() for ln in ax.lines if ln.get_label() == "TS by NLL"]


def test_gamma_figure_refuses_a_wrong_shape() -> None:
    with pytest.raises(InputError, match="curves"):
        gamma_figure([0.0, 1.0], {"NC": np.zeros((2, 3))}, title="t")


def test_init_box_figure_has_one_box_per_group_and_every_seed() -> None:
    fig = init_box_figure(
        {"data": np.array([0.01, 0.02]), "random": np.array([0.03, 0.05])}, title="t"
    )
    ax = fig.axes[0]
    dots = [ln for ln in ax.lines if ln.get_marker() == "o" and len(ln.get_ydata())]
    assert sorted(np.concatenate([d.get_ydata() for d in dots]).tolist()) == [
        0.01,
        0.02,
        0.03,
        0.05,
    ]
    with pytest.raises(InputError):
        init_box_figure({}, title="t")


def test_bins_figure_plots_the_mean_per_bin_count() -> None:
    fig = bins_figure([5, 15], {"TS": np.array([[0.01, 0.02], [0.03, 0.04]])}, title="t")
    assert fig.axes[0].lines[0].get_ydata().tolist() == pytest.approx([0.02, 0.03])


def test_load_fits_reads_every_seed_and_recomputes_ece(tmp_path: Path) -> None:
    _fits(tmp_path)
    fits = load_fits(tmp_path)
    assert fits.seeds == [0, 1]
    assert fits.gammas("nc") == [0.0, 1.0]
    with np.load(tmp_path / "seed-1" / "nc@g1.npz") as z:
        z1 = z["logits"]
        p = np.exp(z1 - z1.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        expected = ece(z["labels"], p, n_bins=10)
    assert fits.ece("nc@g1", 10)[1] == pytest.approx(expected, abs=1e-12)
    assert fits.temperature["nc@g1"][0] == 1.5


def test_load_fits_refuses_an_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="folder"):
        load_fits(tmp_path)


def test_write_clamping_figures_writes_three_pngs(tmp_path: Path) -> None:
    _fits(tmp_path / "fits")
    paths = write_clamping_figures(load_fits(tmp_path / "fits"), tmp_path / "out", "toy", "a toy")
    assert sorted(paths) == ["bins", "ece_vs_gamma", "init"]
    for path in paths.values():
        assert path.read_bytes()[:4] == b"\x89PNG"
    assert len(BIN_COUNTS) >= 5
