"""Calibrators that take each sample's group: group-wise temperature scaling, multicalibration.

Both follow the calibrator contract and take the groups as a keyword argument,
``fit(logits, labels, groups=g)`` and ``predict_proba(logits, groups=g)`` (one integer or
string per row; checked by :func:`calibkit.core.groups.check_groups` at fit time: a wrong
length, a missing value or a group of one sample is an InputError naming ``groups``).

- A group unseen at fit time (or ``groups=None`` at predict time) gets the **global map**:
  the global temperature for :class:`GroupwiseTemperatureScaling`, the global temperature and
  the patches of the whole-set cells for :class:`Multicalibration`. Fitted without groups,
  each is its global map alone. Rows of unseen groups are warned of
  (:class:`~calibkit.core.errors.UnseenGroupWarning`: how many, which groups, what they get).
- ``to_module()`` takes the groups as a second input: an int64 tensor of **group codes**,
  each row's position in ``group_names_`` (the calibrator's ``group_codes(groups)`` gives
  them; ``-1``, or no second input, for the global map), since a torch module takes no
  strings.

:class:`GroupwiseTemperatureScaling` (``"temperature_groupwise"``): one temperature per group,
fitted by NLL on that group's rows; a group with fewer than ``min_group_size`` (default
:data:`MIN_GROUP_SIZE`, 50) calibration rows keeps the global temperature. With
``shrinkage = s > 0`` a group's log-temperature is pulled toward the global one,
``(n_g log T_g + s log T) / (n_g + s)`` (``s`` pseudo-rows at the global temperature).

:class:`Multicalibration` (``"multicalibration"``): HKRR-style iterative patching
(Hébert-Johnson, Kim, Reingold & Rothblum 2018) of the top-label confidence of global
temperature scaling, over the cells (set, confidence bin), the sets being the whole
calibration set and each group. The calibration set is split (seeded, stratified by
group). On the fitting part, a cell is off when its mean residual ``correct - conf``
exceeds ``alpha`` and it holds at least ``min_cell`` rows; each step takes the set whose
off cells carry the largest summed ``|sum (correct - conf)|`` and moves each off cell's
confidences by its mean residual (clipped so the predicted class stays on top); patching
stops at ``max_patches`` steps or when :data:`PATIENCE` (3) steps in a row have not lowered the
held-out part's top-label log-loss, and keeps the steps up to the best held-out loss. The
other classes' probabilities are rescaled to sum to one.

>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(600, 3))
>>> g = np.repeat(["a", "b"], 300)
>>> y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in z])
>>> z[300:] *= 3  # group b overconfident
>>> gts = GroupwiseTemperatureScaling().fit(z, y, groups=g)
>>> gts.group_names_, np.round(gts.group_temperatures_).tolist()
(['a', 'b'], [1.0, 3.0])
>>> import warnings
>>> with warnings.catch_warnings(record=True) as seen:  # "new": the global temperature
...     warnings.simplefilter("always")
...     gts.predict_proba(z[:2], groups=["a", "new"]).shape
(2, 3)
>>> print(seen[0].message)
temperature_groupwise: 1 of 2 rows (50%) belong to a group unseen at fit time, 'new': they get the global temperature
"""  # noqa: E501

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.logit.temperature import (
    T_MAX_DOC,
    T_MIN_DOC,
    TEMPERATURE,
    check_temperature_bounds,
    nll_inverse_temperature,
    warn_at_bound,
)
from calibkit.core.errors import InputError, UnseenGroupWarning
from calibkit.core.fitted_state import Array, Param
from calibkit.core.groups import check_groups, group_names
from calibkit.core.outputs import ClassifierOutputs, log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import POSITIVE, Constraint, Constraints, Integer, Real

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
#: Default fewest calibration rows for a group's own temperature.
MIN_GROUP_SIZE = 50
#: Steps tried past the best held-out loss before patching stops.
PATIENCE = 3
#: The confidence of a patched cell stays in ``[1/K, 1 - CONF_EPS]``.
CONF_EPS = 1e-6


#: Most unseen group names an :class:`UnseenGroupWarning` lists (more: counted only).
LISTED_UNSEEN = 5


