"""The survey's training-time methods: class weight alpha, two-term dual focal, the confidence
penalty, DCA and DECE, against hand-computed values and their limits."""

from __future__ import annotations

import math

import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.losses import (
    DECE,
    FocalLoss,
    create_loss,
    cross_entropy,
    dca,
    dece,
    dual_focal_loss,
    dual_focal_two_term_loss,
    focal_loss,
    inverse_focal_loss,
    negative_entropy,
)
from calibkit.losses.dece import soft_accuracy, soft_bins
from calibkit.metrics import ece
from tests.losses.conftest import LOGITS, TARGETS, example, softmax_rows

P = softmax_rows(LOGITS)
P_Y = [P[i][t] for i, t in enumerate(TARGETS)]


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


# --- class weight alpha_t (Lin et al. 2017) -------------------------------------------


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


# --- dual focal, the survey's two-term form ----------------------------------------------


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


# --- confidence (entropy) penalty, Pereyra et al. 2017 -----------------------------------


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


# --- DCA, Liang et al. 2020 ------------------------------------------------------------


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


# --- DECE, Bohdal et al. 2021 ------------------------------------------------------------


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
