"""Wang et al. (2021) Figures 1(d), 2, 4 (label-smoothing sweep) and 6(a) on bird vs cat.

    python experiments/wang2021/wang2021_figures.py RUNS FIGURES

``RUNS`` holds the study folders written by

    M=ce,ls_0.01,ls_0.03,ls_0.05,ls_0.07,ls_0.09,inverse_focal_2 S=0,1,2,3,4
    calibkit study experiments/wang2021/configs/wang2021_birdcat.toml --models $M --seeds $S \\
        --out RUNS/wang2021_birdcat
    calibkit study experiments/wang2021/configs/wang2021_birdcat_n<N>.toml --seeds $S \\
        --out RUNS/wang2021_birdcat_n<N>

for N = 500, 1000, 3000. Seeds 0-4 are read (``SEEDS``); of them, the runs finished so far
are used. The figures go to ``FIGURES`` and the numbers quoted
in experiments/wang2021/README.md are printed.

``FIGURES`` is written whole (:func:`calibkit.io.atomic.atomic_directory`): a new or empty
folder, or one this script wrote and nobody changed since. A folder holding anything else
(the user's files; the committed ``results/birdcat/``, which holds the study's report too)
is refused before any work, and so is a missing input, in one line (exit status 2).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_directory, check_replaceable_folder
from calibkit.reporting.figure_style import save_figure
from calibkit.study import load_study_config
from calibkit.study.report.paired import welch_test
from calibkit.study.run.runner import finished_runs  # unlocked: reads while a study runs
from calibkit.study.store.record import RunRecord
from experiments._driver import driver_parser, input_folder, run_driver
from experiments.wang2021.loss_figures import optimal_ece_per_epoch_figure
from experiments.wang2021.wang_figures import (
    best_coefficient_figure,
    best_coefficients,
    ece_by_coefficient,
    loss_curves_figure,
    reliability_after_ts_figure,
)

CONFIGS = Path(__file__).resolve().parent / "configs"
LS = {"ce": 0.0, **{f"ls_{e}": float(e) for e in ("0.01", "0.03", "0.05", "0.07", "0.09")}}
NAMES = {"ce": "CE", **{k: f"LS {v:g}" for k, v in LS.items() if k != "ce"}}
NAMES["inverse_focal_2"] = "Inverse focal 2"
SEEDS = [0, 1, 2, 3, 4]
SIZES = (500, 1000, 3000)
FULL = 9000
CALS = ("none", "temperature_ece", "temperature")
WHERE = "bird vs cat, LeNet-5"


def records(config: Path, out: Path) -> list[RunRecord]:
    """The finished runs of the study ``config`` in ``out`` (nothing is trained)."""
    cfg = load_study_config(config)
    labels = [m.label for m in cfg.models if m.label in NAMES]
    cfg = cfg.select(models=labels, seeds=SEEDS)
    return finished_runs(cfg, out).records


def summary(recs: list[RunRecord]) -> None:
    """Mean ± std (over seeds) of the test ECE and accuracy per label and calibrator."""
    for label in NAMES:
        rows = [r for r in recs if r.model == label]
        if not rows:
            continue
        parts = []
        for cal in CALS:
            v = 100 * np.array([x["ece"] for r in rows for x in r.rows if x["calibrator"] == cal])
            parts.append(f"{cal} {v.mean():.2f} ± {v.std(ddof=1) if v.size > 1 else 0:.2f}")
        acc = 100 * np.mean(
            [x["accuracy"] for r in rows for x in r.rows if x["calibrator"] == "none"]
        )
        print(f"  {NAMES[label]:16s} n={len(rows)} acc {acc:.1f}%  ECE: " + "; ".join(parts))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; its exit status (2: bad input, nothing written)."""
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("runs", type=Path, metavar="RUNS")
    parser.add_argument("figures", type=Path, metavar="FIGURES")
    return run_driver(parser, figures, argv)


