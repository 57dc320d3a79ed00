"""Neural Clamping variants by name, registered in the one calibrator registry.

They take the model and refit on its inputs (kind ``model``:
:class:`~calibkit.calibrators.model.model_calibrator.ModelCalibrator`), so consumers of logits
leave them out and a study's ``input_calibrators`` takes only them
(:func:`input_calibrator_names`). Each is a :class:`NeuralClamping` with some parameters
fixed; ``create_calibrator(name, model=model, **flat_params)`` builds one, the
:class:`~calibkit.calibrators.model.clamping.settings.SGDSettings` fields among the others (as in
a TOML config):

- ``nc_ce``: Neural Clamping with cross-entropy (focal gamma 0), data-driven delta;
- ``nc_fl``: Neural Clamping with focal loss (gamma 1, or a candidate pool);
- ``nc_fast``: the fast variant (data-driven delta, then the temperature alone);
- ``ts_focal``: temperature scaling fitted by focal loss (delta fixed at 0).

A labelled copy ``<name>@<label>`` (``nc_ce@holdout``) is the method ``<name>`` with
parameters of its own (:func:`base_name`).

>>> nc = create_input_calibrator("nc_ce@holdout", nn.Linear(2, 3), holdout=0.2, epochs=5)
>>> nc.gamma, nc.holdout, nc.sgd.epochs, nc.name
((0.0,), 0.2, 5, 'nc_ce')
>>> input_calibrator_names()
['nc_ce', 'nc_fl', 'nc_fast', 'ts_focal']
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from torch import nn

from calibkit.calibrators.base import CALIBRATORS, create_calibrator
from calibkit.calibrators.model.clamping.model import NeuralClamping
from calibkit.core.errors import UnknownNameError


class NeuralClampingCE(NeuralClamping):
    """Neural Clamping by cross-entropy: focal gamma 0 (a ``gamma`` given is overridden)."""

    fixed_params: ClassVar[dict[str, Any]] = {"gamma": 0.0}


class NeuralClampingFocal(NeuralClamping):
    """Neural Clamping by focal loss (gamma 1 unless ``gamma`` is given)."""


class NeuralClampingFast(NeuralClamping):
    """The fast variant of Neural Clamping: data-driven delta, then the temperature alone."""

    fixed_params: ClassVar[dict[str, Any]] = {"init": "data", "train": "temperature"}


class FocalTemperatureScaling(NeuralClamping):
    """Temperature scaling fitted by focal loss, on the model's inputs (delta fixed at 0)."""

    fixed_params: ClassVar[dict[str, Any]] = {"init": "zero", "train": "temperature"}


def input_calibrator_names() -> list[str]:
    """The registered calibrators that take the model (kind ``model``), in order."""
    return CALIBRATORS.names(kind="model")


def base_name(name: str) -> str:
    """The registered method of ``name`` (``"nc_ce@holdout"`` -> ``"nc_ce"``).

    Examples
    --------
    >>> base_name("nc_ce@holdout"), base_name("nc_fast")
    ('nc_ce', 'nc_fast')
    """
    return name.split("@", 1)[0]


def create_input_calibrator(name: str, model: nn.Module, **params: Any) -> NeuralClamping:
    """``create_calibrator(base_name(name), model=model, **params)`` for ``name`` (``NAME`` or
    ``NAME@LABEL``) among :func:`input_calibrator_names` (an alias of the one factory kept
    for a study's ``input_calibrators``).

    Examples
    --------
    >>> create_input_calibrator("ts_focal", nn.Linear(2, 3)).init
    'zero'
    """
    names = input_calibrator_names()
    if base_name(name) not in names:
        raise UnknownNameError("input calibrator", base_name(name), names)
    return cast(NeuralClamping, create_calibrator(base_name(name), model=model, **params))
