"""The tables and the per-epoch figure of issue #33, from the units ``nc_authors.py`` wrote.

    python experiments/neural_clamping/nc_authors_report.py runs/nc_authors \\
        experiments/neural_clamping/results/authors

Reads every unit under the run folder (``<model>/seed-<S>/<variant>/<method>-<code>.json``)
and the cached test logits beside them, and writes the output folder (whole, through
:func:`calibkit.io.atomic.atomic_directory`: a new or empty folder, or one this script wrote
and nobody changed since; a folder holding anything else, the committed ``results/authors``
too, written before manifests, is refused before any work, in one line):

- ``units.csv``: one row per unit (its settings, T, T where SGD stopped, ||delta||, the
  test accuracy, ECE and NLL with their 95% bootstrap intervals, and, for a fit through the
  model, the test ECE of the same T with delta removed);
- ``curves.csv``: T, ||delta|| and the test ECE / NLL after every epoch of every unit;
- ``authors_comparison.md``: the tables of the README's section on issue #33;
- ``nc_authors_curves.png``: T and the test ECE per epoch, both codes, NC (CE) and NC (FL).

Two procedures are read: the fits through the model (``--epochs 10``, delta learnt) and
the temperature-only fits on the cached logits (``--temperature-only --epochs 100``: each
code's own SGD on T with delta held at 0). The second stands for the first beyond epoch 10
where the first shows delta inert (the "inert" table measures it, epoch by epoch).
Differences from TS are paired: the same bootstrap resamples of the test images score
both fits (fits on the cached logits only: a fit through the model has no cached logits).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from matplotlib.figure import Figure

if __package__ in (None, ""):  # run as a file: make ``experiments`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_directory, check_replaceable_folder
from calibkit.metrics import ece
from calibkit.reporting.figure_style import new_figure, save_figure, spaced, style_axes
from experiments._driver import input_folder, run_driver
from experiments.neural_clamping.nc_authors import logits_file

F64 = npt.NDArray[np.float64]
PROG = "nc_authors_report.py"
#: The settings both codes ran by default (the paper's table; gamma 1 for NC (FL)).
DEFAULT = {
    "lr": 1e-3,
    "batch_size": 512,
    "delta_start": "own",
    "lam": "auto",
    "calibration": "heldout",
}
METHODS = ("TS", "NC (CE)", "NC (FL)")
CODES = ("authors", "calibkit")
EPOCHS = (10, 20, 50, 100)
COLOURS = {"authors": "#d1495b", "calibkit": "#3366a8"}


# ---------------------------------------------------------------- reading


def load_units(run: Path) -> list[dict[str, Any]]:
    """Every unit under ``run``, each with the folder of its seed (``_seed_dir``)."""
    units = []
    for path in sorted(run.glob("*/seed-*/*/*.json")):
        unit = json.loads(path.read_text(encoding="utf-8"))
        unit["_seed_dir"] = path.parent.parent
        units.append(unit)
    return units


def _softmax(z: F64) -> F64:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: F64 = e / e.sum(axis=1, keepdims=True)
    return out


_LOGITS: dict[Path, tuple[F64, npt.NDArray[np.int64]]] = {}


def test_logits(unit: dict[str, Any]) -> tuple[F64, npt.NDArray[np.int64]]:
    """The model's test logits and labels of the unit's seed (held-out test part)."""
    # the held-out test part: the same test images for every --calibration
    path = unit["_seed_dir"] / logits_file(unit["settings"].get("images"), "heldout")
    if path not in _LOGITS:
        with np.load(path) as f:
            _LOGITS[path] = (f["test_logits"].astype(np.float64), f["test_labels"])
    return _LOGITS[path]


def on_logits(unit: dict[str, Any]) -> bool:
    """Fitted on the cached logits (TS, or temperature-only): its test probabilities are
    the cached test logits over its T."""
    return bool(unit["method"] == "TS" or unit["settings"].get("temperature_only", False))


def test_probs(unit: dict[str, Any]) -> F64:
    z, _ = test_logits(unit)
    return _softmax(z / unit["T"])


def is_default(unit: dict[str, Any], **changed: Any) -> bool:
    """The unit ran the default settings but for ``changed`` (and its epochs/procedure)."""
    settings = {**DEFAULT, **changed}
    return all(unit["settings"][k] == v for k, v in settings.items())


def pick(
    units: Iterable[dict[str, Any]],
    *,
    model: str,
    method: str,
    code: str,
    tonly: bool,
    epochs: int,
    seed: int | None = None,
    **changed: Any,
) -> list[dict[str, Any]]:
    """The units of one cell, sorted by seed."""
    out = [
        u
        for u in units
        if u["model"] == model
        and u["method"] == method
        and u["code"] == code
        and (seed is None or u["seed"] == seed)
        and u["settings"]["epochs"] == epochs
        and (on_logits(u) if tonly else not u["settings"].get("temperature_only", False))
        and is_default(u, **changed)
    ]
    return sorted(out, key=lambda u: int(u["seed"]))


def at_epoch(unit: dict[str, Any], epoch: int) -> dict[str, float] | None:
    for point in unit["curve"]:
        if point["epoch"] == epoch:
            return dict(point)
    return None


def ts_units(units: Iterable[dict[str, Any]], model: str, **changed: Any) -> dict[int, Any]:
    """calibkit's TS (the exact NLL minimum) per split, for the settings ``changed``
    (every run writes it; they are the same fit)."""
    out: dict[int, Any] = {}
    for u in units:
        if (
            u["model"] == model
            and u["method"] == "TS"
            and u["code"] == "calibkit"
            and is_default(u, **changed)
        ):
            out.setdefault(int(u["seed"]), u)
    return out


# ---------------------------------------------------------------- flat files


def unit_rows(units: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for u in units:
        s, t = u["settings"], u["test"]
        removed = ""
        if not on_logits(u):  # what delta adds: the same T on the model's own logits
            z, y = test_logits(u)
            removed = f"{ece(y, _softmax(z / u['T'])):.6f}"
        rows.append(
            {
                "model": u["model"],
                "seed": u["seed"],
                "method": u["method"],
                "code": u["code"],
                "temperature_only": on_logits(u),
                "epochs": s["epochs"],
                "lr": s["lr"],
                "batch_size": s["batch_size"],
                "delta_start": s["delta_start"],
                "lam": s["lam"],
                "calibration": s["calibration"],
                "T": f"{u['T']:.6f}",
                "T_sgd": "" if u.get("T_sgd") is None else f"{u['T_sgd']:.6f}",
                "delta_norm": f"{u['delta_norm']:.6g}",
                "accuracy": f"{t['accuracy']:.6f}",
                "ece": f"{t['ece']['estimate']:.6f}",
                "ece_low": f"{t['ece']['low']:.6f}",
                "ece_high": f"{t['ece']['high']:.6f}",
                "nll": f"{t['nll']['estimate']:.6f}",
                "nll_low": f"{t['nll']['low']:.6f}",
                "nll_high": f"{t['nll']['high']:.6f}",
                "ece_delta_removed": removed,
                "seconds": f"{u['seconds']:.1f}",
            }
        )
    return rows


def curve_rows(units: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for u in units:
        for p in u["curve"]:
            rows.append(
                {
                    "model": u["model"],
                    "seed": u["seed"],
                    "variant": u["variant"],
                    "method": u["method"],
                    "code": u["code"],
                    "epoch": p["epoch"],
                    "T": f"{p['T']:.6f}",
                    "delta_norm": f"{p['delta_norm']:.6g}",
                    "test_ece": f"{p['test_ece']:.6f}",
                    "test_nll": f"{p['test_nll']:.6f}",
                }
            )
    return rows


def csv_text(rows: Sequence[dict[str, Any]]) -> str:
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


# ---------------------------------------------------------------- statistics


def paired_difference(
    y: npt.NDArray[np.int64], p: F64, q: F64, *, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float, float]:
    """``ECE(p) - ECE(q)`` on the same test images, with a 95% percentile interval over
    paired resamples (one draw of rows scores both)."""
    rng = np.random.default_rng(seed)
    n = len(y)
    diffs = np.empty(n_boot)
    for b in range(n_boot):
        i = rng.integers(0, n, n)
        diffs[b] = ece(y[i], p[i]) - ece(y[i], q[i])
    low, high = np.quantile(diffs, [0.025, 0.975])
    return ece(y, p) - ece(y, q), float(low), float(high)


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _ci(d: dict[str, float], scale: float = 100.0, digits: int = 2) -> str:
    f = f"{{:.{digits}f}}"
    return (
        f"{f.format(scale * d['estimate'])} "
        f"[{f.format(scale * d['low'])}, {f.format(scale * d['high'])}]"
    )


def _mean_sd(values: Sequence[float], fmt: Callable[[float], str]) -> str:
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(float(np.mean(values)))} ± {fmt(float(np.std(values, ddof=1)))}"


# ---------------------------------------------------------------- tables


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], right: int = 1) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join(["---"] * right + ["---:"] * (len(header) - right)) + "|")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main_table(units: Sequence[dict[str, Any]], model: str) -> str:
    """Item 2: every method by both codes; the fit through the model (10 epochs) and the
    temperature-only fit (100 epochs); per-seed intervals and the mean over seeds."""
    rows = []
    ts_by_seed = ts_units(units, model)
    for method in METHODS:
        for code in CODES:
            for tonly, epochs in ((False, 10), (True, 100)):
                if method == "TS" and not tonly:
                    continue
                cell = pick(
                    units, model=model, method=method, code=code, tonly=tonly, epochs=epochs
                )
                if method == "TS" and code == "calibkit":
                    cell = [ts_by_seed[k] for k in sorted(ts_by_seed)]
                if not cell:
                    continue
                first = cell[0]
                procedure = (
                    "exact NLL minimum"
                    if method == "TS" and code == "calibkit"
                    else f"{epochs} epochs, " + ("T alone" if tonly else "δ learnt")
                )
                diff = ""
                if method == "TS" and code == "calibkit":
                    diff = "(the reference)"
                elif on_logits(first) and int(first["seed"]) in ts_by_seed:
                    _, y = test_logits(first)
                    ts_first = ts_by_seed[int(first["seed"])]
                    d = paired_difference(y, test_probs(first), test_probs(ts_first))
                    diff = f"{100 * d[0]:+.2f} [{100 * d[1]:+.2f}, {100 * d[2]:+.2f}]"
                eces = [u["test"]["ece"]["estimate"] for u in cell]
                rows.append(
                    [
                        method,
                        code,
                        procedure,
                        f"{first['T']:.3f}",
                        f"{first['delta_norm']:.3g}",
                        _ci(first["test"]["ece"]),
                        _ci(first["test"]["nll"], scale=1.0, digits=4),
                        diff,
                        f"{_mean_sd(eces, _pct)} ({len(cell)})",
                    ]
                )
    header = [
        "method",
        "code",
        "procedure",
        "T",
        "‖δ‖",
        "test ECE % [95%]",
        "test NLL [95%]",
        "ECE − TS, points [95%, paired]",
        "ECE %, mean ± sd (splits)",
    ]
    return _table(header, rows, right=3)


def epochs_table(units: Sequence[dict[str, Any]], model: str) -> str:
    """(a): T and the test ECE where SGD stops, by epoch (temperature-only fits, the
    default settings; mean over the splits), beside the objective's exact minimum."""
    rows = []
    for method in ("NC (CE)", "NC (FL)"):
        for code in CODES:
            cell = pick(units, model=model, method=method, code=code, tonly=True, epochs=100)
            if not cell:
                continue
            row = [method, code + (" (SGD's T)" if code == "calibkit" else "")]
            for e in EPOCHS:
                points = [p for p in (at_epoch(u, e) for u in cell) if p is not None]
                t = np.mean([p["T"] for p in points])
                row.append(f"{t:.2f} / {_pct(float(np.mean([p['test_ece'] for p in points])))}")
            if code == "calibkit":
                t_exact = np.mean([u["T"] for u in cell])
                e_exact = np.mean([u["test"]["ece"]["estimate"] for u in cell])
                row.append(f"{t_exact:.2f} / {_pct(float(e_exact))}")
            else:
                row.append("")
            rows.append(row)
    header = ["method", "code", *[f"epoch {e}: T / ECE %" for e in EPOCHS], "exact minimum"]
    return _table(header, rows, right=2)


