"""``calibkit evaluate``: the selective-prediction metrics, ``--coverage`` / ``--risk`` and the
risk-coverage figure ``--rc-plot``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from calibkit.metrics import aurc, coverage_at_risk, failure_auroc, risk_at_coverage


@pytest.fixture
def preds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(300, 3)) * 3.0
    y = np.array([rng.choice(3, p=np.exp(r / 3) / np.exp(r / 3).sum()) for r in z])
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    return tmp_path / "preds.npz"


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(argv) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_evaluate_reports_the_selective_metrics_with_intervals(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _json(capsys, ["evaluate", str(preds), "--n-boot", "30", "--format", "json"])
    data = np.load(preds)
    y, z = data["labels"], data["logits"]
    assert out["failure_auroc"] == failure_auroc(y, logits=z)  # the same group sums
    assert out["aurc"] == aurc(y, logits=z)
    assert out["risk_at_cov80"] == risk_at_coverage(y, logits=z, coverage=0.8)
    for name in ("failure_auroc", "aurc", "eaurc", "augrc", "risk_at_cov80", "cov_at_risk5"):
        lo, hi = out["ci"][name]  # type: ignore[index]
        assert lo <= hi, name
    capsys.readouterr()
    assert main(["evaluate", str(preds), "--n-boot", "0"]) == 0
    table = capsys.readouterr().out
    assert "Failure AUROC" in table
    assert "Risk @ 80% cov." in table


def test_coverage_and_risk_reach_the_extras(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["evaluate", str(preds), "--n-boot", "0", "--format", "json"]
    argv += ["--extra", "risk_at_coverage", "--extra", "coverage_at_risk"]
    out = _json(capsys, [*argv, "--coverage", "0.5", "--risk", "0.3"])
    data = np.load(preds)
    y, z = data["labels"], data["logits"]
    assert out["risk_at_coverage"] == risk_at_coverage(y, logits=z, coverage=0.5)
    assert out["coverage_at_risk"] == coverage_at_risk(y, logits=z, risk=0.3)
    assert out["risk_at_coverage"] != out["risk_at_cov80"]


@pytest.mark.parametrize(
    ("option", "value"),
    [("--coverage", "0"), ("--coverage", "1.5"), ("--coverage", "nan"), ("--risk", "-0.1")],
)
def test_a_coverage_or_risk_outside_its_range_exits_2_and_writes_nothing(
    preds: Path, capsys: pytest.CaptureFixture[str], option: str, value: str
) -> None:
    before = sorted(p.name for p in preds.parent.iterdir())
    argv = ["evaluate", str(preds), "--rc-plot", "rc.png", "--plot", "r.png", option, value]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{option}: expected a number in" in err
    assert "Traceback" not in err
    assert sorted(p.name for p in preds.parent.iterdir()) == before


def test_rc_plot_writes_the_risk_coverage_figure(
    preds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(preds), "--n-boot", "0", "--rc-plot", "rc.png"]) == 0
    assert (preds.parent / "rc.png").read_bytes().startswith(b"\x89PNG")
    assert "risk-coverage curves: rc.png" in capsys.readouterr().out
    # never over another output, nor an existing file without --force
    assert main(["evaluate", str(preds), "--n-boot", "0", "--rc-plot", "rc.png"]) == 2
    argv = ["evaluate", str(preds), "--plot", "same.png", "--rc-plot", "same.png"]
    assert main(argv) == 2
    assert not (preds.parent / "same.png").exists()
