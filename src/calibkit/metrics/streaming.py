"""A streaming calibration metric whose state is a few torch tensors, mergeable across processes.

:class:`StreamingCalibration` keeps only sums: per bin the sample count, the confidence sum
and the outcome sum (for the top-label or positive-class target of
:func:`~calibkit.metrics.samples.calibration_target`), and the totals of the sample count,
the correct predictions, the NLL, the Brier score and the entropy. All sums are float64.
Memory is O(n_bins) whatever the number of samples, so a model evaluated over several GPUs or
machines needs one ``all_reduce`` of these tensors (:meth:`~StreamingCalibration.sync`) to
give every process the metrics of the whole data.

It is calibkit's one accumulator, built as torchmetrics builds its metrics: a functional
core, :func:`batch_sums` (one batch's sums: bins with
:func:`~calibkit.core.binning.bin_stats`, scores with
:func:`~calibkit.metrics.samples.per_sample_scores`) and :func:`metrics_from_sums` (the
metrics of summed state, through :func:`~calibkit.metrics.bin_errors.errors_from_sums`),
under a thin stateful wrapper, :class:`StreamingCalibration` (``update``, ``merge``,
``sync``, ``compute``, ``reset``). The values equal those of
:func:`~calibkit.metrics.evaluate` on the concatenated data (to rounding). The trainer's
per-epoch tracking (:func:`calibkit.training.tracking.track_split`) and the Lightning
callback read their accuracy, NLL and ECE from it. Equal-width bins follow
:mod:`calibkit.core.binning`: ``[a, b)``, the last bin closed at 1.0.

>>> metric = StreamingCalibration(n_bins=10)
>>> metric.update([1], probs=[[0.2, 0.8]])
>>> other = StreamingCalibration(n_bins=10)
>>> other.update([0], probs=[[0.4, 0.6]])
>>> res = metric.merge(other).compute()
>>> res["accuracy"], round(res["ece"], 4), round(res["mce"], 4)  # as ece() on both samples
(0.5, 0.4, 0.6)
"""

from __future__ import annotations

import numpy as np
import torch

from calibkit.core.binning import bin_stats, check_n_bins
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.validation import Choice
from calibkit.metrics.bin_errors import errors_from_sums
from calibkit.metrics.info import kernels, suite_names
from calibkit.metrics.kernels import BinNorm, Kernel, SampleMean
from calibkit.metrics.samples import F64, MODES, Mode, calibration_target, per_sample_scores

#: The binning convention of the bin sums (equal-width ``[a, b)``, the last bin closed at
#: 1.0); another convention gets another number, so that sums of both are never added.
BINNING_VERSION = 1
#: The settings :meth:`StreamingCalibration.sync` checks on every process, in words.
SYNCED = {
    "n_bins": "n_bins",
    "mode": "mode",
    "binning": "binning convention",
    "classes": "number of classes",
    "metrics": "number of metrics",
    "synced": "sync state",
}


def streamed_names() -> tuple[str, ...]:
    """The suite metrics with a streamable kernel now, in report order.

    Returns
    -------
    tuple of str
        The means of per-sample terms and the norms of equal-width bins
        (:mod:`~calibkit.metrics.kernels`).

    Examples
    --------
    >>> streamed_names()[:3]
    ('accuracy', 'nll', 'brier')
    """
    return tuple(n for n, k in kernels(suite_names()).items() if k.streamable)


#: The built-in metrics :meth:`StreamingCalibration.compute` returns, in report order.
STREAMED = streamed_names()


def streamed_kernels() -> dict[str, Kernel]:
    """The kernel of each metric of :func:`streamed_names`.

    Returns
    -------
    dict of str to Kernel
        In the order of :func:`streamed_names`.

    Examples
    --------
    >>> streamed_kernels()["ece"].norm
    'l1'
    """
    return {n: kernels((n,))[n] for n in streamed_names()}


