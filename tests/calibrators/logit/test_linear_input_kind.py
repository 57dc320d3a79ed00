"""A linear map of the raw logits records the kind of input its caller declared (issue #42).

Vector and matrix scaling and MS-ODIR map ``W z + b``: a constant added to a row of logits
changes their output unless ``W``'s rows sum alike, so the logits and the log-probabilities
of one model gave other numbers (on 300 rows of 3 classes: up to 0.16 for vector scaling
and 0.17 for matrix scaling fitted on logits, 0.41 and 0.19 fitted on probabilities) with
no word. The caller says which it gives, ``fit(..., input_kind="logits" | "probs")``, and
nothing is read from the values (a core rule: an earlier version read the kind from the
rows' logsumexp). The fit records the declared kind (``input_kind_``): fitted on
probabilities, the map takes the log-softmax of every row (the same numbers for a model's
logits as for its probabilities, in Python and in its module); fitted on logits, it takes
what it is given, and ``calibkit apply``, which knows a file's kind, refuses a file of
probabilities for it. Maps that ignore the constant (temperature scaling, Dirichlet
calibration on the log-softmax, ...) record nothing and take both.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import calibkit.calibrators.fitted as fitted_module
import calibkit.calibrators.modules as modules
from calibkit.calibrators import CALIBRATORS, create_calibrator
from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.fitted import load_document
from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs, log_softmax64
from tests.calibrators import kinds
from tests.calibrators.problems import random_problem
from tests.calibrators.test_modules import PATHS

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

#: The maps of raw logits, each as published (no shrinkage towards temperature scaling).
LINEAR = {"vector": {"shrink": "none"}, "matrix": {"shrink": "none"}, "ms_odir": {}}


def _problem() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z, y = random_problem(300, 3, seed=0, temperature=1.5, scale=2.5)
    test, _ = random_problem(300, 3, seed=1, temperature=1.5, scale=2.5)
    return z, y, test


def _probs32(z: np.ndarray) -> np.ndarray:
    """The probabilities of logits ``z`` as a file of float32 probabilities holds them."""
    return np.exp(log_softmax64(z)).astype(np.float32)


def _log_probs32(z: np.ndarray) -> np.ndarray:
    """The log of those float32 probabilities, as the command line gives them."""
    return np.log(_probs32(z).astype(np.float64))


@functools.cache
def _fitted(name: str, on: str) -> Calibrator:
    z, y, _ = _problem()
    inputs = z if on == "logits" else _log_probs32(z)
    cal: Calibrator = create_calibrator(name, **LINEAR[name]).fit(inputs, y, input_kind=on)
    return cal


def test_exactly_the_maps_of_raw_logits_record_their_input() -> None:
    names = CALIBRATORS.names(kind=("logits", "groups"))
    assert [n for n in names if not CALIBRATORS.get(n).shift_invariant] == list(LINEAR)
    # the others give the same numbers for a model's logits and its log-probabilities
    for name in names:
        if name in LINEAR or name == "venn_abers":  # Venn-Abers: ties at calibration scores
            continue
        obj = kinds.fitted(name)
        z, metadata = kinds.rows(name)
        shifted = log_softmax64(z)
        np.testing.assert_allclose(
            kinds.answer(obj, shifted, metadata), kinds.answer(obj, z, metadata), atol=1e-9
        )
        assert "input_kind_" not in obj.to_json()["state"]
        assert obj.fitted_input_kind() is None


# ----- the kind is declared, never read from the values -------------------------------------------
def test_no_function_reads_the_kind_from_the_values() -> None:
    for gone in ("input_kind", "as_log_probs", "NORMALIZED_TOL", "_logsumexp_rows"):
        assert not hasattr(fitted_module, gone), gone
    assert not hasattr(modules, "LogProbs")
    z, y, _ = _problem()
    log_p = log_softmax64(z)  # log-probabilities to the last digit
    # what the caller says, whatever the rows look like
    undeclared = create_calibrator("vector").fit(log_p, y)
    assert undeclared.input_kind_ == "logits"  # type: ignore[attr-defined]
    declared = create_calibrator("vector").fit(z, y, input_kind="probs")
    assert declared.input_kind_ == "probs"  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["log-probs", "Probs", None, 1, ["probs"]])
def test_a_bad_input_kind_is_one_input_error(value: object) -> None:
    z, y, _ = _problem()
    pattern = r"^input_kind: expected 'logits' or 'probs' \(.*\), got "
    for obj in (
        create_calibrator("vector"),
        create_calibrator("temperature"),  # checked where nothing is recorded too
        create_calibrator("auto", methods=["temperature"], n_folds=2),
        ConformalClassifier(calibrator="vector", alpha=0.2),
        PriorShiftAdapter(calibrator="vector"),
    ):
        with pytest.raises(InputError, match=pattern) as info:
            obj.fit(z, y, input_kind=value)
        assert str(info.value).count("\n") == 0
        assert not obj.is_fitted


def test_the_input_kind_is_keyword_only() -> None:
    z, y, _ = _problem()
    with pytest.raises(TypeError):
        create_calibrator("vector").fit(z, y, None, "probs")  # type: ignore[misc]


# ----- fitted on logits: recorded, the values taken as given ----------------------------------
@pytest.mark.parametrize("name", LINEAR)
def test_fitted_on_logits_the_document_says_logits(name: str) -> None:
    cal = _fitted(name, "logits")
    doc = json.loads(json.dumps(cal.to_json()))
    assert doc["state"]["input_kind_"] == "logits"
    assert load_document(doc).fitted_input_kind() == "logits"
    _, _, test = _problem()
    # log-probabilities taken as given (nothing guessed, no refusal): other numbers, which
    # only a caller that knows the kind can refuse (calibkit apply)
    log_p = _log_probs32(test)
    gap = np.abs(cal.predict_proba(log_p) - cal.predict_proba(test)).max()
    assert gap > 0.04, gap


# ----- fitted on probabilities: the log-softmax of every row ----------------------------------
@pytest.mark.parametrize("name", LINEAR)
def test_fitted_on_probabilities_logits_give_the_same_numbers(name: str) -> None:
    cal = _fitted(name, "probs")
    assert cal.input_kind_ == "probs"  # type: ignore[attr-defined]
    _, _, test = _problem()
    log_p = log_softmax64(test)
    on_logits = cal.predict_proba(test)
    np.testing.assert_allclose(cal.predict_proba(log_p), on_logits, rtol=0, atol=1e-9)
    np.testing.assert_allclose(cal.transform(log_p), cal.transform(test), rtol=0, atol=1e-9)
    # a file's float32 probabilities: to their rounding
    np.testing.assert_allclose(cal.predict_proba(_log_probs32(test)), on_logits, atol=1e-6)


@pytest.mark.parametrize("name", LINEAR)
def test_fitted_on_probabilities_the_fit_takes_their_log_softmax(name: str) -> None:
    """At fit as at prediction: log-probabilities whose rows are off by a constant (a file's
    rounding, or logits declared as probabilities) fit the map of their log-softmax."""
    z, y, _ = _problem()
    a = create_calibrator(name, **LINEAR[name]).fit(z, y, input_kind="probs")
    b = create_calibrator(name, **LINEAR[name]).fit(log_softmax64(z), y, input_kind="probs")
    np.testing.assert_allclose(a.weights_, b.weights_, atol=1e-9)  # type: ignore[attr-defined]
    np.testing.assert_allclose(a.bias_, b.bias_, atol=1e-9)  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", LINEAR)
def test_the_module_takes_the_log_softmax_too(name: str, path: str, tmp_path: Path) -> None:
    cal = _fitted(name, "probs")
    _, _, test = _problem()
    module = cal.to_module()
    for x in (test, log_softmax64(test)):
        got = PATHS[path](module, torch.tensor(x), tmp_path)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, cal.predict_proba(x), rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        PATHS[path](module, torch.tensor(log_softmax64(test)), tmp_path),
        PATHS[path](module, torch.tensor(test), tmp_path),
        rtol=0,
        atol=1e-9,
    )


@pytest.mark.parametrize("name", LINEAR)
def test_the_file_keeps_the_input_kind(name: str) -> None:
    cal = _fitted(name, "probs")
    _, _, test = _problem()
    back = load_document(json.loads(json.dumps(cal.to_json())))
    assert back.input_kind_ == "probs"  # type: ignore[attr-defined]
    np.testing.assert_array_equal(back.predict_proba(test), cal.predict_proba(test))


def test_a_file_whose_input_kind_was_edited_is_refused() -> None:
    doc = _fitted("vector", "logits").to_json()
    doc["state"]["input_kind_"] = "log-probabilities"
    with pytest.raises(InputError, match=r"state\.input_kind_: expected one of logits, probs, got"):
        load_document(doc)


# ----- composed kinds pass the declared kind to the map underneath ----------------------------
def test_auto_declares_the_kind_to_its_candidates() -> None:
    """``auto``'s module is its choice's: fitted on probabilities, the log-softmax first."""
    z, y, test = _problem()
    log_p = _log_probs32(z)
    auto = create_calibrator("auto", methods=["matrix"], n_folds=2).fit(
        log_p, y, input_kind="probs"
    )
    assert auto.chosen.input_kind_ == "probs"  # type: ignore[attr-defined]
    assert auto.fitted_input_kind() == "probs"
    module = auto.to_module()
    for x in (test, log_softmax64(test)):
        expected = auto.predict_proba(x)
        np.testing.assert_allclose(module(torch.tensor(x)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(auto.predict_proba(test), expected, atol=1e-9)
    # fit_outputs declares the outputs' kind
    on_probs = create_calibrator("auto", methods=["vector"], n_folds=2)
    on_probs.fit_outputs(as_outputs(y, probs=_probs32(z)))  # type: ignore[attr-defined]
    assert on_probs.fitted_input_kind() == "probs"
    plain = create_calibrator("auto", methods=["vector"], n_folds=2).fit(log_p, y)
    assert plain.fitted_input_kind() == "logits"


def test_conformal_and_prior_shift_declare_the_kind_to_their_calibrator() -> None:
    z, y, test = _problem()
    log_p = _log_probs32(z)
    for obj in (
        ConformalClassifier(calibrator="vector", alpha=0.2),
        PriorShiftAdapter(calibrator="vector"),
    ):
        obj.fit(log_p, y, input_kind="probs")
        assert obj.calibrator_.input_kind_ == "probs"
        assert obj.fitted_input_kind() == "probs"
        back = load_document(json.loads(json.dumps(obj.to_json())))
        assert back.fitted_input_kind() == "probs"
        probs = obj._probs  # the calibrator's probabilities (the adapter's source posteriors)
        np.testing.assert_allclose(probs(log_softmax64(test)), probs(test), atol=1e-9)
    assert (
        ConformalClassifier(alpha=0.2).fit(log_p, y, input_kind="probs").fitted_input_kind() is None
    )


def test_a_given_calibrator_fitted_on_logits_is_refused_for_probabilities() -> None:
    z, y, _ = _problem()
    given = _fitted("vector", "logits")
    for obj in (
        ConformalClassifier(calibrator=given, alpha=0.2),
        PriorShiftAdapter(calibrator=given),
    ):
        with pytest.raises(InputError, match=r"^input_kind: expected 'logits', as the given"):
            obj.fit(_log_probs32(z), y, input_kind="probs")
        assert obj.fit(z, y).fitted_input_kind() == "logits"


def test_calibrated_classifier_declares_probabilities_of_predict_proba() -> None:
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB

    from calibkit.calibrators.sklearn_wrapper import CalibratedClassifier

    x, y = make_classification(n_samples=300, n_informative=4, n_classes=3, random_state=0)
    for estimator, kind in ((GaussianNB(), "probs"), (LogisticRegression(), "logits")):
        for options in ({"cv": 2}, {"cv": 2, "ensemble": False}):
            clf = CalibratedClassifier(estimator, method="vector", **options).fit(x, y)
            assert {c.input_kind_ for _, c in clf.calibrated_classifiers_} == {kind}
    prefit = GaussianNB().fit(x, y)
    clf = CalibratedClassifier(prefit, method="vector", cv="prefit").fit(x, y)
    assert clf.calibrated_classifiers_[0][1].input_kind_ == "probs"


def test_compare_declares_the_outputs_kind() -> None:
    from calibkit import Binning, Resampling
    from calibkit.workflows.compare import _fitted_row, _Options

    z, y, test = _problem()
    settings = _Options(Binning(), Resampling(n_boot=0))
    for out, kind in (
        (as_outputs(y, probs=_probs32(z)), "probs"),
        (as_outputs(y, logits=z), "logits"),
    ):
        cal, _ = _fitted_row("vector", out, as_outputs(y, logits=test), settings, {}, None)
        assert cal.input_kind_ == kind  # type: ignore[attr-defined]


# ----- through the command line -------------------------------------------------------------------
@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One model's outputs as logits and as float32 probabilities, for fit and apply."""
    monkeypatch.chdir(tmp_path)
    z, y, test = _problem()
    np.savez("fit_logits.npz", logits=z, labels=y)
    np.savez("fit_probs.npz", probs=_probs32(z), labels=y)
    np.savez("logits.npz", logits=test, labels=y)
    np.savez("probs.npz", probs=_probs32(test), labels=y)
    np.savez("probs_unlabelled.npz", probs=_probs32(test))
    np.save("probs.npy", _probs32(test))
    np.savez("scores.npz", scores=_probs32(test), labels=y)
    return tmp_path


