"""Neural Clamping's Figure 2, Figure 3 and Appendix D from the fits of nc_figure_fits.py.

    python experiments/neural_clamping/nc_figures.py FITS_OUT/MODEL_LABEL FIGURES SLUG NAME

Writes ``nc_ece_vs_gamma_<SLUG>.png``, ``nc_init_<SLUG>.png`` and ``nc_bins_<SLUG>.png``
to ``FIGURES`` and prints the numbers quoted in
experiments/neural_clamping/README.md (test ECE in percent, mean ± std over seeds; Welch and paired
t-tests where two fits are compared).

``FIGURES`` is written whole (:func:`calibkit.io.atomic.atomic_directory`): a new or empty
folder, or one this script wrote and nobody changed since. A folder holding anything else
(the user's files; the committed ``results/<dataset>/``, which hold more than these figures)
is refused before any work, and so is a missing input, in one line (exit status 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.cli.common import renamed
from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_directory, check_replaceable_folder
from experiments._driver import driver_parser, input_folder, run_driver
from experiments.neural_clamping.clamping_figures import (
    BIN_COUNTS,
    load_fits,
    noise_floor,
    write_clamping_figures,
)


def _ms(v: np.ndarray) -> str:
    return f"{100 * v.mean():.2f} ± {100 * v.std(ddof=1) if v.size > 1 else 0:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; its exit status (2: bad input, nothing written)."""
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("fits", type=Path, metavar="FITS", help="FITS_OUT/MODEL_LABEL")
    parser.add_argument("figures", type=Path, metavar="FIGURES")
    parser.add_argument("slug", help="the figures' file name suffix, e.g. birdcat_lenet5")
    parser.add_argument("name", help="the model's name in the titles")
    return run_driver(parser, figures, argv)


def figures(args: argparse.Namespace) -> None:
    """Print the numbers of the fits ``args.fits`` and write their figures."""
    check_replaceable_folder(args.figures, "FIGURES")
    try:
        fits = load_fits(input_folder(args.fits, "FITS"))
    except InputError as exc:
        raise renamed(exc, "FITS") from None
    print(f"seeds {fits.seeds}; ECE noise floor after TS {100 * noise_floor(fits):.2f}%")
    for fit in sorted(fits.probs):
        t = np.array(list(fits.temperature[fit].values()))
        print(f"  {fit:18s} n={t.size} ECE {_ms(fits.ece(fit))}  T {t.min():.2f}-{t.max():.2f}")
    for family in ("nc", "nc_sgd", "ts_focal"):
        print(family, "gammas", fits.gammas(family))
    for data, rand in (("nc@g1", "nc_random@g1"), ("nc_sgd@g1", "nc_random_sgd@g1")):
        seeds = fits.common_seeds([data, rand])
        a, b = fits.ece(data, 15, seeds), fits.ece(rand, 15, seeds)
        if a.size > 1:
            p = stats.ttest_rel(a, b).pvalue
            print(f"{data} minus {rand}: {100 * (a - b).mean():+.2f} points, paired p {p:.3f}")
    for b in BIN_COUNTS:
        print(f"  noise floor, {b} bins: {100 * noise_floor(fits, n_bins=b):.2f}")
    for fit in ("none", "ts_focal@g0", "nc@g0", "nc@g1", "nc_sgd@g1"):
        row = [f"{b}: {_ms(fits.ece(fit, b))}" for b in BIN_COUNTS]
        print(f"  bins {fit}: " + "; ".join(row))
    with atomic_directory(args.figures) as tmp:
        written = write_clamping_figures(fits, tmp, args.slug, args.name).values()
    for path in written:
        print("wrote", args.figures / path.name)


if __name__ == "__main__":
    sys.exit(main())
