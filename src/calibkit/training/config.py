"""Training settings: one frozen, checked dataclass (:class:`~calibkit.core.params.Settings`).

>>> cfg = TrainConfig(epochs=3, optimizer="sgd", lr=0.1, schedule="cosine")
>>> cfg.replace(epochs=5).epochs
5
>>> TrainConfig(optimizer="rmsprop")
Traceback (most recent call last):
...
calibkit.core.errors.InputError: optimizer: expected one of adam, sgd, got 'rmsprop'
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calibkit.core.binning import N_BINS
from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.params import Settings, param
from calibkit.core.validation import (
    BATCH_SIZE,
    EPOCHS,
    FRACTION,
    NON_NEGATIVE,
    POSITIVE,
    TRAINED_EPOCHS,
    Boolean,
    Choice,
    Integer,
    NoneOr,
    Registered,
    Table,
    TupleOf,
)

OPTIMIZERS = ("adam", "sgd")
SCHEDULES = ("none", "step", "cosine", "onecycle")


def _losses() -> Any:
    from calibkit.losses import LOSSES

    return LOSSES


class TrainConfig(Settings):
    """How one model is trained (``epochs = 0``: not at all, e.g. a pretrained model).

    ``schedule``: ``none``; ``step`` (multiply the learning rate by ``lr_decay`` at each epoch
    in ``milestones``); ``cosine`` (to 0 over the run, stepped per batch); ``onecycle``
    (PyTorch's one-cycle policy peaking at ``lr``, stepped per batch). ``warmup_steps`` > 0
    trains the first ``warmup_steps`` batches of the run at ``warmup_lr`` instead of the
    scheduled rate (He et al. 2016 warm ResNet-110 up at 0.01 for about 400 batches); the
    schedule itself runs on unchanged.

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

    epochs: int = param(default=10, check=EPOCHS, doc="Passes over the training data.")
    batch_size: int = param(default=128, check=BATCH_SIZE, doc="Samples per training batch.")
    optimizer: str = param(default="adam", check=Choice(*OPTIMIZERS), doc="The optimiser.")
    lr: float = param(default=1e-3, check=POSITIVE, doc="The (peak) learning rate.")
    momentum: float = param(default=0.9, check=FRACTION, doc="SGD's momentum.")
    nesterov: bool = param(
        default=False, check=Boolean(), doc="Nesterov momentum (SGD with momentum > 0 only)."
    )
    weight_decay: float = param(default=0.0, check=NON_NEGATIVE, doc="L2 weight decay.")
    schedule: str = param(
        default="none", check=Choice(*SCHEDULES), doc="The learning-rate schedule."
    )
    milestones: tuple[int, ...] = param(
        default=(),
        check=TupleOf(TRAINED_EPOCHS, order="increasing"),
        doc="The epochs at which the ``step`` schedule decays the learning rate.",
    )
    lr_decay: float = param(
        default=0.1, check=POSITIVE, doc="The factor of each decay of the ``step`` schedule."
    )
    augment: bool = param(
        default=False, check=Boolean(), doc="Random crop (4-pixel padding) and flip of batches."
    )
    loss: str = param(
        default="cross_entropy",
        check=Registered("loss", _losses),
        doc="The training loss (:data:`calibkit.losses.LOSSES`).",
    )
    loss_params: dict[str, Any] = param(
        factory=dict, check=Table("loss parameters"), doc="The loss's parameters."
    )
    eval_batch_size: int = param(
        default=1024, check=BATCH_SIZE, doc="Samples per batch of the held-out evaluation."
    )
    n_bins: int = param(
        default=15, check=N_BINS, doc="Equal-width bins of the per-epoch calibration metrics."
    )
    track_learning: bool = param(
        default=False,
        check=Boolean(),
        doc="Record when each training sample was learned, and its final logits (TrainResult).",
    )
    warmup_steps: int = param(
        default=0, check=Integer(0, 10**9), doc="Batches trained at ``warmup_lr`` first."
    )
    warmup_lr: float | None = param(
        default=None,
        check=NoneOr(POSITIVE),
        doc="The learning rate of the warm-up (exactly when ``warmup_steps`` > 0).",
    )

    def _check_params(self) -> None:
        if self.nesterov and (self.optimizer != "sgd" or self.momentum == 0):
            raise InputError("nesterov", "sgd with momentum > 0", f"{self.optimizer}")
        if (self.warmup_steps > 0) != (self.warmup_lr is not None):
            raise InputError(
                "warmup_lr",
                "a learning rate exactly when warmup_steps > 0",
                f"{self.warmup_lr!r} with warmup_steps = {self.warmup_steps}",
            )
        if self.loss != "cross_entropy" or self.loss_params:
            from calibkit.losses import create_loss

            try:  # checks the parameters
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
