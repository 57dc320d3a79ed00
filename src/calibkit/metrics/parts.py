"""One factory for the metric giving one part of a score decomposition.

:func:`part_metric` turns a decomposition (a function of the outputs returning a dataclass
of parts, as :func:`~calibkit.metrics.decomposition.score_decomposition` and
:func:`~calibkit.metrics.murphy.brier_decomposition` do) into the metric of one part, with
the signature every metric has, so the registry and :func:`~calibkit.metrics.bootstrap_ci`
can call it.

>>> from dataclasses import dataclass
>>> @dataclass
... class Halves:
...     low: float
>>> half = part_metric(lambda labels, probs=None, **kw: Halves(0.5), "low", "half_low")
>>> half.__name__, half([0], probs=[[1.0, 0.0]])
('half_low', 0.5)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def part_metric(
    decompose: Callable[..., object], part: str, name: str, **fixed: Any
) -> Callable[..., float]:
    """The metric ``(labels, probs=None, *, logits=None, sample_weight=None, **options)``
    giving ``getattr(decompose(..., **fixed, **options), part)`` (``fixed``: e.g.
    ``score="nll"``; ``options``: e.g. ``n_bins``)."""

    def metric(
        labels: object,
        probs: object = None,
        *,
        logits: object = None,
        sample_weight: object = None,
        **options: Any,
    ) -> float:
        d = decompose(labels, probs, logits=logits, sample_weight=sample_weight, **fixed, **options)
        return float(getattr(d, part))

    metric.__name__ = name
    metric.__wrapped__ = decompose  # type: ignore[attr-defined]  # its options, for inspect
    owner = getattr(decompose, "__name__", "the decomposition")
    metric.__doc__ = f"The {part} part of :func:`{owner}`."
    return metric