def inert_table(units: Sequence[dict[str, Any]]) -> str:
    """delta inert: the fit through the model against the temperature-only fit, epoch by
    epoch (largest gaps over epochs 1-10), and the ECE at the fit's T with delta removed."""
    rows = []
    for full in units:
        if on_logits(full) or full["settings"]["epochs"] != 10 or not is_default(full):
            continue
        twins = pick(
            units,
            model=full["model"],
            method=full["method"],
            code=full["code"],
            tonly=True,
            epochs=100,
            seed=int(full["seed"]),
        )
        if not twins:
            continue
        twin = twins[0]
        gaps_t, gaps_e = [], []
        for p in full["curve"]:
            q = at_epoch(twin, int(p["epoch"]))
            if q is not None and p["epoch"] > 0:
                gaps_t.append(abs(p["T"] - q["T"]) / q["T"])
                gaps_e.append(abs(p["test_ece"] - q["test_ece"]))
        z, y = test_logits(full)
        removed = ece(y, _softmax(z / full["T"]))
        t_sgd = full.get("T_sgd") or full["T"]
        rows.append(
            [
                full["model"],
                str(full["seed"]),
                full["method"],
                full["code"],
                f"{full['delta_norm']:.3g}",
                f"{t_sgd:.3f} / {at_epoch(twin, 10)['T']:.3f}",  # type: ignore[index]
                f"{100 * max(gaps_t):.2f}%",
                f"{100 * max(gaps_e):.2f}",
                f"{_pct(full['test']['ece']['estimate'])} / {_pct(removed)}",
            ]
        )
    header = [
        "model",
        "split",
        "method",
        "code",
        "‖δ‖ at the end",
        "SGD's T at epoch 10: with δ / T alone",
        "largest gap in T, epochs 1-10",
        "largest gap in test ECE (points)",
        "test ECE %: with δ / δ removed (same T)",
    ]
    return _table(header, rows, right=4)


