"""What makes a network miscalibrated: a study that varies one factor at a time (after Guo
et al. 2017, Figures 2 and 3).

The study's first model is the base; every other model differs from it in exactly one
setting, read from the configuration (a model parameter such as ``width`` or a training
setting such as ``weight_decay``), never from its label. :func:`factor_levels` groups the
models by that setting, the base taking part in every group with its own value. From the
study's rows (one per model, seed and calibrator; metrics as fractions) and per-epoch
histories come: mean ± std of accuracy, ECE and NLL per level with Welch tests against the
base; the rank correlation of each metric with the factor over all runs; the figure of
the three metrics against each factor; and the overfitting of the test NLL while the test
accuracy still improves, per model and epoch.

>>> hist = [{"epoch": 1, "test_nll": 0.6, "test_accuracy": 0.7, "test_ece": 0.03},
...         {"epoch": 2, "test_nll": 0.5, "test_accuracy": 0.75, "test_ece": 0.02},
...         {"epoch": 3, "test_nll": 0.55, "test_accuracy": 0.78, "test_ece": 0.05}]
>>> s = overfitting_summary(hist)
>>> s["nll_best_epoch"], s["accuracy_best_epoch"], round(s["nll_rise"], 2)
(2, 3, 0.05)
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter
from scipy import stats

from calibkit.core.errors import InputError
from calibkit.models import MODELS
from calibkit.reporting.document import Cell, Table
from calibkit.reporting.figure_style import new_figure, plain, style_axes
from calibkit.study.definition.config import StudyConfig
from calibkit.study.report.paired import welch_test

F64 = npt.NDArray[np.float64]
Row = Mapping[str, Any]
History = Sequence[Mapping[str, float]]
#: ``factor -> [(value, label), ...]`` sorted by value; the base is in every factor.
Levels = dict[str, list[tuple[float, str]]]

#: The metrics shown against each factor: (row key, name, in percent).
METRICS = (("accuracy", "Accuracy", True), ("ece", "ECE", True), ("nll", "NLL", False))
ALPHA = 0.05


def _base_value(cfg: StudyConfig, key: str) -> Any:
    """The base model's value of ``key``: its parameter, its factory's default, or its
    training setting."""
    base = cfg.models[0]
    if key in base.params:
        return base.params[key]
    accepted = inspect.signature(MODELS.get(base.name)).parameters
    if key in accepted:
        return accepted[key].default
    return getattr(cfg.model_training(base), key)


def _difference(cfg: StudyConfig, index: int) -> tuple[str, Any]:
    """The one setting in which model ``index`` differs from the base, and its value."""
    spec, base = cfg.models[index], cfg.models[0]
    where = f"models[{index}] ({spec.label})"
    if spec.name != base.name:
        raise InputError(where, f"the base's architecture {base.name!r}", repr(spec.name))
    changed = {**spec.params, **spec.training}
    diffs = {k: v for k, v in changed.items() if v != _base_value(cfg, k)}
    if len(diffs) != 1:
        raise InputError(where, "exactly one setting different from the base", repr(diffs))
    return next(iter(diffs.items()))


def factor_levels(cfg: StudyConfig) -> Levels:
    """``{factor: [(value, label), ...]}`` of a one-factor-at-a-time study, by value.

    The first model is the base; each other model must have the same architecture and
    differ from it in one model parameter or training setting (booleans count as 0/1).
    """
    if len(cfg.models) < 2:
        raise InputError("models", "a base model and at least one variant", str(len(cfg.models)))
    levels: Levels = {}
    for i in range(1, len(cfg.models)):
        key, value = _difference(cfg, i)
        levels.setdefault(key, []).append((float(value), cfg.models[i].label))
    base = cfg.models[0].label
    for key, pairs in levels.items():
        pairs.append((float(_base_value(cfg, key)), base))
        pairs.sort()
    return levels


def _values(rows: Iterable[Row], label: str, key: str, calibrator: str) -> F64:
    """Finite values of ``key`` of ``label``'s runs under ``calibrator``, by seed."""
    picked = sorted(
        (r for r in rows if r["model"] == label and r["calibrator"] == calibrator),
        key=lambda r: int(r["seed"]),
    )
    v = np.array([float(r.get(key, math.nan)) for r in picked], dtype=np.float64)
    return v[np.isfinite(v)]


