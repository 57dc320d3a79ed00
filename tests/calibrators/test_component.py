"""Parts passed as objects (a conformity score, a prior estimator): what ComponentSpec takes,
how a part is saved, and its value equality."""

from __future__ import annotations

import pytest

from calibkit.calibrators.component import ComponentSpec
from calibkit.calibrators.priors.estimators import BBSE, EM, ESTIMATORS
from calibkit.calibrators.sets.conformal_scores import RAPS, SCORE, SCORES
from calibkit.core.errors import InputError, UnknownNameError


def test_a_part_is_taken_as_an_object_a_name_or_its_saved_form() -> None:
    raps = RAPS(penalty=0.05)
    assert SCORE.check("conformity_score", raps) is raps  # the caller's own (clone needs it)
    assert SCORE.check("conformity_score", "raps") == RAPS()
    assert SCORE.check("conformity_score", SCORE.encode(raps)) == raps
    assert SCORE.encode(raps) == {"name": "raps", "penalty": 0.05, "k_reg": 1}
    assert ComponentSpec(ESTIMATORS).check("estimator", {"name": "bbse"}) == BBSE()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (EM(), r"^conformity_score: expected a score object, or the name of one \(aps, lac"),
        ("rasp", r"^conformity_score: expected one of .*\(did you mean 'raps'\?\)"),
        ({"name": "raps", "lam": 1}, r"^conformity_score: expected parameters among penalty"),
        ({"penalty": 0.1}, r"^conformity_score: expected a score object"),
    ],
)
def test_anything_else_is_refused_naming_the_parameter(value: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        SCORE.check("conformity_score", value)


def test_parts_are_values() -> None:
    assert RAPS(penalty=0.1) == RAPS() != RAPS(k_reg=2)
    assert len({EM(), EM(), EM(tol=1e-6)}) == 2
    assert RAPS().describe() == "raps (penalty=0.1, k_reg=1)"
    assert SCORES.create("lac").describe() == "lac"
    with pytest.raises(UnknownNameError):
        SCORE.check("conformity_score", {"name": "top"})
