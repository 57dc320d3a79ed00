"""The contract every post-hoc calibrator follows, and their registry.

A calibrator maps a classifier's logits to calibrated probabilities:

- ``fit(logits, labels) -> self`` learns from a calibration set;
- ``predict_proba(logits)`` returns float64 probabilities (rows sum to 1);
- ``transform(logits)`` returns calibrated logits, for methods that map logits to logits;
- fitted state lives in attributes ending in ``_``; using an unfitted calibrator raises
  :class:`~calibkit.core.errors.NotFittedError`;
- ``save(path)`` / ``load(path)`` use JSON (never pickle); the round trip is bit-exact;
- the constructor parameters are declared in ``param_constraints`` (name -> a
  :class:`~calibkit.core.validation.Constraint`, in signature order): constructors check
  their arguments against it, :meth:`Calibrator.get_params` returns exactly those
  parameters, and configuration files and the CLI's ``--param`` read it too.

Inputs are numpy arrays or torch tensors. For models that only published probabilities,
pass ``log(probs)`` as logits (softmax ignores the per-row constant).
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError, NotFittedError
from calibkit.core.outputs import ClassifierOutputs, as_outputs, check_scores, log_softmax64
from calibkit.core.registry import Registry
from calibkit.core.validation import Constraints, check_params

F64 = npt.NDArray[np.float64]
FORMAT_VERSION = 1


def _set_name(name: str, cls: type[Calibrator]) -> None:
    cls.name = name


#: Calibrator classes by name; registering a class sets its ``name``.
CALIBRATORS: Registry[type[Calibrator]] = Registry("calibrator", on_register=_set_name)


def get_calibrator(name: str, **params: Any) -> Calibrator:
    """A new calibrator of the registered ``name`` with ``params``.

    An undeclared parameter raises :class:`~calibkit.core.errors.InputError` listing the
    declared ones (see :attr:`Calibrator.param_constraints`).
    """
    klass = CALIBRATORS.get(name)
    return klass(**check_params(klass.param_constraints, params, name))


class Calibrator(ABC):
    """Base class of post-hoc calibrators (see the module docstring).

    A subclass declares ``param_constraints`` and implements ``_fit`` plus ``_transform``
    (logit maps) or ``_predict_proba``; registering it with ``CALIBRATORS.register`` gives
    it its ``name``.

    Examples
    --------
    >>> from calibkit.calibrators import get_calibrator
    >>> ts = get_calibrator("temperature").fit([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]], [0, 1, 1])
    >>> isinstance(ts, Calibrator), ts.name, ts.is_fitted
    (True, 'temperature', True)
    >>> ts.predict_proba([[0.0, 0.0]]).tolist()
    [[0.5, 0.5]]
    """

    name: ClassVar[str] = "base"
    #: True for methods defined only for two classes (Platt, beta).
    binary_only: ClassVar[bool] = False
    #: True for methods whose output is logits (``transform`` is available).
    maps_logits: ClassVar[bool] = False
    #: The constructor parameters: name -> constraint, in signature order.
    param_constraints: ClassVar[Constraints] = {}

    # ----- the contract ---------------------------------------------------------------
    def fit(self, logits: object, labels: object) -> Self:
        """Learn the calibration map from calibration-set ``logits`` and ``labels``."""
        out = self._check_fit_input(logits, labels)
        self.n_classes_ = out.n_classes
        self._fit(out)
        return self

    def predict_proba(self, logits: object) -> F64:
        """Calibrated probabilities (float64, rows sum to 1)."""
        z = self._check_predict_input(logits)
        return self._predict_proba(z)

    def transform(self, logits: object) -> F64:
        """Calibrated logits (only for methods that map logits to logits)."""
        if not self.maps_logits:
            raise InputError(
                "method",
                "a calibrator that maps logits to logits for transform()",
                f"{self.name!r}, which outputs probabilities; use predict_proba()",
            )
        z = self._check_predict_input(logits)
        return self._transform(z)

    @abstractmethod
    def _fit(self, out: ClassifierOutputs) -> None: ...

    def _predict_proba(self, logits: F64) -> F64:
        return np.exp(log_softmax64(self._transform(logits)))

    def _transform(self, logits: F64) -> F64:
        raise NotImplementedError

    # ----- parameters and fitted state ---------------------------------------------------
    def _set_params(self, **params: Any) -> None:
        """Check ``params`` against :attr:`param_constraints` and store them as attributes."""
        for name, value in check_params(self.param_constraints, params, self.name).items():
            setattr(self, name, value)

    def get_params(self) -> dict[str, Any]:
        """The declared constructor parameters (:attr:`param_constraints`), in order."""
        return {name: getattr(self, name) for name in self.param_constraints}

    def fitted_state(self) -> dict[str, Any]:
        """The fitted attributes (names ending in ``_``)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "n_classes_")

    def check_is_fitted(self) -> None:
        if not self.is_fitted:
            raise NotFittedError(
                f"this {type(self).__name__} ({self.name!r}) is not fitted yet: call fit() first"
            )

    # ----- input checks ------------------------------------------------------------------
    def _check_fit_input(self, logits: object, labels: object) -> ClassifierOutputs:
        out = as_outputs(labels, logits=logits)
        if self.binary_only and out.n_classes != 2:
            raise InputError(
                "logits",
                f"2 classes for {self.name!r} (a binary method)",
                f"{out.n_classes} classes",
            )
        if out.labels.min() == out.labels.max():
            raise InputError(
                "labels",
                "a calibration set with at least 2 distinct labels",
                f"only label {int(out.labels[0])}",
            )
        return out

    def _check_predict_input(self, logits: object) -> F64:
        self.check_is_fitted()
        z = check_scores(logits, "logits")
        if z.shape[1] != self.n_classes_:
            raise InputError(
                "logits", f"{self.n_classes_} columns (as at fit time)", f"{z.shape[1]} columns"
            )
        return np.asarray(z, dtype=np.float64)

    # ----- persistence -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict naming the method, its parameters and its fitted state."""
        self.check_is_fitted()
        return {
            "calibkit_calibrator": FORMAT_VERSION,
            "method": self.name,
            "params": _encode(self.get_params()),
            "state": _encode(self.fitted_state()),
        }

    def save(self, path: str | Path) -> None:
        """Write the fitted calibrator to a JSON file (atomically)."""
        from calibkit.io.atomic import atomic_write_text

        atomic_write_text(Path(path), json.dumps(self.to_json(), indent=1, allow_nan=False))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibrator:
        """Rebuild a fitted calibrator from :meth:`to_json` output."""
        if not isinstance(data, dict) or data.get("calibkit_calibrator") != FORMAT_VERSION:
            raise InputError(
                "calibrator file",
                f"a calibkit calibrator JSON (version {FORMAT_VERSION})",
                "something else",
            )
        klass = CALIBRATORS.get(str(data.get("method")))
        try:
            obj = klass(**_decode(data["params"]))
            for key, val in _decode(data["state"]).items():
                if not key.endswith("_"):
                    raise KeyError(key)
                setattr(obj, key, val)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError("calibrator file", "valid params and state", repr(exc)) from None
        obj.check_is_fitted()
        return obj

    @classmethod
    def load(cls, path: str | Path) -> Calibrator:
        """Read a calibrator written by :meth:`save`."""
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError("calibrator file", "an existing file", str(p)) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError("calibrator file", "valid JSON", f"{p}: {exc}") from None
        return cls.from_json(data)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


def _encode(obj: Any) -> Any:
    """JSON-encode numpy arrays and scalars exactly (floats use shortest round-trip repr)."""
    if isinstance(obj, np.ndarray):
        return {"__ndarray__": obj.tolist(), "dtype": str(obj.dtype), "shape": list(obj.shape)}
    if isinstance(obj, dict):
        return {str(k): _encode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_encode(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"__float__": repr(obj)}
    return obj


def _decode(obj: Any) -> Any:
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            arr = np.array(obj["__ndarray__"], dtype=np.dtype(obj["dtype"]))
            return arr.reshape(obj["shape"])
        if "__float__" in obj:
            return float(obj["__float__"])
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    return obj