def _cell(v: F64, percent: bool, digits: int | None = None) -> str:
    """``mean ± std`` (ddof 1) of ``v``, in percent with 2 decimals or plain with 4."""
    if v.size == 0:
        return "–"
    scale, places = (100.0, 2) if percent else (1.0, 4)
    digits = places if digits is None else digits
    sd = float(v.std(ddof=1)) if v.size > 1 else 0.0
    return f"{scale * v.mean():.{digits}f} ± {scale * sd:.{digits}f}"


def _p_cell(values: F64, base: F64, is_base: bool) -> Cell:
    """Welch's p against the base, with an arrow when p < ALPHA (up: larger)."""
    if is_base:
        return Cell("base")
    p = welch_test(values, base)[1]
    if not p < ALPHA:
        return Cell("–" if math.isnan(p) else f"{p:.3f}")
    return Cell(f"{p:.3f} {'↑' if values.mean() > base.mean() else '↓'}", best=True)


def factor_table(rows: Sequence[Row], levels: Levels, base: str, calibrator: str = "none") -> Table:
    """Accuracy, ECE (with its noise floor) and NLL per factor and level, mean ± std over
    the seeds, with Welch's p of ECE and NLL against the base (arrow: significant)."""
    body = []
    for factor, pairs in levels.items():
        for value, label in pairs:
            cells = [Cell(factor), Cell(f"{value:g}"), Cell(label)]
            v = {key: _values(rows, label, key, calibrator) for key in ("ece", "nll")}
            b = {key: _values(rows, base, key, calibrator) for key in ("ece", "nll")}
            cells += [Cell(_cell(_values(rows, label, "accuracy", calibrator), True))]
            cells += [Cell(_cell(v["ece"], True))]
            cells += [Cell(_cell(_values(rows, label, "ece_floor", calibrator), True))]
            cells += [_p_cell(v["ece"], b["ece"], label == base)]
            cells += [Cell(_cell(v["nll"], False)), _p_cell(v["nll"], b["nll"], label == base)]
            body.append(cells)
    head = ["Factor", "Value", "Model", "Accuracy (%)", "ECE (%)", "ECE floor (%)"]
    head += ["ECE p vs base", "NLL", "NLL p vs base"]
    n = max((_values(rows, base, "ece", calibrator).size,), default=0)
    title = f"Each factor alone ({calibrator}), mean ± std over {n} seeds; Welch's t-test"
    return Table(title, head, body, n_left=3)


def trend(
    rows: Sequence[Row], pairs: Sequence[tuple[float, str]], key: str, calibrator: str
) -> tuple[float, float]:
    """Spearman's rank correlation ``(rho, p)`` of ``key`` with the factor over every run
    of the factor's levels (NaN when undefined)."""
    x, y = [], []
    for value, label in pairs:
        v = _values(rows, label, key, calibrator)
        x += [value] * v.size
        y += v.tolist()
    if len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.spearmanr(x, y)
    return float(res.statistic), float(res.pvalue)


def trend_table(rows: Sequence[Row], levels: Levels, calibrator: str = "none") -> Table:
    """Per factor, the rank correlation of accuracy, ECE and NLL with its value."""
    body = []
    for factor, pairs in levels.items():
        cells = [Cell(factor), Cell(", ".join(f"{v:g}" for v, _ in pairs))]
        for key, _, _ in METRICS:
            rho, p = trend(rows, pairs, key, calibrator)
            text = "–" if math.isnan(rho) else f"{rho:+.2f} (p {p:.3f})"
            cells.append(Cell(text, best=p < ALPHA))
        body.append(cells)
    head = ["Factor", "Values", "Accuracy rho", "ECE rho", "NLL rho"]
    title = f"Spearman's rank correlation with the factor over all runs ({calibrator})"
    return Table(title, head, body, n_left=2)


