"""Small Neural Clamping problems shared by the tests of the subpackage."""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import log_softmax
from torch import nn

SHAPE = (2, 2, 2)  # one input: 2 channels of 2 x 2


def linear_model(k: int = 4, scale: float = 3.0, seed: int = 0) -> nn.Module:
    """A frozen-to-be linear classifier on inputs of SHAPE (overconfident for scale > 1)."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(math.prod(SHAPE), k))
    with torch.no_grad():
        model[1].weight.copy_(torch.randn(k, math.prod(SHAPE), generator=gen) * scale)
        model[1].bias.zero_()
    return model.eval()


def problem(
    n: int = 300, k: int = 4, seed: int = 0
) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """Inputs N(0, 1), labels drawn from softmax(logits / 2): the model is overconfident."""
    model = linear_model(k, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn((n, *SHAPE), generator=gen)
    with torch.no_grad():
        p = torch.softmax(model(x) / 2.0, dim=1)
    return model, x, torch.multinomial(p, 1, generator=gen).squeeze(1)


def focal_np(z: np.ndarray, y: np.ndarray, gamma: float) -> float:
    lp = log_softmax(z, axis=1)[np.arange(len(y)), y]
    return float(np.mean(-((1.0 - np.exp(lp)) ** gamma) * lp))


class Branchy(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lin(x.flatten(1))
        return out * 2 if bool(out.sum() > 0) else out


def conv_bn() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 3),
    )
    with torch.no_grad():  # non-trivial running statistics, so that folding matters
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    return model.eval()
