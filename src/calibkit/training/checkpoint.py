"""The state of a training run between epochs, saved and restored for an exact resume.

A checkpoint holds the weights, the optimiser, the learning-rate schedule, both random
generators (the loop's own and PyTorch's global one), the per-epoch history and, per
training sample, the last epoch it was misclassified. It is written atomically after every
epoch. Before anything is loaded into the model, a checkpoint is checked: its version, its
keys, the settings it was made with (see :func:`can_resume`) and the names and shapes of
its weights; a mismatch raises an :class:`~calibkit.core.errors.InputError` naming the
file and the cause.
"""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes
from calibkit.training.config import TrainConfig
from calibkit.training.optim import steps_per_batch

CHECKPOINT_VERSION = 1

#: What a checkpoint must hold.
CHECKPOINT_KEYS = (
    "version",
    "config",
    "model",
    "optimizer",
    "scheduler",
    "generator",
    "torch_rng",
    "history",
    "last_wrong",
)


@dataclass
class TrainingState:
    """Everything a run carries from one epoch to the next."""

    model: nn.Module
    optimizer: Optimizer
    scheduler: LRScheduler
    generator: torch.Generator
    history: list[dict[str, float]]
    last_wrong: Tensor  # per training sample, the last epoch it was misclassified

    def checkpoint(self, cfg: TrainConfig) -> dict[str, Any]:
        """The state as a checkpoint of a run under ``cfg`` (a run on a GPU also keeps
        that GPU's random generator, which its dropout draws from)."""
        saved = {
            "version": CHECKPOINT_VERSION,
            "config": config_dict(cfg),
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "generator": self.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
            "history": self.history,
            "last_wrong": self.last_wrong.cpu(),
        }
        if self.last_wrong.device.type == "cuda":
            saved["cuda_rng"] = torch.cuda.get_rng_state(self.last_wrong.device)
        return saved

    def restore(self, saved: dict[str, Any]) -> None:
        """Load a checkpoint already checked by :func:`check_checkpoint`."""
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.generator.set_state(saved["generator"])
        torch.set_rng_state(saved["torch_rng"])
        self.history = list(saved["history"])
        device = self.last_wrong.device
        self.last_wrong = saved["last_wrong"].to(device)
        if "cuda_rng" in saved and device.type == "cuda":
            torch.cuda.set_rng_state(saved["cuda_rng"], device)


def config_dict(cfg: TrainConfig) -> dict[str, Any]:
    """The settings as plain values (stored in checkpoints, compared on resume)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg), sort_keys=True))  # type: ignore[no-any-return]


def can_resume(saved: object, cfg: TrainConfig) -> bool:
    """Same settings, or only more/fewer epochs under a schedule that does not depend on them
    (a setting added to calibkit after ``saved`` was written counts as its default)."""
    if not isinstance(saved, dict):
        return False
    saved, now = {**config_dict(TrainConfig()), **saved}, config_dict(cfg)
    if saved == now:
        return True
    same_but_epochs = {**saved, "epochs": now["epochs"]} == now
    return same_but_epochs and not steps_per_batch(cfg)


def save_checkpoint(path: Path, saved: dict[str, Any]) -> None:
    """Write ``saved`` to ``path`` atomically (a kill leaves the previous checkpoint)."""
    buf = io.BytesIO()
    torch.save(saved, buf)
    atomic_write_bytes(path, buf.getvalue())


def read_checkpoint(path: Path) -> dict[str, Any] | None:
    """The checkpoint at ``path`` (None if there is none), its version and keys checked."""
    if not path.exists():
        return None
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # corrupt or foreign file: say which
        raise InputError(
            "checkpoint", "a calibkit training checkpoint", f"{path} ({exc})"
        ) from None
    if not isinstance(saved, dict):
        raise InputError("checkpoint", "a calibkit training checkpoint", f"{path}")
    if saved.get("version") != CHECKPOINT_VERSION:
        raise InputError("checkpoint", f"version {CHECKPOINT_VERSION}", f"{path}")
    missing = [key for key in CHECKPOINT_KEYS if key not in saved]
    if missing:
        raise InputError(
            "checkpoint", "a complete training checkpoint", f"{path} (no {', '.join(missing)})"
        )
    return saved


def check_checkpoint(saved: dict[str, Any], path: Path, cfg: TrainConfig, model: nn.Module) -> None:
    """Refuse a checkpoint of other settings or of a model with other weights."""
    if not can_resume(saved["config"], cfg):
        raise InputError(
            "checkpoint",
            "a checkpoint of a run with these training settings",
            f"{path} (made with other settings; delete it to start again)",
        )
    weights, expected = saved["model"], model.state_dict()
    if not isinstance(weights, dict) or weights.keys() != expected.keys():
        raise InputError(
            "checkpoint",
            "the weights of this model",
            f"{path} (other parameter names; delete it to start again)",
        )
    for name, value in expected.items():
        got = weights[name]
        if not isinstance(got, Tensor) or got.shape != value.shape:
            shape = tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__
            raise InputError(
                "checkpoint",
                f"the weights of this model ({name}: {tuple(value.shape)})",
                f"{path} ({name}: {shape}; delete it to start again)",
            )
