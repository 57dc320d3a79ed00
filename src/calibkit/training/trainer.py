"""A small, deterministic training loop with per-epoch calibration tracking.

:func:`train` runs mini-batch training of a model on in-memory tensors and, after every
epoch, evaluates each held-out split (accuracy, NLL, ECE, optimal ECE; see
:mod:`calibkit.training.tracking`). It prints nothing: it logs a summary line for the first
and last epochs and every tenth of the run, and every mini-batch's loss at ``DEBUG`` (see
:mod:`calibkit.core.progress`). It returns the per-epoch history and the final logits
of every held-out split, so post-hoc calibration never needs the model again.

Determinism: the caller seeds the weights (``torch.manual_seed`` before building the model);
:func:`train` seeds the global generator again with ``seed`` (dropout) and draws the batch
order and augmentation from its own ``torch.Generator(seed)``. Given the same thread
count, two runs give bit-identical weights. With ``checkpoint=``, the full state (weights,
optimiser, schedule, both generators, history) is written atomically after every epoch and
a run that was killed resumes from the last finished epoch with the same result. A
checkpoint made with other settings or for another model is refused (see
:mod:`calibkit.training.checkpoint`), except that a run under no schedule or the step
schedule may be extended to more epochs.

>>> import torch
>>> _ = torch.manual_seed(0)
>>> x, y = torch.randn(64, 3), torch.randint(0, 2, (64,))
>>> result = train(torch.nn.Linear(3, 2), (x, y), TrainConfig(epochs=2, batch_size=16),
...                seed=0, held_out={"test": (x, y)})
>>> len(result.history), result.logits["test"].shape
(2, (64, 2))
>>> "test_optimal_ece" in result.history[-1]
True
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.core.progress import ProgressEvent, report_step
from calibkit.data.augment import crop_and_flip
from calibkit.training.checkpoint import (
    TrainingState,
    check_checkpoint,
    read_checkpoint,
    save_checkpoint,
)
from calibkit.training.config import TrainConfig
from calibkit.training.optim import (
    build_optimizer,
    build_scheduler,
    optimizer_step,
    steps_per_batch,
)
from calibkit.training.tracking import track_split

#: A split as tensors: inputs ``(N, ...)`` float and labels ``(N,)`` int64.
Split = tuple[Tensor, Tensor]
#: A loss: ``(logits, labels) -> scalar``.
LossFn = Callable[[Tensor, Tensor], Tensor]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainResult:
    """Per-epoch ``history`` (one dict per epoch) and the final held-out ``logits``/``labels``.

    With ``cfg.track_learning``, ``logits``/``labels`` also hold the ``"train"`` split
    (eval mode, no augmentation) and ``learned_epoch`` gives, per training sample, the epoch
    from which its mini-batch prediction stayed correct to the end (0: wrong in the last
    epoch, never learned), as in Wang et al. (2021), Fig. 5.
    """

    history: list[dict[str, float]]
    logits: dict[str, npt.NDArray[np.float32]]
    labels: dict[str, npt.NDArray[np.int64]]
    seconds: float
    learned_epoch: npt.NDArray[np.int64] | None = None


def _check_split(name: str, split: Split) -> Split:
    x, y = split
    if not isinstance(x, Tensor) or not x.is_floating_point() or x.ndim < 2:
        raise InputError(name, "a float tensor of inputs (N, ...)", f"{type(x).__name__}")
    if not isinstance(y, Tensor) or y.dtype != torch.int64 or y.shape != (x.shape[0],):
        got = f"{y.dtype} {tuple(y.shape)}" if isinstance(y, Tensor) else type(y).__name__
        raise InputError(name, f"int64 labels of shape ({x.shape[0]},)", got)
    if not torch.isfinite(x).all():
        raise InputError(name, "finite inputs", "NaN or inf")
    return x, y


def training_loss(cfg: TrainConfig) -> LossFn:
    """The loss named in ``cfg`` with its parameters (plain cross-entropy by default)."""
    if cfg.loss == "cross_entropy" and not cfg.loss_params:
        return nn.functional.cross_entropy
    from calibkit.losses import create_loss

    loss: LossFn = create_loss(cfg.loss, **cfg.loss_params)
    return loss


def predict_logits(model: nn.Module, x: Tensor, batch_size: int = 1024) -> Tensor:
    """Logits of ``model`` in eval mode on ``x``, in batches, on ``x``'s device."""
    model.eval()
    device = next(model.parameters()).device
    with torch.inference_mode():
        parts = [
            model(x[i : i + batch_size].to(device)).float().cpu()
            for i in range(0, len(x), batch_size)
        ]
    return torch.cat(parts)


