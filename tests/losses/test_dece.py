"""DECE (Bohdal et al. 2021): hand values, its parts, the hard limit."""

from __future__ import annotations

import math

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    DECE,
    create_loss,
    cross_entropy,
    dece,
)
from calibkit.losses.dece import soft_accuracy, soft_bins
from calibkit.metrics import ece
from tests.losses.conftest import example


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_dece_by_hand() -> None:
    # two samples, 2 bins (lower edges 0, 0.5), T_bin = T_acc = 0.1, targets 0:
    # p = (0.75, 0.25): r = 0.75, a = 1 - sigmoid(-5); bin scores (0.75, 1.5 - 0.5) / 0.1
    # p = (0.2, 0.8):   r = 0.8,  a = 1 - sigmoid(6);  bin scores (0.8, 1.6 - 0.5) / 0.1
    # u_i1 = sigmoid(score_1 - score_0): sigmoid(2.5) and sigmoid(3)
    r = [0.75, 0.8]
    a = [1 - sigmoid(-5.0), 1 - sigmoid(6.0)]
    u1 = [sigmoid(2.5), sigmoid(3.0)]
    u = [[1 - v, v] for v in u1]
    gap = [sum(u[i][b] * (a[i] - r[i]) for i in range(2)) for b in range(2)]
    want = (abs(gap[0]) + abs(gap[1])) / 2
    assert want == pytest.approx(0.277110, abs=1e-6)
    z = torch.log(torch.tensor([[0.75, 0.25], [0.2, 0.8]], dtype=torch.float64))
    got = dece(z, torch.tensor([0, 0]), n_bins=2, bin_temperature=0.1, accuracy_temperature=0.1)
    assert float(got) == pytest.approx(want, rel=1e-12)


def test_soft_bins_and_accuracy_parts() -> None:
    u = soft_bins(torch.tensor([0.75], dtype=torch.float64), 2, 0.1)
    torch.testing.assert_close(
        u, torch.tensor([[sigmoid(-2.5), sigmoid(2.5)]], dtype=torch.float64)
    )
    # p = (0.45, 0.35, 0.2), target 1 (second), T = 0.1:
    # a = max(0, 1 - sigmoid((0.45 - 0.35) / T) - sigmoid((0.2 - 0.35) / T)) = 1 - s(1) - s(-1.5)
    logp = torch.log(torch.tensor([[0.45, 0.35, 0.2]], dtype=torch.float64))
    got = float(soft_accuracy(logp, torch.tensor([1]), 0.1)[0])
    assert got == pytest.approx(max(0.0, 1 - sigmoid(1.0) - sigmoid(-1.5)), rel=1e-12)


@pytest.mark.parametrize("n_bins", [5, 15])
def test_dece_tends_to_the_binned_ece(n_bins: int) -> None:
    # accuracy 0.6 at every confidence, so the gaps change sign across bins
    g = torch.Generator().manual_seed(n_bins)
    z = torch.randn(2000, 5, generator=g, dtype=torch.float64) * 2
    shift = torch.randint(1, 5, (2000,), generator=g)
    keep = torch.rand(2000, generator=g) < 0.6
    y = torch.where(keep, z.argmax(dim=1), (z.argmax(dim=1) + shift) % 5)
    hard = ece(y.numpy(), logits=z.numpy(), n_bins=n_bins)
    sharp = float(dece(z, y, n_bins, 1e-6, 1e-6))
    assert sharp == pytest.approx(hard, abs=1e-3)
    errors = [abs(float(dece(z, y, n_bins, t, t)) - hard) for t in (0.1, 0.01, 1e-4)]
    assert errors[0] > errors[2]  # sharper temperatures come closer
    assert errors[2] < 1e-3


def test_dece_module_and_loss() -> None:
    z, y = example()
    penalty = DECE(n_bins=10, bin_temperature=0.05, accuracy_temperature=0.02)
    assert float(penalty(z, y)) == pytest.approx(float(dece(z, y, 10, 0.05, 0.02)), rel=1e-12)
    loss = create_loss("dece", beta=2.0, n_bins=10, bin_temperature=0.05, accuracy_temperature=0.02)
    want = cross_entropy(z, y) + 2.0 * dece(z, y, 10, 0.05, 0.02)
    torch.testing.assert_close(loss(z, y), want)
    with pytest.raises(InputError, match=r"^bin_temperature"):
        DECE(bin_temperature=0.0)