def _means(metrics: dict[str, Kernel]) -> tuple[str, ...]:
    return tuple(n for n, k in metrics.items() if isinstance(k, SampleMean))


def batch_sums(
    out: ClassifierOutputs, metrics: dict[str, Kernel], *, n_bins: int, mode: Mode = "top_label"
) -> tuple[F64, F64]:
    """One batch's state (the functional core of :meth:`StreamingCalibration.update`).

    Parameters
    ----------
    out : ClassifierOutputs
        The batch.
    metrics : dict of str to Kernel
        The streamed metrics (:func:`streamed_kernels`).
    n_bins : int
        Number of equal-width bins.
    mode : {"top_label", "positive_class"}
        The calibration target binned.

    Returns
    -------
    bins : ndarray of shape (3, n_bins)
        Per bin the sample count, the confidence sum and the outcome sum.
    totals : ndarray of shape (1 + number of ``SampleMean`` metrics,)
        The sample count, then the sum of each ``SampleMean`` term of ``metrics``.

    Examples
    --------
    >>> out = as_outputs([1, 0], logits=[[0.0, 2.0], [1.0, 0.0]])
    >>> bins, totals = batch_sums(out, streamed_kernels(), n_bins=10)
    >>> bins[0].tolist()[7:], totals[:2].tolist()  # counts; the count and correct predictions
    ([1.0, 1.0, 0.0], [2.0, 2.0])
    """
    conf, outcome = calibration_target(out, mode)
    stats = bin_stats(conf, outcome, n_bins)
    scores = {"correct": out.correct, **per_sample_scores(out)}
    totals = [float(out.n_samples)]
    for name in _means(metrics):
        kernel = metrics[name]
        assert isinstance(kernel, SampleMean)
        term = kernel.term
        totals.append((scores[term] if isinstance(term, str) else kernel.values(out)).sum())
    bins = np.stack([stats.counts, stats.confidence_sum, stats.accuracy_sum]).astype(np.float64)
    return bins, np.array(totals, dtype=np.float64)


def metrics_from_sums(bins: F64, totals: F64, metrics: dict[str, Kernel]) -> dict[str, float]:
    """The value of each of ``metrics`` from summed state (the functional core of
    :meth:`StreamingCalibration.compute`).

    Parameters
    ----------
    bins, totals : ndarray
        Sums of :func:`batch_sums` over batches (and processes).
    metrics : dict of str to Kernel
        The metrics the sums were made for.

    Returns
    -------
    dict of str to float
        Each metric's value.

    Examples
    --------
    >>> out = as_outputs([1, 0], probs=[[0.2, 0.8], [0.6, 0.4]])
    >>> m = streamed_kernels()
    >>> round(metrics_from_sums(*batch_sums(out, m, n_bins=10), m)["ece"], 4)
    0.3
    """
    n = float(totals[0])
    errors = errors_from_sums(bins[0], bins[1], bins[2])
    sums = dict(zip(_means(metrics), totals.tolist()[1:], strict=True))
    res: dict[str, float] = {}
    for name, kernel in metrics.items():
        res[name] = float(errors[kernel.norm]) if isinstance(kernel, BinNorm) else sums[name] / n
    return res