def unseen_groups_message(
    method: str, n_rows: int, n_total: int, unseen: list[str], gets: str
) -> str:
    """The message of an :class:`~calibkit.core.errors.UnseenGroupWarning`: how many rows,
    which groups (the first :data:`LISTED_UNSEEN`), and what those rows get.

    >>> print(unseen_groups_message("temperature_groupwise", 200, 600, ["c"], "the global T"))
    temperature_groupwise: 200 of 600 rows (33.3%) belong to a group unseen at fit time, 'c': they get the global T
    """  # noqa: E501
    listed = ", ".join(repr(g) for g in unseen[:LISTED_UNSEEN])
    if len(unseen) > LISTED_UNSEEN:
        listed += f" and {len(unseen) - LISTED_UNSEEN} more"
    which = "a group" if len(unseen) == 1 else f"{len(unseen)} groups"
    share = f"{100 * n_rows / n_total:.3g}%" if n_total else "0%"
    return (
        f"{method}: {n_rows:,} of {n_total:,} rows ({share}) belong to {which} unseen at fit"
        f" time, {listed}: they get {gets}"
    )


class _NameList(Constraint):
    """A list of distinct strings (possibly empty)."""

    def check(self, name: str, value: object) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(name, value)
        if len(set(value)) != len(value):
            raise InputError(name, self.describe(), "a repeated name")
        return list(value)

    def describe(self) -> str:
        return "a list of distinct strings"


class _GroupCalibrator(Calibrator):
    """A calibrator whose ``fit`` and ``predict_proba`` take ``groups=`` (module doc): the
    ``groups`` kind, its per-row ``groups`` declared as :attr:`fit_metadata` and routed by
    the base; both search a global temperature in ``[t_min, t_max]``."""

    kind: ClassVar[str] = "groups"
    fit_metadata: ClassVar[tuple[str, ...]] = ("groups",)
    #: What a row of a group unseen at fit time gets (said by :class:`UnseenGroupWarning`).
    global_map: ClassVar[str] = "the global map"
    t_min: float = param(default=0.1, check=POSITIVE, doc=T_MIN_DOC)
    t_max: float = param(default=10.0, check=POSITIVE, doc=T_MAX_DOC)

    def _check_params(self) -> None:
        check_temperature_bounds(self.t_min, self.t_max)

    @staticmethod
    def _codes_at_fit(groups: object, n: int) -> tuple[list[str], I64]:
        """The group names and each row's code of the groups given to :meth:`fit`."""
        if groups is None:
            return [], np.full(n, -1, dtype=np.int64)
        grp = check_groups(groups, n)
        return grp.names, grp.codes

    def group_codes(self, groups: object, n_samples: int | None = None) -> I64:
        """Each row's position in ``group_names_`` (``-1``: a group unseen at fit time).

        The second input of :meth:`to_module`'s module.
        """
        return self._codes_and_unseen(groups, n_samples)[0]

    def _codes_and_unseen(self, groups: object, n_samples: int | None) -> tuple[I64, list[str]]:
        """:meth:`group_codes`, and the names of the groups unseen at fit time (sorted)."""
        self.check_is_fitted()
        names = group_names(groups, n_samples)
        if not names.size:
            return np.zeros(0, dtype=np.int64), []
        uniq, inverse = np.unique(names, return_inverse=True)
        self.group_names_: list[str]  # set by each group calibrator's fit
        position = {g: i for i, g in enumerate(self.group_names_)}
        lookup = np.array([position.get(str(u), -1) for u in uniq.tolist()], dtype=np.int64)
        unseen = [
            str(u) for u, code in zip(uniq.tolist(), lookup.tolist(), strict=True) if code < 0
        ]
        return lookup[inverse.reshape(-1)], unseen

    def _predict_proba(self, logits: F64, groups: object = None) -> F64:
        """``groups`` one per row (None or unseen: the global map; unseen rows warned of,
        :class:`~calibkit.core.errors.UnseenGroupWarning`)."""
        if groups is None:
            codes = np.full(logits.shape[0], -1, dtype=np.int64)
        else:
            codes, unseen = self._codes_and_unseen(groups, logits.shape[0])
            if unseen:
                n = int(np.count_nonzero(codes < 0))
                warnings.warn(
                    unseen_groups_message(self.name, n, codes.shape[0], unseen, self.global_map),
                    UnseenGroupWarning,
                    stacklevel=3,  # the caller of predict_proba
                )
        return self._predict_groups(logits, codes)

    def _predict_groups(self, logits: F64, codes: I64) -> F64:
        raise NotImplementedError

    def to_module(self) -> nn.Module:
        """The map as a torch module: ``module(logits, codes=None)``, ``codes`` the int64
        :meth:`group_codes` of the rows (None or ``-1``: the global map)."""
        from calibkit.calibrators.groups.group_modules import CheckedGroupLogits

        self.check_is_fitted()
        return CheckedGroupLogits(self._module(), self.n_classes_).eval()


