"""The contract every post-hoc calibrator follows, and their registry.

A calibrator maps a classifier's logits to calibrated probabilities:

- ``fit(logits, labels, sample_weight=None) -> self`` learns from a calibration set
  (weighted where the method allows it: :attr:`Calibrator.accepts_sample_weight`);
- ``predict_proba(logits)`` returns float64 probabilities (rows sum to 1);
- ``transform(logits)`` returns calibrated logits, for methods that map logits to logits;
- fitted state lives in attributes ending in ``_``; using an unfitted calibrator raises
  :class:`~calibkit.core.errors.NotFittedError`;
- ``save(path)`` / ``load(path)`` use JSON (never pickle); the round trip is bit-exact;
- the constructor parameters are declared in ``param_constraints`` (name -> a
  :class:`~calibkit.core.validation.Constraint`, in signature order): constructors check
  their arguments against it, :meth:`Calibrator.get_params` returns exactly those
  parameters, and configuration files and the CLI's ``--param`` read it too.

Calibrators are scikit-learn estimators without importing scikit-learn (which costs a
second): ``get_params(deep=...)``, ``set_params`` (checked against the declaration),
``sklearn.base.clone``, estimator tags and ``n_features_in_`` (the number of classes). The
samples ``X`` of scikit-learn's API are rows of logits, ``y`` their labels.

Inputs are numpy arrays or torch tensors. For models that only published probabilities,
pass ``log(probs)`` as logits (softmax ignores the per-row constant).
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.estimator import EstimatorAPI, check_sample_weight, same_value
from calibkit.core import errors
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Dims, check_state
from calibkit.core.outputs import ClassifierOutputs, as_outputs, check_scores, log_softmax64
from calibkit.core.registry import Registry
from calibkit.core.validation import (
    Constraint,
    Constraints,
    Integer,
    Real,
    check_params,
    is_integer,
)

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
FORMAT_VERSION = 1
#: The fields of a saved calibrator, in the order :meth:`Calibrator.to_json` writes them.
DOCUMENT_KEYS = ("calibkit_calibrator", "method", "params", "state")
#: Largest calibrator file read (a real one is far smaller; a larger one exhausts memory).
MAX_FILE_BYTES = 256 << 20
#: The largest magnitude of a fitted coefficient (weight, bias, slope, intercept) a loaded
#: state may hold: fits of logits stay far below it, and 1e300 would overflow the map.
MAX_COEFFICIENT = 1e6
#: A fitted scalar coefficient, as checked on load.
COEFFICIENT = Real(-MAX_COEFFICIENT, MAX_COEFFICIENT)
#: Deepest JSON nesting read (a real file, "auto" included, is under 10 levels deep).
MAX_DEPTH = 32


def _set_name(name: str, cls: type[Calibrator]) -> None:
    cls.name = name


def _build(name: str, klass: type[Calibrator], model: object = None, **params: Any) -> Calibrator:
    """How :meth:`CALIBRATORS.create <calibkit.core.registry.Registry.create>` builds an
    entry: declared parameters checked, the model given to a calibrator that takes it."""
    if klass.needs_model:
        return klass.create(model, params)  # type: ignore[attr-defined, no-any-return]
    if model is not None:
        raise InputError("model", f"no model for {name!r}, a calibrator of logits", "a model")
    return klass(**check_params(klass.param_constraints, params, name))


#: Calibrator classes by name; registering a class sets its ``name``.
CALIBRATORS: Registry[type[Calibrator]] = Registry(
    "calibrator", on_register=_set_name, create=_build
)


def read_json_document(path: str | Path, what: str) -> tuple[Any, str]:
    """The JSON document at ``path`` and its name for messages (``"<what> <path>"``): one
    :class:`InputError` for a missing, irregular, unreadable, oversized (over
    :data:`MAX_FILE_BYTES`), non-JSON or too deeply nested file. Used by every ``load`` of a
    fitted object saved as JSON.
    """
    p = Path(path)
    source = f"{what} {p}"
    if not p.exists():
        raise InputError(what, "an existing file", str(p))
    if not p.is_file():
        raise InputError(source, "a regular file", "something else")
    if p.stat().st_size > MAX_FILE_BYTES:
        limit = f"a file of at most {MAX_FILE_BYTES >> 20} MB"
        raise InputError(source, limit, f"{p.stat().st_size:,} bytes")
    try:
        return json.loads(p.read_bytes().decode("utf-8")), source
    except OSError as exc:
        raise InputError(source, "a readable file", str(exc.strerror)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(source, "valid JSON", str(exc)) from None
    except RecursionError:
        raise InputError(
            source, f"JSON nested at most {MAX_DEPTH} levels deep", "deeper nesting"
        ) from None


def create_calibrator(name: str, model: object = None, **params: Any) -> Calibrator:
    """A new calibrator of the registered ``name`` with ``params``; ``model`` is given to,
    and only to, a calibrator that takes the model (:attr:`Calibrator.needs_model`).

    The one factory verb (``CALIBRATORS.create``), as :func:`~calibkit.losses.create_loss`
    and :func:`~calibkit.models.create_model`. An undeclared parameter raises
    :class:`~calibkit.core.errors.InputError` listing the declared ones (see
    :attr:`Calibrator.param_constraints`).

    Parameters
    ----------
    name : str
        A key of :data:`CALIBRATORS`.
    model : torch.nn.Module, optional
        The classifier, for a calibrator that takes the model and its inputs.
    **params
        The calibrator's declared parameters.

    Returns
    -------
    Calibrator
        Unfitted.

    Examples
    --------
    >>> create_calibrator("temperature", t_max=50.0).t_max
    50.0
    """
    calibrator: Calibrator = CALIBRATORS.create(name, model=model, **params)
    return calibrator


def get_calibrator(name: str, model: object = None, **params: Any) -> Calibrator:
    """Deprecated alias of :func:`create_calibrator` (the one factory verb); it warns.

    Parameters
    ----------
    name, model, **params
        As for :func:`create_calibrator`.

    Returns
    -------
    Calibrator
        Unfitted.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     ts = get_calibrator("temperature")
    >>> ts.name, seen[0].category.__name__
    ('temperature', 'DeprecationWarning')
    """
    warnings.warn(
        "get_calibrator is deprecated: use create_calibrator (the same arguments)",
        DeprecationWarning,
        stacklevel=2,
    )
    return create_calibrator(name, model, **params)


class Calibrator(EstimatorAPI, ABC):
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
    #: The fitted attributes besides ``n_classes_``, in the order ``fit`` sets them: name
    #: -> constraint (shapes name ``k``, the classes, and the dimensions of
    #: :meth:`_state_dims`); a loaded state is checked against them.
    state_constraints: ClassVar[Constraints] = {}
    #: Whether ``fit`` takes ``sample_weight`` (the others refuse it with an InputError).
    accepts_sample_weight: ClassVar[bool] = False
    #: True for methods that fit each class from that class's own rows (per-class weights,
    #: one-vs-rest maps): they would never predict a class absent from the calibration
    #: labels, so ``fit`` refuses such a set. The others keep every class by construction.
    needs_every_class: ClassVar[bool] = False
    #: True for methods that take the model and refit on its inputs (Neural Clamping,
    #: :class:`~calibkit.calibrators.model_calibrator.ModelCalibrator`); consumers of
    #: logits (``compare``, ``auto``, ``calibkit methods``) leave them out.
    needs_model: ClassVar[bool] = False
    #: True for methods that take each sample's group (``fit(..., groups=)`` and
    #: ``predict_proba(..., groups=)``, :mod:`calibkit.calibrators.groupwise`): ``compare``
    #: and ``auto`` run them only when named (``compare --groups KEY`` names them).
    takes_groups: ClassVar[bool] = False

    # ----- the contract ---------------------------------------------------------------
    def fit(self, logits: object, labels: object, sample_weight: object = None) -> Self:
        """Learn the calibration map from calibration-set ``logits`` and ``labels``.

        ``sample_weight`` (non-negative, one per row, not all 0) weighs each row as that
        many repetitions of it would; ``None`` weighs all rows equally.
        """
        out = self._check_fit_input(logits, labels)
        weights = None
        if sample_weight is not None:
            if not self.accepts_sample_weight:
                expected = f"None for {self.name!r}, a method that cannot weight samples"
                raise InputError("sample_weight", expected, "weights")
            weights = check_sample_weight(sample_weight, out.labels.shape[0])
        if self.needs_every_class:
            self._check_every_class(out, weights)
        self.n_classes_ = out.n_classes
        if weights is None:  # subclasses that take no weights define _fit(out)
            self._fit(out)
        else:
            self._fit(out, weights)
        return self

    def predict_proba(self, logits: object) -> F64:
        """Calibrated probabilities (float64, rows sum to 1)."""
        z = self._check_predict_input(logits)
        return self._predict_proba(z)

    def _transform_logits(self, logits: object) -> F64:
        """Calibrated logits (only for methods that map logits to logits)."""
        z = self._check_predict_input(logits)
        return self._transform(z)

    @abstractmethod
    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        """Fit on ``out``, each row weighted by ``weights`` (``None``: all equal)."""

    def _predict_proba(self, logits: F64) -> F64:
        return np.exp(log_softmax64(self._transform(logits)))

    def _transform(self, logits: F64) -> F64:
        raise NotImplementedError

    def to_module(self) -> nn.Module:
        """The fitted map as a torch module: logits in, ``predict_proba``'s probabilities
        out (float64 buffers and arithmetic), accepting the shapes ``predict_proba`` accepts
        and giving NaN rows for non-finite rows (see :mod:`calibkit.calibrators.modules`)."""
        from calibkit.calibrators.modules import CheckedLogits

        self.check_is_fitted()
        return CheckedLogits(self._module(), self.n_classes_).eval()

    def input_module(self) -> nn.Module:
        """What a model's inputs go through before the model, for deployment
        (:class:`~calibkit.calibrators.calibrated_model.CalibratedModel`): the identity for a
        calibrator of logits."""
        from torch import nn

        self.check_is_fitted()
        return nn.Identity()

    def output_module(self) -> nn.Module:
        """The map from the model's logits to calibrated probabilities, for deployment: the
        calibrator's :meth:`to_module` for a calibrator of logits."""
        return self.to_module()

    def _module(self) -> nn.Module:
        raise InputError("method", "a calibrator with a torch module", repr(self.name))

    # ----- parameters and fitted state ---------------------------------------------------
    def _set_params(self, **params: Any) -> None:
        """Check ``params`` against :attr:`param_constraints` and store them as attributes."""
        for name, value in check_params(self.param_constraints, params, self.name).items():
            # keep the caller's object when checking did not change it (clone needs that)
            setattr(self, name, params[name] if same_value(value, params[name]) else value)

    def fitted_state(self) -> dict[str, Any]:
        """The fitted attributes (names ending in ``_``)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "n_classes_")

    def check_is_fitted(self) -> None:
        if not self.is_fitted:
            raise errors.NotFittedError(
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

    def _check_every_class(self, out: ClassifierOutputs, weights: F64 | None) -> None:
        """An InputError naming the first class without a row (of positive weight)."""
        seen = out.labels if weights is None else out.labels[weights > 0]
        missing = np.flatnonzero(np.bincount(seen, minlength=out.n_classes) == 0)
        if missing.size:
            more = f" (and {missing.size - 1} more)" if missing.size > 1 else ""
            raise InputError(
                "labels",
                f"every one of the {out.n_classes} classes at least once for {self.name!r}, "
                "which fits each class from its own rows (temperature scaling keeps them all)",
                f"no row of class {int(missing[0])}{more}",
            )

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
    def from_json(cls, data: object, source: str = "calibrator") -> Calibrator:
        """Rebuild a fitted calibrator from :meth:`to_json` output.

        The document, the parameters (:attr:`param_constraints`) and the fitted state
        (:meth:`fitted_constraints`) are checked field by field: an unknown or missing
        field, a wrong type, shape or range, or a non-finite value raises one InputError
        naming ``source`` and the field (e.g. ``state.temperature_``).
        """
        try:
            return _rebuild(data)
        except InputError as exc:
            got = exc.got if len(exc.got) <= 80 else exc.got[:77] + "..."
            raise InputError(f"{source}: {exc.argument}", exc.expected, got) from None

    @classmethod
    def load(cls, path: str | Path) -> Calibrator:
        """Read a calibrator written by :meth:`save` (checked as :meth:`from_json` says)."""
        data, source = read_json_document(path, "calibrator file")
        return cls.from_json(data, source=source)

    @classmethod
    def fitted_constraints(cls) -> dict[str, Constraint]:
        """Every fitted attribute, as checked on load: ``n_classes_``, then
        :attr:`state_constraints` (in the order :meth:`fit` sets them)."""
        classes = Integer(2, 2) if cls.binary_only else Integer(low=2)
        return {"n_classes_": classes, **cls.state_constraints}

    def _state_dims(self, n_classes: int) -> Dims:
        """The lengths the state's array shapes name (``k``: the number of classes)."""
        return {"k": n_classes}

    def _check_state(self) -> None:
        """Refuse loaded fitted attributes whose relations the declarations cannot state."""
        return None

    @classmethod
    def _upgrade(
        cls, params: dict[str, Any], state: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The parameters and state of a file saved by an older version of the method, as
        that version fitted them (default: unchanged)."""
        return params, state

    def _load_state(self, state: object) -> None:
        if not isinstance(state, dict):
            raise InputError("state", "a mapping of fitted attributes", type(state).__name__)
        declared = self.fitted_constraints()
        dims: Dims = {}
        if "n_classes_" in state:  # the shapes depend on it: check it first
            dims = self._state_dims(
                declared["n_classes_"].check("state.n_classes_", state["n_classes_"])
            )
        for key, value in check_state(declared, state, dims, prefix="state.").items():
            setattr(self, key, value)
        self._check_state()

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


def _rebuild(data: object) -> Calibrator:
    """A fitted calibrator from a :meth:`Calibrator.to_json` document, every field checked."""
    if not isinstance(data, dict) or data.get("calibkit_calibrator") != FORMAT_VERSION:
        expected = f"a calibkit calibrator JSON (version {FORMAT_VERSION})"
        raise InputError("document", expected, "something else")
    unknown = [key for key in data if key not in DOCUMENT_KEYS]
    missing = [key for key in DOCUMENT_KEYS if key not in data]
    if unknown or missing:
        got = f"unknown {unknown[0]!r}" if unknown else f"no {missing[0]!r}"
        raise InputError("document", "the fields " + ", ".join(DOCUMENT_KEYS), got)
    method = data["method"]
    try:
        klass = CALIBRATORS.get(method if isinstance(method, str) else repr(method))
    except InputError as exc:
        raise InputError("method", exc.expected, exc.got) from None
    if klass.needs_model:  # saved by its own save(), loaded with its model
        raise InputError("method", "a calibrator of logits", repr(method))
    params = _decode(data["params"], "params")
    if not isinstance(params, dict):
        raise InputError("params", "a mapping of parameters", type(params).__name__)
    state = _decode(data["state"], "state")
    if isinstance(state, dict):  # a file of an older version of the method: as it was fitted
        params, state = klass._upgrade(params, state)
    checked = check_params(klass.param_constraints, params, "params", prefix="params.")
    try:
        obj = klass(**checked)
    except InputError as exc:  # a relation between parameters (t_min < t_max, ...)
        raise InputError(f"params.{exc.argument}", exc.expected, exc.got) from None
    obj._load_state(state)
    return obj


def _decode(obj: Any, name: str, depth: int = 0) -> Any:
    """The JSON value ``obj`` (field ``name``) with arrays and non-finite floats decoded."""
    if depth > MAX_DEPTH:
        raise InputError(name, f"JSON nested at most {MAX_DEPTH} levels deep", "deeper nesting")
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            return _decode_array(obj, name)
        if "__float__" in obj:
            if set(obj) != {"__float__"} or obj["__float__"] not in ("nan", "inf", "-inf"):
                raise InputError(name, "a float encoded as nan, inf or -inf", repr(obj))
            return float(obj["__float__"])
        return {k: _decode(v, f"{name}.{k}", depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [
            _decode(v, f"{name}[{i}]", depth + 1) if isinstance(v, dict | list) else v
            for i, v in enumerate(obj)
        ]
    return obj


def _decode_array(obj: dict[str, Any], name: str) -> np.ndarray:
    """An array encoded by :func:`_encode`: float64 or int64 numbers of the stated shape."""
    if set(obj) != {"__ndarray__", "dtype", "shape"}:
        raise InputError(name, "an array as __ndarray__, dtype and shape", repr(sorted(obj)))
    dtype, shape, values = obj["dtype"], obj["shape"], obj["__ndarray__"]
    if dtype not in ("float64", "int64"):
        raise InputError(f"{name}.dtype", "float64 or int64", repr(dtype))
    if (
        not isinstance(shape, list)
        or len(shape) > 4
        or not all(is_integer(n) and n >= 0 for n in shape)
    ):
        raise InputError(f"{name}.shape", "a list of at most 4 lengths", repr(shape))
    try:
        arr = np.array(values)
    except (ValueError, TypeError, OverflowError):
        arr = np.array(None)
    expected = f"{dtype} numbers of shape {tuple(shape)}"
    if arr.dtype.kind not in "ifb":
        raise InputError(name, expected, "values that are not all numbers")
    if arr.shape != tuple(shape):
        raise InputError(name, expected, f"shape {arr.shape}")
    if arr.size and (arr.dtype.kind not in ("if" if dtype == "float64" else "i")):
        raise InputError(name, expected, f"{arr.dtype} values")
    if _has_bool(values, len(shape)):
        raise InputError(name, expected, "true or false among the numbers")
    return arr.astype(dtype)


def _has_bool(values: Any, ndim: int) -> bool:
    """Whether a nested list of ``ndim`` levels (shape already checked) holds a JSON bool."""
    flat: Iterable[Any] = [values] if ndim == 0 else values
    for _ in range(ndim - 1):
        flat = itertools.chain.from_iterable(flat)
    return any(type(v) is bool for v in flat)
