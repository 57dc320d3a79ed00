"""Passes of a frozen model over inputs kept by the caller, batch by batch.

The inputs stay where the caller keeps them (often a large CPU tensor) and each batch is
moved to ``device`` as float32. The model is only called, never changed: :func:`frozen`
puts it in eval mode without gradients for the length of a fit, and :func:`fused_copy`
gives a faster stand-in for the many passes of the SGD.

>>> model = nn.Linear(3, 2)
>>> with frozen(model):
...     z = logits_pass(model, torch.zeros(5, 3), torch.ones(3), 2, torch.device("cpu"))
>>> z.shape, model.weight.requires_grad
(torch.Size([5, 2]), True)
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import torch
from torch import Tensor, nn

from calibkit.core.errors import InputError


def layout(x: Tensor) -> Tensor:
    """Image batches in the channels-last layout (what :func:`fused_copy` runs fastest on)."""
    return x.contiguous(memory_format=torch.channels_last) if x.ndim == 4 else x


def batches(inputs: Tensor, batch_size: int, device: torch.device) -> Iterator[Tensor]:
    """Consecutive batches of ``inputs`` as float32 tensors on ``device``."""
    for start in range(0, inputs.shape[0], batch_size):
        yield layout(inputs[start : start + batch_size].to(device=device, dtype=torch.float32))


@torch.no_grad()
def logits_pass(
    model: nn.Module, x: Tensor, delta: Tensor, batch_size: int, device: torch.device
) -> Tensor:
    """``model(x + delta)`` for all of ``x`` (float32, on the CPU)."""
    d = delta.to(device)
    return torch.cat([model(xb + d).cpu() for xb in batches(x, batch_size, device)])


def n_outputs(model: nn.Module, x: Tensor, device: torch.device) -> int:
    """The number of classes ``K`` of ``model``, from one input; InputError if it is no
    classifier of these inputs."""
    try:
        with torch.no_grad():
            out = model(x[:1].to(device=device, dtype=torch.float32))
    except (RuntimeError, ValueError, TypeError) as exc:
        msg = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise InputError(
            "inputs", "inputs of the shape the model takes", f"shape {tuple(x.shape)} ({msg})"
        ) from None
    if not isinstance(out, Tensor) or out.ndim != 2 or out.shape[1] < 2:
        raise InputError(
            "model",
            "a classifier returning logits (N, K), K >= 2",
            repr(getattr(out, "shape", type(out).__name__)),
        )
    return int(out.shape[1])


@contextlib.contextmanager
def frozen(model: nn.Module) -> Iterator[None]:
    """Eval mode and ``requires_grad=False`` on every parameter; both restored afterwards."""
    grads = [p.requires_grad for p in model.parameters()]
    modes = [m.training for m in model.modules()]
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p, g in zip(model.parameters(), grads, strict=True):
            p.requires_grad_(g)
        for m, t in zip(model.modules(), modes, strict=True):
            m.training = t


def fused_copy(model: nn.Module) -> nn.Module:
    """A faster stand-in for a frozen eval-mode ``model``, for the many passes of a fit.

    Batch norm is folded into the preceding convolutions (``torch.fx``) and the copy uses
    the channels-last layout: about 1.5x faster forward and backward passes for a CIFAR
    ResNet-20 on a CPU. Its logits agree with the model's to float32 rounding (1e-5). A
    model that ``torch.fx`` cannot trace is returned as it is. The model is never changed.
    """
    try:
        with warnings.catch_warnings():  # torch.fx imports deprecated torch.jit helpers
            warnings.simplefilter("ignore", DeprecationWarning)
            from torch.fx.experimental.optimization import fuse

            copy = fuse(model, inplace=False)
    except Exception:  # untraceable (data-dependent control flow, ...): use the model
        return model
    copy.requires_grad_(False)
    for param in copy.parameters():  # Module.to(memory_format=...) is not in torch's stubs
        if param.ndim == 4:
            param.data = param.data.contiguous(memory_format=torch.channels_last)
    return copy
