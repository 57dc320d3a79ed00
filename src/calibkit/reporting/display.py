"""Reliability diagrams of several models or methods at once, in the style of scikit-learn's
``CalibrationDisplay``: build with :meth:`ReliabilityDisplay.from_predictions` or
:meth:`ReliabilityDisplay.from_estimator`, draw with :meth:`ReliabilityDisplay.plot`.

Each panel is one reliability diagram: every model gets a bar per non-empty bin, as tall as
the bin's accuracy (the models' bars side by side within the bin), and the diagonal marks
perfect calibration. One panel bins the top-label confidence (or, with
``mode="positive_class"``, a binary problem's ``P(y = 1)``) through
:func:`calibkit.metrics.reliability_stats`; ``per_class=True`` draws one panel per class,
binning ``P(y = k)`` against ``y == k`` (one-vs-rest) through
:func:`calibkit.core.binning.bin_stats`. The bars are those numbers, never a re-binning, so
they match the tables.

>>> import numpy as np
>>> y = np.array([0, 1, 1, 0])
>>> p = np.array([[0.9, 0.1], [0.3, 0.7], [0.2, 0.8], [0.4, 0.6]])
>>> display = ReliabilityDisplay.from_predictions(y, {"model": p}, n_bins=5)
>>> bar_heights(display.axes_[0], "model").tolist()
[0.5, 1.0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from calibkit.core.binning import BinStats, Scheme, bin_stats
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics import reliability_stats
from calibkit.metrics.reliability_bands import CorpReliability, IntervalMethod, corp_reliability
from calibkit.reporting.figure_style import figure_legend, new_figure, plain, spaced, style_axes
from calibkit.reporting.figures import (
    bar_heights,
    bin_bars,
    count_strip,
    draw_bin_counts,
    draw_bin_intervals,
    draw_corp,
)

__all__ = ["ReliabilityDisplay", "bar_heights"]

Kind = Literal["probs", "logits"]
Mode = Literal["top_label", "positive_class"]
#: Panels per row of a per-class figure.
COLUMNS = 4


class ReliabilityDisplay:
    """Reliability diagrams of several models: ``panels`` maps a panel title to the
    :class:`~calibkit.core.binning.BinStats` of each model (name -> stats).

    ``interval``: each bar's 95% interval, ``"wilson"`` (default) or ``"clopper-pearson"``
    (:func:`~calibkit.metrics.reliability_bands.bin_intervals`), or ``None``; ``counts``:
    each bin's sample count, in a strip under its bar (in the model's colour); ``corp``: per
    panel, the CORP curve and consistency band of each model
    (:func:`~calibkit.metrics.reliability_bands.corp_reliability`). An empty bin gets no
    bar, no interval and no count. The legend lists each thing once: under the figure when
    the display draws its own, in each given axes otherwise. After :meth:`plot`:
    ``figure_`` and ``axes_`` (one axes per panel).

    Examples
    --------
    Two models in one panel:

    >>> before = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
    >>> after = [[0.7, 0.3], [0.3, 0.7], [0.5, 0.5], [0.4, 0.6]]
    >>> models = {"before": before, "after": after}
    >>> shown = ReliabilityDisplay.from_predictions([0, 1, 1, 1], models)
    >>> len(shown.axes_), list(shown.panels[""])
    (1, ['before', 'after'])
    """

    def __init__(
        self,
        panels: Mapping[str, Mapping[str, BinStats]],
        *,
        interval: IntervalMethod | None = "wilson",
        counts: bool = True,
        corp: Mapping[str, Mapping[str, CorpReliability]] | None = None,
    ) -> None:
        if not panels or not all(panels.values()):
            raise InputError("panels", "at least one panel with at least one model", "none")
        self.panels = {title: dict(models) for title, models in panels.items()}
        self.interval, self.counts = interval, counts
        self.corp = {title: dict(models) for title, models in (corp or {}).items()}
        self.figure_: Figure | None = None
        self.axes_: list[Axes] = []

    @classmethod
    def from_predictions(
        cls,
        labels: object,
        predictions: Mapping[str, object] | object,
        *,
        kind: Kind = "probs",
        n_bins: int = 10,
        scheme: Scheme = "equal_width",
        mode: Mode = "top_label",
        per_class: bool = False,
        class_names: Sequence[object] | None = None,
        ax: Axes | Sequence[Axes] | None = None,
        interval: IntervalMethod | None = "wilson",
        counts: bool = True,
        corp: bool = False,
        n_resamples: int = 200,
        seed: int = 0,
    ) -> Self:
        """Bin each model's ``predictions`` (``kind``: probabilities or logits; a mapping
        name -> scores, or one array) against class indices ``labels``, then :meth:`plot`.

        ``corp=True`` adds each model's CORP curve and its consistency band (top-label or
        ``mode``'s panel only; ``n_resamples`` refits, seeded by ``seed``)."""
        models = predictions if isinstance(predictions, Mapping) else {"model": predictions}
        if kind not in ("probs", "logits"):
            raise InputError("kind", "'probs' or 'logits'", repr(kind))
        panels: dict[str, dict[str, BinStats]] = {}
        curves: dict[str, dict[str, CorpReliability]] = {}
        for name, scores in models.items():
            out = as_outputs(labels, **{kind: scores})
            if corp and not per_class:
                curves.setdefault("", {})[name] = corp_reliability(
                    out, mode=mode, n_resamples=n_resamples, seed=seed
                )
            if not per_class:
                panels.setdefault("", {})[name] = reliability_stats(
                    out.labels, out.probs, n_bins=n_bins, scheme=scheme, mode=mode
                )
                continue
            names = list(range(out.n_classes)) if class_names is None else list(class_names)
            for k in range(out.n_classes):
                outcome = (out.labels == k).astype(np.float64)
                stats = bin_stats(out.probs[:, k], outcome, n_bins, scheme=scheme)
                panels.setdefault(f"class {names[k]}", {})[name] = stats
        return cls(panels, interval=interval, counts=counts, corp=curves).plot(ax=ax)

    @classmethod
    def from_estimator(
        cls,
        estimators: Mapping[str, Any] | Any,
        X: Any,
        y: Any,
        **options: Any,
    ) -> Self:
        """Diagrams of fitted scikit-learn classifiers (a mapping name -> estimator, or
        one) on ``X`` and labels ``y`` (as the estimators' ``classes_`` name them).

        ``options`` are those of :meth:`from_predictions` (not ``kind``).
        """
        models = estimators if isinstance(estimators, Mapping) else {"model": estimators}
        classes = np.asarray(next(iter(models.values())).classes_)
        y = np.asarray(y)
        index = np.minimum(np.searchsorted(classes, y), classes.shape[0] - 1)
        if np.any(classes[index] != y):
            raise InputError("y", "labels among the estimators' classes_", "another label")
        probs = {name: est.predict_proba(X) for name, est in models.items()}
        options.setdefault("class_names", classes.tolist())
        return cls.from_predictions(index, probs, kind="probs", **options)

    def plot(self, ax: Axes | Sequence[Axes] | None = None) -> Self:
        """Draw every panel: on ``ax`` (one axes per panel) or on a new figure."""
        n = len(self.panels)
        own = ax is None
        if ax is None:
            cols = min(n, COLUMNS)
            rows = -(-n // cols)
            fig = new_figure(3.6 * cols + 0.4, 3.6 * rows + 0.5)
            spaced(fig)
            axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n)]
        else:
            axes = [ax] if isinstance(ax, Axes) else list(ax)
            if len(axes) != n:
                raise InputError("ax", f"{n} axes (one per panel)", f"{len(axes)}")
            fig = axes[0].get_figure()  # type: ignore[assignment]
        for a, (title, models) in zip(axes, self.panels.items(), strict=True):
            _draw_panel(a, title, models, self)
            if not own:
                a.legend(loc="upper left", fontsize="small", frameon=False)
        if own:
            figure_legend(fig, axes[:1], ncols=max(2, min(6, int(fig.get_figwidth() / 2.2))))
        self.figure_, self.axes_ = fig, axes
        return self