def figures(args: argparse.Namespace) -> None:
    """Print the numbers of the studies in ``args.runs`` and write their figures."""
    check_replaceable_folder(args.figures, "FIGURES")
    study = input_folder(args.runs / "wang2021_birdcat", "RUNS")
    logging.disable(logging.INFO)
    main_recs = records(CONFIGS / "wang2021_birdcat.toml", study)
    if not main_recs:
        raise InputError("RUNS", "finished runs in wang2021_birdcat", f"none in {study}")
    print(f"{FULL:,} training images:")
    summary(main_recs)
    table = {FULL: ece_by_coefficient(main_recs, LS)}
    for n in SIZES:
        out = args.runs / f"wang2021_birdcat_n{n}"
        if out.exists():
            recs = records(CONFIGS / f"wang2021_birdcat_n{n}.toml", out)
            print(f"{n:,} training images:")
            summary(recs)
            table[n] = ece_by_coefficient(recs, LS)
    for cal in CALS:
        print(f"best coefficient by {cal}: {best_coefficients(table, cal)}")
        for size, best in best_coefficients(table, cal).items():
            b, ce = table[size][best][cal], table[size][0.0][cal]
            p = welch_test(b, ce)[1]
            print(f"  {size}: best {100 * b.mean():.2f}, CE {100 * ce.mean():.2f}, Welch p {p:.2f}")
    floor = [x["ece_floor"] for r in main_recs for x in r.rows if x["calibrator"] == "temperature"]
    print(f"ECE noise floor after TS (NLL), {FULL:,} training images: {100 * np.mean(floor):.2f}%")
    with atomic_directory(args.figures) as fig_dir:
        n_seeds = len({r.seed for r in main_recs})
        title = (
            "Best label-smoothing coefficient against the training-set size"
            f" ({WHERE}, {n_seeds} seeds)"
        )
        save_figure(
            best_coefficient_figure(table, CALS, title=title),
            fig_dir / "wang_fig1d_best_coefficient.png",
        )
        done = {r.model for r in main_recs if r.seed == 0}
        shown = {k: NAMES[k] for k in ("ce", "ls_0.05", "ls_0.09", "inverse_focal_2") if k in done}
        title = f"Test reliability before (top) and after TS (bottom), {WHERE}, seed 0"
        fig = reliability_after_ts_figure(main_recs, shown, title=title)
        save_figure(fig, fig_dir / "wang_fig2_reliability_ts.png")
        histories: dict[str, list] = {}
        for r in sorted(main_recs, key=lambda r: r.seed):
            histories.setdefault(r.model, []).append(r.history)
        ls = [k for k in LS if k in histories]
        title = f"Label smoothing, every coefficient: ECE per epoch ({WHERE}, {n_seeds} seeds)"
        fig = optimal_ece_per_epoch_figure(histories, ls, names=NAMES, title=title)
        save_figure(fig, fig_dir / "wang_fig4_ls_optimal_ece.png")
        curves = {k: NAMES[k] for k in ("ce", "inverse_focal_2", "ls_0.05") if k in histories}
        title = f"Inverse focal loss against CE and LS, per epoch ({WHERE}, {n_seeds} seeds)"
        save_figure(
            loss_curves_figure(histories, curves, title=title),
            fig_dir / "wang_fig6a_loss_curves.png",
        )
    for k in curves:
        print_curves(NAMES[k], histories[k])
    for k in ls:
        opt = 100 * np.array([[e["test_optimal_ece"] for e in h] for h in histories[k]])
        std = opt[:, -1].std(ddof=1) if len(opt) > 1 else 0.0
        print(
            f"  {NAMES[k]}: optimal test ECE, epoch 20 {opt[:, -1].mean():.2f} ± {std:.2f}", end=""
        )
        print(f", mean over epochs 5-20 {opt[:, 4:].mean():.2f}")


def print_curves(name: str, histories: list) -> None:
    """The last epoch's training loss, test NLL and accuracy, and the lowest test NLL."""
    last = np.array(
        [[h[-1][k] for k in ("train_loss", "test_nll", "test_accuracy")] for h in histories]
    )
    nlls = [[e["test_nll"] for e in h] for h in histories]
    low, at = np.mean([min(v) for v in nlls]), [1 + int(np.argmin(v)) for v in nlls]
    print(
        f"  {name}: final train loss {last[:, 0].mean():.3f}, test NLL {last[:, 1].mean():.3f}",
        end="",
    )
    print(f" (lowest {low:.3f}, epochs {at}), accuracy {100 * last[:, 2].mean():.1f}%")


if __name__ == "__main__":
    sys.exit(main())
