"""One fitted conformal predictor, three answers: probabilities, sets at any alpha, and
selective prediction at a coverage; and the one module that exports all three."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import binomtest

from calibkit.calibrators import ConformalClassifier
from calibkit.calibrators.fitted import load_document
from calibkit.core.errors import InputError


def _data(n: int = 3000, k: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3
    probs = np.exp(z - z.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    y = (probs.cumsum(1) > rng.random((n, 1))).argmax(1)  # drawn from softmax(z): calibrated
    return z, y


@pytest.mark.parametrize("mondrian", [False, True])
@pytest.mark.parametrize("score", ["lac", "aps", "raps"])
def test_sets_at_another_alpha_are_those_of_a_fit_at_that_alpha(score: str, mondrian: bool) -> None:
    z, y = _data()
    params = {"conformity_score": score, "mondrian": mondrian, "calibrator": "temperature"}
    cp = ConformalClassifier(alpha=0.1, **params).fit(z, y)
    np.testing.assert_array_equal(cp.thresholds(0.1), cp.thresholds_)
    other = ConformalClassifier(alpha=0.2, **params).fit(z, y)
    np.testing.assert_array_equal(cp.thresholds(0.2), other.thresholds_)
    np.testing.assert_array_equal(cp.predict_set(z, alpha=0.2), other.predict_set(z))


def test_an_alpha_the_rows_cannot_give_is_refused_naming_the_rows() -> None:
    z, y = _data(n=60)
    cp = ConformalClassifier(alpha=0.2, calibrator_split=None).fit(z, y)
    with pytest.raises(InputError, match=r"alpha: expected an alpha whose quantile the 60 cal"):
        cp.thresholds(0.01)  # needs 99 rows
    assert np.isinf(
        ConformalClassifier(alpha=0.2, allow_full_sets=True).fit(z, y).thresholds(0.01)
    ).all()


def test_selective_by_hand() -> None:
    # no calibrator, every row for the quantile: the confidences are the softmax maxima
    conf = np.array([0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.58, 0.55])
    z = np.stack([np.log(conf), np.log(1 - conf)], axis=1)
    wrong = np.array([0, 0, 1, 0, 0, 1, 1, 0, 1, 1])  # label 1 where the top class is wrong
    cp = ConformalClassifier(alpha=0.3, calibrator=None, allow_full_sets=True).fit(z, wrong)
    sel = cp.selective(0.5)  # the 5 most confident rows, one of them wrong
    assert (sel.n_kept, sel.risk, sel.coverage) == (5, 0.2, 0.5)
    assert sel.threshold == pytest.approx(0.75, rel=1e-12)  # softmax of log(0.75), log(0.25)
    upper = binomtest(1, 5).proportion_ci(confidence_level=0.90, method="exact").high
    assert sel.risk_upper == pytest.approx(upper, rel=1e-9)
    assert cp.selective(0.01).n_kept == 1
    assert cp.selective(1.0).risk == 0.5
    np.testing.assert_array_equal(cp.predict_accept(z, 0.5), np.arange(10) < 5)


def test_ties_at_the_threshold_are_kept() -> None:
    conf = np.array([0.9, 0.8, 0.8, 0.8, 0.6])
    z = np.stack([np.log(conf), np.log(1 - conf)], axis=1)
    cp = ConformalClassifier(alpha=0.4, allow_full_sets=True).fit(z, np.array([0, 0, 0, 1, 1]))
    sel = cp.selective(0.4)  # 2 rows asked; the tie at 0.8 keeps 4
    assert (sel.n_kept, sel.coverage, sel.risk) == (4, 0.8, 0.25)


@pytest.mark.parametrize("coverage", [0.0, 1.5, math.nan, "high"])
def test_a_bad_coverage_is_refused(coverage: object) -> None:
    z, y = _data(n=300)
    cp = ConformalClassifier().fit(z, y)
    with pytest.raises(InputError, match=r"^coverage: expected"):
        cp.selective(coverage)  # type: ignore[arg-type]


def test_the_upper_bound_covers_the_risk_of_new_rows_in_simulation() -> None:
    # a calibrated model: the selective risk of fresh rows at the kept threshold stays below
    # the 95% upper bound in about 95% of the draws (and the estimate is unbiased)
    z_test, y_test = _data(n=20_000, seed=999)
    hits, risks, truths = 0, [], []
    for seed in range(200):
        z, y = _data(n=400, seed=seed)
        cp = ConformalClassifier(alpha=0.2, calibrator_split=None).fit(z, y)
        sel = cp.selective(0.7)
        accept = cp.predict_accept(z_test, 0.7)
        truth = float((z_test[accept].argmax(1) != y_test[accept]).mean())
        hits += truth <= sel.risk_upper
        risks.append(sel.risk)
        truths.append(truth)
    assert 0.90 <= hits / 200 <= 0.995
    assert abs(np.mean(risks) - np.mean(truths)) < 0.01


def test_predict_all_gives_the_three_answers() -> None:
    z, y = _data()
    cp = ConformalClassifier(conformity_score="raps", calibrator="temperature").fit(
        z[:2000], y[:2000]
    )
    a = cp.predict_all(z[2000:], alpha=0.05, coverage=0.8)
    np.testing.assert_array_equal(a.probs, cp.predict_proba(z[2000:]))
    np.testing.assert_array_equal(a.sets, cp.predict_set(z[2000:], alpha=0.05))
    np.testing.assert_array_equal(a.accept, cp.predict_accept(z[2000:], 0.8))
    assert abs(float(a.accept.mean()) - 0.8) < 0.05
    covered = a.sets[np.arange(1000), y[2000:]].mean()
    assert covered > 0.93  # 1 - alpha = 0.95, 1,000 rows


def _export_outputs(
    module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], how: str, tmp: str
) -> tuple:
    if how == "eager":
        return tuple(module(*inputs))
    if how == "script":
        return tuple(torch.jit.script(module)(*inputs))
    if how == "export":
        return tuple(torch.export.export(module, inputs).module()(*inputs))
    import onnxruntime as ort

    torch.onnx.export(module, inputs, f"{tmp}/m.onnx", dynamo=True)
    session = ort.InferenceSession(f"{tmp}/m.onnx")
    feed = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs, strict=True)}
    return tuple(torch.from_numpy(o) for o in session.run(None, feed))


@pytest.mark.parametrize("how", ["eager", "script", "export", "onnx"])
@pytest.mark.parametrize("randomized", [False, True])
def test_the_one_module_equals_the_python_path(how: str, randomized: bool, tmp_path) -> None:
    z, y = _data(n=1500)
    cp = ConformalClassifier(
        conformity_score="aps", randomized=randomized, calibrator="temperature"
    )
    cp.fit(z[:1000], y[:1000])
    x = torch.from_numpy(z[1000:])
    u = np.random.default_rng(1).random(500)
    inputs = (x, torch.from_numpy(u)) if randomized else (x,)
    probs, sets, accept = _export_outputs(
        cp.to_module(alpha=0.2, coverage=0.6), inputs, how, str(tmp_path)
    )
    want = cp.predict_all(z[1000:], u if randomized else None, alpha=0.2, coverage=0.6)
    np.testing.assert_allclose(probs.numpy(), want.probs, rtol=1e-9, atol=1e-15)
    np.testing.assert_array_equal(accept.numpy(), want.accept)
    # a class whose score equals the threshold to 1e-15 may be decided differently (module doc)
    assert (sets.numpy() != want.sets).sum() <= 1


def test_the_stored_calibration_rows_are_required() -> None:
    """Issue #45, item 4: every fit stores its calibration rows; a document without them
    (as before 0.1.0) is refused naming the field, not read as sets at its own alpha."""
    z, y = _data(n=600)
    cp = ConformalClassifier(calibrator="temperature").fit(z, y)
    keys = ("label_scores_", "score_labels_", "confidences_", "errors_")
    for gone in [keys, *((key,) for key in keys)]:  # all four, as before 0.1.0, or one
        doc = cp.to_json()
        for key in gone:
            del doc["state"][key]
        with pytest.raises(InputError, match=rf"state\.{gone[0]}: expected .*, got nothing"):
            load_document(doc)


def test_stored_rows_that_disagree_with_the_counts_are_refused() -> None:
    z, y = _data(n=600)
    doc = ConformalClassifier().fit(z, y).to_json()
    labels = doc["state"]["score_labels_"]["__ndarray__"]
    labels[0] = (labels[0] + 1) % 6
    with pytest.raises(
        InputError, match=r"state\.score_labels_: expected the labels class_counts_"
    ):
        load_document(doc)
