"""The built-in demo: miscalibrate a small network on purpose, then compare the fixes.

Everything runs offline in a few seconds on a CPU:

1. scikit-learn's bundled handwritten digits (1,797 8x8 images, 10 classes; no download)
   get fixed Gaussian pixel noise (sigma 0.2 on [0, 1] pixels, seeded: part of the data,
   not an augmentation) so that the task is hard enough to be gotten wrong, and are split,
   stratified and seeded, into train / calibration / test parts (20% / 40% / 40%);
2. a 64-128-10 MLP is trained with Adam on the small train part for many epochs, far past
   the point where the training loss is near zero: its logits grow and it becomes
   overconfident on unseen digits, the classic failure temperature scaling fixes;
3. the compare workflow (:func:`calibkit.workflows.compare.compare`) fits every applicable
   calibrator on the calibration logits, judges them on the test logits and writes the report.

The run is deterministic for a seed: the weights are initialised after
``torch.manual_seed(seed)``, mini-batches are shuffled by an explicit ``torch.Generator``,
and training uses one CPU thread (tiny matrices are faster that way, and the sums are
reduced in a fixed order).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.workflows.compare import Comparison, compare, split_indices

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]
Progress = Callable[[str], None]


@dataclass(frozen=True)
class DemoSettings:
    """Knobs of the demo (the defaults take a few seconds on one CPU core)."""

    hidden: int = 128
    epochs: int = 100
    batch_size: int = 64
    lr: float = 1e-2
    train_fraction: float = 0.2
    pixel_noise: float = 0.2
    n_bins: int = 15
    n_boot: int = 1000
    methods: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in ("hidden", "epochs", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(name, "an integer >= 1", repr(value))
        if not 0.0 < self.train_fraction < 1.0:
            raise InputError("train_fraction", "a fraction in (0, 1)", repr(self.train_fraction))
        if not self.lr > 0:
            raise InputError("lr", "a positive learning rate", repr(self.lr))
        if not self.pixel_noise >= 0:
            raise InputError("pixel_noise", "a non-negative noise level", repr(self.pixel_noise))


@dataclass(frozen=True)
class DemoResult:
    """What the demo did: part sizes, accuracies and the comparison it reported."""

    comparison: Comparison
    n_train: int
    train_accuracy: float
    final_loss: float
    settings: DemoSettings = field(default_factory=DemoSettings)

    @property
    def ece_before(self) -> float:
        """Test-part ECE of the uncalibrated network."""
        return self.comparison.rows[0].evaluation.values["ece"]

    def best(self) -> tuple[str, float]:
        """The calibrator with the lowest test-part ECE, and that ECE."""
        row = min(self.comparison.rows[1:], key=lambda r: r.evaluation.values["ece"])
        return row.method, row.evaluation.values["ece"]

    def summary(self) -> str:
        """What was done and the ECE before and after each calibrator, for people."""
        comp, s = self.comparison, self.settings
        before = comp.rows[0].evaluation.values
        lines = [
            f"trained a 64-{s.hidden}-10 MLP on {self.n_train} noisy digits for {s.epochs} "
            f"epochs (train accuracy {100 * self.train_accuracy:.1f}%, last batch loss "
            f"{self.final_loss:.4f})",
            f"test part, {comp.n_test} samples: accuracy {100 * before['accuracy']:.1f}%, ECE "
            f"{100 * before['ece']:.2f}% before calibration (noise floor "
            f"{100 * before['ece_floor']:.2f}%)",
        ]
        for row in comp.rows[1:]:
            t = row.params.get("temperature")
            fitted = f" (T = {t:.3f})" if t is not None else ""
            lines.append(
                f"  after {row.method}{fitted}: ECE {100 * row.evaluation.values['ece']:.2f}%"
            )
        best, best_ece = self.best()
        lines.append(
            f"lowest test ECE: {best}, {100 * best_ece:.2f}% (was {100 * self.ece_before:.2f}%)"
        )
        return "\n".join(lines)


def load_digits_data(pixel_noise: float = 0.0, seed: int = 0) -> tuple[F32, I64]:
    """The bundled digits: float32 pixels in [0, 1] plus seeded Gaussian noise, int64 labels.

    >>> x, y = load_digits_data()
    >>> x.shape, y.shape, float(x.max()), np.bincount(y).min()
    ((1797, 64), (1797,), 1.0, np.int64(174))
    """
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    pixels = np.asarray(x, dtype=np.float64) / 16.0
    if pixel_noise > 0:
        pixels += pixel_noise * np.random.default_rng(seed).standard_normal(pixels.shape)
    return pixels.astype(np.float32), np.asarray(y, dtype=np.int64)


def three_way_split(labels: I64, train_fraction: float, seed: int) -> tuple[I64, I64, I64]:
    """Stratified seeded train / calibration / test indices; the rest is halved.

    >>> y = np.repeat(np.arange(3), 10)
    >>> tr, cal, te = three_way_split(y, 0.4, seed=0)
    >>> len(tr), len(cal), len(te), np.bincount(y[tr]).tolist()
    (12, 9, 9, [4, 4, 4])
    """
    train, rest = split_indices(labels, float(train_fraction), seed)
    cal_in_rest, test_in_rest = split_indices(labels[rest], 0.5, seed + 1)
    return train, rest[cal_in_rest], rest[test_in_rest]


@contextlib.contextmanager
def _one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train_mlp(
    x: F32, y: I64, settings: DemoSettings, seed: int, progress: Progress | None = None
) -> tuple[nn.Module, float]:
    """Train the 64-hidden-10 MLP with Adam; returns it (in eval mode) and the last loss."""
    say = progress or (lambda _msg: None)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    n_classes = int(y.max()) + 1
    model = nn.Sequential(
        nn.Linear(x.shape[1], settings.hidden), nn.ReLU(), nn.Linear(settings.hidden, n_classes)
    )
    opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    loss = torch.tensor(float("nan"))
    report_every = max(1, settings.epochs // 5)
    with _one_thread():
        for epoch in range(1, settings.epochs + 1):
            order = torch.randperm(xt.shape[0], generator=gen)
            for start in range(0, xt.shape[0], settings.batch_size):
                batch = order[start : start + settings.batch_size]
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(xt[batch]), yt[batch])
                loss.backward()
                opt.step()
            if epoch % report_every == 0 or epoch == settings.epochs:
                say(f"epoch {epoch}/{settings.epochs}: last batch loss {loss.item():.4f}")
    return model.eval(), float(loss.item())


def network_outputs(model: nn.Module, x: F32, y: I64) -> ClassifierOutputs:
    """Validated float64 logits of ``model`` on ``x`` with labels ``y``."""
    with torch.no_grad(), _one_thread():
        logits = model(torch.from_numpy(x)).double().numpy()
    return as_outputs(y, logits=logits)


def run_demo(
    out_dir: str | Path | None,
    *,
    seed: int = 0,
    settings: DemoSettings | None = None,
    progress: Progress | None = None,
) -> DemoResult:
    """Train, miscalibrate, compare the calibrators and write the report to ``out_dir``.

    ``out_dir=None`` skips the report (the comparison is still returned).
    """
    settings = settings or DemoSettings()
    say = progress or (lambda _msg: None)
    x, y = load_digits_data(settings.pixel_noise, seed)
    train, cal_idx, test_idx = three_way_split(y, settings.train_fraction, seed)
    say(
        f"digits (pixel noise {settings.pixel_noise:g}): {len(y):,} images split "
        f"{len(train)} train / {len(cal_idx)} calibration / {len(test_idx)} test "
        f"(stratified, seed {seed})"
    )
    say(
        f"training a 64-{settings.hidden}-10 MLP with Adam for {settings.epochs} epochs "
        "(long enough to overfit and become overconfident)"
    )
    model, final_loss = train_mlp(x[train], y[train], settings, seed, say)
    train_out = network_outputs(model, x[train], y[train])
    cal, test = (
        network_outputs(model, x[cal_idx], y[cal_idx]),
        network_outputs(model, x[test_idx], y[test_idx]),
    )
    comp = compare(
        cal,
        test,
        list(settings.methods) if settings.methods is not None else None,
        n_bins=settings.n_bins,
        n_boot=settings.n_boot,
        seed=seed,
        source=f"calibkit demo: MLP on scikit-learn digits (seed {seed})",
        progress=say,
    )
    if out_dir is not None:
        from calibkit.reporting.compare_report import write_compare_report

        say(f"writing the report to {out_dir}")
        write_compare_report(
            comp, Path(out_dir), title="calibkit demo: an overconfident MLP on digits"
        )
    return DemoResult(
        comparison=comp,
        n_train=len(train),
        train_accuracy=float(train_out.correct.mean()),
        final_loss=final_loss,
        settings=settings,
    )
