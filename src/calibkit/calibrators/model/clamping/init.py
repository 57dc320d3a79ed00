"""The initial perturbation of Neural Clamping: zero, random, or data-driven.

The data-driven ``delta`` (Tang, Chen & Ho, TMLR 2024, Theorem 3.2) moves every input
dimension as far as the feasible input range allows in the direction that raises the
summed prediction entropy of the calibration set: a first-order step towards less
confident predictions, from which the fit starts.

>>> g = torch.tensor([1.0, -2.0, 0.0])
>>> low, high = torch.tensor([-1.0, -1.0, -1.0]), torch.tensor([0.5, 0.5, 0.5])
>>> data_driven_delta(g, low, high, torch.full((3,), -2.0), torch.full((3,), 2.0)).tolist()
[1.5, -1.0, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from calibkit.calibrators.model.clamping.passes import batches
from calibkit.core.errors import InputError

#: The initial perturbations: ``"data"`` (Theorem 3.2), ``"random"`` and ``"zero"``.
INITS = ("data", "random", "zero")
#: Scale of the Gaussian initial perturbation for ``init="random"`` (as in NCToolkit).
RANDOM_INIT_SCALE = 0.01

Range = tuple[float | Sequence[float], float | Sequence[float]]


def initial_delta(
    init: str,
    model: nn.Module,
    x: Tensor,
    *,
    input_range: Range | None,
    seed: int,
    batch_size: int,
    device: torch.device,
) -> Tensor:
    """The initial ``delta`` (shaped like one input, on the CPU) for ``init`` in INITS.

    Parameters
    ----------
    init : str
        ``"zero"``, ``"random"`` (Gaussian, sd ``RANDOM_INIT_SCALE``, seeded by ``seed``)
        or ``"data"`` (:func:`data_driven_delta` within ``input_range``).
    model : nn.Module
        The frozen classifier (only called for ``"data"``).
    x : Tensor
        Calibration inputs ``(N, ...)``.
    input_range : Range or None
        The feasible range ``(alpha, beta)``; None: the inputs' per-channel range.
    seed, batch_size : int
        Seed of the random draw; size of the batches of the passes over ``x``.
    device : torch.device
        Where the passes run.

    Returns
    -------
    Tensor
        ``delta``, shape ``x.shape[1:]``.

    Examples
    --------
    >>> cpu = torch.device("cpu")
    >>> initial_delta("zero", nn.Identity(), torch.ones(4, 3), input_range=None, seed=0,
    ...               batch_size=2, device=cpu).tolist()
    [0.0, 0.0, 0.0]
    """
    shape = x.shape[1:]
    if init == "zero":
        return torch.zeros(shape)
    if init == "random":
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(shape, generator=gen) * RANDOM_INIT_SCALE
    check_input_range(input_range, shape[0] if len(shape) else 1)
    low, high = input_bounds(x, batch_size, device)
    alpha, beta = range_tensors(input_range, low, high)
    grad = entropy_gradient(model, x, batch_size, device)
    return data_driven_delta(grad, low, high, alpha, beta).cpu()


@torch.no_grad()
def input_bounds(inputs: Tensor, batch_size: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Per-dimension minimum ``l`` and maximum ``mu`` of the inputs (shape of one input)."""
    low = high = None
    for xb in batches(inputs, batch_size, device):
        b_low, b_high = xb.amin(dim=0), xb.amax(dim=0)
        low = b_low if low is None else torch.minimum(low, b_low)
        high = b_high if high is None else torch.maximum(high, b_high)
    assert low is not None
    assert high is not None
    return low, high


def range_tensors(input_range: Range | None, low: Tensor, high: Tensor) -> tuple[Tensor, Tensor]:
    """The feasible range ``[alpha, beta]`` broadcast to the shape of one input.

    ``input_range`` holds a scalar or one value per channel (dimension 0 of an input) for
    each bound; ``None`` takes the per-channel minimum and maximum of the inputs (whose
    per-dimension minimum and maximum are ``low`` and ``high``).
    """
    shape = low.shape
    if input_range is None:
        dims = tuple(range(1, low.ndim))
        alpha = low.amin(dim=dims, keepdim=True) if dims else low
        beta = high.amax(dim=dims, keepdim=True) if dims else high
        return alpha.expand(shape), beta.expand(shape)
    a, b = (_bound(v, shape, low) for v in input_range)
    return a, b


