"""Each calibrator against temperature scaling, seed by seed (paired t-tests).

The mean ± std tables compare calibrators across seeds, but the seeds share most of their
noise: a split that is hard for temperature scaling is hard for the others too. Pairing
each seed's value with temperature scaling's on the same run removes that shared part, so
a difference smaller than the standard deviations of the mean ± std table can still be
told from noise, and a large one within them can fail to be.

>>> rows = [
...     {"model": "m", "seed": s, "calibrator": c, "ece": e, "nll": 0.3}
...     for s, pair in enumerate([(0.02, 0.03), (0.04, 0.05), (0.03, 0.045)])
...     for c, e in zip(("temperature", "other"), pair)
... ]
>>> d = paired_differences(rows, "m", "ece")["other"]
>>> round(d.mean * 100, 2), d.n, d.verdict
(1.17, 3, 'worse')

Unpaired groups (two training losses, each with its own seeds) are compared by Welch's
test, :func:`welch_test`:

>>> welch_test([1.0, 2.0, 3.0], [1.0])
(nan, nan)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from calibkit.reporting.document import Cell, Table

#: The calibrator every other one is paired with.
REFERENCE = "temperature"
ALPHA = 0.05


@dataclass(frozen=True)
class Paired:
    """Seed-paired difference ``calibrator - reference`` of one metric."""

    mean: float
    std: float
    n: int
    p: float  # two-sided paired t-test; nan when undefined (n < 2 or no difference)

    @property
    def verdict(self) -> str:
        """'better' / 'worse' (lower is better) at ALPHA, else 'same'."""
        if not self.p < ALPHA:
            return "same"
        return "better" if self.mean < 0 else "worse"


def paired_differences(
    rows: Iterable[Mapping[str, Any]], model: str, key: str, reference: str = REFERENCE
) -> dict[str, Paired]:
    """``{calibrator: Paired}`` of ``key`` against ``reference`` over the seeds both have."""
    by: dict[str, dict[int, float]] = {}
    for r in rows:
        if r["model"] == model:
            by.setdefault(r["calibrator"], {})[int(r["seed"])] = float(r[key])
    ref = by.get(reference, {})
    out = {}
    for cal, values in by.items():
        seeds = sorted(set(values) & set(ref))
        if cal == reference or not seeds:
            continue
        a = np.array([values[s] for s in seeds])
        b = np.array([ref[s] for s in seeds])
        d = a - b
        mean = float(d.mean())
        std = float(d.std(ddof=1)) if d.size > 1 else math.nan
        p = math.nan
        if d.size > 1 and np.any(d != 0):
            # the same difference on every seed (to rounding): scipy would divide by ~0
            constant = std <= 1e-12 * abs(mean)
            p = 0.0 if constant else float(stats.ttest_rel(a, b).pvalue)
        out[cal] = Paired(mean, std, int(d.size), p)
    return out


def paired_table(rows: Sequence[Mapping[str, Any]], model: str) -> Table | None:
    """ECE and NLL of each calibrator minus temperature scaling's, seed-paired."""
    ece = paired_differences(rows, model, "ece")
    nll = paired_differences(rows, model, "nll")
    if not ece:
        return None
    body = []
    for cal, e in ece.items():
        n = nll[cal]
        body.append(
            [
                Cell(cal),
                Cell(f"{100 * e.mean:+.2f} ± {100 * e.std:.2f}"),
                Cell(_p(e.p)),
                Cell(e.verdict, best=e.verdict == "better"),
                Cell(f"{n.mean:+.4f} ± {n.std:.4f}"),
                Cell(_p(n.p)),
                Cell(n.verdict, best=n.verdict == "better"),
            ]
        )
    n_seeds = max(e.n for e in ece.values())
    title = f"{model}: each calibrator minus temperature scaling, paired by seed (n = {n_seeds})"
    head = ["Calibrator", "ECE diff (points)", "p", "ECE", "NLL diff", "p", "NLL"]
    return Table(title, head, body)


def _p(p: float) -> str:
    return "—" if math.isnan(p) else f"{p:.3f}"


def welch_test(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[float, float]:
    """Welch's two-sample t-test ``(t, p)`` (``scipy.stats.ttest_ind(equal_var=False)``).

    Non-finite values are dropped. With fewer than 2 values on either side, or with zero
    variance on both sides (the test is undefined), both ``t`` and ``p`` are NaN.
    """
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    x, y = x[np.isfinite(x)], y[np.isfinite(y)]
    if x.size < 2 or y.size < 2 or (np.ptp(x) == 0 and np.ptp(y) == 0):
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.ttest_ind(x, y, equal_var=False)
    return float(res.statistic), float(res.pvalue)
