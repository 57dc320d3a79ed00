"""``calibkit labelshift`` under hostile and careless input (issue #32): a singular BBSE
system and a one-row target are said (a ``calibkit: warning:`` line, the verdict, a caution
paragraph, ``results.json``), each file has its own score kind (``--target-kind``), and a
target CSV without labels is read (its labels only score the adaptation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from calibkit.cli import main
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    z, y = random_problem(1000, 3, seed=0)
    path = tmp_path / "source.npz"
    np.savez(path, logits=z, labels=y)
    return path


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["labelshift", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def test_bbse_on_a_singular_confusion_matrix_is_said_and_adapts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A source model that predicts class 0 for every row: BBSE's matrix has rank 1. Today:
    priors (0, 0, 1) and an adapted NLL of 491 with exit 0 and no word. Now: the source
    priors kept, a warning line, and the report saying so."""
    rng = np.random.default_rng(0)
    files = []
    for name, n in (("src.npz", 600), ("tgt.npz", 300)):
        z = rng.normal(size=(n, 3))
        z[:, 0] += 10.0
        np.savez(tmp_path / name, logits=z, labels=rng.integers(0, 3, n))
        files.append(str(tmp_path / name))
    out = tmp_path / "report"
    argv = ["--cal", files[0], "--target", files[1], "--estimator", "bbse", "--method", "none"]
    code, text, err = _run([*argv, "--n-boot", "0", "--out", str(out)], capsys)
    assert code == 0
    assert "calibkit: warning: BBSE: the confusion matrix is singular" in err
    results = json.loads((out / "results.json").read_text())
    assert results["identified"] is False
    assert results["priors"] == results["source_priors"]
    assert any("source priors were kept" in c for c in results["caveats"])
    before, after = results["metrics"]["unadapted"]["nll"], results["metrics"]["adapted"]["nll"]
    assert after == pytest.approx(before, rel=1e-9)  # not 491
    assert results["verdict"]["headline"].startswith("BBSE could not estimate the target priors")
    detail = results["verdict"]["detail"]
    assert detail.startswith("Read with care: BBSE's confusion matrix is singular")
    assert "Caution: BBSE: the confusion matrix is singular" in (out / "report.md").read_text()
    assert "caution: BBSE" in text  # the terminal's report too


def test_a_one_row_target_is_warned(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One row gives one class a prior near 1.0 (EM from one row); today with no word."""
    z, y = random_problem(50, 3, seed=1)
    target = tmp_path / "one.npz"
    np.savez(target, logits=z[:1], labels=y[:1])
    argv = ["--cal", str(source), "--target", str(target), "--n-boot", "0", "--format", "json"]
    code, text, err = _run([*argv, "--method", "temperature"], capsys)
    assert code == 0
    assert "calibkit: warning: 1 target row for 3 classes: too few to estimate 3 priors" in err
    results = json.loads(text)
    assert results["n_target"] == 1
    assert max(results["priors"]) > 0.99
    assert any("1 target row for 3 classes" in c for c in results["caveats"])
    assert "1 target rows are too few for 3 priors" in results["verdict"]["detail"]


def test_each_file_has_its_own_score_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Source logits and target probabilities, both .npy: ``--target-kind probs``. Without it
    the target's probabilities are read as logits, as ``--kind`` says (the former one kind
    for both files); with it the priors are those of the target's logits, log(probs)."""
    from calibkit.calibrators.priors.label_shift import PriorShiftAdapter

    z, y = random_problem(1500, 3, seed=2)
    np.save(tmp_path / "z.npy", z[:1000])
    np.save(tmp_path / "y.npy", y[:1000])
    np.save(tmp_path / "p.npy", _softmax(z[1000:]))
    cal = ["--cal", str(tmp_path / "z.npy"), "--cal-labels", str(tmp_path / "y.npy")]
    argv = [*cal, "--kind", "logits", "--target", str(tmp_path / "p.npy"), "--format", "json"]
    code, text, _ = _run([*argv, "--target-kind", "probs", "--method", "temperature"], capsys)
    assert code == 0
    lib = PriorShiftAdapter(calibrator="temperature").fit(z[:1000], y[:1000]).adapt(z[1000:])
    np.testing.assert_allclose(json.loads(text)["priors"], lib.target_priors_, atol=1e-9)


def test_a_target_kind_its_csv_contradicts_is_refused(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "target.csv"
    target.write_text("prob_0,prob_1,prob_2\n0.2,0.3,0.5\n0.6,0.2,0.2\n0.1,0.1,0.8\n")
    out = tmp_path / "report"
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = ["--cal", str(source), "--target", str(target), "--out", str(out)]
    code, _, err = _run([*argv, "--target-kind", "logits"], capsys)
    assert code == 2
    assert err == (
        "calibkit: error: --target-kind: expected 'probs' (the columns of target.csv), "
        "got 'logits'\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_target_csv_without_labels_is_read(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Target labels are optional: a .csv without a ``label`` column gives scores only
    (today: refused, the CSV layout demanding a label column). Its priors are those of the
    same rows as an unlabelled .npz."""
    z, _ = random_problem(400, 3, seed=3)
    p = _softmax(z)
    target = tmp_path / "target.csv"
    lines = ["prob_2,prob_0,prob_1", *(f"{r[2]!r},{r[0]!r},{r[1]!r}" for r in p.tolist())]
    target.write_text("\n".join(lines) + "\n")
    npz = tmp_path / "target.npz"
    np.savez(npz, probs=p)
    argv = ["--cal", str(source), "--method", "temperature", "--n-boot", "0", "--format", "json"]
    code, text, err = _run([*argv, "--target", str(target)], capsys)
    assert code == 0, err
    results = json.loads(text)
    assert results["true_priors"] is None
    assert results["metrics"] == {}
    assert "without target labels" in results["verdict"]["headline"]
    code, text, _ = _run([*argv, "--target", str(npz)], capsys)
    assert code == 0
    # the same numbers by two layouts (columns in another order): rounding apart
    np.testing.assert_allclose(json.loads(text)["priors"], results["priors"], rtol=1e-12)
