"""Tests of the optimiser and learning-rate schedules built from a TrainConfig."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from calibkit.training import TrainConfig, build_optimizer, build_scheduler, train
from calibkit.training.optim import optimizer_step, steps_per_batch


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    return model


def _lrs(cfg: TrainConfig, batches: int) -> list[float]:
    """The learning rate used at every batch of a run, stepping as the trainer does."""
    model = _model()
    opt = build_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg, batches)
    seen = []
    for _ in range(cfg.epochs):
        for _ in range(batches):
            seen.append(opt.param_groups[0]["lr"])
            opt.step()
            if steps_per_batch(cfg):
                sched.step()
        if not steps_per_batch(cfg):
            sched.step()
    seen.append(opt.param_groups[0]["lr"])  # after the run
    return seen


def test_adam() -> None:
    model = _model()
    opt = build_optimizer(model, TrainConfig(lr=0.01, weight_decay=1e-4))
    assert isinstance(opt, torch.optim.Adam)
    (group,) = opt.param_groups
    assert group["lr"] == 0.01
    assert group["weight_decay"] == 1e-4
    assert len(group["params"]) == 4


def test_sgd_momentum_nesterov_weight_decay() -> None:
    model = _model()
    cfg = TrainConfig(optimizer="sgd", lr=0.1, momentum=0.8, nesterov=True, weight_decay=5e-4)
    opt = build_optimizer(model, cfg)
    assert isinstance(opt, torch.optim.SGD)
    (group,) = opt.param_groups
    assert group["lr"] == 0.1
    assert group["momentum"] == 0.8
    assert group["nesterov"] is True
    assert group["weight_decay"] == 5e-4
    plain = build_optimizer(model, TrainConfig(optimizer="sgd", momentum=0.0))
    assert plain.param_groups[0]["nesterov"] is False
    assert plain.param_groups[0]["momentum"] == 0.0


def test_frozen_parameters_are_left_out() -> None:
    model = _model()
    model[0].weight.requires_grad_(False)
    opt = build_optimizer(model, TrainConfig(optimizer="sgd"))
    params = opt.param_groups[0]["params"]
    assert len(params) == 3
    assert all(p is not model[0].weight for p in params)


def test_steps_per_batch() -> None:
    assert steps_per_batch(TrainConfig(schedule="cosine"))
    assert steps_per_batch(TrainConfig(schedule="onecycle"))
    assert not steps_per_batch(TrainConfig(schedule="step"))
    assert not steps_per_batch(TrainConfig(schedule="none"))


def test_step_schedule_decays_after_each_milestone() -> None:
    lr, decay, batches = 0.5, 0.2, 3
    cfg = TrainConfig(
        optimizer="sgd", lr=lr, schedule="step", milestones=(2, 4), lr_decay=decay, epochs=5
    )
    seen = _lrs(cfg, batches)
    per_epoch = [seen[e * batches] for e in range(cfg.epochs)]
    # epochs 1, 2 at lr; 3, 4 at lr*decay; 5 at lr*decay^2 (stepped after each epoch)
    expected = [lr, lr, lr * decay, lr * decay, lr * decay**2]
    assert per_epoch == pytest.approx(expected, rel=1e-12)
    for e in range(cfg.epochs):  # constant within an epoch
        assert len(set(seen[e * batches : (e + 1) * batches])) == 1


def test_cosine_is_stepped_per_batch_and_ends_near_zero() -> None:
    lr, batches, epochs = 0.1, 4, 3
    cfg = TrainConfig(optimizer="sgd", lr=lr, schedule="cosine", epochs=epochs)
    seen = _lrs(cfg, batches)
    total = epochs * batches
    assert seen[0] == pytest.approx(lr)
    assert seen[1] < seen[0]  # changes within the first epoch
    for t in range(total + 1):
        assert seen[t] == pytest.approx(lr * (1 + math.cos(math.pi * t / total)) / 2, abs=1e-12)
    assert seen[-1] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in itertools.pairwise(seen))


def test_onecycle_peaks_at_lr() -> None:
    lr, batches, epochs = 0.2, 5, 4
    cfg = TrainConfig(lr=lr, schedule="onecycle", epochs=epochs)
    seen = _lrs(cfg, batches)
    assert max(seen) == pytest.approx(lr, rel=1e-9)
    assert seen[0] == pytest.approx(lr / 25)  # PyTorch's default div_factor
    assert seen[0] < seen[2]
    assert seen[-2] < lr / 100
    peak = seen.index(max(seen))
    assert 0 < peak < len(seen) - 2


def test_onecycle_is_set_up_for_every_batch_of_the_run() -> None:
    cfg = TrainConfig(lr=0.2, schedule="onecycle", epochs=2)
    model = _model()
    opt = build_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg, batches_per_epoch=3)
    for _ in range(6):
        opt.step()
        sched.step()  # 6 = epochs * batches steps are allowed (one more would raise)
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 7 times"):
        sched.step()


def test_none_schedule_is_constant() -> None:
    cfg = TrainConfig(optimizer="sgd", lr=0.05, schedule="none", epochs=3)
    seen = _lrs(cfg, 2)
    assert seen == [0.05] * len(seen)


def _trained_lrs(cfg: TrainConfig, n: int) -> list[float]:
    """The learning rate of every optimiser step of :func:`train` on ``n`` samples."""
    seen: list[float] = []

    def record(opt: torch.optim.Optimizer, *_: object) -> None:
        seen.append(opt.param_groups[0]["lr"])

    x, y = torch.randn(n, 3), torch.arange(n) % 2
    handle = register_optimizer_step_pre_hook(record)
    try:
        train(_model(), (x, y), cfg, seed=0, held_out={})
    finally:
        handle.remove()
    return seen


def test_warmup_replaces_the_first_batches_of_a_step_schedule() -> None:
    # 3 epochs of 3 batches; 4 warm-up batches at 0.01, then 0.1, halved from epoch 3 on
    cfg = TrainConfig(
        epochs=3,
        batch_size=2,
        optimizer="sgd",
        lr=0.1,
        schedule="step",
        milestones=(2,),
        lr_decay=0.5,
        warmup_steps=4,
        warmup_lr=0.01,
    )
    expected = [0.01, 0.01, 0.01, 0.01, 0.1, 0.1, 0.05, 0.05, 0.05]
    assert _trained_lrs(cfg, n=6) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("schedule", ["none", "step", "cosine", "onecycle"])
def test_no_warmup_leaves_every_schedule_as_it_was(schedule: str) -> None:
    milestones = (1,) if schedule == "step" else ()
    cfg = TrainConfig(
        epochs=2, batch_size=2, optimizer="sgd", schedule=schedule, milestones=milestones
    )
    assert cfg.warmup_steps == 0
    assert _trained_lrs(cfg, n=6) == _lrs(cfg, 3)[:-1]


def test_warmup_composes_with_a_per_batch_schedule() -> None:
    # the cosine schedule runs on under the warm-up: batch 3 gets its scheduled rate
    cfg = TrainConfig(epochs=2, batch_size=2, optimizer="sgd", lr=0.1, schedule="cosine")
    warm = cfg.replace(warmup_steps=2, warmup_lr=0.001)
    cold = _trained_lrs(cfg, n=6)
    assert _trained_lrs(warm, n=6) == [0.001, 0.001, *cold[2:]]


def test_optimizer_step_puts_the_scheduled_rate_back() -> None:
    cfg = TrainConfig(optimizer="sgd", lr=0.1, warmup_steps=1, warmup_lr=0.01)
    opt = build_optimizer(_model(), cfg)
    optimizer_step(opt, cfg, step=0)
    assert opt.param_groups[0]["lr"] == 0.1
