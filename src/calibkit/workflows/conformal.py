"""Conformal prediction sets judged on held-out data: fit on one part, measure on another.

:func:`conformal_sets` fits a :class:`~calibkit.calibrators.sets.conformal.ConformalClassifier`
per score on the calibration part and measures its sets on the test part
(:func:`~calibkit.metrics.conformal.set_metrics`, intervals at ``level``). The report
(:mod:`calibkit.reporting.conformal_report`) says it in words; ``calibkit conformal`` writes it.

>>> import numpy as np
>>> from calibkit.core.outputs import as_outputs
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(600, 3)) * 3
>>> y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in z])
>>> cal, test = as_outputs(y[:300], logits=z[:300]), as_outputs(y[300:], logits=z[300:])
>>> from calibkit.core.options import Resampling
>>> rows = conformal_sets(cal, test, ["lac"], alpha=0.2, resampling=Resampling(n_boot=0))
>>> rows[0].score, 0.7 < rows[0].metrics.values["coverage"] < 0.9
('lac', True)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.calibrators.sets.conformal_scores import SCORE, ConformalScore
from calibkit.core.docs import OUTPUTS_EXAMPLE, fill_doc
from calibkit.core.errors import InputError
from calibkit.core.options import Resampling
from calibkit.core.outputs import ClassifierOutputs
from calibkit.core.progress import Phase
from calibkit.metrics.conformal import SetMetrics, set_metrics

_log = logging.getLogger(__name__)

__all__ = ["SetsResult", "SplitSets", "conformal_sets", "split_conformal_sets"]


@dataclass(frozen=True)
@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
class SetsResult:
    """One score's sets on the test part (``score``: its name): the fitted classifier and
    its metrics.

    Examples
    --------
    {outputs_example}

    >>> lac = conformal_sets(cal, test, ["lac"], alpha=0.1, resampling=Resampling(n_boot=0))[0]
    >>> lac.score, type(lac.model).__name__, round(lac.metrics.values["mean_set_size"], 2)
    ('lac', 'ConformalClassifier', 1.16)
    """

    score: str
    model: ConformalClassifier
    metrics: SetMetrics


@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
def conformal_sets(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    scores: Sequence[str | ConformalScore],
    *,
    alpha: float,
    calibrator: str | None = None,
    mondrian: bool = False,
    randomized: bool = False,
    resampling: Resampling = Resampling(),
) -> list[SetsResult]:
    """Every score in ``scores`` (a score object, or a name for its defaults) fitted on
    ``cal`` and measured on ``test``.

    Each classifier is built (parameters checked) and its calibration part checked against
    ``alpha`` before any is fitted, so a bad one refuses before work starts (no full sets:
    a part too small for ``alpha`` is refused); ``randomized`` applies to the scores that have a
    randomised variant (LAC has none). The intervals are seeded bootstrap intervals of the
    test part as ``resampling`` says (none without replicates; its seed also seeds the
    randomised scores).

    Examples
    --------
    {outputs_example}

    >>> none = Resampling(n_boot=0)
    >>> results = conformal_sets(cal, test, ["lac", "aps"], alpha=0.1, resampling=none)
    >>> [(r.score, round(r.metrics.values["coverage"], 2)) for r in results]
    [('lac', 0.91), ('aps', 0.85)]
    """
    chosen: list[ConformalScore] = [SCORE.check("scores", s) for s in scores]
    models = [
        ConformalClassifier(
            conformity_score=s,
            alpha=alpha,
            calibrator=calibrator,
            mondrian=mondrian,
            randomized=randomized and s.randomizable,
            seed=resampling.seed,
        )
        for s in chosen
    ]
    for m in models:  # every model's part checked before any fit (a calibrator's can be long)
        m.check_calibration_size(cal.labels, cal.n_classes, remedy="a larger alpha")
    z_cal, z_test = cal.as_logits(), test.as_logits()
    phase = Phase(_log, f"conformal sets of {len(models)} scores", 2 * len(models))
    for m in models:
        m.fit(z_cal, cal.labels, input_kind=cal.kind)
        phase.step(f"{m.conformity_score.name} fitted")
    out = []
    for m in models:
        sets = m.predict_set(z_test)
        metrics = set_metrics(sets, test.labels, alpha, resampling=resampling)
        out.append(SetsResult(m.conformity_score.name, m, metrics))
        phase.step(f"{m.conformity_score.name} judged")
    return out


@dataclass(frozen=True)
class SplitSets:
    """The scores' sets of one file split in two: the results, and the sizes of the parts."""

    rows: list[SetsResult]
    n_cal: int
    n_test: int
    seed: int


def split_conformal_sets(
    whole: ClassifierOutputs,
    scores: Sequence[str | ConformalScore],
    *,
    cal_size: int | float = 0.5,
    alpha: float,
    calibrator: str | None = None,
    mondrian: bool = False,
    randomized: bool = False,
    resampling: Resampling = Resampling(),
) -> SplitSets:
    """:func:`conformal_sets` on a stratified split of ``whole`` seeded by
    ``resampling.seed``: ``cal_size`` rows (a count, or a fraction) to fit on, the rest to
    measure on. A split or a calibration part that cannot be is blamed on ``cal_size``."""
    from calibkit.core.splits import split_outputs

    seed = resampling.seed
    try:
        cal, test = split_outputs(whole, cal_size, seed)
    except InputError as exc:
        raise InputError("cal_size", exc.expected, exc.got) from None
    try:
        rows = conformal_sets(
            cal,
            test,
            scores,
            alpha=alpha,
            calibrator=calibrator,
            mondrian=mondrian,
            randomized=randomized,
            resampling=resampling,
        )
    except InputError as exc:
        if exc.argument == "calibration part":
            raise InputError("cal_size", exc.expected, exc.got) from None
        raise
    return SplitSets(rows, cal.n_samples, test.n_samples, seed)
