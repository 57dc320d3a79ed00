"""The metrics outside the suite, computed on request (``calibkit evaluate --extra``).

Each extra is an entry of the metric registry (:data:`~calibkit.metrics.info.METRICS`,
``in_suite=False``) that declares the keyword options its function takes
(:attr:`~calibkit.metrics.info.MetricInfo.options`): :func:`extra_values` passes each
function exactly those of the caller's options, so a new extra needs no code here.
:data:`EXTRA_GROUPS` names sets of extras asked for together.

>>> expand_extras(["decomposition", "nll_calibration"])[:2]
('nll_calibration', 'nll_refinement')
>>> values = extra_values([0, 1, 1], ["risk_at_coverage", "brier_uncertainty"],
...     probs=[[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], coverage=0.5, n_bins=5)
>>> {k: round(v, 4) for k, v in values.items()}
{'risk_at_coverage': 0.0, 'brier_uncertainty': 0.4444}
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from calibkit.core.errors import UnknownNameError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.calibration_tests import UndefinedTestError
from calibkit.metrics.info import METRICS, TEST_METRICS, extra_names

#: Names that stand for several registered extras (``calibkit evaluate --extra tests``).
EXTRA_GROUPS: dict[str, tuple[str, ...]] = {
    "decomposition": ("nll_calibration", "nll_refinement", "brier_calibration", "brier_refinement"),
    "tests": TEST_METRICS,
}


def extra_choices() -> tuple[str, ...]:
    """The names an extra may be asked by now: the registry's extras, then :data:`EXTRA_GROUPS`."""
    return (*extra_names(), *EXTRA_GROUPS)


def expand_extras(names: Iterable[str]) -> tuple[str, ...]:
    """The registered extras that ``names`` ask for (groups expanded), in report order;
    an unknown name is refused."""
    names = list(names)
    unknown = [n for n in names if n not in extra_choices()]
    if unknown:
        raise UnknownNameError("extra", unknown[0], list(extra_choices()))
    asked = {m for n in names for m in EXTRA_GROUPS.get(n, (n,))}
    return tuple(n for n in extra_names() if n in asked)


def extra_values(
    labels: object, names: Iterable[str], probs: object = None, **options: Any
) -> dict[str, float]:
    """Each extra of ``names`` on the outputs, its function given exactly the options it
    declares (those of ``options`` it does not declare are not passed).

    ``labels`` and ``probs`` (or ``logits=``) are the outputs, as for every metric; the other
    keywords are the options (``n_bins``, ``mode``, ``coverage``, ``risk``, ...).
    """
    logits = options.pop("logits", None)
    outputs = as_outputs(labels, probs, logits=logits)
    values: dict[str, float] = {}
    for name in names:
        info = METRICS.get(name)
        given = {k: options[k] for k in info.options if k in options}
        values[name] = float(info(outputs, **given))
    return values


def extra_results(
    labels: object, names: Iterable[str], probs: object = None, **options: Any
) -> tuple[dict[str, float], dict[str, str]]:
    """:func:`extra_values`, but an extra these outputs leave undefined (a calibration test,
    :class:`~calibkit.metrics.calibration_tests.UndefinedTestError`) gets NaN and its reason
    instead of stopping the rest: the values, and the reason of each undefined extra.

    Examples
    --------
    Every confidence 0.6: Hosmer-Lemeshow has one group of risk, Spiegelhalter's Z is defined.

    >>> values, undefined = extra_results(
    ...     [0, 1, 1, 0], ["spiegelhalter_p", "hosmer_lemeshow_p"], [[0.6, 0.4]] * 4)
    >>> round(values["spiegelhalter_p"], 4), values["hosmer_lemeshow_p"]
    (0.6831, nan)
    >>> undefined
    {'hosmer_lemeshow_p': 'too few distinct confidences: 1 group of them, at least 2 needed'}
    """
    logits = options.pop("logits", None)
    outputs = as_outputs(labels, probs, logits=logits)
    values: dict[str, float] = {}
    undefined: dict[str, str] = {}
    for name in names:
        try:
            values |= extra_values(outputs, [name], **options)
        except UndefinedTestError as exc:
            values[name], undefined[name] = math.nan, exc.reason
    return values, undefined


__all__ = ["EXTRA_GROUPS", "expand_extras", "extra_choices", "extra_results", "extra_values"]
