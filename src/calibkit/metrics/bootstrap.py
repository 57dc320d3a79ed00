"""A percentile bootstrap interval for any metric function, drawn as a
:class:`~calibkit.core.options.Resampling` says.

:func:`calibkit.metrics.evaluate` bootstraps every built-in metric at once; this function
does it for one metric, built-in or the caller's own. A metric that accepts
``sample_weight`` (every calibkit metric does) is evaluated on multinomial resample counts,
so no data is copied; any other callable ``metric(labels, probs=...)`` or
``metric(labels, logits=...)`` is evaluated on resampled rows.

>>> from calibkit.metrics import ece
>>> rng = np.random.default_rng(0)
>>> p = rng.dirichlet(np.ones(3) * 0.5, size=400)
>>> y = np.array([rng.choice(3, p=row) for row in p])
>>> ci = bootstrap_ci(ece, y, probs=p, resampling=Resampling(n_boot=200, seed=0))
>>> bool(0 <= ci.low <= ci.high <= 1), ci.level
(True, 0.95)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Unpack, get_args, get_origin, get_type_hints

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.options import Resampling
from calibkit.core.outputs import as_outputs


@dataclass(frozen=True)
class BootstrapInterval:
    """A metric's value on the whole data and its percentile bootstrap interval.

    Attributes
    ----------
    estimate : float
        The metric on all samples.
    low, high : float
        The ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles over the replicates.
    level : float
        Confidence level of the interval.
    n_boot : int
        Number of bootstrap replicates.

    Examples
    --------
    >>> BootstrapInterval(0.04, 0.03, 0.05, 0.95, 1000).high
    0.05
    """

    estimate: float
    low: float
    high: float
    level: float
    n_boot: int


def _takes_weights(metric: Callable[..., float]) -> bool:
    """Whether ``metric`` takes ``sample_weight``: by name, or in its ``**options`` TypedDict."""
    try:
        if "sample_weight" in inspect.signature(metric).parameters:
            return True
        hints = get_type_hints(metric).values()
    except Exception:  # not inspectable, or annotations that do not evaluate
        return False
    typed = [get_args(h)[0] for h in hints if get_origin(h) is Unpack]
    return any("sample_weight" in options.__annotations__ for options in typed)


def bootstrap_ci(
    metric: Callable[..., float],
    labels: object,
    probs: object = None,
    *,
    logits: object = None,
    resampling: Resampling = Resampling(),
    **kwargs: Any,
) -> BootstrapInterval:
    """Percentile bootstrap interval of ``metric`` over resamples of the samples (seeded).

    Binned errors are biased upwards at finite N: the interval can lie above the estimate.

    Parameters
    ----------
    metric : callable
        ``metric(labels, probs=...)`` or ``metric(labels, logits=...)`` returning a float.
    labels, probs, logits
        The outputs, as for every metric.
    resampling : Resampling
        The replicates (at least 1), the confidence level and the seed.
    **kwargs
        Further arguments of ``metric`` (e.g. ``n_bins=10``).

    Returns
    -------
    BootstrapInterval
        The estimate and its interval.

    Examples
    --------
    >>> from calibkit.metrics.scores import accuracy
    >>> ci = bootstrap_ci(accuracy, [0, 1], probs=[[0.9, 0.1], [0.2, 0.8]],
    ...                   resampling=Resampling(n_boot=20))
    >>> ci.estimate, ci.low, ci.high  # every resample is all correct
    (1.0, 1.0, 1.0)
    """
    if not callable(metric):
        raise InputError("metric", "a callable metric(labels, probs=..., ...)", repr(metric))
    n_boot, level = resampling.n_boot, resampling.level
    if n_boot < 1:
        raise InputError("n_boot", "an integer >= 1", repr(n_boot))
    out = as_outputs(labels, probs, logits=logits)
    key = out.kind
    n = out.n_samples
    rng = np.random.default_rng(resampling.seed)
    estimate = float(metric(out.labels, **{key: out.scores}, **kwargs))
    values = np.empty(n_boot)
    weighted = _takes_weights(metric)
    for b in range(n_boot):
        draw = rng.integers(0, n, n)
        if weighted:
            w = np.bincount(draw, minlength=n).astype(np.float64)
            values[b] = metric(out.labels, **{key: out.scores}, sample_weight=w, **kwargs)
        else:
            values[b] = metric(out.labels[draw], **{key: out.scores[draw]}, **kwargs)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return BootstrapInterval(estimate, float(low), float(high), float(level), n_boot)
