"""The one contract of every fitted post-hoc object, their registry, and the one loader.

Every object calibkit fits after training is a :class:`PostHoc`, of one of five kinds
(:data:`~calibkit.calibrators.persistence.KINDS`):

- ``logits``: calibrators of logits (temperature scaling, Dirichlet, ...), logits to
  calibrated probabilities (:class:`~calibkit.calibrators.base.Calibrator`);
- ``groups``: calibrators that also take each row's group (group-wise temperature
  scaling, multicalibration);
- ``model``: calibrators that take the model and its inputs (Neural Clamping);
- ``sets``: conformal predictors, logits to prediction sets
  (:class:`~calibkit.calibrators.sets.conformal.ConformalClassifier`);
- ``priors``: prior-shift adapters, logits to probabilities adapted to new class priors
  (:class:`~calibkit.calibrators.priors.label_shift.PriorShiftAdapter`).

What they share, declared once here:

- constructor parameters declared in ``param_constraints`` (name -> constraint, in
  signature order): checked by the constructor, returned by ``get_params``, set (checked,
  all or nothing) by ``set_params``; ``sklearn.base.clone`` and ``repr`` read them
  (``python_only`` names those the command line neither offers nor accepts);
- ``fit(...) -> self``; fitted state in attributes ending in ``_``, declared in
  ``state_constraints`` (``optional_state`` names those a fit may leave unset); using an
  unfitted object raises :class:`~calibkit.core.errors.NotFittedError`;
- per-row inputs besides the logits (each row's group) declared in ``fit_metadata``:
  ``fit`` and ``predict_proba`` take them by keyword and the base routes them, refusing an
  undeclared one (:meth:`PostHoc._route`);
- one JSON document (:mod:`~calibkit.calibrators.persistence`) with its ``kind``, written
  by ``save`` and read back, bit-exact, by :func:`load` (any kind) or ``cls.load`` (that
  class, or an error saying what the file holds), every field checked (array shapes
  against ``n_classes_``; values against the ranges the parameters give the fit, such as
  a temperature within ``[t_min, t_max]``; relations the declarations cannot state in
  ``_check_state``; a composed kind's calibrator against its parameters,
  :meth:`OnCalibrator._check_calibrator_state`);
- what the fitted values were computed with, recorded by the fit and checked on load (see
  :mod:`~calibkit.calibrators.persistence` for why a record and not a digest): the
  parameters predictions read beside the state (``fitted_with``: a conformal predictor's
  score; the record ``fitted_with_``), and, for a map that is not shift-invariant
  (``shift_invariant = False``: vector and matrix scaling, MS-ODIR), whether it was fitted
  on logits or on probabilities (``input_kind_``: the kind the caller declared to ``fit``,
  never read from the values), so that a map fitted on probabilities gives the same
  numbers for a model's logits (:meth:`PostHoc._as_fitted_kind`) and ``calibkit apply``
  refuses probabilities for a map fitted on logits;
- ``to_module()``: the fitted map as a torch module.

:data:`CALIBRATORS` registers every kind by name; ``CALIBRATORS.names(kind="sets")`` asks
it for one kind. Composition goes one way: a conformal predictor or a prior adapter takes
the calibrator underneath through one :class:`CalibratorSpec` (a registered name, or an
instance, fitted or not).

>>> import calibkit as ck
>>> CALIBRATORS.names(kind="sets"), CALIBRATORS.names(kind="priors")
(['conformal'], ['prior_shift'])
>>> ts = ck.TemperatureScaling().fit([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1])
>>> load_document(ts.to_json()).temperature_ == ts.temperature_
True
"""

from __future__ import annotations

