"""``calibkit evaluate --extra``: smooth ECE and the score split, only when asked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.metrics import METRIC_NAMES, score_decomposition, smooth_ece


@pytest.fixture
def preds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(200, 3)) * 3.0
    y = rng.integers(0, 3, 200)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    return tmp_path / "preds.npz"


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(argv) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_the_default_output_has_the_suite_only(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _json(capsys, ["evaluate", str(preds), "--n-boot", "0", "--format", "json"])
    assert [k for k in out if k in METRIC_NAMES] == list(METRIC_NAMES)
    assert "smooth_ece" not in out
    assert "nll_calibration" not in out


def test_extras_add_their_values_and_intervals(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", str(preds), "--n-boot", "20", "--format", "json"]
    out = _json(capsys, [*argv, "--extra", "smooth_ece", "--extra", "decomposition"])
    data = np.load(preds)
    y, z = data["labels"], data["logits"]
    assert out["smooth_ece"] == pytest.approx(smooth_ece(y, logits=z), abs=1e-12)
    # no interval: its bootstrap covered a calibrated model's smooth ECE of 0 in no
    # simulated data set (docs/conformance)
    assert "smooth_ece" not in out["ci"]  # type: ignore[operator]
    for score in ("nll", "brier"):
        d = score_decomposition(y, logits=z, score=score)  # type: ignore[arg-type]
        assert out[f"{score}_calibration"] == pytest.approx(d.calibration, abs=1e-12)
        assert out[f"{score}_refinement"] == pytest.approx(d.refinement, abs=1e-12)
        assert out[f"{score}_calibration"] + out[f"{score}_refinement"] == pytest.approx(  # type: ignore[operator]
            out[score], abs=1e-9
        )


def test_table_labels_and_the_smoothed_diagram(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    argv = ["evaluate", str(preds), "--n-boot", "10", "--extra", "decomposition"]
    assert main([*argv, "--smooth-plot", "smooth.png"]) == 0
    text = capsys.readouterr().out
    for label in ("Smooth ECE", "NLL calibration", "Brier refinement"):
        assert label in text
    assert Path("smooth.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main([*argv, "--smooth-plot", "smooth.png"]) == 2  # exists, no --force
