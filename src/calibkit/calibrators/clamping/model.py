"""Neural Clamping: a universal input perturbation and a temperature for a frozen classifier.

Tang, Chen & Ho, "Neural Clamping: Joint Input Perturbation and Temperature Scaling for
Neural Network Calibration", TMLR 2024. The calibrated logits of an input ``x`` are
``f(x + delta) / T``, with ``delta`` shaped like one input and ``T = exp(log_t) > 0``,
learnt on a calibration set by minimising (their eq. 9)

    mean_i FL_gamma(f(x_i + delta) / T, y_i) + lam * ||delta||_2^2,

where ``FL_gamma = -(1 - p_y)^gamma log p_y`` is the focal loss. The model's parameters
never change. ``gamma`` may be a pool of candidates: each is fitted and the one with the
lowest calibration-set ECE is kept (``gamma_``). With ``gamma_select="fast"``, the
candidates are ranked instead by the calibration ECE of the fast variant (the initial
``delta`` and the exact temperature: one forward pass for the whole pool), and only the
best is trained jointly: a pool for the price of one SGD fit (``ece_by_gamma_`` then
holds the fast variant's ECE of the others).

Training (``train``):

- ``"joint"`` (the method): SGD with momentum (lr 1e-3, momentum 0.9, as in the authors'
  NCToolkit) on ``delta`` and ``log_t``, one step per batch, ``epochs`` passes. Then, with
  ``refine_temperature`` (the default), ``log_t`` is set to the exact minimum of the same
  objective at the learnt ``delta`` (one forward pass and a 1-D search): at the paper's
  learning rate, 100 epochs of a small calibration set (1,000 images: 200 steps) leave T
  far from its optimum, so a fit could end worse than plain temperature scaling. With
  ``delta = 0`` the refined fit is TS under the same loss, so Neural Clamping contains it.
  ``ablation("sgd")`` gives the pair where SGD left it (the paper's procedure). With
  ``holdout`` (a fraction, e.g. 0.2; off by default, as in the paper), ``delta`` is learnt
  on the rest of the calibration set and kept only if it beats ``delta = 0`` on the
  held-out part (:mod:`~calibkit.calibrators.clamping.holdout`): a guard against a
  ``delta`` that fits a small calibration set and not new data (``delta_kept_``). It
  guards the fast variant the same way (its data-driven ``delta`` can wreck a model
  whose inputs never reach the range's edges: BloodMNIST);
- ``"delta"``: SGD on ``delta`` alone, T = 1;
- ``"temperature"``: ``delta`` stays at its initial value and ``log_t`` minimises the
  focal objective exactly (one forward pass, then a 1-D search in float64; the penalty is
  constant). With ``init="data"`` this is the fast variant of their Appendix F
  (:meth:`NeuralClamping.fast`); with ``init="zero"`` it is temperature scaling fitted by
  focal loss (:meth:`NeuralClamping.focal_temperature_scaling`; NLL for gamma 0).

``precision="bfloat16"`` runs the model's passes of that SGD (the cost of the fit) under
bfloat16 autocast: 2.2x faster per epoch on a CPU with AVX-512 BF16 (``benchmarks/``), with
the same ECE to about 0.05 points on the bird-vs-cat models. The data-driven
initialisation, the temperature step and every prediction stay in float32.

Initial ``delta`` (``init``): ``"zero"``, ``"random"`` (Gaussian, sd 0.01) or ``"data"``
(Theorem 3.2, see :func:`~calibkit.calibrators.clamping.init.data_driven_delta`).

Unlike the logit calibrators of :mod:`calibkit.calibrators.base`, Neural Clamping needs the
model and its inputs, so it mirrors that contract (``fit -> self``, fitted ``_``
attributes, :class:`~calibkit.core.errors.NotFittedError`, :class:`~calibkit.core.errors.InputError`
naming the argument) without joining the logit registry. ``inputs`` are float tensors
``(N, C, H, W)`` (or arrays) already normalised as the model expects, or a dataset of
calibkit's loaders (:class:`~calibkit.data.ImageArrays`, normalised by the ``mean`` and
``std`` given here; its labels come with it). They stay where the caller keeps them and go
to the device batch by batch.

>>> torch.manual_seed(0) and None
>>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval()
>>> x, y = torch.randn(64, 1, 2, 2), torch.arange(64) % 3
>>> nc = NeuralClamping(model, epochs=3, progress=False).fit(x, y)
>>> nc.predict_proba(x).shape, nc.delta_.shape
((64, 3), torch.Size([1, 2, 2]))
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Self

import numpy as np
import torch
from torch import Tensor, nn

from calibkit.calibrators.clamping.holdout import check_holdout, held_out_loss, holdout_split
from calibkit.calibrators.clamping.init import (
    RANDOM_INIT_SCALE,
    as_inputs,
    batches,
    check_finite,
    check_input_range,
    choice,
    data_driven_delta,
    entropy_gradient,
    fit_focal_temperature,
    focal_loss,
    focal_loss_np,
    frozen,
    fused_copy,
    input_bounds,
    is_number,
    layout,
    nonnegative,
    positive_int,
    range_tensors,
)
from calibkit.calibrators.clamping.persistence import load_clamping, save_clamping
from calibkit.calibrators.temperature import positive_param
from calibkit.core.errors import InputError, NotFittedError
from calibkit.core.outputs import check_labels, log_softmax64
from calibkit.data.arrays import ImageArrays
from calibkit.metrics import ece

INITS = ("data", "random", "zero")
TRAINS = ("joint", "delta", "temperature")
PRECISIONS = ("float32", "bfloat16")
GAMMA_SELECTS = ("each", "fast")
Ablation = Literal["delta_only", "temperature_only", "sgd"]
ABLATIONS = ("delta_only", "temperature_only", "sgd")


class CalibratedModel(nn.Module):
    """A classifier with Neural Clamping built in: ``forward(x) = model(x + delta) / T``."""

    def __init__(self, model: nn.Module, delta: Tensor, temperature: float) -> None:
        super().__init__()
        self.model = model
        self.delta: Tensor
        self.temperature: Tensor
        self.register_buffer("delta", delta.detach().clone())
        self.register_buffer("temperature", torch.tensor(float(temperature)))

    def forward(self, x: Tensor) -> Tensor:
        """Calibrated logits of the batch ``x``."""
        logits: Tensor = self.model(x + self.delta) / self.temperature
        return logits


class NeuralClamping:
    """Neural Clamping of a frozen ``model`` (see the module docstring)."""

    name = "neural_clamping"

    def __init__(
        self,
        model: nn.Module,
        *,
        gamma: float | Sequence[float] = 1.0,
        lam: float | None = None,
        lr: float = 1e-3,
        momentum: float = 0.9,
        batch_size: int = 512,
        epochs: int = 100,
        init: str = "data",
        input_range: Any = None,
        train: str = "joint",
        seed: int = 0,
        device: str | torch.device | None = None,
        progress: bool = True,
        fuse: bool = True,
        precision: str = "float32",
        refine_temperature: bool = True,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        holdout: float = 0.0,
        gamma_select: str = "each",
    ) -> None:
        if not isinstance(model, nn.Module):
            raise InputError("model", "a torch.nn.Module", type(model).__name__)
        self.model = model
        pool = tuple(gamma) if isinstance(gamma, Sequence) else (gamma,)
        if not pool or not all(is_number(g) and 0 <= g < math.inf for g in pool):
            raise InputError("gamma", "a number >= 0 or a non-empty sequence of them", repr(gamma))
        self.gamma = tuple(float(g) for g in pool)
        self.lam = None if lam is None else nonnegative(lam, "lam")
        self.lr = positive_param(lr, "lr")
        self.momentum = nonnegative(momentum, "momentum")
        self.batch_size = positive_int(batch_size, "batch_size")
        self.epochs = positive_int(epochs, "epochs")
        self.init = choice(init, INITS, "init")
        self.train = choice(train, TRAINS, "train")
        self.input_range = check_input_range(input_range)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError("seed", "an integer", repr(seed))
        self.seed = seed
        self.device = device
        self.progress = bool(progress)
        self.fuse = bool(fuse)
        self.precision = choice(precision, PRECISIONS, "precision")
        if not isinstance(refine_temperature, bool):
            raise InputError("refine_temperature", "true or false", repr(refine_temperature))
        self.refine_temperature = refine_temperature
        self.mean = None if mean is None else _floats(mean, "mean")
        self.std = None if std is None else _floats(std, "std")
        self.holdout = check_holdout(holdout)
        self.gamma_select = choice(gamma_select, GAMMA_SELECTS, "gamma_select")
        if self.holdout and self.train == "delta":
            raise InputError("holdout", "0 with train='delta'", repr(holdout))

    @classmethod
    def fast(cls, model: nn.Module, **params: Any) -> NeuralClamping:
        """The fast variant (their Appendix F): data-driven ``delta``, then T alone."""
        return cls(model, **{**params, "init": "data", "train": "temperature"})

    @classmethod
    def focal_temperature_scaling(cls, model: nn.Module, **params: Any) -> NeuralClamping:
        """Temperature scaling fitted by focal loss (``delta = 0``; their Table 4 ablation)."""
        return cls(model, **{**params, "init": "zero", "train": "temperature"})

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters, except the model."""
        skip = {"model"}
        return {k: v for k, v in vars(self).items() if k not in skip and not k.endswith("_")}

    # ----- fitting -------------------------------------------------------------------------
    def fit(self, inputs: object, labels: object = None) -> Self:
        """Learn ``delta`` and ``T`` on calibration ``inputs`` (N, ...) and ``labels`` (N,).

        ``inputs`` may be an :class:`~calibkit.data.ImageArrays` (a dataset of calibkit's
        loaders), normalised by this object's ``mean`` and ``std``; its labels are used when
        ``labels`` is None.
        """
        x = as_inputs(inputs, self.mean, self.std)
        if labels is None:
            if not isinstance(inputs, ImageArrays):
                raise InputError("labels", "labels (N,) for tensor or array inputs", "None")
            labels = inputs.labels
        device = self._device()
        with frozen(self.model), torch.enable_grad():
            k = self._n_outputs(x, device)
            y = torch.from_numpy(check_labels(labels, n_samples=x.shape[0], scores_name="inputs"))
            if int(y.max()) >= k:
                raise InputError(
                    "labels",
                    f"integers in [0, {k}) (the model's outputs)",
                    f"a label of {int(y.max())}",
                )
            if int(y.min()) == int(y.max()):
                raise InputError("labels", "at least 2 distinct labels", f"only {int(y[0])}")
            check_finite(x, self.batch_size)
            fast = fused_copy(self.model) if self.fuse else self.model
            delta0 = self._initial_delta(x, device, fast)
            z0 = self._logits(x, delta0, 1.0, device).numpy()
            y_np = y.numpy()
            split = holdout_split(len(y_np), self.holdout, self.seed) if self.holdout else None
            if split is not None:
                zero = torch.zeros_like(delta0)
                z_zero = self._logits(x, zero, 1.0, device).numpy()
                learn, held = (i.numpy() for i in split)
                x_learn, y_learn = x[split[0]], y[split[0]]
            else:
                x_learn, y_learn = x, y
            best: tuple[float, Tensor, float, float, list[float], float, float, list[float]] | None
            best = None
            eces: dict[float, float] = {}
            pool = self.gamma
            if self.gamma_select == "fast" and self.train == "joint" and len(pool) > 1:
                for g in pool:
                    eces[g] = ece(y_np, logits=z0 / math.exp(fit_focal_temperature(z0, y_np, g)))
                pool = (min(pool, key=eces.__getitem__),)
            for g in pool:
                lam = 0.1 * focal_loss_np(z0, y_np, g) if self.lam is None else self.lam
                hist: list[float] = []
                if self.train == "temperature":
                    delta, z, sgd_log_t = delta0, z0, math.nan
                else:
                    delta, sgd_log_t, hist = self._sgd(
                        fast, x_learn, y_learn, delta0, g, lam, device
                    )
                    z = self._logits(x, delta, 1.0, device).numpy()
                held_losses: list[float] = []
                if split is not None:
                    held_losses = [held_out_loss(zz, y_np, learn, held, g) for zz in (z, z_zero)]
                    if not held_losses[0] < held_losses[1]:  # delta = 0 does as well
                        delta, z, sgd_log_t = zero, z_zero, math.nan
                # the objective's exact minimum over T at this delta (the penalty does not
                # depend on T): never above where SGD stopped
                exact = math.isnan(sgd_log_t) or (self.refine_temperature and self.train == "joint")
                log_t = fit_focal_temperature(z, y_np, g) if exact else sgd_log_t
                if not hist:
                    hist = [focal_loss_np(z / math.exp(log_t), y_np, g) + lam * _sq(delta)]
                eces[g] = ece(y_np, logits=z / math.exp(log_t))
                if best is None or eces[g] < best[0]:
                    best = (eces[g], delta, log_t, lam, hist, g, sgd_log_t, held_losses)
        assert best is not None
        _, self.delta_, self.log_temperature_, self.lam_, self.history_, self.gamma_, sgd, h = best
        self.sgd_log_temperature_ = sgd
        self.holdout_losses_ = h
        self.delta_kept_ = not h or h[0] < h[1]
        self.temperature_ = math.exp(self.log_temperature_)
        self.ece_by_gamma_ = eces
        self.n_classes_ = k
        return self

    def _device(self) -> torch.device:
        if self.device is not None:
            return torch.device(self.device)
        param = next(iter(self.model.parameters()), None)
        return param.device if param is not None else torch.device("cpu")

    def _n_outputs(self, x: Tensor, device: torch.device) -> int:
        try:
            with torch.no_grad():
                out = self.model(x[:1].to(device=device, dtype=torch.float32))
        except (RuntimeError, ValueError, TypeError) as exc:
            msg = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
            raise InputError(
                "inputs", "inputs of the shape the model takes", f"shape {tuple(x.shape)} ({msg})"
            ) from None
        if not isinstance(out, Tensor) or out.ndim != 2 or out.shape[1] < 2:
            raise InputError(
                "model",
                "a classifier returning logits (N, K), K >= 2",
                repr(getattr(out, "shape", type(out).__name__)),
            )
        return int(out.shape[1])

    def _initial_delta(self, x: Tensor, device: torch.device, model: nn.Module) -> Tensor:
        shape = x.shape[1:]
        if self.init == "zero":
            return torch.zeros(shape)
        if self.init == "random":
            gen = torch.Generator().manual_seed(self.seed)
            return torch.randn(shape, generator=gen) * RANDOM_INIT_SCALE
        n_channels = shape[0] if len(shape) else 1
        check_input_range(self.input_range, n_channels)
        low, high = input_bounds(x, self.batch_size, device)
        alpha, beta = range_tensors(self.input_range, low, high)
        grad = entropy_gradient(model, x, self.batch_size, device)
        return data_driven_delta(grad, low, high, alpha, beta).cpu()

    def _sgd(
        self,
        model: nn.Module,
        x: Tensor,
        y: Tensor,
        delta0: Tensor,
        gamma: float,
        lam: float,
        device: torch.device,
    ) -> tuple[Tensor, float, list[float]]:
        """SGD with momentum on the objective; one step per batch, seeded shuffling."""
        gen = torch.Generator().manual_seed(self.seed)
        delta = delta0.clone().to(device).requires_grad_(True)
        log_t = torch.zeros((), device=device, requires_grad=self.train == "joint")
        params = [delta, log_t] if self.train == "joint" else [delta]
        opt = torch.optim.SGD(params, lr=self.lr, momentum=self.momentum)
        n, history = x.shape[0], []
        low_precision = self.precision == "bfloat16"
        for epoch in range(self.epochs):
            order, total = torch.randperm(n, generator=gen), 0.0
            for start in range(0, n, self.batch_size):
                idx = order[start : start + self.batch_size]
                xb = layout(x[idx].to(device=device, dtype=torch.float32))
                with torch.autocast(device.type, torch.bfloat16, enabled=low_precision):
                    out = model(xb + delta)
                logits = out.float() / log_t.exp()
                loss = focal_loss(logits, y[idx].to(device), gamma) + lam * delta.pow(2).sum()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * idx.shape[0]
            history.append(total / n)
            if self.progress:
                end = "\n" if epoch + 1 == self.epochs else ""
                print(
                    f"\rneural clamping (gamma {gamma:g}): epoch {epoch + 1}/{self.epochs}, "
                    f"loss {history[-1]:.5f}",
                    end=end,
                    file=sys.stderr,
                    flush=True,
                )
        return delta.detach().cpu(), float(log_t.detach()), history

    @torch.no_grad()
    def _logits(self, x: Tensor, delta: Tensor, temperature: float, device: torch.device) -> Tensor:
        """``model(x + delta) / temperature`` for all of ``x`` (float32, on the CPU)."""
        d = delta.to(device)
        out = [
            (self.model(xb + d) / temperature).cpu() for xb in batches(x, self.batch_size, device)
        ]
        return torch.cat(out)

    # ----- prediction ----------------------------------------------------------------------
    def check_is_fitted(self) -> None:
        if not hasattr(self, "n_classes_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit() first")

    def logits(self, inputs: object) -> np.ndarray:
        """Calibrated logits ``model(x + delta_) / temperature_`` (float64, N x K)."""
        self.check_is_fitted()
        x = as_inputs(inputs, self.mean, self.std)
        if tuple(x.shape[1:]) != tuple(self.delta_.shape):
            raise InputError(
                "inputs",
                f"inputs of shape (N, {', '.join(map(str, self.delta_.shape))})",
                f"shape {tuple(x.shape)}",
            )
        with frozen(self.model):
            z = self._logits(x, self.delta_, 1.0, self._device())
        out: np.ndarray = z.numpy().astype(np.float64) / self.temperature_
        return out

    def predict_proba(self, inputs: object) -> np.ndarray:
        """Calibrated probabilities (float64, rows sum to 1)."""
        return np.exp(log_softmax64(self.logits(inputs)))

    def to_module(self) -> CalibratedModel:
        """The model with ``delta_`` and ``temperature_`` built in, for deployment."""
        self.check_is_fitted()
        return CalibratedModel(self.model, self.delta_, self.temperature_)

    def ablation(self, view: Ablation) -> NeuralClamping:
        """A copy keeping part of the fitted pair: ``"delta_only"`` (T = 1) or
        ``"temperature_only"`` (delta = 0), their Table 4; or ``"sgd"``, delta with the
        temperature where SGD left it, before the exact final step (the paper's procedure;
        not for the fast variant, which has no SGD)."""
        self.check_is_fitted()
        choice(view, ABLATIONS, "view")
        other = NeuralClamping(self.model, **self.get_params())
        other.__dict__.update(self.fitted_state())
        if view == "delta_only":
            other.log_temperature_, other.temperature_ = 0.0, 1.0
        elif view == "temperature_only":
            other.delta_ = torch.zeros_like(self.delta_)
        else:
            if not math.isfinite(self.sgd_log_temperature_):
                raise InputError("view", "'sgd' only after a joint SGD fit", repr(view))
            other.log_temperature_ = self.sgd_log_temperature_
            other.temperature_ = math.exp(self.sgd_log_temperature_)
        return other

    def fitted_state(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k.endswith("_")}

    # ----- persistence ---------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write ``delta_`` to ``path`` with suffix ``.safetensors``, the rest to ``.json``."""
        save_clamping(self, path)

    @classmethod
    def load(cls, path: str | Path, model: nn.Module) -> NeuralClamping:
        """Read a Neural Clamping written by :meth:`save`, applied to ``model``."""
        return load_clamping(cls, path, model)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({type(self.model).__name__}, {params})"


# ----- helpers --------------------------------------------------------------------------------
def _floats(values: object, name: str) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in values)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        out = ()
    if not out or not all(math.isfinite(v) for v in out):
        raise InputError(name, "a sequence of finite numbers, one per channel", repr(values))
    return out


def _sq(delta: Tensor) -> float:
    return float(delta.double().pow(2).sum())
