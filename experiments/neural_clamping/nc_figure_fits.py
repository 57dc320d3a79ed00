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
``FITS_OUT`` is a new or empty folder, or one this script wrote (and nobody changed since:
its manifest lists each file's sha256, :class:`experiments._driver.ResultsFolder`); a folder
holding anything else, a missing input or a bad option is refused before any work, in one
line.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.core.errors import InputError
from calibkit.study import load_study_config
from calibkit.study.definition.prepare import prepare_data
from calibkit.study.run.clamping import load_run_model
from experiments._driver import (
    ResultsFolder,
    driver_parser,
    input_file,
    input_folder,
    model_spec,
    run_driver,
)


def _save(folder: ResultsFolder, path: Path, **arrays: Any) -> None:
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    folder.write_bytes(path, buf.getvalue())


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
    spec = model_spec(cfg, args.model, "MODEL_LABEL")
    data = prepare_data(cfg.model_data(spec), seed)
    rdir = Path(args.study_out) / "runs" / spec.label / f"seed-{seed}"
    out = args.folder.path / spec.label / f"seed-{seed}"
    model = load_run_model(spec, data, rdir)
    (xc, yc), (xt, yt) = data.splits["cal"], data.splits["test"]
    if not (out / "none.npz").exists():
        with torch.no_grad():
            raw = torch.cat([model(b) for b in xt.split(512)]).double().numpy()
        _save(
            args.folder,
            out / "none.npz",
            logits=raw,
            labels=yt.numpy(),
            temperature=1.0,
            seconds=0.0,
        )
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
            _save(
                args.folder,
                sgd_path,
                logits=view.logits(xt),
                temperature=view.temperature_,
                seconds=0.0,
            )
        _save(args.folder, path, logits=nc.logits(xt), temperature=nc.temperature_, seconds=seconds)
        print(
            f"{spec.label} seed {seed} {name}: T {nc.temperature_:.3f}, {seconds:.1f} s", flush=True
        )


def _numbers(text: str, kind: type, option: str) -> list[Any]:
    """A comma-separated option as numbers of ``kind``, or an InputError naming it."""
    try:
        return [kind(v) for v in text.split(",")]
    except ValueError:
        raise InputError(option, f"comma-separated {kind.__name__}s", repr(text)) from None


def check(args: argparse.Namespace) -> None:
    """Refuse, before any work, a folder ``FITS_OUT`` holding what this script did not
    write, a missing input and a bad option (an InputError naming it)."""
    args.folder = ResultsFolder(args.fits_out, "FITS_OUT")
    cfg = load_study_config(input_file(args.config, "CONFIG"))
    spec = model_spec(cfg, args.model, "MODEL_LABEL")
    args.seeds = _numbers(args.seeds, int, "--seeds")
    args.gammas = _numbers(args.gammas, float, "--gammas")
    for seed in args.seeds:
        input_folder(Path(args.study_out) / "runs" / spec.label / f"seed-{seed}", "STUDY_OUT")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; its exit status (2: bad input, nothing written)."""
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("config", metavar="CONFIG")
    parser.add_argument("study_out", metavar="STUDY_OUT")
    parser.add_argument("model", metavar="MODEL_LABEL")
    parser.add_argument("fits_out", metavar="FITS_OUT")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--gammas", default="0,0.5,1,2,3,5")
    parser.add_argument("--random-gamma", type=float, default=1.0)
    parser.add_argument("--precision", default="auto")

    def work(args: argparse.Namespace) -> None:
        check(args)
        torch.set_num_threads(1)
        for seed in args.seeds:
            fit_seed(args, seed)

    return run_driver(parser, work, argv)


if __name__ == "__main__":
    sys.exit(main())
