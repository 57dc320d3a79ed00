"""The conformal scores' registry: each score's numpy half by hand, its torch half (eager and
scripted) against the numpy half on random probabilities with ties, the listing, and the
names the command line spells without importing it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.calibrators.sets.conformal_module import ConformalSets, softmax_module
from calibkit.calibrators.sets.conformal_scores import (
    APS,
    LAC,
    RAPS,
    SAPS,
    SCORES,
    ConformalScore,
    scores_with,
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


def test_a_name_is_the_score_with_its_defaults() -> None:
    """``"raps"`` and ``RAPS()`` give the same classifier and the same sets."""
    z = np.log(_probabilities_with_ties(300, 5, seed=3) + 1e-3)
    y = np.argmax(z + np.random.default_rng(4).normal(size=z.shape), axis=1)
    for name in SCORES:
        by_name = ConformalClassifier(conformity_score=name, calibrator="temperature").fit(z, y)
        by_object = ConformalClassifier(SCORES.get(name)(), calibrator="temperature").fit(z, y)
        assert by_name.to_json() == by_object.to_json()
        assert np.array_equal(by_name.predict_set(z), by_object.predict_set(z))


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


class _Holder(torch.nn.Module):
    """A module holding a score (TorchScript compiles a score as a submodule: the
    constructor its declaration generates has no source for a top-level script)."""

    def __init__(self, score: ConformalScore) -> None:
        super().__init__()
        self.score = score

    def forward(self, p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return self.score(p, u)  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", ["lac", "aps", "raps", "saps"])
def test_numpy_and_torch_halves_agree(name: str) -> None:
    probs = _probabilities_with_ties(400, 7, seed=1)
    assert (np.diff(np.sort(probs, axis=1), axis=1) == 0).any(axis=1).sum() > 150
    u = np.random.default_rng(2).random(probs.shape[0])
    u[:10] = 0.0
    score = {"lac": LAC(), "aps": APS(), "raps": RAPS(0.3, 2), "saps": SAPS(0.4)}[name]
    scripted = torch.jit.script(_Holder(score))  # as the exported modules hold a score
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
    assert SAPS(weight=0.5).to_json() == {"name": "saps", "weight": 0.5}


def test_the_command_line_spells_the_registered_names() -> None:
    """The CLI spells the names so that building its parser imports no numpy or torch."""
    from calibkit.cli import conformal, shift

    assert list(conformal.SCORES) == SCORES.names()
    assert list(shift.SCORES) == SCORES.names()


def test_bad_names_and_parameters_are_refused() -> None:
    expected = r"^conformity_score: expected one of aps, lac, raps, saps"
    with pytest.raises(UnknownNameError, match=expected):
        ConformalClassifier(conformity_score="sap")
    with pytest.raises(InputError, match=r"got 'sap' \(did you mean 'saps'\?\)"):
        ConformalClassifier(conformity_score="sap")
    with pytest.raises(InputError, match=r"^conformity_score: expected a score object, .* got 3$"):
        ConformalClassifier(conformity_score=3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^penalty: expected a finite number >= 0, got -0.1$"):
        RAPS(penalty=-0.1)
    with pytest.raises(InputError, match=r"^weight: expected a finite number > 0, got 0.0$"):
        SAPS(weight=0.0)
    with pytest.raises(InputError, match=r"^k_reg: expected an integer"):
        RAPS(k_reg=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="k_reg"):
        ConformalClassifier(conformity_score="raps", k_reg=1)  # type: ignore[call-arg]
    with pytest.raises(InputError, match=r"^score parameters: expected parameters of aps, saps"):
        scores_with(["aps", "saps"], {"temperature": 1.0})
    with pytest.raises(InputError, match=r"^randomized: expected False for 'lac'"):
        ConformalSets(softmax_module(3), LAC(), np.full(3, 0.5), True)


def test_the_score_is_an_object_with_its_own_parameters() -> None:
    """``conformity_score=RAPS(...)`` replaces the flat ``score``/``penalty``/``k_reg``/
    ``weight``: sklearn's ``clone`` copies the score, and ``score`` is free for sklearn."""
    from sklearn.base import clone

    raps = RAPS(penalty=0.25, k_reg=2)
    cp = ConformalClassifier(conformity_score=raps)
    assert cp.conformity_score is raps
    assert list(cp.get_params()) == [
        "conformity_score",
        "alpha",
        "calibrator",
        "calibrator_split",
        "mondrian",
        "randomized",
        "allow_full_sets",
        "seed",
    ]
    copy = clone(cp)
    assert copy.conformity_score is not raps
    assert copy.conformity_score.get_params() == {"penalty": 0.25, "k_reg": 2}
    assert not hasattr(cp, "score")
    assert isinstance(ConformalClassifier().conformity_score, APS)  # the default
    assert isinstance(ConformalClassifier(conformity_score="lac").conformity_score, LAC)
    assert cp.set_params(conformity_score="saps").conformity_score.get_params() == {"weight": 0.2}


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
