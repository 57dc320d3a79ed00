"""Poisson(1) resample weights, one byte each, for the Poisson bootstrap.

In the Poisson bootstrap (Hanley & MacGibbon 2006; Chamandy et al. 2012) a replicate
weighs every sample by an independent Poisson(1) count instead of drawing N samples with
replacement (multinomial counts): the large-N limit of the same scheme, with weights that
need no index draws and no ``bincount``, and can be drawn in any sample order.
:class:`~calibkit.metrics.resampled.SortedSamples` uses them from
:data:`~calibkit.metrics.resampled.POISSON_MIN_N` samples on.

>>> poisson_counts(np.random.default_rng(0), 2, 6).shape
(2, 6)
"""

from __future__ import annotations

import numpy as np

#: Bits of the uniform numbers mapped to Poisson(1) weights (:func:`poisson_table`).
POISSON_BITS = 16


def poisson_table(bits: int = POISSON_BITS) -> np.ndarray:
    """Lookup table from ``bits``-bit uniform integers to Poisson(1) weights (uint8).

    Entry ``u`` is the smallest ``k`` with ``u < round(2^bits F(k))``, ``F`` the Poisson(1)
    CDF: each ``k`` gets a share of the ``2^bits`` entries within ``2^-bits`` of
    ``P(k) = e^-1 / k!``. With 16 bits the weights run from 0 to 8 (``P(X >= 9) = 1.1e-6``
    is folded into 8 and below); the table's mean is exactly 1 and its variance
    ``1 - 2^-15`` (0.99997).

    >>> t = poisson_table()
    >>> np.bincount(t).tolist()
    [24109, 24110, 12054, 4019, 1004, 201, 34, 4, 1]
    >>> float(t.mean()), round(float(t.var()), 6)
    (1.0, 0.999969)
    """
    k = np.arange(64)
    pmf = np.exp(-1.0 - np.cumsum(np.log(np.maximum(k, 1))))  # e^-1 / k!
    ends = np.rint(np.cumsum(pmf) * 2.0**bits).astype(np.int64)
    return np.searchsorted(ends, np.arange(1 << bits), side="right").astype(np.uint8)


_TABLE = poisson_table()


def poisson_counts(rng: np.random.Generator, b: int, n: int) -> np.ndarray:
    """``(b, n)`` independent Poisson(1) weights (uint8) from ``rng``'s raw 64-bit outputs.

    Each row takes ``ceil(n / 4)`` outputs of ``rng.bit_generator`` (four 16-bit numbers
    each, mapped through :func:`poisson_table`), so the weights do not depend on how the
    replicates are split into blocks: ``b`` rows are the rows of ``b`` calls with ``b=1``.

    >>> w = poisson_counts(np.random.default_rng(0), 2, 5)
    >>> w.shape, w.dtype.name
    ((2, 5), 'uint8')
    """
    m = -(-n // 4)
    raw = rng.bit_generator.random_raw(b * m).reshape(b, m)
    return np.take(_TABLE, raw.view(np.uint16)[:, :n])