def variant_table(
    units: Sequence[dict[str, Any]],
    model: str,
    seed: int,
    variants: Sequence[tuple[str, dict[str, Any]]],
    *,
    tonly: bool,
    epochs: int,
    methods: Sequence[str] = ("TS", "NC (CE)", "NC (FL)"),
    codes: Sequence[str] = CODES,
) -> str:
    """One row per variant: T and the test ECE [95%] of each (method, code)."""
    cols = [(m, c) for m in methods for c in codes]
    rows = []
    for name, changed in variants:
        row = [name]
        for method, code in cols:
            if method == "TS" and code == "calibkit":
                found = ts_units(units, model, **changed).get(seed)
                cell = [] if found is None else [found]
            else:
                cell = pick(
                    units,
                    model=model,
                    method=method,
                    code=code,
                    tonly=tonly,
                    epochs=epochs,
                    seed=seed,
                    **changed,
                )
            row.append(f"{cell[0]['T']:.3f}, {_ci(cell[0]['test']['ece'])}" if cell else "not run")
        if any(cell != "not run" for cell in row[1:]):
            rows.append(row)
    if len(rows) < 2:  # no variant beside the default ran: no table
        return ""
    header = ["variant", *[f"{m} {c}: T, ECE % [95%]" for m, c in cols]]
    return _table(header, rows)


