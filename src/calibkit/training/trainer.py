"""A small, deterministic training loop with per-epoch calibration tracking.

:func:`train` runs mini-batch training of a model on in-memory tensors and, after every
epoch, evaluates each held-out split (accuracy, NLL, ECE, optimal ECE; see
:mod:`calibkit.training.tracking`). It prints nothing: it logs a summary line for the first
and last epochs and every tenth of the run, and every mini-batch's loss at ``DEBUG`` (see
:mod:`calibkit.core.progress`). It returns the per-epoch history and the final logits
of every held-out split, so post-hoc calibration never needs the model again.

Devices: training runs on the device of the model's parameters. The training and held-out
splits are moved there once when they fit (on a GPU, in half of its free memory; see
:func:`resident`), the augmentation is done there on draws made on the host (the epoch's
batch order and crop/flip draws are sent in one copy), and the epoch's loss and accuracy
are summed there: the host waits for the device once per epoch, not at every step. On the
CPU this is the computation it always was, bit for bit.

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

import itertools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.core.progress import ProgressEvent, report_step
from calibkit.data.augment import apply_crop_and_flip, draw_crop_and_flip
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

#: The share of a GPU's free memory the splits may take to be kept on it for the run.
RESIDENT_SHARE = 0.5


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
    """Float32 logits of ``model`` in eval mode on ``x``, in batches, on the CPU."""
    return device_logits(model, x, batch_size).cpu()


def device_logits(model: nn.Module, x: Tensor, batch_size: int = 1024) -> Tensor:
    """Float32 logits of ``model`` in eval mode on ``x``, in batches, left on the model's
    device (the host waits for none of the batches)."""
    model.eval()
    device = _device_of(model)
    with torch.inference_mode():
        parts = [
            model(x[i : i + batch_size].to(device)).float() for i in range(0, len(x), batch_size)
        ]
    return torch.cat(parts)


def _device_of(model: nn.Module) -> torch.device:
    """The device of ``model``'s first parameter (or buffer; the CPU if it has neither)."""
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        return tensor.device
    return torch.device("cpu")


