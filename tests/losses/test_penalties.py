"""Penalties (L1 logit norm, MMCE, MDCA, soft-binned ECE) and CombinedLoss."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    MDCA,
    MMCE,
    CombinedLoss,
    CrossEntropyLoss,
    FocalLoss,
    L1LogitNorm,
    SoftECE,
    cross_entropy,
    l1_logit_norm,
    mdca,
    mmce,
    soft_ece,
)
from calibkit.metrics import ece, rmsce
from tests.losses.conftest import EXTREME, LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)


def test_l1_logit_norm_by_hand() -> None:
    want = sum(sum(abs(v) for v in row) for row in LOGITS) / len(LOGITS)
    assert float(l1_logit_norm(*example())) == pytest.approx(want, rel=1e-12)
    assert float(L1LogitNorm()(*example())) == pytest.approx(want, rel=1e-12)


def test_mdca_by_hand() -> None:
    want = 0.0
    for j in range(3):
        mean_p = sum(P[i][j] for i in range(3)) / 3
        freq = sum(t == j for t in TARGETS) / 3
        want += abs(mean_p - freq) / 3
    assert float(mdca(*example())) == pytest.approx(want, rel=1e-12)
    assert float(MDCA()(*example())) == pytest.approx(want, rel=1e-12)


def mmce_reference(probs: np.ndarray, labels: np.ndarray, weighted: bool, width: float) -> float:
    """MMCE by the paper's double sums, one pair at a time."""
    r = probs.max(axis=1)
    c = (probs.argmax(axis=1) == labels).astype(float)
    n = len(r)

    def k(i: int, j: int) -> float:
        return math.exp(-abs(r[i] - r[j]) / width)

    total = 0.0
    if not weighted:
        for i in range(n):
            for j in range(n):
                total += (c[i] - r[i]) * (c[j] - r[j]) * k(i, j) / n**2
        return math.sqrt(total)
    good = [i for i in range(n) if c[i]]
    bad = [i for i in range(n) if not c[i]]
    for i in good:
        for j in good:
            total += (1 - r[i]) * (1 - r[j]) * k(i, j) / len(good) ** 2
    for i in bad:
        for j in bad:
            total += r[i] * r[j] * k(i, j) / len(bad) ** 2
    for i in good:
        for j in bad:
            total -= 2 * (1 - r[i]) * r[j] * k(i, j) / (len(good) * len(bad))
    return math.sqrt(max(total, 0.0))


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("width", [0.4, 0.1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mmce_matches_double_loop(weighted: bool, width: float, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(13, 4, generator=g, dtype=torch.float64) * 2
    y = torch.randint(0, 4, (13,), generator=g)
    want = mmce_reference(torch.softmax(z, 1).numpy(), y.numpy(), weighted, width)
    assert float(mmce(z, y, width, weighted)) == pytest.approx(want, rel=1e-10)
    assert float(MMCE(width, weighted)(z, y)) == pytest.approx(want, rel=1e-10)


def test_mmce_with_only_correct_predictions_keeps_their_term() -> None:
    z = torch.tensor([[2.0, 0.0], [0.0, 1.0], [0.5, 0.0]], dtype=torch.float64)
    y = torch.tensor([0, 1, 0])
    want = mmce_reference(torch.softmax(z, 1).numpy(), y.numpy(), True, 0.4)
    assert want > 0
    assert float(mmce(z, y)) == pytest.approx(want, rel=1e-10)


def soft_ece_by_hand(norm: str) -> float:
    """Two samples, two bins (centres 0.25, 0.75), temperature 0.1."""
    r = [1 / (1 + math.exp(-1.0)), 1 / (1 + math.exp(-0.5))]  # sigmoid(1), sigmoid(0.5)
    c = [1.0, 0.0]  # sample 0 is right, sample 1 predicts class 1 for target 0
    u = []
    for ri in r:
        e = [math.exp(-((ri - xi) ** 2) / 0.1) for xi in (0.25, 0.75)]
        u.append([v / sum(e) for v in e])
    gap = [sum(u[i][b] * (c[i] - r[i]) for i in range(2)) for b in range(2)]
    if norm == "l1":
        return sum(abs(g) for g in gap) / 2
    mass = [u[0][b] + u[1][b] for b in range(2)]
    return math.sqrt(sum(g**2 / (2 * m) for g, m in zip(gap, mass, strict=True)))


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_soft_ece_by_hand(norm: str) -> None:
    z = torch.tensor([[1.0, 0.0], [0.0, 0.5]], dtype=torch.float64)
    y = torch.tensor([0, 0])
    got = soft_ece(z, y, n_bins=2, temperature=0.1, norm=norm)  # type: ignore[arg-type]
    assert float(got) == pytest.approx(soft_ece_by_hand(norm), rel=1e-12)


@pytest.mark.parametrize("n_bins", [5, 15])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_soft_ece_tends_to_the_hard_ece(n_bins: int, dtype: torch.dtype) -> None:
    # accuracy 0.6 at every confidence: under-confident bins below 0.6, over-confident above,
    # so the binning matters (with gaps of one sign the l1 sum would not depend on it)
    g = torch.Generator().manual_seed(n_bins)
    z = (torch.randn(2000, 5, generator=g, dtype=torch.float64) * 2).to(dtype)
    shift = torch.randint(1, 5, (2000,), generator=g)
    keep = torch.rand(2000, generator=g) < 0.6
    y = torch.where(keep, z.argmax(dim=1), (z.argmax(dim=1) + shift) % 5)
    hard = ece(y.numpy(), logits=z.numpy(), n_bins=n_bins)
    hard_l2 = rmsce(y.numpy(), logits=z.numpy(), n_bins=n_bins)
    assert float(soft_ece(z, y, n_bins, 1e-4)) == pytest.approx(hard, abs=1e-3)
    assert float(soft_ece(z, y, n_bins, 1e-4, "l2")) == pytest.approx(hard_l2, abs=1e-3)
    assert abs(float(soft_ece(z, y, n_bins, 0.1)) - hard) > 1e-2  # a wide kernel does differ


PENALTY_FUNCTIONS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "l1": l1_logit_norm,
    "mmce_w": mmce,
    "mmce": lambda z, y: mmce(z, y, weighted=False),
    "mdca": mdca,
    "soft_ece_l1": lambda z, y: soft_ece(z, y, 10, 0.05),
    "soft_ece_l2": lambda z, y: soft_ece(z, y, 10, 0.05, "l2"),
    "soft_ece_cold": lambda z, y: soft_ece(z, y, 15, 1e-4),
}


@pytest.mark.parametrize("name", [n for n in PENALTY_FUNCTIONS if n != "soft_ece_cold"])
def test_penalty_gradcheck(name: str) -> None:
    z = torch.randn(8, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 3, (8,))
    assert torch.autograd.gradcheck(lambda x: PENALTY_FUNCTIONS[name](x, y), (z,))


@pytest.mark.parametrize("name", list(PENALTY_FUNCTIONS))
def test_penalty_gradients_finite_in_float32_at_extremes(name: str) -> None:
    for target in (0, 1):
        z = torch.tensor(EXTREME, requires_grad=True)
        value = PENALTY_FUNCTIONS[name](z, torch.full((len(EXTREME),), target))
        value.backward()
        assert torch.isfinite(value)
        assert z.grad is not None
        assert torch.isfinite(z.grad).all(), (target, z.grad)
    z = torch.tensor([[80.0, 0.0], [0.0, 80.0]], requires_grad=True)  # perfect: penalty ~ 0
    PENALTY_FUNCTIONS[name](z, torch.tensor([0, 1])).backward()
    assert z.grad is not None
    assert torch.isfinite(z.grad).all()


def test_combined_loss_adds_the_weighted_penalty() -> None:
    z, y = example()
    loss = CombinedLoss(FocalLoss(2.0, reduction="sum"), MMCE(), 0.5)
    want = FocalLoss(2.0, reduction="sum")(z, y) + 0.5 * mmce(z, y)
    torch.testing.assert_close(loss(z, y), want)
    plain = CombinedLoss(CrossEntropyLoss(), SoftECE(), 2.0)(z, y)
    torch.testing.assert_close(plain, cross_entropy(z, y) + 2.0 * soft_ece(z, y))


def test_combined_loss_needs_a_scalar_base_and_a_valid_weight() -> None:
    with pytest.raises(InputError, match=r"^base: "):
        CombinedLoss(CrossEntropyLoss("none"), MDCA(), 1.0)
    with pytest.raises(InputError, match=r"^weight: "):
        CombinedLoss(CrossEntropyLoss(), MDCA(), -1.0)


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: MMCE(bandwidth=0.0), "bandwidth"),
        (lambda: MMCE(bandwidth=math.nan), "bandwidth"),
        (lambda: MMCE(weighted="yes"), "weighted"),  # type: ignore[arg-type]
        (lambda: mmce(*example(), bandwidth=-1.0), "bandwidth"),
        (lambda: SoftECE(n_bins=0), "n_bins"),
        (lambda: SoftECE(n_bins=2.5), "n_bins"),  # type: ignore[arg-type]
        (lambda: SoftECE(n_bins=True), "n_bins"),
        (lambda: SoftECE(temperature=0.0), "temperature"),
        (lambda: SoftECE(temperature=math.inf), "temperature"),
        (lambda: SoftECE(norm="l3"), "norm"),  # type: ignore[arg-type]
        (lambda: soft_ece(*example(), temperature=-1.0), "temperature"),
        (lambda: soft_ece(*example(), n_bins=0), "n_bins"),
        (lambda: soft_ece(*example(), norm="max"), "norm"),  # type: ignore[arg-type]
        (lambda: mdca(torch.zeros(2, 2), torch.zeros(3, dtype=torch.int64)), "targets"),
        (lambda: l1_logit_norm(torch.zeros(2), torch.zeros(2, dtype=torch.int64)), "logits"),
    ],
)
def test_invalid_parameters_name_the_parameter(make: Callable[[], object], argument: str) -> None:
    with pytest.raises(InputError, match=f"^{argument}: "):
        make()