class GroupwiseTemperatureScaling(_GroupCalibrator):
    """One temperature per group (the global one for small and unseen groups).

    Every temperature is searched in ``[t_min, t_max]``.

    Attributes
    ----------
    temperature_ : float
        The global temperature.
    group_names_ : list of str
        The groups seen at fit time.
    group_temperatures_ : ndarray of shape (n_groups,)
        Each group's temperature (the global one where the group was too small).
    group_sizes_ : ndarray of shape (n_groups,)
        Calibration rows per group.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(400, 3)) * 2
    >>> y = z.argmax(1)
    >>> g = np.repeat(["a", "b"], 200)
    >>> cal = GroupwiseTemperatureScaling(min_group_size=100).fit(z, y, groups=g)
    >>> cal.group_names_, cal.predict_proba(z[:2], groups=["b", "b"]).shape
    (['a', 'b'], (2, 3))
    """

    global_map: ClassVar[str] = "the global temperature"
    state_constraints: ClassVar[Constraints] = {
        "temperature_": TEMPERATURE,
        "group_names_": _NameList(),
        "group_temperatures_": Array(shape=("g",), low=Param("t_min"), high=Param("t_max")),
        "group_sizes_": Array("int64", shape=("g",), low=0),
    }
    min_group_size: int = param(
        default=MIN_GROUP_SIZE,
        check=Integer(low=2),
        doc="Fewest calibration rows for a group's own temperature.",
    )
    shrinkage: float = param(
        default=0.0,
        check=Real(low=0.0),
        doc="Pseudo-rows at the global temperature added to each group (0: none).",
    )

    def _fit(
        self, out: ClassifierOutputs, weights: F64 | None = None, groups: object = None
    ) -> None:
        names, codes = self._codes_at_fit(groups, out.n_samples)
        temperature = 1.0 / nll_inverse_temperature(out, None, self.t_min, self.t_max)
        warn_at_bound(self.name, temperature, self.t_min, self.t_max, stacklevel=3)  # global T
        log_t = math.log(temperature)
        temps, sizes = [], []
        for g in range(len(names)):
            rows = np.flatnonzero(codes == g)
            part = ClassifierOutputs(out.labels[rows], out.scores[rows], out.kind)
            own = log_t
            if rows.size >= self.min_group_size and np.unique(part.labels).size > 1:
                own = -math.log(nll_inverse_temperature(part, None, self.t_min, self.t_max))
            s = self.shrinkage
            shrunk = (rows.size * own + s * log_t) / (rows.size + s)
            temps.append(temperature if own == log_t else math.exp(shrunk))
            sizes.append(rows.size)
        self.temperature_ = temperature
        self.group_names_ = names
        self.group_temperatures_ = np.array(temps, dtype=np.float64)
        self.group_sizes_ = np.array(sizes, dtype=np.int64)

    def _check_state(self) -> None:
        if len(self.group_names_) != self.group_temperatures_.shape[0]:
            raise InputError(
                "state.group_names_", "one name per group temperature", "another count"
            )

    def _row_temperatures(self, codes: I64) -> F64:
        table = np.append(self.group_temperatures_, self.temperature_)  # code -1: the last
        return table[np.where((codes >= 0) & (codes < len(self.group_names_)), codes, -1)]

    def _predict_groups(self, logits: F64, codes: I64) -> F64:
        return np.exp(log_softmax64(logits / self._row_temperatures(codes)[:, None]))

    def _module(self) -> nn.Module:
        from calibkit.calibrators.groups.group_modules import GroupTemperature

        return GroupTemperature(self.group_temperatures_, self.temperature_)


def top_label_patch(probs: F64, conf: F64) -> F64:
    """``probs`` with each row's top probability set to ``conf`` and the others rescaled to
    sum to ``1 - conf`` (shared equally where they were all 0)."""
    k = probs.shape[1]
    top = probs.argmax(axis=1)
    old = probs[np.arange(probs.shape[0]), top]
    rest = 1.0 - old
    safe = np.where(rest > 0, rest, 1.0)
    scaled = np.where(rest[:, None] > 0, probs * ((1.0 - conf) / safe)[:, None], 0.0)
    even = np.where(rest[:, None] > 0, scaled, ((1.0 - conf) / (k - 1))[:, None])
    even[np.arange(probs.shape[0]), top] = conf
    out: F64 = even / even.sum(axis=1, keepdims=True)
    return out


