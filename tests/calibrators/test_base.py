"""The contract every registered calibrator follows (see calibkit.calibrators.base).

Parametrised over the registry's calibrators (``CALIBRATORS.names(kind=...)``: the kinds
``logits``, ``groups`` and ``model``) at collection time, so a newly registered method is
checked without editing this file; what every kind shares, conformal sets and prior
adapters included, is checked in ``test_contract.py``. Binary-only methods get two-class
data. A calibrator that takes the model (``needs_model``: Neural Clamping) follows the same
contract on the model's inputs: it is built as ``create_calibrator(name, model=model,
**params)`` (``model`` first in its signature, not among ``param_constraints``), fitted by
``fit(inputs, labels)``, predicts ``predict_proba(inputs)``, names ``inputs`` where the
others name ``logits``, and is read back by ``type(cal).load(path, model)`` from a JSON
sidecar (and a tensor file).
"""

from __future__ import annotations

import functools
import inspect
import json
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.calibrators import CALIBRATORS, Calibrator, create_calibrator
from calibkit.core.errors import InputError, NotFittedError
from calibkit.metrics import nll
from tests.calibrators.model.clamping.problems import SHAPE, linear_model
from tests.calibrators.problems import random_problem

#: The calibrators: probabilities from logits (with groups, or from the model's inputs).
CALIBRATOR_KINDS = ("logits", "groups", "model")
NAMES = CALIBRATORS.names(kind=CALIBRATOR_KINDS)
#: A quick fit of a calibrator that takes the model (the tests read its contract, not its
#: quality): two epochs, no progress line.
QUICK = {"epochs": 2, "progress": False}


def _takes_model(name: str) -> bool:
    return CALIBRATORS.get(name).needs_model


@functools.cache
def _model() -> torch.nn.Module:
    return linear_model(4)


def _new(name: str, **params: object) -> Calibrator:
    """``create_calibrator(name, **params)``, given the model if it takes one."""
    model = _model() if _takes_model(name) else None
    return create_calibrator(name, model=model, **params)


def _load(cal: Calibrator, path: Path) -> Calibrator:
    return type(cal).load(path, _model()) if cal.needs_model else Calibrator.load(path)  # type: ignore[call-arg]


def _argument(name: str) -> str:
    """The name of the data argument: the model's inputs or logits."""
    return "inputs" if _takes_model(name) else "logits"


