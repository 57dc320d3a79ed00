"""Neural Clamping variants by name, for configs: :data:`INPUT_CALIBRATORS`.

They are "input calibrators": they refit on a model's inputs, not on saved logits. Each
factory takes the model and flat parameters (the
:class:`~calibkit.calibrators.clamping.settings.SGDSettings` fields among the
others, as in a TOML config) and returns an unfitted
:class:`~calibkit.calibrators.clamping.NeuralClamping`:

- ``nc_ce``: Neural Clamping with cross-entropy (focal gamma 0), data-driven delta;
- ``nc_fl``: Neural Clamping with focal loss (gamma 1, or a candidate pool);
- ``nc_fast``: the fast variant (data-driven delta, then the temperature alone);
- ``ts_focal``: temperature scaling fitted by focal loss (delta fixed at 0).

A labelled copy ``<name>@<label>`` (``nc_ce@holdout``) is the method ``<name>`` with
parameters of its own (:func:`base_name`).

>>> nc = create_input_calibrator("nc_ce@holdout", nn.Linear(2, 3), holdout=0.2, epochs=5)
>>> nc.gamma, nc.holdout, nc.sgd.epochs
((0.0,), 0.2, 5)
>>> INPUT_CALIBRATORS.names()
['nc_ce', 'nc_fl', 'nc_fast', 'ts_focal']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import nn

from calibkit.calibrators.clamping.model import NeuralClamping
from calibkit.calibrators.clamping.settings import split_params
from calibkit.core.registry import Registry

Factory = Callable[..., NeuralClamping]

#: Neural Clamping variants by name: ``(model, **flat_params) -> NeuralClamping``.
INPUT_CALIBRATORS: Registry[Factory] = Registry("input calibrator")


@INPUT_CALIBRATORS.register("nc_ce")
def nc_ce(model: nn.Module, **params: Any) -> NeuralClamping:
    """Neural Clamping by cross-entropy: focal gamma 0 (a ``gamma`` given is overridden)."""
    return NeuralClamping(model, **{**split_params(params), "gamma": 0.0})


@INPUT_CALIBRATORS.register("nc_fl")
def nc_fl(model: nn.Module, **params: Any) -> NeuralClamping:
    """Neural Clamping by focal loss (gamma 1 unless ``gamma`` is given)."""
    return NeuralClamping(model, **{"gamma": 1.0, **split_params(params)})


@INPUT_CALIBRATORS.register("nc_fast")
def nc_fast(model: nn.Module, **params: Any) -> NeuralClamping:
    """The fast variant: data-driven delta, then the temperature alone."""
    return NeuralClamping.fast(model, **split_params(params))


@INPUT_CALIBRATORS.register("ts_focal")
def ts_focal(model: nn.Module, **params: Any) -> NeuralClamping:
    """Temperature scaling fitted by focal loss (delta fixed at 0)."""
    return NeuralClamping.focal_temperature_scaling(model, **split_params(params))


def base_name(name: str) -> str:
    """The registered method of ``name`` (``"nc_ce@holdout"`` -> ``"nc_ce"``).

    Examples
    --------
    >>> base_name("nc_ce@holdout"), base_name("nc_fast")
    ('nc_ce', 'nc_fast')
    """
    return name.split("@", 1)[0]


def create_input_calibrator(name: str, model: nn.Module, **params: Any) -> NeuralClamping:
    """The unfitted input calibrator ``name`` (``NAME`` or ``NAME@LABEL``) of ``model``.

    Parameters
    ----------
    name : str
        A registered name, optionally with an ``@label``.
    model : nn.Module
        The classifier to calibrate.
    **params
        Flat parameters: those of ``NeuralClamping`` and the fields of ``SGDSettings``.

    Returns
    -------
    NeuralClamping
        Not fitted yet.

    Examples
    --------
    >>> create_input_calibrator("ts_focal", nn.Linear(2, 3)).init
    'zero'
    """
    return INPUT_CALIBRATORS.get(base_name(name))(model, **params)
