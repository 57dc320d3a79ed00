"""Neural Clamping (Tang, Chen & Ho 2024): a learnt input perturbation plus a temperature.

:class:`NeuralClamping` wraps a model and is fitted on its inputs (not its logits); its
``to_module()`` deploys the result as one ``nn.Module``
(:class:`~calibkit.calibrators.calibrated_model.CalibratedModel`). The modules, top to
bottom: :mod:`.objective` (focal loss + ``lam ||delta||^2`` and the exact temperature),
:mod:`.inputs` (inputs and arguments), :mod:`.passes` (batched passes of the frozen
model), :mod:`.init` (the initial perturbation), :mod:`.settings` (:class:`SGDSettings`),
:mod:`.sgd`, :mod:`.holdout` (the held-out guard), :mod:`.search` (the gamma pool,
:class:`GammaFit`), :mod:`.persistence`, :mod:`.model` and :mod:`.registry` (the
variants, registered by name in the one calibrator registry of kind ``model``).
"""

from __future__ import annotations

from calibkit.calibrators.model.clamping.model import ABLATIONS, NeuralClamping
from calibkit.calibrators.model.clamping.registry import (
    FocalTemperatureScaling,
    NeuralClampingCE,
    NeuralClampingFast,
    NeuralClampingFocal,
    create_input_calibrator,
    input_calibrator_names,
)
from calibkit.calibrators.model.clamping.search import GammaFit
from calibkit.calibrators.model.clamping.settings import SGDSettings
from calibkit.core.images import ImageDataset

__all__ = [
    "ABLATIONS",
    "FocalTemperatureScaling",
    "GammaFit",
    "ImageDataset",
    "NeuralClamping",
    "NeuralClampingCE",
    "NeuralClampingFast",
    "NeuralClampingFocal",
    "SGDSettings",
    "create_input_calibrator",
    "input_calibrator_names",
]
