"""``calibkit labelshift``: priors and scores printed, the report folder, an unlabelled
target, and bad input (exit 2, one message, nothing written)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    z, y = random_problem(1500, 3, seed=0)
    source = tmp_path / "source.npz"
    np.savez(source, logits=z[:1000], labels=y[:1000])
    keep = np.flatnonzero((y[1000:] == 0) | (np.arange(500) % 4 == 0)) + 1000  # class 0 heavy
    target = tmp_path / "target.npz"
    np.savez(target, logits=z[keep], labels=y[keep])
    return source, target


def test_report_is_written(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    args = ["labelshift", str(files[0]), str(files[1]), "--method", "bbse", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "estimated" in text
    assert "oracle" in text
    results = json.loads((out / "results.json").read_text())
    assert results["params"]["method"] == "bbse"
    assert abs(sum(results["priors"]) - 1) < 1e-12  # renormalised by one division
    assert results["priors"][0] > 0.5  # the target is mostly class 0
    assert set(results["metrics"]) == {"unadapted", "adapted", "oracle"}
    assert (out / "report.md").read_text().startswith("# Label shift")
    assert main(args) == 0  # its own folder may be replaced


def test_the_fitted_adapter_is_saved_and_applies(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` saves the adapter (adapted to the target); ``calibkit apply`` adapts with
    it, as the library's adapter fitted on the same rows does."""
    from calibkit.calibrators import PriorShiftAdapter, load
    from calibkit.cli.labelshift import REPORT_FILES

    out = tmp_path / "report"
    args = [str(files[0]), str(files[1]), "--calibrator", "temperature", "--method", "bbse"]
    assert main(["labelshift", *args, "--out", str(out)]) == 0
    assert f"prior adapter: {out / 'adapter.json'}" in capsys.readouterr().out
    assert set(REPORT_FILES) <= {p.name for p in out.iterdir()}
    saved = load(out / "adapter.json")
    assert isinstance(saved, PriorShiftAdapter)
    assert saved.is_adapted
    with np.load(files[0]) as source, np.load(files[1]) as target:
        lib = PriorShiftAdapter(method="bbse", calibrator="temperature")
        lib.fit(source["logits"], source["labels"], target_logits=target["logits"])
        z = target["logits"]
    assert np.array_equal(saved.target_priors_, lib.target_priors_)
    result = tmp_path / "adapted.npz"
    assert main(["apply", str(out / "adapter.json"), str(files[1]), "-o", str(result)]) == 0
    assert "(saved with the adapter)" in capsys.readouterr().out
    with np.load(result) as npz:
        assert np.array_equal(npz["probs"], lib.predict_proba(z))


def test_unlabelled_target(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with np.load(files[1]) as f:
        logits = f["logits"]
    target = tmp_path / "unlabelled.npz"
    np.savez(target, logits=logits)
    assert main(["labelshift", str(files[0]), str(target), "--calibrator", "temperature"]) == 0
    text = capsys.readouterr().out
    assert "estimated" in text
    assert "oracle" not in text  # no labels, no scores


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--priors", "0.5,0.3,0.3"], "--priors: expected 3 priors >= 0 summing to 1"),
        (["--priors=-0.1,0.6,0.5"], "-0.1 for class 0"),
        (["--priors", "0.5,0.5"], "got 2 values"),
        (["--priors", "a,b"], "comma-separated numbers"),
        (["--method", "mle"], "invalid choice"),
        (["--calibrator", "temprature"], "'temprature' (did you mean 'temperature'?)"),
        (["--calibrator", "conformal"], "--calibrator: expected a method of kind 'logits'"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    out = tmp_path / "report"
    assert main(["labelshift", str(files[0]), str(files[1]), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()


def test_target_outside_the_source_classes(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    wide = tmp_path / "wide.npz"
    np.savez(wide, logits=np.zeros((10, 4)), labels=np.arange(10) % 4)
    assert main(["labelshift", str(files[0]), str(wide), "--out", str(out)]) == 2
    assert "source's 3 classes" in capsys.readouterr().err
    with np.load(files[0]) as f:
        z, y = f["logits"], f["labels"]
    narrow = tmp_path / "no_class_2.npz"
    np.savez(narrow, logits=z[y != 2], labels=y[y != 2])
    assert main(["labelshift", str(narrow), str(files[1]), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "class 2, which the source never shows" in err
    assert not out.exists()


def test_refuses_a_folder_it_did_not_write(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    assert main(["labelshift", str(files[0]), str(files[1]), "--out", str(out)]) == 2
    assert "--out" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep"
