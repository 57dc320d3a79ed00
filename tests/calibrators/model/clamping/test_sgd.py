"""Tests of the SGD of Neural Clamping."""

from __future__ import annotations

import copy
import dataclasses
import logging

import numpy as np
import pytest
import torch

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.core.errors import InputError
from calibkit.core.progress import progress_of
from tests.calibrators.model.clamping.problems import conv_bn, focal_np, problem

pytestmark = pytest.mark.usefixtures("one_thread")


def test_joint_fit_is_deterministic_and_lowers_the_loss() -> None:
    model, x, y = problem()
    kw = {"init": "random", "sgd": SGDSettings(epochs=15, batch_size=64, lr=0.01, progress=False)}
    a = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    b = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    assert torch.equal(a.delta_, b.delta_)
    assert a.temperature_ == b.temperature_
    assert a.history_ == b.history_
    assert len(a.history_) == 15
    assert a.history_[-1] < a.history_[0]
    assert a.temperature_ > 1.0  # an overconfident model is cooled
    c = NeuralClamping(model, **{**kw, "seed": 1}).fit(x, y)  # type: ignore[arg-type]
    assert not torch.equal(a.delta_, c.delta_)


def test_model_is_never_changed() -> None:
    model, x, y = problem()
    model[1].bias.requires_grad_(True)
    model[1].weight.requires_grad_(False)
    before = copy.deepcopy(model.state_dict())
    nc = NeuralClamping(model, sgd=SGDSettings(epochs=3, batch_size=64, progress=False)).fit(x, y)
    nc.predict_proba(x)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not model.training
    assert model[1].bias.requires_grad
    assert not model[1].weight.requires_grad
    assert model[1].weight.grad is None


def test_train_delta_keeps_t_at_one_and_default_lambda() -> None:
    model, x, y = problem()
    nc = NeuralClamping(model, train="delta", sgd=SGDSettings(epochs=2, progress=False)).fit(x, y)
    assert nc.temperature_ == 1.0
    with torch.no_grad():
        z0 = model(x + NeuralClamping.fast(model, sgd=SGDSettings(progress=False)).fit(x, y).delta_)
    assert nc.lam_ == pytest.approx(0.1 * focal_np(z0.double().numpy(), y.numpy(), 1.0))


def test_progress_is_logged_not_printed(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    model, x, y = problem()
    with caplog.at_level(logging.INFO, logger="calibkit"):
        NeuralClamping(model, sgd=SGDSettings(epochs=2, progress=True)).fit(x, y)
    events = [progress_of(r) for r in caplog.records]
    steps = [(e.step, e.total) for e in events if e is not None and "neural clamping" in e.label]
    assert steps[-2:] == [(1, 2), (2, 2)]
    assert "loss" in caplog.records[-1].getMessage()
    assert capsys.readouterr() == ("", "")


def test_bfloat16_fit_is_close_to_float32_and_predicts_in_float32() -> None:
    model = conv_bn()
    x, y = torch.randn(96, 3, 4, 4), torch.arange(96) % 3
    sgd = SGDSettings(epochs=5, batch_size=32, lr=0.05, progress=False)
    bf16 = dataclasses.replace(sgd, precision="bfloat16")
    full = NeuralClamping(model, sgd=sgd).fit(x, y)
    low = NeuralClamping(model, sgd=bf16).fit(x, y)
    again = NeuralClamping(model, sgd=bf16).fit(x, y)
    assert torch.equal(low.delta_, again.delta_)  # deterministic
    assert low.delta_.dtype == torch.float32
    start = (
        NeuralClamping.fast(model, sgd=SGDSettings(progress=False)).fit(x, y).delta_
    )  # the shared init
    step = (full.delta_ - start).norm()
    assert step > 0
    assert (low.delta_ - full.delta_).norm() < 0.05 * step  # rounds the passes, not the method
    assert low.temperature_ == pytest.approx(full.temperature_, rel=0.02)
    assert not torch.equal(low.delta_, full.delta_)  # the option does take effect
    assert low.predict_proba(x).dtype == np.float64
    with pytest.raises(InputError, match=r"^precision:"):
        NeuralClamping(model, sgd=SGDSettings(precision="float16"))


def _huge_logits_problem() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    """A linear model whose logits reach about 1e6 (weights scaled by 1e6)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    with torch.no_grad():
        model.weight.mul_(1e6)
    x, y = torch.randn(64, 4), torch.arange(64) % 3
    with torch.no_grad():
        scale = float(model(x).abs().max())
    assert 1e5 < scale < 1e7
    return model, x, y


def test_huge_logits_stay_finite_through_gradient_clipping() -> None:
    model, x, y = _huge_logits_problem()
    nc = NeuralClamping(model, init="zero", sgd=SGDSettings(epochs=2, batch_size=8, progress=False))
    p = nc.fit(x, y).predict_proba(x)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-6)
    assert nc.temperature_ > 10.0  # T grows with the logits (here to its search bound, 100)


def test_a_diverging_fit_stops_with_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # without the clipping, SGD on log T at lr 1e-3 overshoots until T overflows float32
    monkeypatch.setattr("calibkit.calibrators.model.clamping.sgd.MAX_GRAD_NORM", float("inf"))
    model, x, y = _huge_logits_problem()
    nc = NeuralClamping(model, init="zero", sgd=SGDSettings(epochs=2, batch_size=8, progress=False))
    pattern = (
        r"^lr: expected a learning rate at which Neural Clamping's SGD stays finite "
        r"\(the model's logits reach \d\.\de\+0[56]; lower lr, .*\), "
        r"got 0\.001, diverged at epoch 1, batch \d+ \(non-finite loss\)$"
    )
    with pytest.raises(InputError, match=pattern):
        nc.fit(x, y)