def _bin(conf: F64, n_bins: int) -> I64:
    """Equal-width bin ``min(floor(conf * n_bins), n_bins - 1)`` (also the module's rule)."""
    return np.minimum(np.floor(conf * n_bins), n_bins - 1).astype(np.int64)


def _lower(probs: F64) -> F64:
    """The smallest top confidence that keeps each row's predicted class on top after the
    others are rescaled: ``p2 / (1 - c + p2)`` (``p2`` the runner-up), at least ``1/K``."""
    part = np.partition(probs, -2, axis=1)
    c, p2 = part[:, -1], part[:, -2]
    denom = 1.0 - c + p2
    low = np.where(denom > 0, p2 / np.where(denom > 0, denom, 1.0), 0.0)
    out: F64 = np.maximum(low, 1.0 / probs.shape[1])
    return out


def _apply(conf: F64, low: F64, codes: I64, sets: I64, deltas: F64, n_bins: int) -> F64:
    """Replay the patches on ``conf``: step ``t`` moves the rows of set ``sets[t]`` (``-1``:
    every row) by ``deltas[t, bin]``, each row's bin taken before the step."""
    conf = conf.copy()
    for s, d in zip(sets.tolist(), deltas, strict=True):
        hit = (codes == s) if s >= 0 else np.ones(conf.shape[0], dtype=bool)
        moved = np.clip(conf + d[_bin(conf, n_bins)], low, 1.0 - CONF_EPS)
        conf = np.where(hit, moved, conf)
    return conf


def _log_loss(conf: F64, correct: F64) -> float:
    c = np.clip(conf, CONF_EPS, 1.0 - CONF_EPS)
    return float(-np.mean(correct * np.log(c) + (1.0 - correct) * np.log1p(-c)))


