"""Temperature scaling smoothed toward the uniform distribution.

``SmoothedTemperatureScaling`` (``"temperature_smoothed"``) fits the temperature ``T`` by
NLL exactly as :class:`~calibkit.calibrators.logit.temperature.TemperatureScaling` does, then
mixes its output with the uniform distribution:

    ``q = (1 - eps) * softmax(z / T) + eps / K``.

``eps`` is the ``smoothing`` parameter, by default ``1 / (n + 1)`` for a calibration set of
``n`` rows (the total weight when weighted), the share one extra, uninformative sample
would have. The probmetrics package (Berta, Holzmüller, Jordan & Bach, *Structured matrix
scaling for multi-class calibration*, AISTATS 2026) uses this mixture, with that default,
as its "ts-mix" calibrator and as the first stage of its structured scalings (see
:mod:`calibkit.calibrators.logit.structured`).

Why: every probability is at least ``eps / K``, so no label costs more than ``log(K / eps)``
in NLL, however confident and wrong the network was; a probability-only file (``log`` of
rounded probabilities, with zeros) cannot produce infinite losses. The mixture is an
increasing map of each probability, so it keeps the argmax and the order of the classes
in every row. ``smoothing=0`` is plain temperature scaling.

>>> z = np.array([[4.0, 0.0], [0.0, 4.0], [4.0, 0.0], [0.0, 4.0]])
>>> ts = SmoothedTemperatureScaling(t_max=100.0).fit(z, [0, 1, 1, 0])
>>> round(ts.temperature_), ts.smoothing_
(100, 0.2)
>>> ts.predict_proba([[0.0, 0.0]]).tolist()
[[0.5, 0.5]]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from calibkit.calibrators.base import F64
from calibkit.calibrators.logit.temperature import TEMPERATURE_STATE, TemperatureScaling
from calibkit.core.outputs import ClassifierOutputs
from calibkit.core.params import param
from calibkit.core.validation import FRACTION, Constraints, NoneOr

if TYPE_CHECKING:
    from calibkit.calibrators.modules import SmoothedTemperature

#: Elements per row chunk of :func:`smoothed_log_probs` (a chunk stays in a 2 MB L2 cache).
CHUNK = 1 << 15
#: The fitted state of a smoothed temperature scaling (besides ``n_classes_``).
SMOOTHED_STATE: Constraints = {**TEMPERATURE_STATE, "smoothing_": FRACTION}
#: The ``smoothing`` parameter of every method that mixes in the uniform distribution.
SMOOTHING = NoneOr(FRACTION)
SMOOTHING_DOC = (
    "The weight ``eps`` of the uniform distribution mixed in; ``None``: ``1 / (n + 1)`` for "
    "``n`` calibration rows (their total weight when weighted)."
)


def default_smoothing(n_rows: int, weights: F64 | None) -> float:
    """``1 / (n + 1)``: ``n`` the number of calibration rows, or their total weight."""
    n = float(n_rows) if weights is None else float(weights.sum())
    return 1.0 / (n + 1.0)


def mix_uniform(probs: F64, smoothing: float) -> F64:
    """``(1 - eps) probs + eps / K`` (``probs`` itself when ``eps`` is 0).

    >>> mix_uniform(np.array([[1.0, 0.0]]), 0.5).tolist()
    [[0.75, 0.25]]
    """
    if smoothing == 0.0:
        return probs
    return np.asarray((1.0 - smoothing) * probs + smoothing / probs.shape[1], dtype=np.float64)


def smoothed_log_probs(logits: F64, temperature: float, smoothing: float) -> F64:
    """``log((1 - eps) softmax(logits / T) + eps / K)``, without underflow to ``-inf``.

    >>> smoothed_log_probs(np.array([[0.0, -1e4]]), 1.0, 0.5).round(6).tolist()
    [[-0.287682, -1.386294]]
    """
    z = np.asarray(logits)
    out = np.empty(z.shape, dtype=np.float64)
    n, k = z.shape
    step = max(1, CHUNK // max(k, 1))
    shift, floor = math.log1p(-smoothing), math.log(smoothing / k) if smoothing else 0.0
    for lo in range(0, n, step):  # row chunks that stay in cache, the same operations
        c = out[lo : lo + step]
        np.divide(z[lo : lo + step], temperature, out=c, dtype=np.float64)
        c -= c.max(axis=1, keepdims=True)
        c -= np.log(np.exp(c).sum(axis=1, keepdims=True))
        if smoothing != 0.0:
            c += shift
            np.logaddexp(c, floor, out=c)
    return out


class SmoothedTemperatureScaling(TemperatureScaling):
    """Temperature scaling mixed with the uniform distribution (see the module docstring).

    A class absent from the calibration labels keeps its column, as in
    :class:`~calibkit.calibrators.logit.temperature.TemperatureScaling`.

    Attributes
    ----------
    temperature_, log_temperature_ : float
        The fitted temperature and its logarithm.
    smoothing_ : float
        The ``eps`` used.

    Examples
    --------
    {fit_example}

    >>> SmoothedTemperatureScaling(smoothing=0.01).get_params()
    {'t_min': 0.1, 't_max': 10.0, 'smoothing': 0.01}
    """

    maps_logits = False
    state_constraints: ClassVar[Constraints] = SMOOTHED_STATE
    smoothing: float | None = param(default=None, check=SMOOTHING, doc=SMOOTHING_DOC)

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        super()._fit(out, weights)
        eps = self.smoothing
        self.smoothing_ = default_smoothing(out.labels.shape[0], weights) if eps is None else eps

    def _predict_proba(self, logits: F64) -> F64:
        return np.exp(smoothed_log_probs(logits, self.temperature_, self.smoothing_))

    def _transform(self, logits: F64) -> F64:
        raise NotImplementedError  # the output is probabilities

    def _module(self) -> SmoothedTemperature:
        from calibkit.calibrators.modules import SmoothedTemperature  # torch: only when exported

        return SmoothedTemperature(self.temperature_, self.smoothing_)
