"""A PyTorch Lightning callback that tracks calibration (install ``calibkit[lightning]``).

After every validation epoch, :class:`CalibrationCallback` logs the accuracy, NLL, ECE, the
optimal ECE (the lowest ECE over the temperature grid of
:data:`~calibkit.training.tracking.TRACKING_TEMPERATURES`) and that temperature of the
validation outputs: the values of :func:`~calibkit.training.tracking.track_split`, the same
as the built-in trainer records. With ``fit_temperature=True`` it fits
:class:`~calibkit.calibrators.TemperatureScaling` on the last validation epoch's outputs when
training ends (and writes it as JSON to ``save_path`` if given).

The contract (the only change a LightningModule needs): ``validation_step`` returns a mapping
with the batch's pre-softmax ``"logits"`` ``(B, K)`` and integer ``"labels"`` ``(B,)``::

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y))
        return {"logits": logits, "labels": y}

Each batch updates calibkit's one accumulator,
:class:`~calibkit.metrics.StreamingCalibration` (on the module's device), whose
:meth:`~calibkit.metrics.StreamingCalibration.sync` sums it over the processes at the end
of the epoch: accuracy, NLL and ECE come from it. The optimal ECE searches temperatures on
the outputs themselves, so the callback also keeps them on the CPU (detached) for the
epoch; the model is not run again. On several processes each one's outputs are gathered
with ``LightningModule.all_gather``, which needs equal shard sizes (as Lightning's
distributed sampler gives). The sanity-check epoch is not logged.

This is the only module that imports ``lightning``; it is not re-exported from ``calibkit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

try:
    import lightning.pytorch as pl
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "calibkit.training.lightning needs PyTorch Lightning: pip install 'calibkit[lightning]'"
    ) from exc

from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.core.binning import check_n_bins
from calibkit.core.errors import InputError
from calibkit.metrics.streaming import StreamingCalibration
from calibkit.training.tracking import TRACKED, track_split


class CalibrationCallback(pl.Callback):
    """Log calibration after each validation epoch; optionally fit temperature scaling.

    Parameters
    ----------
    n_bins : int
        Number of equal-width bins of the ECE.
    prefix : str
        Prefix of the logged names (``"val_ece"``, ``"val_nll"``, ``"val_optimal_ece"``, ...).
    fit_temperature : bool
        Fit :class:`~calibkit.calibrators.TemperatureScaling` on the last validation
        epoch's outputs at the end of training.
    save_path : str or Path, optional
        Where to write the fitted temperature scaling as JSON (needs ``fit_temperature``).

    Attributes
    ----------
    history_ : list of dict
        One row of :data:`~calibkit.training.tracking.TRACKED` values per validation epoch
        (float64, as logged), with the epoch number.
    temperature_ : TemperatureScaling or None
        The fitted calibrator (after training, with ``fit_temperature=True``).
    """

    def __init__(
        self,
        *,
        n_bins: int = 15,
        prefix: str = "val_",
        fit_temperature: bool = False,
        save_path: str | Path | None = None,
    ) -> None:
        self.n_bins = check_n_bins(n_bins)
        if save_path is not None and not fit_temperature:
            raise InputError("save_path", "fit_temperature=True beside it", "fit_temperature=False")
        self.prefix = prefix
        self.fit_temperature = fit_temperature
        self.save_path = None if save_path is None else Path(save_path)
        self.history_: list[dict[str, float]] = []
        self.temperature_: TemperatureScaling | None = None
        self._batches: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._metric = StreamingCalibration(n_bins=self.n_bins)
        self._last: tuple[torch.Tensor, torch.Tensor] | None = None

    def on_validation_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._batches = []
        self._metric = StreamingCalibration(n_bins=self.n_bins, device=pl_module.device)

    def on_validation_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int = 0,
    ) -> None:
        logits, labels = batch_outputs(outputs)
        self._batches.append((logits, labels))
        self._metric.update(labels, logits=logits)

    def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.sanity_checking or not self._batches:
            return
        logits = torch.cat([z for z, _ in self._batches])
        labels = torch.cat([y for _, y in self._batches])
        if trainer.world_size > 1:
            logits, labels = _gather(pl_module, logits), _gather(pl_module, labels)
            self._metric.sync()  # every process's sums (an all_reduce)
        self._batches = []
        self._last = (logits, labels)
        row = track_split(logits, labels, n_bins=self.n_bins, metric=self._metric)
        for name in TRACKED:
            value = torch.tensor(row[name], dtype=torch.float64)
            pl_module.log(self.prefix + name, value, on_epoch=True, rank_zero_only=True)
        self.history_.append({"epoch": float(trainer.current_epoch), **row})

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not self.fit_temperature or self._last is None:
            return
        logits, labels = self._last
        self.temperature_ = TemperatureScaling().fit(logits, labels)
        if self.save_path is not None and trainer.is_global_zero:
            self.temperature_.save(self.save_path)


def _gather(pl_module: pl.LightningModule, tensor: torch.Tensor) -> torch.Tensor:
    """Every process's ``tensor``, concatenated along the first axis (on the CPU)."""
    gathered = pl_module.all_gather(tensor)
    assert isinstance(gathered, torch.Tensor)
    return gathered.reshape(-1, *tensor.shape[1:]).cpu()


def batch_outputs(outputs: object) -> tuple[torch.Tensor, torch.Tensor]:
    """The detached CPU ``(logits, labels)`` of one ``validation_step`` return value.

    >>> z, y = batch_outputs({"logits": torch.zeros(2, 3), "labels": torch.tensor([0, 2])})
    >>> tuple(z.shape), y.tolist()
    ((2, 3), [0, 2])
    """
    if not isinstance(outputs, Mapping) or not {"logits", "labels"} <= outputs.keys():
        got = type(outputs).__name__
        if isinstance(outputs, Mapping):
            got = "a mapping with keys " + ", ".join(sorted(map(str, outputs)))
        expected = 'a mapping with "logits" and "labels" returned by validation_step'
        raise InputError("validation_step outputs", expected, got)
    logits, labels = (torch.as_tensor(outputs[k]).detach().cpu() for k in ("logits", "labels"))
    return logits, labels
