"""Scaling-binning (Kumar, Liang & Ma 2019, "Verified uncertainty calibration"), top-label.

The calibration set is split in two (stratified by label, seeded): a parametric scaler is
fitted on the first part; the second part's scaled top-label confidences are cut into
``n_bins`` equal-mass bins, and every bin outputs the *mean of the scaled confidences* in
it (not their accuracy, as histogram binning would). The output takes few values, so its
calibration error can be measured (with the debiased estimator,
:func:`calibkit.metrics.debiased_ece` / :func:`calibkit.metrics.debiased_marginal_ce`),
while keeping the scaler's low variance.

``scaler="temperature"``
    Temperature scaling (:class:`~calibkit.calibrators.TemperatureScaling`): the scaled
    confidence is the top probability of ``softmax(z / T)``.
``scaler="platt"``
    Platt scaling of the top-label confidence, as in the authors' top-label code:
    ``sigmoid(a logit(c) + b)`` fitted by maximum likelihood to "top class is correct".

The top class then gets its bin's value and the other classes share the rest in proportion
to their (scaled, for temperature) probabilities, as in top-label histogram binning
(:mod:`calibkit.calibrators.logit.histogram`); bins follow :mod:`calibkit.core.binning`'s
equal-mass rule, and a score in a bin no second-part row fell into keeps its scaled value.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(400, 3)) * 3
>>> y = (z / 2 + rng.gumbel(size=z.shape)).argmax(axis=1)
>>> sb = ScalingBinning(n_bins=4).fit(z, y)
>>> top = sb.predict_proba(z)[np.arange(400), z.argmax(axis=1)]  # at most 4 values
>>> len(np.unique(top.round(12)))
4
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
import torch
from torch import Tensor, nn

from calibkit.calibrators.base import COEFFICIENT, F64, MAX_COEFFICIENT, Calibrator
from calibkit.calibrators.logit.binary import fit_logistic
from calibkit.calibrators.logit.histogram import apply_bin_map, fit_bin_map, replace_top_label
from calibkit.calibrators.logit.temperature import TemperatureScaling
from calibkit.calibrators.modules import StepMaps, log_softmax_rows, share_top_label
from calibkit.core.binning import N_BINS
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Array, Dims
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.splits import stratified_split
from calibkit.core.validation import Choice, Constraints, Integer, Real

Scaler = Literal["temperature", "platt"]


def top_log_odds(logits: F64, temperature: float = 1.0) -> tuple[np.ndarray, F64, F64]:
    """The top class, the softmax probabilities of ``logits / temperature`` and the log-odds
    ``log(c / (1 - c))`` of the top probability ``c`` (from the log-softmax: no clipping)."""
    log_p = log_softmax64(logits / temperature)
    top = np.argmax(log_p, axis=1)
    rows = np.arange(log_p.shape[0])
    log_c = log_p[rows, top]
    rest = log_p.copy()
    rest[rows, top] = -np.inf
    log_rest = np.logaddexp.reduce(rest, axis=1)
    return top, np.exp(log_p), log_c - log_rest


class ScalingBinning(Calibrator):
    """Top-label scaling-binning: a scaler, then equal-mass bins of its confidences.

    A class absent from the calibration labels keeps its column by construction:
    the scaler and the bins are shared by all classes (top-label).

    Attributes
    ----------
    temperature_ : float
        The scaler's temperature (1.0 with ``scaler="platt"``).
    slope_, intercept_ : float
        Platt's map of the top-label log-odds (1.0 and 0.0 with ``scaler="temperature"``).
    edges_, bin_counts_, bin_mean_ : ndarray
        The bins of the second part and the mean scaled confidence of each (0.0 where
        empty, never used).

    References
    ----------
    A. Kumar, P. Liang and T. Ma, "Verified uncertainty calibration", NeurIPS 2019.

    Examples
    --------
    {fit_example}

    >>> ScalingBinning().get_params()
    {'n_bins': 15, 'scaler': 'temperature', 'scaler_fraction': 0.5, 'seed': 0}
    """

    state_constraints: ClassVar[Constraints] = {
        # TemperatureScaling's default range [0.1, 10], to rounding (1 / (1 / T))
        "temperature_": Real(0.1 * (1 - 1e-9), 10.0 * (1 + 1e-9)),
        # Platt's map must increase (a higher confidence never scales lower)
        "slope_": Real(0.0, MAX_COEFFICIENT, closed="right"),
        "intercept_": COEFFICIENT,
        "edges_": Array(shape=("n_bins+1",), low=0.0, high=1.0, sorted=True),
        "bin_counts_": Array("int64", shape=("n_bins",), low=0),
        "bin_mean_": Array(shape=("n_bins",), low=0.0, high=1.0),
    }
    n_bins: int = param(default=15, check=N_BINS, doc="Number of equal-mass bins.")
    scaler: Scaler = param(
        default="temperature",
        check=Choice("temperature", "platt"),
        doc="The parametric scaler fitted on the first part.",
    )
    scaler_fraction: float = param(
        default=0.5,
        check=Real(0.0, 1.0, closed="neither"),
        doc="Fraction of the calibration rows that fit the scaler; the others place the bins "
        "and give their values.",
    )
    seed: int = param(default=0, check=Integer(low=0), doc="Seed of the stratified split.")

    def _state_dims(self, n_classes: int) -> Dims:
        return {"k": n_classes, "n_bins": self.n_bins}

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        z = np.asarray(out.as_logits(), dtype=np.float64)
        first, second = stratified_split(
            out.labels, 1.0 - self.scaler_fraction, self.seed, every_class_in_both=False
        )
        self.temperature_, self.slope_, self.intercept_ = 1.0, 1.0, 0.0
        if self.scaler == "temperature":
            ts = TemperatureScaling().fit(z[first], out.labels[first])
            self.temperature_ = float(ts.temperature_)
        else:
            top, _, s = top_log_odds(z[first])
            correct = (top == out.labels[first]).astype(np.float64)
            slope, intercept = fit_logistic(s[:, None], correct, np.array([1.0, 0.0]))
            if not slope > 0:
                expected = "top-label confidences that rank correctness (Platt's slope > 0)"
                raise InputError("logits", expected, f"a fitted slope of {float(slope):.3g}")
            self.slope_, self.intercept_ = float(slope), float(intercept)
        _, scaled = self._scaled(z[second])
        self.edges_, self.bin_counts_, self.bin_mean_ = fit_bin_map(
            scaled, scaled, self.n_bins, "equal_mass"
        )

    def _scaled(self, logits: F64) -> tuple[F64, F64]:
        """The (scaled) probabilities the other classes share from, and the scaled
        top-label confidence."""
        from scipy.special import expit  # lazy: scipy costs a quarter second at import

        _, probs, s = top_log_odds(logits, self.temperature_)
        return probs, expit(self.slope_ * s + self.intercept_)

    def _predict_proba(self, logits: F64) -> F64:
        probs, scaled = self._scaled(logits)
        new = apply_bin_map(scaled, self.edges_, self.bin_counts_, self.bin_mean_, "equal_mass")
        return replace_top_label(probs, np.argmax(probs, axis=1), new)

    def _module(self) -> nn.Module:
        maps = StepMaps(self.edges_, self.bin_counts_, self.bin_mean_, snap=True)
        return ScalingBinningMap(maps, self.temperature_, self.slope_, self.intercept_)


class ScalingBinningMap(nn.Module):
    """:meth:`ScalingBinning.predict_proba` in torch: the top-label log-odds of
    ``logits / T`` (from the log-softmax, as :func:`top_log_odds`), Platt's map, the
    equal-mass bins (edges snapped, see :mod:`calibkit.calibrators.modules`), and the other
    classes sharing the rest.

    Parameters
    ----------
    maps : StepMaps
        The equal-mass bins' step map of the scaled top-label confidence.
    temperature, slope, intercept : float
        The temperature and Platt's map of the top-label log-odds (kept in float64).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(300, 3)) * 3
    >>> y = rng.integers(0, 3, 300)
    >>> cal = ScalingBinning().fit(z, y)
    >>> module = cal.to_module()
    >>> out = module(torch.from_numpy(z)).detach().numpy()
    >>> bool(np.allclose(out, cal.predict_proba(z), atol=1e-12))
    True
    """

    def __init__(self, maps: StepMaps, temperature: float, slope: float, intercept: float) -> None:
        super().__init__()
        self.maps = maps
        self.scaler: Tensor  # temperature, slope, intercept: float64 (ONNX keeps them so)
        scaler = torch.tensor([temperature, slope, intercept], dtype=torch.float64)
        self.register_buffer("scaler", scaler)

    def forward(self, logits: Tensor) -> Tensor:
        log_p = log_softmax_rows(logits.to(self.scaler.dtype) / self.scaler[0])
        top = log_p.argmax(dim=1, keepdim=True)
        is_top = torch.arange(log_p.shape[1], device=log_p.device) == top
        log_rest = torch.logsumexp(torch.where(is_top, -torch.inf, log_p), dim=1, keepdim=True)
        t = self.scaler[1] * (log_p.gather(1, top) - log_rest) + self.scaler[2]
        scaled = 1.0 / (1.0 + torch.exp(-t))  # ONNX Runtime's Sigmoid: 1e-11 off in float64
        return share_top_label(torch.exp(log_p), top, self.maps(scaled))