def train(
    model: nn.Module,
    train_split: Split,
    cfg: TrainConfig,
    *,
    seed: int,
    held_out: Mapping[str, Split],
    loss_fn: LossFn | None = None,
    checkpoint: Path | None = None,
    label: str = "",
) -> TrainResult:
    """Train ``model`` on ``train_split`` under ``cfg``; track and return ``held_out`` logits.

    ``loss_fn`` replaces the loss ``cfg`` names (see :func:`training_loss`); ``label`` starts
    every progress line (e.g. ``"mlp seed 0 "``).
    """
    x, y = _check_split("train_split", train_split)
    if x.shape[0] == 0:
        raise InputError("train_split", "at least one sample", "an empty split")
    held = {name: _check_split(name, s) for name, s in held_out.items()}
    loss = loss_fn if loss_fn is not None else training_loss(cfg)
    state = _start(model, cfg, seed, n=x.shape[0], checkpoint=checkpoint)
    start = time.perf_counter() - sum(h["seconds"] for h in state.history)
    for epoch in range(len(state.history) + 1, cfg.epochs + 1):
        t0 = time.perf_counter()
        record = _train_epoch(state, (x, y), cfg, epoch, loss, label)
        train_seconds = time.perf_counter() - t0
        tracked, eval_seconds, tracking_seconds = _track_held_out(model, held, cfg)
        record.update(tracked)
        record["train_seconds"] = train_seconds
        record["eval_seconds"] = eval_seconds
        record["tracking_seconds"] = tracking_seconds
        record["seconds"] = time.perf_counter() - t0
        state.history.append(record)
        if epoch in (1, cfg.epochs) or epoch % max(1, cfg.epochs // 10) == 0:
            line = f"{label}epoch {epoch}/{cfg.epochs}"
            event = ProgressEvent(line, epoch, cfg.epochs, _summary(record, held))
            report_step(log, event, logging.INFO)
        if checkpoint is not None:
            save_checkpoint(checkpoint, state.checkpoint(cfg))
    return _result(state, (x, y), held, cfg, time.perf_counter() - start)


def _start(
    model: nn.Module, cfg: TrainConfig, seed: int, n: int, checkpoint: Path | None
) -> TrainingState:
    """A fresh run's state, seeded, or the state restored from ``checkpoint`` if it exists."""
    batches = (n + cfg.batch_size - 1) // cfg.batch_size
    opt = build_optimizer(model, cfg)
    state = TrainingState(
        model=model,
        optimizer=opt,
        scheduler=build_scheduler(opt, cfg, batches),
        generator=torch.Generator().manual_seed(seed),
        history=[],
        last_wrong=torch.zeros(n, dtype=torch.int64),
    )
    torch.manual_seed(seed)
    saved = read_checkpoint(checkpoint) if checkpoint is not None else None
    if saved is not None and checkpoint is not None:
        check_checkpoint(saved, checkpoint, cfg, model)
        state.restore(saved)
    return state


def _train_epoch(
    state: TrainingState,
    split: Split,
    cfg: TrainConfig,
    epoch: int,
    loss: LossFn,
    label: str,
) -> dict[str, float]:
    """One pass over the shuffled training split; the epoch's loss and accuracy."""
    x, y = split
    model, opt, gen = state.model, state.optimizer, state.generator
    device = next(model.parameters()).device
    n, per_batch = x.shape[0], steps_per_batch(cfg)
    batches = (n + cfg.batch_size - 1) // cfg.batch_size
    live, bar = log.isEnabledFor(logging.DEBUG), f"{label}epoch {epoch}/{cfg.epochs}"
    model.train()
    perm = torch.randperm(n, generator=gen)
    loss_sum = torch.zeros((), dtype=torch.float64)
    correct = torch.zeros((), dtype=torch.int64)
    for b in range(batches):
        idx = perm[b * cfg.batch_size : (b + 1) * cfg.batch_size]
        xb = crop_and_flip(x[idx], generator=gen) if cfg.augment else x[idx]
        xb, yb = xb.to(device), y[idx].to(device)
        out = model(xb)
        batch_loss = loss(out, yb)
        opt.zero_grad(set_to_none=True)
        batch_loss.backward()
        optimizer_step(opt, cfg, step=(epoch - 1) * batches + b)
        if per_batch:
            state.scheduler.step()
        with torch.no_grad():
            loss_sum += batch_loss.detach().double().cpu() * len(idx)
            hit = (out.argmax(1) == yb).cpu()
            correct += hit.sum()
            if cfg.track_learning:
                state.last_wrong[idx[~hit]] = epoch
        if live:
            text = f"loss {batch_loss.item():.4f}"
            report_step(log, ProgressEvent(bar, b + 1, batches, text))
    if not per_batch:
        state.scheduler.step()
    return {
        "epoch": float(epoch),
        "lr": float(opt.param_groups[0]["lr"]),
        "train_loss": float(loss_sum) / n,
        "train_accuracy": float(correct) / n,
    }


def _track_held_out(
    model: nn.Module, held: Mapping[str, Split], cfg: TrainConfig
) -> tuple[dict[str, float], float, float]:
    """Every held-out split's tracked values (``<split>_<value>``), the seconds spent
    evaluating (logits and tracking) and, of those, tracking."""
    t1 = time.perf_counter()
    record: dict[str, float] = {}
    tracking = 0.0
    for name, (hx, hy) in held.items():
        z = predict_logits(model, hx, cfg.eval_batch_size)
        t2 = time.perf_counter()
        for key, value in track_split(z, hy, cfg.n_bins).items():
            record[f"{name}_{key}"] = value
        tracking += time.perf_counter() - t2
    return record, time.perf_counter() - t1, tracking


def _result(
    state: TrainingState,
    split: Split,
    held: Mapping[str, Split],
    cfg: TrainConfig,
    seconds: float,
) -> TrainResult:
    """The history and the final logits of every held-out split (and of ``train``)."""
    model = state.model
    model.eval()
    logits = {
        name: predict_logits(model, hx, cfg.eval_batch_size).numpy()
        for name, (hx, _) in held.items()
    }
    labels = {name: hy.numpy().astype(np.int64) for name, (_, hy) in held.items()}
    learned = None
    if cfg.track_learning:
        x, y = split
        logits["train"] = predict_logits(model, x, cfg.eval_batch_size).numpy()
        labels["train"] = y.numpy().astype(np.int64)
        last_wrong = state.last_wrong
        done = last_wrong == cfg.epochs
        learned = torch.where(done, 0, last_wrong + 1).numpy().astype(np.int64)
    return TrainResult(state.history, logits, labels, seconds, learned)


def _summary(record: Mapping[str, float], held: Mapping[str, Split]) -> str:
    parts = [f"loss {record['train_loss']:.4f} acc {100 * record['train_accuracy']:.1f}%"]
    for name in held:
        parts.append(
            f"{name}: acc {100 * record[f'{name}_accuracy']:.1f}% "
            f"nll {record[f'{name}_nll']:.3f} ece {100 * record[f'{name}_ece']:.2f}% "
            f"(opt {100 * record[f'{name}_optimal_ece']:.2f}%)"
        )
    return " | ".join(parts) + f" | {record['seconds']:.1f}s"
