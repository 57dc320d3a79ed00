"""Conformal prediction sets: hand-computed scores, quantile edges, coverage over many
splits of real predictions (both bounds of the split-conformal theorem), Mondrian per-class
coverage, MAPIE agreement, persistence and the torch module in every export path.

The coverage theorem (Vovk et al. 2005; Angelopoulos & Bates 2021, Thm. D.1): with ``n``
calibration rows exchangeable with a test row, ``1 - alpha <= P(covered) <= 1 - alpha +
1 / (n + 1)``, the upper bound when the scores have no ties. A random permutation of one
file's rows is exactly exchangeable, so the mean test coverage over seeded random splits
estimates that probability; each test checks it against the interval widened by
:data:`SE_MULTIPLE` Monte-Carlo standard errors of the mean over splits.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.calibrators import create_calibrator
from calibkit.calibrators.sets.conformal import (
    ConformalClassifier,
    conformal_threshold,
    rows_needed,
)
from calibkit.calibrators.sets.conformal_scores import APS, LAC, RAPS, SAPS, SCORES
from calibkit.core.errors import InputError
from tests.calibrators.problems import random_problem
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

PREDICTIONS = SHARED_DATA / "predictions"
FILES = sorted(PREDICTIONS.glob("*.npz")) if PREDICTIONS.is_dir() else []
ONE = PREDICTIONS / "cifar10_resnet18.npz"
needs_one = pytest.mark.skipif(not ONE.exists(), reason=f"real data not available: {ONE} is absent")
ALPHAS = (0.01, 0.05, 0.1, 0.2)
#: Standard errors of the Monte-Carlo mean allowed outside the theorem's interval: 4 gives
#: a false alarm below 1e-4 per check (normal tail), over the 32 checks of a run below 0.3%.
SE_MULTIPLE = 4.0
#: (score, randomized): LAC has no randomised variant.
VARIANTS = [("lac", False)] + [(s, r) for s in ("aps", "raps", "saps") for r in (False, True)]


# ----- hand-computed cases ----------------------------------------------------------------
def test_scores_by_hand_with_a_tie() -> None:
    """p = (0.4, 0.4, 0.2): classes 0 and 1 tie; the lower index ranks first."""
    p = np.array([[0.4, 0.4, 0.2]])
    close = lambda a, b: np.testing.assert_allclose(a, [b], atol=1e-15)  # noqa: E731  sums of 3
    close(LAC().numpy(p), [0.6, 0.6, 0.8])
    close(APS().numpy(p), [0.4, 0.8, 1.0])
    close(APS().numpy(p, np.array([0.5])), [0.2, 0.6, 0.9])
    close(RAPS(penalty=0.1, k_reg=1).numpy(p), [0.4, 0.9, 1.2])
    close(SAPS(weight=0.2).numpy(p), [0.4, 0.6, 0.8])
    close(SAPS(weight=0.2).numpy(p, np.array([0.5])), [0.2, 0.5, 0.7])


def test_sets_by_hand() -> None:
    """Ten calibration rows, alpha = 0.2: k = ceil(11 * 0.8) = 9, the 9th smallest score."""
    probs = np.full((10, 2), 0.5)
    probs[:, 0] = np.linspace(0.5, 0.95, 10)  # LAC scores of label 0: 0.5, 0.45, ..., 0.05
    probs[:, 1] = 1 - probs[:, 0]
    cp = ConformalClassifier(conformity_score="lac", alpha=0.2).fit(
        np.log(probs), np.zeros(10, int)
    )
    assert cp.thresholds_[0] == pytest.approx(0.45, abs=1e-12)  # rounding of log/softmax
    sets = cp.predict_set(np.log([[0.6, 0.4], [0.5, 0.5], [0.56, 0.44]]))
    assert sets.tolist() == [[True, False], [False, False], [True, False]]  # p >= 0.55 enters


def test_a_calibration_part_too_small_is_refused_or_gives_full_sets() -> None:
    """alpha = 0.1 needs n >= 9 (ceil((n+1) 0.9) <= n); with 8 rows the quantile is infinite."""
    z, y = random_problem(8, 3, seed=0)
    with pytest.raises(InputError, match=r"at least 9 calibration rows .* got 8"):
        ConformalClassifier(conformity_score="aps", alpha=0.1).fit(z, y)
    cp = ConformalClassifier(conformity_score="aps", alpha=0.1, allow_full_sets=True).fit(z, y)
    assert np.isinf(cp.thresholds_).all()
    assert cp.predict_set(z).all()
    assert rows_needed(0.1) == 9
    assert conformal_threshold(np.arange(9.0), 0.1) == 8.0


def test_alpha_near_one_gives_empty_lac_sets() -> None:
    """alpha = 0.95 with 19 rows: k = 1, the smallest score; LAC sets are then often empty."""
    z, y = random_problem(400, 4, seed=1)
    cp = ConformalClassifier(conformity_score="lac", alpha=0.95).fit(z[:19], y[:19])
    sets = cp.predict_set(z[19:])
    assert (sets.sum(axis=1) == 0).mean() > 0.5


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"alpha": 0.0}, "alpha: expected a finite number in (0, 1)"),
        ({"alpha": 1.0}, "alpha: expected a finite number in (0, 1)"),
        ({"conformity_score": "topk"}, "one of aps, lac, raps, saps"),
        ({"conformity_score": "lac", "randomized": True}, "randomized=False for 'lac'"),
        ({"conformity_score": LAC(), "randomized": True}, "randomized=False for 'lac'"),
        ({"calibrator": "nope"}, "nope"),
    ],
)
def test_bad_parameters(params: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ConformalClassifier(**params)  # type: ignore[arg-type]


# ----- coverage over many splits ----------------------------------------------------------
def _label_scores(path: Path, score: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's label score at U = 0 and U = 1 (the score is linear in U), and labels."""
    data = np.load(path)
    probs, y = data["probs"].astype(np.float64), data["labels"]
    probs /= probs.sum(axis=1, keepdims=True)
    n, scorer = y.shape[0], SCORES.create(score)  # the score's defaults
    at = [
        np.take_along_axis(scorer.numpy(probs, np.full(n, u)), y[:, None], 1)[:, 0]
        for u in (0.0, 1.0)
    ]
    return at[0], at[1], y