import contextlib
import copy
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.estimator import EstimatorAPI
from calibkit.calibrators.persistence import (
    KINDS,
    Document,
    decode,
    document,
    parse_document,
    read_json_document,
    write_json_document,
)
from calibkit.core import catalog, errors
from calibkit.core.errors import InputError
from calibkit.core.fitted_state import Dims, check_state
from calibkit.core.outputs import ClassifierOutputs, as_outputs, check_scores, log_softmax64
from calibkit.core.params import Declared, same_value
from calibkit.core.registry import Registry
from calibkit.core.validation import Choice, Constraint, Constraints, Integer, check_params

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
#: What a calibrator can be fitted on, as the caller declares it (``fit(...,
#: input_kind=...)``) and the fit records it (``state.input_kind_``): the logits, or
#: probabilities (given as their logarithms). Nothing is guessed from the values.
INPUT_KINDS = ("logits", "probs")
#: The kind of input a fit recorded, as a loaded state holds it.
INPUT_KIND = Choice(*INPUT_KINDS)


def check_input_kind(value: object) -> str:
    """``value`` if it is one of :data:`INPUT_KINDS` (the ``input_kind`` a caller declares
    to ``fit``), else one InputError naming ``input_kind``.

    >>> check_input_kind("probs")
    'probs'
    >>> check_input_kind("log-probs")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: input_kind: expected 'logits' or 'probs' ..., got 'log-probs'
    """
    if isinstance(value, str) and value in INPUT_KINDS:
        return value
    raise InputError(
        "input_kind",
        "'logits' or 'probs' (the logits given are the log-probabilities of a model that "
        "published probabilities)",
        repr(value),
    )


def _set_name(name: str, cls: type[PostHoc]) -> None:
    cls.name = name


def _build(name: str, klass: type[PostHoc], model: object = None, **params: Any) -> PostHoc:
    """How :meth:`CALIBRATORS.create <calibkit.core.registry.Registry.create>` builds an
    entry: declared parameters checked, the model given to a kind that takes it."""
    return klass.create(model, params)


#: Every kind of fitted object by name; registering a class sets its ``name``.
CALIBRATORS: Registry[type[PostHoc]] = Registry(
    "calibrator", on_register=_set_name, create=_build, kind_of=lambda cls: cls.kind
)
for _name, _entry in catalog.ENTRIES.items():  # known at once, each module imported when asked
    CALIBRATORS.declare(
        _name,
        _entry.module,
        kind=_entry.kind,
        attributes={"binary_only": _entry.binary_only},
        **_entry.info(),
    )


