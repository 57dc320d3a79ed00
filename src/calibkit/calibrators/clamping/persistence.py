"""Saving and loading a fitted Neural Clamping, never by pickle.

A saved :class:`~calibkit.calibrators.clamping.NeuralClamping` is two files next to each
other: ``delta_`` in a ``.safetensors`` file, and everything else (the constructor
parameters, the other fitted attributes, the name of the delta file and its sha256) in a
``.json`` sidecar. The sidecar keeps the fields of
:class:`~calibkit.calibrators.clamping.settings.SGDSettings` flat among the other
parameters, as format version 1 always has, so files written before they were grouped
still load, and so do files written before the guard said which of it decided (their
``guard_`` is filled in as what that fit was: no hold-out, or delta kept or dropped).
Loading checks the sidecar's format version and the delta's checksum, and
applies the result to a model given by the caller (the model itself is not saved).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from calibkit.calibrators.base import MAX_FILE_BYTES
from calibkit.calibrators.clamping.holdout import GUARDS
from calibkit.calibrators.clamping.settings import SGD_FIELDS, flat_params, split_params
from calibkit.calibrators.temperature import check_log_temperature
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import check_state
from calibkit.core.validation import (
    Boolean,
    Constraint,
    Constraints,
    NoneOr,
    String,
    check_params,
)
from calibkit.io.atomic import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from torch import nn

#: The Neural Clamping saved or loaded: typed loosely, so that this module does not import
#: the class that imports it (its declarations are read from the class itself).
NeuralClamping = Any

FORMAT_VERSION = 1


def save_clamping(nc: NeuralClamping, path: str | Path) -> None:
    """Write the fitted ``nc``: ``delta_`` to ``path`` with suffix ``.safetensors``, the
    rest to a ``.json`` sidecar with the delta file's name and sha256 (no pickle)."""
    nc.check_is_fitted()
    tensors, sidecar = _paths(path)
    tmp = tensors.with_name(tensors.name + ".tmp")
    save_file({"delta": nc.delta_.contiguous()}, str(tmp))
    data = tmp.read_bytes()
    tmp.unlink()
    atomic_write_bytes(tensors, data)
    params = flat_params(nc.get_params())
    params["device"] = None if params["device"] is None else str(params["device"])
    state = {k: v for k, v in nc.fitted_state().items() if k != "delta_"}
    state["ece_by_gamma_"] = [[g, e] for g, e in nc.ece_by_gamma_.items()]
    sgd = nc.sgd_log_temperature_
    state["sgd_log_temperature_"] = sgd if math.isfinite(sgd) else None
    doc = {
        "calibkit_neural_clamping": FORMAT_VERSION,
        "params": params,
        "state": state,
        "delta_file": tensors.name,
        "delta_sha256": hashlib.sha256(data).hexdigest(),
    }
    atomic_write_text(sidecar, json.dumps(doc, indent=1, allow_nan=False))


#: The sidecar's fields. Its ``state`` holds the fitted attributes but ``delta_`` (in the
#: tensor file), checked on load against the class's ``fitted_constraints()``.
SIDECAR_KEYS = ("calibkit_neural_clamping", "params", "state", "delta_file", "delta_sha256")
#: Parameters checked here because :class:`SGDSettings` coerces or does not check them.
PARAMS: Constraints = {"fuse": Boolean(), "progress": Boolean(), "device": NoneOr(String())}


