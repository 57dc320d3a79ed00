"""Optimiser and learning-rate schedule from a :class:`TrainConfig`.

Schedules are stepped once per batch (``cosine`` and ``onecycle``) or once per epoch
(``step``); :func:`steps_per_batch` says which. A warm-up (``warmup_steps`` batches at
``warmup_lr``) is applied by :func:`optimizer_step` on top of any schedule: the schedule
runs on unchanged, only the rate of those first batches is replaced.

>>> import torch
>>> model = torch.nn.Linear(2, 2)
>>> cfg = TrainConfig(optimizer="sgd", lr=0.1, schedule="step", milestones=(2,), epochs=3)
>>> opt = build_optimizer(model, cfg)
>>> sched = build_scheduler(opt, cfg, batches_per_epoch=5)
>>> for _ in range(2):
...     opt.step()
...     sched.step()
>>> round(opt.param_groups[0]["lr"], 6)
0.01
"""

from __future__ import annotations

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import (
    CosineAnnealingLR,
    LambdaLR,
    LRScheduler,
    MultiStepLR,
    OneCycleLR,
)

from calibkit.training.config import TrainConfig


def build_optimizer(model: nn.Module, cfg: TrainConfig) -> Optimizer:
    """Adam or SGD (momentum, optionally Nesterov) over the model's trainable parameters."""
    params = [p for p in model.parameters() if p.requires_grad]
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    return torch.optim.SGD(
        params,
        lr=cfg.lr,
        momentum=cfg.momentum,
        nesterov=cfg.nesterov,
        weight_decay=cfg.weight_decay,
    )


def steps_per_batch(cfg: TrainConfig) -> bool:
    """True when the schedule advances after every batch, False after every epoch."""
    return cfg.schedule in ("cosine", "onecycle")


def build_scheduler(opt: Optimizer, cfg: TrainConfig, batches_per_epoch: int) -> LRScheduler:
    """The learning-rate schedule of ``cfg`` (a constant one for ``none``)."""
    total = max(cfg.epochs * batches_per_epoch, 1)
    if cfg.schedule == "step":
        return MultiStepLR(opt, milestones=list(cfg.milestones), gamma=cfg.lr_decay)
    if cfg.schedule == "cosine":
        return CosineAnnealingLR(opt, T_max=total)
    if cfg.schedule == "onecycle":
        return OneCycleLR(opt, max_lr=cfg.lr, total_steps=total)
    return LambdaLR(opt, lambda _: 1.0)


def warmup_lr(cfg: TrainConfig, step: int) -> float | None:
    """The warm-up learning rate of batch ``step`` (counted from 0 over the whole run), or
    ``None`` once the warm-up is over (the scheduled rate applies).

    >>> cfg = TrainConfig(lr=0.1, warmup_steps=2, warmup_lr=0.01)
    >>> [warmup_lr(cfg, step) for step in range(3)]
    [0.01, 0.01, None]
    """
    return cfg.warmup_lr if step < cfg.warmup_steps else None


def optimizer_step(opt: Optimizer, cfg: TrainConfig, step: int) -> None:
    """``opt.step()`` for batch ``step`` of the run, at :func:`warmup_lr` during the warm-up
    (the scheduled rates are put back afterwards, so the schedule is not disturbed)."""
    lr = warmup_lr(cfg, step)
    if lr is None:
        opt.step()
        return
    scheduled = [group["lr"] for group in opt.param_groups]
    for group in opt.param_groups:
        group["lr"] = lr
    opt.step()
    for group, rate in zip(opt.param_groups, scheduled, strict=True):
        group["lr"] = rate