def oracle_temperature(z: F64, y: npt.NDArray[np.int64]) -> tuple[float, float]:
    """The T in [1, 6] (steps of 0.005) with the lowest test ECE, and that ECE: what reading
    a temperature path where the test ECE is lowest can show (an oracle, not a method)."""
    grid = np.arange(1.0, 6.0 + 1e-9, 0.005)
    scores = [ece(y, _softmax(z / t)) for t in grid]
    best = int(np.argmin(scores))
    return float(grid[best]), float(scores[best])


def best_epoch_table(units: Sequence[dict[str, Any]]) -> str:
    """Each path of T (the authors' NC (FL), T alone) read at its lowest test ECE, beside
    TS and the oracle T, per split: how far a well-chosen (or lucky) stopping epoch goes."""
    rows = []
    for model in sorted({str(u["model"]) for u in units}):
        ts = ts_units(units, model)
        for seed in sorted(ts):
            z, y = test_logits(ts[seed])
            t_best, e_best = oracle_temperature(z, y)
            row = [
                model,
                str(seed),
                f"{ts[seed]['T']:.3f} / {_pct(ts[seed]['test']['ece']['estimate'])}",
            ]
            for changed in ({}, {"lr": 0.01, "batch_size": 1000}):
                cell = pick(
                    units,
                    model=model,
                    method="NC (FL)",
                    code="authors",
                    tonly=True,
                    epochs=100,
                    seed=seed,
                    **changed,
                )
                if not cell:
                    row += ["not run", "not run"]
                    continue
                best = min(cell[0]["curve"], key=lambda p: p["test_ece"])
                last = cell[0]["curve"][-1]
                row.append(f"{best['epoch']}: {best['T']:.3f} / {_pct(best['test_ece'])}")
                row.append(f"{last['T']:.3f} / {_pct(last['test_ece'])}")
            row.append(f"{t_best:.3f} / {_pct(e_best)}")
            rows.append(row)
    header = [
        "model",
        "split",
        "TS: T / ECE %",
        "their NC (FL), lr 1e-3 / 512: lowest test ECE, epoch: T / ECE %",
        "epoch 100",
        "lr 1e-2 / 1000: lowest, epoch: T / ECE %",
        "epoch 100",
        "T chosen on the test ECE (oracle): T / ECE %",
    ]
    return _table(header, rows, right=2)


