"""Figures of Neural Clamping's sensitivity studies (Tang, Chen & Ho, TMLR 2024).

Their Figure 2 (test ECE against the focal exponent gamma), Figure 3 (data-driven against
random initial ``delta``, box plots over seeds) and Appendix D (the ECE of the same fits
measured with other numbers of bins), drawn from the fits written by ``nc_figure_fits.py``
(beside this module): one folder per seed, ``seed-<S>/<fit>.npz`` holding the fit's
calibrated test logits (and ``none.npz`` the model's own logits and the labels).
Fit names: ``nc@g<G>`` (NC, data-driven delta), ``nc_sgd@g<G>`` (the same, T where SGD
left it), ``ts_focal@g<G>`` (TS by focal loss; ``g0`` is TS by NLL), ``nc_random@g<G>``.

ECE axes are in percent; every plotted value is the input's value.

>>> fig = gamma_figure([0.0, 1.0], {"NC": np.array([[0.02, 0.25], [0.03, 0.75]])},
...                    title="demo")
>>> fig.axes[0].lines[0].get_ydata().tolist(), fig.axes[0].lines[0].get_label()
([0.025, 0.5], 'NC')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from calibkit import Binning, Resampling
from calibkit.core.errors import InputError
from calibkit.core.outputs import log_softmax64
from calibkit.metrics import ece, evaluate
from calibkit.reporting.figure_style import new_figure, save_figure, style_axes, wrapped

F64 = npt.NDArray[np.float64]
_COLOURS = ("#3366a8", "#d1495b", "#2a9d8f", "#e9a03b", "#7b5ea7", "#3d5a80")
#: The bin counts of the Appendix D figure.
BIN_COUNTS = (5, 10, 15, 20, 30, 50, 100)
_GAMMA = re.compile(r"^(nc|nc_sgd|ts_focal|nc_random|nc_random_sgd)@g([0-9.]+)$")
#: Legend names of the fit families.
FAMILY_NAMES = {
    "nc": "NC (data-driven delta, exact final T)",
    "nc_sgd": "NC, T where SGD left it (the paper's procedure)",
    "ts_focal": "TS fitted by focal loss (delta = 0)",
    "nc_random": "NC from a random delta",
}


@dataclass(frozen=True)
class ClampingFits:
    """Calibrated test probabilities and temperature of every fit, per seed; test labels."""

    labels: dict[int, npt.NDArray[np.int64]]
    probs: dict[str, dict[int, F64]]
    temperature: dict[str, dict[int, float]]

    @property
    def seeds(self) -> list[int]:
        return sorted(self.labels)

    def ece(self, fit: str, n_bins: int = 15, seeds: Sequence[int] | None = None) -> F64:
        """The fit's test ECE on ``seeds`` (default: every seed that has it), in order."""
        runs = self.probs.get(fit, {})
        chosen = sorted(runs) if seeds is None else seeds
        return np.array([ece(self.labels[s], runs[s], n_bins=n_bins) for s in chosen])

    def common_seeds(self, fits: Sequence[str]) -> list[int]:
        """The seeds that have every fit of ``fits``."""
        return [s for s in self.seeds if all(s in self.probs.get(f, {}) for f in fits)]

    def gammas(self, family: str) -> list[float]:
        """The gammas fitted for ``family`` (``"nc"``, ``"ts_focal"``, ...), ascending."""
        found = {float(m[2]) for f in self.probs if (m := _GAMMA.match(f)) and m[1] == family}
        return sorted(found)


def load_fits(folder: str | Path) -> ClampingFits:
    """Every ``seed-<S>/<fit>.npz`` under ``folder`` (one model's fits)."""
    labels: dict[int, npt.NDArray[np.int64]] = {}
    probs: dict[str, dict[int, F64]] = {}
    temperature: dict[str, dict[int, float]] = {}
    for sdir in sorted(Path(folder).glob("seed-*")):
        seed = int(sdir.name.removeprefix("seed-"))
        if not (sdir / "none.npz").exists():
            continue
        with np.load(sdir / "none.npz") as raw:
            labels[seed] = raw["labels"].astype(np.int64)
        for path in sorted(sdir.glob("*.npz")):
            with np.load(path) as z:
                probs.setdefault(path.stem, {})[seed] = np.exp(log_softmax64(z["logits"]))
                temperature.setdefault(path.stem, {})[seed] = float(z["temperature"])
    if not labels:
        raise InputError(
            "folder",
            "seed-<S>/none.npz files of experiments/neural_clamping/nc_figure_fits.py",
            str(folder),
        )
    return ClampingFits(labels, probs, temperature)