def resident(tensors: Sequence[Tensor], device: torch.device) -> list[Tensor]:
    """``tensors`` moved to ``device`` if they fit there, else left where they are.

    They fit on a CUDA device when together they take at most :data:`RESIDENT_SHARE` of its
    free memory (the rest is for the model, its gradients and activations), and always on
    any other device (the CPU: nothing moves).
    """
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        if sum(t.nbytes for t in tensors) > RESIDENT_SHARE * free:
            return list(tensors)
    return [t.to(device) for t in tensors]


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

    Examples
    --------
    A small MLP, two epochs on random images, its logits on a held-out split tracked:

    >>> from calibkit import TrainConfig, create_model
    >>> _ = torch.manual_seed(0)
    >>> x, y = torch.randn(64, 3, 32, 32), torch.randint(0, 3, (64,))
    >>> model = create_model("mlp", 3, hidden=(16,))
    >>> cfg = TrainConfig(epochs=2, batch_size=16)
    >>> result = train(model, (x[:48], y[:48]), cfg, seed=0, held_out={"val": (x[48:], y[48:])})
    >>> len(result.history), tuple(result.logits["val"].shape)
    (2, (16, 3))
    """
    x, y = _check_split("train_split", train_split)
    if x.shape[0] == 0:
        raise InputError("train_split", "at least one sample", "an empty split")
    held = {name: _check_split(name, s) for name, s in held_out.items()}
    loss = loss_fn if loss_fn is not None else training_loss(cfg)
    device = _device_of(model)
    flat = resident([x, y, *itertools.chain.from_iterable(held.values())], device)
    x, y = flat[0], flat[1]
    held = {name: (flat[2 + 2 * i], flat[3 + 2 * i]) for i, name in enumerate(held)}
    state = _start(model, cfg, seed, n=x.shape[0], checkpoint=checkpoint, device=device)
    start = time.perf_counter() - sum(h["seconds"] for h in state.history)
    for epoch in range(len(state.history) + 1, cfg.epochs + 1):
        t0 = time.perf_counter()
        loss_sum, correct = train_epoch(state, (x, y), cfg, epoch, loss, label)
        n = x.shape[0]
        total_loss, total_correct = torch.stack([loss_sum, correct.double()]).tolist()
        record = {
            "epoch": float(epoch),
            "lr": float(state.optimizer.param_groups[0]["lr"]),
            "train_loss": total_loss / n,
            "train_accuracy": total_correct / n,
        }
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
    model: nn.Module,
    cfg: TrainConfig,
    seed: int,
    n: int,
    checkpoint: Path | None,
    device: torch.device,
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
    state.last_wrong = state.last_wrong.to(device)
    return state


def epoch_draws(
    n: int, cfg: TrainConfig, generator: torch.Generator
) -> tuple[Tensor, Tensor | None]:
    """An epoch's random draws on the host, in the order the loop has always made them: the
    batch order (a permutation of ``n``) and, with ``cfg.augment``, each batch's crop
    offsets and flips as rows ``(top, left, flip)`` of one ``(3, n)`` tensor (column ``j``
    for the ``j``-th sample of the permutation), or None."""
    perm = torch.randperm(n, generator=generator)
    if not cfg.augment:
        return perm, None
    parts = []
    for b in range(0, n, cfg.batch_size):
        top, left, flip = draw_crop_and_flip(min(cfg.batch_size, n - b), generator=generator)
        parts.append(torch.stack([top, left, flip.long()]))
    return perm, torch.cat(parts, dim=1)


def train_epoch(
    state: TrainingState,
    split: Split,
    cfg: TrainConfig,
    epoch: int,
    loss: LossFn,
    label: str = "",
) -> tuple[Tensor, Tensor]:
    """One pass over the shuffled training split: the sum of the batch losses (float64,
    each times its batch size) and the count of correct predictions, as tensors on the
    model's device (the host waits for none of the steps)."""
    x, y = split
    model, opt, gen = state.model, state.optimizer, state.generator
    device = _device_of(model)
    n, per_batch = x.shape[0], steps_per_batch(cfg)
    batches = (n + cfg.batch_size - 1) // cfg.batch_size
    live, bar = log.isEnabledFor(logging.DEBUG), f"{label}epoch {epoch}/{cfg.epochs}"
    model.train()
    perm, draws = epoch_draws(n, cfg, gen)
    if device.type != "cpu":  # one copy to the device per epoch (none on the CPU)
        plan = perm[None] if draws is None else torch.cat([perm[None], draws])
        plan = plan.pin_memory() if device.type == "cuda" else plan
        plan = plan.to(device, non_blocking=True)
        perm, draws = plan[0], None if draws is None else plan[1:]
    order = perm.to(x.device)  # the batches' rows of x (on the host if x did not fit)
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    for b in range(batches):
        rows = slice(b * cfg.batch_size, (b + 1) * cfg.batch_size)
        idx = perm[rows]
        xb, yb = x[order[rows]].to(device), y[order[rows]].to(device)
        if draws is not None:
            top, left, flip = draws[:, rows]
            xb = apply_crop_and_flip(xb, top, left, flip.bool())
        out = model(xb)
        batch_loss = loss(out, yb)
        opt.zero_grad(set_to_none=True)
        batch_loss.backward()
        optimizer_step(opt, cfg, step=(epoch - 1) * batches + b)
        if per_batch:
            state.scheduler.step()
        with torch.no_grad():
            loss_sum += batch_loss.detach().double() * len(idx)
            hit = out.argmax(1) == yb
            correct += hit.sum()
            if cfg.track_learning:  # idx has no repeats: no host round trip for a mask
                wrong = state.last_wrong[idx]
                state.last_wrong[idx] = torch.where(hit, wrong, epoch)
        if live:
            text = f"loss {batch_loss.item():.4f}"
            report_step(log, ProgressEvent(bar, b + 1, batches, text))
    if not per_batch:
        state.scheduler.step()
    return loss_sum, correct


def _track_held_out(
    model: nn.Module, held: Mapping[str, Split], cfg: TrainConfig
) -> tuple[dict[str, float], float, float]:
    """Every held-out split's tracked values (``<split>_<value>``), the seconds spent
    evaluating (logits and tracking) and, of those, tracking."""
    t1 = time.perf_counter()
    record: dict[str, float] = {}
    tracking = 0.0
    for name, (hx, hy) in held.items():
        z = device_logits(model, hx, cfg.eval_batch_size).cpu()
        hy = hy.cpu()
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
    labels = {name: hy.cpu().numpy().astype(np.int64) for name, (_, hy) in held.items()}
    learned = None
    if cfg.track_learning:
        x, y = split
        logits["train"] = predict_logits(model, x, cfg.eval_batch_size).numpy()
        labels["train"] = y.cpu().numpy().astype(np.int64)
        last_wrong = state.last_wrong.cpu()
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
