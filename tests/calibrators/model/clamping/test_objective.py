"""Tests of the Neural Clamping objective and its exact temperature step."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from calibkit.calibrators import TemperatureScaling
from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.objective import (
    default_lam,
    fit_focal_temperature,
    focal_loss_np,
    objective,
)
from tests.calibrators.model.clamping.problems import focal_np, problem

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("gamma", [0.5, 1.0, 3.0])
def test_zero_delta_is_focal_temperature_scaling(gamma: float) -> None:
    model, x, y = problem()
    nc = NeuralClamping(
        model, gamma=gamma, init="zero", train="temperature", sgd=SGDSettings(progress=False)
    )
    nc.fit(x, y)
    with torch.no_grad():
        z = model(x).double().numpy()
    ref = minimize_scalar(
        lambda s: focal_np(z / math.exp(s), y.numpy(), gamma),
        bounds=(math.log(0.05), math.log(20.0)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert nc.temperature_ == pytest.approx(math.exp(ref.x), rel=1e-3)
    assert nc.temperature_ > 1.2  # the problem is overconfident
    assert torch.count_nonzero(nc.delta_) == 0


def test_gamma_zero_matches_temperature_scaling() -> None:
    model, x, y = problem()
    nc = NeuralClamping.focal_temperature_scaling(
        model, gamma=0.0, sgd=SGDSettings(progress=False)
    ).fit(x, y)
    with torch.no_grad():
        z = model(x).numpy()
    ts = TemperatureScaling().fit(z, y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-3)
    assert np.allclose(nc.predict_proba(x), ts.predict_proba(z), atol=1e-5)


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_final_temperature_is_the_exact_minimum_at_the_learnt_delta(gamma: float) -> None:
    model, x, y = problem()
    sgd = SGDSettings(epochs=4, batch_size=64, progress=False)
    nc = NeuralClamping(model, init="random", gamma=gamma, sgd=sgd).fit(x, y)
    plain = NeuralClamping(model, init="random", gamma=gamma, sgd=sgd, refine_temperature=False)
    plain.fit(x, y)
    assert torch.equal(nc.delta_, plain.delta_)  # the SGD is the same
    assert nc.sgd_log_temperature_ == plain.log_temperature_ == plain.sgd_log_temperature_
    z = nc.ablation("delta_only").logits(x)
    assert nc.log_temperature_ == pytest.approx(fit_focal_temperature(z, y.numpy(), gamma))
    # at lr 1e-3 the SGD barely moves T (the model is overconfident by a factor 2) ...
    assert abs(nc.sgd_log_temperature_) < 0.2
    assert nc.temperature_ > 1.5
    # ... and the exact step never raises the objective the SGD was minimising
    yn = y.numpy()
    assert focal_np(z / nc.temperature_, yn, gamma) <= focal_np(
        z / math.exp(nc.sgd_log_temperature_), yn, gamma
    )


def test_with_delta_at_zero_the_joint_fit_is_temperature_scaling() -> None:
    model, x, y = problem()
    nc = NeuralClamping(
        model, init="zero", gamma=0.0, sgd=SGDSettings(lr=1e-12, epochs=1, progress=False)
    )
    nc.fit(x, y)
    ts = TemperatureScaling().fit(model(x).detach().double().numpy(), y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-6)


def _old_focal(logits: torch.Tensor, labels: torch.Tensor, gamma: float) -> torch.Tensor:
    """The focal loss Neural Clamping had of its own before it used calibkit.losses'."""
    logp = torch.log_softmax(logits, dim=1).gather(1, labels.view(-1, 1)).squeeze(1)
    if gamma == 0:
        return -logp.mean()
    return -((1.0 - logp.exp()).clamp_min(0.0).pow(gamma) * logp).mean()


@pytest.mark.parametrize("gamma", [0.0, 0.5, 1.0, 2.0, 3.0])
def test_objective_agrees_with_the_former_focal_loss(gamma: float) -> None:
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(200, 5, generator=gen) * 3
    y = torch.randint(0, 5, (200,), generator=gen)
    delta = torch.randn(2, 3, generator=gen)
    got = objective(z, y, delta, gamma, 0.1)
    old = _old_focal(z, y, gamma) + 0.1 * delta.pow(2).sum()
    assert float(got) == pytest.approx(float(old), rel=1e-6, abs=1e-7)
    expected = focal_np(z.double().numpy(), y.numpy(), gamma) + 0.1 * float(
        delta.double().pow(2).sum()
    )
    assert float(got) == pytest.approx(expected, rel=1e-5)
    assert focal_loss_np(z.numpy(), y.numpy(), gamma) == pytest.approx(
        focal_np(z.double().numpy(), y.numpy(), gamma), rel=1e-12
    )


def test_objective_gradient_is_finite_where_the_target_is_certain() -> None:
    """p_y = 1 in float32 and gamma < 1: the former loss had an infinite derivative there."""
    z = torch.tensor([[40.0, 0.0], [0.0, 1.0]], requires_grad=True)
    y = torch.tensor([0, 1])
    objective(z, y, torch.zeros(1), 0.5, 0.0).backward()
    assert z.grad is not None
    assert bool(torch.isfinite(z.grad).all())
    w = z.detach().clone().requires_grad_(True)
    _old_focal(w, y, 0.5).backward()
    assert w.grad is not None
    assert not bool(torch.isfinite(w.grad).all())


def test_objective_by_hand() -> None:
    """Two classes, logits (0, 0): p_y = 1/2, FL_1 = 0.5 log 2; ||delta||^2 = 2."""
    got = objective(torch.zeros(1, 2), torch.tensor([0]), torch.ones(2), 1.0, 0.25)
    assert float(got) == pytest.approx(0.5 * math.log(2) + 0.5, rel=1e-6)
    assert default_lam(np.zeros((1, 2)), np.array([0]), 0.0) == pytest.approx(0.1 * math.log(2))
