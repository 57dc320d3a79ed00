"""The Neural Clamping fits behind the paper's Figure 2, Figure 3 and Appendix D (resumable).

    python experiments/neural_clamping/nc_figure_fits.py CONFIG STUDY_OUT MODEL_LABEL FITS_OUT \\
        [--seeds 0,1,2] [--gammas 0,0.5,1,2,3,5] [--random-gamma 1]

For each finished run ``STUDY_OUT/runs/MODEL_LABEL/seed-S`` of a study (its weights and
its data split; train them first with ``calibkit study CONFIG --models MODEL_LABEL``), fits
on the run's calibration part:

- ``nc@g<G>``: Neural Clamping (data-driven delta, joint SGD, exact final T) per gamma G,
  and ``nc_sgd@g<G>``, the same pair where SGD left T (the paper's procedure);
- ``ts_focal@g<G>``: temperature scaling fitted by focal loss (delta = 0) per gamma;
  ``ts_focal@g0`` is TS by NLL;
- ``nc_random@g<G>``: Neural Clamping from a random delta (Gaussian, sd 0.01, seeded by S),
  for ``--random-gamma``, and ``nc_random_sgd@g<G>`` (T where SGD left it);
- ``none``: the model's own logits.

Each fit's calibrated test logits are written to ``FITS_OUT/MODEL_LABEL/seed-S/<fit>.npz``
(with T and the fit's seconds) as soon as it ends; a fit whose file exists is skipped, so
a killed run resumes. ``study/clamping_figures.py`` draws the figures from these files.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.io.atomic import atomic_write_bytes
from calibkit.study import load_study_config
from calibkit.study.definition.prepare import prepare_data
from calibkit.study.run.clamping import load_run_model


def _save(path: Path, **arrays: Any) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def _fits(gammas: list[float], random_gamma: float) -> list[tuple[str, dict[str, Any]]]:
    plan: list[tuple[str, dict[str, Any]]] = []
    for g in gammas:
        plan.append((f"ts_focal@g{g:g}", {"gamma": g, "init": "zero", "train": "temperature"}))
    for g in gammas:
        plan.append((f"nc@g{g:g}", {"gamma": g}))
    plan.append((f"nc_random@g{random_gamma:g}", {"gamma": random_gamma, "init": "random"}))
    return plan


def fit_seed(args: argparse.Namespace, seed: int) -> None:
    cfg = load_study_config(args.config)
    spec = next(m for m in cfg.models if m.label == args.model)
    data = prepare_data(cfg.model_data(spec), seed)
    rdir = Path(args.study_out) / "runs" / spec.label / f"seed-{seed}"
    out = Path(args.fits_out) / spec.label / f"seed-{seed}"
    out.mkdir(parents=True, exist_ok=True)
    model = load_run_model(spec, data, rdir)
    (xc, yc), (xt, yt) = data.splits["cal"], data.splits["test"]
    if not (out / "none.npz").exists():
        with torch.no_grad():
            raw = torch.cat([model(b) for b in xt.split(512)]).double().numpy()
        _save(out / "none.npz", logits=raw, labels=yt.numpy(), temperature=1.0, seconds=0.0)
    sgd = SGDSettings(progress=False, precision=args.precision)
    for name, params in _fits(args.gammas, args.random_gamma):
        path = out / f"{name}.npz"
        if path.exists():
            continue
        start = time.perf_counter()
        nc = NeuralClamping(model, seed=seed, sgd=sgd, **params).fit(xc, yc.numpy())
        seconds = time.perf_counter() - start
        if params.get("train", "joint") == "joint":  # before the fit's file: never missed
            view = nc.ablation("sgd")
            family, _, gamma = name.partition("@")
            sgd_path = out / f"{family}_sgd@{gamma}.npz"
            _save(sgd_path, logits=view.logits(xt), temperature=view.temperature_, seconds=0.0)
        _save(path, logits=nc.logits(xt), temperature=nc.temperature_, seconds=seconds)
        print(
            f"{spec.label} seed {seed} {name}: T {nc.temperature_:.3f}, {seconds:.1f} s", flush=True
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("study_out")
    parser.add_argument("model")
    parser.add_argument("fits_out")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--gammas", default="0,0.5,1,2,3,5")
    parser.add_argument("--random-gamma", type=float, default=1.0)
    parser.add_argument("--precision", default="auto")
    args = parser.parse_args()
    args.gammas = [float(g) for g in args.gammas.split(",")]
    for seed in (int(s) for s in args.seeds.split(",")):
        fit_seed(args, seed)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