def _draw_panel(
    ax: Axes, title: str, models: Mapping[str, BinStats], display: ReliabilityDisplay
) -> None:
    """One diagram: each model's accuracy bars side by side within the bins (with their
    intervals, one legend entry for all, and counts in the strip under the bars), CORP
    curves if asked, the diagonal."""
    ax.plot([0, 1], [0, 1], linestyle="--", color="#555555", linewidth=1.0, label="Perfect")
    share = 1.0 / len(models)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.02)
    if display.counts:
        count_strip(ax, [stats.counts[stats.nonempty] for stats in models.values()])
    for i, (name, stats) in enumerate(models.items()):
        keep = stats.nonempty
        width = np.diff(stats.edges)[keep] * share
        left = stats.edges[:-1][keep] + i * width
        bin_bars(ax, left, stats.accuracy[keep], width, color=f"C{i}", label=plain(name))
        if display.interval is not None:
            draw_bin_intervals(ax, stats, left + width / 2, method=display.interval, label=i == 0)
        if display.counts:
            draw_bin_counts(ax, left + width / 2, stats.counts[keep], width, color=f"C{i}")
        if name in display.corp.get(title, {}):
            # one model: the house colour, apart from its bars; several: each model's own
            several = {"color": f"C{i}", "name": name}
            draw_corp(ax, display.corp[title][name], **({} if len(models) == 1 else several))
    ax.set_xlabel("Confidence")
    ax.set_ylabel("Accuracy" if not title else "Frequency")
    if title:
        ax.set_title(plain(title))
    style_axes(ax)
