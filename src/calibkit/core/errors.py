"""Exceptions raised by calibkit.

Every error caused by what a caller passed in is an :class:`InputError`: a ``ValueError``
whose message names the argument, what was expected and what came. The CLI turns these
into one line on stderr and exit status 2.

Every error type here survives pickling (a study's units run in worker processes and on Ray,
which send an error back pickled): the same type, arguments and message.

>>> import pickle
>>> err = pickle.loads(pickle.dumps(InputError("n_bins", "an integer >= 2", "1")))
>>> type(err).__name__, err.argument, str(err)
('InputError', 'n_bins', 'n_bins: expected an integer >= 2, got 1')

:class:`NotFittedError` is also scikit-learn's ``sklearn.exceptions.NotFittedError``
(so ``except`` clauses and estimator checks written for scikit-learn catch it). Importing
scikit-learn costs about a second, which the CLI's ``--help`` and ``import calibkit`` must
not pay, so the class is made on first use (the module's ``__getattr__``): only code that
raises or catches it imports scikit-learn.

Warnings: :class:`CalibkitWarning` is the base of the warnings calibkit gives on purpose
(the CLI shows each message once, as ``calibkit: warning: <message>``); each subclass below
says what it warns of.
"""

from __future__ import annotations

import decimal
import difflib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any


class CalibkitError(Exception):
    """Base class of every exception raised on purpose by calibkit.

    Examples
    --------
    >>> from calibkit import InputError, UnknownNameError
    >>> issubclass(InputError, CalibkitError), issubclass(UnknownNameError, CalibkitError)
    (True, True)
    """


class CalibkitWarning(UserWarning):
    """Base class of the warnings calibkit gives on purpose: something the caller should
    know about a result that is still returned.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("a result to read with care", CalibkitWarning)
    >>> issubclass(seen[0].category, UserWarning)
    True
    """


class BoundWarning(CalibkitWarning):
    """A fitted parameter stopped at a bound of the range it was searched in, so the best
    value may lie beyond it; the message names the parameter, the bound and what to do.

    Examples
    --------
    Labels unrelated to the logits drive the temperature to its upper bound:

    >>> import warnings
    >>> import numpy as np
    >>> from calibkit import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> logits, labels = rng.normal(size=(500, 3)) * 5, rng.integers(0, 3, 500)
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     ts = TemperatureScaling().fit(logits, labels)
    >>> [w.category.__name__ for w in seen], round(ts.temperature_, 1)
    (['BoundWarning'], 10.0)
    """


class ConvergenceWarning(CalibkitWarning):
    """An iterative estimate stopped at its iteration budget before meeting its tolerance:
    the result is the last iterate (the estimator records ``converged_`` and ``n_iter_``).

    Examples
    --------
    EM on label-shifted posteriors, stopped after one iteration:

    >>> import warnings
    >>> from calibkit.calibrators.priors.estimators import estimate_priors_em
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     _ = estimate_priors_em([[0.9, 0.1], [0.9, 0.1], [0.2, 0.8]], [0.5, 0.5], max_iter=1)
    >>> [w.category.__name__ for w in seen]
    ['ConvergenceWarning']
    """


class SingularSystemWarning(CalibkitWarning):
    """A linear system an estimate rests on is singular, or singular within the sampling
    error of its coefficients: its solution is not identified by the data, and the message
    says what was done instead.

    Examples
    --------
    >>> issubclass(SingularSystemWarning, CalibkitWarning)
    True
    """


class SmallSampleWarning(CalibkitWarning):
    """Too few rows for what is estimated from them (fewer target rows than class priors):
    the result is returned, but it says more about the sample than about the population.

    Examples
    --------
    >>> issubclass(SmallSampleWarning, CalibkitWarning)
    True
    """


class UnseenGroupWarning(CalibkitWarning):
    """Rows given to a group-wise calibrator belong to groups it never saw at fit time: the
    message names how many rows, which groups, and what they get instead (the global map).

    Examples
    --------
    >>> issubclass(UnseenGroupWarning, CalibkitWarning)
    True
    """


#: Digits up to which an integer in a message is written out (every int64 and uint64);
#: a longer one is written compactly (:func:`compact_numbers`).
EXACT_DIGITS = 20
#: An integer standing alone in a message (not in a name, a path, a quoted text or a hash;
#: an integer is never written with a leading zero, a run of digits such as an MD5 of
#: zeros may be).
_LONG_INTEGER = re.compile(rf"(?<![\w.'\"/\\])[1-9]\d{{{EXACT_DIGITS},}}(?![\w'\"/\\]|\.\d)")


def compact_numbers(text: str) -> str:
    """``text`` with each integer of more than :data:`EXACT_DIGITS` digits that stands alone
    written in six significant digits (``10**300`` as ``1e+300``): the one rule of every
    :class:`InputError` message, whose "expected" and "got" parts pass through it. Names,
    paths, quoted texts and hashes are left as they are.

    >>> compact_numbers(f"at least {10**300 - 1} rows, got {2**64 - 1}")
    'at least 1e+300 rows, got 18446744073709551615'
    >>> compact_numbers(f"-{3 * 10**400} and '{10**30}' and run_{10**30}.npz")
    "-3e+400 and '1000000000000000000000000000000' and run_1000000000000000000000000000000.npz"
    >>> compact_numbers("expected MD5 " + "0" * 32)  # digits with a leading zero: no integer
    'expected MD5 00000000000000000000000000000000'
    """

    def compact(match: re.Match[str]) -> str:
        return format(decimal.Context(prec=6).plus(decimal.Decimal(match[0])).normalize(), "g")

    return _LONG_INTEGER.sub(compact, text)