def _bound(value: float | Sequence[float], shape: torch.Size, like: Tensor) -> Tensor:
    t = torch.as_tensor(value, dtype=like.dtype, device=like.device).reshape(-1)
    if t.numel() == 1:
        return t.reshape(()).expand(shape)
    return t.reshape((-1,) + (1,) * (len(shape) - 1)).expand(shape)


def check_input_range(value: object, n_channels: int | None = None) -> Range | None:
    """``value`` as ``(alpha, beta)``: floats or equal-length tuples of floats, alpha < beta."""
    if value is None:
        return None
    expected = "(alpha, beta): two numbers or two sequences of one number per channel"
    try:
        lo, hi = cast(Sequence[object], value)
        a = np.asarray(lo, dtype=np.float64).reshape(-1)
        b = np.asarray(hi, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError("input_range", expected, repr(value)) from None
    if a.size == 0 or a.size != b.size or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("input_range", expected + ", finite", repr(value))
    if not np.all(a < b):
        raise InputError("input_range", "alpha < beta in every channel", repr(value))
    if n_channels is not None and a.size not in (1, n_channels):
        raise InputError("input_range", f"1 or {n_channels} values per bound", f"{a.size}")

    def out(v: np.ndarray) -> float | tuple[float, ...]:
        return float(v[0]) if v.size == 1 else tuple(float(x) for x in v)

    return out(a), out(b)


def pixel_range(
    mean: Sequence[float], std: Sequence[float], low: float = 0.0, high: float = 1.0
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The per-channel range of pixels in ``[low, high]`` after ``(x - mean) / std``.

    >>> pixel_range((0.5,), (0.25,))
    ((-2.0,), (2.0,))
    """
    m, s = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    return tuple(((low - m) / s).tolist()), tuple(((high - m) / s).tolist())


def entropy_gradient(
    model: nn.Module, inputs: Tensor, batch_size: int, device: torch.device
) -> Tensor:
    """``g = sum_i d H(softmax(f(x_i))) / d x_i`` (at T = 1), shaped like one input.

    Each batch is offset by one shared zero tensor ``d``; the gradient of the batch's total
    entropy with respect to ``d`` is the sum of the per-sample input gradients.
    """
    total: Tensor | None = None
    for xb in batches(inputs, batch_size, device):
        d = torch.zeros(xb.shape[1:], device=device, requires_grad=True)
        logp = F.log_softmax(model(xb + d), dim=1)
        entropy = -(logp.exp() * logp).sum()
        (grad,) = torch.autograd.grad(entropy, d)
        total = grad.double() if total is None else total + grad.double()
    assert total is not None
    return total.float()


def data_driven_delta(
    grad: Tensor, low: Tensor, high: Tensor, alpha: Tensor, beta: Tensor
) -> Tensor:
    """The initial perturbation of Theorem 3.2: ``delta = sign(g) * eta``.

    To first order the summed entropy grows by ``g . delta``; the largest growth over the
    perturbations that keep every calibration input inside ``[alpha, beta]``
    (``alpha - l <= delta <= beta - mu``) moves each dimension as far as it can in the
    direction of its gradient: ``eta_j = beta_j - mu_j`` where ``g_j > 0``,
    ``eta_j = l_j - alpha_j`` where ``g_j < 0`` and 0 where ``g_j = 0``. A negative
    headroom (inputs already outside the range) counts as 0.
    """
    up = (beta - high).clamp_min(0.0)
    down = (low - alpha).clamp_min(0.0)
    return torch.where(grad > 0, up, torch.where(grad < 0, -down, torch.zeros_like(grad)))
