"""The variant of the calibrator contract for methods that take the model and its inputs.

A :class:`ModelCalibrator` (Neural Clamping) is registered in the one
:data:`~calibkit.calibrators.base.CALIBRATORS` registry like every calibrator, with
``needs_model = True``: consumers of saved logits (``compare``, ``calibkit methods``,
``auto``, a study's ``calibrators``) leave such entries out, a study's
``input_calibrators`` takes only them. What differs from a logit calibrator (as
torch-uncertainty's ``PostProcessing(model)``, the model is a parameter):

- constructed as ``cls(model, **params)``; ``params`` are declared in
  ``param_constraints`` as for every calibrator (the model is not among them: it is not
  saved, the caller gives it again to :meth:`ModelCalibrator.load`), and
  ``create_calibrator(name, model=model, **params)`` builds one;
- ``fit(inputs, labels)`` and ``predict_proba(inputs)`` take the model's *inputs*; errors
  about them name ``inputs``;
- ``save(path)`` / ``cls.load(path, model)``;
- fitted state (``_`` attributes, checked on load against ``state_constraints``),
  ``NotFittedError``, ``get_params`` / ``set_params``, ``transform`` missing, as for the
  others;
- deployment: :meth:`~calibkit.calibrators.base.Calibrator.input_module` and
  :meth:`~calibkit.calibrators.base.Calibrator.output_module` are what
  :class:`~calibkit.calibrators.calibrated_model.CalibratedModel` puts before and after
  the model; ``to_module()`` is that whole ``CalibratedModel``.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from calibkit.calibrators.base import F64, Calibrator
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs
from calibkit.core.validation import check_params

if TYPE_CHECKING:
    from torch import nn

    from calibkit.calibrators.calibrated_model import CalibratedModel


class ModelCalibrator(Calibrator):
    """Base of the calibrators that take the model and refit on its inputs (see the module).

    Examples
    --------
    >>> from calibkit.calibrators import CALIBRATORS
    >>> CALIBRATORS.names(kind="model")
    ['nc_ce', 'nc_fl', 'nc_fast', 'ts_focal']
    >>> issubclass(CALIBRATORS.get("nc_ce"), ModelCalibrator)
    True
    """

    kind: ClassVar[str] = "model"
    #: Parameters a registered variant fixes, whatever the caller gives.
    fixed_params: ClassVar[Mapping[str, Any]] = {}

    model: nn.Module

    @classmethod
    def create(cls, model: object, params: Mapping[str, Any], owner: str | None = None) -> Self:
        """A new ``cls`` of ``model`` with ``params`` checked against ``param_constraints``
        (an undeclared one is blamed on ``owner``, default the method's name)."""
        if model is None:
            raise InputError("model", f"the model that {cls.name!r} calibrates", "None")
        checked = check_params(cls.param_constraints, cls.split_params(params), owner or cls.name)
        return cls(model, **checked)  # type: ignore[call-arg]

    @classmethod
    def split_params(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """Flat parameters (as in a config) -> constructor keywords; identity here."""
        return dict(params)

    def set_params(self, **params: Any) -> Self:
        """Set declared parameters, checked as the constructor checks them (all or none)."""
        check_params(self.param_constraints, params, self.name)
        trial = type(self)(self.model, **{**self.get_params(), **params})  # type: ignore[call-arg]
        for name in params:
            setattr(self, name, getattr(trial, name))
        return self

    # ----- the contract, on inputs ----------------------------------------------------------
    def fit(  # type: ignore[override]  # the model's inputs, not logits
        self,
        inputs: object,
        labels: object = None,
        sample_weight: object = None,
        **metadata: object,
    ) -> Self:
        """Learn the calibration from the model's calibration ``inputs`` and ``labels``."""
        self._route(metadata)
        if sample_weight is not None:
            expected = f"None for {self.name!r}, a method that cannot weight samples"
            raise InputError("sample_weight", expected, "weights")
        self._fit_inputs(inputs, labels)
        return self

    def predict_proba(self, inputs: object, **metadata: object) -> F64:  # type: ignore[override]
        """Calibrated probabilities of the model's ``inputs`` (float64, rows sum to 1)."""
        self._route(metadata)
        self.check_is_fitted()
        return self._predict_inputs(inputs)

    @abstractmethod
    def _fit_inputs(self, inputs: object, labels: object) -> None:
        """Fit on ``inputs`` and ``labels`` (sets the fitted ``_`` attributes)."""

    @abstractmethod
    def _predict_inputs(self, inputs: object) -> F64:
        """Calibrated probabilities of ``inputs`` (the calibrator is fitted)."""

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        raise InputError("logits", f"inputs of the model for {self.name!r}", "logits")

    def to_module(self) -> CalibratedModel:
        """The model with its calibration built in, for deployment: inputs in, calibrated
        probabilities out (``CalibratedModel(model, self)``)."""
        from calibkit.calibrators.calibrated_model import CalibratedModel

        self.check_is_fitted()
        return CalibratedModel(self.model, self)

    # ----- persistence ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Refused: a model calibrator is saved with :meth:`save` (tensors beside JSON)."""
        raise InputError("method", "a logit calibrator for to_json()", repr(self.name))

    @abstractmethod
    def save(self, path: str | Path) -> None:
        """Write the fitted calibrator (never by pickle)."""

    @classmethod
    @abstractmethod
    def load(cls, path: str | Path, model: nn.Module | None = None) -> Self:
        """Read a calibrator written by :meth:`save`, applied to ``model``."""
