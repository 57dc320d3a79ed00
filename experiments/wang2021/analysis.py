"""Training losses against post-hoc calibration (after Wang, Feng & Zhang, NeurIPS 2021).

Study rows (one per model label, seed and calibrator; metrics as fractions) are grouped by
the study's mapping ``label -> (method, coefficient)``, e.g. ``{"ce": ("cross_entropy",
0.0), "ls_0.01": ("label_smoothing", 0.01)}`` (labels are never parsed); cross-entropy is
the reference. Tables, the finding and the calibration-size curve of Wang et al.

:func:`calibration_size_curve` refits calibrators on parts of a run's calibration logits:
it is this reproduction's own analysis, not something the study's units computed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.calibrators import create_calibrator
from calibkit.core.errors import InputError
from calibkit.core.splits import stratified_split
from calibkit.metrics import ece
from calibkit.reporting.document import Cell, Table
from calibkit.study.report.paired import welch_test

F64 = npt.NDArray[np.float64]
Row = Mapping[str, Any]
Methods = Mapping[str, tuple[str, float]]

CE = "cross_entropy"
#: Order of the methods in tables and figures (others follow in first-seen order).
METHOD_ORDER = ("label_smoothing", "l1_norm", "focal", "inverse_focal")
_SHOWN = ("CE", "Label smoothing", "L1 logit norm", "Focal", "Inverse focal")
METHOD_NAMES = dict(zip((CE, *METHOD_ORDER), _SHOWN, strict=True))
CALIBRATOR_NAMES = {"none": "no post-hoc", "temperature_ece": "TS", "histogram": "HB"}
CALIBRATOR_NAMES["temperature"] = "TS (NLL)"
UP, DOWN = "↑", "↓"


def model_name(method: str, coefficient: float) -> str:
    """``"CE"``, or the method's name with its coefficient (``"Focal 3"``)."""
    return "CE" if method == CE else f"{METHOD_NAMES.get(method, method)} {coefficient:g}"


def _after(cal: str) -> str:
    return "without post-hoc" if cal == "none" else f"after {CALIBRATOR_NAMES.get(cal, cal)}"


class RowIndex:
    """Rows by (model, calibrator), and the study's labels grouped by method."""

    def __init__(self, rows: Iterable[Row], methods: Methods) -> None:
        self.rows: dict[tuple[str, str], list[Row]] = {}
        for row in rows:
            self.rows.setdefault((str(row["model"]), str(row["calibrator"])), []).append(row)
        self.methods = methods
        by_method: dict[str, list[tuple[float, str]]] = {}
        for label, (method, coef) in methods.items():
            by_method.setdefault(method, []).append((float(coef), label))
        order = [m for m in (CE, *METHOD_ORDER) if m in by_method]
        order += [m for m in by_method if m not in order]
        self.by_method = {m: sorted(by_method[m]) for m in order}
        self.ce: str | None = next((lb for _, lb in self.by_method.get(CE, [])), None)

    def values(self, label: str, calibrator: str, key: str = "ece") -> F64:
        """Finite values of ``key`` over the seeds, ordered by seed."""
        rows = sorted(self.rows.get((label, calibrator), []), key=lambda r: r.get("seed", 0))
        v = np.array([float(r.get(key, math.nan)) for r in rows], dtype=np.float64)
        return v[np.isfinite(v)]

    def labels(self) -> list[str]:
        """Every label with rows, CE first, then by method and coefficient."""
        have = {key[0] for key in self.rows}
        return [lb for pairs in self.by_method.values() for _, lb in pairs if lb in have]

    def require_ce(self) -> str:
        if self.ce is None:
            raise InputError("methods", f"a label whose method is {CE!r} (the reference)", "none")
        return self.ce

    def head(self, label: str) -> list[Cell]:
        method, coef = self.methods[label]
        return [Cell(METHOD_NAMES.get(method, method)), Cell("–" if method == CE else f"{coef:g}")]

    def name(self, label: str) -> str:
        return model_name(*self.methods[label])

    def n_seeds(self) -> int:
        return max((len(v) for v in self.rows.values()), default=0)


def _mean_std(v: F64) -> tuple[float, float]:
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def _pct(v: F64, scale: float = 100.0, digits: int = 2) -> str:
    m, sd = _mean_std(v)
    return f"{scale * m:.{digits}f} ± {scale * sd:.{digits}f}" if math.isfinite(m) else "–"


def _marker(values: F64, reference: F64, alpha: float) -> str:
    if not welch_test(values, reference)[1] < alpha:
        return ""  # not significant, or the test is undefined
    return UP if values.mean() > reference.mean() else DOWN


