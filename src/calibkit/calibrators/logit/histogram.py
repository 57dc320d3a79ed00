"""Histogram binning (Zadrozny & Elkan 2001): replace a score by its bin's observed frequency.

Two flavours share one step map, built with :mod:`calibkit.core.binning`:

``"histogram"`` (top-label, as in Gupta & Ramdas 2021)
    Bin the top-label confidence ``c`` of ``softmax(logits)`` and replace it by the bin's
    calibration-set accuracy ``c'``. The other classes share the remaining mass ``1 - c'`` in
    proportion to their original probabilities (uniformly if they all had probability 0).

``"histogram_classwise"`` (one-vs-rest)
    Bin each class's probability ``p_k`` and replace it by the bin's frequency of
    ``y = k``, then renormalise the row. A row whose calibrated entries are all 0 keeps its
    uncalibrated probabilities. With two classes only ``P(y = 1)`` is binned and
    ``P(y = 0) = 1 - P(y = 1)`` (as scikit-learn does for binary problems).

Zero probabilities: binning can give a class probability 0 (a bin without positives, or a
top-label bin of accuracy 1), and a true class of probability 0 costs an infinite NLL (14-40
on average over the 100-class shared predictions file). Every calibrated row is therefore
mixed with the uniform distribution as :mod:`calibkit.calibrators.logit.temperature_smoothed`
mixes (``smoothing``, by default ``1 / (n + 1)``; 0 turns it off), so every probability is
at least ``eps / K`` and no ranking changes.

Empty bins: a score that falls into a bin holding no calibration sample is left unchanged
(the identity on the *input* score, not the bin centre), so the output is never NaN.

Equal-width bins follow the ``floor(score * n_bins)`` rule of :mod:`calibkit.core.binning`.
Equal-mass edges come from :func:`~calibkit.core.binning.bin_index` on the calibration scores;
any score (at fit and at predict time) then goes to the bin ``[e_k, e_{k+1})`` holding it.

Does top-label binning keep the argmax? Not always. Write ``c`` for the top probability,
``r`` for the runner-up. After binning, the top class has ``c'`` and the runner-up
``r (1 - c') / (1 - c)``, so the top class stays the (possibly tied) maximum exactly when
``c' >= r / (1 - c + r)``. Since ``r <= 1 - c`` this always holds when ``c' >= 1/2``,
but a bin accuracy in ``[1/K, 1/2)`` does *not* protect the argmax (with two classes any
``c' < 1/2`` flips it), and ``c' < 1/K`` always moves it. Class-wise binning, being a
separate step map per class, can change the argmax too.

>>> z = np.log([[0.9, 0.1], [0.9, 0.1], [0.6, 0.4], [0.6, 0.4]])
>>> h = HistogramBinning(n_bins=2, smoothing=0).fit(z, [0, 1, 0, 0])
>>> h.bin_counts_.tolist(), h.bin_accuracy_.tolist()
([0, 4], [0.0, 0.75])
>>> h.predict_proba(np.log([[0.3, 0.7]])).round(6).tolist()
[[0.25, 0.75]]
>>> smoothed = HistogramBinning(n_bins=2).fit(z, [0, 1, 0, 0])  # eps = 1 / (4 + 1)
>>> smoothed.predict_proba(np.log([[0.3, 0.7]])).round(6).tolist()
[[0.3, 0.7]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.logit.temperature_smoothed import (
    SMOOTHING,
    SMOOTHING_DOC,
    default_smoothing,
    mix_uniform,
)
from calibkit.core.binning import (
    I64,
    N_BINS,
    SCHEMES,
    Scheme,
    bin_index,
    index_from_edges,
    stats_from_index,
)
from calibkit.core.fitted_state import Array, Dims
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import FRACTION, Choice, Constraints

if TYPE_CHECKING:
    from torch import nn


def step_map_state(rate: str, *maps: str) -> Constraints:
    """The fitted state of step maps: edges, counts and the ``rate`` attribute, with the
    leading dimensions ``maps`` (none for top-label binning, ``"m"`` for class-wise)."""
    return {
        "edges_": Array(shape=(*maps, "n_bins+1"), low=0.0, high=1.0, sorted=True),
        "bin_counts_": Array("int64", shape=(*maps, "n_bins"), low=0),
        rate: Array(shape=(*maps, "n_bins"), low=0.0, high=1.0),
        "smoothing_": FRACTION,
    }


def fit_bin_map(
    score: F64, outcome: F64, n_bins: int, scheme: Scheme, weights: F64 | None = None
) -> tuple[F64, I64, F64]:
    """Edges, sample counts and outcome rate (0.0 where empty) of a 1-D score's bins.

    With ``weights``, equal-mass edges hold equal weight, a bin's rate is its weighted
    outcome rate and its count the number of its rows of positive weight (a bin of only
    zero-weight rows is empty).
    """
    _, edges, used = bin_index(score, n_bins, scheme=scheme, weight=weights)
    idx = index_from_edges(score, edges, scheme)
    stats = stats_from_index(idx, edges, used, score, outcome, weights)
    if weights is None:
        rate = np.where(stats.nonempty, stats.accuracy_sum / np.maximum(stats.counts, 1.0), 0.0)
        return edges, stats.counts.astype(np.int64), rate
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(stats.nonempty, stats.accuracy_sum / stats.counts, 0.0)
    counts = np.bincount(idx[weights > 0], minlength=used).astype(np.int64)
    return edges, counts, rate


def apply_bin_map(score: F64, edges: F64, counts: I64, rate: F64, scheme: Scheme) -> F64:
    """The bin's rate for every score, or the score itself where its bin was empty."""
    idx = index_from_edges(score, edges, scheme)
    return np.where(counts[idx] > 0, rate[idx], score)


