"""Exceptions raised by calibkit.

Every error caused by what a caller passed in is an :class:`InputError`: a ``ValueError``
whose message names the argument, what was expected and what came. The CLI turns these
into one line on stderr and exit status 2.
"""

from __future__ import annotations


class CalibkitError(Exception):
    """Base class of every exception raised on purpose by calibkit."""


class InputError(CalibkitError, ValueError):
    """Bad input: the message names the argument, what was expected and what came."""

    def __init__(self, argument: str, expected: str, got: str) -> None:
        self.argument = argument
        self.expected = expected
        self.got = got
        super().__init__(f"{argument}: expected {expected}, got {got}")


class NotFittedError(CalibkitError, RuntimeError):
    """A calibrator was used before ``fit``."""


class UnknownNameError(InputError, KeyError):
    """A registry lookup failed; the message lists the valid names."""

    def __init__(self, kind: str, name: str, valid: list[str]) -> None:
        super().__init__(kind, "one of " + ", ".join(sorted(valid)), repr(name))

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])
