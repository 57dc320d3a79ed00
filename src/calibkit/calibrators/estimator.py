"""The scikit-learn side of a calibrator: what makes it an estimator, without importing
scikit-learn (which costs a second) until scikit-learn itself asks.

:class:`EstimatorAPI`, a base of :class:`~calibkit.calibrators.base.Calibrator`, gives
``get_params(deep=...)`` and ``set_params`` (both read the declared ``param_constraints``;
``set_params`` checks as the constructor does, all or nothing), so ``sklearn.base.clone``,
``GridSearchCV`` and ``cross_val_score`` work; estimator tags; ``n_features_in_`` (the
number of classes seen by ``fit``); and ``transform`` / ``fit_transform`` only for the
methods that map logits to logits (for the others ``hasattr`` is False, which is how
scikit-learn tells transformers apart). ``X`` in scikit-learn's terms is rows of logits,
``y`` their labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np
import numpy.typing as npt

from calibkit.core.errors import InputError
from calibkit.core.validation import Constraints, check_params

F64 = npt.NDArray[np.float64]


class _NoTransformError(InputError, AttributeError):
    """``transform`` read on a calibrator whose output is probabilities."""


def check_sample_weight(sample_weight: object, n_samples: int) -> F64:
    """``sample_weight`` as float64: one finite, non-negative weight per row, not all zero."""
    expected = f"{n_samples} finite non-negative weights, not all zero"
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("sample_weight", expected, type(sample_weight).__name__) from None
    if w.shape != (n_samples,):
        raise InputError("sample_weight", expected, f"shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        bad = "all zero" if np.all(w == 0) else "negative or non-finite values"
        raise InputError("sample_weight", expected, bad)
    return w


class EstimatorAPI:
    """scikit-learn's estimator interface over declared parameters (see the module doc).

    Examples
    --------
    >>> from sklearn.base import clone
    >>> from calibkit.calibrators import create_calibrator
    >>> clone(create_calibrator("histogram", n_bins=5).set_params(scheme="equal_mass"))
    HistogramBinning(n_bins=5, scheme='equal_mass', smoothing=None)
    >>> hasattr(create_calibrator("histogram"), "transform")
    False
    """

    name: ClassVar[str]
    maps_logits: ClassVar[bool]
    param_constraints: ClassVar[Constraints]

    if TYPE_CHECKING:  # provided by Calibrator
        n_classes_: int

        def check_is_fitted(self) -> None: ...
        def fit(self, *args: Any, **kwargs: Any) -> Self: ...
        def _transform_logits(self, logits: object) -> F64: ...

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The declared constructor parameters (:attr:`param_constraints`), in order.

        ``deep`` is scikit-learn's flag; calibrators hold no sub-estimators.
        """
        return {name: getattr(self, name) for name in self.param_constraints}

    def set_params(self, **params: Any) -> Self:
        """Set declared parameters, checked as the constructor checks them (all or none).

        >>> from calibkit.calibrators import create_calibrator
        >>> create_calibrator("histogram").set_params(n_bins=5).n_bins
        5
        """
        check_params(self.param_constraints, params, self.name)
        trial = type(self)(**{**self.get_params(), **params})  # relations between params too
        for name in params:
            setattr(self, name, getattr(trial, name))
        return self

    @property
    def n_features_in_(self) -> int:
        """The number of columns seen by ``fit`` (scikit-learn's name for ``n_classes_``)."""
        self.check_is_fitted()
        return int(self.n_classes_)

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's estimator tags: 2-D finite float logits, labels required."""
        from sklearn.utils import Tags, TargetTags, TransformerTags  # lazy: costs a second

        maps = TransformerTags(preserves_dtype=["float64"]) if self.maps_logits else None
        return Tags(
            estimator_type=None, target_tags=TargetTags(required=True), transformer_tags=maps
        )

    @property
    def transform(self) -> Callable[[object], F64]:
        """``transform(logits)``: calibrated logits, for methods that map logits to logits.

        For the others the attribute is missing: reading it raises an InputError that is
        an AttributeError too, so ``hasattr(calibrator, "transform")`` is False (the duck
        typing by which scikit-learn tells transformers apart).
        """
        self._require_logit_map("transform")
        return self._transform_logits

    @property
    def fit_transform(self) -> Callable[..., F64]:
        """``fit_transform(logits, labels, ...)``: ``fit`` with these arguments, then
        ``transform`` the same logits (missing as :attr:`transform` is)."""
        self._require_logit_map("fit_transform")
        return self._fit_transform

    def _require_logit_map(self, method: str) -> None:
        if not self.maps_logits:
            raise _NoTransformError(
                "method",
                f"a calibrator that maps logits to logits for {method}()",
                f"{self.name!r}, which outputs probabilities; use predict_proba()",
            )

    def _fit_transform(self, logits: object, labels: object, *args: Any, **kwargs: Any) -> F64:
        self.fit(logits, labels, *args, **kwargs)
        return self._transform_logits(logits)
