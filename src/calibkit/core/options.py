"""The options every evaluation takes, each family as one object, declared once: how it bins
(:class:`Binning`) and how its intervals are resampled (:class:`Resampling`).

:func:`~calibkit.metrics.evaluate`, :func:`~calibkit.metrics.evaluate_groups`,
:func:`~calibkit.workflows.compare.compare`, the conformal and label-shift workflows and the
reports take them whole (``binning=Binning(n_bins=10)``, ``resampling=Resampling(n_boot=0)``);
the command line builds them from ``--n-bins --mode`` and ``--n-boot --level --seed``, its
defaults and checks read from the declarations here. This module imports no numpy (the
command line's ``--help`` reads it).

>>> Binning(n_bins=10), Resampling(n_boot=0)
(Binning(n_bins=10, mode='top_label'), Resampling(n_boot=0, level=0.95, seed=0))
"""

from __future__ import annotations

from typing import Literal

from calibkit.core.params import Settings, param
from calibkit.core.validation import LEVEL, N_BINS, RESAMPLES, SEED, Choice

#: What a binary problem's calibration metrics bin (see :mod:`calibkit.core.binning`).
Mode = Literal["top_label", "positive_class"]
MODES: tuple[str, ...] = ("top_label", "positive_class")


class Binning(Settings):
    """How every binned metric of an evaluation, a comparison or a report bins the
    confidences: one object instead of ``n_bins`` and ``mode`` passed one by one.

    Examples
    --------
    >>> Binning(n_bins=10)
    Binning(n_bins=10, mode='top_label')
    >>> Binning(mode="positive")
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: mode: expected one of top_label, positive_class, got 'positive'
    """

    n_bins: int = param(default=15, check=N_BINS, doc="Equal-width (and equal-mass) bins.")
    mode: Mode = param(
        default="top_label",
        check=Choice(*MODES),
        doc="What a binary problem's calibration metrics bin: the top label's confidence and "
        "whether it is right, or P(y = 1) and whether y = 1 (positive_class).",
    )


class Resampling(Settings):
    """How intervals are resampled: the bootstrap's replicates, the confidence level and the
    seed, one object that every evaluation, comparison, report and command passes on
    (:func:`~calibkit.metrics.evaluate`, :func:`~calibkit.metrics.bootstrap_ci`, ...).

    Examples
    --------
    >>> Resampling(n_boot=200)
    Resampling(n_boot=200, level=0.95, seed=0)
    >>> Resampling(level=1.5)
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: level: expected a finite number in (0, 1), got 1.5
    """

    n_boot: int = param(
        default=1000, check=RESAMPLES, doc="Bootstrap replicates (0: no intervals)."
    )
    level: float = param(default=0.95, check=LEVEL, doc="The confidence level of every interval.")
    seed: int = param(
        default=0, check=SEED, doc="The seed of the replicates (and of any noise-floor draws)."
    )


__all__ = ["MODES", "Binning", "Mode", "Resampling"]
