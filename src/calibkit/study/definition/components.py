"""The model and device of a study's run, built from its configuration (the loss is the
trainer's: :func:`calibkit.training.training_loss`)."""

from __future__ import annotations

import inspect

from torch import nn

from calibkit.core.devices import resolve_device
from calibkit.core.errors import InputError
from calibkit.models import (
    MODELS,
    create_model,
    keep_classes,
    load_checkpoint,
    load_pretrained_cifar_resnet,
)
from calibkit.study.definition.config import ModelSpec
from calibkit.study.definition.prepare import StudyData

__all__ = ["build_model", "resolve_device"]  # resolve_device: from calibkit.core.devices


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
    if MODELS.info(spec.name).get("family") != "cifar_resnet":
        return load_checkpoint(create_model(spec.name, data.n_classes, **params), spec.init)
    model = load_pretrained_cifar_resnet(spec.init, int(spec.name.removeprefix("resnet")))
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
