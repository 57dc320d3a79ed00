"""Neural Clamping (Tang, Chen & Ho 2024): a learnt input perturbation plus a temperature.

:class:`NeuralClamping` wraps a model and is fitted on its inputs (not its logits);
:class:`CalibratedModel` deploys the result as one ``nn.Module``.
"""

from __future__ import annotations

from calibkit.calibrators.clamping.model import ABLATIONS, CalibratedModel, NeuralClamping

__all__ = ["ABLATIONS", "CalibratedModel", "NeuralClamping"]