class Multicalibration(_GroupCalibrator):
    """HKRR-style patching of the top-label confidence over (set, bin) cells (module doc).

    Attributes
    ----------
    temperature_ : float
        The global temperature the patches start from.
    group_names_ : list of str
        The groups seen at fit time.
    patch_sets_ : ndarray of shape (n_patches,)
        Each patch's set (``-1``: every row; else a group's code).
    patch_deltas_ : ndarray of shape (n_patches * n_bins,)
        Row-major ``(n_patches, n_bins)``: each patch's shift of the confidences in each
        bin (0: bin left alone).
    holdout_losses_ : ndarray of shape (n_patches + 1,)
        The held-out top-label log-loss before the first patch and after each kept one.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 3)) * 2
    >>> g = np.repeat([0, 1], 1000)
    >>> y = np.where(g == 1, (z * 0.3).argmax(1), z.argmax(1))
    >>> mc = Multicalibration().fit(z, y, groups=g)
    >>> bool(np.allclose(mc.predict_proba(z, groups=g).sum(1), 1.0))
    True
    """

    global_map: ClassVar[str] = "the global temperature and the whole-set patches"
    state_constraints: ClassVar[Constraints] = {
        "temperature_": TEMPERATURE,
        "group_names_": _NameList(),
        "patch_sets_": Array("int64", shape=("t",), low=-1),
        "patch_deltas_": Array(shape=(None,), low=-1.0, high=1.0),
        "holdout_losses_": Array(shape=("t+1",), low=0.0),
    }
    n_bins: int = param(
        default=10, check=Integer(1, 1000), doc="Equal-width confidence bins per set."
    )
    alpha: float = param(
        default=0.01,
        check=Real(low=0.0, high=1.0),
        doc="A cell is patched only if its mean residual exceeds this.",
    )
    min_cell: int = param(
        default=20, check=Integer(low=1), doc="Fewest fitting-part rows of a patched cell."
    )
    max_patches: int = param(default=50, check=Integer(0, 10_000), doc="Most patches.")
    holdout: float = param(
        default=0.3,
        check=Real(low=0.0, high=1.0, closed="neither"),
        doc="Fraction of the calibration set held out for the stop rule.",
    )
    seed: int = param(default=0, check=Integer(low=0), doc="Seed of the split.")

    def _split(self, codes: I64) -> tuple[I64, I64]:
        """Seeded fitting / held-out rows, each set divided in proportion."""
        rng = np.random.default_rng(self.seed)
        held = np.zeros(codes.shape[0], dtype=bool)
        for g in np.unique(codes).tolist():  # one loop per group
            rows = rng.permutation(np.flatnonzero(codes == g))
            held[rows[: round(self.holdout * rows.size)]] = True
        return np.flatnonzero(~held), np.flatnonzero(held)

    def _fit(
        self, out: ClassifierOutputs, weights: F64 | None = None, groups: object = None
    ) -> None:
        names, codes = self._codes_at_fit(groups, out.n_samples)
        b = nll_inverse_temperature(out, None, self.t_min, self.t_max)
        warn_at_bound(self.name, 1.0 / b, self.t_min, self.t_max, stacklevel=3)
        probs = np.exp(log_softmax64(out.as_logits() * b))
        conf, low = probs.max(axis=1), _lower(probs)
        correct = (probs.argmax(axis=1) == out.labels).astype(np.float64)
        fit_rows, held_rows = self._split(codes)
        n_sets, nb = len(names) + 1, self.n_bins
        cf, lf, kf, yf = conf[fit_rows], low[fit_rows], codes[fit_rows], correct[fit_rows]
        ch, lh, kh, yh = conf[held_rows], low[held_rows], codes[held_rows], correct[held_rows]
        sets: list[int] = []
        deltas: list[F64] = []
        losses = [_log_loss(ch, yh)] if held_rows.size else [0.0]
        best = 0
        for _ in range(self.max_patches):
            bins = _bin(cf, nb)
            resid = yf - cf
            # cell sums: the whole set (row 0) and each row's group (row code + 1)
            cells = np.concatenate([bins, (kf + 1) * nb + bins])
            valid = np.concatenate([np.ones_like(bins, bool), kf >= 0])
            total = np.bincount(cells[valid], np.tile(resid, 2)[valid], n_sets * nb)
            count = np.bincount(cells[valid], minlength=n_sets * nb)
            mean = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
            ok = (count >= self.min_cell) & (np.abs(mean) > self.alpha)
            gain = np.where(ok, np.abs(total), 0.0).reshape(n_sets, nb).sum(axis=1)
            chosen = int(np.argmax(gain))
            if gain[chosen] <= 0:
                break
            step = np.where(ok, np.clip(mean, -1.0, 1.0), 0.0).reshape(n_sets, nb)[chosen]
            sets.append(chosen - 1)
            deltas.append(step)
            one = (np.array([chosen - 1]), step[None, :])
            cf = _apply(cf, lf, kf, *one, nb)
            if held_rows.size:
                ch = _apply(ch, lh, kh, *one, nb)
                losses.append(_log_loss(ch, yh))
            if losses[-1] < losses[best]:
                best = len(sets)
            elif held_rows.size and len(sets) - best >= PATIENCE:
                break  # the held-out loss stopped falling
        self.temperature_ = float(1.0 / b)
        self.group_names_ = names
        self.patch_sets_ = np.array(sets[:best], dtype=np.int64)
        self.patch_deltas_ = np.array(deltas[:best], dtype=np.float64).reshape(-1)
        self.holdout_losses_ = np.array(losses[: best + 1], dtype=np.float64)

    def _check_state(self) -> None:
        if self.patch_sets_.size and self.patch_sets_.max() >= len(self.group_names_):
            raise InputError(
                "state.patch_sets_", "codes below the number of groups", "a larger one"
            )
        if self.patch_deltas_.shape[0] != self.patch_sets_.shape[0] * self.n_bins:
            expected = f"n_bins={self.n_bins} shifts per patch"
            raise InputError("state.patch_deltas_", expected, f"{self.patch_deltas_.shape[0]}")

    def _predict_groups(self, logits: F64, codes: I64) -> F64:
        probs = np.exp(log_softmax64(logits / self.temperature_))
        codes = np.where(codes < len(self.group_names_), codes, -1)
        conf = _apply(
            probs.max(axis=1),
            _lower(probs),
            codes,
            self.patch_sets_,
            self.patch_deltas_.reshape(-1, self.n_bins),
            self.n_bins,
        )
        return top_label_patch(probs, conf)

    def _module(self) -> nn.Module:
        from calibkit.calibrators.groups.group_modules import PatchedTemperature

        return PatchedTemperature(
            self.temperature_,
            len(self.group_names_),
            self.patch_sets_,
            self.patch_deltas_.reshape(-1, self.n_bins),
            self.n_bins,
        )


__all__ = ["GroupwiseTemperatureScaling", "Multicalibration", "top_label_patch"]
