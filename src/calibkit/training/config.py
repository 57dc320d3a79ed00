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

from dataclasses import dataclass, field, replace
from typing import Any

from calibkit.core.binning import N_BINS
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.validation import (
    BATCH_SIZE,
    EPOCHS,
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    TRAINED_EPOCHS,
    Boolean,
    Choice,
    Constraints,
    Integer,
    NoneOr,
)

OPTIMIZERS = ("adam", "sgd")
SCHEDULES = ("none", "step", "cosine", "onecycle")

#: The declared fields of :class:`TrainConfig` that hold one checked value.
PARAM_CONSTRAINTS: Constraints = {
    "epochs": EPOCHS,
    "batch_size": BATCH_SIZE,
    "optimizer": Choice(*OPTIMIZERS),
    "lr": POSITIVE,
    "momentum": FRACTION,
    "nesterov": Boolean(),
    "weight_decay": NON_NEGATIVE,
    "schedule": Choice(*SCHEDULES),
    "lr_decay": POSITIVE,
    "augment": Boolean(),
    "eval_batch_size": BATCH_SIZE,
    "n_bins": N_BINS,
    "track_learning": Boolean(),
    "warmup_steps": Integer(0, 10**9),
    "warmup_lr": NoneOr(POSITIVE),
}
MILESTONE = TRAINED_EPOCHS  # an epoch number


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
    ``warmup_steps`` > 0 trains the first ``warmup_steps`` batches of the run at
    ``warmup_lr`` instead of the scheduled rate (He et al. 2016 warm ResNet-110 up at 0.01
    for about 400 batches); the schedule itself runs on unchanged.

    Examples
    --------
    >>> cfg = TrainConfig(epochs=3, optimizer="sgd", lr=0.1, schedule="cosine")
    >>> cfg.epochs, cfg.loss, cfg.batch_size
    (3, 'cross_entropy', 128)
    >>> TrainConfig(schedule="sometimes")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: schedule: expected one of none, step, ..., got 'sometimes'
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
    warmup_steps: int = 0
    warmup_lr: float | None = None

    def __post_init__(self) -> None:
        for name, constraint in PARAM_CONSTRAINTS.items():
            object.__setattr__(self, name, constraint.check(name, getattr(self, name)))
        if self.nesterov and (self.optimizer != "sgd" or self.momentum == 0):
            raise InputError("nesterov", "sgd with momentum > 0", f"{self.optimizer}")
        if (self.warmup_steps > 0) != (self.warmup_lr is not None):
            raise InputError(
                "warmup_lr",
                "a learning rate exactly when warmup_steps > 0",
                f"{self.warmup_lr!r} with warmup_steps = {self.warmup_steps}",
            )
        milestones = tuple(MILESTONE.check("milestones", m) for m in self.milestones)
        if list(milestones) != sorted(set(milestones)):
            raise InputError("milestones", "increasing epoch numbers", repr(list(milestones)))
        object.__setattr__(self, "milestones", milestones)
        if not isinstance(self.loss_params, dict):
            raise InputError("loss_params", "a table of loss parameters", repr(self.loss_params))
        if self.loss != "cross_entropy" or self.loss_params:
            from calibkit.losses import create_loss

            try:  # checks the name and the parameters
                create_loss(self.loss, **self.loss_params)
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
