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
from typing import Any

import torch

from calibkit.core.params import Settings, param
from calibkit.core.precision import fastest_precision
from calibkit.core.validation import (
    NON_NEGATIVE,
    POSITIVE,
    AnyOf,
    Boolean,
    Choice,
    InstanceOf,
    Integer,
    NoneOr,
    String,
)

PRECISIONS = ("auto", "float32", "bfloat16")


class SGDSettings(Settings):
    """Settings of the SGD of a Neural Clamping fit and of its passes over the inputs.

    Examples
    --------
    >>> SGDSettings(lr=0.05, batch_size=64).lr
    0.05
    >>> SGDSettings(lr=0.0)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: lr: expected a finite number > 0, got 0.0
    """

    lr: float = param(default=1e-3, check=POSITIVE, doc="The learning rate.")
    momentum: float = param(default=0.9, check=NON_NEGATIVE, doc="The momentum.")
    batch_size: int = param(
        default=512,
        check=Integer(low=1),
        doc="Inputs per SGD step and per batch of every pass over the inputs.",
    )
    epochs: int = param(
        default=100,
        check=Integer(low=1),
        doc="Passes of SGD over the calibration set (one step per batch).",
    )
    precision: str = param(
        default="auto",
        check=Choice(*PRECISIONS),
        doc="``float32``, ``bfloat16`` (autocast of the SGD's model passes) or ``auto``: "
        "the faster of the two on the device (see the module docstring).",
    )
    fuse: bool = param(
        default=True,
        check=Boolean(),
        doc="Run the SGD on :func:`~calibkit.calibrators.model.clamping.passes.fused_copy` "
        "of the model.",
    )
    progress: bool = param(
        default=True, check=Boolean(), doc="Print a progress line per epoch on stderr."
    )
    device: str | torch.device | None = param(
        default=None,
        check=NoneOr(AnyOf(String(), InstanceOf(torch.device))),
        doc="Where the passes run; None: where the model's parameters are.",
    )

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
