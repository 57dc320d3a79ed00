"""Label shift under hostile and careless input (issue #32): BBSE on a singular confusion
matrix, EM stopped by its budget, a target of fewer rows than classes (each warned, recorded
in the fitted state, said by ``caveats``), the module's NaN row, and tampered saved state
refused by the one loader."""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.calibrators import load
from calibkit.calibrators.priors.estimators import (
    adapt_priors,
    confusion_matrix,
    estimate_priors_bbse,
    estimate_priors_em,
    reweight,
)
from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
from calibkit.calibrators.priors.prior_diagnostics import bbse_conditioning
from calibkit.core.errors import (
    CalibkitWarning,
    ConvergenceWarning,
    InputError,
    SingularSystemWarning,
    SmallSampleWarning,
)
from tests.calibrators.problems import random_problem

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]


def always_class_0(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose argmax is class 0 on every row, and labels of every class."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    z[:, 0] += 10.0
    return z, rng.integers(0, k, n)


@contextlib.contextmanager
def no_warning() -> Iterator[None]:
    """A block in which any calibkit warning fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibkitWarning)
        yield


# ----- 1. BBSE on a singular confusion matrix ----------------------------------------------
def test_bbse_on_a_singular_confusion_matrix_keeps_the_source_priors_and_says_so() -> None:
    """A source model that always predicts class 0: the hard confusion matrix has rank 1,
    so C w = mu does not identify w. Today NNLS returned a vertex, priors (0, 0, 1), and an
    adapted NLL of hundreds; now the source priors are kept, with a warning, recorded."""
    z, y = always_class_0(600, 3, seed=0)
    zt, _ = always_class_0(300, 3, seed=1)
    adapter = PriorShiftAdapter(estimator="bbse", calibrator=None).fit(z, y)
    sigma, floor = bbse_conditioning(adapter.confusion_, adapter.n_source_)
    assert sigma < 1e-12
    assert sigma <= floor
    with pytest.warns(SingularSystemWarning, match="confusion matrix is singular"):
        adapter.adapt(zt)
    np.testing.assert_array_equal(adapter.target_priors_, adapter.source_priors_)
    assert adapter.identified_ is False
    assert adapter.converged_ is True
    (caveat,) = adapter.caveats()
    assert "source priors were kept" in caveat
    # adapted = unadapted: the NLL no worse than not adapting (it was 491 with the vertex)
    np.testing.assert_allclose(adapter.predict_proba(zt), adapter.source_proba(zt), atol=1e-15)
    with pytest.warns(SingularSystemWarning):
        pi = estimate_priors_bbse(adapter.confusion_, adapter.source_proba(zt))
    np.testing.assert_allclose(pi, adapter.source_priors_, atol=1e-15)


def test_bbse_on_a_matrix_singular_within_its_sampling_error() -> None:
    """Class 0 predicted for every row but one of class 1 and one of class 2 (600 rows):
    the matrix has full rank, but its smallest singular value (about 1/200 / sqrt 2) is
    below one column's sampling error, sqrt((1 - |M_1|^2) / n_1) ~ 0.007: not identified."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 600)
    z = np.tile([5.0, 0.0, 0.0], (600, 1))
    z[np.flatnonzero(y == 1)[0]] = [0.0, 5.0, 0.0]
    z[np.flatnonzero(y == 2)[0]] = [0.0, 0.0, 5.0]
    adapter = PriorShiftAdapter(estimator="bbse", calibrator=None).fit(z, y)
    sigma, floor = bbse_conditioning(adapter.confusion_, adapter.n_source_)
    assert 1e-4 < sigma < floor  # not singular in floating point
    assert bbse_conditioning(adapter.confusion_)[1] < 1e-12  # without the row count: rank only
    with pytest.warns(SingularSystemWarning, match="singular within its sampling error"):
        adapter.adapt(z[:100])
    assert adapter.identified_ is False


def test_a_well_conditioned_bbse_gives_no_warning() -> None:
    """Hand case of the docstring: C = [[.4, .1], [.1, .4]] from 20 rows; M = [[.8, .2],
    [.2, .8]] has singular values 1 and 0.6, far above the sampling floor sqrt(0.32 / 10)."""
    right, wrong = [0.9, 0.1], [0.3, 0.7]
    probs = np.array([right] * 8 + [wrong] * 2 + [right[::-1]] * 8 + [wrong[::-1]] * 2)
    c = confusion_matrix(probs, np.array([0] * 10 + [1] * 10))
    sigma, floor = bbse_conditioning(c, 20)
    assert sigma == pytest.approx(0.6, abs=1e-12)
    assert floor == pytest.approx(np.sqrt((1 - 0.68) / 10), abs=1e-12)
    target = np.array([[0.7, 0.3]] * 62 + [[0.1, 0.9]] * 38)
    with no_warning():
        pi = estimate_priors_bbse(c, target, n_source=20)
    np.testing.assert_allclose(pi, [0.7, 0.3], atol=1e-12)


# ----- 2. EM stopped by its iteration budget ------------------------------------------------
def test_em_at_max_iter_1_warns_and_records_that_it_did_not_converge() -> None:
    z, y = random_problem(600, 3, seed=3)
    zt, _ = random_problem(300, 3, seed=4)
    adapter = PriorShiftAdapter(estimator="em", calibrator=None, max_iter=1).fit(z, y)
    with pytest.warns(ConvergenceWarning, match="did not converge in max_iter=1 iteration"):
        adapter.adapt(zt)
    assert (adapter.converged_, adapter.n_iter_) == (False, 1)
    assert any("did not converge" in c for c in adapter.caveats())
    loaded = PriorShiftAdapter.from_json(adapter.to_json())
    assert (loaded.converged_, loaded.caveats()) == (False, adapter.caveats())
    full = PriorShiftAdapter(estimator="em", calibrator=None).fit(z, y)
    with no_warning():
        full.adapt(zt)
    assert full.converged_ is True
    assert full.n_iter_ > 1
    assert full.caveats() == []
    with pytest.warns(ConvergenceWarning):
        estimate_priors_em(adapter.source_proba(zt), adapter.source_priors_, max_iter=1)


# ----- 3. a target of fewer rows than classes ------------------------------------------------
@pytest.mark.parametrize("estimator", ["em", "bbse"])
def test_a_target_of_fewer_rows_than_classes_is_warned(estimator: str) -> None:
    """One target row: EM puts prior 1.0 on one class (from n rows the likelihood's maximum
    can have n non-zero priors); the estimate is returned, warned and recorded."""
    z, y = random_problem(900, 3, seed=5)
    adapter = PriorShiftAdapter(estimator=estimator, calibrator=None).fit(z, y)
    with pytest.warns(SmallSampleWarning, match="1 target row for 3 classes"):
        adapter.adapt(z[:1])
    assert adapter.n_target_ == 1
    assert any("too few to estimate 3 priors" in c for c in adapter.caveats())
    with no_warning():
        adapter.adapt(z[:3])  # as many rows as classes: no warning
    assert adapter.n_target_ == 3
    assert adapter.caveats() == []


# ----- 4. the module's NaN row ----------------------------------------------------------------
def test_the_module_gives_a_nan_row_for_a_nan_logit_as_every_module_does() -> None:
    """The README: a module gives a NaN row for a row with a NaN logit. It gave the target
    priors (the fallback of a row of zero mass). The numpy reweighting keeps NaN too, and
    ``predict_proba`` refuses the row."""
    z, y = random_problem(600, 3, seed=6)
    adapter = PriorShiftAdapter(calibrator="temperature").fit(z, y).adapt(z[:200])
    rows = z[:3].copy()
    rows[1, 0] = np.nan
    module = adapter.to_module()
    for m in (module, torch.jit.script(module)):
        got = m(torch.tensor(rows)).numpy()
        assert np.isnan(got[1]).all()
        np.testing.assert_allclose(
            got[[0, 2]], adapter.predict_proba(rows[[0, 2]]), rtol=1e-9, atol=1e-10
        )
    probs = np.array([[0.5, 0.5], [np.nan, 0.5], [0.0, 0.0]])
    q = reweight(probs, np.array([1.6, 0.4]), np.array([0.8, 0.2]))
    assert np.isnan(q[1]).all()
    np.testing.assert_allclose(q[[0, 2]], [[0.8, 0.2], [0.8, 0.2]], atol=1e-15)
    zero = adapter.to_module()(torch.tensor([[0.0, 0.0, 0.0]])).numpy()
    assert np.isfinite(zero).all()
    with pytest.raises(InputError, match="logits: expected finite values"):
        adapter.predict_proba(rows)
    with pytest.raises(InputError, match="finite"):
        adapt_priors(probs[:2], [0.5, 0.5], [0.8, 0.2])


# ----- 5. tampered saved state ----------------------------------------------------------------
@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    z, y = random_problem(800, 3, seed=7)
    adapter = PriorShiftAdapter(calibrator="temperature").fit(z, y).adapt(z[:300])
    path = tmp_path / "adapter.json"
    adapter.save(path)
    return path, json.loads(path.read_text())


def _refused(path: Path, doc: dict[str, object], field: str, message: str) -> None:
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        load(path)
    text = str(info.value)
    assert text.startswith(f"calibkit file {path}: state.{field}: expected"), text
    assert message in text, text


def test_a_source_prior_of_1e_300_is_refused(saved: tuple[Path, dict[str, object]]) -> None:
    """The issue's file (class 0's source prior set to 1e-300, class 1's raised to keep the
    sum at 1): NLL 0.23 -> 524 on loading. The source priors are the confusion matrix's
    column sums and counts of at least one of n_source_ rows; 1e-300 is neither."""
    path, doc = saved
    state = doc["state"]
    assert isinstance(state, dict)
    priors = state["source_priors_"]["__ndarray__"]
    priors[1] += priors[0] - 1e-300
    priors[0] = 1e-300
    _refused(path, doc, "source_priors_", "the column sums of state.confusion_")
    # the confusion matrix edited alike (column 0's mass moved to class 1's diagonal): the
    # counts still refuse it
    c = np.array(state["confusion_"]["__ndarray__"])
    col = c[:, 0].sum()
    c[:, 0] *= 1e-300 / col
    c[1, 1] += col - c[:, 0].sum()
    state["confusion_"]["__ndarray__"] = c.tolist()
    _refused(path, doc, "source_priors_", "class counts of at least 1 of state.n_source_")


@pytest.mark.parametrize("field", ["n_source_", "converged_", "identified_", "n_target_"])
def test_a_document_without_the_count_or_the_flags_is_refused(
    saved: tuple[Path, dict[str, object]], field: str
) -> None:
    """Issue #45, item 4: every fit records ``n_source_`` and every adapt its flags; a
    document without one (as before 0.1.0) is refused naming it, no longer loaded."""
    path, doc = saved
    state = doc["state"]
    assert isinstance(state, dict)
    del state[field]
    _refused(path, doc, field, "the field is missing")


def test_an_edited_soft_is_refused(saved: tuple[Path, dict[str, object]]) -> None:
    """``confusion_`` is hard or soft as ``soft`` was at fit: BBSE would read a hard
    matrix as a soft one."""
    path, doc = saved
    params = doc["params"]
    assert isinstance(params, dict)
    assert params["soft"] is False
    params["soft"] = True
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"params\.soft: expected False, the value the fit used"):
        load(path)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("converged_", False, "false for EM after params.max_iter"),
        ("identified_", False, "true for EM or given priors"),
        ("n_iter_", 10**6, "at most params.max_iter"),
        ("n_source_", 799, "class counts of at least 1"),
    ],
)
def test_flags_that_contradict_the_fit_are_refused(
    saved: tuple[Path, dict[str, object]], field: str, value: object, message: str
) -> None:
    path, doc = saved
    state = doc["state"]
    assert isinstance(state, dict)
    state[field] = value
    _refused(path, doc, "source_priors_" if field == "n_source_" else field, message)


def test_a_bbse_flag_hiding_a_singular_matrix_is_refused(tmp_path: Path) -> None:
    z, y = always_class_0(600, 3, seed=0)
    adapter = PriorShiftAdapter(estimator="bbse", calibrator=None).fit(z, y)
    with pytest.warns(SingularSystemWarning):
        adapter.adapt(z[:100])
    path = tmp_path / "bbse.json"
    adapter.save(path)
    assert load(path).identified_ is False  # as saved: loads
    doc = json.loads(path.read_text())
    doc["state"]["identified_"] = True
    _refused(path, doc, "identified_", "false, as state.confusion_ says")
    doc["state"]["identified_"] = False
    doc["state"]["target_priors_"]["__ndarray__"] = [1.0, 0.0, 0.0]
    _refused(path, doc, "target_priors_", "the source priors, kept when")
