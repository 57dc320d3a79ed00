"""A linear map of the raw logits records the kind of input it was fitted on (issue #42).

Vector and matrix scaling and MS-ODIR map ``W z + b``: a constant added to a row of logits
changes their output unless ``W``'s rows sum alike, so the logits and the log-probabilities
of one model gave other numbers (on 300 rows of 3 classes: up to 0.16 for vector scaling
and 0.17 for matrix scaling fitted on logits, 0.41 and 0.19 fitted on probabilities) with
no word. The fit now records its input (``input_kind_``, from the rows themselves: every
row's logsumexp 0 is log-probabilities, as the command line passes a probability file):
fitted on probabilities, the map takes logits through their log-softmax (the same numbers);
fitted on logits, it refuses log-probabilities. Maps that ignore the constant (temperature
scaling, Dirichlet calibration on the log-softmax, ...) record nothing and take both.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.calibrators import CALIBRATORS, create_calibrator
from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.fitted import NORMALIZED_TOL, input_kind, load_document
from calibkit.cli import main
from calibkit.core.errors import InputError
from calibkit.core.outputs import log_softmax64
from tests.calibrators import kinds
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")

#: The maps of raw logits, each as published (no shrinkage towards temperature scaling).
LINEAR = {"vector": {"shrink": "none"}, "matrix": {"shrink": "none"}, "ms_odir": {}}


def _problem() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z, y = random_problem(300, 3, seed=0, temperature=1.5, scale=2.5)
    test, _ = random_problem(300, 3, seed=1, temperature=1.5, scale=2.5)
    return z, y, test


def _probs32(z: np.ndarray) -> np.ndarray:
    """The probabilities of logits ``z`` as a file of float32 probabilities holds them."""
    return np.exp(log_softmax64(z)).astype(np.float32)


@functools.cache
def _fitted(name: str, on: str) -> Calibrator:
    z, y, _ = _problem()
    inputs = z if on == "logits" else np.log(_probs32(z).astype(np.float64))
    cal: Calibrator = create_calibrator(name, **LINEAR[name]).fit(inputs, y)
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


def test_the_input_kind_is_read_from_the_rows() -> None:
    z, _, _ = _problem()
    assert input_kind(z) == "logits"
    assert input_kind(log_softmax64(z)) == "probs"
    assert input_kind(np.log(_probs32(z).astype(np.float64))) == "probs"
    # probabilities summing to 1 - 1e-4, the least the command line accepts
    low = np.exp(log_softmax64(z)) * (1 - 1e-4)
    assert input_kind(np.log(low)) == "probs"
    assert input_kind(log_softmax64(z) + 2 * NORMALIZED_TOL) == "logits"


@pytest.mark.parametrize("name", LINEAR)
def test_fitted_on_logits_log_probabilities_are_refused(name: str) -> None:
    cal = _fitted(name, "logits")
    assert cal.input_kind_ == "logits"  # type: ignore[attr-defined]
    _, _, test = _problem()
    log_p = np.log(_probs32(test).astype(np.float64))
    with pytest.raises(InputError) as info:
        cal.predict_proba(log_p)
    assert str(info.value).startswith(
        f"logits: expected the model's logits, which this {name!r} was fitted on "
        "(state.input_kind_)"
    )
    with pytest.raises(InputError, match=r"state\.input_kind_"):
        cal.transform(log_p)
    # as before, the logits themselves; and what the log-probabilities gave before
    before = create_calibrator(name, **LINEAR[name])
    before.__dict__.update({**cal.fitted_state(), "input_kind_": "unknown"})  # not recorded
    gap = np.abs(before.predict_proba(log_p) - cal.predict_proba(test)).max()
    assert gap > 0.04, gap


@pytest.mark.parametrize("name", LINEAR)
def test_fitted_on_probabilities_logits_give_the_same_numbers(name: str) -> None:
    cal = _fitted(name, "probs")
    assert cal.input_kind_ == "probs"  # type: ignore[attr-defined]
    _, _, test = _problem()
    log_p = np.log(_probs32(test).astype(np.float64))
    on_probs, on_logits = cal.predict_proba(log_p), cal.predict_proba(test)
    np.testing.assert_allclose(on_logits, on_probs, rtol=0, atol=1e-6)  # float32 probabilities
    # on the probabilities, exactly what the map gave before (rows left as they are)
    before = create_calibrator(name, **LINEAR[name])
    before.__dict__.update({**cal.fitted_state(), "input_kind_": "unknown"})
    np.testing.assert_array_equal(before.predict_proba(log_p), on_probs)
    assert np.abs(before.predict_proba(test) - on_probs).max() > 0.04  # the old mix-up
    np.testing.assert_allclose(cal.transform(test), cal.transform(log_p), atol=1e-5)


@pytest.mark.parametrize("name", LINEAR)
def test_the_module_and_the_file_keep_the_input_kind(name: str) -> None:
    cal = _fitted(name, "probs")
    _, _, test = _problem()
    log_p = np.log(_probs32(test).astype(np.float64))
    back = load_document(json.loads(json.dumps(cal.to_json())))
    assert back.input_kind_ == "probs"  # type: ignore[attr-defined]
    np.testing.assert_array_equal(back.predict_proba(test), cal.predict_proba(test))
    module = cal.to_module()
    scripted = torch.jit.script(module)
    for x in (test, log_p):
        expected = cal.predict_proba(x)
        for m in (module, scripted):
            got = m(torch.tensor(x)).numpy()
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_a_file_whose_input_kind_was_edited_is_refused(tmp_path: Path) -> None:
    doc = _fitted("vector", "logits").to_json()
    doc["state"]["input_kind_"] = "log-probabilities"
    with pytest.raises(
        InputError, match=r"state\.input_kind_: expected one of logits, probs, unknown"
    ):
        load_document(doc)


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
    return tmp_path


def test_calibkit_apply_refuses_probabilities_for_a_map_fitted_on_logits(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fit", "--method", "matrix", "--param", "shrink=none", "fit_logits.npz"]) == 0
    assert main(["apply", "calibrator.json", "logits.npz", "-o", "a.npz"]) == 0
    capsys.readouterr()
    assert main(["apply", "calibrator.json", "probs.npz", "-o", "b.npz"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err.startswith("calibkit: error: logits: expected the model's logits, which this"), err
    assert not (files / "b.npz").exists()


def test_calibkit_apply_maps_logits_as_probabilities_for_a_map_fitted_on_them(
    files: Path,
) -> None:
    assert main(["fit", "--method", "matrix", "--param", "shrink=none", "fit_probs.npz"]) == 0
    assert json.loads((files / "calibrator.json").read_text())["state"]["input_kind_"] == "probs"
    assert main(["apply", "calibrator.json", "probs.npz", "-o", "a.npz"]) == 0
    assert main(["apply", "calibrator.json", "logits.npz", "-o", "b.npz"]) == 0
    a, b = np.load(files / "a.npz")["probs"], np.load(files / "b.npz")["probs"]
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-6)


def test_auto_choosing_such_a_map_keeps_its_input_kind() -> None:
    """``auto``'s module is its choice's: fitted on probabilities, the log-softmax first."""
    z, y, test = _problem()
    log_p = np.log(_probs32(z).astype(np.float64))
    auto = create_calibrator("auto", methods=["matrix"], n_folds=2).fit(log_p, y)
    assert auto.chosen.input_kind_ == "probs"  # type: ignore[attr-defined]
    module = auto.to_module()
    for x in (test, np.log(_probs32(test).astype(np.float64))):
        expected = auto.predict_proba(x)
        np.testing.assert_allclose(module(torch.tensor(x)).numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(auto.predict_proba(test), expected, atol=1e-6)
