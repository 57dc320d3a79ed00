"""The calibrators of logits: the ``logits`` kind of the one contract
(:class:`~calibkit.calibrators.fitted.PostHoc`, which declares parameters, fitted state,
the JSON document, ``load`` and the registry :data:`CALIBRATORS` for every kind).

A calibrator maps a classifier's logits to calibrated probabilities:

- ``fit(logits, labels, sample_weight=None, *, input_kind="logits") -> self`` learns from
  a calibration set (weighted where the method allows it:
  :attr:`Calibrator.accepts_sample_weight`); ``input_kind`` declares what ``logits`` holds
  (see below);
- ``predict_proba(logits)`` returns float64 probabilities (rows sum to 1);
- ``transform(logits)`` returns calibrated logits, for methods that map logits to logits.

Calibrators are scikit-learn estimators without importing scikit-learn (which costs a
second): ``get_params(deep=...)``, ``set_params`` (checked against the declaration),
``sklearn.base.clone``, estimator tags and ``n_features_in_`` (the number of classes). The
samples ``X`` of scikit-learn's API are rows of logits, ``y`` their labels.

Inputs are numpy arrays or torch tensors. For models that only published probabilities,
pass ``log(probs)`` as logits and say so: ``fit(log_probs, labels, input_kind="probs")``
(:meth:`Calibrator.fit` says what a map that is not shift-invariant does with it).
"""

from __future__ import annotations

import contextlib
import dataclasses
from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.estimator import check_sample_weight
from calibkit.calibrators.fitted import CALIBRATORS, PostHoc, check_input_kind, load
from calibkit.calibrators.persistence import (
    FORMAT_VERSION,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    read_json_document,
)
from calibkit.core.docs import fill_doc
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, as_outputs, log_softmax64
from calibkit.core.validation import Real

if TYPE_CHECKING:
    from torch import nn

F64 = npt.NDArray[np.float64]
#: The largest magnitude of a fitted coefficient (weight, bias, slope, intercept) a loaded
#: state may hold: fits of logits stay far below it, and 1e300 would overflow the map.
MAX_COEFFICIENT = 1e6
#: A fitted scalar coefficient, as checked on load.
COEFFICIENT = Real(-MAX_COEFFICIENT, MAX_COEFFICIENT)
#: The example most calibrators' docstrings open with: a subclass's docstring line
#: ``{fit_example}`` becomes this, with the subclass's name.
#: The docstring paragraph ``{refuses_absent_class}`` of a method that
#: :attr:`~calibkit.calibrators.fitted.PostHoc.needs_every_class`.
REFUSES_ABSENT_CLASS = """\
A calibration set without some class is refused (an InputError naming ``labels``
and the class): this method fits each class from that class's own rows, so it would
never predict a class it has not seen."""
FIT_EXAMPLE = """>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(600, {k})) * 3  # overconfident logits
>>> y = (z + 3 * rng.gumbel(size=z.shape)).argmax(1)
>>> calibrator = {name}().fit(z, y)
>>> calibrator.predict_proba(z[:4]).shape
(4, {k})"""

__all__ = [
    "CALIBRATORS",
    "COEFFICIENT",
    "FORMAT_VERSION",
    "MAX_COEFFICIENT",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "Calibrator",
    "create_calibrator",
    "load",
    "read_json_document",
]


