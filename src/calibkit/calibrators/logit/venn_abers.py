"""Inductive Venn-Abers predictors (Vovk & Petej 2014), one-vs-rest: never probability 0.

For one class ``k`` with calibration scores ``s_i = softmax(z_i)_k`` and outcomes
``y_i = [label_i = k]``, a new score ``s`` gets two probabilities: ``p0`` (``p1``) is the
value at ``s`` of the isotonic regression of the calibration outcomes *plus* the point
``(s, 0)`` (``(s, 1)``). Then ``0 <= p0 <= p1 <= 1`` with ``p0 < 1`` and ``p1 > 0`` (the
added point's level set holds its outcome), and the pair is merged into the log-loss
minimax probability ``p = p1 / (1 - p0 + p1)`` (Vovk & Petej, section 4), which is
strictly inside ``(0, 1)``.

Multiclass: each class's merged ``p`` is computed one-vs-rest and the row is divided by
its sum; with two classes only class 1 is fitted and ``P(y = 0) = 1 - p``.

Computation. ``p0`` and ``p1`` depend on ``s`` only through its place among the ``n``
distinct calibration scores: equal to one of them (the new point joins that score's
group), or in one of the ``n + 1`` gaps. All ``2 n + 1`` places are solved at fit time:
the isotonic fit of a prefix of the groups is that of a shorter prefix plus one top block
(so one pass of pool-adjacent-violators stores every prefix's solution, and likewise for
suffixes), and the new point's block is found by merging it with the neighbouring blocks
while they violate the order, for all places at once. Predicting is a ``searchsorted``.
The pool-adjacent-violators passes are Python loops over the distinct scores of each
class (``O(n)`` steps); everything else is vectorised.

>>> s = np.array([0.1, 0.3, 0.6, 0.8])
>>> va = VennAbers().fit(np.log(np.column_stack([1 - s, s])), [0, 1, 0, 1])
>>> p0, p1 = va.interval(np.log([[0.5, 0.5]]))
>>> p0[0, 1].round(6), p1[0, 1].round(6)  # (0.5, 0) with 0.3, 0.6 -> 1/3; (0.5, 1) -> 2/3
(np.float64(0.333333), np.float64(0.666667))
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.logit.histogram import one_vs_rest_classes
from calibkit.calibrators.logit.venn_abers_module import VennAbersMaps
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Array, ArrayList, Dims
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.validation import Constraints

I64 = np.ndarray


def block_starts(weight: F64, total: F64) -> I64:
    """For every prefix ``0..u`` of the groups, the first group of its isotonic fit's last
    block (pool-adjacent-violators; block ``[a, b]`` has mean ``sum total / sum weight``).

    Blocks of equal means are pooled too, so the blocks' means strictly increase (a long
    run of outcomes 0 is one block, which keeps the merges of :func:`venn_abers_values`
    few)."""
    starts = np.empty(weight.shape[0], dtype=np.int64)
    stack: list[tuple[int, float, float]] = []  # (first group, weight, total) per block
    for u in range(weight.shape[0]):
        a, w, t = u, float(weight[u]), float(total[u])
        while stack and stack[-1][2] * w >= t * stack[-1][1]:  # previous mean >= this mean
            a, w0, t0 = stack.pop()
            w, t = w + w0, t + t0
        stack.append((a, w, t))
        starts[u] = a
    return starts


def venn_abers_values(score: F64, outcome: F64, label: float) -> tuple[F64, F64]:
    """The distinct scores of one class and the isotonic value of the new point of
    outcome ``label`` at each of the ``2 n + 1`` places (gap, score, gap, ..., gap)."""
    x, group = np.unique(score, return_inverse=True)
    n = x.shape[0]
    weight = np.bincount(group, minlength=n).astype(np.float64)
    total = np.bincount(group, weights=outcome, minlength=n).astype(np.float64)
    starts = block_starts(weight, total)
    ends = n - 1 - block_starts(weight[::-1], -total[::-1])[::-1]
    cum_w = np.concatenate(([0.0], np.cumsum(weight)))
    cum_t = np.concatenate(([0.0], np.cumsum(total)))
    place = np.arange(2 * n + 1)
    own = place // 2  # the group of an odd place; the group after an even (gap) place
    on_score = place % 2 == 1
    cur_w = 1.0 + np.where(on_score, weight[np.minimum(own, n - 1)], 0.0)
    cur_t = label + np.where(on_score, total[np.minimum(own, n - 1)], 0.0)
    left = own - 1
    right = np.where(on_score, own + 1, own)
    todo = place  # the places whose block may still grow
    while todo.size:
        lp, rp = np.maximum(left[todo], 0), np.minimum(right[todo], n - 1)
        a, e = starts[lp], ends[rp]
        lw, lt = cum_w[lp + 1] - cum_w[a], cum_t[lp + 1] - cum_t[a]
        rw, rt = cum_w[e + 1] - cum_w[rp], cum_t[e + 1] - cum_t[rp]
        cw, ct = cur_w[todo], cur_t[todo]
        take_left = (left[todo] >= 0) & (lt * cw > ct * lw)
        take_right = ~take_left & (right[todo] < n) & (rt * cw < ct * rw)
        cur_w[todo] = cw + np.where(take_left, lw, 0.0) + np.where(take_right, rw, 0.0)
        cur_t[todo] = ct + np.where(take_left, lt, 0.0) + np.where(take_right, rt, 0.0)
        left[todo] = np.where(take_left, a - 1, left[todo])
        right[todo] = np.where(take_right, e + 1, right[todo])
        todo = todo[take_left | take_right]
    return x, cur_t / cur_w


def place_of(score: F64, x: F64) -> I64:
    """The place of every score among the distinct calibration scores ``x``: ``2 j`` in
    the gap after ``j`` of them, ``2 j + 1`` on the score ``x[j]``."""
    return np.searchsorted(x, score, side="left") + np.searchsorted(x, score, side="right")


#: Per fitted class: ``n`` distinct scores, and ``2 n + 1`` values (checked on load).
PLACES = Array(shape=(None,), low=0.0, high=1.0, nonempty=True)


class VennAbers(Calibrator):
    """Inductive Venn-Abers calibration, one-vs-rest (see the module docstring).

    A class absent from the calibration labels keeps its column by construction:
    its ``p1`` is above 0 (the added point's outcome 1), so it is never given probability 0.

    Takes no parameters. Rows cannot be weighted: the new point weighs one row, so
    weights would mean neither repeated rows nor relative importance.

    Attributes
    ----------
    scores_ : list of ndarray
        The distinct calibration scores of every fitted class (class 1 only for two
        classes), increasing.
    p0_, p1_ : list of ndarray
        The lower and upper Venn-Abers probabilities at each of the ``2 n + 1`` places of
        :func:`place_of`.

    References
    ----------
    V. Vovk and I. Petej, "Venn-Abers predictors", UAI 2014.

    Examples
    --------
    >>> z = np.log([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.2, 0.8]])
    >>> p = VennAbers().fit(z, [0, 0, 1, 1]).predict_proba(z)
    >>> bool(p.min() > 0), p[:, 1].round(4).tolist()
    (True, [0.25, 0.3333, 0.6667, 0.75])
    """

    state_constraints: ClassVar[Constraints] = {
        "scores_": ArrayList(PLACES, "m"),
        "p0_": ArrayList(PLACES, "m"),
        "p1_": ArrayList(PLACES, "m"),
    }

    def _state_dims(self, n_classes: int) -> Dims:
        return {"k": n_classes, "m": len(one_vs_rest_classes(n_classes))}

    def _check_state(self) -> None:
        for i, x in enumerate(self.scores_):
            if np.any(np.diff(x) <= 0):
                raise InputError(f"state.scores_[{i}]", "increasing scores", "a repeat")
            for name in ("p0_", "p1_"):
                p = getattr(self, name)[i]
                if p.shape != (2 * x.shape[0] + 1,):
                    expected = f"{2 * x.shape[0] + 1} values"
                    raise InputError(f"state.{name}[{i}]", expected, f"{p.shape[0]} values")
            if self.p0_[i].max() >= 1.0 or self.p1_[i].min() <= 0.0:
                expected = "p0_ below 1 and p1_ above 0"
                raise InputError(f"state.p0_[{i}]", expected, "a 1 or a 0")
            for name in ("p0_", "p1_"):  # isotonic fits: non-decreasing in the place
                if np.any(np.diff(getattr(self, name)[i]) < 0):
                    expected = "values non-decreasing in the place"
                    raise InputError(f"state.{name}[{i}]", expected, "a decrease")
            if np.any(self.p0_[i] > self.p1_[i]):
                expected = "p0_ <= p1_ at every place (the lower probability)"
                raise InputError(f"state.p0_[{i}]", expected, "a value above p1_")

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        probs = out.probs
        self.scores_, self.p0_, self.p1_ = [], [], []
        for k in one_vs_rest_classes(out.n_classes):
            outcome = (out.labels == k).astype(np.float64)
            x, p0 = venn_abers_values(probs[:, k], outcome, 0.0)
            self.scores_.append(x)
            self.p0_.append(p0)
            self.p1_.append(venn_abers_values(probs[:, k], outcome, 1.0)[1])

    def interval(self, logits: object) -> tuple[F64, F64]:
        """The one-vs-rest ``(p0, p1)`` of every class, each of shape ``(N, K)`` (for two
        classes, class 0's pair is ``(1 - p1, 1 - p0)`` of class 1's)."""
        probs = np.exp(log_softmax64(self._check_predict_input(logits)))
        classes = one_vs_rest_classes(self.n_classes_)
        places = [place_of(probs[:, k], self.scores_[i]) for i, k in enumerate(classes)]
        p0 = np.column_stack([self.p0_[i][j] for i, j in enumerate(places)])
        p1 = np.column_stack([self.p1_[i][j] for i, j in enumerate(places)])
        if self.n_classes_ == 2:
            return np.column_stack([1 - p1, p0]), np.column_stack([1 - p0, p1])
        return p0, p1

    def _predict_proba(self, logits: F64) -> F64:
        p0, p1 = self.interval(logits)
        p = p1 / (1.0 - p0 + p1)
        if self.n_classes_ == 2:
            return np.column_stack([1.0 - p[:, 1], p[:, 1]])
        return np.asarray(p / p.sum(axis=1, keepdims=True), dtype=np.float64)

    def _module(self) -> VennAbersMaps:
        return VennAbersMaps(self.scores_, self.p0_, self.p1_, binary=self.n_classes_ == 2)