class InputError(CalibkitError, ValueError):
    """Bad input: the message names the argument, what was expected and what came (long
    integers in those written compactly: :func:`compact_numbers`).

    Examples
    --------
    >>> err = InputError("n_bins", "an integer >= 2", "1")
    >>> str(err), err.argument, isinstance(err, ValueError)
    ('n_bins: expected an integer >= 2, got 1', 'n_bins', True)
    >>> str(InputError("n_bins", "an integer in [1, 100000]", str(10**400)))
    'n_bins: expected an integer in [1, 100000], got 1e+400'
    """

    def __init__(self, argument: str, expected: str, got: str) -> None:
        self.argument = argument
        self.expected = compact_numbers(expected)
        self.got = compact_numbers(got)
        super().__init__(f"{argument}: expected {self.expected}, got {self.got}")

    def __reduce__(self) -> tuple[Any, ...]:  # args holds the message, not __init__'s
        return type(self), (self.argument, self.expected, self.got), self.__dict__


if TYPE_CHECKING:  # what the class made by _not_fitted_error() is, for type checkers

    class NotFittedError(CalibkitError, ValueError, AttributeError, RuntimeError):
        """A calibrator was used before ``fit``."""


def _not_fitted_error() -> type[Exception]:
    from sklearn.exceptions import NotFittedError as SklearnNotFittedError

    class NotFittedError(CalibkitError, SklearnNotFittedError, RuntimeError):  # type: ignore[misc]
        """A calibrator was used before ``fit`` (scikit-learn's NotFittedError too).

        Examples
        --------
        >>> from sklearn.exceptions import NotFittedError as SklearnNotFittedError
        >>> from calibkit import NotFittedError, TemperatureScaling
        >>> try:
        ...     TemperatureScaling().predict_proba([[0.0, 1.0]])
        ... except NotFittedError as err:
        ...     isinstance(err, SklearnNotFittedError)
        True
        """

    NotFittedError.__module__, NotFittedError.__qualname__ = __name__, "NotFittedError"
    return NotFittedError


def __getattr__(name: str) -> Any:
    if name == "NotFittedError":
        cls = globals()[name] = _not_fitted_error()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Most names an :class:`UnknownNameError` lists beside its suggestion (more: counted only).
LISTED_BESIDE_SUGGESTION = 10


def nearest_name(name: object, valid: Iterable[str]) -> str | None:
    """The valid name nearest to a mistyped ``name``, or None: a name equal to it but for
    case first (``TEMPERATURE``, ``SMS``), else the nearest ignoring case (difflib's ratio
    >= 0.6).

    Among equally near names, the one sharing the longest beginning with ``name`` wins (and
    among names equal but for case, the one spelled most like it).

    >>> nearest_name("temprature", ["temperature", "vector"]), nearest_name("xyz", ["vector"])
    ('temperature', None)
    >>> nearest_name("resnet21", ["resnet32", "resnet20", "resnet44"])
    'resnet20'
    >>> nearest_name("SMS", ["sms", "sms_cv", "svs"]), nearest_name("TEMPRATURE", ["temperature"])
    ('sms', 'temperature')
    """
    text = str(name)
    names = list(valid)
    same_but_case = [v for v in names if v.casefold() == text.casefold()]
    if same_but_case:  # several only if valid names differ by case alone
        return max(same_but_case, key=lambda v: sum(a == b for a, b in zip(text, v, strict=False)))
    by_folded: dict[str, str] = {}
    for v in names:
        by_folded.setdefault(v.casefold(), v)
    folded = text.casefold()
    near = difflib.get_close_matches(folded, list(by_folded), n=5, cutoff=0.6)
    if not near:
        return None

    def closeness(candidate: str) -> tuple[float, int]:
        ratio = difflib.SequenceMatcher(None, folded, candidate).ratio()
        pairs = zip(folded, candidate, strict=False)
        shared = next((i for i, (a, b) in enumerate(pairs) if a != b), len(candidate))
        return ratio, shared

    return by_folded[max(near, key=closeness)]


class UnknownNameError(InputError, KeyError):
    """A registry lookup failed: the message suggests the nearest valid name, if one is near
    ("did you mean ...?"), and lists the valid names (counts them, beside a suggestion, when
    they are more than :data:`LISTED_BESIDE_SUGGESTION`).

    Examples
    --------
    >>> err = UnknownNameError("method", "temprature", ["temperature", "vector"])
    >>> err.name, err.valid, isinstance(err, KeyError)
    ('temprature', ['temperature', 'vector'], True)
    >>> print(UnknownNameError("--model", "resnt20", [f"resnet{d}" for d in range(8, 120, 6)]))
    --model: expected one of 19 names, got 'resnt20' (did you mean 'resnet20'?)
    """

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        self.kind, self.name, self.valid = kind, name, list(valid)
        self.suggestion = nearest_name(name, self.valid)
        got = repr(name) + (f" (did you mean {self.suggestion!r}?)" if self.suggestion else "")
        expected = "one of " + ", ".join(sorted(self.valid))
        if self.suggestion and len(self.valid) > LISTED_BESIDE_SUGGESTION:
            expected = f"one of {len(self.valid)} names"
        super().__init__(kind, expected, got)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.kind, self.name, self.valid), self.__dict__

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])