def _factor_axis(ax: Any, values: list[float]) -> None:
    """A log axis for a factor spanning a factor of 4 or more (0 kept via symlog, ticked at
    the levels)."""
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) >= 4:
        if min(values) <= 0:
            ax.set_xscale("symlog", linthresh=min(positive))
            ticks = sorted(set(values))  # the default 0 and 1e-4 labels overlap
            ax.set_xticks(ticks, labels=[f"{v:g}" for v in ticks])
            ax.set_xticks([], minor=True)
        else:
            ax.set_xscale("log", base=2)


def factor_figure(
    rows: Sequence[Row], levels: Levels, calibrator: str = "none", *, title: str = ""
) -> Figure:
    """Accuracy, ECE and NLL (rows of panels) against each factor (columns): mean over the
    seeds with std error bars; the ECE panels show the mean ECE floor dashed."""
    factors = list(levels)
    fig = new_figure(3.0 * len(factors) + 0.6, 7.2)
    axes = np.asarray(fig.subplots(len(METRICS), len(factors), squeeze=False))
    for j, factor in enumerate(factors):
        xs = [v for v, _ in levels[factor]]
        for i, (key, name, percent) in enumerate(METRICS):
            ax = axes[i, j]
            runs = [_values(rows, label, key, calibrator) for _, label in levels[factor]]
            means = [r.mean() if r.size else math.nan for r in runs]
            sds = [r.std(ddof=1) if r.size > 1 else 0.0 for r in runs]
            ax.errorbar(xs, means, yerr=sds, marker="o", capsize=3, color="#3366a8")
            if key == "ece":
                floors = [_values(rows, lb, "ece_floor", calibrator) for _, lb in levels[factor]]
                fl = [f.mean() if f.size else math.nan for f in floors]
                ax.plot(xs, fl, linestyle="--", color="#9e9e9e", label="ECE floor")
                ax.legend(fontsize=7, frameon=False)
            _factor_axis(ax, xs)
            if percent:
                ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
            ax.set_ylabel(name if j == 0 else "")
            ax.set_xlabel(plain(factor) if i == len(METRICS) - 1 else "")
            style_axes(ax)
    fig.suptitle(plain(title or f"Each factor alone ({calibrator}): mean ± std over seeds"))
    return fig


def overfitting_summary(history: History, split: str = "test") -> dict[str, float]:
    """Where one run's ``split`` NLL is lowest against where its accuracy is highest.

    ``nll_rise`` is the last epoch's NLL minus the lowest; ``accuracy_after`` the last
    epoch's accuracy minus the accuracy at the lowest-NLL epoch (> 0: accuracy still
    improved while the NLL overfitted); ``ece_*`` the ECE at both epochs.
    """
    if not history:
        raise InputError("history", "at least one epoch", "none")
    nll = np.array([float(r[f"{split}_nll"]) for r in history])
    acc = np.array([float(r[f"{split}_accuracy"]) for r in history])
    ece = np.array([float(r[f"{split}_ece"]) for r in history])
    epochs = [int(r.get("epoch", i + 1)) for i, r in enumerate(history)]
    b = int(np.argmin(nll))
    return {
        "nll_best_epoch": epochs[b],
        "accuracy_best_epoch": epochs[int(np.argmax(acc))],
        "nll_rise": float(nll[-1] - nll[b]),
        "accuracy_after": float(acc[-1] - acc[b]),
        "ece_at_best_nll": float(ece[b]),
        "ece_last": float(ece[-1]),
    }


