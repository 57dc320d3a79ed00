"""Validation of classifier outputs (calibkit.core.outputs): every bad input, every input type."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.core.outputs import (
    PROBS_ATOL,
    ClassifierOutputs,
    as_outputs,
    check_labels,
    check_scores,
    log_softmax64,
    top_label_from_logits,
)

P2 = [[0.8, 0.2], [0.3, 0.7], [0.5, 0.5]]


def raises(message: str) -> pytest.RaisesExc[InputError]:
    """Expect an InputError whose message is exactly ``message``."""
    return pytest.raises(InputError, match=r"^" + re.escape(message) + "$")


# --- scores -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores(bad: float) -> None:
    probs = np.array(P2)
    probs[1, 0] = bad
    with raises("probs: expected finite values, got 1 NaN or infinite entries"):
        as_outputs([0, 1, 0], probs=probs)
    logits = np.zeros((3, 2))
    logits[:, 1] = bad
    with raises("logits: expected finite values, got 3 NaN or infinite entries"):
        as_outputs([0, 1, 0], logits=logits)


@pytest.mark.parametrize(
    ("scores", "shape"), [(np.zeros((2, 2, 2)), "(2, 2, 2)"), (np.float64(0.5), "()")]
)
def test_wrong_ndim(scores: np.ndarray, shape: str) -> None:
    with raises(
        "logits: expected a 2-D array (samples x classes) or a 1-D binary score, "
        f"got an array of shape {shape} and dtype float64"
    ):
        check_scores(scores, "logits")


@pytest.mark.parametrize("scores", [np.zeros((0, 3)), np.zeros(0), []])
def test_empty_scores(scores: object) -> None:
    with raises("logits: expected at least one sample, got an empty array"):
        as_outputs([], logits=scores)


def test_one_column() -> None:
    with raises(
        "probs: expected at least 2 classes (columns), "
        "got an array of shape (2, 1) and dtype float64"
    ):
        as_outputs([0, 0], probs=[[1.0], [1.0]])


@pytest.mark.parametrize(
    ("scores", "got"),
    [(np.array(["a", "b"]), "dtype <U1"), (np.array([[True, False]]), "dtype bool")],
)
def test_non_float_scores(scores: np.ndarray, got: str) -> None:
    with pytest.raises(InputError, match=re.escape(got)):
        check_scores(scores, "probs")


def test_ragged_scores() -> None:
    with pytest.raises(InputError, match=r"^probs: expected a"):
        as_outputs([0, 1], probs=[[0.5, 0.5], [1.0]])


def test_unknown_kind() -> None:
    with raises("kind: expected 'probs' or 'logits', got 'scores'"):
        check_scores(P2, "scores")  # type: ignore[arg-type]


def test_negative_probability() -> None:
    with raises("probs: expected non-negative probabilities, got a minimum of -0.1"):
        as_outputs([0, 1], probs=[[1.1, -0.1], [0.3, 0.7]])


def test_rows_not_summing_to_one() -> None:
    with raises(
        "probs: expected rows summing to 1 within 0.0001 (pass logits= if these are logits), "
        "got a row summing to 1.01"
    ):
        as_outputs([0, 1], probs=[[0.8, 0.2], [0.31, 0.7]])
    # within PROBS_ATOL is accepted, and the rows are used as given (not renormalised)
    out = as_outputs([0, 1], probs=[[0.8, 0.2 + PROBS_ATOL / 2], [0.3, 0.7]])
    assert out.probs[0, 1] == 0.2 + PROBS_ATOL / 2


def test_logits_are_never_read_as_probabilities() -> None:
    """Logits whose rows happen to sum to 1 stay logits: nothing is guessed."""
    out = as_outputs([0], logits=[[0.75, 0.25]])
    np.testing.assert_allclose(out.probs, [[1 / (1 + np.exp(-0.5)), 1 / (1 + np.exp(0.5))]])


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.astype(np.float16),
        lambda a: torch.tensor(a, dtype=torch.float16),
        lambda a: torch.tensor(a, dtype=torch.bfloat16),
    ],
)
def test_low_precision_tolerance(make: object) -> None:
    """float16 / bfloat16 rows only have to sum to 1 within 1e-2 (their rounding is coarse)."""
    ok = np.array([[0.5, 0.505], [0.2, 0.8]])  # off by 5e-3
    out = as_outputs([0, 1], probs=make(ok))  # type: ignore[operator]
    assert out.scores.dtype == np.float32
    bad = np.array([[0.5, 0.53], [0.2, 0.8]])  # off by 3e-2
    with pytest.raises(InputError, match=r"rows summing to 1 within 0\.01 "):
        as_outputs([0, 1], probs=make(bad))  # type: ignore[operator]
    with pytest.raises(InputError, match=r"rows summing to 1 within 0\.0001 "):
        as_outputs([0, 1], probs=ok.astype(np.float32))


def test_both_or_neither_scores() -> None:
    with raises("probs/logits: expected exactly one of probs= or logits=, got both"):
        as_outputs([0], probs=[[0.5, 0.5]], logits=[[0.0, 0.0]])
    with raises("probs/logits: expected exactly one of probs= or logits=, got neither"):
        as_outputs([0])
    out = as_outputs([0], probs=[[0.5, 0.5]])
    assert as_outputs(out) is out
    with raises("probs/logits: expected nothing beside a ClassifierOutputs, got both"):
        as_outputs(out, probs=[[0.5, 0.5]])


# --- labels -------------------------------------------------------------------------------


@pytest.mark.parametrize(("label", "shown"), [(2, "2"), (-1, "-1"), (7, "7")])
def test_label_out_of_range(label: int, shown: str) -> None:
    with raises(
        "labels: expected integers in [0, 2) (the number of columns of probs), "
        f"got a label of {shown}"
    ):
        as_outputs([0, label, 1], probs=P2)


def test_label_without_class_count() -> None:
    with raises("labels: expected integers in [0, inf), got a label of -3"):
        check_labels([1, -3])


def test_non_integer_labels() -> None:
    with raises("labels: expected integer class indices, got a non-integer value np.float64(0.5)"):
        as_outputs([0.0, 0.5, 1.0], probs=P2)
    with raises("labels: expected finite integer class indices, got NaN or infinity"):
        as_outputs([0.0, np.nan, 1.0], probs=P2)
    with raises(
        "labels: expected class indices that fit in int64, got a label of np.float64(1e+30)"
    ):
        as_outputs([0.0, 1e30, 1.0], probs=P2)
    with raises(
        "labels: expected integer class indices, got strings ('a' at index 0): encode each"
        " class as its score column's index, 0 .. K-1"
    ):
        as_outputs(["a", "b", "c"], probs=P2)
    # integral floats (as read from CSV) and booleans are fine
    assert as_outputs([0.0, 1.0, 1.0], probs=P2).labels.dtype == np.int64
    assert as_outputs(np.array([False, True, True]), probs=P2).labels.tolist() == [0, 1, 1]


@pytest.mark.parametrize(
    ("labels", "got"),
    [
        ([0, "1", 1], "strings and numbers ('1' at index 1, 0 at index 0)"),  # numpy: '<U21'
        (np.array([0, "a", 1], dtype=object), "strings and numbers ('a' at index 1, 0 at index 0)"),
        ([np.int64(1), 0, b"0"], "strings and numbers (b'0' at index 2, np.int64(1) at index 0)"),
        (np.array(["cat", "dog", "cat"]), "strings ('cat' at index 0)"),
    ],
)
def test_string_labels_mixed_with_numbers_or_not_are_named(labels: object, got: str) -> None:
    """Issue 42: mixed labels were an InputError about a dtype (or a raw TypeError where they
    were sorted), never saying they mix strings and numbers."""
    with raises(
        f"labels: expected integer class indices, got {got}: encode each class as its score"
        " column's index, 0 .. K-1"
    ):
        as_outputs(labels, probs=P2)
    with pytest.raises(InputError, match=r"^y: expected integer class indices, got strings"):
        check_labels(labels, name="y")


def test_labels_wrong_length_or_shape() -> None:
    with raises("labels: expected one label per row of probs (3), got 2 labels"):
        as_outputs([0, 1], probs=P2)
    with raises("labels: expected one label per row of logits (3), got 4 labels"):
        as_outputs([0, 1, 1, 0], logits=np.zeros((3, 2)))
    with raises(
        "labels: expected a 1-D array of class indices, got an array of shape (3, 2) and "
        "dtype int64"
    ):
        as_outputs(np.zeros((3, 2), dtype=np.int64), probs=P2)
    with raises("labels: expected at least one sample, got an empty array"):
        check_labels([])
    # (N, 1) labels, as MedMNIST stores them, are flattened
    assert as_outputs(np.array([[0], [1], [1]]), probs=P2).labels.tolist() == [0, 1, 1]


# --- torch tensors and dtypes -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_torch_tensors(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(20, 4))
    t = torch.tensor(logits, dtype=dtype, requires_grad=True)
    labels = torch.tensor(rng.integers(0, 4, 20))
    out = as_outputs(labels, logits=t)
    expected = t.detach().double().numpy()  # the tensor's own (rounded) values
    assert out.scores.dtype == (np.float64 if dtype == torch.float64 else np.float32)
    np.testing.assert_array_equal(out.scores.astype(np.float64), expected)
    assert out.input_dtype == str(dtype).removeprefix("torch.")
    np.testing.assert_allclose(out.probs, np.exp(log_softmax64(expected)), rtol=1e-12)
    assert t.grad is None  # nothing was traced or modified
    probs = torch.softmax(t.detach().double(), dim=1).to(dtype)
    assert as_outputs(labels, probs=probs).n_classes == 4


def test_numpy_float16_and_integer_scores() -> None:
    out = as_outputs([0, 1], probs=np.array([[1, 0], [0, 1]], dtype=np.int64))
    assert out.scores.dtype == np.float64
    assert out.confidence.tolist() == [1.0, 1.0]
    out16 = as_outputs([0], logits=np.array([[0.0, 1.0]], dtype=np.float16))
    assert out16.scores.dtype == np.float32
    assert out16.input_dtype == "float16"
    assert as_outputs([0], logits=[[0.0, 1.0]]).input_dtype == "float64"


# --- binary (1-D) input ------------------------------------------------------------------


def test_binary_probs_1d() -> None:
    p = np.array([0.1, 0.7, 1.0, 0.0], dtype=np.float32)
    out = as_outputs([0, 1, 1, 0], probs=p)
    assert out.n_classes == 2
    p64 = p.astype(np.float64)
    np.testing.assert_array_equal(out.probs, np.stack([1 - p64, p64], axis=1))
    # 1 - p in float64: exact, where float32 would round 1 - 0.1f
    assert out.confidence[0] == 1.0 - np.float64(np.float32(0.1))
    assert out.predictions.tolist() == [0, 1, 1, 0]
    assert out.input_dtype == "float32"
    with raises("probs: expected 1-D positive-class probabilities in [0, 1], got 1.5"):
        as_outputs([0, 1], probs=[0.2, 1.5])
    with raises("probs: expected 1-D positive-class probabilities in [0, 1], got -0.1"):
        as_outputs([0, 1], probs=[-0.1, 0.5])
    with raises("probs: expected finite values, got 2 NaN or infinite entries"):
        as_outputs([0, 1], probs=[np.nan, 0.5])


def test_binary_logits_1d() -> None:
    z = np.array([-2.0, 0.0, 3.0])
    out = as_outputs([0, 1, 1], logits=z)
    np.testing.assert_allclose(out.probs[:, 1], 1 / (1 + np.exp(-z)), rtol=1e-15)
    assert out.predictions.tolist() == [0, 0, 1]  # a tie (z = 0) goes to class 0
    tout = as_outputs(torch.tensor([0, 1, 1]), logits=torch.tensor(z, dtype=torch.float32))
    np.testing.assert_allclose(tout.probs, out.probs, rtol=1e-7)


# --- derived quantities -------------------------------------------------------------------


def test_log_probs_of_zero_are_finite() -> None:
    out = as_outputs([1], probs=[[1.0, 0.0]])
    assert out.log_probs[0, 1] == np.log(np.finfo(np.float64).tiny)
    assert out.log_probs[0, 0] == 0.0
    np.testing.assert_array_equal(out.as_logits(), out.log_probs)
    logit_out = as_outputs([1], logits=[[1.0, 2.0]])
    assert logit_out.as_logits() is logit_out.scores


def test_probs_from_logits_sum_to_one_in_float64() -> None:
    rng = np.random.default_rng(1)
    z = rng.normal(size=(100, 7)) * 30
    out = as_outputs(rng.integers(0, 7, 100), logits=z)
    assert out.probs.dtype == np.float64
    np.testing.assert_allclose(out.probs.sum(axis=1), 1.0, atol=1e-15)
    assert out.correct.dtype == np.float64


def test_dataclass_without_source_dtype() -> None:
    """Other modules build ClassifierOutputs directly; input_dtype falls back to the scores'."""
    out = ClassifierOutputs(np.array([0]), np.array([[0.5, 0.5]], dtype=np.float32), "probs")
    assert out.input_dtype == "float32"


