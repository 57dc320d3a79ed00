"""Cross-entropy, label smoothing and Brier: hand values, limits, checks, gradcheck."""

from __future__ import annotations

import math

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    BrierLoss,
    LabelSmoothingLoss,
    brier_loss,
    cross_entropy,
    label_smoothing_loss,
)
from tests.losses.conftest import LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)


def test_cross_entropy_by_hand() -> None:
    z, y = example()
    want = [-math.log(P[i][t]) for i, t in enumerate(TARGETS)]
    torch.testing.assert_close(cross_entropy(z, y, "none"), torch.tensor(want, dtype=z.dtype))
    assert float(cross_entropy(z, y)) == pytest.approx(sum(want) / 3, rel=1e-12)
    assert float(cross_entropy(z, y, "sum")) == pytest.approx(sum(want), rel=1e-12)


def test_label_smoothing_by_hand() -> None:
    z, y = example()
    eps = 0.1
    want = [
        -(1 - eps) * math.log(P[i][t]) - eps / 3 * sum(math.log(p) for p in P[i])
        for i, t in enumerate(TARGETS)
    ]
    got = LabelSmoothingLoss(eps, reduction="none")(z, y)
    torch.testing.assert_close(got, torch.tensor(want, dtype=z.dtype))


def test_label_smoothing_is_cross_entropy_against_the_smoothed_target() -> None:
    z, y = example()
    eps = 0.3
    q = torch.full((3, 3), eps / 3, dtype=z.dtype)
    q[torch.arange(3), y] += 1 - eps
    want = -(q * torch.log(torch.tensor(P, dtype=z.dtype))).sum(dim=1)
    torch.testing.assert_close(label_smoothing_loss(z, y, eps, "none"), want)


def test_label_smoothing_zero_is_cross_entropy() -> None:
    z, y = example()
    torch.testing.assert_close(label_smoothing_loss(z, y, 0.0, "none"), cross_entropy(z, y, "none"))


def test_brier_by_hand() -> None:
    z, y = example()
    want = [sum((p - (k == t)) ** 2 for k, p in enumerate(P[i])) for i, t in enumerate(TARGETS)]
    torch.testing.assert_close(BrierLoss("none")(z, y), torch.tensor(want, dtype=z.dtype))
    assert float(brier_loss(z, y)) == pytest.approx(sum(want) / 3, rel=1e-12)


def test_extreme_logits_do_not_overflow() -> None:
    z = torch.tensor([[1000.0, 0.0], [0.0, 1000.0]])
    y = torch.tensor([0, 0])
    torch.testing.assert_close(cross_entropy(z, y, "none"), torch.tensor([0.0, 1000.0]))
    torch.testing.assert_close(brier_loss(z, y, "none"), torch.tensor([0.0, 2.0]))


@pytest.mark.parametrize("epsilon", [-0.1, 1.0, 1.5, math.nan, True, "0.1", None])
def test_invalid_epsilon(epsilon: object) -> None:
    with pytest.raises(InputError, match=r"^epsilon: "):
        LabelSmoothingLoss(epsilon)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^epsilon: "):
        label_smoothing_loss(*example(), epsilon)  # type: ignore[arg-type]


def test_invalid_reduction() -> None:
    with pytest.raises(InputError, match=r"^reduction: expected one of mean, sum, none"):
        BrierLoss("avg")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^reduction: "):
        cross_entropy(*example(), reduction="batchmean")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("logits", "targets", "argument"),
    [
        (torch.zeros(3, 2, dtype=torch.int64), torch.zeros(3, dtype=torch.int64), "logits"),
        (torch.zeros(3), torch.zeros(3, dtype=torch.int64), "logits"),
        ([[0.0, 1.0]], torch.zeros(1, dtype=torch.int64), "logits"),
        (torch.zeros(0, 2), torch.zeros(0, dtype=torch.int64), "logits"),
        (torch.zeros(3, 2), torch.zeros(3), "targets"),
        (torch.zeros(3, 2), torch.zeros(3, dtype=torch.int32), "targets"),
        (torch.zeros(3, 2), torch.zeros(2, dtype=torch.int64), "targets"),
        (torch.zeros(3, 2), torch.zeros(3, 1, dtype=torch.int64), "targets"),
    ],
)
def test_invalid_inputs(logits: object, targets: object, argument: str) -> None:
    with pytest.raises(InputError, match=f"^{argument}: "):
        cross_entropy(logits, targets)  # type: ignore[arg-type]


def test_gradcheck() -> None:
    z, y = example()
    z.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: cross_entropy(x, y), (z,))
    assert torch.autograd.gradcheck(lambda x: label_smoothing_loss(x, y, 0.2, "none"), (z,))
    assert torch.autograd.gradcheck(lambda x: brier_loss(x, y, "sum"), (z,))