class StreamingCalibration:
    """Every streamable suite metric (ECE, MCE, RMSCE, debiased RMSCE, accuracy, NLL, Brier
    score, entropy, and any registered since) from batches, as tensor sums.

    The metrics are those of :func:`streamed_names` when the object is made.

    Parameters
    ----------
    n_bins : int
        Number of equal-width bins (``[a, b)``, last closed at 1.0).
    mode : {"top_label", "positive_class"}
        What the binned metrics measure (see :mod:`calibkit.core.binning`).
    device : torch.device or str, optional
        Where the state tensors live (CPU by default; a CUDA device for ``sync`` over NCCL).

    Attributes
    ----------
    bin_counts, bin_confidence, bin_outcome : torch.Tensor of shape (n_bins,)
        Per-bin sample count, confidence sum and outcome sum (float64).
    totals : torch.Tensor of shape (1 + len(means),)
        The sample count, then the sum of each per-sample term of :attr:`means` (the
        correct predictions, NLL, Brier score, entropy, ...).
    names : tuple of str
        The metrics :meth:`compute` returns.
    means : tuple of str
        The metrics that are means of a per-sample term, in the order of :attr:`totals`.
    synced : bool
        True after :meth:`sync` on an initialised process group: the state then holds every
        process's data and is read-only until :meth:`reset`.

    Examples
    --------
    >>> metric = StreamingCalibration(n_bins=10)
    >>> metric.update(labels=[1, 0], logits=[[0.0, 2.0], [1.0, 0.0]])
    >>> metric.n_samples, metric.compute()["accuracy"]
    (2, 1.0)
    >>> metric.bin_counts.tolist()[7:]  # confidences 0.731 and 0.881
    [1.0, 1.0, 0.0]
    """

    def __init__(
        self,
        *,
        n_bins: int = 15,
        mode: Mode = "top_label",
        device: torch.device | str | None = None,
    ) -> None:
        self.n_bins = check_n_bins(n_bins)
        self.mode: Mode = Choice(*MODES).check("mode", mode)
        self.device = torch.device("cpu" if device is None else device)
        self._kernels = streamed_kernels()
        self.names = tuple(self._kernels)
        self.means = _means(self._kernels)
        self.reset()

    def reset(self) -> None:
        """Forget every batch (and a previous :meth:`sync`)."""
        self.bin_counts, self.bin_confidence, self.bin_outcome = (
            torch.zeros(self.n_bins, dtype=torch.float64, device=self.device) for _ in range(3)
        )
        self.totals = torch.zeros(1 + len(self.means), dtype=torch.float64, device=self.device)
        self.n_classes: int | None = None
        self.synced = False

    @property
    def state(self) -> tuple[torch.Tensor, ...]:
        """The state tensors (what :meth:`merge` adds and :meth:`sync` all-reduces)."""
        return (self.bin_counts, self.bin_confidence, self.bin_outcome, self.totals)

    @property
    def n_samples(self) -> int:
        """Number of samples added since the last reset (all processes' after a sync)."""
        return int(self.totals[0].item())

    def update(self, labels: object, probs: object = None, *, logits: object = None) -> None:
        """Add one batch: ``labels`` with exactly one of ``probs`` or ``logits`` (never guessed).

        Tensors on any device (gradients are ignored), arrays and nested lists are accepted.
        """
        self._check_writable("update")
        out = as_outputs(labels, probs, logits=logits)
        # may raise (mode, classes): before any state change
        bins, totals = batch_sums(out, self._kernels, n_bins=self.n_bins, mode=self.mode)
        self._check_classes(out.n_classes)
        self._add(torch.from_numpy(bins), torch.from_numpy(totals))
        self.n_classes = out.n_classes

    def merge(self, other: StreamingCalibration) -> StreamingCalibration:
        """Add the state of ``other`` (same ``n_bins`` and ``mode``) to this one; returns self."""
        self._check_writable("merge")
        if not isinstance(other, StreamingCalibration):
            raise InputError("other", "a StreamingCalibration", type(other).__name__)
        if other is self:
            expected = "another StreamingCalibration (merging one into itself counts it twice)"
            raise InputError("other", expected, "the metric itself")
        if (other.n_bins, other.mode) != (self.n_bins, self.mode):
            expected = f"n_bins={self.n_bins}, mode={self.mode!r}"
            raise InputError("other", expected, f"n_bins={other.n_bins}, mode={other.mode!r}")
        if other.names != self.names:
            expected = "the metrics " + ", ".join(self.names)
            raise InputError("other", expected, ", ".join(other.names))
        if other.n_classes is not None:
            self._check_classes(other.n_classes)
            self.n_classes = other.n_classes
        bins = torch.stack([other.bin_counts, other.bin_confidence, other.bin_outcome])
        self._add(bins, other.totals)
        return self

    def sync(self) -> StreamingCalibration:
        """Sum the state over every process of the default ``torch.distributed`` group.

        Every process must call it (it is a collective ``all_reduce``); afterwards each holds
        the state of the whole data. A no-op without an initialised process group, or when
        already synced (calling it twice does not count the data twice). Returns self.

        Before adding anything it checks that every process has the same ``n_bins``,
        ``mode``, binning convention, number of classes (a process without data agrees
        with any) and sync state: otherwise every process raises the same InputError naming
        the settings that differ, and no state changes (a process that alone skipped the
        sum would leave the others waiting forever).
        """
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return self
        settings = self._settings()
        # [largest, -smallest] of every setting over the processes, in one all_reduce; a
        # process without data has no number of classes: 0 as largest, 2**62 as smallest
        none = {"classes": (0, 2**62)} if self.n_classes is None else {}
        high_low = [none.get(name, (v, v)) for name, v in settings.items()]
        values = [h for h, _ in high_low] + [-lo for _, lo in high_low]
        seen = torch.tensor(values, dtype=torch.int64, device=self.device)
        dist.all_reduce(seen, op=dist.ReduceOp.MAX)
        high = dict(zip(settings, seen[: len(settings)].tolist(), strict=True))
        low = dict(zip(settings, (-seen[len(settings) :]).tolist(), strict=True))
        if high["classes"] == 0:  # no process has data yet
            low["classes"] = 0
        differ = [name for name in settings if high[name] != low[name]]
        if differ:  # every process sees the same high and low: all raise the same error
            got = "; ".join(_spread(name, low[name], high[name]) for name in differ)
            expected = "the same " + ", ".join(SYNCED.values()) + " on every process"
            raise InputError("sync", expected, got)
        if self.synced:  # on every process, as just checked: the data is not added twice
            return self
        for tensor in self.state:
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        self.n_classes = high["classes"] or None
        self.synced = True
        return self

    def compute(self) -> dict[str, float]:
        """The metrics of :attr:`names` over every sample so far (float64 Python floats)."""
        n = self.n_samples
        if n == 0:
            raise InputError(
                "StreamingCalibration", "at least one update() before compute()", "none"
            )
        bins = torch.stack(self.state[:3]).cpu().numpy()
        return metrics_from_sums(bins, self.totals.cpu().numpy(), self._kernels)

    def _settings(self) -> dict[str, int]:
        """The settings every process must share (:data:`SYNCED`), as integers (0 classes:
        no batch yet, which agrees with any number)."""
        return {
            "n_bins": self.n_bins,
            "mode": MODES.index(self.mode),
            "binning": BINNING_VERSION,
            "classes": 0 if self.n_classes is None else self.n_classes,
            "metrics": len(self.names),
            "synced": int(self.synced),
        }

    def _add(self, bins: torch.Tensor, totals: torch.Tensor) -> None:
        bins = bins.to(self.device, torch.float64)
        self.bin_counts += bins[0]
        self.bin_confidence += bins[1]
        self.bin_outcome += bins[2]
        self.totals += totals.to(self.device, torch.float64)

    def _check_classes(self, n_classes: int) -> None:
        if self.n_classes is not None and n_classes != self.n_classes:
            raise InputError(
                "probs/logits", f"{self.n_classes} columns as in earlier batches", f"{n_classes}"
            )

    def _check_writable(self, action: str) -> None:
        if self.synced:
            raise InputError(action, "reset() first: a synced metric is read-only", "synced")


def _spread(setting: str, low: int, high: int) -> str:
    """How ``setting`` differs across processes, in words."""
    if setting == "mode":
        return f"mode {MODES[low]!r} and {MODES[high]!r}"
    if setting == "synced":
        return "a metric already synced on some processes only (reset() on one of them?)"
    return f"{SYNCED[setting]} from {low} to {high}"
