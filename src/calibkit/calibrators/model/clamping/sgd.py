"""The SGD of Neural Clamping: momentum SGD on ``delta`` (and ``log T``), seeded shuffling.

One step per batch of the calibration set, ``epochs`` passes, on the objective of
:func:`~calibkit.calibrators.model.clamping.objective.objective`. The model's passes may run
under bfloat16 autocast (``SGDSettings.precision``); the loss is always float32. A loss that
stops being finite ends the fit with an :class:`~calibkit.core.errors.InputError` naming
the step and the size of the model's logits.

The gradient on ``log T`` grows with the logits: on logits of ~1e4 and more, plain SGD at
the paper's lr overshoots until ``T`` overflows. A step whose gradient norm (``delta`` and
``log T`` together) exceeds :data:`MAX_GRAD_NORM` is therefore scaled down to that norm. On
models with logits of a usual size the norm stays far below it, the gradients are left
untouched and the fit is the paper's SGD exactly.

>>> torch.manual_seed(0) and None
>>> model = nn.Linear(2, 2)
>>> x, y = torch.randn(8, 2), torch.tensor([0, 1] * 4)
>>> settings = SGDSettings(epochs=2, batch_size=4, progress=False)
>>> delta, log_t, history = run_sgd(model, x, y, torch.zeros(2), 1.0, 0.1, settings,
...                                 joint=True, seed=0, device=torch.device("cpu"))
>>> delta.shape, len(history)
(torch.Size([2]), 2)
"""

from __future__ import annotations

import logging
import math

import torch
from torch import Tensor, nn

from calibkit.calibrators.model.clamping.objective import objective
from calibkit.calibrators.model.clamping.passes import layout
from calibkit.calibrators.model.clamping.settings import SGDSettings
from calibkit.core.errors import InputError
from calibkit.core.progress import ProgressEvent, report_step

_log = logging.getLogger(__name__)

#: The largest gradient norm a step takes (a larger one is scaled down to it; see above).
MAX_GRAD_NORM = 100.0


def run_sgd(
    model: nn.Module,
    x: Tensor,
    y: Tensor,
    delta0: Tensor,
    gamma: float,
    lam: float,
    settings: SGDSettings,
    *,
    joint: bool,
    seed: int,
    device: torch.device,
) -> tuple[Tensor, float, list[float]]:
    """Minimise the objective from ``delta0`` (and ``log T = 0``) by momentum SGD.

    ``joint`` learns ``log T`` too; otherwise T stays 1. Returns ``delta`` (on the CPU),
    ``log T`` where SGD left it, and the mean objective of each epoch.
    """
    gen = torch.Generator().manual_seed(seed)
    delta = delta0.clone().to(device).requires_grad_(True)
    log_t = torch.zeros((), device=device, requires_grad=joint)
    opt = torch.optim.SGD(
        [delta, log_t] if joint else [delta], lr=settings.lr, momentum=settings.momentum
    )
    n, history = x.shape[0], []
    low_precision = settings.resolved_precision(device) == "bfloat16"
    for epoch in range(settings.epochs):
        order, total = torch.randperm(n, generator=gen), 0.0
        for step, start in enumerate(range(0, n, settings.batch_size)):
            idx = order[start : start + settings.batch_size]
            xb = layout(x[idx].to(device=device, dtype=torch.float32))
            with torch.autocast(device.type, torch.bfloat16, enabled=low_precision):
                out = model(xb + delta)
            loss = objective(out.float() / log_t.exp(), y[idx].to(device), delta, gamma, lam)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise _diverged(model, xb, settings.lr, f"epoch {epoch + 1}, batch {step + 1}")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            _clip([delta, log_t] if joint else [delta])
            opt.step()
            total += value * idx.shape[0]
        history.append(total / n)
        if settings.progress:
            _progress(gamma, epoch, settings.epochs, history[-1])
    return delta.detach().cpu(), float(log_t.detach()), history


@torch.no_grad()
def _clip(params: list[Tensor]) -> None:
    """Scale the gradients of ``params`` down to :data:`MAX_GRAD_NORM` when above it
    (and leave them bit for bit as they are otherwise)."""
    grads = [p.grad for p in params if p.grad is not None]
    norm = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))
    if norm > MAX_GRAD_NORM:
        for g in grads:
            g.mul_(MAX_GRAD_NORM / norm)


@torch.no_grad()
def _diverged(model: nn.Module, xb: Tensor, lr: float, where: str) -> InputError:
    """The error of an SGD whose loss stopped being finite at ``where`` (batch ``xb``)."""
    scale = float(model(xb).abs().amax())
    expected = (
        "a learning rate at which Neural Clamping's SGD stays finite (the model's logits "
        f"reach {scale:.1e}; lower lr, or calibrate a model with logits of a sane size)"
    )
    return InputError("lr", expected, f"{lr:g}, diverged at {where} (non-finite loss)")


def _progress(gamma: float, epoch: int, epochs: int, loss: float) -> None:
    """The epoch's mean objective, as a progress record (shown by the command line)."""
    label = f"neural clamping (gamma {gamma:g}): epoch {epoch + 1}/{epochs}"
    report_step(_log, ProgressEvent(label, epoch + 1, epochs, f"loss {loss:.5f}"), logging.INFO)