def _coverage_check(path: Path, score: str, randomized: bool, n_splits: int) -> None:
    s0, s1, y = _label_scores(path, score)
    n_all = y.shape[0]
    n = n_all // 2
    rng = np.random.default_rng(1234)
    perm = np.argsort(rng.random((n_splits, n_all)), axis=1)
    u = rng.random((n_splits, n_all)) if randomized else 0.0
    scores = (s0 + u * (s1 - s0)) if randomized else np.broadcast_to(s0, (n_splits, n_all))
    scores = np.take_along_axis(scores, perm, axis=1)
    cal, test = np.sort(scores[:, :n], axis=1), scores[:, n:]
    for alpha in ALPHAS:
        k = int(
            np.ceil((n + 1) * (1 - alpha) - 1e-9)
        )  # exact here: (n+1)(1-alpha) is not an integer
        q = cal[:, k - 1]
        coverage = (test <= q[:, None]).mean(axis=1)
        mean, se = coverage.mean(), coverage.std(ddof=1) / np.sqrt(n_splits)
        slack = SE_MULTIPLE * se
        what = f"{path.name} {score} randomized={randomized} alpha={alpha}"
        assert mean >= 1 - alpha - slack, what
        tied = (cal == q[:, None]).sum(axis=1).max() > 1
        if not tied:  # the upper bound needs scores without ties at the quantile
            assert mean <= 1 - alpha + 1 / (n + 1) + slack, what
        else:  # non-randomised APS on a confident model: label scores tie at 1.0
            assert not randomized, what


@needs_one
@pytest.mark.parametrize(("score", "randomized"), VARIANTS)
def test_coverage_over_200_splits(score: str, randomized: bool) -> None:
    _coverage_check(ONE, score, randomized, 200)


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason=f"real data not available: {PREDICTIONS} is absent")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
@pytest.mark.parametrize(("score", "randomized"), VARIANTS)
def test_coverage_over_200_splits_every_file(path: Path, score: str, randomized: bool) -> None:
    _coverage_check(path, score, randomized, 200)


