"""The tables and figure of issue #33 (``nc_authors_report.py``), from a stand-in run."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from calibkit.core.errors import BoundWarning
from calibkit.metrics import ece
from experiments.neural_clamping import nc_authors, nc_authors_report
from experiments.neural_clamping.test_nc_authors import CONFIG, _fake, _listing


def test_paired_difference_is_the_ece_difference_with_a_paired_interval() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 400)
    p = rng.dirichlet(np.ones(3), 400)
    q = rng.dirichlet(np.ones(3) * 4, 400)
    d, low, high = nc_authors_report.paired_difference(y, p, q, n_boot=200)
    assert d == pytest.approx(ece(y, p) - ece(y, q), abs=1e-12)
    assert low < d < high
    assert nc_authors_report.paired_difference(y, p, p, n_boot=50) == (0.0, 0.0, 0.0)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of both procedures by both codes (the stand-in of their code, a small MLP)."""
    tmp = tmp_path_factory.mktemp("run")
    (tmp / "cfg.toml").write_text(CONFIG, encoding="utf-8")
    base = ["--authors-code", str(_fake(tmp / "fake")), "--config", str(tmp / "cfg.toml"),
            "--model", "mlp", "--n-boot", "20",
            "--out", str(tmp / "out")]  # fmt: skip
    for extra in (["--epochs", "10"], ["--epochs", "100", "--temperature-only"]):
        with pytest.warns(BoundWarning):  # the untrained MLP's TS reaches its bound
            rc = nc_authors.main([*base, *extra])
        assert rc == 0
    return tmp / "out"


def test_the_report_reads_every_unit_and_measures_what_delta_adds(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    assert nc_authors_report.main([str(run), str(out)]) == 0
    capsys.readouterr()
    units = list(run.glob("*/seed-*/*/*.json"))
    with (out / "units.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(units) == 12
    labels = np.load(run / "mlp" / "seed-0" / "logits.npz")
    for row in rows:
        if row["temperature_only"] == "False" and row["method"] != "TS":
            # the fit's T on the model's own logits: delta removed, recomputed here
            z = labels["test_logits"] / float(row["T"])
            p = np.exp(z - z.max(1, keepdims=True))
            expected = ece(labels["test_labels"], p / p.sum(1, keepdims=True))
            assert float(row["ece_delta_removed"]) == pytest.approx(expected, abs=1e-6)
        else:
            assert row["ece_delta_removed"] == ""
    with (out / "curves.csv").open(encoding="utf-8") as f:
        curves = list(csv.DictReader(f))
    assert len(curves) == 5 * 11 + 5 * 101  # 4 NC + TS authors, 10 epochs; and 100, T alone
    md = (out / "authors_comparison.md").read_text(encoding="utf-8")
    assert "| NC (FL) | authors | 100 epochs, T alone |" in md
    assert "| NC (FL) | authors | 10 epochs, δ learnt |" in md
    best = md.split("lowest test ECE (T alone, 100 epochs)")[1].split("##")[0]
    assert best.count("| mlp | 0 |") == 1  # the split's TS, its paths and the oracle T
    inert = md.split("## δ inert")[1].split("##")[0]
    assert inert.count("| mlp | 0 |") == 4  # one row per fit through the model
    assert "‖δ‖" in md
    assert "||" not in md  # a bare || would break a table's columns
    assert (out / "nc_authors_curves.png").stat().st_size > 20_000
    fig = nc_authors_report.curves_figure(nc_authors_report.load_units(run), "mlp", 0)
    top_left = {line.get_label() for line in fig.axes[0].lines}
    assert top_left == {
        "authors' code: SGD on T alone",
        "authors' code: δ learnt (through the model)",
        "calibkit: SGD on T alone",
        "calibkit: exact final T",
        "calibkit: δ learnt (through the model)",
        "TS (exact NLL minimum)",
    }


def test_a_missing_run_folder_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _listing(tmp_path)
    assert nc_authors_report.main([str(tmp_path / "nope"), str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nc_authors_report.py: error: run: ")
    assert err.count("\n") == 1
    assert _listing(tmp_path) == before


def test_the_oracle_temperature_is_the_grid_point_of_lowest_test_ece() -> None:
    """All predictions right: the ECE is 1 - confidence, lowest at the sharpest T of the
    grid (1); all wrong at confidence c: the ECE is c, lowest at the flattest T (6)."""
    y = np.zeros(50, dtype=np.int64)
    z = np.tile([2.0, 0.0], (50, 1))
    t, e = nc_authors_report.oracle_temperature(z, y)
    assert t == 1.0
    assert e == pytest.approx(1 - 1 / (1 + np.exp(-2.0)), abs=1e-12)
    t, e = nc_authors_report.oracle_temperature(z[:, ::-1].copy(), y)
    assert t == pytest.approx(6.0)
    assert e == pytest.approx(1 / (1 + np.exp(-2.0 / 6.0)), abs=1e-12)
