"""Neural Clamping's Figure 2, Figure 3 and Appendix D from the fits of nc_figure_fits.py.

    python experiments/neural_clamping/nc_figures.py FITS_OUT/MODEL_LABEL FIGURES SLUG NAME

Writes ``nc_ece_vs_gamma_<SLUG>.png``, ``nc_init_<SLUG>.png`` and ``nc_bins_<SLUG>.png``
to ``FIGURES`` and prints the numbers quoted in
experiments/neural_clamping/README.md (test ECE in percent, mean ± std over seeds; Welch and paired
t-tests where two fits are compared).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import stats

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments.neural_clamping.clamping_figures import (
    BIN_COUNTS,
    load_fits,
    noise_floor,
    write_clamping_figures,
)


def _ms(v: np.ndarray) -> str:
    return f"{100 * v.mean():.2f} ± {100 * v.std(ddof=1) if v.size > 1 else 0:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fits", type=Path)
    parser.add_argument("figures", type=Path)
    parser.add_argument("slug", help="the figures' file name suffix, e.g. birdcat_lenet5")
    parser.add_argument("name", help="the model's name in the titles")
    args = parser.parse_args()
    fits = load_fits(args.fits)
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
    for path in write_clamping_figures(fits, args.figures, args.slug, args.name).values():
        print("wrote", path)


if __name__ == "__main__":
    main()
