"""Tests of the held-out guard of Neural Clamping."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from calibkit.calibrators import TemperatureScaling
from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.core.errors import InputError
from tests.calibrators.model.clamping.problems import SHAPE, focal_np, linear_model, problem

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
    assert nc.guard_ == "delta kept"
    assert nc.holdout_ts_loss_ is not None
    assert nc.holdout_losses_[0] < nc.holdout_ts_loss_
    assert nc.guard.startswith("delta kept (held-out NLL ")
    # the held-out NLLs, recomputed: each candidate's T fitted on the learning part by
    # the focal loss it was learnt with
    held = torch.randperm(400, generator=torch.Generator().manual_seed(0))[:100]
    learn = np.setdiff1d(np.arange(400), held.numpy())
    for delta, loss in zip((nc.delta_, torch.zeros(SHAPE)), nc.holdout_losses_, strict=True):
        with torch.no_grad():
            z = model(x + 1.0 + delta).double().numpy()
        t = exact_log_t(z[learn], y.numpy()[learn], gamma)
        expected = focal_np(z[held.numpy()] / math.exp(t), y.numpy()[held.numpy()], 0.0)
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
    assert nc.guard_ == "delta dropped"  # gamma 0 and delta = 0: temperature scaling itself
    assert torch.equal(nc.delta_, torch.zeros(SHAPE))
    assert math.isnan(nc.sgd_log_temperature_)
    ts = TemperatureScaling().fit(model(x).detach().numpy(), y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)
    with pytest.raises(InputError, match=r"^view:"):
        nc.ablation("sgd")
    plain = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    assert plain.delta_kept_
    assert plain.holdout_losses_ == []
    assert (plain.guard_, plain.guard, plain.holdout_ts_loss_) == ("no hold-out",) * 2 + (None,)


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
    assert held.guard_ == "delta dropped"
    assert torch.equal(held.delta_, torch.zeros(SHAPE))
    ts = TemperatureScaling().fit(model(x).detach().numpy(), y.numpy())
    assert held.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)


def test_holdout_returns_temperature_scaling_where_the_focal_fit_loses_on_held_out_nll() -> None:
    """A pool of large focal exponents (ranked by the fast variant, one joint fit): each
    candidate's temperature minimises its focal loss, far from the NLL's, and the learnt
    delta is worse still; temperature scaling has the lower held-out NLL, so it is the fit
    (delta = 0, T by NLL on the whole calibration set), and the fit says so."""
    model, x, y = problem(n=400)
    sgd = SGDSettings(epochs=3, batch_size=50, progress=False)
    nc = NeuralClamping(model, gamma=(3.0, 5.0), gamma_select="fast", holdout=0.25, sgd=sgd)
    nc.fit(x, y)
    assert nc.guard_ == "temperature scaling"
    assert not nc.delta_kept_
    assert torch.equal(nc.delta_, torch.zeros(SHAPE))
    assert math.isnan(nc.sgd_log_temperature_)
    z = model(x).detach().double().numpy()
    ts = TemperatureScaling().fit(z, y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)  # two 1-D optimisers
    # temperature scaling's held-out NLL, recomputed: fitted on the learning part
    held = torch.randperm(400, generator=torch.Generator().manual_seed(0))[:100].numpy()
    learn = np.setdiff1d(np.arange(400), held)
    ts_learn = TemperatureScaling().fit(z[learn], y.numpy()[learn])
    ts_nll = focal_np(z[held] / ts_learn.temperature_, y.numpy()[held], 0.0)
    assert nc.holdout_ts_loss_ == pytest.approx(ts_nll, rel=1e-5)  # two 1-D optimisers
    assert nc.holdout_ts_loss_ < min(nc.holdout_losses_)  # the focal fit lost there
    assert nc.guard.startswith(f"temperature scaling (held-out NLL {nc.holdout_ts_loss_:.4g} vs ")
    # the fit returned, judged as the guard judges (T fitted by NLL on the learning part)
    zl = nc.logits(x) * nc.temperature_
    returned = focal_np(
        zl[held] / math.exp(exact_log_t(zl[learn], y.numpy()[learn], 0.0)), y.numpy()[held], 0.0
    )
    assert returned <= ts_nll * (1 + 1e-6)  # the same model; float32 passes, 1-D optimisers


def test_holdout_needs_samples_on_both_sides() -> None:
    model, x, y = problem(n=3)
    with pytest.raises(InputError, match=r"^holdout:"):
        NeuralClamping(model, holdout=0.1, sgd=SGDSettings(epochs=1, progress=False)).fit(x, y)