# ---------------------------------------------------------------- the figure


def curves_figure(units: Sequence[dict[str, Any]], model: str, seed: int) -> Figure:
    """T (top) and the test ECE (bottom) per epoch; NC (CE) left, NC (FL) right. Lines:
    each code's SGD on T alone (100 epochs); dots: the fits through the model (delta
    learnt, 10 epochs); a star: calibkit's exact final T; dashed: TS (exact)."""
    fig = new_figure(11.5, 7.5)
    spaced(fig)
    axes = fig.subplots(2, 2, sharex=True)
    ts = [u for k, u in ts_units(units, model).items() if k == seed]
    for col, method in enumerate(("NC (CE)", "NC (FL)")):
        top, bottom = axes[0][col], axes[1][col]
        for code in CODES:
            colour = COLOURS[code]
            name = "authors' code" if code == "authors" else "calibkit"
            for tonly, epochs in ((True, 100), (False, 10)):
                cell = pick(
                    units,
                    model=model,
                    method=method,
                    code=code,
                    tonly=tonly,
                    epochs=epochs,
                    seed=seed,
                )
                if not cell:
                    continue
                c = cell[0]["curve"]
                x = [p["epoch"] for p in c]
                t = [p["T"] for p in c]
                e = [100 * p["test_ece"] for p in c]
                if tonly:
                    label = f"{name}: SGD on T alone"
                    top.plot(x, t, color=colour, lw=1.8, label=label)
                    bottom.plot(x, e, color=colour, lw=1.8, label=label)
                    if code == "calibkit":  # the exact final step
                        top.plot(
                            [100],
                            [cell[0]["T"]],
                            "*",
                            color=colour,
                            ms=12,
                            label="calibkit: exact final T",
                        )
                        bottom.plot(
                            [100],
                            [100 * cell[0]["test"]["ece"]["estimate"]],
                            "*",
                            color=colour,
                            ms=12,
                            label="calibkit: exact final T",
                        )
                else:
                    label = f"{name}: δ learnt (through the model)"
                    top.plot(x, t, "o", color=colour, ms=4, mfc="white", label=label)
                    bottom.plot(x, e, "o", color=colour, ms=4, mfc="white", label=label)
        if ts:
            top.axhline(ts[0]["T"], color="#555555", ls="--", lw=1, label="TS (exact NLL minimum)")
            bottom.axhline(
                100 * ts[0]["test"]["ece"]["estimate"],
                color="#555555",
                ls="--",
                lw=1,
                label="TS (exact NLL minimum)",
            )
        for ax in (top, bottom):
            style_axes(ax)
        top.set(title=f"{method}: temperature", ylabel="T")
        bottom.set(
            title=f"{method}: test ECE",
            xlabel="epoch (SGD, lr 1e-3, batch 512)",
            ylabel="test ECE (%)",
        )
    axes[1][1].legend(loc="upper right", fontsize=8, frameon=False)
    fig.suptitle(
        f"Neural Clamping by its authors' code and by calibkit: {model}, split {seed} "
        "(5,000 calibration / 5,000 test CIFAR-10 JPEG images)",
        fontsize=11,
    )
    return fig


# ---------------------------------------------------------------- the report


