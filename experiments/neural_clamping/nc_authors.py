"""Neural Clamping by calibkit and by its authors' code (NCToolkit), on identical inputs.

    python experiments/neural_clamping/nc_authors.py --authors-code PATH/TO/NCToolkit \\
        [--model resnet20] [--seeds 0,1,2] [--epochs 10] [--lr 0.001] [--batch-size 512] \\
        [--out runs/nc_authors]

Issue #33. For each seed, the pretrained model of ``--config``'s ``--model`` (by default
the CIFAR-10 ResNets of ``../shared/data/pretrained`` on a seeded, stratified 5,000 /
5,000 split of the CIFAR-10 JPEG test images: calibkit's own loader and split, as the
study of ``configs/neural_clamping_cifar10.toml`` draws them) is calibrated by TS, NC (CE)
and NC (FL), each by calibkit and by the authors' code, with the same calibration images,
lr, batch size, epochs, gamma and rule for lambda. Per run (a *unit*: model, seed,
method, code, variant) it writes T, ||delta||, the test ECE and NLL with bootstrap
intervals, and T and the test ECE after every epoch (read by an optimizer-step hook, so
neither code is changed or run one epoch at a time: their ``train_NC`` makes a new
optimizer per call). The authors' code is imported from ``--authors-code`` with two shims
(``authors_code.py``: a stand-in for torchvision, ``.cuda()`` as a no-op with ``--device
cpu``; with ``--device cuda`` everything runs on the GPU and their ``.cuda()`` is real).

How each unit is fitted:

- TS, calibkit: ``TemperatureScaling`` (the exact NLL minimum) on the cached logits.
- TS, authors: their ``NCWrapper.train_NC`` (cross-entropy, SGD on T) on the cached
  logits, with an identity "model" and its perturbation pinned at 0: their SGD on T alone.
- NC (CE) / NC (FL), calibkit: ``NeuralClamping`` (gamma 0 / ``--gamma``, float32, T
  refined exactly after SGD; ``T_sgd`` is where SGD left it, the curve's last point).
- NC (CE) / NC (FL), authors: ``NCWrapper.train_NC`` (``focal_loss`` for FL), T where
  their SGD leaves it, the penalty ``lambda ||delta||`` (not squared).
- ``--temperature-only``: NC (CE) / NC (FL) with delta held at 0 (its gradient zeroed
  before every optimizer step), on the cached logits: each code's own SGD on T alone
  (seconds for 100 epochs), the completion of a curve where delta is shown inert.

Variant switches (issue #33, item 3): ``--lr`` and ``--batch-size`` (c); ``--delta-start``
and ``--lam`` (d: ``own`` is each code's own start, calibkit's data-driven delta of
Theorem 3.2 and the authors' random one, ``--init-scale``; ``--lam 0`` drops the penalty);
``--calibration train-augmented`` (b: calibration on as many training images, seeded, with
the authors' crop/flip/Cutout: one fixed draw for calibkit, the TS fits and the lambda
rule; a new draw per epoch for the authors' NC loader, as their own loader does). Each
variant has its own folder, so variants never overwrite each other.

Output: ``OUT/<model>/seed-<S>/logits*.npz`` (the model's calibration and test logits,
computed once) and ``OUT/<model>/seed-<S>/<variant>/<method>-<code>.json`` per unit,
written atomically when the unit ends; a rerun skips the units whose file exists. ``--out``
is a new or empty folder, or one this driver wrote (and nobody changed since: its manifest
lists each file's sha256, :class:`experiments._driver.ResultsFolder`); a folder holding
anything else is refused before any work, as is any bad option, in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

if __package__ in (None, ""):  # run as a file: make ``experiments`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit import Resampling
from calibkit.calibrators import TemperatureScaling
from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.model.clamping.init import initial_delta
from calibkit.calibrators.model.clamping.objective import default_lam
from calibkit.calibrators.model.clamping.passes import fused_copy
from calibkit.core.errors import InputError
from calibkit.metrics import ece, nll
from calibkit.metrics.bootstrap import bootstrap_ci
from experiments._driver import ResultsFolder, run_driver
from experiments.neural_clamping.authors_code import AuthorsCode, cpu_cuda, load_authors_code
from experiments.neural_clamping.nc_inputs import (
    Inputs,
    authors_loader,
    cached_logits,
    load_inputs,
    logits_of,
)

PROG = "nc_authors.py"
HERE = Path(__file__).resolve().parent
DEFAULT_CONFIG = HERE / "configs" / "neural_clamping_cifar10.toml"
#: method -> (label, gamma; None: the FL gamma of ``--gamma``)
METHODS: dict[str, tuple[str, float | None]] = {
    "ts": ("TS", 0.0),
    "nc_ce": ("NC (CE)", 0.0),
    "nc_fl": ("NC (FL)", None),
}
CODES = ("calibkit", "authors")
STARTS = ("own", "data", "random", "zero")
CALIBRATIONS = ("heldout", "train", "train-augmented")


# ---------------------------------------------------------------- arguments


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--authors-code", required=True, help="a clone of NCToolkit")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="study config (data, model)")
    parser.add_argument("--model", default="resnet20", help="a model label of --config")
    parser.add_argument("--seeds", default="0", help="comma-separated split seeds")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--gamma", type=float, default=1.0, help="the focal gamma of NC (FL)")
    parser.add_argument("--methods", default="ts,nc_ce,nc_fl")
    parser.add_argument("--codes", default="calibkit,authors")
    parser.add_argument("--delta-start", default="own", help=f"one of {', '.join(STARTS)}")
    parser.add_argument("--init-scale", type=float, default=1e-3, help="sd of a random start")
    parser.add_argument("--lam", default="auto", help="'auto' (0.1 x initial loss) or a number")
    parser.add_argument("--calibration", default="heldout", help=" or ".join(CALIBRATIONS))
    parser.add_argument(
        "--temperature-only",
        action="store_true",
        help="NC with delta held at 0: each code's own SGD on T alone, on the cached logits",
    )
    parser.add_argument("--images", type=int, default=None, help="keep N cal and N test images")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument(
        "--device", default="cpu", help="cpu, or cuda[:N]: both codes and the model run there"
    )
    parser.add_argument("--out", default="runs/nc_authors")
    return parser


def _names(value: str, allowed: Sequence[str], option: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if not names or bad:
        raise InputError(option, f"names among {', '.join(allowed)}", repr(value))
    return names


def check_args(args: argparse.Namespace) -> None:
    """Refuse a bad option with an InputError naming it (before anything is written)."""
    try:
        args.seed_list = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise InputError("--seeds", "comma-separated integers", repr(args.seeds)) from None
    for option, value in (
        ("--epochs", args.epochs),
        ("--batch-size", args.batch_size),
        ("--n-boot", args.n_boot),
        ("--images", args.images or 1),
    ):
        if value < 1:
            raise InputError(option, "an integer >= 1", str(value))
    for option, value in (("--lr", args.lr), ("--init-scale", args.init_scale + 1e-300)):
        if not (math.isfinite(value) and value > 0):
            raise InputError(option, "a finite number > 0", str(value))
    if not (math.isfinite(args.gamma) and args.gamma >= 0):
        raise InputError("--gamma", "a finite number >= 0", str(args.gamma))
    args.method_list = _names(args.methods, list(METHODS), "--methods")
    args.code_list = _names(args.codes, CODES, "--codes")
    if args.delta_start not in STARTS:
        raise InputError("--delta-start", f"one of {', '.join(STARTS)}", repr(args.delta_start))
    if args.lam != "auto":
        try:
            lam = float(args.lam)
        except ValueError:
            raise InputError("--lam", "'auto' or a number >= 0", repr(args.lam)) from None
        if not (math.isfinite(lam) and lam >= 0):
            raise InputError("--lam", "'auto' or a number >= 0", repr(args.lam))
    if args.calibration not in CALIBRATIONS:
        raise InputError("--calibration", " or ".join(CALIBRATIONS), repr(args.calibration))
    args.torch_device = check_device(args.device)
    args.folder = ResultsFolder(args.out, "--out")


def check_device(device: str) -> torch.device:
    """``--device`` as a torch device: the CPU, or a CUDA device this machine has."""
    expected = "cpu, or cuda / cuda:N on a machine with CUDA"
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise InputError("--device", expected, repr(device)) from None
    if dev.type == "cpu":
        return dev
    if dev.type != "cuda":
        raise InputError("--device", expected, repr(device))
    if not torch.cuda.is_available():
        raise InputError("--device", expected, f"{device!r} (torch sees no CUDA device here)")
    if (dev.index or 0) >= torch.cuda.device_count():
        count = torch.cuda.device_count()
        raise InputError("--device", expected, f"{device!r} (this machine has {count})")
    return dev


def variant_name(args: argparse.Namespace) -> str:
    """The folder of a variant: every setting that changes a fit."""
    start = args.delta_start + (f"{args.init_scale:g}" if args.delta_start == "own" else "")
    return (
        f"e{args.epochs}-lr{args.lr:g}-b{args.batch_size}-g{args.gamma:g}-start_{start}"
        f"-lam_{args.lam}-cal_{args.calibration}"
        + (f"-n{args.images}" if args.images else "")
        + ("-tonly" if args.temperature_only else "")
    )


# ---------------------------------------------------------------- inputs


def check_config(config: str, label: str) -> None:
    """Refuse a config or model label that does not exist (cheap: no data is loaded)."""
    from calibkit.study import load_study_config

    if not Path(config).is_file():
        raise InputError("--config", "a study config file", f"'{config}' (no such file)")
    cfg = load_study_config(config)
    labels = [m.label for m in cfg.models]
    if label not in labels:
        raise InputError("--model", f"a model of --config: {', '.join(labels)}", repr(label))


def logits_name(args: argparse.Namespace) -> str:
    """The file of a seed's cached logits: one per set of calibration and test images."""
    return logits_file(args.images, args.calibration)


