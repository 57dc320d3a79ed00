"""The class weight ``alpha_t`` of the focal loss (Lin et al. 2017), for the focal family.

Lin, Goyal, Girshick, He & Dollar (2017, "Focal loss for dense object detection") multiply
each sample's loss by a weight of its class, ``alpha_t``: ``alpha`` for the positive class
(class 1) and ``1 - alpha`` for the negative one (class 0). calibkit's ``alpha`` is

- ``None`` (the default): no weight, ``alpha_t = 1``, so existing results do not change;
- one number in ``[0, 1]``, two classes only: Lin et al.'s binary form,
  ``alpha_t = (1 - alpha, alpha)[y]``;
- ``K`` numbers ``>= 0``, one per class: ``alpha_t = alpha[y]``.

``alpha = 0.5`` halves the loss; with Adam, whose steps do not depend on the loss scale,
that changes (almost) nothing, while a weight that differs between classes moves the
decision boundary toward the lightly weighted class.

>>> class_weight([1.0, 2.0, 0.5], torch.tensor([2, 1]), 3, torch.zeros(1))
tensor([0.5000, 2.0000])
"""

from __future__ import annotations

import torch
from torch import Tensor

from calibkit.core.errors import InputError
from calibkit.core.validation import NON_NEGATIVE, AnyOf, ListOf, NoneOr, Real

#: The class weight: None (off), a number in [0, 1] (two classes) or one weight >= 0 per class.
ALPHA = NoneOr(AnyOf(Real(0.0, 1.0), ListOf(NON_NEGATIVE)))

#: A checked ``alpha``: None, a number, or a tuple of per-class weights.
Alpha = float | tuple[float, ...] | None


def class_weight(alpha: object, targets: Tensor, n_classes: int, like: Tensor) -> Tensor | None:
    """``alpha_t = alpha[y_i]`` per sample (shape ``(N,)``), or None when ``alpha`` is None.

    Parameters
    ----------
    alpha : None, float or sequence of float
        The class weight (see the module docstring); checked here.
    targets : Tensor of shape (N,)
        int64 class indices.
    n_classes : int
        Number of classes ``K``.
    like : Tensor
        A tensor whose dtype and device the weights take.

    Returns
    -------
    Tensor of shape (N,) or None
        Each sample's weight.

    Examples
    --------
    >>> class_weight(0.25, torch.tensor([0, 1, 1]), 2, torch.zeros(1))  # 1 - alpha, alpha
    tensor([0.7500, 0.2500, 0.2500])
    """
    checked: Alpha = ALPHA.check("alpha", alpha)
    if checked is None:
        return None
    if isinstance(checked, float):
        if n_classes != 2:
            raise InputError(
                "alpha",
                "a list of one weight per class (a number needs 2 classes)",
                f"{checked!r} with {n_classes} classes",
            )
        checked = (1.0 - checked, checked)
    if len(checked) != n_classes:
        got = f"{len(checked)} weights"
        raise InputError("alpha", f"{n_classes} weights (one per class)", got)
    return torch.tensor(checked, dtype=like.dtype, device=like.device)[targets]


def weighted(loss: Tensor, weight: Tensor | None) -> Tensor:
    """``loss * weight`` (``loss`` itself when ``weight`` is None).

    Parameters
    ----------
    loss : Tensor of shape (N,)
        Per-sample losses.
    weight : Tensor of shape (N,) or None
        Per-sample weights, from :func:`class_weight`.

    Returns
    -------
    Tensor of shape (N,)
        The weighted losses.

    Examples
    --------
    >>> weighted(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.25]))
    tensor([0.5000, 0.5000])
    """
    return loss if weight is None else loss * weight
