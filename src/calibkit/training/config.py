"""Training settings: one typed, frozen, validated dataclass.

>>> cfg = TrainConfig(epochs=3, optimizer="sgd", lr=0.1, schedule="cosine")
>>> cfg.replace(epochs=5).epochs
5
>>> TrainConfig(optimizer="rmsprop")
Traceback (most recent call last):
...
calibkit.core.errors.InputError: optimizer: expected one of adam, sgd, got 'rmsprop'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from calibkit.core.errors import InputError, UnknownNameError

OPTIMIZERS = ("adam", "sgd")
SCHEDULES = ("none", "step", "cosine", "onecycle")


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(name, f"an integer >= {low}", repr(value))


def _check_float(
    name: str, value: object, *, positive: bool = False, below_one: bool = False
) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if ok and positive:
        ok = float(value) > 0  # type: ignore[arg-type]
    elif ok:
        ok = float(value) >= 0  # type: ignore[arg-type]
    if ok and below_one:
        ok = float(value) < 1  # type: ignore[arg-type]
    if not ok:
        what = "a finite number > 0" if positive else "a finite number >= 0"
        raise InputError(name, what + (" and < 1" if below_one else ""), repr(value))


@dataclass(frozen=True)
class TrainConfig:
    """How one model is trained (``epochs = 0``: not at all, e.g. a pretrained model).

    ``schedule``: ``none``; ``step`` (multiply the learning rate by ``lr_decay`` at each epoch
    in ``milestones``); ``cosine`` (to 0 over the run, stepped per batch); ``onecycle``
    (PyTorch's one-cycle policy peaking at ``lr``, stepped per batch). ``augment`` applies
    random crop (4-pixel zero padding) and horizontal flip to training batches. ``loss``
    names a registered loss and ``loss_params`` its parameters. Per-epoch tracking evaluates
    every held-out split with ``n_bins`` equal-width bins. ``track_learning`` records when
    each training sample was learned and its final logits (see :class:`TrainResult`).
    """

    epochs: int = 10
    batch_size: int = 128
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    schedule: str = "none"
    milestones: tuple[int, ...] = ()
    lr_decay: float = 0.1
    augment: bool = False
    loss: str = "cross_entropy"
    loss_params: dict[str, Any] = field(default_factory=dict)
    eval_batch_size: int = 1024
    n_bins: int = 15
    track_learning: bool = False

    def __post_init__(self) -> None:
        _check_int("epochs", self.epochs, 0)
        _check_int("batch_size", self.batch_size, 1)
        _check_int("eval_batch_size", self.eval_batch_size, 1)
        _check_int("n_bins", self.n_bins, 1)
        if self.optimizer not in OPTIMIZERS:
            raise InputError("optimizer", "one of " + ", ".join(OPTIMIZERS), repr(self.optimizer))
        if self.schedule not in SCHEDULES:
            raise InputError("schedule", "one of " + ", ".join(SCHEDULES), repr(self.schedule))
        _check_float("lr", self.lr, positive=True)
        _check_float("momentum", self.momentum, below_one=True)
        _check_float("weight_decay", self.weight_decay)
        _check_float("lr_decay", self.lr_decay, positive=True)
        for flag in ("nesterov", "augment", "track_learning"):
            if not isinstance(getattr(self, flag), bool):
                raise InputError(flag, "true or false", repr(getattr(self, flag)))
        if self.nesterov and (self.optimizer != "sgd" or self.momentum == 0):
            raise InputError("nesterov", "sgd with momentum > 0", f"{self.optimizer}")
        milestones = tuple(self.milestones)
        for m in milestones:
            _check_int("milestones", m, 1)
        if list(milestones) != sorted(set(milestones)):
            raise InputError("milestones", "increasing epoch numbers", repr(list(milestones)))
        object.__setattr__(self, "milestones", milestones)
        if not isinstance(self.loss_params, dict):
            raise InputError("loss_params", "a table of loss parameters", repr(self.loss_params))
        if self.loss != "cross_entropy" or self.loss_params:
            from calibkit.losses import build_loss

            try:  # checks the name and the parameters
                build_loss({"name": self.loss, **self.loss_params})
            except UnknownNameError:
                raise
            except InputError as exc:  # name the key where the value came from
                arg = exc.argument
                if arg.startswith("loss"):  # an unknown parameter
                    expected = f"{exc.expected} (of loss {self.loss!r})"
                    raise InputError("loss_params", expected, exc.got) from None
                raise InputError(f"loss_params.{arg}", exc.expected, exc.got) from None

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` applied (and validated)."""
        return replace(self, **changes)
