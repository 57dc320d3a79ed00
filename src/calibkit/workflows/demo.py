"""The built-in demo: miscalibrate a small network on purpose, then compare the fixes.

Everything runs offline in a few seconds on a CPU, on the library's own parts:

1. the ``digits`` dataset (:func:`calibkit.data.load_dataset`: scikit-learn's bundled 1,797
   8x8 images, 10 classes, no download), pixels scaled to [0, 1], gets fixed Gaussian pixel
   noise (sigma 0.2, seeded: part of the data, not an augmentation) so that the task is hard
   enough to be gotten wrong, and is split, stratified and seeded, into train / calibration
   / test parts (20% / 40% / 40%);
2. a 64-128-10 ``mlp`` (:func:`calibkit.models.create_model`) is trained by
   :func:`calibkit.training.train` with Adam on the small train part for many epochs, far
   past the point where the training loss is near zero: its logits grow and it becomes
   overconfident on unseen digits, the classic failure temperature scaling fixes;
3. :func:`calibkit.workflows.compare.compare` fits every applicable calibrator on the
   calibration logits, judges them on the test logits, and chooses the one to use on the
   calibration part alone (its :class:`~calibkit.workflows.compare.Recommendation`, the
   rule of ``calibkit compare``; never the lowest test ECE, which histogram binning games).

:func:`run_demo` returns the comparison; ``calibkit demo`` writes it as a report. The run is
deterministic for a seed (the trainer's seeding, and one CPU thread while training).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import as_outputs
from calibkit.core.params import Settings, param
from calibkit.core.splits import split_indices
from calibkit.core.threads import using_threads
from calibkit.core.validation import (
    BATCH_SIZE,
    LEVEL,
    N_BINS,
    NON_NEGATIVE,
    POSITIVE,
    RESAMPLES,
    TRAINED_EPOCHS,
    Choice,
    Integer,
    Names,
    NoneOr,
    Real,
)
from calibkit.data import load_dataset
from calibkit.metrics.samples import MODES, Mode
from calibkit.models import create_model
from calibkit.training import TrainConfig, train
from calibkit.workflows.compare import compare
from calibkit.workflows.comparison import Comparison

I64 = npt.NDArray[np.int64]

log = logging.getLogger(__name__)


class DemoSettings(Settings):
    """Knobs of the demo (the defaults take a few seconds on one CPU core).

    Examples
    --------
    >>> DemoSettings(epochs=5).epochs
    5
    >>> DemoSettings(epochs=0)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: epochs: expected an integer in [1, 100000], got 0
    """

    hidden: int = param(default=128, check=Integer(low=1), doc="Units of the MLP's hidden layer.")
    epochs: int = param(default=100, check=TRAINED_EPOCHS, doc="Training epochs.")
    batch_size: int = param(default=64, check=BATCH_SIZE, doc="Samples per training batch.")
    lr: float = param(default=1e-2, check=POSITIVE, doc="Adam's learning rate.")
    train_fraction: float = param(
        default=0.2,
        check=Real(0.0, 1.0, closed="neither"),
        doc="The training part's share of the images (the rest is halved into calibration "
        "and test parts).",
    )
    pixel_noise: float = param(
        default=0.2, check=NON_NEGATIVE, doc="The standard deviation of the pixel noise."
    )
    n_bins: int = param(default=15, check=N_BINS, doc="Bins of the binned metrics.")
    n_boot: int = param(default=1000, check=RESAMPLES, doc="Bootstrap resamples (0: none).")
    level: float = param(default=0.95, check=LEVEL, doc="The bootstrap intervals' level.")
    mode: Mode = param(default="top_label", check=Choice(*MODES), doc="What is calibrated.")
    methods: tuple[str, ...] | None = param(
        default=None,
        check=NoneOr(Names(what="calibrator names", min_len=1)),
        doc="The calibrators compared (None: every one that applies).",
    )

    def training(self) -> TrainConfig:
        """The trainer's settings (Adam, no schedule; eval-mode logits of the train part)."""
        return TrainConfig(
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            n_bins=self.n_bins,
            track_learning=True,
        )


