"""What every metric engine computes for a metric: its kernel, declared on its registry entry.

A suite metric (:class:`~calibkit.metrics.info.MetricInfo`) names one kernel, and every
engine (the point estimate and the batched bootstrap of
:class:`~calibkit.metrics.suite.MetricSuite`, the sorted bootstrap of
:mod:`~calibkit.metrics.resampled` with its Poisson path, the noise floor and
:class:`~calibkit.metrics.streaming.StreamingCalibration`) computes it from the kernel alone,
as torchmetrics' functional kernels serve both the function and the ``Metric`` class:

- :class:`SampleMean`: the (weighted) mean of a per-sample quantity (accuracy, NLL, ...);
- :class:`BinNorm`: a norm over bins of the gap between accuracy and mean confidence,
  with its binning scheme (ECE, MCE, RMSCE, adaptive ECE, SCE, ...);
- :class:`Residual`: a norm of the signed residuals (outcome minus confidence) in
  confidence order, without bins (KS, MMCE);
- :class:`RankStatistic`: a statistic of the whole sample ranked by its top-label confidence
  against the correctness of the predictions (the selective-prediction metrics of
  :mod:`~calibkit.metrics.selective`: AUROC, AURC, ...), computed for any weights from the
  weight and wrong weight of each tie group (:class:`~calibkit.metrics.selective.RankSums`).

Which engine supports what is checked when the kernel is made, so an unsupported metric
fails at registration, never silently in one engine.

>>> BinNorm("l2").streamable, BinNorm("l1", "mass").floor_capable
(True, True)
>>> BinNorm("l2", "classwise")
Traceback (most recent call last):
...
calibkit.core.errors.InputError: norm: expected 'l1' for the classwise scheme, got 'l2'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs
from calibkit.metrics.samples import F64

if TYPE_CHECKING:
    from calibkit.metrics.selective import RankSums

#: Per-sample terms every suite prepares at once (:func:`~.samples.probs_and_scores`; and
#: ``"correct"``, the top-label correctness).
BUILTIN_TERMS = ("correct", "nll", "brier", "entropy")
#: Norms of :func:`~calibkit.metrics.bin_errors.errors_from_sums`.
NORMS = ("l1", "l2", "max", "debiased")
#: Bin schemes: equal-width and equal-mass bins of the confidence, per-class equal-width.
SCHEMES = ("width", "mass", "classwise")
#: Residual norms: the largest cumulative residual (KS), the Laplace-kernel norm (MMCE).
RESIDUAL_NORMS = ("sup", "laplace")

Term = Callable[[ClassifierOutputs], F64]


@dataclass(frozen=True)
class SampleMean:
    """The mean of a per-sample quantity under the sample weights.

    ``term`` names a built-in per-sample array (:data:`BUILTIN_TERMS`) or is a function of
    the :class:`~calibkit.core.outputs.ClassifierOutputs` giving one float per sample.

    >>> SampleMean("nll").term, SampleMean(lambda out: out.probs.max(axis=1)).streamable
    ('nll', True)
    """

    term: str | Term

    def __post_init__(self) -> None:
        if isinstance(self.term, str) and self.term not in BUILTIN_TERMS:
            raise InputError("term", "one of " + ", ".join(BUILTIN_TERMS), repr(self.term))
        if not isinstance(self.term, str) and not callable(self.term):
            raise InputError("term", "a term name or a function of the outputs", repr(self.term))

    streamable = True
    floor_capable = False

    def values(self, outputs: ClassifierOutputs) -> F64:
        """The per-sample values of a function ``term`` (float64, one per sample)."""
        assert callable(self.term)
        v = np.asarray(self.term(outputs), dtype=np.float64)
        if v.shape != (outputs.n_samples,):
            raise InputError("term", f"{outputs.n_samples} values", f"shape {v.shape}")
        return v


@dataclass(frozen=True)
class BinNorm:
    """A norm over bins of ``|accuracy - mean confidence|``, bins weighted by their mass.

    ``scheme``: ``"width"`` (equal-width bins), ``"mass"`` (equal-mass bins, moving with the
    weights) or ``"classwise"`` (equal-width bins of every class's probability, L1 only: SCE).
    ``norm``: one of :data:`NORMS` (``"debiased"``: Kumar et al. 2019's debiased L2).

    Examples
    --------
    The kernels of the ECE and of the SCE:

    >>> from calibkit import METRICS
    >>> METRICS.get("ece").kernel, METRICS.get("sce").kernel
    (BinNorm(norm='l1', scheme='width'), BinNorm(norm='l1', scheme='classwise'))
    """

    norm: Literal["l1", "l2", "max", "debiased"]
    scheme: Literal["width", "mass", "classwise"] = "width"

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise InputError("scheme", "one of " + ", ".join(SCHEMES), repr(self.scheme))
        if self.norm not in NORMS:
            raise InputError("norm", "one of " + ", ".join(NORMS), repr(self.norm))
        if self.scheme == "classwise" and self.norm != "l1":
            raise InputError("norm", "'l1' for the classwise scheme", repr(self.norm))

    @property
    def streamable(self) -> bool:
        """Equal-width bin sums add up over batches (equal-mass bins do not)."""
        return self.scheme == "width"

    @property
    def floor_capable(self) -> bool:
        """The noise floor redraws the outcomes of top-label bins."""
        return self.scheme != "classwise"


@dataclass(frozen=True)
class Residual:
    """A bin-free norm of the signed residuals in confidence order.

    ``"sup"``: the largest absolute cumulative residual over the total weight (KS);
    ``"laplace"``: the kernel norm with a Laplace kernel of width
    :data:`~calibkit.metrics.continuous.MMCE_WIDTH` (MMCE).

    Examples
    --------
    The kernels of the KS error and of the MMCE:

    >>> from calibkit import METRICS
    >>> METRICS.get("ks").kernel, METRICS.get("mmce").kernel
    (Residual(norm='sup'), Residual(norm='laplace'))
    """

    norm: Literal["sup", "laplace"]

    def __post_init__(self) -> None:
        if self.norm not in RESIDUAL_NORMS:
            raise InputError("norm", "one of " + ", ".join(RESIDUAL_NORMS), repr(self.norm))

    streamable = False
    floor_capable = False


@dataclass(frozen=True)
class RankStatistic:
    """A whole-sample statistic of the ranking by top-label confidence (no per-sample term,
    no bins): ``function`` maps the tie-group sums of ``b`` weightings (a
    :class:`~calibkit.metrics.selective.RankSums`) to ``b`` values. The suite sorts once and
    computes the group sums once per block of bootstrap weights for every such metric.

    >>> from calibkit.metrics.selective import aurc_of
    >>> RankStatistic(aurc_of).streamable, RankStatistic(aurc_of).floor_capable
    (False, False)
    """

    function: Callable[[RankSums], F64]

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise InputError("function", "a function of the tie-group sums", repr(self.function))

    streamable = False
    floor_capable = False


Kernel = SampleMean | BinNorm | Residual | RankStatistic