def logits_file(images: int | None, calibration: str) -> str:
    """The cached logits' file name for ``--images`` and ``--calibration`` (the one place
    it is spelled; ``nc_authors_report.py`` asks here)."""
    part = f"-n{images}" if images else ""
    cal = "" if calibration == "heldout" else f"-{calibration}"
    return f"logits{part}{cal}.npz"


# ---------------------------------------------------------------- per-epoch observation


@contextlib.contextmanager
def epoch_observer(
    steps_per_epoch: int,
    read: Callable[[torch.optim.Optimizer], tuple[Tensor, float]],
    on_epoch: Callable[[int, Tensor, float], None],
) -> Iterator[None]:
    """Call ``on_epoch(epoch, delta, T)`` at the start (epoch 0) and after each epoch of
    the first optimizer that steps while inside (global optimizer-step hooks: the fitting
    code is not changed). ``read`` gives ``(delta, T)`` from that optimizer."""
    state: dict[str, Any] = {"opt": None, "steps": 0}

    def pre(opt: torch.optim.Optimizer, *_: Any) -> None:
        if state["opt"] is None:
            state["opt"] = opt
            on_epoch(0, *read(opt))

    def post(opt: torch.optim.Optimizer, *_: Any) -> None:
        if opt is state["opt"]:
            state["steps"] += 1
            if state["steps"] % steps_per_epoch == 0:
                on_epoch(state["steps"] // steps_per_epoch, *read(opt))

    handles = [
        register_optimizer_step_pre_hook(pre),
        register_optimizer_step_post_hook(post),
    ]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


class Curve:
    """T and the test ECE / NLL after each epoch; a progress line per epoch."""

    def __init__(self, inputs: Inputs, epochs: int, label: str, identity: bool = False) -> None:
        self.inputs, self.epochs, self.label, self.identity = inputs, epochs, label, identity
        self.points: list[dict[str, float]] = []
        self.start = time.perf_counter()

    @torch.no_grad()
    def __call__(self, epoch: int, delta: Tensor, temperature: float) -> None:
        x, y = self.inputs.x_test, self.inputs.y_test.numpy()
        z = (x + delta.detach().cpu()) if self.identity else logits_of(self.inputs.model, x, delta)
        z = np.asarray(z, dtype=np.float64) / temperature
        probs = _softmax(z)
        self.points.append(
            {
                "epoch": epoch,
                "T": temperature,
                "delta_norm": float(delta.detach().norm()),
                "test_ece": ece(y, probs),
                "test_nll": nll(y, probs),
            }
        )
        if epoch:
            spent = time.perf_counter() - self.start
            left = spent / epoch * (self.epochs - epoch)
            print(
                f"    {self.label}: epoch {epoch}/{self.epochs}, T {temperature:.3f}, "
                f"test ECE {100 * self.points[-1]['test_ece']:.2f}%, {_duration(left)} left",
                file=sys.stderr,
                flush=True,
            )


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


# ---------------------------------------------------------------- the fits


@dataclass
class Fit:
    """What a unit's fit gives: T, delta, the calibrated test logits, extra fields."""

    temperature: float
    delta: Tensor
    test_logits: np.ndarray
    extra: dict[str, Any]


def _lam(args: argparse.Namespace) -> float | None:
    return None if args.lam == "auto" else float(args.lam)


def fit_calibkit(
    method: str,
    gamma: float,
    args: argparse.Namespace,
    seed: int,
    inputs: Inputs,
    logits: dict[str, np.ndarray],
    curve: Curve,
) -> Fit:
    if method == "ts":
        ts = TemperatureScaling().fit(logits["cal_logits"], logits["cal_labels"])
        t = float(ts.temperature_)
        return Fit(t, torch.zeros(()), logits["test_logits"] / t, {})
    on_logits = args.temperature_only
    init = {"own": "data", "data": "data", "random": "random", "zero": "zero"}[args.delta_start]
    sgd = SGDSettings(
        lr=args.lr,
        batch_size=args.batch_size,
        epochs=args.epochs,
        precision="float32",
        progress=False,
        device=args.torch_device,
    )
    if on_logits:  # its SGD on log T alone: the cached logits, delta pinned at 0
        model: nn.Module = nn.Identity()
        x_cal = torch.from_numpy(logits["cal_logits"]).float()
        nc = NeuralClamping(model, gamma=gamma, lam=0.0, init="zero", seed=seed, sgd=sgd)
    else:
        x_cal = inputs.x_cal
        nc = NeuralClamping(
            inputs.model, gamma=gamma, lam=_lam(args), init=init, seed=seed, sgd=sgd
        )
    steps = math.ceil(len(inputs.y_cal) / args.batch_size)

    def read(opt: torch.optim.Optimizer) -> tuple[Tensor, float]:
        delta, log_t = opt.param_groups[0]["params"][:2]
        return delta, math.exp(float(log_t.detach()))

    pin = delta_pinned() if on_logits else contextlib.nullcontext()
    with epoch_observer(steps, read, curve), pin:
        nc.fit(x_cal, inputs.y_cal.numpy())
    extra = {"lam": nc.lam_, "T_sgd": math.exp(nc.sgd_log_temperature_), "refined": True}
    if on_logits:
        return Fit(nc.temperature_, nc.delta_, logits["test_logits"] / nc.temperature_, extra)
    return Fit(nc.temperature_, nc.delta_, nc.logits(inputs.x_test), extra)


@contextlib.contextmanager
def delta_pinned() -> Iterator[None]:
    """Zero the gradient of the first parameter (``delta``) of every optimizer step taken
    inside: with SGD (momentum, no weight decay) ``delta`` stays where it started."""

    def pre(opt: torch.optim.Optimizer, *_: Any) -> None:
        delta = opt.param_groups[0]["params"][0]
        if delta.grad is not None:
            delta.grad.zero_()

    handle = register_optimizer_step_pre_hook(pre)
    try:
        yield
    finally:
        handle.remove()


def fit_authors(
    code: AuthorsCode,
    method: str,
    gamma: float,
    args: argparse.Namespace,
    seed: int,
    inputs: Inputs,
    logits: dict[str, np.ndarray],
    curve: Curve,
) -> Fit:
    ts = method == "ts" or args.temperature_only
    k = inputs.n_classes
    if ts:  # their SGD on T alone: the cached logits through an identity model, delta pinned at 0
        model: nn.Module = nn.Identity()
        x_cal = torch.from_numpy(logits["cal_logits"]).float()
        shape: tuple[int, ...] = (k,)
    else:
        model, x_cal, shape = inputs.model, inputs.x_cal, tuple(inputs.x_cal.shape[1:])
    log = io.StringIO()
    device: torch.device = args.torch_device
    with cpu_cuda(force=device.type == "cpu"), contextlib.redirect_stdout(log):
        torch.manual_seed(seed)
        nc = code.NCWrapper(
            model=model,
            num_classes=k,
            lambda_0=1,
            lambda_1=0.0,
            image_size=shape,
            init_scale=0.0 if ts else args.init_scale,
            init_temp=1,
            device_ids=[],
        )
        start = "zero" if ts else args.delta_start
        if start in ("data", "zero", "random") and not ts:
            # calibkit's start, computed as calibkit's fit computes it (the fused model,
            # batches of --batch-size): the identical tensor
            delta0 = initial_delta(
                start,
                fused_copy(inputs.model),
                inputs.x_cal,
                input_range=None,
                seed=seed,
                batch_size=args.batch_size,
                device=device,
            )
            nc.perturbation.data.copy_(delta0)
        if ts:
            nc.perturbation.data.zero_()
            nc.perturbation.register_hook(torch.zeros_like)
            lam = 0.0
        else:
            z0 = logits_of(inputs.model, inputs.x_cal, nc.perturbation)
            lam = (
                default_lam(z0, inputs.y_cal.numpy(), gamma)
                if args.lam == "auto"
                else float(args.lam)
            )
        nc.lambda_1 = lam
        augment = None if ts else inputs.augment(seed + 1)  # re-drawn per epoch, seeded
        if augment is not None and inputs.x_cal_raw is not None:
            x_cal = inputs.x_cal_raw
        loader = authors_loader(x_cal, inputs.y_cal, args.batch_size, seed, augment)

        def read(opt: torch.optim.Optimizer) -> tuple[Tensor, float]:
            delta, temp = opt.param_groups[0]["params"][:2]
            return delta, float(temp.detach())

        with epoch_observer(len(loader), read, curve):
            history = nc.train_NC(
                val_loader=loader,
                epoch=args.epochs,
                lr=args.lr,
                momentum=0.9,
                verbose=True,
                focal_loss=gamma > 0,
                gamma=gamma,
            )
        t = float(nc.temperature.detach())
        delta = nc.perturbation.detach().clone()
        with torch.no_grad():
            if ts:
                z = nc(torch.from_numpy(logits["test_logits"]).float().to(device))
            else:
                z = torch.cat([nc(b.to(device)) for b in inputs.x_test.split(500)])
    extra = {
        "lam": lam,
        "T_sgd": t,
        "refined": False,
        "penalty": "lambda ||delta||",
        "authors_history": {k2: [float(v) for v in vs] for k2, vs in history.items()},
        "authors_log_tail": log.getvalue()[-2000:],
    }
    return Fit(t, delta, z.double().cpu().numpy(), extra)


def _interval(
    metric: Callable[..., float], y: np.ndarray, p: np.ndarray, n: int, seed: int
) -> dict[str, float]:
    ci = bootstrap_ci(metric, y, probs=p, resampling=Resampling(n_boot=n, seed=seed))
    return {"estimate": ci.estimate, "low": ci.low, "high": ci.high}


def run_unit(
    args: argparse.Namespace,
    code_obj: AuthorsCode | None,
    seed: int,
    method: str,
    code: str,
    inputs: Inputs,
    logits: dict[str, np.ndarray],
) -> dict[str, Any]:
    label, gamma = METHODS[method]
    gamma = args.gamma if gamma is None else gamma
    epochs = 0 if (method == "ts" and code == "calibkit") else args.epochs
    on_logits = method == "ts" or args.temperature_only
    curve = Curve(inputs, epochs, f"{label} {code}", identity=on_logits)
    if on_logits:
        curve.inputs = Inputs(
            nn.Identity(),
            inputs.x_cal,
            inputs.y_cal,
            torch.from_numpy(logits["test_logits"]),
            inputs.y_test,
        )
    start = time.perf_counter()
    if code == "calibkit":
        fit = fit_calibkit(method, gamma, args, seed, inputs, logits, curve)
    else:
        assert code_obj is not None
        fit = fit_authors(code_obj, method, gamma, args, seed, inputs, logits, curve)
    seconds = time.perf_counter() - start
    y = logits["test_labels"]
    probs = _softmax(np.asarray(fit.test_logits, dtype=np.float64))
    return {
        "model": args.model,
        "seed": seed,
        "method": label,
        "method_key": method,
        "code": code,
        "variant": variant_name(args),
        "gamma": gamma,
        "settings": {
            "config": str(Path(args.config).resolve()),
            "epochs": args.epochs,
            "lr": args.lr,
            "batch_size": args.batch_size,
            "momentum": 0.9,
            "delta_start": args.delta_start,
            "init_scale": args.init_scale,
            "lam": args.lam,
            "calibration": args.calibration,
            "images": args.images,
            "temperature_only": args.temperature_only,
            "device": str(args.torch_device),
            "augmentation": (
                None
                if args.calibration in ("heldout", "train")
                else "one fixed draw"
                if code == "calibkit" or on_logits
                else "per epoch"
            ),
            "cal_images": len(inputs.y_cal),
            "test_images": len(y),
        },
        "T": fit.temperature,
        "delta_norm": float(fit.delta.norm()),
        "test": {
            "accuracy": float((probs.argmax(1) == y).mean()),
            "ece": _interval(ece, y, probs, args.n_boot, seed),
            "nll": _interval(nll, y, probs, args.n_boot, seed),
        },
        "curve": curve.points,
        "seconds": seconds,
        **fit.extra,
    }


# ---------------------------------------------------------------- the run


def unit_path(args: argparse.Namespace, seed: int, method: str, code: str) -> Path:
    """Where the unit (``args.model``, seed, method, code, variant) is written."""
    folder = Path(args.out) / str(args.model) / f"seed-{seed}" / variant_name(args)
    path: Path = folder / f"{method}-{code}.json"
    return path


def check_resume(args: argparse.Namespace) -> None:
    """Refuse to resume units that another ``--config`` made (the same model label)."""
    config = str(Path(args.config).resolve())
    for seed in args.seed_list:
        for method in args.method_list:
            for code in args.code_list:
                path = unit_path(args, seed, method, code)
                if not path.is_file():
                    continue
                try:
                    made = json.loads(path.read_text(encoding="utf-8"))["settings"]["config"]
                except (ValueError, KeyError, TypeError):
                    raise InputError("--out", "units this driver wrote", f"'{path}'") from None
                if made != config:
                    raise InputError(
                        "--out",
                        f"units made with --config {config} (or another --out)",
                        f"'{path}', made with {made}",
                    )


def _kind(args: argparse.Namespace, method: str, code: str) -> tuple[bool, str]:
    """Units of one kind take about the same time: on the cached logits (TS, or
    ``--temperature-only``: seconds) or through the model (minutes), by each code."""
    return (method == "ts" or args.temperature_only, code)


def time_left(
    args: argparse.Namespace, seconds: dict[tuple[bool, str], list[float]], rest: list[Any]
) -> str:
    """The time the ``rest`` of the units will take, from the fits of their own kind; said
    to be unknown while a kind left has not been timed yet (never a guess from another)."""
    kinds = [_kind(args, m, c) for _, m, c in rest]
    if any(k not in seconds for k in kinds):
        return "time left known once a fit of each kind has run"
    total = sum(sum(seconds[k]) / len(seconds[k]) for k in kinds)
    return f"about {_duration(total)} left"


def run(args: argparse.Namespace, code_obj: AuthorsCode | None) -> Path:
    out = Path(args.out)
    units = [(s, m, c) for s in args.seed_list for m in args.method_list for c in args.code_list]
    variant = variant_name(args)
    seconds: dict[tuple[bool, str], list[float]] = {}
    for i, (seed, method, code) in enumerate(units, start=1):
        folder = out / args.model / f"seed-{seed}"
        path = unit_path(args, seed, method, code)
        tag = f"[{i}/{len(units)}] {args.model} seed {seed} {METHODS[method][0]} {code}"
        if path.is_file():
            print(f"{tag}: done before, skipped", file=sys.stderr, flush=True)
            continue
        inputs = _inputs_cache(args, seed)
        logits = cached_logits(folder / logits_name(args), inputs, args.folder.write_bytes)
        print(f"{tag}: fitting", file=sys.stderr, flush=True)
        unit = run_unit(args, code_obj, seed, method, code, inputs, logits)
        args.folder.write_text(path, json.dumps(unit, indent=1) + "\n")
        seconds.setdefault(_kind(args, method, code), []).append(unit["seconds"])
        rest = [u for u in units[i:] if not unit_path(args, *u).is_file()]
        print(
            f"{tag}: T {unit['T']:.3f}, test ECE {100 * unit['test']['ece']['estimate']:.2f}%, "
            f"{unit['seconds']:.0f} s; {time_left(args, seconds, rest) if rest else 'done'}",
            file=sys.stderr,
            flush=True,
        )
    print(summary(out, variant))
    return out


_CACHE: dict[tuple[str, str, int, int | None, str], Inputs] = {}


def _inputs_cache(args: argparse.Namespace, seed: int) -> Inputs:
    key = (args.config, args.model, seed, args.images, args.calibration)
    if key not in _CACHE:
        _CACHE.clear()
        inputs = load_inputs(args.config, args.model, seed, args.images, args.calibration)
        inputs.model.to(args.torch_device)
        _CACHE[key] = inputs
    return _CACHE[key]


def summary(out: Path, variant: str) -> str:
    """A markdown table of the units of ``variant`` found under ``out``."""
    rows = [
        "| model | seed | method | code | T | T (SGD) | ||delta|| "
        "| test ECE % [95%] | test NLL [95%] |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for path in sorted(out.glob(f"*/seed-*/{variant}/*.json")):
        u = json.loads(path.read_text(encoding="utf-8"))
        e, n = u["test"]["ece"], u["test"]["nll"]
        t_sgd = u.get("T_sgd")
        rows.append(
            f"| {u['model']} | {u['seed']} | {u['method']} | {u['code']} | {u['T']:.3f} | "
            f"{'' if t_sgd is None else f'{t_sgd:.3f}'} | {u['delta_norm']:.3g} | "
            f"{100 * e['estimate']:.2f} [{100 * e['low']:.2f}, {100 * e['high']:.2f}] | "
            f"{n['estimate']:.4f} [{n['low']:.4f}, {n['high']:.4f}] |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """The command: refuse bad input (one line, exit 2, nothing written), then run."""

    def work(args: argparse.Namespace) -> None:
        check_args(args)
        check_config(args.config, args.model)
        check_resume(args)
        code_obj = load_authors_code(args.authors_code)
        torch.set_num_threads(1)
        run(args, code_obj if "authors" in args.code_list else None)

    return run_driver(build_parser(), work, argv)


if __name__ == "__main__":
    sys.exit(main())
