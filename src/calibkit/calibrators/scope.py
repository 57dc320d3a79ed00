"""Where a registered calibrator runs by default: the :class:`~calibkit.core.scope.Scope`
declared with its entry in :mod:`calibkit.core.catalog`, asked by every consumer
(:func:`declined`): no workflow keeps its own list.

>>> scope_of("matrix").declines(100, 5000)[:27]
'declined from 50 classes on'
"""

from __future__ import annotations

from calibkit.core.scope import EVERYWHERE as EVERYWHERE
from calibkit.core.scope import Scope as Scope


def scope_of(name: str) -> Scope:
    """The :class:`Scope` declared on the registered calibrator ``name``.

    >>> scope_of("temperature") == EVERYWHERE, scope_of("matrix").max_classes
    (True, 50)
    """
    from calibkit.calibrators.base import CALIBRATORS

    scope = CALIBRATORS.fact(name, "scope", EVERYWHERE)
    assert isinstance(scope, Scope)
    return scope


def declined(
    names: list[str], n_classes: int, n_samples: int | None = None, cross_fit: bool = False
) -> dict[str, str]:
    """Each of ``names`` whose declared scope excludes ``n_classes`` classes and
    ``n_samples`` calibration samples, with its one-line reason (in the order of ``names``;
    ``cross_fit``: as ``auto``'s default candidates, :meth:`Scope.declines_cross_fit`).

    >>> declined(["temperature", "matrix"], 100, 5000)["matrix"][:27]
    'declined from 50 classes on'
    """
    res: dict[str, str] = {}
    for name in names:
        scope = scope_of(name)
        if cross_fit:
            why = scope.declines_cross_fit(n_classes, n_samples)
        else:
            why = scope.declines(n_classes, n_samples)
        if why is not None:
            res[name] = why
    return res