def load_clamping(cls: type[NeuralClamping], path: str | Path, model: nn.Module) -> NeuralClamping:
    """A ``cls`` written by :func:`save_clamping`, applied to ``model``: the ``.json``
    sidecar's version, fields and values, and the ``.safetensors`` delta's sha256, dtype
    and values are checked (no pickle); anything else raises one InputError naming the
    file and the field."""
    tensors, sidecar = _paths(path)
    try:
        if sidecar.stat().st_size > MAX_FILE_BYTES:
            raise InputError(str(sidecar), f"at most {MAX_FILE_BYTES >> 20} MB", "a larger file")
        doc = json.loads(sidecar.read_text(encoding="utf-8"))
        data = tensors.read_bytes()
    except FileNotFoundError as exc:
        raise InputError("path", "an existing saved Neural Clamping", str(exc.filename)) from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError("path", "a valid JSON sidecar", f"{sidecar}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("calibkit_neural_clamping") != FORMAT_VERSION:
        raise InputError(
            "path", f"a Neural Clamping sidecar (version {FORMAT_VERSION})", str(sidecar)
        )
    if hashlib.sha256(data).hexdigest() != doc.get("delta_sha256"):
        raise InputError("path", "a delta file matching its sidecar's checksum", str(tensors))
    try:
        obj = _rebuild(cls, doc, model)
        obj.delta_ = _delta(tensors)
    except InputError as exc:
        raise InputError(f"{sidecar}: {exc.argument}", exc.expected, exc.got[:80]) from None
    return obj


def _rebuild(cls: type[NeuralClamping], doc: dict[str, Any], model: nn.Module) -> NeuralClamping:
    """``cls`` with the sidecar's parameters and fitted state, every field checked."""
    check_state(dict.fromkeys(SIDECAR_KEYS, _ANY), doc, {}, prefix="")
    params, state = doc["params"], doc["state"]
    if not isinstance(params, dict):
        raise InputError("params", "a mapping of parameters", type(params).__name__)
    names = [p for p in inspect.signature(cls).parameters if p not in ("model", "sgd")]
    check_state(dict.fromkeys([*names, *SGD_FIELDS], _ANY), params, {}, prefix="params.")
    check_params(PARAMS, {k: params[k] for k in PARAMS}, "params", prefix="params.")
    if isinstance(params["gamma"], list):
        params = {**params, "gamma": tuple(params["gamma"])}
    try:
        obj = cls(model, **split_params(params))
    except InputError as exc:
        raise InputError(f"params.{exc.argument}", exc.expected, exc.got) from None
    if not isinstance(state, dict):
        raise InputError("state", "a mapping of fitted attributes", type(state).__name__)
    if not any(key in state for key in ("guard_", "holdout_ts_loss_")):  # saved before them
        kept = GUARDS[1] if state.get("delta_kept_") is True else GUARDS[2]
        state = {**state, "guard_": kept if obj.holdout else GUARDS[0], "holdout_ts_loss_": None}
    declared = {k: c for k, c in cls.fitted_constraints().items() if k != "delta_"}
    checked = check_state(declared, state, {}, prefix="state.")
    pairs = checked["ece_by_gamma_"]
    if any(len(pair) != 2 for pair in pairs):
        raise InputError("state.ece_by_gamma_", "a list of [gamma, ECE] pairs", repr(pairs))
    checked["ece_by_gamma_"] = {g: e for g, e in pairs}
    check_log_temperature(checked["log_temperature_"], checked["temperature_"])
    if checked["gamma_"] not in obj.gamma:
        raise InputError("state.gamma_", f"one of params.gamma {obj.gamma}", repr(state["gamma_"]))
    guard = checked["guard_"]
    agrees = checked["delta_kept_"] == (guard in GUARDS[:2])
    if (guard == GUARDS[0]) != (obj.holdout == 0) or not agrees:
        expected = f"a guard agreeing with params.holdout ({obj.holdout:g}) and state.delta_kept_"
        raise InputError("state.guard_", expected, repr(guard))
    sgd = checked["sgd_log_temperature_"]
    checked["sgd_log_temperature_"] = math.nan if sgd is None else sgd
    obj.__dict__.update({k: checked[k] for k in state})
    return obj


def _delta(tensors: Path) -> Tensor:
    """The tensor file's one finite floating-point ``delta``."""
    try:
        loaded = load_file(str(tensors))
    except (SafetensorError, OSError, ValueError) as exc:
        raise InputError(str(tensors), "a safetensors file", str(exc)) from None
    delta = loaded.get("delta")
    if set(loaded) != {"delta"} or delta is None or not delta.is_floating_point():
        raise InputError(
            str(tensors), "one floating-point tensor named delta", repr(sorted(loaded))
        )
    if delta.ndim < 1 or not bool(torch.isfinite(delta).all()):
        raise InputError(
            str(tensors), "a finite delta of one input's shape", f"shape {tuple(delta.shape)}"
        )
    return delta


class _Anything(Constraint):
    """Any value (a field whose presence alone is checked here)."""

    def check(self, name: str, value: object) -> object:
        return value

    def describe(self) -> str:
        return "a value"


_ANY = _Anything()


def _paths(path: str | Path) -> tuple[Path, Path]:
    p = Path(path)
    return p.with_suffix(".safetensors"), p.with_suffix(".json")
