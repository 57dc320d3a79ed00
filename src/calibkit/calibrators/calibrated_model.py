"""A classifier and its fitted calibration as one ``nn.Module``, for deployment.

``CalibratedModel(model, calibrator)`` returns calibrated probabilities for the model's
inputs: ``output(model(input(x)))``, where the calibrator decides both parts
(:meth:`~calibkit.calibrators.base.Calibrator.input_module` and
:meth:`~calibkit.calibrators.base.Calibrator.output_module`): the identity and the
logit map for a logit calibrator, ``x + delta`` and ``softmax(z / T)`` for a fitted
:class:`~calibkit.calibrators.model.clamping.NeuralClamping` (its ``to_module()`` returns this);
or a module from :mod:`calibkit.calibrators.modules` as the logit map.
The probabilities are float64, as from ``predict_proba`` (see
:mod:`calibkit.calibrators.modules` for the precision). The model is used as it is: put
it in ``eval()`` mode first if it has dropout or batch norm.
"""

from __future__ import annotations

from torch import Tensor, nn

from calibkit.calibrators.base import Calibrator
from calibkit.core.errors import InputError


class CalibratedModel(nn.Module):
    """``model`` followed by a fitted calibration: inputs in, calibrated probabilities out.

    Parameters
    ----------
    model : nn.Module
        The classifier, returning logits ``(N, K)``.
    calibrator : Calibrator or nn.Module
        A fitted calibrator (its ``input_module()`` goes before ``model``, its
        ``output_module()`` after: for Neural Clamping its input perturbation and its
        temperature), or a calibration module mapping logits to probabilities.

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

    def __init__(self, model: nn.Module, calibrator: Calibrator | nn.Module) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise InputError("model", "a torch.nn.Module", type(model).__name__)
        self.model = model
        self.inputs: nn.Module = nn.Identity()
        if isinstance(calibrator, Calibrator):
            self.inputs = calibrator.input_module()
            self.calibration: nn.Module = calibrator.output_module()
        elif isinstance(calibrator, nn.Module):
            self.calibration = calibrator
        else:
            expected = "a fitted Calibrator (Neural Clamping too) or a calibration nn.Module"
            raise InputError("calibrator", expected, type(calibrator).__name__)

    def forward(self, x: Tensor) -> Tensor:
        """Calibrated probabilities of the batch ``x``."""
        probs: Tensor = self.calibration(self.model(self.inputs(x)))
        return probs
