"""Every registered fitted object is a scikit-learn estimator: clone, get/set_params, tags,
scikit-learn's NotFittedError, sample weights, and scikit-learn's own estimator checks.

The estimator checks feed generic data: ``X`` with any number of columns and ``y`` with
any labels. A calibrator's ``X`` is one logit per class and its ``y`` labels in
``[0, n_columns)``, so some checks cannot apply; each one skipped (an expected failure)
says why in :data:`SKIPPED`. They run on the calibrators (kinds ``logits`` and
``groups``) and on conformal predictors (``sets``: ``predict_proba`` is the calibrator's),
not on prior adapters (``priors``: ``predict_proba`` needs ``adapt(target_logits)`` after
``fit``, which the checks cannot call) nor on Neural Clamping (``model``: its ``X`` is
the model's inputs; test_base.py). Clone and sample weights are checked on every kind but
``model`` (``tests/calibrators/kinds.py``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import check_estimator

from calibkit.calibrators import CALIBRATORS, Calibrator, create_calibrator
from calibkit.calibrators.fitted import PostHoc
from calibkit.core.errors import CalibkitError, InputError, NotFittedError
from tests.calibrators import kinds

#: Every kind whose rows are logits (module docstring).
NAMES = kinds.NAMES
#: Those scikit-learn's estimator checks run on (module docstring).
CHECKED = CALIBRATORS.names(kind=("logits", "groups", "sets"))
#: Settings for the checks' 20-100 rows besides :data:`kinds.SMALL`: a conformal quantile
#: needs 9 rows at alpha = 0.1, more than some checks give (full sets are allowed then).
CHECK_SETTINGS: dict[str, dict[str, object]] = {"conformal": {"allow_full_sets": True}}

_FEW_COLUMNS = "its X has fewer columns than y has classes (a calibrator needs a logit per class)"
_WORDING = "checks the wording of an error; calibkit's InputError names the argument instead"
#: Checks that cannot apply to a calibrator of logits, with the reason.
SKIPPED: dict[str, str] = {
    "check_fit_score_takes_y": "fit's arguments are named logits and labels, what they are",
    "check_sample_weight_equivalence_on_dense_data": (
        "calls fit(X=..., y=...) by keyword; weights = repetitions is tested below instead"
    ),
    "check_estimators_overwrite_params": _FEW_COLUMNS,
    "check_estimators_fit_returns_self": _FEW_COLUMNS,
    "check_readonly_memmap_input": _FEW_COLUMNS,
    "check_sample_weights_not_an_array": _FEW_COLUMNS,
    "check_sample_weights_shape": _FEW_COLUMNS,
    "check_sample_weights_not_overwritten": _FEW_COLUMNS,
    "check_sample_weights_pandas_series": _FEW_COLUMNS,
    "check_n_features_in_after_fitting": _WORDING,
    "check_complex_data": _WORDING,
    "check_estimators_empty_data_messages": _WORDING,
    "check_fit2d_1feature": _WORDING + " (one column is not a classifier's output)",
    "check_fit2d_1sample": _WORDING + " (one sample has one label)",
    "check_requires_y_none": _WORDING,
    "check_fit2d_predict1d": "1-D logits are a binary problem's scores, not one sample",
    "check_dtype_object": "object arrays are refused: logits are numbers",
    "check_estimator_sparse_tag": "logits are dense arrays",
    "check_estimator_sparse_array": "logits are dense arrays",
    "check_estimator_sparse_matrix": "logits are dense arrays",
}
_BINARY = "a binary-only method: needs exactly 2 columns of logits, the check's X has more"
_ABSENT = (
    "the check's y lacks some of X's columns (classes): the method fits each class from its"
    " own rows and refuses such a set (tests/calibrators/test_absent_class.py)"
)
_NO_WEIGHTS = "the method cannot weight samples: sample_weight is refused with an InputError"


def _expected_failures(cal: PostHoc) -> dict[str, str]:
    skipped = dict(SKIPPED)
    if not callable(getattr(cal, "score", None)) and hasattr(cal, "score"):
        skipped["check_pipeline_consistency"] = (
            "the parameter score (the conformity score) hides scikit-learn's score(X, y)"
        )
    if cal.param_constraints:
        skipped["check_do_not_raise_errors_in_init_or_set_params"] = (
            "calibkit checks parameters where they are given (constructor and set_params)"
        )
    if cal.maps_logits:  # the transformer checks run
        for check in ("check_transformer_general", "check_transformer_data_not_an_array"):
            skipped[check] = "calls fit_transform(X, y=...) by keyword (see fit's names)"
    if "max_iter" in cal.param_constraints:
        skipped["check_transformer_n_iter"] = "the fitted state is the map only (no n_iter_)"
    if not cal.accepts_sample_weight:
        for check in ("check_sample_weights_list", "check_all_zero_sample_weights_error"):
            skipped[check] = _NO_WEIGHTS
    if cal.needs_every_class:
        for check in (
            "check_estimators_dtypes",
            "check_estimators_nan_inf",
            "check_estimators_pickle",
            "check_pipeline_consistency",
            "check_positive_only_tag_during_fit",
            *(("check_transformer_preserve_dtypes",) if cal.maps_logits else ()),
        ):
            skipped[check] = _ABSENT
    if cal.binary_only:
        for check in (
            "check_sample_weights_list",
            "check_dont_overwrite_parameters",
            "check_positive_only_tag_during_fit",
            "check_estimators_dtypes",
            "check_pipeline_consistency",
            "check_estimators_nan_inf",
            "check_estimators_pickle",
            "check_f_contiguous_array_estimator",
            "check_methods_sample_order_invariance",
            "check_methods_subset_invariance",
            "check_dict_unchanged",
            "check_all_zero_sample_weights_error",
        ):
            skipped[check] = _BINARY
    return skipped


def _small(name: str) -> PostHoc:
    return kinds.new(name)


@pytest.mark.parametrize("name", CHECKED)
def test_sklearn_estimator_checks(name: str) -> None:
    """Every check passes except the expected failures, and those do fail (so none is
    skipped without need). One ``check_estimator`` run per calibrator: as fast as the checks
    themselves (pytest's xfail tracebacks would take ten times longer)."""
    cal = kinds.new(name, **CHECK_SETTINGS.get(name, {}))
    expected = _expected_failures(cal)
    with warnings.catch_warnings():  # the checks' notes (array API skipped, set_params refused)
        warnings.simplefilter("ignore")
        results = check_estimator(cal, expected_failed_checks=expected, on_fail=None)
    failed = {r["check_name"]: r["exception"] for r in results if r["status"] == "failed"}
    assert failed == {}
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    xpassed = {r["check_name"] for r in results if r["status"] == "passed"} & set(expected)
    assert xpassed == set(), "expected failures that pass: drop them from the list"
    assert xfailed == set(expected)


def _data(name: str, n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    k = 2 if CALIBRATORS.get(name).binary_only else 3
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2.0
    y = np.argmax(z / 1.5 + rng.gumbel(size=z.shape), axis=1)
    return z, y


@pytest.mark.parametrize("name", NAMES)
def test_clone_gives_an_unfitted_equal_copy(name: str) -> None:
    cal = kinds.fit(_small(name), name)
    copy = clone(cal)
    assert type(copy) is type(cal)
    assert not copy.is_fitted
    assert copy.get_params(deep=True) == cal.get_params(deep=False)


def test_set_params_checks_through_the_declaration_and_is_all_or_nothing() -> None:
    ts = create_calibrator("temperature")
    assert ts.set_params(t_max=20.0) is ts
    assert ts.t_max == 20.0
    with pytest.raises(InputError, match="t_min"):
        ts.set_params(t_min=-1.0)
    with pytest.raises(InputError, match="t_max"):  # a relation between parameters
        ts.set_params(t_min=1.0, t_max=0.5)
    assert ts.get_params() == {"t_min": 0.1, "t_max": 20.0}
    with pytest.raises(InputError, match="bins"):
        create_calibrator("histogram").set_params(bins=3)


def test_not_fitted_error_is_sklearns_and_calibkits() -> None:
    assert issubclass(NotFittedError, SklearnNotFittedError)
    assert issubclass(NotFittedError, CalibkitError)
    assert issubclass(NotFittedError, RuntimeError)
    with pytest.raises(SklearnNotFittedError):
        create_calibrator("temperature").predict_proba(np.zeros((2, 3)))
    assert not hasattr(create_calibrator("temperature"), "n_features_in_")


def test_grid_search_and_cross_val_score_run() -> None:
    z, y = _data("histogram", n=600)

    def neg_nll(est: Calibrator, x: np.ndarray, labels: np.ndarray) -> float:
        p = est.predict_proba(x)
        return float(np.log(p[np.arange(labels.shape[0]), labels] + 1e-12).mean())

    scores = cross_val_score(create_calibrator("temperature"), z, y, cv=3, scoring=neg_nll)
    assert scores.shape == (3,)
    search = GridSearchCV(create_calibrator("histogram"), {"n_bins": [2, 5]}, cv=3, scoring=neg_nll)
    assert search.fit(z, y).best_params_["n_bins"] in (2, 5)


def test_transform_is_missing_where_the_output_is_probabilities() -> None:
    assert hasattr(create_calibrator("temperature"), "transform")
    assert not hasattr(create_calibrator("histogram"), "transform")
    with pytest.raises(InputError, match="predict_proba"):
        create_calibrator("isotonic").transform  # noqa: B018
    z, y = _data("temperature")
    ts = create_calibrator("temperature")
    np.testing.assert_array_equal(ts.fit_transform(z, y), ts.transform(z))


def test_fit_transform_takes_what_fit_takes() -> None:
    z, y = _data("temperature")
    ts = create_calibrator("temperature")
    out = ts.fit_transform(z, y, np.ones(len(y)), input_kind="probs")
    np.testing.assert_array_equal(out, ts.transform(z))
    with pytest.raises(InputError, match="groups"):  # fit's refusal, naming the input
        ts.fit_transform(z, y, groups=["a"] * len(y))


WEIGHTED = [name for name in NAMES if CALIBRATORS.get(name).accepts_sample_weight]


def test_the_weighted_methods() -> None:
    # scaling-binning splits the rows, spline calibration places them by rank, Venn-Abers
    # adds a point of weight one and centred isotonic regression's floor counts rows:
    # weights cannot mean both repeated rows and relative importance there
    new = {"scaling_binning", "spline", "venn_abers", "isotonic_centred"}
    # the group-aware calibrators take each row's group, not weights (yet)
    unweighted = {"temperature_ece", "auto", "temperature_groupwise", "multicalibration", *new}
    # conformal ranks and prior frequencies count rows
    unweighted |= {"conformal", "prior_shift"}
    assert set(NAMES) - set(WEIGHTED) == unweighted


@pytest.mark.parametrize("name", WEIGHTED)
def test_integer_weights_equal_repeated_rows(name: str) -> None:
    z, y = _data(name, n=200)
    w = np.random.default_rng(1).integers(0, 4, size=y.shape[0])
    # a given ODIR weight, scale or shrinkage: repeated rows would change the CV folds
    params = {"reg_lambda": 0.1} if name in ("ms_odir", "dirichlet") else {}
    params = {"scale_grid": [1.0]} if name == "sms_cv" else params
    params = {"shrink_grid": [1.0]} if name in ("vector", "matrix") else params
    weighted = create_calibrator(name, **params).fit(z, y, sample_weight=w)
    repeated = create_calibrator(name, **params).fit(np.repeat(z, w, axis=0), np.repeat(y, w))
    test, _ = _data(name, n=100, seed=2)
    np.testing.assert_allclose(
        weighted.predict_proba(test), repeated.predict_proba(test), rtol=0, atol=1e-6
    )


#: Methods whose smoothing or penalty depends on the number of rows n (the total weight).
BY_SIZE = (
    "temperature_smoothed",
    "svs",
    "sms",
    "sms_cv",
    "histogram",
    "histogram_classwise",
    "isotonic",
)


@pytest.mark.parametrize("name", WEIGHTED)
def test_unit_weights_change_nothing(name: str) -> None:
    z, y = _data(name, n=200)
    plain = _small(name).fit(z, y)
    if name in BY_SIZE:  # equal weights of 3 are the rows three times over: n triples
        plain = _small(name).fit(np.repeat(z, 3, axis=0), np.repeat(y, 3))
    ones = _small(name).fit(z, y, sample_weight=np.full(y.shape[0], 3.0))
    np.testing.assert_allclose(plain.predict_proba(z), ones.predict_proba(z), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name", sorted(set(NAMES) - set(WEIGHTED)))
def test_methods_that_cannot_weight_refuse_weights(name: str) -> None:
    z, y = _data(name)
    with pytest.raises(InputError, match="sample_weight"):
        _small(name).fit(z, y, sample_weight=np.ones(y.shape[0]))


@pytest.mark.parametrize(
    ("weights", "got"),
    [(np.ones(5), "shape"), (-np.ones(300), "negative"), (np.zeros(300), "all zero")],
)
def test_bad_weights_are_refused_by_name(weights: np.ndarray, got: str) -> None:
    z, y = _data("temperature")
    with pytest.raises(InputError, match=f"sample_weight.*{got}"):
        create_calibrator("temperature").fit(z, y, sample_weight=weights)


@pytest.mark.parametrize("name", WEIGHTED)
def test_a_weighted_fit_saves_and_loads(name: str, tmp_path: Path) -> None:
    z, y = _data(name)
    w = np.random.default_rng(3).random(y.shape[0])
    cal = _small(name).fit(z, y, sample_weight=w)
    cal.save(tmp_path / "cal.json")
    back = Calibrator.load(tmp_path / "cal.json")
    np.testing.assert_array_equal(back.predict_proba(z), cal.predict_proba(z))
