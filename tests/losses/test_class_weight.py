"""The class weight alpha_t of the focal family (Lin et al. 2017)."""

from __future__ import annotations

import math

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    FocalLoss,
    create_loss,
    dual_focal_loss,
    dual_focal_two_term_loss,
    focal_loss,
    inverse_focal_loss,
)
from tests.losses.conftest import LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)
P_Y = [P[i][t] for i, t in enumerate(TARGETS)]


def test_alpha_off_by_default_and_per_class_by_hand() -> None:
    z, y = example()  # targets 0, 0, 1
    plain = focal_loss(z, y, 2.0, "none")
    torch.testing.assert_close(focal_loss(z, y, 2.0, "none", alpha=None), plain)
    weights = [0.2, 0.5, 3.0]
    want = torch.tensor(
        [0.2 * (1 - p) ** 2 * -math.log(p) for p in P_Y[:2]]
        + [0.5 * (1 - P_Y[2]) ** 2 * -math.log(P_Y[2])],
        dtype=z.dtype,
    )
    torch.testing.assert_close(focal_loss(z, y, 2.0, "none", alpha=weights), want)


def test_scalar_alpha_is_lin_et_al_binary_weight() -> None:
    # p = (1/2, 1/2), gamma 1: focal 0.5 log 2 per sample; alpha 0.25 weighs class 1 by 0.25
    # and class 0 by 0.75: (0.75 + 0.25) / 2 * 0.5 log 2 = 0.25 log 2
    z, y = torch.zeros(2, 2, dtype=torch.float64), torch.tensor([0, 1])
    got = FocalLoss(gamma=1.0, alpha=0.25)(z, y)
    assert float(got) == pytest.approx(0.25 * math.log(2), rel=1e-12)
    # alpha 0.5 is half the unweighted loss, for every loss of the family
    z, y = torch.tensor([[2.0, -1.0], [0.3, 0.9]], dtype=torch.float64), torch.tensor([0, 0])
    for loss in (focal_loss, inverse_focal_loss, dual_focal_loss, dual_focal_two_term_loss):
        torch.testing.assert_close(loss(z, y, 2.0, alpha=0.5), 0.5 * loss(z, y, 2.0))


def test_alpha_is_checked() -> None:
    z, y = example()
    with pytest.raises(InputError, match=r"^alpha: expected a list of one weight per class"):
        focal_loss(z, y, 2.0, alpha=0.25)  # a number needs two classes; here 3
    with pytest.raises(InputError, match=r"^alpha: expected 3 weights"):
        focal_loss(z, y, 2.0, alpha=[1.0, 2.0])
    with pytest.raises(InputError, match=r"^alpha"):
        FocalLoss(alpha=1.5)
    with pytest.raises(InputError, match=r"^alpha"):
        create_loss("focal", alpha=[1.0, -1.0, 1.0])
    assert repr(create_loss("dual_focal", alpha=[1, 2, 3])).endswith("alpha=(1.0, 2.0, 3.0))")