@needs_one
def test_the_classifier_gives_the_vectorised_coverage() -> None:
    """The fast check above reimplements the sets; the class agrees on a few splits."""
    data = np.load(ONE)
    z, y = np.log(np.maximum(data["probs"].astype(np.float64), 1e-300)), data["labels"]
    for seed in range(3):
        perm = np.random.default_rng(seed).permutation(y.shape[0])
        cal, test = perm[:5000], perm[5000:]
        cp = ConformalClassifier(conformity_score="raps", alpha=0.1).fit(z[cal], y[cal])
        s0, _, _ = _label_scores(ONE, "raps")
        q = np.sort(s0[cal])[int(np.ceil(5001 * 0.9)) - 1]
        assert cp.thresholds_[0] == pytest.approx(
            q, abs=1e-12
        )  # float32 probs renormalised two ways
        covered = cp.predict_set(z[test])[np.arange(5000), y[test]]
        assert (
            abs(covered.mean() - (s0[test] <= q).mean()) <= 2e-4
        )  # a row at the threshold may flip


@needs_one
@pytest.mark.parametrize(("score", "randomized"), [("lac", False), ("aps", True)])
def test_mondrian_covers_every_class(score: str, randomized: bool) -> None:
    """Per class, the mean coverage over 60 splits is at least 1 - alpha (less 4 SEs)."""
    data = np.load(ONE)
    z, y = np.log(np.maximum(data["probs"].astype(np.float64), 1e-300)), data["labels"]
    alpha, per_split = 0.1, []
    for seed in range(60):
        perm = np.random.default_rng(seed).permutation(y.shape[0])
        cal, test = perm[:5000], perm[5000:]
        cp = ConformalClassifier(
            conformity_score=score, alpha=alpha, mondrian=True, randomized=randomized
        )
        sets = cp.fit(z[cal], y[cal]).predict_set(z[test])
        covered = sets[np.arange(5000), y[test]]
        per_split.append([covered[y[test] == c].mean() for c in range(10)])
    cov = np.array(per_split)
    mean, se = cov.mean(axis=0), cov.std(axis=0, ddof=1) / np.sqrt(len(cov))
    assert (mean >= 1 - alpha - SE_MULTIPLE * se).all(), mean


