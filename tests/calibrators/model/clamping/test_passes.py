"""Tests of the batched passes of the frozen model (fused copy)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from tests.calibrators.model.clamping.problems import Branchy, conv_bn

pytestmark = pytest.mark.usefixtures("one_thread")


def test_fused_copy_folds_batch_norm_and_leaves_the_model_alone() -> None:
    from calibkit.calibrators.model.clamping.passes import fused_copy

    model = conv_bn()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fast = fused_copy(model)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fast.modules())
    x = torch.randn(8, 3, 4, 4)
    with torch.no_grad():
        assert torch.allclose(fast(x), model(x), atol=1e-5)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    assert not any(p.requires_grad for p in fast.parameters())
    branchy = Branchy()
    assert fused_copy(branchy) is branchy


def test_fused_and_plain_fits_agree() -> None:
    model = conv_bn()
    x, y = torch.randn(96, 3, 4, 4), torch.arange(96) % 3
    fits = [
        NeuralClamping(
            model, sgd=SGDSettings(epochs=3, batch_size=32, lr=0.05, progress=False, fuse=f)
        ).fit(x, y)
        for f in (True, False)
    ]
    assert torch.allclose(fits[0].delta_, fits[1].delta_, atol=1e-4)
    assert fits[0].temperature_ == pytest.approx(fits[1].temperature_, rel=1e-4)
