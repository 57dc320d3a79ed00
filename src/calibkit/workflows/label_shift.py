"""Label shift judged on data: priors estimated on a target, adapted against unadapted.

:func:`label_shift` fits a :class:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter`
on labelled source rows, estimates the target priors from the target's logits and, when
the target has labels, scores the unadapted (calibrated) posteriors, the adapted ones and
the oracle's (adapted with the target's true label frequencies): the metrics of
:data:`SCORED` by the metric suite, with paired bootstrap intervals (one set of count
weights per replicate for all three, so the change adapted - unadapted has its interval
too). ``calibkit labelshift`` reports it (:mod:`calibkit.reporting.label_shift_report`).
:func:`resample_to_priors` and :func:`simulate_label_shift` make label shift from one
labelled file (the test part resampled to Dirichlet-drawn priors), as the tests and the
README's numbers do.

>>> from calibkit.core.outputs import as_outputs
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 3, 3000)
>>> z = rng.normal(size=(3000, 3)) + 2.0 * np.eye(3)[y]
>>> src = as_outputs(y[:1500], logits=z[:1500])
>>> rows = resample_to_priors(y[1500:], np.array([0.7, 0.2, 0.1]), 1500, rng) + 1500
>>> r = label_shift(src, z[rows], y[rows], estimator="em", resampling=Resampling(n_boot=0))
>>> bool(np.abs(r.priors - [0.7, 0.2, 0.1]).max() < 0.05)
True
>>> r.metrics["adapted"]["nll"] < r.metrics["unadapted"]["nll"]
True
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.priors.estimators import (
    BBSE,
    EM,
    ESTIMATOR,
    PriorEstimator,
    adapt_priors,
    check_priors,
)
from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
from calibkit.core.docs import OUTPUTS_EXAMPLE, fill_doc
from calibkit.core.errors import InputError
from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.progress import Phase
from calibkit.metrics.resampled import count_blocks
from calibkit.metrics.scores import accuracy, nll
from calibkit.metrics.suite import MetricSuite

_log = logging.getLogger(__name__)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
#: The posteriors scored when the target has labels, in table order.
VARIANTS = ("unadapted", "adapted", "oracle")
#: The metrics scored (names of the metric registry, ``calibkit.metrics.info.METRICS``).
SCORED = ("nll", "accuracy", "ece")

Interval = tuple[float, float]


@dataclass(frozen=True)
@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
class LabelShiftResult:
    """The fitted adapter, its prior estimate, and (with target labels) the scores.

    ``metrics[variant][name]`` for each of :data:`VARIANTS` and :data:`SCORED`;
    ``ci[variant][name]`` their bootstrap intervals as ``resampling`` says and
    ``change_ci[name]`` that of adapted - unadapted (empty without labels or without
    replicates: ``resampling.n_boot`` is then 0).
    ``converged`` (EM met its tolerance), ``identified`` (BBSE's system was not singular;
    else the source priors were kept) and ``caveats`` (the adapter's
    :meth:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter.caveats`: the
    warnings of the estimate, in words) say how far the priors can be trusted.

    Examples
    --------
    {outputs_example}

    >>> result = label_shift(cal, test.scores, test.labels, resampling=Resampling(n_boot=0))
    >>> list(result.metrics), type(result.adapter).__name__
    (['unadapted', 'adapted', 'oracle'], 'PriorShiftAdapter')
    """

    adapter: PriorShiftAdapter
    source_priors: F64
    priors: F64
    n_iter: int
    true_priors: F64 | None
    metrics: dict[str, dict[str, float]]
    ci: dict[str, dict[str, Interval]] = field(default_factory=dict)
    change_ci: dict[str, Interval] = field(default_factory=dict)
    given: bool = False
    n_source: int = 0
    n_target: int = 0
    binning: Binning = Binning()
    resampling: Resampling = Resampling(n_boot=0)
    converged: bool = True
    identified: bool = True
    caveats: tuple[str, ...] = ()

    @property
    def estimator(self) -> str:
        """How the target priors were had: the adapter's estimator, or ``"given"``."""
        return "given" if self.given else self.adapter.estimator.name


def _suite(probs: F64, labels: I64, binning: Binning) -> MetricSuite:
    out = as_outputs(labels, probs)
    return MetricSuite.from_outputs(out, n_bins=binning.n_bins, mode=binning.mode)


def score(probs: F64, labels: I64, binning: Binning = Binning()) -> dict[str, float]:
    """The metrics of :data:`SCORED` of ``probs`` (binned ones as ``binning`` says)."""
    return _suite(probs, labels, binning).compute(names=SCORED)


def paired_bootstrap(
    probs: dict[str, F64], labels: I64, *, binning: Binning, resampling: Resampling
) -> tuple[dict[str, dict[str, Interval]], dict[str, Interval]]:
    """Percentile intervals of :data:`SCORED` for each posteriors of ``probs`` and of the
    change ``adapted - unadapted``: each replicate's multinomial counts weigh every variant
    alike (the suite's count engine), so the change is paired."""
    suites = {v: _suite(p, labels, binning) for v, p in probs.items()}
    n_boot = resampling.n_boot
    reps: dict[str, dict[str, list[F64]]] = {v: {m: [] for m in SCORED} for v in probs}
    label = f"paired bootstrap ({n_boot:,} replicates of {labels.shape[0]:,} samples)"
    phase = Phase(_log, label, n_boot)
    for w in count_blocks(np.random.default_rng(resampling.seed), labels.shape[0], n_boot):
        for v, suite in suites.items():
            batch = suite.compute_batch(w, SCORED)
            for m in SCORED:
                reps[v][m].append(batch[m])
        phase.step(n=w.shape[0])
    alpha = (1.0 - resampling.level) / 2.0

    def interval(values: F64) -> Interval:
        lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
        return float(lo), float(hi)

    flat = {v: {m: np.concatenate(reps[v][m]) for m in SCORED} for v in probs}
    ci = {v: {m: interval(flat[v][m]) for m in SCORED} for v in probs}
    change = {m: interval(flat["adapted"][m] - flat["unadapted"][m]) for m in SCORED}
    return ci, change


@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
def label_shift(
    source: ClassifierOutputs,
    target_logits: object,
    target_labels: object = None,
    *,
    estimator: str | PriorEstimator = "em",
    calibrator: str | None = "bcts",
    priors: object = None,
    binning: Binning = Binning(),
    resampling: Resampling = Resampling(),
) -> LabelShiftResult:
    """Fit on ``source``, estimate the target priors (or take ``priors``), score with labels.

    ``estimator``: an estimator (``EM(...)``, ``BBSE(...)``), or its name for its defaults;
    ``binning``, ``resampling`` (``n_boot=0``: no intervals): as for
    :func:`calibkit.metrics.evaluate`. A target label of a class the source never shows is
    refused (no prior to reweight).

    Examples
    --------
    {outputs_example}

    >>> result = label_shift(cal, test.scores, test.labels, resampling=Resampling(n_boot=0))
    >>> result.priors.round(2).tolist(), result.true_priors.round(2).tolist()
    ([0.34, 0.28, 0.38], [0.33, 0.31, 0.36])
    """
    adapter = PriorShiftAdapter(
        estimator=ESTIMATOR.check("estimator", estimator), calibrator=calibrator
    )
    k = source.n_classes
    z = np.asarray(target_logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != k:
        raise InputError("target", f"scores of {k} classes, as the source's", f"shape {z.shape}")
    y = None if target_labels is None else np.asarray(target_labels, dtype=np.int64)
    counts = np.bincount(source.labels, minlength=k)
    if y is not None:
        outside = np.setdiff1d(np.unique(y), np.flatnonzero(counts))
        if outside.size:
            raise InputError(
                "target labels",
                "classes the source has rows of",
                f"class {int(outside[0])}, which the source never shows",
            )
    adapter.fit(source.as_logits(), source.labels, input_kind=source.kind)
    if priors is not None:
        adapter.set_target_priors(check_priors(priors, "priors", k))
    else:
        adapter.adapt(z)
    metrics: dict[str, dict[str, float]] = {}
    ci: dict[str, dict[str, Interval]] = {}
    change: dict[str, Interval] = {}
    true = None
    if y is not None:
        true = np.bincount(y, minlength=k) / float(y.shape[0])
        unadapted = adapter.source_proba(z)
        probs = {
            "unadapted": unadapted,
            "adapted": adapter.predict_proba(z),
            "oracle": adapt_priors(unadapted, adapter.source_priors_, true),
        }
        metrics = {v: score(p, y, binning) for v, p in probs.items()}
        if resampling.n_boot:
            ci, change = paired_bootstrap(probs, y, binning=binning, resampling=resampling)
    return LabelShiftResult(
        adapter,
        adapter.source_priors_,
        adapter.target_priors_,
        adapter.n_iter_,
        true,
        metrics,
        ci,
        change,
        given=priors is not None,
        n_source=source.n_samples,
        n_target=int(z.shape[0]),
        binning=binning,
        resampling=resampling if y is not None else replace(resampling, n_boot=0),
        converged=adapter.converged_,
        identified=adapter.identified_,
        caveats=tuple(adapter.caveats()),
    )


# ----- simulated label shift ----------------------------------------------------------------
def resample_to_priors(labels: I64, priors: F64, n: int, rng: np.random.Generator) -> I64:
    """Row indices of ``labels`` drawn with replacement so that ``n`` rows follow ``priors``
    (class counts multinomial; a class without rows must have prior 0).

    Examples
    --------
    >>> rows = resample_to_priors(np.array([0, 0, 1, 1]), np.array([0.0, 1.0]), 3,
    ...                           np.random.default_rng(0))
    >>> sorted(set(rows.tolist()) - {2, 3}), len(rows)  # rows of class 1 only
    ([], 3)
    """
    counts = rng.multinomial(n, priors)
    parts = []
    for c in np.flatnonzero(counts):
        pool = np.flatnonzero(labels == c)
        if pool.size == 0:
            raise InputError("priors", "0 for a class without rows", f"{priors[c]:g} for {c}")
        parts.append(rng.choice(pool, size=int(counts[c]), replace=True))
    return np.concatenate(parts).astype(np.int64)


@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
def simulate_label_shift(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    *,
    n_shifts: int = 20,
    concentration: float = 1.0,
    n_rows: int = 2000,
    calibrator: str | None = "bcts",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per shift: the test part resampled to priors drawn from a symmetric
    Dirichlet(``concentration``); EM and BBSE adapters fitted on ``cal``.

    Each row has the true priors, EM's and BBSE's estimates with their mean squared
    error against the resample's label frequencies, and the NLL and accuracy of the
    unadapted, EM-adapted, BBSE-adapted and oracle posteriors.

    Examples
    --------
    {outputs_example}

    >>> rows = simulate_label_shift(cal, test, n_shifts=2, n_rows=200)
    >>> len(rows), [key for key in rows[0] if key.startswith("em_")]
    (2, ['em_priors', 'em_mse', 'em_nll', 'em_accuracy'])
    """
    rng = np.random.default_rng(seed)
    z_cal, z_test = cal.as_logits(), test.as_logits()
    em = PriorShiftAdapter(EM(), calibrator).fit(z_cal, cal.labels)
    bbse = PriorShiftAdapter(BBSE(), calibrator).fit(z_cal, cal.labels)
    k = cal.n_classes
    rows = []
    for _ in range(n_shifts):
        pi = rng.dirichlet(np.full(k, concentration))
        idx = resample_to_priors(test.labels, pi, n_rows, rng)
        z, y = z_test[idx], test.labels[idx]
        true = np.bincount(y, minlength=k) / float(n_rows)
        base = em.source_proba(z)
        probs = {
            "unadapted": base,
            "em": em.adapt(z).predict_proba(z),
            "bbse": bbse.adapt(z).predict_proba(z),
            "oracle": adapt_priors(base, em.source_priors_, true),
        }
        rows.append(
            {
                "true_priors": true,
                "em_priors": em.target_priors_,
                "bbse_priors": bbse.target_priors_,
                "em_mse": float(np.mean((em.target_priors_ - true) ** 2)),
                "bbse_mse": float(np.mean((bbse.target_priors_ - true) ** 2)),
                **{f"{v}_nll": nll(y, p) for v, p in probs.items()},
                **{f"{v}_accuracy": accuracy(y, p) for v, p in probs.items()},
            }
        )
    return rows