# ----- MAPIE --------------------------------------------------------------------------------
def test_lac_sets_equal_mapie() -> None:
    """MAPIE's split LAC (prefit on the probabilities) gives the same sets on 20 splits.

    APS/RAPS are compared on the quantile only: MAPIE's APS calibration scores always
    subtract ``u p_y`` (randomised) and its non-randomised sets include the label that
    crosses the quantile (``include_last_label=True``), a different convention from
    ``s(x, y) <= q``; its quantile rule (the ``ceil((n + 1)(1 - alpha))``-th smallest) is
    the same, checked in :func:`test_quantile_equals_mapie`.
    """
    pytest.importorskip("mapie")
    from mapie.classification import SplitConformalClassifier
    from sklearn.base import BaseEstimator, ClassifierMixin

    class Probabilities(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
        def fit(self, x: np.ndarray, y: np.ndarray) -> Probabilities:
            self.classes_ = np.arange(x.shape[1])
            return self

        def predict_proba(self, x: np.ndarray) -> np.ndarray:
            return np.asarray(x)

        def predict(self, x: np.ndarray) -> np.ndarray:
            return np.asarray(x).argmax(axis=1)

    for seed in range(20):
        z, y = random_problem(600, 5, seed=seed)
        cp = ConformalClassifier(conformity_score="lac", alpha=0.1).fit(z[:300], y[:300])
        p = cp.predict_proba(z)  # the same probabilities for both
        ref = SplitConformalClassifier(Probabilities().fit(p, y), confidence_level=0.9)
        ref.conformalize(p[:300], y[:300])
        assert (ref.predict_set(p[300:])[1][:, :, 0] == cp.predict_set(z[300:])).all()


@pytest.mark.parametrize("alpha", ALPHAS)
def test_quantile_equals_mapie(alpha: float) -> None:
    pytest.importorskip("mapie")
    from mapie.utils import _compute_classification_quantile

    scores = np.random.default_rng(0).random(999)
    ref = _compute_classification_quantile(scores[:, None], np.array([alpha]))[0]
    assert conformal_threshold(scores, alpha) == ref


# ----- persistence and export ---------------------------------------------------------------
@pytest.mark.parametrize("calibrator", [None, "temperature", "dirichlet"])
@pytest.mark.parametrize(("score", "randomized"), VARIANTS)
def test_json_round_trip(
    score: str, randomized: bool, calibrator: str | None, tmp_path: Path
) -> None:
    z, y = random_problem(500, 4, seed=2)
    cp = ConformalClassifier(
        score, calibrator=calibrator, randomized=randomized, mondrian=True, alpha=0.2
    ).fit(z[:300], y[:300])
    cp.save(tmp_path / "sets.json")
    back = ConformalClassifier.load(tmp_path / "sets.json")
    assert back.to_json()["params"] == cp.to_json()["params"]  # the score saved as it was
    assert type(back.conformity_score) is type(cp.conformity_score)
    assert (back.predict_set(z[300:]) == cp.predict_set(z[300:])).all()
    assert "pickle" not in (tmp_path / "sets.json").read_text()


def test_infinite_threshold_round_trips_and_bad_state_is_refused(tmp_path: Path) -> None:
    z, y = random_problem(5, 3, seed=0)
    cp = ConformalClassifier(alpha=0.05, allow_full_sets=True).fit(z, y)
    doc = json.loads(json.dumps(cp.to_json()))
    assert np.isinf(ConformalClassifier.from_json(doc).thresholds_).all()
    doc["state"]["thresholds_"] = [0.5]
    with pytest.raises(InputError, match=r"state\.thresholds_"):
        ConformalClassifier.from_json(doc)


def test_a_fitted_calibrator_is_used_as_is_and_an_unfitted_one_is_not_changed() -> None:
    z, y = random_problem(600, 4, seed=3)
    ts = create_calibrator("temperature").fit(z[:200], y[:200])
    cp = ConformalClassifier(calibrator=ts).fit(z[200:], y[200:])
    assert cp.calibrator_ is ts
    assert cp.n_calibration_ == 400
    fresh = create_calibrator("temperature")
    cp = ConformalClassifier(calibrator=fresh).fit(z, y)
    assert not fresh.is_fitted
    assert cp.n_calibration_ == 300


def _run(
    module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], how: str, tmp: Path
) -> np.ndarray:
    if how == "script":
        module = torch.jit.script(module)
    if how == "onnx":
        ort = pytest.importorskip("onnxruntime")
        batch = torch.export.Dim("batch")
        shapes = tuple({0: batch} for _ in inputs)
        program = torch.onnx.export(
            module, tuple(x[:8] for x in inputs), dynamo=True, dynamic_shapes=shapes
        )
        assert program is not None
        program.save(str(tmp / "sets.onnx"))
        session = ort.InferenceSession(str(tmp / "sets.onnx"), providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return np.asarray(
            session.run(None, dict(zip(names, (x.numpy() for x in inputs), strict=True)))[0]
        )
    with torch.no_grad():
        return np.asarray(module(*inputs).numpy())


@pytest.mark.parametrize("how", ["eager", "script", "onnx"])
@pytest.mark.parametrize(("score", "randomized"), VARIANTS)
def test_module_gives_predict_set(score: str, randomized: bool, how: str, tmp_path: Path) -> None:
    """Eager, TorchScript and ONNX Runtime give ``predict_set``'s mask on 500 rows (200 new)
    except where a score is within 1e-12 of its threshold (sums in another order)."""
    z, y = random_problem(800, 5, seed=4)
    cp = ConformalClassifier(
        conformity_score=score, randomized=randomized, calibrator="temperature", alpha=0.1
    )
    cp.fit(z[:600], y[:600])
    x = z[300:]
    u = np.random.default_rng(0).random(x.shape[0]) if randomized else None
    expected = cp.predict_set(x, u=u)
    inputs = (torch.tensor(x),) + ((torch.tensor(u),) if u is not None else ())
    got = _run(cp.to_module(), inputs, how, tmp_path)
    near = np.abs(cp.predict_scores(x, u=u) - cp.thresholds_) <= 1e-12
    assert got.dtype == np.bool_
    assert (got == expected)[~near].all()


def test_load_refuses_a_bad_file_with_one_message(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^calibkit file: expected an existing file"):
        ConformalClassifier.load(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InputError, match="valid JSON"):
        ConformalClassifier.load(tmp_path / "bad.json")
    with pytest.raises(InputError, match="a regular file"):
        ConformalClassifier.load(tmp_path)