def create_calibrator(name: str, model: object = None, **params: Any) -> Calibrator:
    """A new calibrator of the registered ``name`` with ``params``; ``model`` is given to,
    and only to, a calibrator that takes the model (kind ``model``).

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


class Calibrator(PostHoc):
    """Base class of post-hoc calibrators (see the module docstring).

    A subclass declares ``param_constraints`` and implements ``_fit`` plus ``_transform``
    (logit maps) or ``_predict_proba``; its entry in :mod:`calibkit.core.catalog` gives it
    its ``name`` (a plug-in's: ``CALIBRATORS.register("name")``).

    Examples
    --------
    >>> ts = create_calibrator("temperature").fit([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]], [0, 1, 1])
    >>> isinstance(ts, Calibrator), ts.name, ts.kind, ts.is_fitted
    (True, 'temperature', 'logits', True)
    >>> ts.predict_proba([[0.0, 0.0]]).tolist()
    [[0.5, 0.5]]
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        doc = cls.__doc__ or ""
        if "{fit_example}" in doc or "{refuses_absent_class}" in doc:
            if "{refuses_absent_class}" in doc and not cls.needs_every_class:
                raise TypeError(
                    f"{cls.__name__} says it refuses an absent class: set needs_every_class"
                )
            example = FIT_EXAMPLE.format(name=cls.__name__, k=2 if cls.binary_only else 3)
            fill_doc(fit_example=example, refuses_absent_class=REFUSES_ABSENT_CLASS)(cls)

    # ----- the contract ---------------------------------------------------------------
    def fit(
        self,
        logits: object,
        labels: object,
        sample_weight: object = None,
        *,
        input_kind: str = "logits",
        **metadata: object,
    ) -> Self:
        """Learn the calibration map from calibration-set ``logits`` and ``labels``.

        ``sample_weight`` (non-negative, one per row, not all 0) weighs each row as that
        many repetitions of it would; ``None`` weighs all rows equally. ``input_kind``
        (keyword only) declares what ``logits`` holds: ``"logits"`` (the default), or
        ``"probs"`` for the log-probabilities of a model that published probabilities
        (``log(probs)``); anything else is one InputError naming ``input_kind``. Nothing is
        read from the values. A map that is not shift-invariant (:attr:`shift_invariant`)
        records it (``input_kind_``) and, fitted on ``"probs"``, takes the log-softmax of
        every row, here and at prediction. ``metadata``: the per-row inputs the method
        declares (:attr:`fit_metadata`, e.g. ``groups=``).

        >>> z = np.log([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]])
        >>> vs = create_calibrator("vector").fit(z, [0, 1, 1, 1], input_kind="probs")
        >>> vs.input_kind_, bool(np.allclose(vs.predict_proba(z), vs.predict_proba(z + 5.0)))
        ('probs', True)
        """
        kind = check_input_kind(input_kind)
        routed = self._route(metadata)
        out = self._check_fit_input(logits, labels)
        if not self.shift_invariant and kind == "probs":  # as it maps them (_as_fitted_kind)
            out = dataclasses.replace(out, scores=log_softmax64(out.scores))
        weights = None
        if sample_weight is not None:
            if not self.accepts_sample_weight:
                expected = f"None for {self.name!r}, a method that cannot weight samples"
                raise InputError("sample_weight", expected, "weights")
            weights = check_sample_weight(sample_weight, out.labels.shape[0])
        if self.needs_every_class:
            self._check_every_class(out, weights)
        fit: Any = self._fit  # a kind with fit_metadata takes it by keyword
        with self._fit_or_unchanged():
            self.n_classes_ = out.n_classes
            self._record_params()
            with self._fitting():
                if weights is None:  # subclasses that take no weights define _fit(out)
                    fit(out, **routed)
                else:
                    fit(out, weights, **routed)
            self._record_input(kind)
        return self

    def predict_proba(self, logits: object, **metadata: object) -> F64:
        """Calibrated probabilities (float64, rows sum to 1); ``metadata`` as for
        :meth:`fit`."""
        routed = self._route(metadata)
        z = self._check_predict_input(logits)
        return self._predict_proba(z, **routed) if routed else self._predict_proba(z)

    def _transform_logits(self, logits: object) -> F64:
        """Calibrated logits (only for methods that map logits to logits)."""
        z = self._check_predict_input(logits)
        return self._transform(z)

    def _fitting(self) -> AbstractContextManager[object]:
        """The context ``_fit`` runs in (none here; the linear maps limit BLAS threads)."""
        return contextlib.nullcontext()

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
        return CheckedLogits(self._map_module(), self.n_classes_).eval()

    def _map_module(self) -> nn.Module:
        """:meth:`_module`, after the log-softmax of every row (float64) for a map that is
        not shift-invariant fitted on probabilities (as
        :meth:`~calibkit.calibrators.fitted.PostHoc._as_fitted_kind` gives them to it):
        what :meth:`to_module` checks the input of."""
        from torch import nn

        from calibkit.calibrators.modules import LogSoftmax

        module = self._module()
        if not self.shift_invariant and getattr(self, "input_kind_", None) == "probs":
            module = nn.Sequential(LogSoftmax(), module)
        return module

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
