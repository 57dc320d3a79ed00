"""``calibkit labelshift``: the verdict first, priors and scores printed, the report folder
(report.md, report.html, results.json, adapter.json), an unlabelled target, the former
spellings, and bad input (exit 2, one message, nothing written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from calibkit import Resampling
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


def _pair(files: tuple[Path, Path]) -> list[str]:
    return ["labelshift", "--cal", str(files[0]), "--target", str(files[1])]


def test_report_is_written(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from calibkit.cli.labelshift import REPORT_FILES

    out = tmp_path / "report"
    args = [*_pair(files), "--estimator", "bbse", "--n-boot", "0", "--out", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.startswith("Adapting to the estimated priors ")  # the verdict first
    assert "Estimated %" in text
    assert "oracle" in text
    assert set(REPORT_FILES) <= {p.name for p in out.iterdir()}
    results = json.loads((out / "results.json").read_text())
    assert results["command"] == "calibkit labelshift"
    assert results["verdict"]["headline"].startswith("Adapting to the estimated priors")
    assert results["params"]["estimator"] == {"name": "bbse", "soft": False}
    assert results["estimator"] == "bbse"
    assert abs(sum(results["priors"]) - 1) < 1e-12  # renormalised by one division
    assert results["priors"][0] > 0.5  # the target is mostly class 0
    assert set(results["metrics"]) == {"unadapted", "adapted", "oracle"}
    assert results["intervals"] == {}  # --n-boot 0
    assert set(results["inputs"]) == {"--cal", "--target"}
    md = (out / "report.md").read_text()
    assert md.startswith("# Label shift")
    assert md.index("Adapting to the estimated priors") < md.index("## Class priors")
    html = (out / "report.html").read_text()
    assert html.index("Adapting to the estimated priors") < html.index("Class priors")
    body = re.sub(r"<style.*?</style>", "", html, flags=re.S)
    for markdown in ("**", "`", "| ---"):  # no raw Markdown
        assert markdown not in body
    assert "<code>adapter.json</code>" in body
    assert main(args) == 0  # its own folder may be replaced


def test_metric_labels_come_from_the_registry() -> None:
    from calibkit.core.outputs import as_outputs
    from calibkit.metrics.info import METRICS
    from calibkit.reporting.label_shift_report import scores_table
    from calibkit.workflows.label_shift import SCORED, label_shift

    z, y = random_problem(600, 3, seed=2)
    r = label_shift(
        as_outputs(y[:300], logits=z[:300]), z[300:], y[300:], resampling=Resampling(n_boot=0)
    )
    header = scores_table(r).header[1:]
    for name, h in zip(SCORED, header, strict=True):
        info = METRICS.get(name)
        assert h == (f"{info.label} %" if info.percent else info.label)


def test_bootstrap_intervals(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    args = [*_pair(files), "--n-boot", "200", "--level", "0.9", "--seed", "3", "--n-bins", "10"]
    assert main([*args, "--out", str(out), "--format", "json"]) == 0
    results = json.loads(capsys.readouterr().out)  # --format json: results.json's content
    assert results == json.loads((out / "results.json").read_text())
    assert (results["n_boot"], results["level"], results["n_bins"]) == (200, 0.9, 10)
    for variant, cis in results["intervals"].items():
        for name, (lo, hi) in cis.items():
            assert lo <= results["metrics"][variant][name] <= hi or name == "ece"
    lo, hi = results["change_intervals"]["nll"]
    assert lo <= hi
    assert "(90% intervals)" in results["verdict"]["detail"]
    assert "[" in (out / "report.md").read_text()  # the intervals in the table


def test_the_fitted_adapter_is_saved_and_applies(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` saves the adapter (adapted to the target); ``calibkit apply`` adapts with
    it, as the library's adapter fitted on the same rows does."""
    from calibkit.calibrators import PriorShiftAdapter, load

    out = tmp_path / "report"
    args = [*_pair(files), "--method", "temperature", "--estimator", "bbse", "--n-boot", "0"]
    assert main([*args, "--out", str(out)]) == 0
    assert f"prior adapter: {out / 'adapter.json'}" in capsys.readouterr().out
    saved = load(out / "adapter.json")
    assert isinstance(saved, PriorShiftAdapter)
    assert saved.is_adapted
    with np.load(files[0]) as source, np.load(files[1]) as target:
        lib = PriorShiftAdapter(estimator="bbse", calibrator="temperature")
        lib.fit(source["logits"], source["labels"], target_logits=target["logits"])
        z = target["logits"]
    assert np.array_equal(saved.target_priors_, lib.target_priors_)
    result = tmp_path / "adapted.npz"
    assert main(["apply", str(out / "adapter.json"), str(files[1]), "--out", str(result)]) == 0
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
    argv = [
        "labelshift",
        "--cal",
        str(files[0]),
        "--target",
        str(target),
        "--method",
        "temperature",
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("The estimated target priors differ from the source's by up to ")
    assert "without target labels the gain of adapting cannot be measured" in text
    assert "oracle" not in text  # no labels, no scores


def test_the_inputs_are_named_options(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["labelshift", str(files[0]), "--target", str(files[1])]) == 2
    assert f"unrecognized arguments: {files[0]}" in capsys.readouterr().err
    assert main(["labelshift", "--cal", str(files[0])]) == 2
    assert "--target: expected a prediction file" in capsys.readouterr().err


@pytest.mark.parametrize("estimator", ["em", "bbse"])
def test_the_former_method_em_says_to_use_estimator(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], estimator: str
) -> None:
    out = tmp_path / "report"
    assert main([*_pair(files), "--method", estimator, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--method now names the calibrator; use --estimator " + estimator in err
    assert not out.exists()


def test_the_estimator_takes_its_parameters(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--estimator bbse --estimator-param soft=true``: the adapter saved with BBSE(soft)."""
    out = tmp_path / "report"
    args = ["--estimator", "bbse", "--estimator-param", "soft=true", "--n-boot", "0"]
    assert main([*_pair(files), *args, "--out", str(out)]) == 0
    saved = json.loads((out / "adapter.json").read_text())
    assert saved["params"]["estimator"] == {"name": "bbse", "soft": True}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--priors", "0.5,0.3,0.3"], "--priors: expected 3 priors >= 0 summing to 1"),
        (["--priors=-0.1,0.6,0.5"], "-0.1 for class 0"),
        (["--priors", "0.5,0.5"], "got 2 values"),
        (["--priors", "a,b"], "comma-separated numbers"),
        (["--estimator", "mle"], "--estimator: expected one of bbse, em, got 'mle'"),
        (["--method", "temprature"], "'temprature' (did you mean 'temperature'?)"),
        (["--method", "conformal"], "--method: expected a method of kind 'logits'"),
        (["--level", "1.5"], "--level"),
        (["--estimator-param", "soft=true"], "--estimator-param: expected parameters among tol"),
        (["--estimator-param", "tol=-1"], "--estimator-param tol: expected a finite number > 0"),
        (["--estimator-param", "tol"], "--estimator-param: expected KEY=VALUE"),
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
    assert main([*_pair(files), *args, "--out", str(out)]) == 2
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
    argv = ["labelshift", "--cal", str(files[0]), "--target", str(wide), "--out", str(out)]
    assert main(argv) == 2
    assert "source's 3 classes" in capsys.readouterr().err
    with np.load(files[0]) as f:
        z, y = f["logits"], f["labels"]
    narrow = tmp_path / "no_class_2.npz"
    np.savez(narrow, logits=z[y != 2], labels=y[y != 2])
    argv = ["labelshift", "--cal", str(narrow), "--target", str(files[1]), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "class 2, which the source never shows" in err
    assert not out.exists()


def test_refuses_a_folder_it_did_not_write(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    assert main([*_pair(files), "--out", str(out)]) == 2
    assert "--out" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep"


# ----- Refusals: ``calibkit labelshift`` under hostile and careless input (issue #32): a singular
# BBSE system and a one-row target are said (a ``calibkit: warning:`` line, the verdict, a caution
# paragraph, ``results.json``), each file has its own score kind (``--target-kind``), and a
# target CSV without labels is read (its labels only score the adaptation).


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
