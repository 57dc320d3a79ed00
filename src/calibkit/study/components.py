"""The model, loss and device of a study's run, built from its configuration."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
from torch import nn

from calibkit.core.errors import InputError
from calibkit.models import MODELS, create_model, keep_classes, load_pretrained_cifar_resnet
from calibkit.study.config import ModelSpec
from calibkit.study.prepare import StudyData
from calibkit.training import TrainConfig


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise InputError("device", "a device this machine has (no CUDA here)", repr(name))
    return torch.device(name)


def build_model(spec: ModelSpec, data: StudyData) -> nn.Module:
    """The model of ``spec`` for ``data``'s classes, channels and (if it takes one) size."""
    params = dict(spec.params)
    accepted = inspect.signature(MODELS.get(spec.name)).parameters
    params.setdefault("in_channels", data.input_shape[0])
    if "input_size" in accepted:
        params.setdefault("input_size", data.input_shape[-1])
    unknown = [k for k in params if k not in accepted]
    if unknown:
        raise InputError(
            f"models.{spec.label}.params",
            "parameters among " + ", ".join(p for p in accepted if p != "num_classes"),
            ", ".join(unknown),
        )
    if spec.init is None:
        return create_model(spec.name, data.n_classes, **params)
    model = load_pretrained_cifar_resnet(spec.init, MODELS.info(spec.name)["depth"])
    if spec.init_rows:
        if len(spec.init_rows) != data.n_classes:
            raise InputError(
                f"models.{spec.label}.init_rows",
                f"{data.n_classes} rows (one per class)",
                repr(list(spec.init_rows)),
            )
        return keep_classes(model, spec.init_rows)
    model.linear = nn.Linear(model.linear.in_features, data.n_classes)
    return model


def loss_function(cfg: TrainConfig) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The training loss named in ``cfg`` (cross-entropy by default)."""
    if cfg.loss == "cross_entropy" and not cfg.loss_params:
        return nn.functional.cross_entropy
    from calibkit.losses import create_loss

    module: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = create_loss(
        cfg.loss, **cfg.loss_params
    )
    return module