def figure_model(units: Sequence[dict[str, Any]]) -> str:
    """The model of the figure and of the variants: ResNet-20 where it ran."""
    models = sorted({str(u["model"]) for u in units})
    return "resnet20" if "resnet20" in models else models[0]


def report(units: Sequence[dict[str, Any]]) -> str:
    models = sorted({u["model"] for u in units})
    parts = ["# Neural Clamping: the authors' code against calibkit (issue #33)", ""]
    parts.append(
        "Generated by `nc_authors_report.py` from the units of `nc_authors.py`. ECE in "
        "percent (15 bins), 95% bootstrap intervals over the 5,000 test images; "
        "'ECE − TS' is paired (the same resamples score both fits). A binned ECE is "
        "biased upwards at this size, so an interval can lie above its estimate. The fits "
        "through the model hold no test logits here: they have their own intervals, and "
        "the δ-inert table compares them with the fits of T alone."
    )
    for model in models:
        parts += [
            "",
            f"## {model}: every method by both codes (split 0; last column: all splits)",
            "",
        ]
        parts.append(main_table(units, model))
        parts += [
            "",
            f"## {model}: (a) T / test ECE where SGD stops, by epoch (mean over splits)",
            "",
        ]
        parts.append(epochs_table(units, model))
    parts += ["", "## (a) each path read at its lowest test ECE (T alone, 100 epochs)", ""]
    parts.append(best_epoch_table(units))
    parts += ["", "## δ inert: the fits through the model against T alone", ""]
    parts.append(inert_table(units))
    cal: list[tuple[str, dict[str, Any]]] = [
        ("held-out test images (default)", {}),
        ("training images", {"calibration": "train"}),
        ("training images, their augmentation", {"calibration": "train-augmented"}),
    ]
    lrs: list[tuple[str, dict[str, Any]]] = [
        ("lr 1e-3, batch 512 (the paper's table)", {}),
        ("lr 1e-2, batch 1000 (their demo)", {"lr": 0.01, "batch_size": 1000}),
    ]
    for model in models:
        for title, variants in (("(b) calibration images", cal), ("(c) lr and batch", lrs)):
            table = variant_table(units, model, 0, variants, tonly=True, epochs=100)
            if table:
                parts += ["", f"## {model}, split 0: {title} (T alone, 100 epochs)", "", table]
    starts: list[tuple[str, dict[str, Any]]] = [
        ("their start (random, sd 0.001), penalty λ‖δ‖", {}),
        ("calibkit's start (Theorem 3.2)", {"delta_start": "data"}),
        ("no penalty (lambda 0)", {"lam": "0"}),
        ("lr 1e-2, batch 1000", {"lr": 0.01, "batch_size": 1000}),
        ("augmented training images, redrawn per epoch", {"calibration": "train-augmented"}),
    ]
    main_model = figure_model(units)
    table = variant_table(
        units,
        main_model,
        0,
        starts,
        tonly=False,
        epochs=10,
        methods=("NC (FL)",),
        codes=("authors",),
    )
    if table:
        title = "(d) the start and the penalty of δ, and (b), (c) with δ learnt (10 epochs)"
        parts += ["", f"## {main_model}, split 0: {title}", "", table]
    return "\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("run", help="the --out folder of nc_authors.py")
    parser.add_argument("out", help="the folder to write the tables and the figure into")

    def work(args: argparse.Namespace) -> None:
        out = check_replaceable_folder(Path(args.out), "out")
        run = input_folder(args.run, "run")
        units = load_units(run)
        if not units:
            raise InputError("run", "a folder of nc_authors.py units", f"'{run}' (none in it)")
        with atomic_directory(out) as tmp:
            (tmp / "units.csv").write_text(csv_text(unit_rows(units)), encoding="utf-8")
            (tmp / "curves.csv").write_text(csv_text(curve_rows(units)), encoding="utf-8")
            (tmp / "authors_comparison.md").write_text(report(units), encoding="utf-8")
            save_figure(curves_figure(units, figure_model(units), 0), tmp / "nc_authors_curves.png")
        print(f"wrote {out}/units.csv, curves.csv, authors_comparison.md, nc_authors_curves.png")

    return run_driver(parser, work, argv)


if __name__ == "__main__":
    sys.exit(main())
