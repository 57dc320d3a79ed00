"""Saving and loading a fitted Neural Clamping, never by pickle.

A saved :class:`~calibkit.calibrators.clamping.NeuralClamping` is two files next to each
other: ``delta_`` in a ``.safetensors`` file, and everything else (the constructor
parameters, the other fitted attributes, the name of the delta file and its sha256) in a
``.json`` sidecar. The sidecar keeps the fields of
:class:`~calibkit.calibrators.clamping.settings.SGDSettings` flat among the other
parameters, as format version 1 always has, so files written before they were grouped
still load. Loading checks the sidecar's format version and the delta's checksum, and
applies the result to a model given by the caller (the model itself is not saved).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from safetensors.torch import load_file, save_file

from calibkit.calibrators.clamping.settings import flat_params, split_params
from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes, atomic_write_text

if TYPE_CHECKING:
    from torch import nn

    from calibkit.calibrators.clamping.model import NeuralClamping

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


def load_clamping(cls: type[NeuralClamping], path: str | Path, model: nn.Module) -> NeuralClamping:
    """A ``cls`` written by :func:`save_clamping`, applied to ``model``: the ``.json``
    sidecar's version and the ``.safetensors`` delta's sha256 are checked (no pickle)."""
    tensors, sidecar = _paths(path)
    try:
        doc = json.loads(sidecar.read_text(encoding="utf-8"))
        data = tensors.read_bytes()
    except FileNotFoundError as exc:
        raise InputError("path", "an existing saved Neural Clamping", str(exc.filename)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("path", "a valid JSON sidecar", f"{sidecar}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("calibkit_neural_clamping") != FORMAT_VERSION:
        raise InputError(
            "path", f"a Neural Clamping sidecar (version {FORMAT_VERSION})", str(sidecar)
        )
    if hashlib.sha256(data).hexdigest() != doc.get("delta_sha256"):
        raise InputError("path", "a delta file matching its sidecar's checksum", str(tensors))
    try:
        params, state = doc["params"], doc["state"]
        params["gamma"] = tuple(params["gamma"])
        obj = cls(model, **split_params(params))
        state["ece_by_gamma_"] = {float(g): float(e) for g, e in state["ece_by_gamma_"]}
        state["history_"] = [float(v) for v in state["history_"]]
        sgd = state.get("sgd_log_temperature_")
        state["sgd_log_temperature_"] = math.nan if sgd is None else float(sgd)
        obj.__dict__.update({k: v for k, v in state.items() if k.endswith("_")})
        obj.delta_ = load_file(str(tensors))["delta"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError("path", "valid params and state", repr(exc)) from None
    obj.check_is_fitted()
    return obj


def _paths(path: str | Path) -> tuple[Path, Path]:
    p = Path(path)
    return p.with_suffix(".safetensors"), p.with_suffix(".json")
