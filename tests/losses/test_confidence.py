"""The confidence (entropy) penalty (Pereyra et al. 2017) and DCA (Liang et al. 2020)."""

from __future__ import annotations

import math

import pytest
import torch

from calibkit.losses import (
    create_loss,
    cross_entropy,
    dca,
    negative_entropy,
)
from tests.losses.conftest import LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)
P_Y = [P[i][t] for i, t in enumerate(TARGETS)]


def test_confidence_penalty_by_hand() -> None:
    z, y = example()
    entropy = [-sum(p * math.log(p) for p in row) for row in P]
    assert float(negative_entropy(z, y)) == pytest.approx(-sum(entropy) / 3, rel=1e-12)
    # p = (0.2, 0.8): CE - 0.5 H = -log 0.8 - 0.5 * 0.500402 = 0.223144 - 0.250201
    z1 = torch.log(torch.tensor([[0.2, 0.8]], dtype=torch.float64))
    got = float(create_loss("confidence_penalty", beta=0.5)(z1, torch.tensor([1])))
    h = -(0.2 * math.log(0.2) + 0.8 * math.log(0.8))
    assert h == pytest.approx(0.500402, abs=1e-6)
    assert got == pytest.approx(-math.log(0.8) - 0.5 * h, rel=1e-12)


def test_confidence_penalty_beta_zero_is_cross_entropy() -> None:
    z, y = example()
    torch.testing.assert_close(
        create_loss("confidence_penalty", beta=0.0)(z, y), cross_entropy(z, y)
    )


def test_negative_entropy_of_a_one_hot_output_is_zero() -> None:
    z = torch.tensor([[0.0, -1e4, -1e4]], requires_grad=True)
    value = negative_entropy(z, torch.tensor([0]))
    value.backward()
    assert float(value.detach()) == 0.0
    assert z.grad is not None
    assert torch.isfinite(z.grad).all()


def test_dca_by_hand() -> None:
    # confidences 7.389 / 9.4056 = 0.7856 (right), 2.7183 / 4.3248 = 0.6285 (class 1, wrong),
    # 12.1825 / 14.8822 = 0.8186 (class 2, wrong): mean 0.7442, accuracy 1/3, DCA 0.4109
    z, y = example()
    r = [max(row) for row in P]
    assert float(dca(z, y)) == pytest.approx(abs(sum(r) / 3 - 1 / 3), rel=1e-12)
    assert float(dca(z, y)) == pytest.approx(0.4109, abs=1e-4)


def test_dca_is_zero_when_confidence_equals_accuracy() -> None:
    # four samples at confidence 0.75, three of them right: confidence = accuracy = 0.75
    z = torch.log(torch.tensor([[3.0, 1.0]] * 4, dtype=torch.float64))
    y = torch.tensor([0, 0, 0, 1])
    assert float(dca(z, y)) == pytest.approx(0.0, abs=1e-15)
    assert float(create_loss("dca", beta=0.0)(z, y)) == pytest.approx(float(cross_entropy(z, y)))
