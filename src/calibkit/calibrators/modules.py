"""The calibration maps as torch modules: logits in, calibrated probabilities out.

A fitted calibrator's ``to_module()`` returns one of these (``"auto"``: that of the method
it chose); :class:`~calibkit.calibrators.calibrated_model.CalibratedModel` puts one behind
a classifier. Each computes what the calibrator's ``predict_proba`` computes, step by step:

- Precision: the fitted state is held in float64 buffers and the map runs in the buffers'
  dtype. Logits of any float dtype are cast to it, so by default the map runs in float64
  and returns float64 probabilities, as ``predict_proba`` does, and a piecewise map puts
  every score in the bin ``predict_proba`` puts it in. ``module.float()`` gives a float32
  module (faster on a GPU) whose bins are then decided on float32 scores.
- Piecewise maps use comparisons rather than ``searchsorted`` (which ONNX lacks): a
  score's bin is the number of inner edges at or below it, the ``[e_k, e_{k+1})`` rule
  with the last bin closed of :mod:`calibkit.core.binning` (equal-width edges are the
  exact quotients ``k / n``); isotonic thresholds are interpolated as ``np.interp`` does,
  clipped at both ends. Memory is O(rows x maps x edges) for these maps.

- Ties: a calibration row's own score sits exactly on a Venn-Abers calibration score or an
  equal-mass bin edge in ``predict_proba``; torch's and ONNX Runtime's ``exp`` and ``log``
  may give that score a few units in the last place away, on the wrong side. So a score
  within a relative :data:`TIE_RTOL` of such a stored value is taken as equal to it
  (:func:`snap_to`): the calibration rows get ``predict_proba``'s output; a new score
  differs only if it falls in that band (1e-12 relative) without equalling the value.
- Input: :meth:`~calibkit.calibrators.base.Calibrator.to_module` wraps the map in
  :class:`CheckedLogits`, which accepts what ``predict_proba`` accepts (``(N, K)`` logits,
  and 1-D positive-class logits for two classes), refuses any other shape with an
  InputError naming the expected one (a ValueError when scripted; exported programs keep
  the traced rank and number of classes as guards), and gives a NaN row for a row with a
  NaN or infinite logit (``predict_proba`` refuses those).

Every module scripts (``torch.jit.script``), passes ``torch.export.export`` and exports to
ONNX.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn

F64 = npt.NDArray[np.float64]
#: Scores this close (relative) to a stored calibration score or equal-mass edge are taken as
#: equal to it: float64 ``exp``/``log`` of numpy, torch and ONNX Runtime differ by a few units
#: in the last place (1e-16 relative; 1e-13 for log-probabilities near -700).
TIE_RTOL = 1e-12


@torch.jit.unused
def _refuse_logits(expected: str, got: str) -> None:
    from calibkit.core.errors import InputError

    raise InputError("logits", expected, got)


def checked_logits(logits: Tensor, n_classes: int) -> Tensor:
    """``logits`` as ``(N, n_classes)`` (for two classes one logit per row is the positive
    class's), else an InputError naming ``logits`` (a ValueError under TorchScript)."""
    if logits.dim() == 1 and n_classes == 2:
        logits = torch.stack([torch.zeros_like(logits), logits], dim=1)
    if logits.dim() != 2 or logits.shape[1] != n_classes:
        shape = f"(N, {n_classes})" + (" or (N,)" if n_classes == 2 else "")
        got = "shape (" + ", ".join([str(n) for n in logits.shape]) + ")"
        if torch.jit.is_scripting():  # type: ignore[attr-defined]
            raise ValueError("logits: expected logits of shape " + shape + ", got " + got)
        _refuse_logits("logits of shape " + shape, got)
    return logits


class CheckedLogits(nn.Module):
    """``predict_proba``'s input contract around a calibration map (see the module doc).

    Parameters
    ----------
    calibration : nn.Module
        The map from ``(N, K)`` logits to probabilities.
    n_classes : int
        ``K``, the number of classes at fit time.

    Examples
    --------
    >>> m = CheckedLogits(Temperature(1.0), 2)
    >>> m(torch.tensor([0.0, float("nan")], dtype=torch.float64)).tolist()  # 1-D: binary
    [[0.5, 0.5], [nan, nan]]
    >>> m(torch.zeros(3, 1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: logits: expected logits of shape (N, 2) or (N,), got ...
    """

    def __init__(self, calibration: nn.Module, n_classes: int) -> None:
        super().__init__()
        self.calibration = calibration
        self.n_classes = int(n_classes)

    def forward(self, logits: Tensor) -> Tensor:
        logits = checked_logits(logits, self.n_classes)
        probs: Tensor = self.calibration(logits)
        bad = ~torch.isfinite(logits).all(dim=1, keepdim=True)
        return torch.where(bad, torch.full_like(probs, float("nan")), probs)


def snap_to(score: Tensor, stored: Tensor, rtol: float = TIE_RTOL) -> Tensor:
    """Each score, or the nearest of its map's ``stored`` values where within ``rtol`` of
    it (relative; by default :data:`TIE_RTOL`). ``score`` is ``(N, maps)``, ``stored``
    ``(maps, width)``."""
    if stored.shape[1] == 0:
        return score
    s = score.unsqueeze(-1)
    nearest = (stored - s).abs().argmin(dim=-1, keepdim=True)
    value = stored.unsqueeze(0).expand(s.shape[0], -1, -1).gather(-1, nearest).squeeze(-1)
    return torch.where((score - value).abs() <= rtol * value.abs(), value, score)


def _buffer(value: object) -> Tensor:
    """A float64 tensor holding a copy of ``value`` (a number or an array)."""
    return torch.tensor(np.asarray(value, dtype=np.float64))


def log_softmax_rows(z: Tensor) -> Tensor:
    """Row-wise log-softmax, computed as :func:`calibkit.core.outputs.log_softmax64` does."""
    z = z - z.max(dim=1, keepdim=True).values
    return z - torch.log(torch.exp(z).sum(dim=1, keepdim=True))


class LogSoftmax(nn.Module):
    """The log-softmax of every row, in float64: what a map fitted on probabilities takes
    first (:meth:`calibkit.calibrators.fitted.PostHoc._as_fitted_kind`), so that a
    model's logits and its log-probabilities give it the same numbers.

    Examples
    --------
    >>> m = LogSoftmax()
    >>> m(torch.tensor([[0.0, 0.0], [1.0, 3.0]])).round(decimals=4).tolist()
    [[-0.6931, -0.6931], [-2.1269, -0.1269]]
    >>> m(torch.log(torch.tensor([[0.25, 0.75]], dtype=torch.float64))).round(decimals=4).tolist()
    [[-1.3863, -0.2877]]
    """

    def forward(self, logits: Tensor) -> Tensor:
        return log_softmax_rows(logits.to(torch.float64))


def gather_rows(table: Tensor, index: Tensor) -> Tensor:
    """``table[i, index[:, i]]`` for a ``(maps, width)`` table and ``(N, maps)`` indices."""
    offsets = torch.arange(table.shape[0], device=index.device) * table.shape[1]
    return table.reshape(-1)[index + offsets]


def bin_of(score: Tensor, inner_edges: Tensor) -> Tensor:
    """The bin of every score: how many of its map's inner edges are at or below it.

    ``score`` is ``(N, maps)``, ``inner_edges`` ``(maps, n_bins - 1)`` (ascending).
    """
    return (score.unsqueeze(-1) >= inner_edges).sum(dim=-1)


def combine_one_vs_rest(q: Tensor, probs: Tensor, binary: bool) -> Tensor:
    """Calibrated class probabilities from the one-vs-rest maps' outputs ``q``.

    Binary: ``q`` is ``P(y = 1)``, and ``P(y = 0) = 1 - q``. Otherwise the rows of ``q`` are
    renormalised; a row summing to 0 keeps its uncalibrated ``probs``.
    """
    if binary:
        return torch.cat([1.0 - q, q], dim=1)
    total = q.sum(dim=1, keepdim=True)
    return torch.where(total > 0, q / total, probs)


class Temperature(nn.Module):
    """``softmax(logits / T)`` (temperature scaling; the T of Neural Clamping).

    Parameters
    ----------
    temperature : float
        The temperature ``T > 0``.

    Examples
    --------
    >>> Temperature(2.0)(torch.tensor([[0.0, 2.0]])).round(decimals=6).tolist()
    [[0.268941, 0.731059]]
    """

    def __init__(self, temperature: float) -> None:
        super().__init__()
        self.temperature: Tensor
        self.register_buffer("temperature", _buffer(temperature))

    def forward(self, logits: Tensor) -> Tensor:
        z = logits.to(self.temperature.dtype) / self.temperature
        return torch.exp(log_softmax_rows(z))


class Affine(nn.Module):
    """``softmax(W x + b)``: ``x`` the logits, or their log-softmax with ``on_log_probs``.

    Parameters
    ----------
    weights : ndarray of shape (K, K) or (K,)
        ``W``: a full matrix, or the diagonal of a diagonal one (vector scaling).
    bias : ndarray of shape (K,)
        ``b``.
    on_log_probs : bool
        Whether ``W`` acts on the log-probabilities (Dirichlet calibration).

    Examples
    --------
    >>> m = Affine(np.array([1.0, 1.0]), np.array([0.0, np.log(3.0)]))
    >>> m(torch.tensor([[0.0, 0.0]])).round(decimals=6).tolist()
    [[0.25, 0.75]]
    """

    def __init__(self, weights: F64, bias: F64, on_log_probs: bool = False) -> None:
        super().__init__()
        self.weights: Tensor
        self.bias: Tensor
        self.register_buffer("weights", _buffer(weights))
        self.register_buffer("bias", _buffer(bias))
        self.on_log_probs = on_log_probs
        self.diagonal = self.weights.dim() == 1

    def forward(self, logits: Tensor) -> Tensor:
        x = logits.to(self.bias.dtype)
        if self.on_log_probs:
            x = log_softmax_rows(x)
        z = x * self.weights + self.bias if self.diagonal else x @ self.weights.T + self.bias
        return torch.exp(log_softmax_rows(z))


class BinaryLogistic(nn.Module):
    """Two classes: ``P(y = 1) = sigmoid(features @ coef + intercept)``.

    Parameters
    ----------
    coef : sequence of float
        One coefficient per feature.
    intercept : float
        The intercept.
    on_log_probs : bool
        False: the feature is the positive-class logit ``z_1 - z_0`` (Platt); True: the
        features are ``[ln p, -ln(1 - p)]`` for ``p = softmax(z)_1`` (beta calibration).

    Examples
    --------
    >>> BinaryLogistic([2.0], 0.0, on_log_probs=False)(torch.tensor([[0.0, 0.0]])).tolist()
    [[0.5, 0.5]]
    """

    def __init__(self, coef: Sequence[float], intercept: float, on_log_probs: bool) -> None:
        super().__init__()
        self.coef: Tensor
        self.intercept: Tensor
        self.register_buffer("coef", _buffer(coef))
        self.register_buffer("intercept", _buffer(intercept))
        self.on_log_probs = on_log_probs

    def forward(self, logits: Tensor) -> Tensor:
        z = logits.to(self.coef.dtype)
        if self.on_log_probs:
            log_p = log_softmax_rows(z)
            features = torch.stack([log_p[:, 1], -log_p[:, 0]], dim=1)
        else:
            features = (z[:, 1] - z[:, 0]).unsqueeze(1)
        t = (features @ self.coef + self.intercept).unsqueeze(1)
        return torch.cat([torch.sigmoid(-t), torch.sigmoid(t)], dim=1)


class StepMaps(nn.Module):
    """Histogram-binning step maps: a score goes to its bin's rate, or stays as it is
    where its bin held no calibration sample.

    Parameters
    ----------
    edges : ndarray of shape (maps, n_bins + 1) or (n_bins + 1,)
        The bin edges of each map (ascending, from 0 to 1).
    counts : ndarray of shape (maps, n_bins) or (n_bins,)
        Calibration samples per bin (0: the bin is empty).
    rates : ndarray of shape (maps, n_bins) or (n_bins,)
        The value of each bin.
    snap : bool
        Whether a score within :data:`TIE_RTOL` of an inner edge is placed as the edge
        (:func:`snap_to`): for equal-mass edges, which are calibration scores.

    Examples
    --------
    >>> maps = StepMaps(np.array([0.0, 0.5, 1.0]), np.array([0, 4]), np.array([0.0, 0.75]))
    >>> maps(torch.tensor([[0.2], [0.5]], dtype=torch.float64)).tolist()
    [[0.2], [0.75]]
    """

    def __init__(
        self, edges: F64, counts: npt.NDArray[np.int64], rates: F64, snap: bool = False
    ) -> None:
        super().__init__()
        self.snap = snap
        self.inner_edges: Tensor
        self.filled: Tensor
        self.values: Tensor  # the bins' rates
        self.register_buffer("inner_edges", _buffer(np.atleast_2d(edges)[:, 1:-1]))
        self.register_buffer("filled", torch.tensor(np.atleast_2d(counts) > 0))
        self.register_buffer("values", _buffer(np.atleast_2d(rates)))

    def forward(self, score: Tensor) -> Tensor:
        """Map the ``(N, maps)`` scores, column ``i`` by map ``i``."""
        placed = snap_to(score, self.inner_edges) if self.snap else score
        idx = bin_of(placed, self.inner_edges)
        return torch.where(gather_rows(self.filled, idx), gather_rows(self.values, idx), score)


class Interpolation(nn.Module):
    """Piecewise-linear maps through thresholds, clipped at both ends (``np.interp``).

    Parameters
    ----------
    x, y : sequence of ndarray
        One pair of threshold arrays per map (``x`` increasing; lengths may differ).

    Examples
    --------
    >>> maps = Interpolation([np.array([0.2, 0.6])], [np.array([0.0, 1.0])])
    >>> maps(torch.tensor([[0.1], [0.4], [0.9]], dtype=torch.float64)).tolist()
    [[0.0], [0.5], [1.0]]
    """

    def __init__(self, x: Sequence[F64], y: Sequence[F64]) -> None:
        super().__init__()
        width = max(2, *(len(t) for t in x))  # padded by repeating the last threshold
        self.x: Tensor
        self.values: Tensor  # the thresholds' y
        self.register_buffer("x", _buffer([np.pad(t, (0, width - len(t)), "edge") for t in x]))
        self.register_buffer("values", _buffer([np.pad(t, (0, width - len(t)), "edge") for t in y]))

    def forward(self, score: Tensor) -> Tensor:
        """Map the ``(N, maps)`` scores, column ``i`` by map ``i``."""
        j = (bin_of(score, self.x) - 1).clamp(0, self.x.shape[1] - 2)
        x0, x1 = gather_rows(self.x, j), gather_rows(self.x, j + 1)
        y0, y1 = gather_rows(self.values, j), gather_rows(self.values, j + 1)
        inside = (score > x0) & (score < x1)
        slope = (y1 - y0) / torch.where(inside, x1 - x0, torch.ones_like(x0))
        return torch.where(inside, slope * (score - x0) + y0, torch.where(score < x1, y0, y1))


class TopLabel(nn.Module):
    """Top-label histogram binning: the top probability goes through ``maps``; the other
    classes share the rest in proportion (uniformly if they had nothing).

    Parameters
    ----------
    maps : StepMaps
        One step map, of the top-label confidence.

    Examples
    --------
    >>> maps = StepMaps(np.array([0.0, 0.5, 1.0]), np.array([0, 4]), np.array([0.0, 0.75]))
    >>> TopLabel(maps)(torch.log(torch.tensor([[0.1, 0.3, 0.6]]))).round(decimals=6).tolist()
    [[0.0625, 0.1875, 0.75]]
    """

    def __init__(self, maps: StepMaps) -> None:
        super().__init__()
        self.maps = maps

    def forward(self, logits: Tensor) -> Tensor:
        probs = torch.exp(log_softmax_rows(logits.to(self.maps.values.dtype)))
        top = probs.argmax(dim=1, keepdim=True)
        return share_top_label(probs, top, self.maps(probs.gather(1, top)))


def share_top_label(probs: Tensor, top: Tensor, new: Tensor) -> Tensor:
    """``probs`` with the top class's probability ``new``; the other classes share the rest
    in proportion (uniformly if they had nothing), as
    :func:`calibkit.calibrators.logit.histogram.replace_top_label` does."""
    is_top = torch.arange(probs.shape[1], device=probs.device) == top
    rest = torch.where(is_top, torch.zeros_like(probs), probs)
    rest_sum = rest.sum(dim=1, keepdim=True)
    remaining = 1.0 - new
    uniform = remaining / (probs.shape[1] - 1)
    shared = torch.where(rest_sum > 0, rest * (remaining / rest_sum), uniform)
    return torch.where(is_top, new, shared)


class OneVsRest(nn.Module):
    """One map per class of the softmax probabilities, combined by
    :func:`combine_one_vs_rest` (class-wise histogram binning, isotonic regression).

    Parameters
    ----------
    maps : StepMaps or Interpolation
        One map per class, or only that of class 1 with ``binary``.
    binary : bool
        Whether the problem has two classes (``P(y = 0) = 1 - P(y = 1)``).

    Examples
    --------
    >>> maps = Interpolation([np.array([0.0, 1.0])], [np.array([0.0, 0.5])])
    >>> OneVsRest(maps, binary=True)(torch.tensor([[0.0, 0.0]])).tolist()
    [[0.75, 0.25]]
    """

    def __init__(self, maps: StepMaps | Interpolation, binary: bool) -> None:
        super().__init__()
        self.maps = maps
        self.binary = binary

    def forward(self, logits: Tensor) -> Tensor:
        probs = torch.exp(log_softmax_rows(logits.to(self.maps.values.dtype)))
        scores = probs[:, 1:] if self.binary else probs
        return combine_one_vs_rest(self.maps(scores), probs, self.binary)


class InputShift(nn.Module):
    """``x + delta``: the input perturbation of Neural Clamping.

    Parameters
    ----------
    delta : Tensor
        The perturbation, shaped like one input (a copy is kept).

    Examples
    --------
    >>> InputShift(torch.tensor([1.0, 0.0]))(torch.tensor([[1.0, 2.0]])).tolist()
    [[2.0, 2.0]]
    """

    def __init__(self, delta: Tensor) -> None:
        super().__init__()
        self.delta: Tensor
        self.register_buffer("delta", delta.detach().clone())

    def forward(self, x: Tensor) -> Tensor:
        return x + self.delta


def softmax_module(n_classes: int) -> nn.Module:
    """Logits to their softmax probabilities (float64), with the calibrators' input checks
    (the probabilities of a composed kind without a calibrator underneath)."""
    return CheckedLogits(Temperature(1.0), n_classes).eval()


class MixUniform(nn.Module):
    """The probabilities of ``inner`` mixed with the uniform distribution:
    ``(1 - eps) inner(logits) + eps / K`` (the protection of the binning methods).

    Parameters
    ----------
    inner : nn.Module
        A map from logits to probabilities.
    smoothing : float
        The weight ``eps`` of the uniform distribution, in ``[0, 1)``.

    Examples
    --------
    >>> m = MixUniform(Temperature(1.0), 0.5)
    >>> m(torch.tensor([[0.0, 0.0]])).tolist()
    [[0.5, 0.5]]
    """

    def __init__(self, inner: nn.Module, smoothing: float) -> None:
        super().__init__()
        self.inner = inner
        self.smoothing: Tensor
        self.register_buffer("smoothing", torch.tensor(float(smoothing), dtype=torch.float64))

    def forward(self, logits: Tensor) -> Tensor:
        q: Tensor = self.inner(logits)
        return (1.0 - self.smoothing) * q + self.smoothing / q.shape[1]


def with_smoothing(module: nn.Module, smoothing: float) -> nn.Module:
    """``module`` followed by :class:`MixUniform` (``module`` itself when ``eps`` is 0)."""
    return module if smoothing == 0.0 else MixUniform(module, smoothing)


class SmoothedTemperature(Temperature):
    """``(1 - eps) softmax(logits / T) + eps / K``, or its logarithm with ``log=True``.

    Parameters
    ----------
    temperature : float
        The temperature ``T > 0``.
    smoothing : float
        The weight ``eps`` of the uniform distribution, in ``[0, 1)``.
    log : bool
        Whether to return the log-probabilities (the features of the structured scalings).

    Examples
    --------
    >>> m = SmoothedTemperature(1.0, 0.5)
    >>> m(torch.tensor([[0.0, 0.0], [0.0, -1e4]])).tolist()
    [[0.5, 0.5], [0.75, 0.25]]
    """

    def __init__(self, temperature: float, smoothing: float, log: bool = False) -> None:
        super().__init__(temperature)
        self.smoothing: Tensor
        self.register_buffer("smoothing", torch.tensor(float(smoothing), dtype=torch.float64))
        self.log = log

    def forward(self, logits: Tensor) -> Tensor:
        p = torch.exp(log_softmax_rows(logits.to(self.temperature.dtype) / self.temperature))
        q = (1.0 - self.smoothing) * p + self.smoothing / p.shape[1]
        return torch.log(q) if self.log else q


class SmoothedAffine(Affine):
    """``softmax(W x + b)`` on the smoothed temperature-scaled log-probabilities ``x``.

    Parameters
    ----------
    weights, bias : ndarray
        ``W`` (full, or its diagonal) and ``b``.
    temperature, smoothing : float
        The temperature stage (see :class:`SmoothedTemperature`).

    Examples
    --------
    >>> m = SmoothedAffine(np.eye(2), np.zeros(2), 1.0, 0.5)
    >>> m(torch.tensor([[0.0, -1e4]])).round(decimals=12).tolist()
    [[0.75, 0.25]]
    """

    def __init__(self, weights: F64, bias: F64, temperature: float, smoothing: float) -> None:
        super().__init__(weights, bias)
        self.features = SmoothedTemperature(temperature, smoothing, log=True)

    def forward(self, logits: Tensor) -> Tensor:
        x = self.features(logits)
        z = x * self.weights + self.bias if self.diagonal else x @ self.weights.T + self.bias
        return torch.exp(log_softmax_rows(z))
