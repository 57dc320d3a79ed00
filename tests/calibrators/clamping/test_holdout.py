"""Tests of the held-out guard of Neural Clamping."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from calibkit.calibrators import TemperatureScaling
from calibkit.calibrators.clamping import NeuralClamping, SGDSettings
from calibkit.core.errors import InputError
from tests.calibrators.clamping.problems import SHAPE, focal_np, linear_model, problem

pytestmark = pytest.mark.usefixtures("one_thread")


def exact_log_t(z: np.ndarray, y: np.ndarray, gamma: float) -> float:
    res = minimize_scalar(
        lambda t: focal_np(z / math.exp(t), y, gamma),
        bounds=(-5, 5),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.x)


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_holdout_keeps_a_delta_that_helps_on_held_out_data(gamma: float) -> None:
    """Inputs shifted by +1 from what the model saw: delta = -1 helps on any data."""
    model, x, y = problem(n=400)
    nc = NeuralClamping(
        model,
        gamma=gamma,
        holdout=0.25,
        init="zero",
        lam=0.0,
        sgd=SGDSettings(lr=0.05, epochs=30, batch_size=50, progress=False),
    ).fit(x + 1.0, y)
    assert nc.delta_kept_
    assert nc.holdout_losses_[0] < nc.holdout_losses_[1]
    assert float(nc.delta_.mean()) < -0.3
    # the held-out losses, recomputed: each candidate's T fitted on the learning part
    held = torch.randperm(400, generator=torch.Generator().manual_seed(0))[:100]
    learn = np.setdiff1d(np.arange(400), held.numpy())
    for delta, loss in zip((nc.delta_, torch.zeros(SHAPE)), nc.holdout_losses_, strict=True):
        with torch.no_grad():
            z = model(x + 1.0 + delta).double().numpy()
        t = exact_log_t(z[learn], y.numpy()[learn], gamma)
        expected = focal_np(z[held.numpy()] / math.exp(t), y.numpy()[held.numpy()], gamma)
        assert loss == pytest.approx(expected, rel=1e-6)


def test_holdout_drops_a_delta_that_only_fits_the_learning_part() -> None:
    """80 samples, a large step, no penalty: the learnt delta fits the learning part and
    loses on the held-out part, so delta = 0 is kept, and the fit is then temperature
    scaling (NLL) on the whole calibration set."""
    model, x, y = problem(n=80)
    sgd = SGDSettings(lr=0.2, epochs=60, batch_size=20, progress=False)
    kw = {"gamma": 0.0, "init": "random", "lam": 0.0, "sgd": sgd}
    nc = NeuralClamping(model, holdout=0.25, **kw).fit(x, y)  # type: ignore[arg-type]
    assert not nc.delta_kept_
    assert nc.holdout_losses_[0] >= nc.holdout_losses_[1]
    assert torch.equal(nc.delta_, torch.zeros(SHAPE))
    assert math.isnan(nc.sgd_log_temperature_)
    ts = TemperatureScaling().fit(model(x).detach().numpy(), y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)
    with pytest.raises(InputError, match=r"^view:"):
        nc.ablation("sgd")
    plain = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    assert plain.delta_kept_
    assert plain.holdout_losses_ == []


def test_holdout_guards_the_fast_variant_against_a_wrecking_initial_delta() -> None:
    """One input dimension spans 1% of its channel's range: the data-driven delta moves it
    by about 3 standard deviations, and the fast variant needs T = 31 to recover."""
    model = linear_model()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((400, *SHAPE), generator=gen)
    x[:, 0, 0, 0] *= 0.01
    with torch.no_grad():
        p = torch.softmax(model(x) / 2.0, dim=1)
    y = torch.multinomial(p, 1, generator=gen).squeeze(1)
    plain = NeuralClamping.fast(model, gamma=0.0, sgd=SGDSettings(progress=False)).fit(x, y)
    held = NeuralClamping.fast(model, gamma=0.0, holdout=0.25, sgd=SGDSettings(progress=False)).fit(
        x, y
    )
    assert float(plain.delta_.abs().max()) > 3.0
    assert plain.temperature_ > 10.0
    assert not held.delta_kept_
    assert torch.equal(held.delta_, torch.zeros(SHAPE))
    ts = TemperatureScaling().fit(model(x).detach().numpy(), y.numpy())
    assert held.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)


def test_holdout_needs_samples_on_both_sides() -> None:
    model, x, y = problem(n=3)
    with pytest.raises(InputError, match=r"^holdout:"):
        NeuralClamping(model, holdout=0.1, sgd=SGDSettings(epochs=1, progress=False)).fit(x, y)
