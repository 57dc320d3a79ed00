"""Tests of SGDSettings and the flat form of Neural Clamping's parameters."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.settings import SGD_FIELDS, flat_params, split_params
from calibkit.core.errors import InputError


def test_defaults_are_the_authors() -> None:
    sgd = SGDSettings()
    assert (sgd.lr, sgd.momentum, sgd.batch_size, sgd.epochs) == (1e-3, 0.9, 512, 100)
    assert (sgd.precision, sgd.fuse, sgd.progress, sgd.device) == ("auto", True, True, None)
    assert NeuralClamping(nn.Linear(2, 2)).sgd == sgd


@pytest.mark.parametrize(
    ("params", "argument"),
    [
        ({"lr": 0.0}, "lr"),
        ({"lr": math.inf}, "lr"),
        ({"momentum": -0.5}, "momentum"),
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 1.5}, "batch_size"),
        ({"batch_size": True}, "batch_size"),
        ({"precision": "half"}, "precision"),
    ],
)
def test_bad_settings(params: dict[str, object], argument: str) -> None:
    with pytest.raises(InputError, match=f"^{argument}:"):
        SGDSettings(**params)  # type: ignore[arg-type]


def test_settings_are_frozen_and_numbers_normalised() -> None:
    sgd = SGDSettings(lr=1, momentum=0)
    assert isinstance(sgd.lr, float)
    assert isinstance(sgd.momentum, float)
    with pytest.raises(AttributeError):
        sgd.lr = 0.5  # type: ignore[misc]


def test_device_is_the_models_unless_given() -> None:
    model = nn.Linear(2, 2)
    assert SGDSettings().torch_device(model) == torch.device("cpu")
    assert SGDSettings(device="cpu").torch_device(nn.Identity()) == torch.device("cpu")
    assert SGDSettings().torch_device(nn.Identity()) == torch.device("cpu")  # no parameters


def test_flat_and_split_params_are_inverse() -> None:
    flat = {"gamma": 0.5, "holdout": 0.2, "epochs": 3, "precision": "bfloat16"}
    split = split_params(flat)
    assert split == {
        "gamma": 0.5,
        "holdout": 0.2,
        "sgd": SGDSettings(epochs=3, precision="bfloat16"),
    }
    assert split_params({"gamma": 0.5}) == {"gamma": 0.5}  # no SGD field: no sgd
    back = flat_params(split)
    assert set(back) == {"gamma", "holdout", *SGD_FIELDS}
    assert {k: back[k] for k in flat} == flat
    merged = split_params({"sgd": SGDSettings(lr=0.5), "epochs": 2})
    assert merged["sgd"] == SGDSettings(lr=0.5, epochs=2)


def test_every_old_flat_constructor_parameter_has_one_home() -> None:
    """The 20 parameters of the flat constructor (before the grouping), each in one place."""
    old = {"gamma", "lam", "lr", "momentum", "batch_size", "epochs", "init", "input_range"}
    old |= {"train", "seed", "device", "progress", "fuse", "precision", "refine_temperature"}
    old |= {"mean", "std", "holdout", "gamma_select"}
    params = NeuralClamping(nn.Linear(2, 2)).get_params()
    assert len(old) == 19  # the model was the 20th
    assert set(flat_params(params)) == old
    assert set(SGD_FIELDS).isdisjoint(params)


@pytest.mark.parametrize("fastest", ["float32", "bfloat16"])
def test_auto_precision_is_the_fastest_on_the_device(
    monkeypatch: pytest.MonkeyPatch, fastest: str
) -> None:
    seen = []

    def fake(device: str) -> str:
        seen.append(device)
        return fastest

    monkeypatch.setattr("calibkit.calibrators.model.clamping.settings.fastest_precision", fake)
    cpu = torch.device("cpu")
    assert SGDSettings().resolved_precision(cpu) == fastest
    assert SGDSettings(precision="float32").resolved_precision(cpu) == "float32"
    assert SGDSettings(precision="bfloat16").resolved_precision(cpu) == "bfloat16"
    assert seen == ["cpu"]
