"""Stateful metric accumulation over batches (a thin wrapper over the functional core).

Only per-sample scalars are stored (confidence, outcome, label, NLL, Brier, entropy) and
SCE's per-class bin sums, so memory is O(N + K * n_bins), never O(N * K).

>>> acc = CalibrationMetrics(n_bins=10)
>>> acc.update([0, 1], probs=[[0.9, 0.1], [0.2, 0.8]])
>>> acc.update([1], logits=[[0.0, 2.0]])
>>> round(acc.compute()["accuracy"], 3)
1.0
"""

from __future__ import annotations

import numpy as np

from calibkit.core.binning import check_n_bins
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.metrics.bin_errors import sce_hit_index, sce_index
from calibkit.metrics.info import METRIC_NAMES
from calibkit.metrics.samples import F64, Mode, calibration_target, per_sample_scores
from calibkit.metrics.suite import MetricSuite


class CalibrationMetrics:
    """Accumulate outputs batch by batch; :meth:`compute` returns every metric.

    Parameters
    ----------
    n_bins : int
        Number of bins of the binned metrics (equal width, ``[a, b)``, last closed at 1.0).
    mode : {"top_label", "positive_class"}
        What the calibration metrics measure for a binary problem (see
        :mod:`calibkit.core.binning`).

    Examples
    --------
    >>> acc = CalibrationMetrics(n_bins=10)
    >>> acc.update([1], probs=[[0.2, 0.8]])
    >>> acc.update([0], probs=[[0.4, 0.6]])
    >>> res = acc.compute()
    >>> acc.n_samples, res["accuracy"], round(res["ece"], 4)  # as ece() on both samples
    (2, 0.5, 0.4)
    """

    def __init__(self, *, n_bins: int = 15, mode: Mode = "top_label") -> None:
        self.n_bins = check_n_bins(n_bins)
        self.mode: Mode = mode
        self.reset()

    def reset(self) -> None:
        """Forget every batch."""
        self._parts: dict[str, list[F64]] = {
            k: [] for k in ("conf", "outcome", "correct", "nll", "brier", "entropy", "score")
        }
        self._n_classes: int | None = None
        self._sce_conf: F64 | None = None
        self._sce_hits: F64 | None = None

    def update(self, labels: object, probs: object = None, *, logits: object = None) -> None:
        """Add one batch (labels with exactly one of ``probs`` or ``logits``)."""
        out = as_outputs(labels, probs, logits=logits)
        conf, outcome = calibration_target(out, self.mode)  # may raise: before any state change
        if self._n_classes is None:
            self._n_classes = out.n_classes
            self._sce_conf = np.zeros(out.n_classes * self.n_bins)
            self._sce_hits = np.zeros(out.n_classes * self.n_bins)
        elif out.n_classes != self._n_classes:
            raise InputError(
                "probs/logits",
                f"{self._n_classes} columns as in earlier batches",
                f"{out.n_classes} columns",
            )
        parts = {"conf": conf, "outcome": outcome, "correct": out.correct, **per_sample_scores(out)}
        parts["score"] = out.confidence  # the ranking metrics' score, whatever the mode
        for key, val in parts.items():
            self._parts[key].append(val)
        self._add_sce(out)

    def _add_sce(self, out: ClassifierOutputs) -> None:
        assert self._sce_conf is not None
        assert self._sce_hits is not None
        size = out.n_classes * self.n_bins
        self._sce_conf += np.bincount(
            sce_index(out.probs, self.n_bins), weights=out.probs.reshape(-1), minlength=size
        )
        hit = sce_hit_index(out.probs, out.labels, self.n_bins)
        self._sce_hits += np.bincount(hit, minlength=size)

    @property
    def n_samples(self) -> int:
        """Number of samples added since the last reset."""
        return int(sum(p.shape[0] for p in self._parts["conf"]))

    def compute(self) -> dict[str, float]:
        """Every metric of :data:`METRIC_NAMES` over all batches so far."""
        if self._n_classes is None:
            raise InputError("CalibrationMetrics", "at least one update() before compute()", "none")
        cat = {k: np.concatenate(v) for k, v in self._parts.items()}
        suite = MetricSuite(
            cat["conf"],
            cat["outcome"],
            cat["correct"],
            {k: cat[k] for k in ("nll", "brier", "entropy")},
            n_bins=self.n_bins,
            score=cat["score"],
        )
        res = suite.compute(names=tuple(n for n in METRIC_NAMES if n != "sce"))
        assert self._sce_conf is not None
        assert self._sce_hits is not None
        gap = np.abs(self._sce_hits - self._sce_conf).sum()
        res["sce"] = float(gap / (self._n_classes * self.n_samples))
        return {name: res[name] for name in METRIC_NAMES}