def _state(path: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(path.read_text())["state"]
    return state


def _inner_kind(path: Path) -> object:
    """The input kind the calibrator underneath a saved composed kind records."""
    return _state(path)["calibrator_"]["state"]["input_kind_"]


@pytest.mark.parametrize("name", ["vector", "matrix"])
def test_calibkit_apply_refuses_probabilities_for_a_map_fitted_on_logits(
    name: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fit = ["fit", "--method", name, "--param", "shrink=none", "-o", "calibrator.json"]
    assert main([*fit, "fit_logits.npz"]) == 0
    assert _state(files / "calibrator.json")["input_kind_"] == "logits"
    assert main(["apply", "calibrator.json", "logits.npz", "-o", "a.npz"]) == 0
    capsys.readouterr()
    for given in (
        ["probs.npz"],
        ["probs_unlabelled.npz"],
        ["probs.npy", "--kind", "probs"],
        ["scores.npz", "--kind", "probs", "--scores-key", "scores"],  # declared: probs
    ):
        assert main(["apply", "calibrator.json", *given, "-o", "b.npz"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert "Traceback" not in err
        assert err.startswith(
            f"calibkit: error: FILE {given[0]}: expected logits: the map of calibrator.json "
            f"({name!r}) was fitted on logits"
        ), err
        assert "gives other numbers on probabilities" in err
        assert err.rstrip().endswith("got probabilities"), err
        assert not (files / "b.npz").exists()


def test_calibkit_fit_on_probabilities_records_them(files: Path) -> None:
    fit = ["fit", "--method", "matrix", "--param", "shrink=none", "-o", "calibrator.json"]
    assert main([*fit, "fit_probs.npz"]) == 0
    assert _state(files / "calibrator.json")["input_kind_"] == "probs"
    assert main(["apply", "calibrator.json", "probs.npz", "-o", "a.npz"]) == 0
    assert main(["apply", "calibrator.json", "logits.npz", "-o", "b.npz"]) == 0
    a, b = np.load(files / "a.npz")["probs"], np.load(files / "b.npz")["probs"]
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-6)  # float32 probabilities
    # the same map as in Python, declared alike
    z, y, test = _problem()
    cal = create_calibrator("matrix", shrink="none").fit(_log_probs32(z), y, input_kind="probs")
    np.testing.assert_allclose(b, cal.predict_proba(test), rtol=0, atol=1e-12)


def test_calibkit_fit_declares_the_kind_under_composed_kinds(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fit = ["fit", "--method", "conformal", "--param", "calibrator=vector", "--param", "alpha=0.2"]
    assert main([*fit, "fit_probs.npz", "-o", "cp_probs.json"]) == 0
    assert _inner_kind(files / "cp_probs.json") == "probs"
    assert main(["apply", "cp_probs.json", "probs.npz", "-o", "a.npz"]) == 0
    assert main([*fit, "fit_logits.npz", "-o", "cp_logits.json"]) == 0
    capsys.readouterr()
    assert main(["apply", "cp_logits.json", "probs.npz", "-o", "b.npz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error: FILE probs.npz: expected logits"), err
    assert not (files / "b.npz").exists()
    shift = ["fit", "--method", "prior_shift", "--param", "calibrator=vector"]
    assert main([*shift, "fit_probs.npz", "-o", "ps.json", "--target", "logits.npz"]) == 0
    assert _inner_kind(files / "ps.json") == "probs"
    # a target of probabilities for a map fitted on logits: refused, nothing written
    capsys.readouterr()
    assert main([*shift, "fit_logits.npz", "-o", "ps2.json", "--target", "probs.npz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("calibkit: error: --target: expected logits: the map of FILE"), err
    assert not (files / "ps2.json").exists()


def test_the_reports_files_record_their_files_kind(files: Path) -> None:
    """``calibkit conformal`` and ``calibkit labelshift`` write fitted files ``calibkit
    apply`` reads: fitted on a file of probabilities, they say so, and apply takes it."""
    out = ["--n-boot", "0", "--format", "json"]
    cp = ["conformal", "fit_probs.npz", "--method", "vector", "--scores", "aps", "--alpha", "0.2"]
    assert main([*cp, *out, "--out", "cp"]) == 0
    assert (
        _state(files / "cp" / "conformal_aps.json")["calibrator_"]["state"]["input_kind_"]
        == "probs"
    )  # type: ignore[index]
    assert main(["apply", "cp/conformal_aps.json", "probs.npz", "-o", "a.npz"]) == 0
    ls = ["labelshift", "--cal", "fit_probs.npz", "--target", "probs.npz", "--method", "vector"]
    assert main([*ls, *out, "--out", "ls"]) == 0
    assert _inner_kind(files / "ls" / "adapter.json") == "probs"
    assert main(["apply", "ls/adapter.json", "probs.npz", "-o", "b.npz"]) == 0
