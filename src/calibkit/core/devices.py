"""The torch device a command or a study runs on, named by the user (``auto``, ``cpu``,
``cuda``, ``cuda:N``) and checked against this machine before any work.

Torch is imported when a device is resolved, not when this module is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from calibkit.core.errors import InputError

if TYPE_CHECKING:
    import torch

__all__ = ["resolve_device"]


def resolve_device(name: str) -> torch.device:
    """The device ``name`` (``auto``: CUDA when this machine has it, else the CPU).

    In a Ray task given a GPU, CUDA shows that GPU alone, so ``auto`` and ``cuda`` are it.
    A device this machine lacks is refused:

    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("cuda:64")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: device: expected a device this machine has (...
    """
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise InputError("device", "a device this machine has (no CUDA here)", repr(name))
        count = torch.cuda.device_count()
        index = torch.device(name).index
        if index is not None and index >= count:
            has = f"cuda:0 to cuda:{count - 1}" if count > 1 else "cuda:0"
            raise InputError("device", f"a device this machine has ({has})", repr(name))
    try:
        return torch.device(name)
    except RuntimeError:
        raise InputError("device", "cpu, cuda, cuda:N or auto", repr(name)) from None
