"""``calibkit conformal``: the table, the report folder, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.metrics.conformal import set_metrics
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def preds(tmp_path: Path) -> Path:
    z, y = random_problem(1000, 4, seed=0)
    path = tmp_path / "preds.npz"
    np.savez(path, logits=z, labels=y)
    return path


def test_report_is_written(preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    args = [str(preds), "--alpha", "0.1", "--score", "raps,lac", "--calibrator", "temperature"]
    assert main(["conformal", *args, "--n-boot", "50", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "raps" in text
    assert "coverage %" in text
    results = json.loads((out / "results.json").read_text())
    assert [r["score"] for r in results["results"]] == ["raps", "lac"]
    assert 0.8 < results["results"][0]["values"]["coverage"] < 1.0
    assert (out / "report.md").read_text().startswith("# Conformal prediction sets")
    assert main(["conformal", *args, "--n-boot", "0", "--out", str(out)]) == 0  # its own folder


def test_the_fitted_predictors_are_saved_and_apply(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` saves each score's predictor; ``calibkit apply`` makes the sets of new
    predictions with it, equal to the library's predictor fitted on the same part."""
    from calibkit.calibrators import ConformalClassifier, load
    from calibkit.cli.conformal import REPORT_FILES
    from calibkit.io.atomic import MANIFEST
    from calibkit.io.predictions import load_predictions
    from calibkit.workflows.compare import split_outputs

    out = tmp_path / "report"
    args = [str(preds), "--score", "raps,lac", "--calibrator", "temperature", "--seed", "3"]
    assert main(["conformal", *args, "--randomized", "--n-boot", "0", "--out", str(out)]) == 0
    fitted = [out / "conformal_raps.json", out / "conformal_lac.json"]
    assert f"conformal predictors: {fitted[0]}, {fitted[1]} (calibkit apply" in (
        capsys.readouterr().out
    )
    assert {p.name for p in out.iterdir()} == {*REPORT_FILES, MANIFEST, *(f.name for f in fitted)}
    z, y = random_problem(300, 4, seed=7)
    np.savez(tmp_path / "test.npz", logits=z, labels=y)
    cal, _ = split_outputs(load_predictions(preds), 0.5, 3)
    for score, path in zip(("raps", "lac"), fitted, strict=True):
        saved = load(path)
        assert isinstance(saved, ConformalClassifier)
        assert saved.score == score
        result = tmp_path / f"{score}.npz"
        assert main(["apply", str(path), str(tmp_path / "test.npz"), "-o", str(result)]) == 0
        assert f"applied conformal ({score}, alpha 0.1) to 300 samples" in capsys.readouterr().out
        lib = ConformalClassifier(
            score=score,
            alpha=0.1,
            calibrator="temperature",
            randomized=score != "lac",
            seed=3,
        ).fit(cal.as_logits(), cal.labels)
        with np.load(result) as npz:
            assert np.array_equal(npz["sets"], lib.predict_set(z))
            assert np.array_equal(npz["set_size"], lib.predict_set(z).sum(axis=1))
            assert np.array_equal(npz["labels"], y)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "0"], "expected a number in (0, 1)"),
        (["--alpha", "1.2"], "expected a number in (0, 1)"),
        (["--score", "topk"], "scores among lac, aps, raps, saps"),
        (["--alpha", "0.001"], "at least 999 calibration rows"),
        (
            ["--alpha", "0.005", "--mondrian"],
            "at least 199 calibration rows for the quantile per class",
        ),
        (["--calibrator", "nope"], "nope"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    out = tmp_path / "report"
    assert main(["conformal", str(preds), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error:")
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.npz"]


def test_a_foreign_folder_is_refused(preds: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["conformal", str(preds), "--out", str(out)]) == 2
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_set_metrics_by_hand_and_their_intervals() -> None:
    sets = np.array([[True, False], [True, True], [False, True], [False, False]] * 50)
    labels = np.array([0, 1, 0, 1] * 50)
    m = set_metrics(sets, labels, alpha=0.1, n_boot=300, seed=0)
    assert m.values["coverage"] == 0.5
    assert m.values["mean_size"] == 1.0
    assert m.values["class_coverage_gap"] == pytest.approx(0.9 - 0.5)  # both classes at 50%
    low, high = m.ci["coverage"]
    assert low < 0.5 < high
    assert high - low < 0.2
    assert set_metrics(sets, labels, alpha=0.1, n_boot=300, seed=0).ci == m.ci  # seeded