def replace_top_label(probs: F64, top: I64, new_conf: F64) -> F64:
    """Set ``probs[i, top[i]] = new_conf[i]``; the other classes share ``1 - new_conf``.

    The share is proportional to the old probabilities, or uniform where those were all 0.
    Where the others' sum is so small (subnormal) that ``remaining / sum`` overflows, the
    shares are divided first (``rest / sum * remaining``), so they stay finite:

    >>> replace_top_label(np.array([[1.0, 1e-310]]), np.array([0]), np.array([0.9]))
    array([[0.9, 0.1]])
    """
    rows = np.arange(probs.shape[0])
    rest = probs.copy()
    rest[rows, top] = 0.0
    rest_sum = rest.sum(axis=1, keepdims=True)
    remaining = (1.0 - new_conf)[:, None]
    uniform = np.broadcast_to(remaining / (probs.shape[1] - 1), probs.shape)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        factor = remaining / rest_sum
        shares = np.where(np.isfinite(factor), rest * factor, rest / rest_sum * remaining)
        out = np.where(rest_sum > 0, shares, uniform)
    out[rows, top] = new_conf
    return out


class _Binning(Calibrator):
    """The parameters shared by both histogram binnings."""

    accepts_sample_weight = True
    n_bins: int = param(default=15, check=N_BINS, doc="Number of bins.")
    scheme: Scheme = param(
        default="equal_width", check=Choice(*SCHEMES), doc="How the bin edges are placed."
    )
    smoothing: float | None = param(default=None, check=SMOOTHING, doc=SMOOTHING_DOC)

    def _set_smoothing(self, out: ClassifierOutputs, weights: F64 | None) -> None:
        eps = self.smoothing
        self.smoothing_ = default_smoothing(out.labels.shape[0], weights) if eps is None else eps

    def _state_dims(self, n_classes: int) -> Dims:
        return {"k": n_classes, "m": len(one_vs_rest_classes(n_classes)), "n_bins": self.n_bins}


