"""Tests of the data-driven initial perturbation (Theorem 3.2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.init import (
    data_driven_delta,
    entropy_gradient,
    input_bounds,
    pixel_range,
)
from tests.calibrators.model.clamping.problems import problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("input_range", [None, (-5.0, 5.0), ((-6.0, -5.0), (5.0, 7.0))])
def test_data_driven_delta_keeps_inputs_in_range(input_range: object) -> None:
    model, x, y = problem()
    nc = NeuralClamping.fast(model, input_range=input_range, sgd=SGDSettings(progress=False)).fit(
        x, y
    )
    moved = x + nc.delta_
    if input_range is None:  # per-channel range of the calibration inputs
        alpha = x.amin(dim=(0, 2, 3)).view(2, 1, 1)
        beta = x.amax(dim=(0, 2, 3)).view(2, 1, 1)
    else:
        lo, hi = input_range  # type: ignore[misc]
        alpha = torch.tensor(lo, dtype=torch.float32).reshape(-1, 1, 1)
        beta = torch.tensor(hi, dtype=torch.float32).reshape(-1, 1, 1)
    assert bool((moved >= alpha).all() and (moved <= beta).all())
    assert torch.count_nonzero(nc.delta_) > 0


def test_data_driven_delta_by_hand() -> None:
    """f(x) = (x0 - x1, 0): the entropy grows as the margin x0 - x1 shrinks towards 0.

    Every input has x0 > x1 (the model prefers class 0), so dH/dx0 < 0 and dH/dx1 > 0:
    delta = (alpha - l0, beta - mu1) = (-1 - min x0, 2 - max x1).
    """
    model = nn.Sequential(nn.Flatten(), nn.Linear(2, 2, bias=False)).eval()
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([[1.0, -1.0], [0.0, 0.0]]))
    x = torch.tensor([[0.5, -0.5], [0.2, 0.0], [0.9, 0.3]]).view(3, 1, 1, 2)
    # by hand: p1 = sigmoid(-m), dH/dm = -m p0 p1 (binary entropy), dm/dx = (1, -1)
    m = np.array([1.0, 0.2, 0.6])
    p0 = 1 / (1 + np.exp(-m))
    dh_dm = -m * p0 * (1 - p0)
    g_hand = np.array([dh_dm.sum(), -dh_dm.sum()])
    g = entropy_gradient(model, x, 2, torch.device("cpu")).view(-1).numpy()
    assert np.allclose(g, g_hand, rtol=1e-5)
    low, high = input_bounds(x, 2, torch.device("cpu"))
    alpha, beta = torch.full_like(low, -1.0), torch.full_like(low, 2.0)
    delta = data_driven_delta(torch.from_numpy(g).view(1, 1, 2), low, high, alpha, beta)
    assert delta.view(-1).tolist() == pytest.approx([-1.0 - 0.2, 2.0 - 0.3])
    nc = NeuralClamping.fast(model, input_range=(-1.0, 2.0), sgd=SGDSettings(progress=False))
    nc.fit(x, torch.tensor([0, 1, 0]))
    assert nc.delta_.view(-1).tolist() == pytest.approx([-1.2, 1.7])
    # a smaller step (margins 1, 0.2, 0.6 -> 0, -0.8, -0.4) raises the total entropy
    nc = NeuralClamping.fast(model, input_range=(-0.1, 1.0), sgd=SGDSettings(progress=False))
    nc.fit(x, torch.tensor([0, 1, 0]))
    assert nc.delta_.view(-1).tolist() == pytest.approx([-0.3, 0.7])
    with torch.no_grad():
        h = [
            float(-(torch.softmax(z, 1) * torch.log_softmax(z, 1)).sum())
            for z in (model(x), model(x + nc.delta_))
        ]
    assert h[1] > h[0]


def test_pixel_range() -> None:
    lo, hi = pixel_range((0.5, 0.25), (0.5, 0.25))
    assert lo == (-1.0, -1.0)
    assert hi == (1.0, 3.0)
