"""How Neural Clamping runs its SGD and its passes over the inputs: :class:`SGDSettings`.

The defaults are the authors' (NCToolkit): SGD with momentum 0.9, lr 1e-3, batches of 512,
100 epochs. ``precision="bfloat16"`` runs the model's passes of the SGD (the cost of a
fit) under bfloat16 autocast, with the same ECE to about 0.05 points on the bird-vs-cat
models; the data-driven initialisation, the temperature step and every prediction stay in
float32. It pays only where the hardware computes bfloat16 natively: 2.1x faster per epoch
on a CPU with AVX-512 BF16, 2.6x slower on one without (``benchmarks/README.md``). The
default, ``"auto"``, is :func:`~calibkit.core.precision.fastest_precision` of the device
the passes run on.

Configs (a study's ``input_calibrator_params``, a saved fit's JSON) hold these settings
flat, beside the method's own parameters; :func:`split_params` and :func:`flat_params`
convert between the two forms.

>>> params = split_params({"gamma": 0.0, "epochs": 3, "precision": "bfloat16"})
>>> params["gamma"], params["sgd"].epochs, params["sgd"].precision, params["sgd"].lr
(0.0, 3, 'bfloat16', 0.001)
>>> flat_params(params)["epochs"]
3
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from calibkit.calibrators.logit.temperature import positive_param
from calibkit.calibrators.model.clamping.inputs import choice, nonnegative, positive_int
from calibkit.core.precision import fastest_precision

PRECISIONS = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class SGDSettings:
    """Settings of the SGD of a Neural Clamping fit and of its passes over the inputs.

    Parameters
    ----------
    lr : float
        Learning rate, > 0.
    momentum : float
        Momentum, >= 0.
    batch_size : int
        Inputs per SGD step and per batch of every pass over the inputs.
    epochs : int
        Passes of SGD over the calibration set (one step per batch).
    precision : str
        ``"float32"``, ``"bfloat16"`` (autocast of the SGD's model passes) or ``"auto"``:
        the faster of the two on the device (see the module docstring).
    fuse : bool
        Run the SGD on :func:`~calibkit.calibrators.model.clamping.passes.fused_copy` of the model.
    progress : bool
        Print a progress line per epoch on stderr.
    device : str, torch.device or None
        Where the passes run; None: where the model's parameters are.

    Examples
    --------
    >>> SGDSettings(lr=0.05, batch_size=64).lr
    0.05
    >>> SGDSettings(lr=0.0)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: lr: expected a finite number > 0, got 0.0
    """

    lr: float = 1e-3
    momentum: float = 0.9
    batch_size: int = 512
    epochs: int = 100
    precision: str = "auto"
    fuse: bool = True
    progress: bool = True
    device: str | torch.device | None = None

    def __post_init__(self) -> None:
        checked = {
            "lr": positive_param(self.lr, "lr"),
            "momentum": nonnegative(self.momentum, "momentum"),
            "batch_size": positive_int(self.batch_size, "batch_size"),
            "epochs": positive_int(self.epochs, "epochs"),
            "precision": choice(self.precision, PRECISIONS, "precision"),
            "fuse": bool(self.fuse),
            "progress": bool(self.progress),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def resolved_precision(self, device: torch.device) -> str:
        """``precision``, with ``"auto"`` resolved for ``device``."""
        return fastest_precision(device.type) if self.precision == "auto" else self.precision

    def torch_device(self, model: torch.nn.Module) -> torch.device:
        """``device``, or the device of ``model``'s first parameter (CPU if it has none)."""
        if self.device is not None:
            return torch.device(self.device)
        param = next(iter(model.parameters()), None)
        return param.device if param is not None else torch.device("cpu")


#: The fields of :class:`SGDSettings`, in order.
SGD_FIELDS = tuple(f.name for f in dataclasses.fields(SGDSettings))


def split_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Flat parameters -> :class:`~calibkit.calibrators.model.clamping.NeuralClamping` keywords:
    the :data:`SGD_FIELDS` among ``params`` become one ``sgd=SGDSettings(...)``."""
    sgd = {k: v for k, v in params.items() if k in SGD_FIELDS}
    rest = {k: v for k, v in params.items() if k not in SGD_FIELDS}
    if "sgd" in rest and sgd:
        base = rest["sgd"] if isinstance(rest["sgd"], SGDSettings) else SGDSettings()
        return {**rest, "sgd": dataclasses.replace(base, **sgd)}
    return {**rest, "sgd": SGDSettings(**sgd)} if sgd else rest


def flat_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`split_params`: ``sgd`` spread into its fields."""
    out = {k: v for k, v in params.items() if k != "sgd"}
    sgd = params.get("sgd", SGDSettings())
    out.update({name: getattr(sgd, name) for name in SGD_FIELDS})
    return out
