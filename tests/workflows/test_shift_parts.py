"""The inputs of a shift study checked against each other before any work (issue 32)."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.core.errors import InputError
from calibkit.workflows.shift_parts import check_conformal_size, keeps_labels, split_parts

LABELS = np.repeat(np.arange(4), 10)  # 4 classes of 10


@pytest.mark.parametrize(
    ("cal_size", "test_size", "argument", "words"),
    [
        (0.99, None, "cal_size", "a fraction of the 40 images leaving images for both parts"),
        (0.99, None, "cal_size", "0.99 (40 of the 40 images)"),
        (40, None, "cal_size", "a count in 1..39"),
        (2, None, "cal_size", "holding images of each of the 4 classes"),
        (20, 3, "test_size", "at least 4 test images: one of each class"),
    ],
)
def test_part_sizes_name_their_real_cause(
    cal_size: int | float, test_size: int | None, argument: str, words: str
) -> None:
    with pytest.raises(InputError) as info:
        split_parts(LABELS, cal_size, test_size, seed=0)
    assert info.value.argument == argument
    assert words in str(info.value)


def test_a_test_part_need_not_leave_every_class_out() -> None:
    cal, test = split_parts(LABELS, 20, 19, seed=0)
    assert (len(cal), len(test)) == (20, 19)
    assert set(LABELS[test]) == {0, 1, 2, 3}
    assert not set(cal) & set(test)


def test_the_conformal_count_is_the_fit_s_rule() -> None:
    """The least count accepted is the one whose quantile part fit accepts: 2 x 99 - 1 rows
    give 99 for the quantile at alpha 0.01, 196 give 98."""
    from calibkit.calibrators.sets.conformal import ConformalClassifier

    check_conformal_size(["lac"], 0.01, 197)
    with pytest.raises(InputError, match="at least 197 calibration images") as info:
        check_conformal_size(["lac"], 0.01, 196)
    assert info.value.argument == "cal_size"
    check_conformal_size([], 0.01, 5)  # no conformal method: nothing to check
    rng = np.random.default_rng(0)
    for n, fits in ((196, False), (197, True)):
        z, y = rng.normal(size=(n, 3)), rng.integers(0, 3, n)
        cp = ConformalClassifier(conformity_score="lac", alpha=0.01, calibrator="temperature")
        if fits:
            cp.fit(z, y)
        else:
            with pytest.raises(InputError, match="calibration part"):
                cp.fit(z, y)


def test_the_model_s_classes_decide_the_labels() -> None:
    every = tuple("abcdefghij")
    assert keeps_labels("d:b,c", ("b", "c"), every, ("m", "w.pt", 10)) is True
    assert keeps_labels("d:c,b", ("c", "b"), every, ("m", "w.pt", 2)) is False
    assert keeps_labels("d", None, every, ("m", "w.pt", 10)) is False
    with pytest.raises(InputError, match="'d', of 10 classes"):
        keeps_labels("d", None, every, ("m", "w.pt", 9))
    with pytest.raises(InputError, match="got 'kat' \\(did you mean 'cat'\\?\\)"):
        keeps_labels("d:bird,kat", ("bird", "kat"), ("bird", "cat", "dog"), ("m", "w.pt", 3))