# --- top_label_from_logits ------------------------------------------------------------


def _reference_top(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    z = logits.astype(np.float64)
    p = np.exp(log_softmax64(z))
    return p.max(axis=1), z.argmax(axis=1)  # argmax: first maximum


@pytest.mark.parametrize("k", [2, 10, 63, 64, 1000])
def test_top_label_float64_exact(k: int) -> None:
    rng = np.random.default_rng(k)
    n = 3000 if k == 1000 else 500  # k = 1000 spans three chunks
    z = rng.normal(size=(n, k)) * rng.uniform(0.1, 20, size=(n, 1))
    conf, pred = top_label_from_logits(z)
    ref_conf, ref_pred = _reference_top(z)
    assert conf.dtype == np.float64
    np.testing.assert_allclose(conf, ref_conf, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(pred, ref_pred)


@pytest.mark.parametrize("k", [3, 100])
def test_top_label_float32_relative(k: int) -> None:
    rng = np.random.default_rng(k)
    z = (rng.normal(size=(2000, k)) * 8).astype(np.float32)
    conf, pred = top_label_from_logits(z)
    ref_conf, ref_pred = _reference_top(z)  # softmax in float64 of the float32 logits
    np.testing.assert_allclose(conf, ref_conf, rtol=1e-6, atol=0)
    np.testing.assert_array_equal(pred, ref_pred)


@pytest.mark.parametrize("k", [4, 80])
def test_top_label_ties_go_to_lowest_index(k: int) -> None:
    z = np.zeros((3, k))
    z[1, [1, 3]] = 2.0
    z[2, [k - 2, k - 1]] = 5.0
    conf, pred = top_label_from_logits(z)
    assert pred.tolist() == [0, 1, k - 2]
    assert conf[0] == pytest.approx(1 / k, rel=1e-15)
    out = as_outputs([0, 1, 2], probs=np.exp(log_softmax64(z)))
    assert out.predictions.tolist() == [0, 1, k - 2]


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # harmless: exp(-inf)
def test_top_label_extreme_logits() -> None:
    z = np.array([[1e4, -1e4, 0.0], [-3e38, 3e38, 0.0]], dtype=np.float32)
    conf, pred = top_label_from_logits(z)
    assert conf.tolist() == [1.0, 1.0]
    assert pred.tolist() == [0, 1]


def test_probabilities_within_the_tolerance_never_give_a_confidence_above_one() -> None:
    from calibkit.metrics import ece

    probs = np.array([[1.00005, 0.0], [0.5, 0.5]])
    out = as_outputs([0, 1], probs=probs)
    assert out.confidence.max() == 1.0
    assert ece([1, 1], probs=probs) <= 1.0
    # one bin: mean confidence (1 + 0.5) / 2, accuracy 0 (both predict class 0, a tie to the lowest)
    assert ece([1, 1], probs=probs, n_bins=1) == pytest.approx(0.75)


def test_huge_unsigned_label_is_reported_as_itself() -> None:
    labels = np.array([0, 2**64 - 1], dtype=np.uint64)
    with pytest.raises(InputError, match=r"labels: .*fit in int64.*18446744073709551615"):
        as_outputs(labels, probs=[[0.5, 0.5], [0.5, 0.5]])