def table1(rows: Iterable[Row], methods: Methods) -> Table:
    """Per method, the coefficient with the lowest mean ECE without post-hoc calibration.

    CE first; ties go to the smaller coefficient. Bold: lowest ECE, highest accuracy.
    """
    index = RowIndex(rows, methods)
    chosen = []
    for pairs in index.by_method.values():
        scored = [(_mean_std(index.values(lb, "none"))[0], lb) for _, lb in pairs]
        scored = [s for s in scored if math.isfinite(s[0])]
        if scored:
            chosen.append(min(scored, key=lambda s: s[0])[1])  # first minimum: smaller coef
    if not chosen:
        raise InputError("rows", "rows of calibrator 'none' for the labels of methods", "none")
    ece_v = [index.values(lb, "none") for lb in chosen]
    acc_v = [index.values(lb, "none", "accuracy") for lb in chosen]
    best_ece = min(float(v.mean()) for v in ece_v)
    best_acc = max((float(v.mean()) for v in acc_v if v.size), default=math.nan)
    body = [
        [
            *index.head(lb),
            Cell(_pct(e), float(e.mean()) == best_ece),
            Cell(_pct(a), a.size > 0 and float(a.mean()) == best_acc),
        ]
        for lb, e, a in zip(chosen, ece_v, acc_v, strict=True)
    ]
    title = (
        "Best coefficient of each training loss by ECE without post-hoc calibration "
        f"(mean ± std over {index.n_seeds()} seeds)"
    )
    return Table(title, ["Method", "Best coefficient", "ECE (%)", "Accuracy (%)"], body, n_left=2)


def table2(
    rows: Iterable[Row],
    methods: Methods,
    calibrators: Sequence[str] = ("temperature_ece", "histogram"),
    alpha: float = 0.05,
) -> Table:
    """ECE of every (method, coefficient) without post-hoc calibration and after each one.

    Mean ± std over the seeds, in percent; a calibrator fitting a temperature gets a column
    of its mean T. A non-CE cell is marked ``↑`` (``↓``) when its ECE is significantly
    higher (lower) than CE's in the column by Welch's t-test at level ``alpha``. Bold: the
    lowest mean ECE of each column.
    """
    index = RowIndex(rows, methods)
    ce = index.require_ce()
    labels = index.labels()
    header = ["Method", "Coefficient"]
    columns: list[list[Cell]] = []
    for cal in ("none", *calibrators):
        header.append(f"ECE {_after(cal)} (%)")
        ref = index.values(ce, cal)
        values = [index.values(lb, cal) for lb in labels]
        means = [_mean_std(v)[0] for v in values]
        best = min((m for m in means if math.isfinite(m)), default=math.nan)
        marks = ["" if lb == ce else _marker(values[i], ref, alpha) for i, lb in enumerate(labels)]
        cells = zip(values, means, marks, strict=True)
        columns.append([Cell(f"{_pct(v)} {mk}".strip(), m == best) for v, m, mk in cells])
        temps = [index.values(lb, cal, "temperature") for lb in labels]
        if cal != "none" and any(t.size for t in temps):
            header.append(f"T ({CALIBRATOR_NAMES.get(cal, cal)})")
            columns.append([Cell(_pct(t, 1.0, 3)) for t in temps])
    body = [index.head(lb) + [col[i] for col in columns] for i, lb in enumerate(labels)]
    title = (
        f"ECE by training loss before and after post-hoc calibration (mean ± std over "
        f"{index.n_seeds()} seeds); {UP}/{DOWN}: significantly higher/lower than CE in the "
        f"same column (Welch two-sample t-test over the seeds, p < {alpha:g}); bold: lowest mean"
    )
    return Table(title, header, body, n_left=2)


def finding(
    rows: Iterable[Row],
    methods: Methods,
    calibrators: Sequence[str] = ("temperature_ece", "histogram"),
    alpha: float = 0.05,
) -> str:
    """A short paragraph stating the numbers of :func:`table2` (ECE in percent)."""
    index = RowIndex(rows, methods)
    ce = index.require_ce()
    labels = index.labels()
    parts = []
    for cal in ("none", *calibrators):
        values = {lb: index.values(lb, cal) for lb in labels if index.values(lb, cal).size}
        if ce not in values:
            continue
        ranked = sorted(values, key=lambda lb: float(values[lb].mean()))
        rank = {lb: i + 1 for i, lb in enumerate(ranked)}
        marks = {lb: _marker(v, values[ce], alpha) for lb, v in values.items() if lb != ce}
        text = f"{_after(cal)[0].upper()}{_after(cal)[1:]}, "
        if ranked[0] == ce:
            text += f"CE has the lowest mean ECE ({_pct(values[ce])}%)"
        else:
            low, p = ranked[0], welch_test(values[ranked[0]], values[ce])[1]
            text += (
                f"the lowest mean ECE is {index.name(low)} ({_pct(values[low])}%); CE has "
                f"{_pct(values[ce])}% (rank {rank[ce]} of {len(ranked)}; the difference is "
                f"{'' if p < alpha else 'not '}significant, Welch p = {p:.3g})"
            )
        lower = [index.name(lb) for lb, m in marks.items() if m == DOWN]
        n_up = sum(m == UP for m in marks.values())
        text += f"; {len(lower)} of {len(marks)} other models are significantly lower than CE"
        text += (f" ({', '.join(lower)})" if lower else "") + f" and {n_up} significantly higher."
        inverse = [lb for _, lb in index.by_method.get("inverse_focal", []) if lb in values]
        text += "".join(
            f" {index.name(lb)}: {100 * values[lb].mean():.2f}% (rank {rank[lb]} of {len(ranked)})."
            for lb in inverse
        )
        parts.append(text)
    if not parts:
        raise InputError("rows", "ECE rows for the CE label", "none")
    return (
        " ".join(parts)
        + f" ECE is mean ± std over {index.n_seeds()} seeds; significance: Welch two-sample "
        f"t-test against CE, p < {alpha:g}."
    )


