"""``calibkit conformal``: the report folder (verdict first), the fitted predictors that
``calibkit apply`` uses, and bad input (exit 2, nothing written)."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import numpy as np
import pytest

from calibkit.calibrators import CALIBRATORS, ConformalClassifier, TemperatureScaling
from calibkit.cli import main
from calibkit.reporting.text import plain
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def preds(tmp_path: Path) -> Path:
    z, y = random_problem(1000, 4, seed=0)
    path = tmp_path / "preds.npz"
    np.savez(path, logits=z, labels=y)
    return path


def test_report_folder_verdict_first(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    args = [str(preds), "--alpha", "0.1", "--scores", "raps,lac", "--method", "temperature"]
    assert main(["conformal", *args, "--n-boot", "50", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    names = {p.name for p in out.iterdir()}
    wanted = {"report.md", "report.html", "results.json", "conformal_raps.json"}
    assert wanted | {"conformal_lac.json"} <= names
    first = text.splitlines()[0]
    assert "90% target" in first
    assert "of test labels" in first
    assert "Coverage %" in text
    assert "Mean set size" in text
    results = json.loads((out / "results.json").read_text())
    assert results["command"] == "calibkit conformal"
    assert plain(results["verdict"]["headline"]) == first
    assert [r["score"] for r in results["results"]] == ["raps", "lac"]
    values = results["results"][0]["values"]
    assert set(values) == {"coverage", "mean_set_size", "median_set_size", "class_coverage_gap"}
    assert 0.8 < values["coverage"] < 1.0
    assert results["level"] == 0.95
    assert results["options"]["method"] == "temperature"
    md = (out / "report.md").read_text()
    assert md.startswith("# Conformal prediction sets: preds.npz")
    assert md.splitlines()[2].count("**") == 2  # the headline bold once, nothing bold inside
    assert md.index("90% target") < md.index("| Score |")  # verdict before the tables
    assert "Coverage by set size" in md
    assert "How to read" in md
    page = (out / "report.html").read_text()
    assert "**" not in page
    assert "`" not in page
    assert page.index('class="verdict"') < page.index("<table")
    assert main(["conformal", *args, "--n-boot", "0", "--out", str(out)]) == 0  # its own folder


def test_a_lower_level_gives_narrower_intervals(preds: Path, tmp_path: Path) -> None:
    ci = {}
    for level in ("0.8", "0.95"):
        out = tmp_path / level
        args = ["--scores", "lac", "--n-boot", "200", "--level", level, "--out", str(out)]
        assert main(["conformal", str(preds), *args]) == 0
        ci[level] = json.loads((out / "results.json").read_text())["results"][0]["ci"]
    for name in ("coverage", "mean_set_size"):
        (lo8, hi8), (lo95, hi95) = ci["0.8"][name], ci["0.95"][name]
        assert lo95 <= lo8 < hi8 <= hi95
        assert hi8 - lo8 < hi95 - lo95


def test_json_format_prints_results_json(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    args = [str(preds), "--scores", "lac", "--n-boot", "0", "--format", "json", "--out", str(out)]
    assert main(["conformal", *args]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["results"] == json.loads((out / "results.json").read_text())["results"]


def test_the_fitted_predictors_are_saved_and_apply(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out`` saves each score's predictor; ``calibkit apply`` makes the sets of new
    predictions with it, equal to the library's predictor fitted on the same part."""
    from calibkit.calibrators import ConformalClassifier, load
    from calibkit.core.splits import split_outputs
    from calibkit.io.atomic import MANIFEST
    from calibkit.io.predictions import load_predictions
    from calibkit.reporting.writer import REPORT_FILES

    out = tmp_path / "report"
    args = [str(preds), "--scores", "raps,lac", "--method", "temperature", "--seed", "3"]
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
        assert saved.conformity_score.name == score
        result = tmp_path / f"{score}.npz"
        assert main(["apply", str(path), str(tmp_path / "test.npz"), "-o", str(result)]) == 0
        assert f"applied conformal ({score}, alpha 0.1) to 300 samples" in capsys.readouterr().out
        lib = ConformalClassifier(
            conformity_score=score,
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
        (["--scores", "topk"], "scores among lac, aps, raps, saps"),
        (["--alpha", "0.001"], "--cal-size: expected at least 999 calibration rows"),
        (
            ["--alpha", "0.005", "--mondrian"],
            "at least 199 calibration rows for the quantile per class",
        ),
        (["--cal-size", "1000"], "--cal-size"),
        (["--method", "nope"], "nope"),
        (["--level", "1.5"], "--level"),
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


def test_scores_and_run_follow_the_glossary() -> None:
    from calibkit.calibrators.sets.conformal_scores import SCORES as LIBRARY
    from calibkit.cli import conformal

    assert tuple(LIBRARY.names()) == conformal.SCORES  # both read from the catalog
    run = ast.parse(inspect.getsource(conformal.run)).body[0]
    assert run.end_lineno is not None
    assert run.end_lineno - run.lineno + 1 <= 40
    assert not re.search(r"\bprint\(|write_text|\.md\b", inspect.getsource(conformal.run))


def test_score_params_reach_the_scores_that_declare_them(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--score-param penalty=0.05`` gives RAPS its penalty (APS declares none, and keeps
    none); the saved predictor holds the score with it."""
    out = tmp_path / "report"
    args = ["--scores", "aps,raps", "--score-param", "penalty=0.05", "--n-boot", "0"]
    assert main(["conformal", str(preds), *args, "--out", str(out)]) == 0
    saved = json.loads((out / "conformal_raps.json").read_text())
    assert saved["params"]["conformity_score"] == {"name": "raps", "penalty": 0.05, "k_reg": 1}
    aps = json.loads((out / "conformal_aps.json").read_text())
    assert aps["params"]["conformity_score"] == {"name": "aps"}
    results = json.loads((out / "results.json").read_text())
    assert results["results"][1]["params"]["conformity_score"]["penalty"] == 0.05
    assert "rows for the quantile, raps (penalty=0.05, k_reg=1);" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--scores", "aps", "--score-param", "penalty=0.05"], "--score-param: expected"),
        (["--score-param", "penalty"], "--score-param: expected KEY=VALUE"),
        (["--score-param", "penalty=-1"], "--score-param penalty: expected a finite number >= 0"),
        (["--score-param", "k_reg=1", "--score-param", "k_reg=2"], "--score-param k_reg: "),
    ],
)
def test_bad_score_params_are_refused_before_any_work(
    preds: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "report"
    assert main(["conformal", str(preds), *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err, err
    assert not out.exists()


def test_a_mistyped_score_is_suggested(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A near miss names the score meant (#30): 'rapss' -> 'raps', exit 2, nothing written."""
    preds = tmp_path / "p.npz"
    np.savez(preds, logits=np.eye(3)[[0, 1, 2, 0]], labels=np.array([0, 1, 2, 0]))
    assert main(["conformal", str(preds), "--scores", "lac,rapss"]) == 2
    assert "did you mean 'raps'?" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.npz"]


# ----- Refusals: the command line never offers nor accepts a Python-only parameter (issue 32)
# ``allow_full_sets`` is refused by ``calibkit fit --param``, and a calibration part too small
# for alpha is refused by ``calibkit conformal`` and ``calibkit fit`` naming the option, with
# no suggestion the command line cannot take, before any fit and writing nothing.


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    z, y = random_problem(400, 3, seed=0)
    np.savez(tmp_path / "preds.npz", logits=z, labels=y)
    return tmp_path


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _refused(work: Path, capsys: pytest.CaptureFixture[str], args: list[str]) -> str:
    before = _listing(work)
    capsys.readouterr()
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("calibkit: error: ")
    assert _listing(work) == before
    return captured.err


def _no_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any fit (of the conformal predictor or of the calibrator underneath) fails the test."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("refused only after a fit")

    monkeypatch.setattr(ConformalClassifier, "fit", fail)
    monkeypatch.setattr(TemperatureScaling, "fit", fail)


@pytest.mark.parametrize("value", ["true", "false"])
def test_fit_refuses_a_python_only_parameter(
    work: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    args = ["fit", "preds.npz", "--method", "conformal", "--param", f"allow_full_sets={value}"]
    err = _refused(work, capsys, args)
    assert "--param: expected a parameter of conformal (conformity_score, alpha," in err
    assert "got 'allow_full_sets' (a Python-only parameter)" in err
    offered = err[err.index("(") : err.index(")")]
    assert "allow_full_sets" not in offered


def test_every_python_only_parameter_is_a_declared_one() -> None:
    for name in CALIBRATORS.names():
        klass = CALIBRATORS.get(name)
        assert set(klass.python_only) <= set(klass.param_constraints), name
    assert ConformalClassifier.python_only == ("allow_full_sets",)


def test_conformal_refuses_too_few_rows_naming_cal_size_before_any_fit(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fit(monkeypatch)
    args = ["conformal", "preds.npz", "--alpha", "0.001", "--method", "temperature"]
    err = _refused(work, capsys, [*args, "--out", "rep"])
    assert err.startswith("calibkit: error: --cal-size: expected at least 999 calibration rows")
    assert "or a larger alpha, got 100 calibration rows" in err  # 200 rows, half to T
    assert "allow_full_sets" not in err


def test_fit_refuses_too_few_rows_naming_the_file_before_any_fit(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_fit(monkeypatch)
    args = ["fit", "preds.npz", "--method", "conformal", "--param", "alpha=0.001"]
    err = _refused(work, capsys, [*args, "--param", "calibrator=temperature"])
    assert err.startswith("calibkit: error: FILE preds.npz: expected at least 999 calibration")
    assert "or a larger alpha, got 200 calibration rows" in err
    assert "allow_full_sets" not in err


def test_python_still_offers_full_sets() -> None:
    z, y = random_problem(40, 3, seed=0)
    with pytest.raises(ValueError, match=r"or allow_full_sets=True, got 20 calibration rows"):
        ConformalClassifier(alpha=0.01, calibrator="temperature").fit(z, y)
    full = ConformalClassifier(alpha=0.01, calibrator="temperature", allow_full_sets=True)
    assert np.isinf(full.fit(z, y).thresholds_).all()


def test_a_tiny_alpha_gives_a_compact_message(
    work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: alpha=1e-300 needs about 1e+300 rows, which the message wrote in 300 digits."""
    _no_fit(monkeypatch)
    err = _refused(work, capsys, ["conformal", "preds.npz", "--alpha", "1e-300"])
    assert err == (
        "calibkit: error: --cal-size: expected at least 1e+300 calibration rows for the quantile"
        " for alpha=1e-300 (ceil((n + 1)(1 - alpha)) <= n), or a larger alpha, got 200"
        " calibration rows for the quantile\n"
    )
    err = _refused(work, capsys, ["evaluate", "preds.npz", "--n-bins", str(10**400)])
    assert "--n-bins: expected an integer in [1, 100000], got 1e+400 (see" in err
