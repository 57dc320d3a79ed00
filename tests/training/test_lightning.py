"""CalibrationCallback: a small LightningModule on CPU logs calibkit's metrics of its outputs."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

pl = pytest.importorskip("lightning.pytorch")

from calibkit.calibrators import TemperatureScaling  # noqa: E402
from calibkit.calibrators.logit.temperature_grid import ece_grid_minimum  # noqa: E402
from calibkit.core.errors import InputError  # noqa: E402
from calibkit.metrics import ece, nll  # noqa: E402
from calibkit.training.lightning import CalibrationCallback, batch_outputs  # noqa: E402
from calibkit.training.tracking import TRACKING_TEMPERATURES  # noqa: E402


class Classifier(pl.LightningModule):  # type: ignore[misc]
    """A linear classifier whose validation_step returns logits and labels (the contract)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Linear(4, 3)
        self.val_outputs: list[tuple[torch.Tensor, torch.Tensor]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)  # type: ignore[no-any-return]

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(self(x), y)

    def validation_step(self, batch: Any, batch_idx: int) -> dict[str, torch.Tensor]:
        x, y = batch
        logits = self(x)
        self.val_outputs.append((logits.detach().clone(), y.clone()))
        return {"logits": logits, "labels": y}

    def on_validation_epoch_start(self) -> None:
        self.val_outputs = []

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.5)


def loaders() -> tuple[DataLoader[Any], DataLoader[Any]]:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(600, 4, generator=gen)
    y = (x[:, :3] * 2 + torch.randn(600, 3, generator=gen)).argmax(dim=1)
    train = DataLoader(TensorDataset(x[:400], y[:400]), batch_size=50)
    val = DataLoader(TensorDataset(x[400:], y[400:]), batch_size=64)  # uneven last batch
    return train, val


def fit(callback: CalibrationCallback, tmp_path: Path) -> tuple[Classifier, Any]:
    model = Classifier()
    trainer = pl.Trainer(
        max_epochs=2,
        callbacks=[callback],
        accelerator="cpu",
        logger=pl.loggers.CSVLogger(tmp_path, name="log"),
        enable_progress_bar=False,
        log_every_n_steps=1,
        enable_model_summary=False,
        enable_checkpointing=False,
        num_sanity_val_steps=1,
    )
    trainer.fit(model, *loaders())
    return model, trainer


def test_logged_values_equal_calibkit_metrics(tmp_path: Path) -> None:
    callback = CalibrationCallback(n_bins=10)
    model, trainer = fit(callback, tmp_path)
    logits = torch.cat([z for z, _ in model.val_outputs]).numpy()
    labels = torch.cat([y for _, y in model.val_outputs]).numpy()
    best, optimal = ece_grid_minimum(logits, labels, TRACKING_TEMPERATURES, n_bins=10)
    want = {
        "val_ece": ece(labels, logits=logits, n_bins=10),
        "val_nll": nll(labels, logits=logits),
        "val_optimal_ece": optimal,
        "val_optimal_temperature": float(TRACKING_TEMPERATURES[best]),
        "val_accuracy": float(np.mean(logits.argmax(axis=1) == labels)),
    }
    logged = trainer.callback_metrics
    for name, value in want.items():
        assert float(logged[name]) == pytest.approx(value, abs=1e-12), name
    assert [row["epoch"] for row in callback.history_] == [0.0, 1.0]  # no sanity-check row
    assert callback.history_[-1]["ece"] == pytest.approx(want["val_ece"], abs=1e-12)
    assert callback.history_[0]["nll"] != callback.history_[1]["nll"]  # it trained
    assert want["val_optimal_ece"] <= want["val_ece"]
    rows = list(csv.DictReader(next(tmp_path.rglob("metrics.csv")).open()))
    ece_rows = [float(r["val_ece"]) for r in rows if r.get("val_ece")]
    assert len(ece_rows) == 2
    assert ece_rows[-1] == pytest.approx(want["val_ece"], abs=1e-12)
    assert callback.temperature_ is None


def test_each_validation_batch_updates_the_one_accumulator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calibkit.metrics import StreamingCalibration

    sizes: list[int] = []
    update = StreamingCalibration.update

    def spy(self: StreamingCalibration, labels: object, *args: Any, **kw: Any) -> None:
        sizes.append(len(labels))  # type: ignore[arg-type]
        update(self, labels, *args, **kw)

    monkeypatch.setattr(StreamingCalibration, "update", spy)
    callback = CalibrationCallback(n_bins=10)
    fit(callback, tmp_path)
    # one sanity-check batch, then the 200 validation rows as 64, 64, 64, 8 in each epoch
    assert sizes == [64] + [64, 64, 64, 8] * 2


def test_fit_temperature_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "temperature.json"
    callback = CalibrationCallback(fit_temperature=True, save_path=path)
    model, _ = fit(callback, tmp_path)
    logits = torch.cat([z for z, _ in model.val_outputs])
    labels = torch.cat([y for _, y in model.val_outputs])
    want = TemperatureScaling().fit(logits, labels)
    assert callback.temperature_ is not None
    assert callback.temperature_.temperature_ == pytest.approx(want.temperature_, rel=1e-9)
    loaded = TemperatureScaling.load(path)
    assert isinstance(loaded, TemperatureScaling)
    assert loaded.temperature_ == callback.temperature_.temperature_


def test_contract_errors_name_the_cause() -> None:
    with pytest.raises(InputError, match="validation_step"):
        batch_outputs(torch.zeros(2, 3))
    with pytest.raises(InputError, match="keys loss"):
        batch_outputs({"loss": torch.zeros(())})
    with pytest.raises(InputError, match="fit_temperature"):
        CalibrationCallback(save_path="t.json")