#: Columns of :func:`decomposition_table`: (key, header), the parts of
#: :func:`calibkit.metrics.score_decomposition` on the test part without post-hoc calibration.
DECOMPOSITION_COLUMNS = (
    ("nll", "NLL"),
    ("nll_calibration", "NLL calibration"),
    ("nll_refinement", "NLL refinement"),
    ("brier_calibration", "Brier calibration"),
    ("brier_refinement", "Brier refinement"),
)


def decomposition_table(
    parts: Mapping[str, Mapping[str, Sequence[float]]], methods: Methods
) -> Table:
    """NLL and Brier split into calibration (what a temperature removes) and refinement.

    ``parts`` maps a model label to ``{column key: one value per seed}``; mean ± std over
    the seeds, four decimals. Bold: the lowest mean of each column.
    """
    index = RowIndex([{"model": lb, "calibrator": "none"} for lb in parts], methods)
    labels = index.labels()
    columns = []
    for key, _ in DECOMPOSITION_COLUMNS:
        values = [np.asarray(parts[lb][key], dtype=np.float64) for lb in labels]
        means = [_mean_std(v)[0] for v in values]
        best = min((m for m in means if math.isfinite(m)), default=math.nan)
        columns.append(
            [Cell(_pct(v, 1.0, 4), m == best) for v, m in zip(values, means, strict=True)]
        )
    body = [index.head(lb) + [col[i] for col in columns] for i, lb in enumerate(labels)]
    title = (
        f"How calibratable each model is: NLL and Brier on the test part without post-hoc "
        f"calibration = calibration (removed by the best temperature, fitted in-sample) + "
        f"refinement (mean ± std over {index.n_seeds()} seeds)"
    )
    header = ["Method", "Coefficient", *(h for _, h in DECOMPOSITION_COLUMNS)]
    return Table(title, header, body, n_left=2)


def calibration_size_curve(
    cal_logits: npt.ArrayLike,
    cal_labels: npt.ArrayLike,
    test_logits: npt.ArrayLike,
    test_labels: npt.ArrayLike,
    sizes: Sequence[int],
    calibrators: Mapping[str, Mapping[str, Any]],
    *,
    seed: int,
    n_repeats: int = 5,
    n_bins: int = 15,
) -> dict[str, F64]:
    """Test ECE of each calibrator fitted on ``n`` calibration samples, for each ``n``.

    Returns ``{name: array (len(sizes), 2)}``: mean and standard deviation (ddof=1; 0 for
    one repeat) of the test ECE over ``n_repeats`` stratified draws seeded by ``(seed, n)``
    (a size's numbers do not depend on the other sizes); at the full size every repeat
    fits on the whole calibration set. ``calibrators`` maps a registered name to its
    parameters; ``"none"`` gives the uncalibrated test ECE.
    """
    z = np.asarray(cal_logits, dtype=np.float64)
    y = np.asarray(cal_labels, dtype=np.int64).reshape(-1)
    test_z = np.asarray(test_logits, dtype=np.float64)
    test_y = np.asarray(test_labels, dtype=np.int64).reshape(-1)
    if z.ndim != 2 or z.shape[0] != y.shape[0]:
        raise InputError("cal_logits", f"a (n, K) array for {y.shape[0]} labels", str(z.shape))
    ok = [isinstance(n, int | np.integer) and 2 <= n <= y.shape[0] for n in sizes]
    if not sizes or not all(ok):
        raise InputError("sizes", f"sample counts in 2..{y.shape[0]}", repr(list(sizes)))
    if n_repeats < 1:
        raise InputError("n_repeats", "at least 1", repr(n_repeats))
    out = {name: np.zeros((len(sizes), 2)) for name in calibrators}

    def fitted_ece(name: str, params: Mapping[str, Any], d: npt.NDArray[np.int64]) -> float:
        if name == "none":
            return ece(test_y, logits=test_z, n_bins=n_bins)
        cal = create_calibrator(name, **params).fit(z[d], y[d])
        return ece(test_y, cal.predict_proba(test_z), n_bins=n_bins)

    for i, n in enumerate(sizes):
        states = np.random.SeedSequence([seed, int(n)]).generate_state(n_repeats)
        draws = [
            np.arange(n)
            if n == y.shape[0]
            else stratified_split(y, int(n), int(s), every_class_in_both=False)[1]
            for s in states
        ]
        for name, params in calibrators.items():
            eces = np.array([fitted_ece(name, params, d) for d in draws])
            out[name][i] = eces.mean(), eces.std(ddof=1) if eces.size > 1 else 0.0
    return out
