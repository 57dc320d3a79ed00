"""Training classifiers for calibration studies: settings, optimisers, the loop, tracking."""

from __future__ import annotations

from calibkit.training.checkpoint import TrainingState
from calibkit.training.config import OPTIMIZERS, SCHEDULES, TrainConfig
from calibkit.training.optim import build_optimizer, build_scheduler
from calibkit.training.tracking import TRACKED, TRACKING_TEMPERATURES, track_split
from calibkit.training.trainer import TrainResult, predict_logits, train, training_loss

__all__ = [
    "OPTIMIZERS",
    "SCHEDULES",
    "TRACKED",
    "TRACKING_TEMPERATURES",
    "TrainConfig",
    "TrainResult",
    "TrainingState",
    "build_optimizer",
    "build_scheduler",
    "predict_logits",
    "track_split",
    "train",
    "training_loss",
]
