"""Which calibrator to use, chosen on the calibration part alone: :class:`Recommendation`
and :func:`recommendation` (``auto``'s rule over the compared methods), the last step of
:func:`calibkit.workflows.compare.compare`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from calibkit.calibrators import Calibrator
from calibkit.core.outputs import ClassifierOutputs

_log = logging.getLogger("calibkit.workflows.compare")  # compare's log: one stream


@dataclass(frozen=True)
class Recommendation:
    """The calibrator to use, chosen on the calibration part alone by ``auto``'s rule
    (:class:`~calibkit.calibrators.AutoCalibrator`: cross-fitted NLL, temperature scaling
    unless a richer method beats it by more than
    :data:`~calibkit.calibrators.logit.auto.MARGIN_SE` standard errors of the paired
    difference), never by the test part that the rows are judged on.

    Attributes
    ----------
    method, reason
        The method and why, in words. ``summary`` is the rule's table: each candidate's
        mean cross-fitted NLL and its paired difference from temperature scaling.
    scores, paired
        The same as numbers: each candidate's mean cross-fitted NLL, and its mean paired
        difference from temperature scaling with its standard error (empty when nothing
        was cross-fitted).
    not_cross_fitted
        The compared default methods left out of the cross-fitting, each with the one-line
        reason its declared scope gives
        (:meth:`~calibkit.calibrators.scope.Scope.declines_cross_fit`: at 1,000 classes, the
        methods whose five fold fits cost most and never gained).

    Examples
    --------
    >>> rec = Recommendation("temperature", "no candidate beat temperature", "")
    >>> rec.method
    'temperature'
    """

    method: str
    reason: str
    summary: str
    scores: dict[str, float] = dataclasses.field(default_factory=dict)
    paired: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    not_cross_fitted: dict[str, str] = dataclasses.field(default_factory=dict)


def recommendation(
    cal: ClassifierOutputs,
    names: Sequence[str],
    seed: int = 0,
    not_cross_fitted: Mapping[str, str] | None = None,
    fitted: Mapping[str, Calibrator] | None = None,
) -> Recommendation:
    """The method to use among ``names`` and temperature scaling, by ``auto``'s rule on
    ``cal`` alone (see :class:`Recommendation`).

    Parameters
    ----------
    cal : ClassifierOutputs
        The calibration part (the test part plays no role).
    names : sequence of str
        The candidates (``"auto"`` is skipped; temperature scaling is always one).
    seed : int
        Seed of the folds.
    not_cross_fitted : mapping of str to str, optional
        Methods of ``names`` left out of the cross-fitting, each with why (said in the
        recommendation's summary).
    fitted : mapping, optional
        Calibrators already fitted on ``cal`` (unweighted), by name: ``auto`` takes a
        penalty-tuning one as its tuned fit when its parameters are those ``auto`` tunes
        with (:meth:`~calibkit.calibrators.logit.auto.AutoCalibrator.fit_outputs`).

    Returns
    -------
    Recommendation
        The method, why, and the rule's table.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.core.outputs import as_outputs
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(400, 3)) * 3
    >>> y = np.array([rng.choice(3, p=np.exp(r / 3) / np.exp(r / 3).sum()) for r in z])
    >>> recommendation(as_outputs(y, logits=z), ["vector", "histogram"]).method
    'temperature'
    """
    from calibkit.calibrators.logit.auto import AutoCalibrator

    skip = dict(not_cross_fitted or {})
    candidates = [n for n in names if n != "auto" and n not in skip]
    for name, why in skip.items():
        _log.info(f"not a candidate: {name} ({why})")
    if "temperature" not in candidates:
        candidates.insert(0, "temperature")
    if candidates == ["temperature"]:  # nothing to choose between: no cross-validation
        return Recommendation("temperature", "the only method compared", "")
    _log.info(
        f"choosing among {len(candidates)} methods by cross-fitted NLL on the calibration part"
    )
    auto = AutoCalibrator(methods=candidates, seed=seed).fit_outputs(cal, fitted=fitted)
    paired = {k: (float(v[0]), float(v[1])) for k, v in auto.paired_.items()}
    scores = {k: float(v) for k, v in auto.cv_scores_.items()}
    reason = auto.reason_.replace("\n", " ")
    summary = auto.summary() + "".join(f"\n  not cross-fitted: {n} ({w})" for n, w in skip.items())
    return Recommendation(auto.chosen_, reason, summary, scores, paired, skip)
