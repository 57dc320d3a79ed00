"""Tests of TrainConfig validation and replace."""

from __future__ import annotations

from typing import Any

import pytest

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.training import OPTIMIZERS, SCHEDULES, TrainConfig


def test_defaults_are_valid() -> None:
    cfg = TrainConfig()
    assert cfg.optimizer in OPTIMIZERS
    assert cfg.schedule in SCHEDULES
    assert cfg.milestones == ()
    assert cfg.loss_params == {}


@pytest.mark.parametrize(
    ("changes", "pattern"),
    [
        ({"epochs": -1}, r"^epochs: expected an integer in \[0, 100000\], got -1"),
        ({"epochs": 2.0}, r"^epochs: expected an integer in \[0, 100000\], got 2\.0"),
        ({"epochs": True}, r"^epochs: expected an integer in \[0, 100000\], got True"),
        ({"batch_size": 0}, r"^batch_size: expected an integer in \[1, 1048576\]"),
        ({"eval_batch_size": -1}, r"^eval_batch_size: expected an integer in \[1, 1048576\]"),
        ({"n_bins": 0}, r"^n_bins: expected an integer in \[1, 100000\]"),
        ({"optimizer": "rmsprop"}, r"^optimizer: expected one of adam, sgd, got 'rmsprop'"),
        ({"schedule": "linear"}, r"^schedule: expected one of none, step, cosine, onecycle"),
        ({"lr": -1}, r"^lr: expected a finite number > 0, got -1"),
        ({"lr": 0.0}, r"^lr: expected a finite number > 0, got 0\.0"),
        ({"lr": float("nan")}, r"^lr: expected a finite number > 0, got nan"),
        ({"lr": True}, r"^lr: expected a finite number > 0"),
        ({"momentum": 1.0}, r"^momentum: expected a finite number in \[0, 1\), got 1\.0"),
        ({"momentum": -0.1}, r"^momentum: expected a finite number in \[0, 1\)"),
        ({"weight_decay": -1e-4}, r"^weight_decay: expected a finite number >= 0, got"),
        ({"weight_decay": float("inf")}, r"^weight_decay: expected a finite number >= 0"),
        ({"lr_decay": 0}, r"^lr_decay: expected a finite number > 0, got 0"),
        ({"nesterov": 1}, r"^nesterov: expected true or false"),
        ({"augment": "yes"}, r"^augment: expected true or false"),
        ({"track_learning": 1}, r"^track_learning: expected true or false"),
        ({"nesterov": True}, r"^nesterov: expected sgd with momentum > 0, got adam"),
        (
            {"nesterov": True, "optimizer": "sgd", "momentum": 0.0},
            r"^nesterov: expected sgd with momentum > 0, got sgd",
        ),
        (
            {"milestones": (3, 2)},
            r"^milestones: expected a list of increasing values, .*, got \[3, 2\]",
        ),
        ({"milestones": (2, 2)}, r"^milestones: expected a list of increasing values"),
        ({"milestones": (0, 2)}, r"^milestones: expected an integer in \[1, 100000\], got 0"),
        ({"milestones": (1.5,)}, r"^milestones: expected an integer in \[1, 100000\], got 1\.5"),
        ({"loss_params": [1]}, r"^loss_params: expected a table of loss parameters"),
        (
            {"loss": "focal", "loss_params": {"gama": 2}},
            r"^loss_params: expected parameters among gamma.* \(of loss 'focal'\), got 'gama'",
        ),
        (
            {"loss_params": {"epsilon": 0.1}},
            r"^loss_params: expected .*\(of loss 'cross_entropy'\), got 'epsilon'",
        ),
        ({"loss": "focal", "loss_params": {"gamma": -1}}, r"^loss_params\.gamma: expected"),
        ({"warmup_steps": -1}, r"^warmup_steps: expected an integer in \[0, 1000000000\]"),
        ({"warmup_steps": 1.5}, r"^warmup_steps: expected an integer"),
        ({"warmup_steps": 4, "warmup_lr": 0.0}, r"^warmup_lr: expected a finite number > 0"),
        (
            {"warmup_steps": 4},
            r"^warmup_lr: expected a learning rate exactly when warmup_steps > 0, "
            r"got None with warmup_steps = 4",
        ),
        ({"warmup_lr": 0.01}, r"^warmup_lr: expected .*, got 0\.01 with warmup_steps = 0"),
    ],
)
def test_validation(changes: dict[str, Any], pattern: str) -> None:
    with pytest.raises(InputError, match=pattern):
        TrainConfig(**changes)


def test_unknown_loss_lists_the_valid_losses() -> None:
    with pytest.raises(UnknownNameError, match=r"^loss: expected one of .*\bfocal\b") as e:
        TrainConfig(loss="nope")
    msg = str(e.value)
    for name in ("cross_entropy", "brier", "label_smoothing", "mdca"):
        assert name in msg
    assert msg.endswith("got 'nope'")


def test_valid_non_default_settings() -> None:
    cfg = TrainConfig(
        optimizer="sgd",
        nesterov=True,
        momentum=0.5,
        schedule="step",
        milestones=[2, 5],  # type: ignore[arg-type]  # a list from TOML becomes a tuple
        loss="focal",
        loss_params={"gamma": 2.0, "penalty": {"name": "mdca", "beta": 0.5}},
    )
    assert cfg.milestones == (2, 5)
    warm = TrainConfig(warmup_steps=400, warmup_lr=0.01)
    assert (warm.warmup_steps, warm.warmup_lr) == (400, 0.01)
    assert TrainConfig(loss="brier").loss == "brier"
    assert TrainConfig(weight_decay=0, momentum=0).momentum == 0


def test_replace_applies_and_validates() -> None:
    cfg = TrainConfig(epochs=3, lr=0.1)
    new = cfg.replace(epochs=5, schedule="cosine")
    assert (new.epochs, new.schedule, new.lr) == (5, "cosine", 0.1)
    assert (cfg.epochs, cfg.schedule) == (3, "none")  # the original is unchanged
    with pytest.raises(InputError, match=r"^epochs: "):
        cfg.replace(epochs=-1)
    with pytest.raises(InputError, match=r"^nesterov: "):
        cfg.replace(nesterov=True)
    with pytest.raises(TypeError):
        cfg.replace(epoch=3)


def test_frozen() -> None:
    cfg = TrainConfig()
    with pytest.raises(AttributeError):
        cfg.epochs = 3  # type: ignore[misc]
