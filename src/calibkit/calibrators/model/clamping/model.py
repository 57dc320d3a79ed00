"""Neural Clamping: a universal input perturbation and a temperature for a frozen classifier.

Tang, Chen & Ho, "Neural Clamping: Joint Input Perturbation and Temperature Scaling for
Neural Network Calibration", TMLR 2024. The calibrated logits of an input ``x`` are
``f(x + delta) / T``, with ``delta`` shaped like one input and ``T = exp(log_t) > 0``,
learnt on a calibration set by minimising (their eq. 9)

    mean_i FL_gamma(f(x_i + delta) / T, y_i) + lam * ||delta||_2^2,

where ``FL_gamma = -(1 - p_y)^gamma log p_y`` is the focal loss. The model's parameters
never change. ``gamma`` may be a pool of candidates: each is fitted and the one with the
lowest calibration-set ECE is kept (``gamma_``; with ``holdout``, the lowest held-out
NLL). With ``gamma_select="fast"``, the candidates are ranked instead by the calibration
ECE (held-out NLL) of the fast variant (the initial ``delta`` and the exact temperature:
one forward pass for the whole pool), and only the best is trained jointly: a pool for
the price of one SGD fit (``ece_by_gamma_`` then holds the fast variant's ECE of the
others).

Training (``train``):

- ``"joint"`` (the method): SGD with momentum (lr 1e-3, momentum 0.9, as in the authors'
  NCToolkit; :mod:`~calibkit.calibrators.model.clamping.sgd`) on ``delta`` and ``log_t``, one
  step per batch, ``epochs`` passes. Then, with ``refine_temperature`` (the default),
  ``log_t`` is set to the exact minimum of the same objective at the learnt ``delta`` (one
  forward pass and a 1-D search): at the paper's learning rate, 100 epochs of a small
  calibration set (1,000 images: 200 steps) leave T far from its optimum, so a fit could
  end worse than plain temperature scaling. With
  ``delta = 0`` the refined fit is TS under the same loss, so Neural Clamping contains it.
  ``ablation("sgd")`` gives the pair where SGD left it (the paper's procedure). With
  ``holdout`` (a fraction, e.g. 0.2; off by default, as in the paper), ``delta`` is learnt
  on the rest of the calibration set and kept only if it beats ``delta = 0`` on the
  held-out part by NLL (:mod:`~calibkit.calibrators.model.clamping.holdout`): a guard against a
  ``delta`` that fits a small calibration set and not new data (``delta_kept_``). It
  guards the fast variant the same way (its data-driven ``delta`` can wreck a model
  whose inputs never reach the range's edges: BloodMNIST). With ``holdout``, a pool of
  ``gamma`` is ranked by held-out NLL too, not by the calibration ECE, and the whole fit
  gives way to temperature scaling (by NLL) where that has the lower held-out NLL (a
  focal temperature can be far from the NLL's). ``guard_`` says which guard decided
  (:data:`~calibkit.calibrators.model.clamping.holdout.GUARDS`), :attr:`guard` in words;
- ``"delta"``: SGD on ``delta`` alone, T = 1;
- ``"temperature"``: ``delta`` stays at its initial value and ``log_t`` minimises the
  focal objective exactly (one forward pass, then a 1-D search in float64; the penalty is
  constant). With ``init="data"`` this is the fast variant of their Appendix F
  (:meth:`NeuralClamping.fast`); with ``init="zero"`` it is temperature scaling fitted by
  focal loss (:meth:`NeuralClamping.focal_temperature_scaling`; NLL for gamma 0).

How the SGD and the passes over the inputs run (lr, momentum, batch size, epochs,
precision, device, ...) is one :class:`~calibkit.calibrators.model.clamping.settings.SGDSettings`
(``sgd``). The search over a pool of ``gamma`` is in
:mod:`~calibkit.calibrators.model.clamping.search`.

Initial ``delta`` (``init``): ``"zero"``, ``"random"`` (Gaussian, sd 0.01) or ``"data"``
(Theorem 3.2, see :func:`~calibkit.calibrators.model.clamping.init.data_driven_delta`).

Neural Clamping needs the model and its inputs: it is a
:class:`~calibkit.calibrators.model.model_calibrator.ModelCalibrator` (its variants are in
the one calibrator registry, :mod:`~calibkit.calibrators.model.clamping.registry`), whose
``inputs`` :mod:`~calibkit.calibrators.model.clamping.inputs` describes; they stay where the
caller keeps them and go to the device batch by batch.

>>> torch.manual_seed(0) and None
>>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3)).eval()
>>> x, y = torch.randn(64, 1, 2, 2), torch.arange(64) % 3
>>> quiet = SGDSettings(epochs=3, progress=False)
>>> nc = NeuralClamping(model, sgd=quiet).fit(x, y)
>>> nc.predict_proba(x).shape, nc.delta_.shape
((64, 3), torch.Size([1, 2, 2]))
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Self

import numpy as np
import torch
from torch import nn

from calibkit.calibrators.logit.temperature import ANY_LOG_TEMPERATURE
from calibkit.calibrators.model.clamping.holdout import GUARDS, check_holdout
from calibkit.calibrators.model.clamping.init import INITS, check_input_range
from calibkit.calibrators.model.clamping.inputs import (
    Checked,
    as_inputs,
    check_finite,
    fit_labels,
    floats,
    is_number,
)
from calibkit.calibrators.model.clamping.passes import frozen, logits_pass, n_outputs
from calibkit.calibrators.model.clamping.persistence import (
    check_relations,
    constructor_params,
    delta_of,
    loaded_state,
    saved_params,
    saved_state,
)
from calibkit.calibrators.model.clamping.search import GammaFit, search_gamma
from calibkit.calibrators.model.clamping.settings import SGDSettings, split_params
from calibkit.calibrators.model.model_calibrator import ModelCalibrator
from calibkit.calibrators.modules import CheckedLogits, InputShift, Temperature
from calibkit.core.errors import InputError
from calibkit.core.outputs import log_softmax64
from calibkit.core.params import param
from calibkit.core.validation import (
    NON_NEGATIVE,
    POSITIVE,
    AnyOf,
    Boolean,
    Choice,
    Constraints,
    Integer,
    ListOf,
    NoneOr,
    Real,
)

TRAINS = ("joint", "delta", "temperature")
GAMMA_SELECTS = ("each", "fast")
Ablation = Literal["delta_only", "temperature_only", "sgd"]
#: The views :meth:`NeuralClamping.ablation` accepts: the fitted ``delta`` alone (T = 1),
#: the temperature alone (delta = 0), or the pair where SGD left it.
ABLATIONS = ("delta_only", "temperature_only", "sgd")
GAMMA = "a number >= 0 or a non-empty sequence of them"
PER_CHANNEL = "a sequence of finite numbers, one per channel"
INPUT_RANGE = "(alpha, beta): two numbers or two sequences of one number per channel"


def _gamma(value: object) -> tuple[float, ...]:
    pool = tuple(value) if isinstance(value, Sequence) else (value,)
    if not pool or not all(is_number(g) and 0 <= g < math.inf for g in pool):
        raise InputError("gamma", GAMMA, repr(value))
    return tuple(float(g) for g in pool)


def _sgd(value: object) -> SGDSettings:
    if value is None:
        return SGDSettings()
    if not isinstance(value, SGDSettings):
        raise InputError("sgd", "an SGDSettings", type(value).__name__)
    return value


class NeuralClamping(ModelCalibrator):
    """Neural Clamping of a frozen ``model`` (see the module docstring): ``NeuralClamping(model,
    **params)``, the classifier first (an ``nn.Module`` returning logits ``(N, K)``, never
    changed, and not a parameter: not saved), then the parameters by keyword.

    Examples
    --------
    >>> nc = NeuralClamping.fast(nn.Linear(2, 3), gamma=(0.0, 1.0))
    >>> nc.train, nc.gamma, nc.sgd.epochs
    ('temperature', (0.0, 1.0), 100)
    """

    name = "neural_clamping"
    #: Not registered itself: saved as ``nc_fl``, which fixes no parameter.
    saved_as: ClassVar[str | None] = "nc_fl"

    gamma: tuple[float, ...] = param(
        default=(1.0,),
        check=Checked(_gamma, GAMMA),
        doc="The focal exponent, or a pool of candidates (the lowest calibration ECE wins; "
        "with ``holdout``, the lowest held-out NLL).",
    )
    lam: float | None = param(
        default=None,
        check=NoneOr(NON_NEGATIVE),
        doc="Weight of ``||delta||^2``; None: 0.1 times the focal loss at the initial ``delta``.",
    )
    init: str = param(
        default="data", check=Choice(*INITS), doc="The initial ``delta`` (module docstring)."
    )
    train: str = param(
        default="joint", check=Choice(*TRAINS), doc="What SGD trains (module docstring)."
    )
    gamma_select: str = param(
        default="each",
        check=Choice(*GAMMA_SELECTS),
        doc="Fit each candidate ``gamma``, or rank them by the fast variant and fit the best.",
    )
    holdout: float = param(
        default=0.0,
        check=Checked(check_holdout, "0 (off) or a fraction in (0, 0.5]"),
        doc="Held-out fraction of the calibration set guarding ``delta``, choosing ``gamma`` "
        "and checking the fit against temperature scaling, all by held-out NLL (0: off).",
    )
    refine_temperature: bool = param(
        default=True,
        check=Boolean(),
        doc="Set T to the objective's exact minimum after a joint SGD.",
    )
    input_range: Any = param(
        default=None,
        check=Checked(check_input_range, INPUT_RANGE),
        doc="Feasible input range of the data-driven ``delta``; None: the inputs' range.",
    )
    mean: tuple[float, ...] | None = param(
        default=None,
        check=NoneOr(Checked(lambda v: floats(v, "mean"), PER_CHANNEL)),
        doc="Per-channel mean that normalises a dataset's uint8 images.",
    )
    std: tuple[float, ...] | None = param(
        default=None,
        check=NoneOr(Checked(lambda v: floats(v, "std"), PER_CHANNEL)),
        doc="Per-channel standard deviation that normalises a dataset's uint8 images.",
    )
    seed: int = param(
        default=0,
        check=Integer(),
        doc="Seed of the random ``delta``, the SGD's shuffling and the hold-out draw.",
    )
    sgd: SGDSettings = param(
        default=SGDSettings(),
        check=Checked(_sgd, "an SGDSettings"),
        doc="How the SGD and the passes run (None: the default).",
    )

    #: A dataset's images are normalised by ``mean`` and ``std`` before ``delta_`` is added,
    #: at fit as at prediction: ``delta_`` holds for that normalisation only (recorded).
    fitted_with: ClassVar[tuple[str, ...]] = ("mean", "std")
    #: The fitted attributes the document holds, as it holds them
    #: (:mod:`~calibkit.calibrators.model.clamping.persistence`; ``delta_`` is in the tensor file).
    state_constraints: ClassVar[Constraints] = {
        "log_temperature_": ANY_LOG_TEMPERATURE,
        "lam_": NON_NEGATIVE,
        "history_": ListOf(Real(), as_list=True),
        "gamma_": NON_NEGATIVE,
        "sgd_log_temperature_": NoneOr(ANY_LOG_TEMPERATURE),
        "holdout_losses_": AnyOf(Choice([]), ListOf(Real(), as_list=True)),
        "delta_kept_": Boolean(),
        "guard_": Choice(*GUARDS),
        "holdout_ts_loss_": NoneOr(Real()),
        "temperature_": POSITIVE,
        "ece_by_gamma_": ListOf(ListOf(Real(0.0, 1.0), as_list=True), as_list=True),
    }

    def __init__(self, model: nn.Module, **params: Any) -> None:
        if not isinstance(model, nn.Module):
            raise InputError("model", "a torch.nn.Module", type(model).__name__)
        self.model = model
        self._set_params(**{**self.default_params(), **params, **self.fixed_params})
        self._check_params()

    def _check_params(self) -> None:
        if self.holdout and self.train == "delta":
            raise InputError("holdout", "0 with train='delta'", repr(self.holdout))

    @classmethod
    def split_params(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """Flat parameters (the :class:`SGDSettings` fields among the others, as in a
        config) -> constructor keywords."""
        return split_params(params)

    @classmethod
    def fast(cls, model: nn.Module, **params: Any) -> NeuralClamping:
        """The fast variant (their Appendix F): data-driven ``delta``, then T alone."""
        return cls(model, **{**params, "init": "data", "train": "temperature"})

    @classmethod
    def focal_temperature_scaling(cls, model: nn.Module, **params: Any) -> NeuralClamping:
        """Temperature scaling fitted by focal loss (``delta = 0``; their Table 4 ablation)."""
        return cls(model, **{**params, "init": "zero", "train": "temperature"})

    # ----- fitting -------------------------------------------------------------------------
    def _fit_inputs(self, inputs: object, labels: object) -> None:
        x = as_inputs(inputs, self.mean, self.std)
        device = self.sgd.torch_device(self.model)
        with frozen(self.model), torch.enable_grad():
            k = n_outputs(self.model, x, device)
            y = fit_labels(inputs, labels, x.shape[0], k)
            check_finite(x, self.sgd.batch_size)
            best, eces = search_gamma(self, x, y, device)
        self._set_fitted(best, eces, k)

    def _set_fitted(self, best: GammaFit, eces: dict[float, float], n_classes: int) -> None:
        self.delta_ = best.delta
        self.log_temperature_ = best.log_t
        self.lam_ = best.lam
        self.history_ = best.history
        self.gamma_ = best.gamma
        self.sgd_log_temperature_ = best.sgd_log_t
        self.holdout_losses_ = best.holdout_losses
        self.delta_kept_ = best.delta_kept
        self.guard_ = best.guard
        self.holdout_ts_loss_ = best.ts_loss
        self.temperature_ = best.temperature
        self.ece_by_gamma_ = eces
        self.n_classes_ = n_classes
        self._record_params()

    @property
    def guard(self) -> str:
        """Which guard decided the fit, in words (``guard_`` and the held-out NLLs)."""
        self.check_is_fitted()
        h, ts = self.holdout_losses_, self.holdout_ts_loss_
        if self.guard_ == GUARDS[3] and h and ts is not None:
            nc = f"{min(h):.4g} of gamma {self.gamma_:g}"
            return f"temperature scaling (held-out NLL {ts:.4g} vs {nc})"
        if self.guard_ in GUARDS[1:3] and h:
            return f"{self.guard_} (held-out NLL {h[0]:.4g} with it vs {h[1]:.4g} without)"
        return str(self.guard_)

    # ----- prediction ----------------------------------------------------------------------
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
        device = self.sgd.torch_device(self.model)
        with frozen(self.model):
            z = logits_pass(self.model, x, self.delta_, self.sgd.batch_size, device)
        if z.ndim != 2 or z.shape[1] != self.n_classes_:
            expected = f"a model of {self.n_classes_} classes (as at fit time)"
            raise InputError("model", expected, f"logits of shape {tuple(z.shape)}")
        out: np.ndarray = z.numpy().astype(np.float64) / self.temperature_
        return out

    def _predict_inputs(self, inputs: object) -> np.ndarray:
        return np.exp(log_softmax64(self.logits(inputs)))

    def input_module(self) -> nn.Module:
        """``x + delta_``, before the model (deployment: :meth:`to_module`)."""
        self.check_is_fitted()
        return InputShift(self.delta_)

    def output_module(self) -> nn.Module:
        """``softmax(z / temperature_)`` of the model's logits, checked as
        ``predict_proba`` checks them (deployment: :meth:`to_module`)."""
        self.check_is_fitted()
        return CheckedLogits(Temperature(self.temperature_), self.n_classes_)

    def ablation(self, view: Ablation) -> Self:
        """A copy keeping part of the fitted pair: ``"delta_only"`` (T = 1) or
        ``"temperature_only"`` (delta = 0), their Table 4; or ``"sgd"``, delta with the
        temperature where SGD left it, before the exact final step (the paper's procedure;
        not for the fast variant, which has no SGD)."""
        self.check_is_fitted()
        Choice(*ABLATIONS).check("view", view)
        other = type(self)(self.model, **self.get_params())
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

    # ----- persistence (the model kind's: tensors beside the document) ---------------------
    def _tensors(self) -> dict[str, torch.Tensor]:
        return {"delta": self.delta_}

    def _set_tensors(self, tensors: dict[str, torch.Tensor]) -> None:
        self.delta_ = delta_of(tensors)

    def _check_model(self) -> None:
        """The model given to ``load`` takes inputs of ``delta_``'s shape and returns
        ``n_classes_`` logits: one pass over one input (``delta_`` itself), in eval mode."""
        shape = tuple(self.delta_.shape)
        device = self.sgd.torch_device(self.model)
        try:
            with frozen(self.model):
                k = n_outputs(self.model, self.delta_.unsqueeze(0), device)
        except InputError as exc:
            expected = f"a classifier of inputs of shape {shape} (the saved delta's)"
            raise InputError("model", expected, exc.got) from None
        if k != self.n_classes_:
            expected = f"a classifier of {self.n_classes_} classes, as state.n_classes_ says"
            raise InputError("model", expected, f"one of {k} classes")

    def _saved_params(self) -> dict[str, Any]:
        return saved_params(self.get_params())

    @classmethod
    def _constructor_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        return constructor_params(cls.param_constraints, params)

    def _saved_state(self) -> dict[str, Any]:
        return saved_state(super()._saved_state())

    def _check_state(self) -> None:
        check_relations(self)

    def _load_state(self, state: object) -> None:
        super()._load_state(state)
        loaded_state(self)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({type(self.model).__name__}, {params})"
