"""A classifier and its fitted calibration as one ``nn.Module``, for deployment.

``CalibratedModel(model, calibrator)`` returns calibrated probabilities for the model's
inputs: ``calibration(model(x))`` for a logit calibrator (its
:meth:`~calibkit.calibrators.base.Calibrator.to_module`, or a module from
:mod:`calibkit.calibrators.modules`), and ``softmax(model(x + delta) / T)`` for a fitted
:class:`~calibkit.calibrators.clamping.NeuralClamping` (its ``to_module()`` returns this).
The probabilities are float64, as from ``predict_proba`` (see
:mod:`calibkit.calibrators.modules` for the precision). The model is used as it is: put
it in ``eval()`` mode first if it has dropout or batch norm.
"""

from __future__ import annotations

from torch import Tensor, nn

from calibkit.calibrators.base import Calibrator
from calibkit.calibrators.clamping.model import NeuralClamping
from calibkit.calibrators.modules import CheckedLogits, InputShift, Temperature
from calibkit.core.errors import InputError


class CalibratedModel(nn.Module):
    """``model`` followed by a fitted calibration: inputs in, calibrated probabilities out.

    Parameters
    ----------
    model : nn.Module
        The classifier, returning logits ``(N, K)``.
    calibrator : Calibrator, NeuralClamping or nn.Module
        A fitted logit calibrator (its :meth:`~calibkit.calibrators.base.Calibrator.to_module`
        is used), a fitted Neural Clamping (its input perturbation goes before ``model``,
        its temperature after), or a calibration module mapping logits to probabilities.

    Attributes
    ----------
    inputs : nn.Module
        What the inputs go through first (Neural Clamping's ``x + delta``, else identity).
    calibration : nn.Module
        The map from the model's logits to probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> import torch
    >>> from calibkit.calibrators import TemperatureScaling
    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    >>> ts = TemperatureScaling().fit(z, [0, 1, 1, 1])
    >>> deployed = CalibratedModel(nn.Identity(), ts)
    >>> bool(np.allclose(deployed(torch.tensor(z)).numpy(), ts.predict_proba(z)))
    True
    """

    def __init__(
        self, model: nn.Module, calibrator: Calibrator | NeuralClamping | nn.Module
    ) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise InputError("model", "a torch.nn.Module", type(model).__name__)
        self.model = model
        self.inputs: nn.Module = nn.Identity()
        if isinstance(calibrator, NeuralClamping):
            calibrator.check_is_fitted()
            self.inputs = InputShift(calibrator.delta_)
            temperature = Temperature(calibrator.temperature_)
            self.calibration: nn.Module = CheckedLogits(temperature, calibrator.n_classes_)
        elif isinstance(calibrator, Calibrator):
            self.calibration = calibrator.to_module()
        elif isinstance(calibrator, nn.Module):
            self.calibration = calibrator
        else:
            expected = "a fitted Calibrator, a fitted NeuralClamping or a calibration nn.Module"
            raise InputError("calibrator", expected, type(calibrator).__name__)

    def forward(self, x: Tensor) -> Tensor:
        """Calibrated probabilities of the batch ``x``."""
        probs: Tensor = self.calibration(self.model(self.inputs(x)))
        return probs
