"""A small, deterministic training loop with per-epoch calibration tracking.

:func:`train` runs mini-batch training of a model on in-memory tensors and, after every
epoch, evaluates each held-out split (accuracy, NLL, ECE, optimal ECE; see
:mod:`calibkit.training.tracking`) and writes a summary line to stderr for the first and
last epochs and every tenth of the run. It returns the per-epoch history and the final logits
of every held-out split, so post-hoc calibration never needs the model again.

Determinism: the caller seeds the weights (``torch.manual_seed`` before building the model);
:func:`train` seeds the global generator again with ``seed`` (dropout) and draws the batch
order and augmentation from its own ``torch.Generator(seed)``. Given the same thread
count, two runs give bit-identical weights. With ``checkpoint=``, the full state (weights,
optimiser, schedule, both generators, history) is written atomically after every epoch and
a run that was killed resumes from the last finished epoch with the same result. A
checkpoint made with other settings is refused, except that a run under no schedule or the
step schedule may be extended to more epochs.

>>> import torch
>>> _ = torch.manual_seed(0)
>>> x, y = torch.randn(64, 3), torch.randint(0, 2, (64,))
>>> result = train(torch.nn.Linear(3, 2), (x, y), TrainConfig(epochs=2, batch_size=16),
...                seed=0, held_out={"test": (x, y)}, progress=False)
>>> len(result.history), result.logits["test"].shape
(2, (64, 2))
>>> "test_optimal_ece" in result.history[-1]
True
"""

from __future__ import annotations

import dataclasses
import io
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.data.augment import crop_and_flip
from calibkit.io.atomic import atomic_write_bytes
from calibkit.training.config import TrainConfig
from calibkit.training.optim import build_optimizer, build_scheduler, steps_per_batch
from calibkit.training.progress import Progress
from calibkit.training.tracking import track_split

#: A split as tensors: inputs ``(N, ...)`` float and labels ``(N,)`` int64.
Split = tuple[Tensor, Tensor]
#: A loss: ``(logits, labels) -> scalar``.
LossFn = Callable[[Tensor, Tensor], Tensor]

CHECKPOINT_VERSION = 1


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


def _save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write_bytes(path, buf.getvalue())