def _data(name: str, n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Logits (float64) and labels drawn from softmax(logits / 1.5); 2 classes if binary-only.
    For a calibrator that takes the model: its float32 inputs, labels drawn likewise."""
    if _takes_model(name):
        x = np.random.default_rng(seed).standard_normal((n, *SHAPE)).astype(np.float32)
        with torch.no_grad():
            z = _model()(torch.from_numpy(x)).double().numpy()
        p = np.exp(z / 1.5 - (z / 1.5).max(axis=1, keepdims=True))
        u = np.random.default_rng(seed + 1).random(n)[:, None]
        y = (np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1) < u).sum(axis=1)
        y = np.minimum(y, 3)
        y[:4] = np.arange(4)
        return x, y
    k = 2 if CALIBRATORS.get(name).binary_only else 4
    z, y = random_problem(n, k, seed=seed, temperature=1.5, scale=2.5)
    y[:k] = np.arange(k)  # every class present
    return z, y


@functools.cache
def _fitted(name: str) -> tuple[Calibrator, np.ndarray]:
    """A calibrator fitted on ``_data(name)`` (cached: the tests only read it) and its data."""
    z, y = _data(name)
    return _new(name, **(QUICK if _takes_model(name) else {})).fit(z, y), z


def test_something_is_registered() -> None:
    assert {"temperature", "temperature_ece"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_unfitted_use_raises_not_fitted(name: str, tmp_path: Path) -> None:
    cal = _new(name)
    z, _ = _data(name)
    assert not cal.is_fitted
    with pytest.raises(NotFittedError):
        cal.predict_proba(z)
    with pytest.raises(NotFittedError):
        cal.save(tmp_path / "cal.json")
    if cal.maps_logits:
        with pytest.raises(NotFittedError):
            cal.transform(z)


@pytest.mark.parametrize("name", NAMES)
def test_fit_returns_self(name: str) -> None:
    cal = _new(name, **(QUICK if _takes_model(name) else {}))
    z, y = _data(name)
    assert cal.fit(z, y) is cal
    assert cal.is_fitted
    assert cal.name == name


@pytest.mark.parametrize("name", NAMES)
def test_predict_proba_is_a_distribution(name: str) -> None:
    cal, z = _fitted(name)
    test, _ = _data(name, n=300, seed=1)
    for logits in (z, test, test * 40.0):
        p = cal.predict_proba(logits)
        assert p.dtype == np.float64
        assert p.shape == (logits.shape[0], 4 if _takes_model(name) else logits.shape[1])
        assert np.all(np.isfinite(p))
        assert p.min() >= 0.0
        np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_transform_agrees_with_predict_proba(name: str) -> None:
    cal, z = _fitted(name)
    if not cal.maps_logits:
        with pytest.raises(InputError):
            cal.transform(z)
        return
    out = cal.transform(z)
    p = np.exp(out - out.max(axis=1, keepdims=True))
    np.testing.assert_allclose(p / p.sum(axis=1, keepdims=True), cal.predict_proba(z), atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_torch_and_float32_inputs(name: str) -> None:
    cal, z = _fitted(name)
    z32 = z.astype(np.float32)
    np.testing.assert_array_equal(cal.predict_proba(torch.from_numpy(z32)), cal.predict_proba(z32))


@pytest.mark.parametrize("name", NAMES)
def test_save_load_round_trip_is_bit_identical(name: str, tmp_path: Path) -> None:
    cal, z = _fitted(name)
    test, _ = _data(name, n=300, seed=2)
    path = tmp_path / "cal.json"
    cal.save(path)
    loaded = _load(cal, path)
    assert type(loaded) is type(cal)
    assert loaded.get_params() == cal.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(test), cal.predict_proba(test))
    np.testing.assert_array_equal(loaded.predict_proba(z), cal.predict_proba(z))


@pytest.mark.parametrize("name", NAMES)
def test_fitted_state_keys_end_in_underscore(name: str) -> None:
    cal, _ = _fitted(name)
    state = cal.fitted_state()
    assert state
    assert all(key.endswith("_") for key in state)
    assert "n_classes_" in state


@pytest.mark.parametrize("name", NAMES)
def test_wrong_column_count_at_predict(name: str) -> None:
    cal, z = _fitted(name)
    wider = np.concatenate([z, z[:, :1]], axis=1)
    with pytest.raises(InputError) as info:
        cal.predict_proba(wider)
    assert info.value.argument == _argument(name)
    if z.shape[1] > 2:
        with pytest.raises(InputError):
            cal.predict_proba(z[:, :-1])


@pytest.mark.parametrize("name", NAMES)
def test_single_label_calibration_set(name: str) -> None:
    z, _ = _data(name)
    with pytest.raises(InputError) as info:
        _new(name).fit(z, np.ones(z.shape[0], dtype=np.int64))
    assert info.value.argument == "labels"


@pytest.mark.parametrize("name", NAMES)
def test_saved_file_is_plain_json_not_a_pickle(name: str, tmp_path: Path) -> None:
    cal, _ = _fitted(name)
    path = tmp_path / "cal.json"
    cal.save(path)
    raw = path.read_bytes()
    assert not raw.startswith(b"\x80")  # pickle protocol 2+ header
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(raw)
    data = json.loads(raw.decode("utf-8"))
    if not _takes_model(name):  # Neural Clamping's document: tests/calibrators/model/clamping
        assert list(data) == ["calibkit", "kind", "method", "params", "state"]
        assert (data["calibkit"], data["kind"], data["method"]) == (3, cal.kind, name)


def _newer(text: str) -> str:
    """The document with a format version calibkit does not know."""
    newer = re.sub(r'"(calibkit\w*)": \d+', r'"\1": 99', text, count=1)
    assert newer != text
    return newer


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "corrupt",
    [
        lambda text: text[: len(text) // 2],  # truncated
        lambda text: "",  # empty
        lambda text: text.replace("{", "[", 1),  # not JSON any more
        lambda text: json.dumps([1, 2, 3]),  # JSON, but not a calibrator
        _newer,
    ],
    ids=["truncated", "empty", "garbled", "not-a-calibrator", "wrong-version"],
)
def test_corrupt_file_raises_input_error(name: str, corrupt, tmp_path: Path) -> None:
    cal, _ = _fitted(name)
    path = tmp_path / "cal.json"
    cal.save(path)
    path.write_text(corrupt(path.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(InputError):
        _load(cal, path)


def test_missing_file_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        Calibrator.load(tmp_path / "absent.json")


def test_non_utf8_file_raises_input_error(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    path.write_bytes(pickle.dumps({"method": "temperature"}))
    with pytest.raises(InputError):
        Calibrator.load(path)


#: Methods that minimise the calibration-set NLL (plus a penalty that is zero at the
#: identity), so their fit can never end above the identity's NLL.
NLL_METHODS = ["temperature", "vector", "matrix", "ms_odir", "dirichlet", "platt", "beta"]


@pytest.mark.parametrize("name", NLL_METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_nll_methods_never_end_above_the_identity(name: str, seed: int) -> None:
    assert name in NAMES
    z, y = _data(name, seed=seed)
    before = nll(y, logits=z)
    after = nll(y, probs=create_calibrator(name).fit(z, y).predict_proba(z))
    assert after <= before * (1 + 1e-9)


# ----- declared parameters ------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_get_params_returns_exactly_the_declared_parameters(name: str) -> None:
    klass = CALIBRATORS.get(name)
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    signature = inspect.signature(klass).parameters.values()
    declared = list(klass.param_constraints)
    model = ["model"] if klass.needs_model else []  # given first, and not saved
    assert [p.name for p in signature if p.kind in named and p.name != "self"] == [
        *model,
        *declared,
    ]
    params = (klass(_model()) if klass.needs_model else klass()).get_params()
    assert list(params) == declared
    for key, value in params.items():  # the defaults pass their own checks unchanged
        assert klass.param_constraints[key].check(key, value) == value
    assert list(_new(name, **params).get_params()) == declared


@pytest.mark.parametrize(
    ("name", "param"),
    [(name, param) for name in NAMES for param in CALIBRATORS.get(name).param_constraints],
)
def test_every_declared_constraint_refuses_a_bad_value_by_name(name: str, param: str) -> None:
    expected = CALIBRATORS.get(name).param_constraints[param].describe()
    with pytest.raises(InputError, match=rf"^{param}: expected {re.escape(expected)}, got"):
        _new(name, **{param: "nope"})


@pytest.mark.parametrize("name", NAMES)
def test_an_undeclared_parameter_is_refused(name: str) -> None:
    with pytest.raises(InputError, match=rf"^{name}: expected (parameters among|no param)"):
        _new(name, not_a_parameter=1)


def test_numpy_scalars_are_accepted_and_stored_as_python_numbers() -> None:
    cal = create_calibrator("temperature_ece", t_min=np.float32(0.5), n_bins=np.int64(10))
    assert cal.get_params() == {"t_min": 0.5, "t_max": 5.0, "t_step": 0.001, "n_bins": 10}
    assert type(cal.n_bins) is int  # type: ignore[attr-defined]
    expected = r"^n_bins: expected an integer in \[1, 100000\], got True"
    with pytest.raises(InputError, match=expected):
        create_calibrator("histogram", n_bins=True)


def test_shared_docstring_paragraphs_follow_the_class() -> None:
    """``{fit_example}`` takes the class's name; ``{refuses_absent_class}`` needs the flag."""

    class Refusing(Calibrator):
        """Refuses.

        {refuses_absent_class}

        Examples
        --------
        {fit_example}
        """

        needs_every_class = True

        def _fit(self, out: object, weights: object = None) -> None: ...

    doc = Refusing.__doc__ or ""
    assert "calibrator = Refusing().fit(z, y)" in doc
    assert "A calibration set without some class is refused" in doc
    with pytest.raises(TypeError, match="needs_every_class"):

        class Keeping(Calibrator):
            """Keeps.

            {refuses_absent_class}
            """

            def _fit(self, out: object, weights: object = None) -> None: ...
