"""The survey's two-term dual focal loss: hand values and limits."""

from __future__ import annotations

import math

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    cross_entropy,
    dual_focal_two_term_loss,
    focal_loss,
)
from tests.losses.conftest import LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)
P_Y = [P[i][t] for i, t in enumerate(TARGETS)]


def test_dual_focal_two_term_by_hand() -> None:
    # p_m, the largest non-target probability: the runner-up (sample 0), the *predicted*
    # class (sample 1, where Tao et al. take the class below the target), the tied class 0
    # or the predicted class 2 (sample 2: class 2, p = 0.82 > p_0)
    p_m = [P[0][1], P[1][1], P[2][2]]
    gamma = 2.0
    want = [
        -((1 - p) ** gamma) * math.log(p) - q**gamma * math.log(1 - q)
        for p, q in zip(P_Y, p_m, strict=True)
    ]
    z, y = example()
    got = dual_focal_two_term_loss(z, y, gamma, "none")
    torch.testing.assert_close(got, torch.tensor(want, dtype=z.dtype))


def test_dual_focal_two_term_three_classes_small() -> None:
    # p = (1/4, 1/2, 1/4), y = 1, gamma 1: 0.5 log 2 - (1/4) log(3/4) = 0.418494...
    z = torch.log(torch.tensor([[1.0, 2.0, 1.0]], dtype=torch.float64))
    got = float(dual_focal_two_term_loss(z, torch.tensor([1]), 1.0))
    assert got == pytest.approx(0.5 * math.log(2) - 0.25 * math.log(0.75), rel=1e-12)
    assert got == pytest.approx(0.418494, abs=1e-6)


def test_dual_focal_two_term_limits() -> None:
    z, y = example()
    # gamma 0: CE - log(1 - p_m); two classes: twice the focal loss (p_m = 1 - p_y)
    p_m = torch.tensor([P[0][1], P[1][1], P[2][2]], dtype=z.dtype)
    want = cross_entropy(z, y, "none") - torch.log1p(-p_m)
    torch.testing.assert_close(dual_focal_two_term_loss(z, y, 0.0, "none"), want)
    z2, y2 = torch.randn(7, 2, dtype=torch.float64), torch.randint(0, 2, (7,))
    for gamma in (0.0, 1.0, 3.0):
        two = dual_focal_two_term_loss(z2, y2, gamma, "none")
        torch.testing.assert_close(two, 2 * focal_loss(z2, y2, gamma, "none"))
    with pytest.raises(InputError, match=r"^logits: expected at least two classes"):
        dual_focal_two_term_loss(torch.zeros(2, 1), torch.tensor([0, 0]), 1.0)