@dataclass(frozen=True)
class DemoResult:
    """What the demo did: part sizes, accuracies and the comparison it made.

    Examples
    --------
    >>> result = run_demo(settings=DemoSettings(epochs=3, n_boot=0, methods=("temperature",)))
    >>> 0 <= result.ece_before <= 1, result.settings.epochs
    (True, 3)
    """

    comparison: Comparison
    n_train: int
    train_accuracy: float
    final_loss: float
    settings: DemoSettings = field(default_factory=DemoSettings)

    @property
    def ece_before(self) -> float:
        """Test-part ECE of the uncalibrated network."""
        return self.comparison.rows[0].evaluation.values["ece"]

    @property
    def recommended(self) -> str:
        """The calibrator to use: the comparison's recommendation (chosen on the calibration
        part by ``auto``'s rule, never by the lowest test ECE)."""
        rec = self.comparison.recommendation
        return "temperature" if rec is None else rec.method


def noisy_digits(pixel_noise: float = 0.0, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Every digit image as ``(N, 1, 8, 8)`` pixels in [0, 1] plus seeded Gaussian noise.

    >>> x, y = noisy_digits()
    >>> tuple(x.shape), float(x.max()), np.bincount(y.numpy()).min()
    ((1797, 1, 8, 8), 1.0, np.int64(174))
    """
    parts = load_dataset("digits").values()
    x = torch.cat([part.to_tensor((0.0,), (1.0,)) for part in parts])
    y = torch.from_numpy(np.concatenate([part.labels for part in parts]))
    if pixel_noise > 0:
        noise = pixel_noise * np.random.default_rng(seed).standard_normal(tuple(x.shape))
        x = x + torch.from_numpy(noise.astype(np.float32))
    return x, y


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


def run_demo(*, seed: int = 0, settings: DemoSettings | None = None) -> DemoResult:
    """Train the overconfident MLP and compare the calibrators on its logits.

    Examples
    --------
    A shortened demo (3 epochs, one calibrator, no bootstrap):

    >>> settings = DemoSettings(epochs=3, n_boot=0, methods=("temperature",))
    >>> result = run_demo(settings=settings)
    >>> result.n_train, [row.method for row in result.comparison.rows]
    (359, ['none', 'temperature'])
    """
    s = settings or DemoSettings()
    x, y = noisy_digits(s.pixel_noise, seed)
    train_idx, cal_idx, test_idx = three_way_split(y.numpy(), s.train_fraction, seed)
    log.info(
        "digits (pixel noise %g): %s images split %d train / %d calibration / %d test "
        "(stratified, seed %d)",
        *(s.pixel_noise, f"{len(y):,}", len(train_idx), len(cal_idx), len(test_idx), seed),
    )
    log.info(
        "training a 64-%d-10 MLP with Adam for %d epochs (long enough to overfit and "
        "become overconfident)",
        s.hidden,
        s.epochs,
    )
    torch.manual_seed(seed)
    model = create_model("mlp", 10, in_channels=1, input_size=8, hidden=(s.hidden,))
    held = {"cal": (x[cal_idx], y[cal_idx]), "test": (x[test_idx], y[test_idx])}
    with using_threads(1):  # tiny matrices: faster, and the sums in a fixed order
        result = train(model, (x[train_idx], y[train_idx]), s.training(), seed=seed, held_out=held)
    cal, test = (as_outputs(result.labels[k], logits=result.logits[k]) for k in ("cal", "test"))
    comp = compare(
        cal,
        test,
        list(s.methods) if s.methods is not None else None,
        binning=Binning(n_bins=s.n_bins, mode=s.mode),
        resampling=Resampling(n_boot=s.n_boot, level=s.level, seed=seed),
        source=f"calibkit demo: MLP on scikit-learn digits (seed {seed})",
        recommend=True,
    )
    train_logits, train_labels = result.logits["train"], result.labels["train"]
    return DemoResult(
        comparison=comp,
        n_train=len(train_idx),
        train_accuracy=float(np.mean(train_logits.argmax(1) == train_labels)),
        final_loss=result.history[-1]["train_loss"],
        settings=s,
    )