def noise_floors(fits: ClampingFits, fit: str = "ts_focal@g0", n_bins: int = 15) -> F64:
    """Per seed, the ECE noise floor of ``fit``'s confidences (default: TS by NLL): the ECE
    a perfectly calibrated model with these confidences shows on this test set."""
    runs = fits.probs[fit]
    return np.array(
        [
            evaluate(
                fits.labels[s],
                runs[s],
                binning=Binning(n_bins=n_bins),
                resampling=Resampling(n_boot=0, seed=s),
            ).values["ece_floor"]
            for s in sorted(runs)
        ]
    )


def noise_floor(fits: ClampingFits, fit: str = "ts_focal@g0", n_bins: int = 15) -> float:
    """Mean over seeds of :func:`noise_floors`."""
    return float(noise_floors(fits, fit, n_bins).mean())


def _percent_axes(fig: Figure, title: str, width: float) -> Axes:
    ax = fig.subplots()
    ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=1))
    style_axes(ax)
    ax.set_title(wrapped(title, width - 0.3, 11), fontsize=11)
    return ax


def gamma_figure(
    gammas: Sequence[float],
    curves: Mapping[str, F64],
    *,
    title: str,
    lines: Mapping[str, float] | None = None,
) -> Figure:
    """Mean test ECE (error bars: std over seeds) against gamma, one line per curve.

    ``curves`` maps a legend name to an array ``(seeds, gammas)``; ``lines`` adds dashed
    horizontal references (e.g. TS by NLL, the noise floor), named in the legend.
    """
    fig = new_figure(6.4, 4.2)
    ax = _percent_axes(fig, title, 6.4)
    x = np.asarray(gammas, dtype=np.float64)
    for i, (name, values) in enumerate(curves.items()):
        v = np.atleast_2d(np.asarray(values, dtype=np.float64))
        if v.shape[1] != x.size:
            raise InputError(f"curves[{name!r}]", f"{x.size} columns (one per gamma)", str(v.shape))
        colour = _COLOURS[i % len(_COLOURS)]
        std = v.std(axis=0, ddof=1) if v.shape[0] > 1 else np.zeros(x.size)
        ax.plot(x, v.mean(axis=0), color=colour, marker="o", markersize=4, label=name)
        ax.errorbar(x, v.mean(axis=0), yerr=std, fmt="none", ecolor=colour, capsize=3)
    for j, (name, value) in enumerate((lines or {}).items()):
        ax.axhline(
            value, color=("#555555", "#9e9e9e")[j % 2], linestyle="--", linewidth=1.0, label=name
        )
    ax.set_xlabel("focal exponent gamma (0: cross-entropy)")
    ax.set_ylabel("test ECE (mean ± std over seeds)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, framealpha=0.9, edgecolor="none")
    return fig


def init_box_figure(groups: Mapping[str, F64], *, title: str) -> Figure:
    """Box plots of the test ECE over seeds, one box per initialisation, seeds as dots."""
    if not groups:
        raise InputError("groups", "at least one group of ECE values", "none")
    fig = new_figure(6.4, 4.2)
    ax = _percent_axes(fig, title, 6.4)
    names = list(groups)
    data = [np.asarray(groups[n], dtype=np.float64) for n in names]
    ax.boxplot(data, tick_labels=[wrapped(n, 1.0, 8) for n in names], widths=0.5)
    for i, v in enumerate(data, start=1):
        ax.plot(np.full(v.size, float(i)), v, "o", color=_COLOURS[1], alpha=0.7, markersize=4)
    ax.plot([], [], "o", color=_COLOURS[1], label="one seed (model and fit)")
    ax.set_ylabel("test ECE")
    ax.legend(fontsize=7, edgecolor="none", loc="upper right")
    return fig


def bins_figure(
    bins: Sequence[int], curves: Mapping[str, F64], *, title: str, floor: F64 | None = None
) -> Figure:
    """Mean test ECE (± std over seeds) of fixed fits against the number of bins; ``floor``
    (one value per bin count: the noise floor) is drawn dashed."""
    fig = new_figure(6.4, 4.2)
    ax = _percent_axes(fig, title, 6.4)
    x = np.asarray(bins, dtype=np.float64)
    for i, (name, values) in enumerate(curves.items()):
        v = np.atleast_2d(np.asarray(values, dtype=np.float64))
        colour = _COLOURS[i % len(_COLOURS)]
        std = v.std(axis=0, ddof=1) if v.shape[0] > 1 else np.zeros(x.size)
        ax.plot(x, v.mean(axis=0), color=colour, marker="o", markersize=4, label=name)
        ax.fill_between(x, v.mean(axis=0) - std, v.mean(axis=0) + std, color=colour, alpha=0.12)
    if floor is not None:
        ax.plot(x, floor, color="#555555", linestyle="--", label="ECE noise floor (after TS)")
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{b:g}" for b in bins])
    ax.minorticks_off()
    ax.set_xlabel("number of equal-width bins (the fits are fixed; only the metric changes)")
    ax.set_ylabel("test ECE (mean ± std over seeds)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, framealpha=0.9, edgecolor="none")
    return fig


def gamma_curves(
    fits: ClampingFits, families: Sequence[str] = ("nc", "nc_sgd", "ts_focal")
) -> tuple[list[float], dict[str, F64]]:
    """The gammas fitted by every family in ``families``, and each family's ECE table."""
    gammas = sorted(set.intersection(*(set(fits.gammas(f)) for f in families)))
    if not gammas:
        raise InputError("fits", "gammas fitted by every family of " + ", ".join(families), "none")
    seeds = fits.common_seeds([f"{f}@g{g:g}" for f in families for g in gammas])
    curves = {
        FAMILY_NAMES[f]: np.array(
            [[ece(fits.labels[s], fits.probs[f"{f}@g{g:g}"][s]) for g in gammas] for s in seeds]
        )
        for f in families
    }
    return gammas, curves


def _bin_curves(fits: ClampingFits, chosen: Mapping[str, str]) -> dict[str, F64]:
    """``(seeds, bin counts)`` ECE of each chosen fit, on the seeds every one of them has."""
    present = {name: fit for name, fit in chosen.items() if fit in fits.probs}
    seeds = fits.common_seeds(list(present.values()))
    return {
        name: np.array([fits.ece(fit, b, seeds) for b in BIN_COUNTS]).T
        for name, fit in present.items()
    }


def write_clamping_figures(
    fits: ClampingFits, out: str | Path, slug: str, name: str, *, init_gamma: float = 1.0
) -> dict[str, Path]:
    """The three figures of ``fits`` (one model's, called ``name`` in the titles) as PNGs
    ``nc_<figure>_<slug>.png`` in ``out``; their paths by figure."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {key: out / f"nc_{key}_{slug}.png" for key in ("ece_vs_gamma", "init", "bins")}
    gammas, curves = gamma_curves(fits)
    lines = {
        "TS by NLL": float(fits.ece("ts_focal@g0").mean()),
        "ECE noise floor (after TS)": noise_floor(fits),
    }
    n = min(len(v) for v in curves.values())
    title = f"Neural Clamping on {name}: test ECE against the focal gamma ({n} seeds)"
    save_figure(gamma_figure(gammas, curves, title=title, lines=lines), paths["ece_vs_gamma"])
    g = f"g{init_gamma:g}"
    groups = {
        "data-driven delta": fits.ece(f"nc@{g}"),
        "random delta (sd 0.01)": fits.ece(f"nc_random@{g}"),
        "data-driven, SGD's T": fits.ece(f"nc_sgd@{g}"),
        "random, SGD's T": fits.ece(f"nc_random_sgd@{g}"),
    }
    groups = {k: v for k, v in groups.items() if v.size}
    n = min(v.size for v in groups.values())
    title = f"NC (gamma {init_gamma:g}) on {name}: data-driven or random initial delta ({n} seeds)"
    save_figure(init_box_figure(groups, title=title), paths["init"])
    chosen = {
        "uncalibrated": "none",
        "TS by NLL": "ts_focal@g0",
        "NC (CE), gamma 0": "nc@g0",
        f"NC (FL), gamma {init_gamma:g}": f"nc@{g}",
        f"NC (FL), gamma {init_gamma:g}, SGD's T": f"nc_sgd@{g}",
    }
    table = _bin_curves(fits, chosen)
    floor = np.array([noise_floor(fits, n_bins=b) for b in BIN_COUNTS])
    n = min(len(v) for v in table.values())
    title = f"The same fits on {name}: test ECE with other numbers of bins ({n} seeds)"
    save_figure(bins_figure(BIN_COUNTS, table, title=title, floor=floor), paths["bins"])
    return paths
