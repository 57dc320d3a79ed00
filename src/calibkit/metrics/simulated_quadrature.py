"""Quadrature for the truths of :mod:`calibkit.metrics.simulated_truth`, deterministic.

:func:`integrate_pieces` integrates a vector of functions over each piece between given
breakpoints by adaptive Gauss-Kronrod (7-15 points, QUADPACK's ``qk15`` rule), all pieces
at once (vectorised over the nodes); :func:`sign_changes` finds where a function changes
sign, so that ``|c - f(c)|`` is integrated over pieces where it is smooth.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calibkit.metrics.simulated_model import F64

#: Gauss-Kronrod 15-point nodes on [-1, 1] and weights; the 7-point Gauss rule uses the
#: nodes of odd index (QUADPACK's qk15).
_XK = np.array(
    [
        0.991455371120812639206854697526329,
        0.949107912342758524526189684047851,
        0.864864423359769072789712788640926,
        0.741531185599394439863864773280788,
        0.586087235467691130294144845693013,
        0.405845151377397166906606412076961,
        0.207784955007898467600689403773245,
    ]
)
_NODES = np.concatenate([-_XK, [0.0], _XK[::-1]])
_WK_HALF = [
    0.022935322010529224963732008058970,
    0.063092092629978553290700663189204,
    0.104790010322250183839876322541518,
    0.140653259715525918745189590510238,
    0.169004726639267902826583426598550,
    0.190350578064785409913256402421014,
    0.204432940075298892414161999234649,
]
_WK = np.array([*_WK_HALF, 0.209482141084727828012999174891714, *_WK_HALF[::-1]])
_WG_HALF = [
    0.129484966168869693270611432679082,
    0.279705391489276667901467771423780,
    0.381830050505118944950369775488975,
]
_WG = np.array([*_WG_HALF, 0.417959183673469387755102040816327, *_WG_HALF[::-1]])
#: The total absolute error allowed (the sum of the pieces' error estimates), the narrowest
#: piece halved, and the most pieces under refinement at once.
TOLERANCE = 1e-12
MIN_WIDTH = 1e-15
MAX_ACTIVE = 1 << 16


def _kronrod(fun: Callable[[F64], F64], lo: F64, hi: F64) -> tuple[F64, F64]:
    """The 15-point estimates of each piece, shape ``(m, V)``, and their error estimates
    ``|K15 - G7|`` (the largest over the components), in chunks of bounded memory."""
    half, mid = (hi - lo) / 2, (hi + lo) / 2
    x = (mid[:, None] + half[:, None] * _NODES).ravel()
    chunks = [fun(x[:1024])]  # then chunks of about 4 million values
    step = max(1024, (1 << 22) // chunks[0].shape[1])
    chunks += [fun(x[i : i + step]) for i in range(1024, x.shape[0], step)]
    vals = np.concatenate(chunks).reshape(lo.shape[0], _NODES.shape[0], -1)
    kronrod = half[:, None] * np.einsum("j,mjv->mv", _WK, vals)
    gauss = half[:, None] * np.einsum("j,mjv->mv", _WG, vals[:, 1::2])
    return kronrod, np.abs(kronrod - gauss).max(axis=1)


def integrate_pieces(
    fun: Callable[[F64], F64], points: F64, tol: float = TOLERANCE, max_rounds: int = 200
) -> F64:
    """The integral of ``fun`` over each piece ``[points[i], points[i + 1]]``.

    Adaptive Gauss-Kronrod 7-15 over every piece at once, on a global error budget (as
    QUADPACK's ``qag``): each round accepts the pieces of smallest error estimate
    ``|K15 - G7|`` (the largest over the components) while their sum stays within half of
    what is left of ``tol``, and halves the others; a piece narrower than
    :data:`MIN_WIDTH` (where rounding, not the rule, limits the estimate) is accepted.

    Parameters
    ----------
    fun : callable
        ``fun(x)`` of shape ``(m, V)`` for ``x`` of shape ``(m,)``.
    points : ndarray of shape (P + 1,)
        Increasing breakpoints.
    tol : float
        Total absolute error allowed (the sum of the accepted pieces' estimates).
    max_rounds : int
        Most halvings of a piece.

    Returns
    -------
    ndarray of shape (P, V)
        The integral of each component over each piece.

    Examples
    --------
    >>> f = lambda x: np.stack([x**2, np.sqrt(x)], axis=1)
    >>> integrate_pieces(f, np.array([0.0, 1.0])).round(12).tolist()
    [[0.333333333333, 0.666666666667]]
    """
    lo, hi = points[:-1], points[1:]
    owner = np.arange(lo.shape[0])
    out: F64 | None = None
    spent = 0.0
    for round_ in range(max_rounds + 1):
        kronrod, err = _kronrod(fun, lo, hi)
        if out is None:
            out = np.zeros((lo.shape[0], kronrod.shape[1]))
        thin = hi - lo <= MIN_WIDTH
        last = round_ == max_rounds or lo.shape[0] > MAX_ACTIVE
        if last or err[~thin].sum() <= tol - spent:
            done = np.ones(lo.shape[0], dtype=bool)
        else:
            order = np.argsort(np.where(thin, -1.0, err), kind="stable")
            fits = np.cumsum(np.where(thin, 0.0, err)[order]) <= (tol - spent) / 2
            done = thin.copy()
            done[order[fits]] = True
            spent += float(err[done & ~thin].sum())
        np.add.at(out, owner[done], kronrod[done])
        if done.all():
            break
        keep, mid = ~done, (lo + hi) / 2
        lo, hi = np.concatenate([lo[keep], mid[keep]]), np.concatenate([mid[keep], hi[keep]])
        owner = np.concatenate([owner[keep], owner[keep]])
    assert out is not None
    return out


def sign_changes(h: Callable[[F64], F64], knots: F64, per_piece: int = 128) -> F64:
    """The points where the vectorised ``h`` changes sign between the sorted ``knots`` (the
    ends included; ``h`` is smooth between them; ``|h| <= 1e-13`` counts as 0).

    Each piece between knots is sampled at ``per_piece`` points; each sign change found is
    bisected to machine precision.

    Examples
    --------
    >>> sign_changes(lambda x: (x - 0.3) * (x - 0.7), np.array([0.0, 1.0])).round(12).tolist()
    [0.3, 0.7]
    """
    t = np.arange(per_piece) / per_piece
    grid = np.append((knots[:-1, None] + np.diff(knots)[:, None] * t).ravel(), knots[-1])
    y = h(grid)
    nonzero = np.flatnonzero(np.abs(y) > 1e-13)
    sign = np.sign(y[nonzero])
    flip = np.flatnonzero(sign[:-1] != sign[1:])
    a, b, sa = grid[nonzero[flip]], grid[nonzero[flip + 1]], sign[flip]
    for _ in range(60):
        mid = (a + b) / 2
        same = np.sign(h(mid)) == sa
        a, b = np.where(same, mid, a), np.where(same, b, mid)
    return np.asarray((a + b) / 2, dtype=np.float64)
