"""Focal, adaptive (FLSD-53), inverse and dual focal losses: hand values, limits, gradients."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    AdaptiveFocalLoss,
    DualFocalLoss,
    FocalLoss,
    InverseFocalLoss,
    adaptive_focal_loss,
    cross_entropy,
    dual_focal_loss,
    focal_loss,
    inverse_focal_loss,
)
from tests.losses.conftest import EXTREME, LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)
P_Y = [P[i][t] for i, t in enumerate(TARGETS)]
GAMMA_LOSSES: list[Callable[..., torch.Tensor]] = [
    focal_loss,
    adaptive_focal_loss,
    inverse_focal_loss,
    dual_focal_loss,
]


def hand(weights: list[float]) -> torch.Tensor:
    return torch.tensor([-w * math.log(p) for w, p in zip(weights, P_Y, strict=True)])


def test_example_covers_every_case() -> None:
    assert P_Y[0] > 0.5
    assert 0.2 <= P_Y[1] < 0.5
    assert P_Y[2] < 0.2
    assert P[2][0] == P[2][1]  # the third target is tied with class 0


def test_focal_by_hand() -> None:
    z, y = example()
    want = hand([(1 - p) ** 2 for p in P_Y])
    torch.testing.assert_close(focal_loss(z, y, 2.0, "none"), want.to(z.dtype))
    torch.testing.assert_close(FocalLoss(2.0)(z, y), want.mean().to(z.dtype))


def test_inverse_focal_by_hand() -> None:
    z, y = example()
    want = hand([(1 + p) ** 1.5 for p in P_Y])
    torch.testing.assert_close(inverse_focal_loss(z, y, 1.5, "none"), want.to(z.dtype))


def test_adaptive_focal_by_hand() -> None:
    z, y = example()
    gammas = [1.0, 3.0, 5.0]  # p_y >= 0.5 -> gamma (1 here), [0.2, 0.5) -> 3, < 0.2 -> 5
    want = hand([(1 - p) ** g for p, g in zip(P_Y, gammas, strict=True)])
    torch.testing.assert_close(adaptive_focal_loss(z, y, 1.0, "none"), want.to(z.dtype))


def test_dual_focal_by_hand() -> None:
    # p_j: sample 0 (correct) the runner-up; sample 1 (wrong) the class *below* the target,
    # not the larger predicted class; sample 2 (tied with a class, below the third) none.
    p_j = [P[0][1], P[1][2], 0.0]
    assert P[1][1] > P_Y[1] > P[1][2]
    want = hand([(1 - p + q) ** 2 for p, q in zip(P_Y, p_j, strict=True)])
    z, y = example()
    torch.testing.assert_close(dual_focal_loss(z, y, 2.0, "none"), want.to(z.dtype))


@pytest.mark.parametrize("loss", [focal_loss, inverse_focal_loss, dual_focal_loss])
def test_gamma_zero_is_cross_entropy(loss: Callable[..., torch.Tensor]) -> None:
    z, y = example()
    torch.testing.assert_close(loss(z, y, 0.0, "none"), cross_entropy(z, y, "none"))


def test_adaptive_focal_at_gamma_zero_is_cross_entropy_where_p_y_is_at_least_half() -> None:
    z, y = example()
    got = adaptive_focal_loss(z, y, 0.0, "none")
    torch.testing.assert_close(got[0], cross_entropy(z, y, "none")[0])
    assert got[1] < cross_entropy(z, y, "none")[1]


def test_adaptive_focal_default_is_flsd_53() -> None:
    z, y = example()
    want = hand([(1 - p) ** g for p, g in zip(P_Y, [3.0, 3.0, 5.0], strict=True)])
    torch.testing.assert_close(AdaptiveFocalLoss()(z, y), want.mean().to(z.dtype))


def test_adaptive_focal_gamma_carries_no_gradient() -> None:
    """The gradient is that of focal losses with the per-sample gamma held fixed."""
    z, y = example()
    z.requires_grad_(True)
    adaptive_focal_loss(z, y, 1.0, "sum").backward()
    assert z.grad is not None
    got = z.grad.clone()
    z.grad = None
    sum(focal_loss(z[i : i + 1], y[i : i + 1], g) for i, g in enumerate([1.0, 3.0, 5.0])).backward()
    torch.testing.assert_close(got, z.grad)


@pytest.mark.parametrize("gamma", [0.0, 0.01, 0.5, 1.0, 2.5, 5.0])
@pytest.mark.parametrize("loss", GAMMA_LOSSES)
def test_finite_float32_gradients_at_p_zero_and_one(
    loss: Callable[..., torch.Tensor], gamma: float
) -> None:
    for target in (0, 1):
        z = torch.tensor(EXTREME, requires_grad=True)
        value = loss(z, torch.full((len(EXTREME),), target), gamma, "sum")
        value.backward()
        assert torch.isfinite(value)
        assert z.grad is not None
        assert torch.isfinite(z.grad).all(), (target, z.grad)


def test_focal_value_at_p_one_is_zero_and_gradient_is_zero() -> None:
    z = torch.tensor([[80.0, 0.0]], requires_grad=True)
    value = focal_loss(z, torch.tensor([0]), 0.5)
    value.backward()
    assert float(value.detach()) == 0.0
    assert z.grad is not None
    assert float(z.grad.abs().max()) == 0.0


@pytest.mark.parametrize("gamma", [0.5, 2.0])
@pytest.mark.parametrize("loss", GAMMA_LOSSES)
def test_gradcheck(loss: Callable[..., torch.Tensor], gamma: float) -> None:
    # random logits: no ties (dual focal's p_j and FLSD's brackets are piecewise smooth)
    z = torch.randn(6, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 4, (6,))
    assert torch.autograd.gradcheck(lambda x: loss(x, y, gamma, "none"), (z,))


@pytest.mark.parametrize("loss", GAMMA_LOSSES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reduction_matches_per_sample(loss: Callable[..., torch.Tensor], reduction: str) -> None:
    z, y = torch.randn(7, 4), torch.randint(0, 4, (7,))
    per_sample = loss(z, y, 1.5, "none")
    assert per_sample.shape == (7,)
    want = per_sample.mean() if reduction == "mean" else per_sample.sum()
    torch.testing.assert_close(loss(z, y, 1.5, reduction), want)


@pytest.mark.parametrize("gamma", [-0.5, math.nan, math.inf, True, "2", None])
@pytest.mark.parametrize("cls", [FocalLoss, AdaptiveFocalLoss, InverseFocalLoss, DualFocalLoss])
def test_invalid_gamma(cls: type[torch.nn.Module], gamma: object) -> None:
    with pytest.raises(InputError, match=r"^gamma: expected a finite number >= 0"):
        cls(gamma)
    with pytest.raises(InputError, match=r"^gamma: "):
        focal_loss(*example(), gamma)  # type: ignore[arg-type]