def overfitting_table(histories: Mapping[str, Sequence[History]], split: str = "test") -> Table:
    """Per model, mean ± std over its seeds of :func:`overfitting_summary`."""
    body = []
    for label, runs in histories.items():
        summaries = [overfitting_summary(h, split) for h in runs]

        def cell(key: str, percent: bool, s: list[dict[str, float]] = summaries) -> Cell:
            digits = 1 if key.endswith("epoch") else None
            return Cell(_cell(np.array([x[key] for x in s], dtype=np.float64), percent, digits))

        n_up = sum(x["nll_rise"] > 0 and x["accuracy_after"] > 0 for x in summaries)
        cells = [Cell(label), cell("nll_best_epoch", False), cell("accuracy_best_epoch", False)]
        cells += [cell("nll_rise", False), cell("accuracy_after", True)]
        cells += [cell("ece_at_best_nll", True), cell("ece_last", True)]
        body.append([*cells, Cell(f"{n_up}/{len(summaries)}")])
    head = ["Model", "Lowest-NLL epoch", "Best-accuracy epoch", "NLL rise after it"]
    head += ["Accuracy gain after it (%)", "ECE there (%)", "ECE last epoch (%)"]
    head += ["Runs: NLL up, accuracy up"]
    title = f"NLL overfitting while accuracy improves ({split} part, per epoch)"
    return Table(title, head, body)


def _mean_curve(runs: Sequence[History], key: str) -> tuple[F64, F64, F64]:
    """Epochs, mean and std over the runs of ``key`` (the shortest history wins)."""
    n = min(len(h) for h in runs)
    epochs = np.array([float(r.get("epoch", i + 1)) for i, r in enumerate(runs[0][:n])])
    values = np.array([[float(r[key]) for r in h[:n]] for h in runs], dtype=np.float64)
    sd = values.std(axis=0, ddof=1) if len(runs) > 1 else np.zeros(n)
    return epochs, values.mean(axis=0), sd


def nll_accuracy_epochs_figure(
    histories: Mapping[str, Sequence[History]], split: str = "test", *, title: str = ""
) -> Figure:
    """One panel per model: the ``split`` NLL (left axis) and error (right axis) against
    the epoch, mean over the seeds with a ±1 std band; the lowest mean NLL is marked."""
    if not histories or not all(histories.values()):
        raise InputError("histories", "at least one model with a history", "none")
    fig = new_figure(3.2 * len(histories) + 0.6, 3.4)
    axes = np.asarray(fig.subplots(1, len(histories), squeeze=False))[0]
    for ax, (label, runs) in zip(axes, histories.items(), strict=True):
        epochs, nll, nll_sd = _mean_curve(runs, f"{split}_nll")
        _, acc, acc_sd = _mean_curve(runs, f"{split}_accuracy")
        ax.plot(epochs, nll, color="#d1495b", label="NLL")
        ax.fill_between(epochs, nll - nll_sd, nll + nll_sd, color="#d1495b", alpha=0.15)
        b = int(np.argmin(nll))
        ax.axvline(epochs[b], color="#d1495b", linestyle=":", linewidth=1)
        right = ax.twinx()
        right.plot(epochs, 1 - acc, color="#3366a8", label="error")
        right.fill_between(epochs, 1 - acc - acc_sd, 1 - acc + acc_sd, color="#3366a8", alpha=0.15)
        right.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_title(plain(f"{label} ({len(runs)} seeds)"), fontsize=10)
        ax.set_xlabel("Epoch")
        ax.set_ylabel(f"{split} NLL", color="#d1495b")
        right.set_ylabel(f"{split} error", color="#3366a8")
        style_axes(ax)
    fig.suptitle(plain(title or "NLL and error per epoch (dotted: lowest mean NLL)"))
    return fig


def epoch_table(runs: Sequence[History], label: str, split: str = "test") -> Table:
    """Per epoch, mean ± std over the runs of ``split`` accuracy, ECE and NLL."""
    n = min(len(h) for h in runs)
    body = []
    for e in range(n):
        cells = [Cell(str(int(runs[0][e].get("epoch", e + 1))))]
        for key, _, percent in METRICS:
            v = np.array([float(h[e][f"{split}_{key}"]) for h in runs], dtype=np.float64)
            cells.append(Cell(_cell(v, percent)))
        body.append(cells)
    head = ["Epoch", "Accuracy (%)", "ECE (%)", "NLL"]
    return Table(f"{label}: {split} part per epoch, mean ± std over {len(runs)} seeds", head, body)
