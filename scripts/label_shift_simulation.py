"""Simulated label shift on the shared prediction files: the README's numbers.

Each file is split in half (seeded, stratified): the first half is the labelled source
(BCTS or TS fitted on it, EM and BBSE adapters), the second half is resampled to priors
drawn from a symmetric Dirichlet (seeded). Prints, per file, the mean NLL of the
unadapted, EM-adapted, BBSE-adapted and oracle posteriors, how often EM beat the
unadapted NLL, the mean accuracy change, and the priors' mean squared errors.

    PYTHONPATH=src python scripts/label_shift_simulation.py [--alpha 1.0] [--shifts 20]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from calibkit.core.splits import split_outputs
from calibkit.io.predictions import load_predictions
from calibkit.workflows.label_shift import simulate_label_shift

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "predictions"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration")
    ap.add_argument("--shifts", type=int, default=20)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--method", default="bcts", help="calibrator (or none)")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = [Path(f) for f in args.files] or sorted(DATA.glob("*.npz"))
    print(
        "| file | unadapted NLL | EM NLL | BBSE NLL | oracle NLL | EM < unadapted | "
        "accuracy change EM (pts) | prior MSE EM | prior MSE BBSE |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for f in files:
        cal, test = split_outputs(load_predictions(f, kind="probs"), 0.5, 0)
        calibrator = None if args.method == "none" else args.method
        rows = simulate_label_shift(
            cal,
            test,
            n_shifts=args.shifts,
            concentration=args.alpha,
            n_rows=args.rows,
            calibrator=calibrator,
            seed=0,
        )

        def m(key: str, rows: list[dict[str, object]] = rows) -> float:
            return float(np.mean([float(r[key]) for r in rows]))  # type: ignore[arg-type]

        wins = sum(r["em_nll"] < r["unadapted_nll"] for r in rows)
        print(
            f"| {f.stem} | {m('unadapted_nll'):.4f} | {m('em_nll'):.4f} | {m('bbse_nll'):.4f} | "
            f"{m('oracle_nll'):.4f} | {wins}/{len(rows)} | "
            f"{100 * (m('em_accuracy') - m('unadapted_accuracy')):+.2f} | "
            f"{m('em_mse'):.2e} | {m('bbse_mse'):.2e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