class HistogramBinning(_Binning):
    """Top-label histogram binning with ``n_bins`` bins (``scheme`` equal_width/equal_mass).

    A class absent from the calibration labels keeps its column by construction:
    only the top-label confidence is binned, the other classes share the rest.

    Attributes
    ----------
    edges_ : ndarray of shape (n_bins + 1,)
    bin_counts_, bin_accuracy_ : ndarray of shape (n_bins,)
        Calibration samples and accuracy per bin (the accuracy of an empty bin is stored
        as 0.0 and never used: see the module doc).
    smoothing_ : float
        The ``eps`` used.

    Examples
    --------
    {fit_example}

    >>> HistogramBinning(n_bins=np.int64(10)).get_params()
    {'n_bins': 10, 'scheme': 'equal_width', 'smoothing': None}
    """

    state_constraints: ClassVar[Constraints] = step_map_state("bin_accuracy_")

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        probs = out.probs
        top = np.argmax(probs, axis=1)
        conf = probs[np.arange(probs.shape[0]), top]
        correct = (top == out.labels).astype(np.float64)
        self.edges_, self.bin_counts_, self.bin_accuracy_ = fit_bin_map(
            conf, correct, self.n_bins, self.scheme, weights
        )
        self._set_smoothing(out, weights)

    def _predict_proba(self, logits: F64) -> F64:
        probs = np.exp(log_softmax64(logits))
        top = np.argmax(probs, axis=1)
        conf = probs[np.arange(probs.shape[0]), top]
        new = apply_bin_map(conf, self.edges_, self.bin_counts_, self.bin_accuracy_, self.scheme)
        return mix_uniform(replace_top_label(probs, top, new), self.smoothing_)

    def _module(self) -> nn.Module:
        from calibkit.calibrators.modules import StepMaps, TopLabel, with_smoothing  # torch

        snap = self.scheme == "equal_mass"  # edges that are calibration scores
        top = TopLabel(StepMaps(self.edges_, self.bin_counts_, self.bin_accuracy_, snap=snap))
        return with_smoothing(top, self.smoothing_)


class ClasswiseHistogramBinning(_Binning):
    """One-vs-rest histogram binning of every class's probability, renormalised.

    {refuses_absent_class}

    Attributes
    ----------
    edges_, bin_counts_, bin_frequency_ : ndarray
        One row per binned class (only class 1 for two classes, else every class); the
        frequency of an empty bin is stored as 0.0 and never used.
    smoothing_ : float
        The ``eps`` used.

    Examples
    --------
    {fit_example}

    >>> z = np.log([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    >>> h = ClasswiseHistogramBinning(n_bins=2).fit(z, [0, 1, 0, 1])
    >>> h.bin_frequency_.tolist()
    [[0.5, 0.5]]
    """

    needs_every_class = True

    #: ``m`` maps: one per class of :func:`one_vs_rest_classes`.
    state_constraints: ClassVar[Constraints] = step_map_state("bin_frequency_", "m")

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        probs = out.probs
        maps = [
            fit_bin_map(
                probs[:, k], (out.labels == k).astype(np.float64), self.n_bins, self.scheme, weights
            )
            for k in one_vs_rest_classes(out.n_classes)
        ]
        self.edges_ = np.stack([m[0] for m in maps])
        self.bin_counts_ = np.stack([m[1] for m in maps])
        self.bin_frequency_ = np.stack([m[2] for m in maps])
        self._set_smoothing(out, weights)

    def _predict_proba(self, logits: F64) -> F64:
        probs = np.exp(log_softmax64(logits))
        classes = one_vs_rest_classes(self.n_classes_)
        q = np.column_stack(
            [
                apply_bin_map(
                    probs[:, k],
                    self.edges_[i],
                    self.bin_counts_[i],
                    self.bin_frequency_[i],
                    self.scheme,
                )
                for i, k in enumerate(classes)
            ]
        )
        return mix_uniform(combine_maps(q, probs), self.smoothing_)

    def _module(self) -> nn.Module:
        from calibkit.calibrators.modules import OneVsRest, StepMaps, with_smoothing  # torch

        snap = self.scheme == "equal_mass"  # edges that are calibration scores
        maps = StepMaps(self.edges_, self.bin_counts_, self.bin_frequency_, snap=snap)
        return with_smoothing(OneVsRest(maps, binary=self.n_classes_ == 2), self.smoothing_)


def one_vs_rest_classes(n_classes: int) -> list[int]:
    """Classes given their own map: only class 1 for a binary problem, else all of them."""
    return [1] if n_classes == 2 else list(range(n_classes))


def combine_maps(q: F64, probs: F64) -> F64:
    """Rows of probabilities from the one-vs-rest maps' outputs ``q``: ``[1 - q, q]`` for
    two classes (one map), else ``q`` renormalised (``probs`` where ``q`` sums to 0)."""
    if probs.shape[1] == 2:
        return np.column_stack([1.0 - q[:, 0], q[:, 0]])
    return renormalise_or_keep(q, probs)


def renormalise_or_keep(q: F64, fallback: F64) -> F64:
    """Rows of ``q`` divided by their sums; rows summing to 0 are taken from ``fallback``."""
    total = q.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, q / total, fallback)
