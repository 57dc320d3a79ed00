"""Does Neural Clamping's learnt delta help beyond the calibration set? A diagnostic.

    python experiments/neural_clamping/nc_objective_check.py CONFIG OUT MODEL_LABEL SEED [--gamma G]

For one finished run of a Neural Clamping study (its ``OUT/runs/MODEL_LABEL/seed-SEED``
weights), fits NC with the study's data split and prints the calibration objective
(focal loss + lambda ||delta||^2, each at its exact best temperature) at the learnt delta,
at the data-driven initial delta and at delta = 0 (temperature scaling under the same
loss). Then it prints the test ECE and NLL of the three. A delta that lowers the
objective but raises the test NLL overfits the calibration set. It writes nothing; a
missing input is refused in one line (exit status 2).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.objective import fit_focal_temperature, focal_loss_np
from calibkit.metrics import ece, nll
from calibkit.study import load_study_config
from calibkit.study.definition.prepare import prepare_data
from calibkit.study.run.clamping import load_run_model
from experiments._driver import driver_parser, input_file, input_folder, model_spec, run_driver


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; its exit status (2: bad input)."""
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("config", metavar="CONFIG")
    parser.add_argument("out", metavar="OUT", help="the study's --out folder")
    parser.add_argument("model", metavar="MODEL_LABEL")
    parser.add_argument("seed", type=int, metavar="SEED")
    parser.add_argument("--gamma", type=float, default=0.0)
    parser.add_argument("--precision", default="bfloat16")
    return run_driver(parser, check_objective, argv)


def check_objective(args: argparse.Namespace) -> None:
    """Print the objective, test ECE and NLL of the three fits of ``args``' run."""
    cfg = load_study_config(input_file(args.config, "CONFIG"))
    spec = model_spec(cfg, args.model, "MODEL_LABEL")
    rdir = input_folder(Path(args.out) / "runs" / spec.label / f"seed-{args.seed}", "OUT")
    data = prepare_data(cfg.model_data(spec), args.seed)
    model = load_run_model(spec, data, rdir)
    (xc, yc), (xt, yt) = data.splits["cal"], data.splits["test"]
    y, y_test, g = yc.numpy(), yt.numpy(), args.gamma
    kw = {"gamma": g, "seed": args.seed, "sgd": SGDSettings(progress=False)}
    sgd = SGDSettings(precision=args.precision, progress=False)
    fitted = {
        "learnt delta": NeuralClamping(model, **{**kw, "sgd": sgd}).fit(xc, y),
        "initial delta": NeuralClamping.fast(model, **kw).fit(xc, y),
        "delta = 0": NeuralClamping.focal_temperature_scaling(model, **kw).fit(xc, y),
    }
    lam = fitted["learnt delta"].lam_
    for name, nc in fitted.items():
        z = nc.ablation("delta_only").logits(xc)
        log_t = fit_focal_temperature(z, y, g)
        penalty = lam * float(nc.delta_.double().pow(2).sum())
        objective = focal_loss_np(z / math.exp(log_t), y, g) + penalty
        p = nc.predict_proba(xt)
        print(
            f"{name:14s} objective {objective:.5f} (penalty {penalty:.5f}, T {nc.temperature_:.3f})"
            f"  test ECE {100 * ece(y_test, p):.2f}%  test NLL {nll(y_test, p):.4f}"
        )
    print(f"gamma {g:g}, lambda {lam:.4g}; {len(y)} calibration / {len(y_test)} test images")


if __name__ == "__main__":
    sys.exit(main())
