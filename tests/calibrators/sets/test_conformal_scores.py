"""The conformal scores' registry: each score's numpy half by hand, its torch half (eager and
scripted) against the numpy half on random probabilities with ties, the listing, and the
names the command line spells without importing it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibkit.calibrators.sets.conformal import ConformalClassifier, set_scores
from calibkit.calibrators.sets.conformal_module import ConformalSets, softmax_module
from calibkit.calibrators.sets.conformal_scores import (
    APS,
    LAC,
    RAPS,
    SAPS,
    SCORES,
    ConformalScore,
    create_score,
)
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.registry import key_rule

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

#: Two rows with ties, every value a multiple of 1/8 (sums and products below are exact).
#: Row 0 ranks class 1 (0.5) first, then the tied classes 0 and 2 by index; row 1 ranks
#: class 2, then the tied classes 0, 1 and 3 by index.
P = np.array([[0.25, 0.5, 0.25, 0.0], [0.125, 0.125, 0.625, 0.125]])
U = np.array([0.5, 0.25])


# ----- each numpy half by hand --------------------------------------------------------------
def test_lac_by_hand() -> None:
    assert LAC().numpy(P).tolist() == [[0.75, 0.5, 0.75, 1.0], [0.875, 0.875, 0.375, 0.875]]


def test_aps_by_hand() -> None:
    """The mass ranked up to and including the class, less ``u`` times its probability."""
    assert APS().numpy(P).tolist() == [[0.75, 0.5, 1.0, 1.0], [0.75, 0.875, 0.625, 1.0]]
    # row 0: 0.75 - 0.5 * 0.25, 0.5 - 0.5 * 0.5, 1.0 - 0.5 * 0.25, 1.0 - 0
    # row 1: 0.75 - 0.25 * 0.125, 0.875 - 0.25 * 0.125, 0.625 - 0.25 * 0.625, 1.0 - ...
    expected = [[0.625, 0.25, 0.875, 1.0], [0.71875, 0.84375, 0.46875, 0.96875]]
    assert APS().numpy(P, U).tolist() == expected


def test_raps_by_hand() -> None:
    """APS plus ``penalty * max(0, rank - k_reg)``: ranks (2, 1, 3, 4) and (2, 3, 1, 4)."""
    raps = RAPS(penalty=0.5, k_reg=1)
    assert raps.numpy(P).tolist() == [[1.25, 0.5, 2.0, 2.5], [1.25, 1.875, 0.625, 2.5]]
    assert RAPS(penalty=0.5, k_reg=3).numpy(P).tolist() == [
        [0.75, 0.5, 1.0, 1.5],
        [0.75, 0.875, 0.625, 1.5],
    ]
    assert RAPS(penalty=0.0, k_reg=0).numpy(P, U).tolist() == APS().numpy(P, U).tolist()


def test_saps_by_hand() -> None:
    """``(1 - u) p_(1)`` at rank 1, else ``p_(1) + weight (rank - 1 - u)``."""
    saps = SAPS(weight=0.25)
    assert saps.numpy(P).tolist() == [[0.75, 0.5, 1.0, 1.25], [0.875, 1.125, 0.625, 1.375]]
    expected = [[0.625, 0.25, 0.875, 1.125], [0.8125, 1.0625, 0.46875, 1.3125]]
    assert saps.numpy(P, U).tolist() == expected


def test_set_scores_is_the_registry_numpy_half() -> None:
    options = {"penalty": 0.5, "k_reg": 1, "weight": 0.25}
    for name in SCORES:
        u = None if name == "lac" else U
        expected = create_score(name, **options).numpy(P, u)
        assert set_scores(P, name, u, **options).tolist() == expected.tolist()
    with pytest.raises(UnknownNameError, match=r"got 'rasp' \(did you mean 'raps'\?\)"):
        set_scores(P, "rasp")


# ----- numpy and torch halves ---------------------------------------------------------------
def _probabilities_with_ties(n: int, k: int, seed: int) -> np.ndarray:
    """Half the rows from a Dirichlet, half small counts over their total (many ties, and
    rows all equal)."""
    rng = np.random.default_rng(seed)
    smooth = rng.dirichlet(np.full(k, 0.5), size=n // 2)
    counts = rng.integers(0, 3, size=(n - n // 2, k)).astype(np.float64)
    counts[:, 0] += counts.sum(axis=1) == 0  # no all-zero row
    counts[:5] = 1.0  # all classes tied
    return np.concatenate([smooth, counts / counts.sum(axis=1, keepdims=True)])


@pytest.mark.parametrize("name", ["lac", "aps", "raps", "saps"])
def test_numpy_and_torch_halves_agree(name: str) -> None:
    probs = _probabilities_with_ties(400, 7, seed=1)
    assert (np.diff(np.sort(probs, axis=1), axis=1) == 0).any(axis=1).sum() > 150
    u = np.random.default_rng(2).random(probs.shape[0])
    u[:10] = 0.0
    score = create_score(name, penalty=0.3, k_reg=2, weight=0.4)
    scripted = torch.jit.script(score)
    for uu in (None, u) if score.randomizable else (None,):
        expected = score.numpy(probs, uu)
        tu = torch.zeros(probs.shape[0], dtype=torch.float64) if uu is None else torch.tensor(uu)
        for half in (score.torch, score, scripted):
            got = half(torch.tensor(probs), tu).numpy()
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0.0)


def test_the_torch_half_breaks_ties_by_class_index() -> None:
    """Exact on dyadic probabilities: the tied classes get the hand-computed scores."""
    for score in (APS(), RAPS(penalty=0.5, k_reg=1), SAPS(weight=0.25)):
        got = score.torch(torch.tensor(P), torch.tensor(U)).numpy()
        assert got.tolist() == score.numpy(P, U).tolist(), score


# ----- the registry -------------------------------------------------------------------------
def test_the_registry_lists_the_scores_with_their_parameters() -> None:
    assert SCORES.names() == ["lac", "aps", "raps", "saps"]
    assert [SCORES.get(n).name for n in SCORES] == SCORES.names()
    assert [n for n in SCORES if SCORES.get(n).randomizable] == ["aps", "raps", "saps"]
    declared = {n: list(SCORES.get(n).param_constraints) for n in SCORES}
    assert declared == {"lac": [], "aps": [], "raps": ["penalty", "k_reg"], "saps": ["weight"]}
    for name in SCORES:
        cls = SCORES.get(name)
        assert issubclass(cls, ConformalScore)
        assert key_rule(cls.__name__, SCORES.kind) == name
    assert RAPS().get_params() == {"penalty": 0.1, "k_reg": 1}
    assert repr(SCORES.create("saps", weight=0.5)) == "SAPS(weight=0.5)"


def test_the_command_line_spells_the_registered_names() -> None:
    """The CLI spells the names so that building its parser imports no numpy or torch."""
    from calibkit.cli import conformal, shift

    assert list(conformal.SCORES) == SCORES.names()
    assert list(shift.SCORES) == SCORES.names()


def test_bad_names_and_parameters_are_refused() -> None:
    with pytest.raises(UnknownNameError, match=r"^score: expected one of aps, lac, raps, saps"):
        ConformalClassifier(score="sap")
    with pytest.raises(InputError, match=r"got 'sap' \(did you mean 'saps'\?\)"):
        ConformalClassifier(score="sap")
    with pytest.raises(InputError, match=r"^score: expected one of aps, lac, raps, saps, got 3$"):
        ConformalClassifier(score=3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^penalty: expected a finite number >= 0, got -0.1$"):
        RAPS(penalty=-0.1)
    with pytest.raises(InputError, match=r"^weight: expected a finite number > 0, got 0.0$"):
        create_score("saps", weight=0.0)
    with pytest.raises(InputError, match=r"^k_reg: expected an integer"):
        ConformalClassifier(score="raps", k_reg=1.5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^score options: expected among k_reg, penalty, weight"):
        create_score("aps", temperature=1.0)
    with pytest.raises(InputError, match=r"^randomized: expected False for 'lac'"):
        ConformalSets(softmax_module(3), LAC(), np.full(3, 0.5), True)


def test_the_classifier_builds_its_score_from_its_parameters() -> None:
    cp = ConformalClassifier(score="raps", penalty=0.25, k_reg=2, weight=0.5)
    score = cp.score_object()
    assert isinstance(score, RAPS)
    assert score.get_params() == {"penalty": 0.25, "k_reg": 2}
    assert isinstance(ConformalClassifier(score="lac").score_object(), LAC)
    assert cp.get_params()["score"] == "raps"  # the saved document keeps the name


# ----- the declared range of each score (what a loaded threshold is checked against) -------
#: Each score's range on 4 classes by hand: RAPS(0.5, 1) adds 0.5 * (4 - 1), SAPS(0.25) is
#: below 1 + 0.25 * (4 - 1) at the last rank.
HAND_RANGES = {"lac": 1.0, "aps": 1.0, "raps": 2.5, "saps": 1.75}
HAND_SCORES = {"lac": LAC(), "aps": APS(), "raps": RAPS(penalty=0.5, k_reg=1), "saps": SAPS(0.25)}


@pytest.mark.parametrize("name", HAND_RANGES)
def test_every_score_stays_in_its_declared_range_and_reaches_its_ends(name: str) -> None:
    score = HAND_SCORES[name]
    assert score.value_range(4) == (0.0, HAND_RANGES[name])
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.full(4, 0.3), size=2000)
    for u in (None, rng.random(2000), np.zeros(2000), np.full(2000, np.nextafter(1.0, 0.0))):
        s = score.numpy(p, u)
        assert s.min() >= 0.0, name
        assert s.max() <= HAND_RANGES[name] + 1e-12, name
    one_hot = np.array([[1.0, 0.0, 0.0, 0.0]])  # the top class sure, the last ranked 4th
    assert score.numpy(one_hot).max() == HAND_RANGES[name]
    assert score.numpy(one_hot, np.array([np.nextafter(1.0, 0.0)])).min() < 1e-15