class PostHoc(Declared, EstimatorAPI, ABC):
    """The base of every fitted post-hoc object (see the module docstring).

    A kind declares ``kind``, its parameters (with :func:`~calibkit.core.params.param`),
    ``state_constraints`` (and
    ``optional_state``, ``fit_metadata``) and implements ``fit`` and ``to_module``;
    its entry in :mod:`calibkit.core.catalog` names it and registers it in
    :data:`CALIBRATORS` when its module is imported (a plug-in's class is registered with
    ``CALIBRATORS.register("name")``). The rest is here.

    Examples
    --------
    >>> import calibkit as ck
    >>> sorted({CALIBRATORS.kind_of(name) for name in CALIBRATORS.names()})
    ['groups', 'logits', 'model', 'priors', 'sets']
    >>> all(issubclass(CALIBRATORS.get(name), PostHoc) for name in CALIBRATORS.names())
    True
    >>> ck.ConformalClassifier.fit_metadata, ck.GroupwiseTemperatureScaling.fit_metadata
    ((), ('groups',))
    """

    name: ClassVar[str] = "base"
    #: The kind (a key of :data:`~calibkit.calibrators.persistence.KINDS`).
    kind: ClassVar[str] = "logits"
    #: True for methods defined only for two classes (Platt, beta).
    binary_only: ClassVar[bool] = False
    #: True for methods whose output is logits (``transform`` is available).
    maps_logits: ClassVar[bool] = False
    #: The fitted attributes besides ``n_classes_``, in the order ``fit`` sets them: name
    #: -> constraint (array shapes name ``k``, the classes, and the dimensions of
    #: :meth:`_state_dims`); a loaded state is checked against them.
    state_constraints: ClassVar[Constraints] = {}
    #: Fitted attributes a fit may leave unset (a prior adapter's target priors).
    optional_state: ClassVar[tuple[str, ...]] = ()
    #: The parameters predictions read beside the fitted state (a conformal predictor's
    #: score), recorded in ``fitted_with_`` (:meth:`_record_params`; module doc).
    fitted_with: ClassVar[tuple[str, ...]] = ()
    #: False for a map whose output changes when a constant is added to a row of its input
    #: (vector and matrix scaling, MS-ODIR): the fit records ``input_kind_`` (module doc).
    shift_invariant: ClassVar[bool] = True
    #: Per-row inputs ``fit`` and ``predict_proba`` take by keyword besides the logits
    #: (``("groups",)`` for the group calibrators); the base routes them.
    fit_metadata: ClassVar[tuple[str, ...]] = ()
    #: Whether ``fit`` takes ``sample_weight`` (the others refuse it with an InputError).
    accepts_sample_weight: ClassVar[bool] = False
    #: True for methods that fit each class from that class's own rows (per-class weights,
    #: one-vs-rest maps): they would never predict a class absent from the calibration
    #: labels, so ``fit`` refuses such a set. The others keep every class by construction.
    needs_every_class: ClassVar[bool] = False
    #: ``kind == "model"``: the method takes the model and its inputs (set per class).
    needs_model: ClassVar[bool] = False
    #: ``"groups" in fit_metadata`` (set per class).
    takes_groups: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind not in KINDS:
            raise TypeError(f"{cls.__name__}.kind must be one of {', '.join(KINDS)}")
        cls.needs_model = cls.kind == "model"
        cls.takes_groups = "groups" in cls.fit_metadata
        key = catalog.key_of(cls.__module__, cls.__qualname__)
        if key is not None:  # a catalogued class: its entry says its name and facts
            entry = catalog.ENTRIES[key]
            if cls.kind != entry.kind:
                raise TypeError(
                    f"{cls.__name__} is of kind {cls.kind!r}, in {entry.kind!r}'s folder"
                )
            cls.binary_only = entry.binary_only
            CALIBRATORS.register(key)(cls)

    # ----- construction ---------------------------------------------------------------
    @classmethod
    def create(cls, model: object, params: Mapping[str, Any]) -> Self:
        """A new ``cls`` with ``params`` checked against :attr:`param_constraints`
        (``model``: only for the kind that takes it)."""
        if model is not None:
            raise InputError("model", f"no model for {cls.name!r}, a {cls.kind} kind", "a model")
        return cls(**check_params(cls.param_constraints, params, cls.name))

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    # ----- fitted state ---------------------------------------------------------------
    def fitted_state(self) -> dict[str, Any]:
        """The fitted attributes (names ending in ``_``)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "n_classes_")

    @contextlib.contextmanager
    def _fit_or_unchanged(self) -> Iterator[None]:
        """The body of a ``fit``: should it raise midway (input refused late, an interrupt),
        the object is left as it was before the call, fitted or not, never half fitted."""
        before = dict(vars(self))
        try:
            yield
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise

    def check_is_fitted(self) -> None:
        if not self.is_fitted:
            raise errors.NotFittedError(
                f"this {type(self).__name__} ({self.name!r}) is not fitted yet: call fit() first"
            )

    def _route(self, metadata: Mapping[str, object]) -> dict[str, object]:
        """The per-row inputs given to ``fit`` or ``predict_proba`` besides the logits,
        checked against :attr:`fit_metadata` (an undeclared one is refused, naming it)."""
        unknown = [key for key in metadata if key not in self.fit_metadata]
        if unknown:
            declared = ", ".join(self.fit_metadata) or "none"
            raise InputError(
                unknown[0], f"only the inputs {self.name!r} declares ({declared})", "a value"
            )
        return dict(metadata)

    def _check_predict_input(self, logits: object) -> F64:
        """``logits`` checked for prediction: fitted, finite, as many columns as at fit."""
        self.check_is_fitted()
        z = check_scores(logits, "logits")
        if z.shape[1] != self.n_classes_:
            raise InputError(
                "logits", f"{self.n_classes_} columns (as at fit time)", f"{z.shape[1]} columns"
            )
        return self._as_fitted_kind(np.asarray(z, dtype=np.float64))

    def _as_fitted_kind(self, z: F64) -> F64:
        """``z`` as the map takes it: for a map that is not shift-invariant fitted on
        probabilities (``input_kind_ == "probs"``), the log-softmax of every row (the
        log-probabilities themselves, up to rounding, for log-probabilities; those of the
        model for its logits: the same numbers either way); unchanged for the others."""
        if not self.shift_invariant and getattr(self, "input_kind_", None) == "probs":
            return log_softmax64(z)
        return z

    def fitted_input_kind(self) -> str | None:
        """The kind of input the map was fitted on where its numbers depend on it: the
        ``input_kind_`` of a map that is not shift-invariant (``"logits"`` or ``"probs"``),
        None for a map that gives the same numbers for a
        model's logits and its log-probabilities. A composed kind answers for the map
        underneath (:meth:`OnCalibrator.fitted_input_kind`, ``auto``'s choice).

        >>> import calibkit as ck
        >>> z, y = [[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 2.0]], [0, 1, 1, 1]
        >>> ck.TemperatureScaling().fit(z, y).fitted_input_kind() is None
        True
        >>> ck.create_calibrator("vector").fit(z, y, input_kind="probs").fitted_input_kind()
        'probs'
        """
        if self.shift_invariant:
            return None
        kind: str | None = getattr(self, "input_kind_", None)
        return kind

    @abstractmethod
    def to_module(self) -> nn.Module:
        """The fitted map as a torch module."""

    # ----- persistence ----------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The JSON-ready document: kind, method, parameters and fitted state."""
        self.check_is_fitted()
        self._check_fitted_with("")
        return document(self.kind, self.name, self._saved_params(), self.fitted_state())

    def _saved_params(self) -> dict[str, Any]:
        """The parameters as a document holds them (each constraint's ``encode``, if any)."""
        return {
            key: getattr(self.param_constraints[key], "encode", _same)(value)
            for key, value in self.get_params().items()
        }

    def save(self, path: str | Path) -> None:
        """Write the fitted object to a JSON file (atomically; never pickle)."""
        write_json_document(path, self.to_json())

    @classmethod
    def from_json(cls, data: object, source: str = "calibkit document") -> Self:
        """Rebuild a fitted object from :meth:`to_json` output (any version calibkit wrote).

        The document, the parameters (:attr:`param_constraints`) and the fitted state
        (:meth:`fitted_constraints`) are checked field by field: an unknown or missing
        field, a wrong type, shape or range, or a non-finite value raises one InputError
        naming ``source`` and the field (e.g. ``state.temperature_``); so does a document
        of another class than ``cls``.
        """
        return cls._expect(load_document(data, source), source)

    @classmethod
    def load(cls, path: str | Path, model: nn.Module | None = None) -> Self:
        """Read a file written by :meth:`save` (checked as :meth:`from_json` says);
        ``model`` for a calibrator that takes the model."""
        return cls._expect(load(path, model=model), f"file {path}")

    @classmethod
    def _expect(cls, obj: PostHoc, source: str) -> Self:
        if not isinstance(obj, cls):
            raise InputError(
                source,
                f"a saved {cls.__name__} (calibkit.load reads any kind)",
                f"a saved {type(obj).__name__} ({obj.name!r}, kind {obj.kind!r})",
            )
        return obj

    @classmethod
    def _from_document(
        cls, doc: Document, path: Path | None = None, model: object = None
    ) -> PostHoc:
        """A fitted ``cls`` from a parsed document, every field checked."""
        if model is not None:
            raise InputError("model", f"no model for {cls.name!r}, a {cls.kind} kind", "a model")
        params = decode(doc.params, "params")
        if not isinstance(params, dict):
            raise InputError("params", "a mapping of parameters", type(params).__name__)
        state = decode(doc.state, "state")
        checked = check_params(cls.param_constraints, params, "params", prefix="params.")
        try:
            obj = cls(**checked)
        except InputError as exc:  # a relation between parameters (t_min < t_max, ...)
            raise InputError(f"params.{exc.argument}", exc.expected, exc.got) from None
        obj._load_state(state)
        return obj

    @classmethod
    def fitted_constraints(cls) -> dict[str, Constraint]:
        """Every fitted attribute, as checked on load, in the order :meth:`fit` sets them:
        ``n_classes_``, the record of the :attr:`fitted_with` parameters where declared
        (``fitted_with_``, :meth:`_record_params`), :attr:`state_constraints`, and for a
        map that is not shift-invariant its input kind (``input_kind_``,
        :meth:`_record_input`)."""
        classes = Integer(2, 2) if cls.binary_only else Integer(low=2)
        declared: dict[str, Constraint] = {"n_classes_": classes}
        if cls.fitted_with:
            declared["fitted_with_"] = FittedWith(cls.fitted_with, cls.param_constraints)
        declared.update(cls.state_constraints)
        if not cls.shift_invariant:
            declared["input_kind_"] = INPUT_KIND
        return declared

    def _record_params(self) -> None:
        """Record the :attr:`fitted_with` parameters' values (a fit calls it right after
        setting ``n_classes_``)."""
        if self.fitted_with:  # a copy: an object (a score) changed after the fit differs
            self.fitted_with_ = {
                name: copy.deepcopy(getattr(self, name)) for name in self.fitted_with
            }

    def _record_input(self, kind: str) -> None:
        """Record the input kind ``kind`` the caller declared (:data:`INPUT_KINDS`) for a
        map that is not shift-invariant (a fit calls it last); the others record nothing."""
        if not self.shift_invariant:
            self.input_kind_ = kind

    def _check_fitted_with(self, prefix: str = "params.") -> None:
        """An InputError unless each :attr:`fitted_with` parameter has the value the fit
        recorded (``prefix``: where the parameter is named: the file's ``params.``, or the
        object's own after ``set_params``)."""
        record = getattr(self, "fitted_with_", None)
        if not self.fitted_with or record is None:
            return
        for name in self.fitted_with:
            value = getattr(self, name)
            saved = getattr(self.param_constraints[name], "encode", _same)  # an object's form
            was, now = saved(record[name]), saved(value)
            if same_value(was, now):
                continue
            field, was, now = (
                (name, record[name], value)
                if not isinstance(was, dict)
                else (_first_difference(name, was, now))
            )
            why = (
                "the stored values hold for it only"
                if prefix
                else "changed since: fit again before saving"
            )
            expected = f"{was!r}, the value the fit used (state.fitted_with_: {why})"
            raise InputError(prefix + field, expected, repr(now))

    def _state_dims(self, n_classes: int) -> Dims:
        """The lengths the state's array shapes name (``k``: the number of classes)."""
        return {"k": n_classes}

    def _check_state(self) -> None:
        """Refuse loaded fitted attributes whose relations the declarations cannot state."""
        return None

    def _load_state(self, state: object) -> None:
        if not isinstance(state, dict):
            raise InputError("state", "a mapping of fitted attributes", type(state).__name__)
        declared = self.fitted_constraints()
        dims: Dims = {}
        if "n_classes_" in state:  # the shapes depend on it: check it first
            dims = self._state_dims(
                declared["n_classes_"].check("state.n_classes_", state["n_classes_"])
            )
        checked = check_state(
            declared,
            state,
            dims,
            prefix="state.",
            optional=self.optional_state,
            params=self.get_params(),
        )
        for key, value in checked.items():
            setattr(self, key, value)
        self._check_fitted_with()
        self._check_state()


class OnCalibrator(PostHoc):
    """A kind composed over a calibrator of logits (a conformal predictor, a prior
    adapter): its ``calibrator_`` (fitted from :class:`CalibratorSpec`, or ``None`` for the
    softmax of the logits) gives the probabilities the kind works on.

    Examples
    --------
    >>> import calibkit as ck
    >>> [issubclass(k, OnCalibrator) for k in (ck.ConformalClassifier, ck.PriorShiftAdapter)]
    [True, True]
    """

    #: The calibrator asked for (a :class:`CalibratorSpec`), and the one fitted.
    if TYPE_CHECKING:  # typed as properties (see PostHoc.n_classes_)

        @property
        def calibrator(self) -> Any: ...
        @property
        def calibrator_(self) -> Any: ...
        @calibrator_.setter
        def calibrator_(self, value: Any) -> None: ...

    def _fit_inputs(
        self,
        logits: object,
        labels: object,
        sample_weight: object,
        input_kind: str,
        metadata: Mapping[str, object],
        why: str = "",
    ) -> tuple[str, ClassifierOutputs]:
        """``fit``'s inputs checked: ``input_kind`` (what ``logits`` holds, declared to the
        calibrator's fit as :meth:`Calibrator.fit <calibkit.calibrators.base.Calibrator.fit>`
        takes it), ``metadata`` (none is declared, so any is refused by name) and
        ``sample_weight`` (rows are not weighed: refused, ``why`` said); then the outputs."""
        kind = check_input_kind(input_kind)
        self._route(metadata)
        if sample_weight is not None:
            raise InputError("sample_weight", f"None for {self.name!r}{why}", "weights")
        return kind, as_outputs(labels, logits=logits)

    def _probs(self, logits: F64) -> F64:
        """The probabilities of checked ``logits``: the calibrator's, or their softmax."""
        if self.calibrator_ is None:
            return np.exp(log_softmax64(np.asarray(logits, dtype=np.float64)))
        return np.asarray(self.calibrator_.predict_proba(logits), dtype=np.float64)

    def _probs_module(self) -> nn.Module:
        """:meth:`_probs` as a torch module (float64 probabilities out)."""
        from calibkit.calibrators.modules import softmax_module

        if self.calibrator_ is None:
            return softmax_module(self.n_classes_)
        module: nn.Module = self.calibrator_.to_module()
        return module

    def fitted_input_kind(self) -> str | None:
        """That of the calibrator underneath (None for the softmax of the logits)."""
        self.check_is_fitted()
        if self.calibrator_ is None:
            return None
        kind: str | None = self.calibrator_.fitted_input_kind()
        return kind

    @staticmethod
    def _check_given_kind(calibrator: PostHoc, kind: str) -> None:
        """Refuse log-probabilities (``kind``, the fit's declared ``input_kind``, is
        ``"probs"``) for a given, fitted calibrator whose map was fitted on logits and is not
        shift-invariant: it gives other numbers on them."""
        if kind == "probs" and calibrator.fitted_input_kind() == "logits":
            raise InputError(
                "input_kind",
                f"'logits', as the given calibrator {calibrator.name!r} was fitted on (its map "
                "is not shift-invariant, so probabilities give other numbers: fit it on "
                "probabilities, or give the logits)",
                "'probs'",
            )

    def _check_calibrator_state(self) -> None:
        """Refuse a loaded ``calibrator_`` that disagrees with ``params.calibrator``: it is
        ``None`` exactly when no calibrator is named, else of the named method with the
        named (or default) parameters, and of this object's number of classes. A kind
        composed over a calibrator calls it from :meth:`_check_state` (a file whose
        calibrator was deleted would otherwise silently use the softmax instead)."""
        spec, fitted = self.calibrator, self.calibrator_
        field = "state.calibrator_"
        if spec is None:
            if fitted is not None:
                expected = "null, as params.calibrator is null (the softmax of the logits)"
                raise InputError(field, expected, f"a fitted {fitted.name!r}")
            return
        named = CALIBRATORS.create(spec) if isinstance(spec, str) else spec
        expected = f"a fitted {named.name!r} calibrator, as params.calibrator says"
        if fitted is None:
            raise InputError(field, expected, "null")
        if fitted.name != named.name:
            raise InputError(field, expected, f"a fitted {fitted.name!r}")
        if fitted._saved_params() != named._saved_params():
            expected = f"the parameters params.calibrator gives {named.name!r}"
            raise InputError(f"{field}.params", expected, "others")
        if fitted.n_classes_ != self.n_classes_:
            expected = f"a calibrator of {self.n_classes_} classes (state.n_classes_)"
            raise InputError(f"{field}.n_classes_", expected, str(fitted.n_classes_))


def _same(value: object) -> object:
    return value


def _first_difference(name: str, was: dict[str, Any], now: object) -> tuple[str, object, object]:
    """``(field, was, now)`` of the first entry where the saved form ``now`` of an object
    parameter ``name`` (a conformity score: ``{"name": ..., <parameters>}``) differs from
    ``was``: ``conformity_score.k_reg`` rather than the whole object."""
    if not isinstance(now, dict) or now.get("name") != was.get("name"):
        return name, was.get("name"), now.get("name") if isinstance(now, dict) else now
    for key in was:
        if not same_value(was[key], now.get(key)):
            return f"{name}.{key}", was[key], now.get(key)
    return name, was, now


def load_document(data: object, source: str = "calibkit document") -> PostHoc:
    """The fitted object of a JSON document (:meth:`PostHoc.to_json`, any kind but a
    model calibrator, which needs its tensor file: :func:`load`)."""
    return _rebuild(data, source, None, None)


def load(path: str | Path, model: nn.Module | None = None) -> PostHoc:
    """Read any fitted object calibkit saved: a calibrator, a conformal predictor, a prior
    adapter, or (with its ``model``) Neural Clamping. Every field is checked; a foreign,
    tampered or newer file raises one InputError naming the file and the field.

    Parameters
    ----------
    path : str or Path
        A ``.json`` file written by a fitted object's ``save``.
    model : torch.nn.Module, optional
        The classifier, for a calibrator that takes the model (refused for the others).

    Returns
    -------
    PostHoc
        Fitted, of the class the file names.

    Examples
    --------
    >>> import tempfile, calibkit as ck
    >>> ts = ck.TemperatureScaling().fit([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1])
    >>> with tempfile.TemporaryDirectory() as d:
    ...     ts.save(f"{d}/ts.json")
    ...     type(ck.load(f"{d}/ts.json")).__name__
    'TemperatureScaling'
    """
    data, source = read_json_document(path, "calibkit file")
    return _rebuild(data, source, Path(path), model)


def _rebuild(data: object, source: str, path: Path | None, model: object) -> PostHoc:
    try:
        doc = parse_document(data)
        method = doc.method
        try:
            klass = CALIBRATORS.get(method)
        except InputError as exc:
            raise InputError("method", exc.expected, exc.got) from None
        if klass.kind != doc.kind:
            raise InputError("kind", f"{klass.kind!r}, the kind of {method!r}", repr(doc.kind))
        return klass._from_document(doc, path=path, model=model)
    except InputError as exc:
        got = exc.got if len(exc.got) <= 80 else exc.got[:77] + "..."
        raise InputError(f"{source}: {exc.argument}", exc.expected, got) from None


class CalibratorSpec(Constraint):
    """The calibrator underneath a composed object: a registered name, an instance (fitted
    or not), or ``None`` where ``optional``; of the given ``kinds`` only.

    A saved spec (:meth:`encode`) is the name, or ``{"method": ..., "params": ...}`` for an
    instance, which :meth:`check` reads back.

    Parameters
    ----------
    kinds : tuple of str
        The kinds the calibrator may be (default: calibrators of logits).
    optional : bool
        Whether ``None`` (no calibrator: the softmax of the logits) is accepted.

    Examples
    --------
    >>> spec = CalibratorSpec()
    >>> spec.check("calibrator", "temperature"), spec.check("calibrator", None)
    ('temperature', None)
    >>> spec.check("calibrator", "conformal")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: calibrator: expected None, a name or an instance ...
    """

    def __init__(self, kinds: tuple[str, ...] = ("logits",), optional: bool = True) -> None:
        self.kinds, self.optional = kinds, optional

    def check(self, name: str, value: object) -> Any:
        if value is None and self.optional:
            return None
        if isinstance(value, dict) and set(value) == {"method", "params"}:
            params = value["params"]
            if not isinstance(params, dict) or not isinstance(value["method"], str):
                self.fail(name, value)
            value = self._checked_class(name, value["method"]).create(None, params)
        if isinstance(value, str):
            self._checked_class(name, value)
            return value
        if isinstance(value, PostHoc) and value.kind in self.kinds:
            return value
        self.fail(name, value)

    def _checked_class(self, name: str, method: str) -> type[PostHoc]:
        if method not in CALIBRATORS:  # named as the field, listing the names it takes
            raise errors.UnknownNameError(name, method, CALIBRATORS.names(kind=self.kinds))
        klass = CALIBRATORS.get(method)
        if klass.kind not in self.kinds:
            self.fail(name, method)
        return klass

    def describe(self) -> str:
        kinds = " or ".join(self.kinds)
        return f"{'None, ' if self.optional else ''}a name or an instance of a {kinds} kind"

    @staticmethod
    def encode(value: object) -> object:
        """The spec as a saved document holds it."""
        if isinstance(value, PostHoc):
            return {"method": value.name, "params": value.get_params()}
        return value

    @staticmethod
    def resolve(value: object) -> tuple[Any, bool]:
        """``(calibrator, fitted)``: the calibrator a spec names, a new one for a name or an
        unfitted instance (never the caller's), the caller's for a fitted one."""
        if value is None:
            return None, False
        if isinstance(value, str):
            return CALIBRATORS.create(value), False
        assert isinstance(value, PostHoc)
        if value.is_fitted:
            return value, True
        return type(value)(**value.get_params()), False


class FittedObject(Constraint):
    """A fitted object of the given ``kinds`` inside another's state (a conformal
    predictor's calibrator), or ``None`` where ``optional``: an instance, or its document
    (rebuilt and checked by :func:`load_document`).

    Parameters
    ----------
    kinds : tuple of str
        The kinds the object may be.
    optional : bool
        Whether ``None`` is accepted.

    Examples
    --------
    >>> import calibkit as ck
    >>> ts = ck.TemperatureScaling().fit([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [0, 1, 1])
    >>> FittedObject().check("state.calibrator_", ts.to_json()).temperature_ == ts.temperature_
    True
    """

    def __init__(self, kinds: tuple[str, ...] = ("logits",), optional: bool = True) -> None:
        self.kinds, self.optional = kinds, optional

    def check(self, name: str, value: object) -> Any:
        if value is None and self.optional:
            return None
        if isinstance(value, dict):
            try:
                value = load_document(value, name)
            except InputError as exc:
                raise InputError(exc.argument, exc.expected, exc.got) from None
        if not isinstance(value, PostHoc) or value.kind not in self.kinds or not value.is_fitted:
            self.fail(name, value)
        return value

    def describe(self) -> str:
        kinds = " or ".join(self.kinds)
        return f"{'None or ' if self.optional else ''}a fitted object of a {kinds} kind"


class FittedWith(Constraint):
    """The record ``fitted_with_`` of the parameters ``names`` (:attr:`PostHoc.fitted_with`):
    a mapping holding exactly them, each value one its parameter's constraint accepts
    (refused as ``state.fitted_with_.<name>``); whether they equal the parameters is
    checked once both are loaded (:meth:`PostHoc._check_fitted_with`).

    Parameters
    ----------
    names : tuple of str
        The parameters recorded.
    params : mapping of str to Constraint
        The owner's parameter declarations (:attr:`PostHoc.param_constraints`).

    Examples
    --------
    >>> from calibkit.core.validation import Integer
    >>> record = FittedWith(("k_reg",), {"k_reg": Integer(0)})
    >>> record.check("state.fitted_with_", {"k_reg": 1})
    {'k_reg': 1}
    >>> record.check("state.fitted_with_", {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: state.fitted_with_: expected the values of k_reg ..., got {}
    """

    def __init__(self, names: tuple[str, ...], params: Constraints) -> None:
        self.names, self.params = names, params

    def check(self, name: str, value: object) -> dict[str, Any]:
        if not isinstance(value, dict) or set(value) != set(self.names):
            self.fail(name, value)
        return {key: self.params[key].check(f"{name}.{key}", value[key]) for key in self.names}

    def describe(self) -> str:
        return f"the values of {', '.join(self.names)} the fit used (a mapping)"
