"""Where a catalogued calibrator runs by default: its scope (:class:`Scope`).

A method is one of the defaults (``compare``'s rows, ``auto``'s candidates) for some data
sizes and not others: unregularised matrix scaling overfits from 50 classes on, and a
method that costs minutes at 1,000 classes is no default there. That fact is declared with
the method's entry in :mod:`calibkit.core.catalog` (``scope=``), and every consumer asks
:func:`calibkit.calibrators.scope.declined` for it: no workflow keeps its own list. A
declined method still runs when named; the one-line reason is what the output and the
report say about it.

>>> Scope(max_classes=50, reason="K (K + 1) parameters").declines(100, 5000)
'declined from 50 classes on: K (K + 1) parameters'
>>> Scope().declines(1000, 50_000) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    """The data sizes for which a method is among the defaults.

    Attributes
    ----------
    max_classes : int, optional
        The method is a default only below this many classes (None: any number).
    reason : str
        Why, in one line (said with :attr:`max_classes`'s decline).
    parameters : callable, optional
        The number of fitted parameters for ``K`` classes; with :attr:`samples_per_parameter`,
        the fewest calibration samples the method is a default for.
    samples_per_parameter : float
        Calibration samples needed per fitted parameter (0: no such limit).
    per : str
        What :attr:`parameters` counts, in words (``"parameter"``; ``"class"`` when it
        counts classes: the samples needed per class).
    cross_fit_max_classes : int, optional
        The method is one of ``auto``'s default candidates (cross-fitted in each of its
        folds: five fits more) only below this many classes (None: wherever it is a
        default); :attr:`cross_fit_reason` says why.
    cross_fit_reason : str
        Why, in one line.

    Examples
    --------
    >>> s = Scope(parameters=lambda k: k * (k + 1), samples_per_parameter=2)
    >>> s.declines(10, 219)
    'declined below 2 calibration samples per parameter (220 for 10 classes, 110 parameters)'
    >>> s.declines(10, 220) is None
    True
    """

    max_classes: int | None = None
    reason: str = ""
    parameters: Callable[[int], int] | None = None
    samples_per_parameter: float = 0.0
    per: str = "parameter"
    cross_fit_max_classes: int | None = None
    cross_fit_reason: str = ""

    def declines(self, n_classes: int, n_samples: int | None = None) -> str | None:
        """Why the method is no default for ``n_classes`` classes and ``n_samples``
        calibration samples (None: not known), in one line; None when it is one."""
        if self.max_classes is not None and n_classes >= self.max_classes:
            why = f": {self.reason}" if self.reason else ""
            return f"declined from {self.max_classes} classes on{why}"
        if self.parameters is not None and self.samples_per_parameter and n_samples is not None:
            p = self.parameters(n_classes)
            need = int(self.samples_per_parameter * p)
            if n_samples < need:
                count = f", {p:,} parameters" if self.per == "parameter" else ""
                return (
                    f"declined below {self.samples_per_parameter:g} calibration samples per "
                    f"{self.per} ({need:,} for {n_classes} classes{count})"
                )
        return None

    def declines_cross_fit(self, n_classes: int, n_samples: int | None = None) -> str | None:
        """Why the method is no default candidate of ``auto`` for ``n_classes`` classes and
        ``n_samples`` calibration samples: :meth:`declines`, or its cross-fitting limit.

        >>> s = Scope(cross_fit_max_classes=500, cross_fit_reason="5 fits of 10 s")
        >>> s.declines(1000) is None, s.declines_cross_fit(1000)
        (True, 'not cross-fitted from 500 classes on: 5 fits of 10 s')
        """
        why = self.declines(n_classes, n_samples)
        limit = self.cross_fit_max_classes
        if why is None and limit is not None and n_classes >= limit:
            tail = f": {self.cross_fit_reason}" if self.cross_fit_reason else ""
            why = f"not cross-fitted from {limit} classes on{tail}"
        return why


#: The scope of an entry registered without ``scope=``: every data size.
EVERYWHERE = Scope()