def _load_checkpoint(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        state: dict[str, Any] = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt or foreign file: say which
        raise InputError(
            "checkpoint", "a calibkit training checkpoint", f"{path} ({exc})"
        ) from None
    if state.get("version") != CHECKPOINT_VERSION:
        raise InputError("checkpoint", f"version {CHECKPOINT_VERSION}", f"{path}")
    return state


def train(
    model: nn.Module,
    train_split: Split,
    cfg: TrainConfig,
    *,
    seed: int,
    held_out: Mapping[str, Split],
    loss_fn: LossFn | None = None,
    checkpoint: Path | None = None,
    progress: bool = True,
    label: str = "",
) -> TrainResult:
    """Train ``model`` on ``train_split`` under ``cfg``; track and return ``held_out`` logits."""
    x, y = _check_split("train_split", train_split)
    if x.shape[0] == 0:
        raise InputError("train_split", "at least one sample", "an empty split")
    held = {name: _check_split(name, s) for name, s in held_out.items()}
    loss = loss_fn if loss_fn is not None else nn.functional.cross_entropy
    device = next(model.parameters()).device
    n = x.shape[0]
    batches = (n + cfg.batch_size - 1) // cfg.batch_size
    opt = build_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg, batches)
    per_batch = steps_per_batch(cfg)
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    history: list[dict[str, float]] = []
    last_wrong = torch.zeros(n, dtype=torch.int64)  # last epoch a sample was misclassified
    state = _load_checkpoint(checkpoint) if checkpoint is not None else None
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        gen.set_state(state["generator"])
        torch.set_rng_state(state["torch_rng"])
        if not _can_resume(state.get("config"), cfg):
            raise InputError(
                "checkpoint",
                "a checkpoint of a run with these training settings",
                f"{checkpoint} (made with other settings; delete it to start again)",
            )
        history = list(state["history"])
        last_wrong = state.get("last_wrong", last_wrong)
    start = time.perf_counter() - sum(h["seconds"] for h in history)
    for epoch in range(len(history) + 1, cfg.epochs + 1):
        t0 = time.perf_counter()
        bar = Progress(f"{label}epoch {epoch}/{cfg.epochs}", batches, enabled=progress)
        model.train()
        perm = torch.randperm(n, generator=gen)
        loss_sum = torch.zeros((), dtype=torch.float64)
        correct = torch.zeros((), dtype=torch.int64)
        for b in range(batches):
            idx = perm[b * cfg.batch_size : (b + 1) * cfg.batch_size]
            xb = x[idx]
            if cfg.augment:
                xb = crop_and_flip(xb, generator=gen)
            xb, yb = xb.to(device), y[idx].to(device)
            out = model(xb)
            batch_loss = loss(out, yb)
            opt.zero_grad(set_to_none=True)
            batch_loss.backward()
            opt.step()
            if per_batch:
                sched.step()
            with torch.no_grad():
                loss_sum += batch_loss.detach().double().cpu() * len(idx)
                hit = (out.argmax(1) == yb).cpu()
                correct += hit.sum()
                if cfg.track_learning:
                    last_wrong[idx[~hit]] = epoch
            bar.update(1, f"loss {batch_loss.item():.4f}" if bar.live else "")
        if not per_batch:
            sched.step()
        train_seconds = time.perf_counter() - t0
        record: dict[str, float] = {
            "epoch": float(epoch),
            "lr": float(opt.param_groups[0]["lr"]),
            "train_loss": float(loss_sum) / n,
            "train_accuracy": float(correct) / n,
        }
        t1 = time.perf_counter()
        tracking = 0.0
        for name, (hx, hy) in held.items():
            z = predict_logits(model, hx, cfg.eval_batch_size)
            t2 = time.perf_counter()
            for key, value in track_split(z, hy, cfg.n_bins).items():
                record[f"{name}_{key}"] = value
            tracking += time.perf_counter() - t2
        record["train_seconds"] = train_seconds
        record["eval_seconds"] = time.perf_counter() - t1
        record["tracking_seconds"] = tracking
        record["seconds"] = time.perf_counter() - t0
        history.append(record)
        shown = epoch in (1, cfg.epochs) or epoch % max(1, cfg.epochs // 10) == 0
        bar.close(_summary(record, held), keep=shown)
        if checkpoint is not None:
            _save_checkpoint(
                checkpoint,
                {
                    "version": CHECKPOINT_VERSION,
                    "config": _config_dict(cfg),
                    "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(),
                    "generator": gen.get_state(),
                    "torch_rng": torch.get_rng_state(),
                    "history": history,
                    "last_wrong": last_wrong,
                },
            )
    model.eval()
    logits = {
        name: predict_logits(model, hx, cfg.eval_batch_size).numpy()
        for name, (hx, _) in held.items()
    }
    labels = {name: hy.numpy().astype(np.int64) for name, (_, hy) in held.items()}
    learned = None
    if cfg.track_learning:
        logits["train"] = predict_logits(model, x, cfg.eval_batch_size).numpy()
        labels["train"] = y.numpy().astype(np.int64)
        done = last_wrong == cfg.epochs
        learned = torch.where(done, 0, last_wrong + 1).numpy().astype(np.int64)
    return TrainResult(history, logits, labels, time.perf_counter() - start, learned)


def _config_dict(cfg: TrainConfig) -> dict[str, Any]:
    """The settings as plain values (stored in checkpoints, compared on resume)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg), sort_keys=True))  # type: ignore[no-any-return]


def _can_resume(saved: object, cfg: TrainConfig) -> bool:
    """Same settings, or only more/fewer epochs under a schedule that does not depend on them."""
    if not isinstance(saved, dict):
        return False
    now = _config_dict(cfg)
    if saved == now:
        return True
    same_but_epochs = {**saved, "epochs": now["epochs"]} == now
    return same_but_epochs and not steps_per_batch(cfg)


def _summary(record: Mapping[str, float], held: Mapping[str, Split]) -> str:
    parts = [f"loss {record['train_loss']:.4f} acc {100 * record['train_accuracy']:.1f}%"]
    for name in held:
        parts.append(
            f"{name}: acc {100 * record[f'{name}_accuracy']:.1f}% "
            f"nll {record[f'{name}_nll']:.3f} ece {100 * record[f'{name}_ece']:.2f}% "
            f"(opt {100 * record[f'{name}_optimal_ece']:.2f}%)"
        )
    return " | ".join(parts) + f" | {record['seconds']:.1f}s"
