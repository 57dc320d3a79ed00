"""What a saved Neural Clamping holds beyond the one document of the ``model`` kind.

A fitted :class:`~calibkit.calibrators.model.clamping.NeuralClamping` is saved as every model
calibrator is (:mod:`~calibkit.calibrators.model.model_calibrator`): the document of
:mod:`~calibkit.calibrators.persistence` (kind ``"model"``, its method's registered name)
beside a ``.safetensors`` file holding ``delta_`` (as ``delta``). What is its own, here:

- the parameters keep the fields of
  :class:`~calibkit.calibrators.model.clamping.settings.SGDSettings` flat among the
  others; every parameter is required;
- the state holds ``ece_by_gamma_`` as ``[gamma, ECE]`` pairs and ``sgd_log_temperature_``
  as null where no SGD ran (NaN in memory); the relations between the fitted attributes
  are checked on load (:func:`check_relations`), the log temperature among them: in the
  range the exact step searches (:data:`~calibkit.calibrators.model.clamping.objective.
  T_BOUNDS`) where the fit took that step, else where the SGD left it;
- the tensor file holds one finite floating-point ``delta`` (:func:`delta_of`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

import torch
from torch import Tensor

from calibkit.calibrators.logit.temperature import check_log_temperature
from calibkit.calibrators.model.clamping.holdout import GUARDS
from calibkit.calibrators.model.clamping.objective import T_BOUNDS
from calibkit.calibrators.model.clamping.settings import SGD_FIELDS, flat_params, split_params
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import check_state
from calibkit.core.validation import (
    Constraint,
    Constraints,
    NoneOr,
    String,
    check_params,
)

#: The Neural Clamping saved or loaded: typed loosely, so that this module does not import
#: the class that imports it (its declarations are read from the class itself).
NeuralClamping = Any

#: A parameter a document holds more narrowly than :class:`SGDSettings` (a device by name).
PARAMS: Constraints = {"device": NoneOr(String())}
#: The dtypes a loaded ``delta`` may have.
DELTA_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def saved_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor parameters as a document holds them: :class:`SGDSettings` flat, the
    device as its name."""
    flat = flat_params(params)
    flat["device"] = None if flat["device"] is None else str(flat["device"])
    return flat


def constructor_params(names: Mapping[str, object], params: dict[str, Any]) -> dict[str, Any]:
    """A document's flat parameters -> constructor keywords: exactly the declared ``names``
    (but ``sgd``) and the :data:`SGD_FIELDS`, each present."""
    fields = [*(name for name in names if name != "sgd"), *SGD_FIELDS]
    check_state(dict.fromkeys(fields, _ANY), params, {}, prefix="params.")
    check_params(PARAMS, {k: params[k] for k in PARAMS}, "params", prefix="params.")
    try:
        return split_params(params)
    except InputError as exc:  # an SGDSettings field
        raise InputError(f"params.{exc.argument}", exc.expected, exc.got) from None


def saved_state(state: dict[str, Any]) -> dict[str, Any]:
    """The fitted attributes (but ``delta_``) as a document holds them."""
    sgd = state["sgd_log_temperature_"]
    return {
        **state,
        "ece_by_gamma_": [[g, e] for g, e in state["ece_by_gamma_"].items()],
        "sgd_log_temperature_": sgd if math.isfinite(sgd) else None,
    }


def loaded_state(nc: NeuralClamping) -> None:
    """The inverse of :func:`saved_state`, on a loaded (checked) ``nc``."""
    nc.ece_by_gamma_ = {g: e for g, e in _pairs(nc)}
    if nc.sgd_log_temperature_ is None:
        nc.sgd_log_temperature_ = math.nan


def check_relations(nc: NeuralClamping) -> None:
    """An InputError for loaded fitted attributes (as saved) that no fit gives together."""
    pairs = _pairs(nc)
    if any(len(pair) != 2 for pair in pairs) or len({p[0] for p in pairs}) != len(pairs):
        expected = "a list of [gamma, ECE] pairs, one per gamma"
        raise InputError("state.ece_by_gamma_", expected, repr(pairs)[:60])
    check_log_temperature(nc.log_temperature_, nc.temperature_)
    _check_log_temperature_source(nc)
    if nc.gamma_ not in nc.gamma:
        raise InputError("state.gamma_", f"one of params.gamma {nc.gamma}", repr(nc.gamma_))
    guard = nc.guard_
    agrees = nc.delta_kept_ == (guard in GUARDS[:2])
    if (guard == GUARDS[0]) != (nc.holdout == 0) or not agrees:
        expected = f"a guard agreeing with params.holdout ({nc.holdout:g}) and state.delta_kept_"
        raise InputError("state.guard_", expected, repr(guard))


def _check_log_temperature_source(nc: NeuralClamping) -> None:
    """The log temperature where the fit leaves it (``search.fit_gamma``): the exact step's
    (in ``log T_BOUNDS``) where no SGD ran or a joint SGD was refined, else the SGD's own."""
    sgd = nc.sgd_log_temperature_
    exact = sgd is None or (nc.refine_temperature and nc.train == "joint")
    log_t = nc.log_temperature_
    if exact:
        low, high = (math.log(t) for t in T_BOUNDS)
        if not low - 1e-9 <= log_t <= high + 1e-9:
            expected = (
                f"a log temperature in [log {T_BOUNDS[0]:g}, log {T_BOUNDS[1]:g}] = "
                f"[{low:.6g}, {high:.6g}] (the range of the exact temperature step)"
            )
            raise InputError("state.log_temperature_", expected, repr(log_t))
    elif not math.isclose(log_t, sgd, rel_tol=0.0, abs_tol=1e-12):
        expected = (
            f"state.sgd_log_temperature_ = {sgd!r} (params.train={nc.train!r}, "
            f"refine_temperature={nc.refine_temperature}: the SGD's temperature is kept)"
        )
        raise InputError("state.log_temperature_", expected, repr(log_t))


def delta_of(tensors: dict[str, Tensor]) -> Tensor:
    """The tensor file's one finite floating-point ``delta`` of at least one dimension."""
    delta = tensors.get("delta")
    if set(tensors) != {"delta"} or delta is None or delta.dtype not in DELTA_DTYPES:
        found = ", ".join(f"{k} ({t.dtype})" for k, t in tensors.items()) or "none"
        raise InputError("delta", "one floating-point tensor named delta", found)
    if delta.ndim < 1 or not bool(torch.isfinite(delta).all()):
        expected = "a finite delta of one input's shape"
        raise InputError("delta", expected, f"shape {tuple(delta.shape)}, or non-finite values")
    return delta


def _pairs(nc: NeuralClamping) -> list[list[float]]:
    """A loaded ``ece_by_gamma_``, as the document holds it."""
    return cast(list[list[float]], nc.ece_by_gamma_)


class _Anything(Constraint):
    """Any value (a field whose presence alone is checked here)."""

    def check(self, name: str, value: object) -> object:
        return value

    def describe(self) -> str:
        return "a value"


_ANY = _Anything()
