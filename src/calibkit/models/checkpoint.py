"""Start a model from a checkpoint saved under timm's (or torchvision's) parameter names.

The file is a ``.safetensors`` file, or a ``torch.save`` file read with
``weights_only=True`` (no code runs while loading): a state dict, or a dict holding one
under ``state_dict`` or ``model``. A ``module.`` prefix (``nn.DataParallel``) is stripped.
The weights load strictly: a missing or unexpected key, or a shape that differs, raises
:class:`~calibkit.core.errors.InputError` naming them; so does a tensor holding NaN or an
infinity (:func:`check_finite`), which no trained model starts from.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import Tensor, nn

from calibkit.core.errors import InputError


def read_state_dict(path: str | os.PathLike[str]) -> dict[str, Tensor]:
    """The tensors of checkpoint ``path`` by name (see the module docstring)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("path", "an existing checkpoint file", repr(str(p)))
    try:
        if p.suffix == ".safetensors":
            checkpoint: object = load_file(str(p))
        else:
            checkpoint = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
        expected = "a safetensors or torch.save checkpoint"
        raise InputError("path", expected, f"{p} ({reason})") from None
    if isinstance(checkpoint, dict):
        for key in ("state_dict", "model"):
            if isinstance(checkpoint.get(key), dict):
                checkpoint = checkpoint[key]
                break
    if not isinstance(checkpoint, dict) or not all(
        isinstance(v, Tensor) for v in checkpoint.values()
    ):
        raise InputError("path", "a checkpoint holding a state dict of tensors", str(p))
    state = {str(k).removeprefix("module."): v for k, v in checkpoint.items()}
    check_finite(state, p)
    return state


def check_finite(state: dict[str, Tensor], path: str | os.PathLike[str]) -> None:
    """Refuse, naming ``path``, a state dict with a NaN or infinite value in any tensor.

    >>> try:
    ...     check_finite({"w": torch.tensor([1.0, float("nan")])}, "init.pt")
    ... except InputError as exc:
    ...     print(exc.got)
    init.pt (1 of 1 tensors hold NaN or inf: w)
    """
    bad = [
        k
        for k, v in state.items()
        if (v.is_floating_point() or v.is_complex()) and not bool(torch.isfinite(v).all())
    ]
    if bad:
        got = f"{path} ({len(bad)} of {len(state)} tensors hold NaN or inf: {', '.join(bad[:3])})"
        raise InputError("path", "a checkpoint of finite numbers", got)


def load_checkpoint(model: nn.Module, path: str | os.PathLike[str]) -> nn.Module:
    """``model`` with the weights of ``path`` loaded strictly (names and shapes checked)."""
    state = read_state_dict(path)
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = [
        f"{k} {tuple(state[k].shape)} (expected {tuple(v.shape)})"
        for k, v in own.items()
        if k in state and state[k].shape != v.shape
    ]
    if missing or unexpected or shapes:
        got = f"{path}: {len(missing)} missing keys {missing[:3]}, "
        got += f"{len(unexpected)} unexpected keys {unexpected[:3]}, "
        got += f"{len(shapes)} shape mismatches {shapes[:3]}"
        raise InputError("path", f"a checkpoint of this {type(model).__name__}", got)
    model.load_state_dict(state, strict=True)
    return model


def checkpoint_classes(model: nn.Module, other: nn.Module, path: str | os.PathLike[str]) -> int:
    """The number of classes of checkpoint ``path``, read from its tensors alone: ``model``
    and ``other`` are the same architecture built for two different class counts (say on
    the ``meta`` device, which allocates nothing), and the class count is the size, in
    ``path``, of the first tensor dimension they disagree on (the classifier's). A missing
    or unreadable file, or one without that tensor, raises
    :class:`~calibkit.core.errors.InputError` naming ``path``.

    Parameters
    ----------
    model, other
        One architecture built for two class counts.
    path
        The checkpoint (see the module docstring).

    Returns
    -------
    int
        The number of classes the checkpoint's classifier has.

    Examples
    --------
    >>> import tempfile
    >>> net = lambda k: nn.Sequential(nn.Flatten(), nn.Linear(12, 8), nn.Linear(8, k))
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     torch.save(net(7).state_dict(), f"{folder}/w.pt")
    ...     checkpoint_classes(net(2), net(3), f"{folder}/w.pt")
    7
    """
    state = read_state_dict(path)
    a, b = model.state_dict(), other.state_dict()
    for key, tensor in a.items():
        if key not in b or tensor.shape == b[key].shape or tensor.ndim != b[key].ndim:
            continue
        axis = next(
            i for i, (m, n) in enumerate(zip(tensor.shape, b[key].shape, strict=True)) if m != n
        )
        if key not in state or state[key].ndim != tensor.ndim:
            break
        return int(state[key].shape[axis])
    expected = f"a checkpoint of this {type(model).__name__} (its classifier's tensors)"
    raise InputError("path", expected, f"{path}, which lacks them")
