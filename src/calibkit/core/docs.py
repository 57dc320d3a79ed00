"""Docstring sections shared by a family of functions, written once.

Functions of one family (the binned calibration errors, the proper scores, the focal
losses) take the same arguments; their numpydoc ``Parameters`` section is written once, as a
module constant, and put into each docstring where a line holds only ``{name}``. The result
is an ordinary docstring: ``help()``, ``inspect.getdoc`` and doctests see the full text.

>>> OUTPUTS = '''Parameters
... ----------
... labels, probs
...     The outputs.'''
>>> @fill_doc(parameters=OUTPUTS)
... def f(labels: object, probs: object) -> None:
...     '''Do nothing.
...
...     {parameters}
...     '''
>>> print(f.__doc__.splitlines()[2:6])
['    Parameters', '    ----------', '    labels, probs', '        The outputs.']
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., object])

#: The outputs the workflows' examples start from: three classes, 600 rows (about 84% right),
#: halved into ``cal`` and ``test``.
OUTPUTS_EXAMPLE = """>>> import numpy as np
>>> from calibkit import as_outputs
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 3, 600)
>>> z = rng.normal(size=(600, 3)) + 2.0 * np.eye(3)[y]  # logits, right about 84%
>>> cal, test = as_outputs(y[:300], logits=z[:300]), as_outputs(y[300:], logits=z[300:])"""


def fill_doc(**sections: str) -> Callable[[F], F]:
    """Replace each line ``{name}`` of the decorated function's docstring by ``sections[name]``,
    indented like that line. A placeholder without a section is an error at import time."""

    def fill(func: F) -> F:
        lines = []
        for line in (func.__doc__ or "").splitlines():
            key = line.strip()
            if re.fullmatch(r"\{[a-z_]+\}", key):
                indent = line[: len(line) - len(line.lstrip())]
                text = sections[key[1:-1]]
                lines += [indent + part if part else "" for part in text.splitlines()]
            else:
                lines.append(line)
        func.__doc__ = "\n".join(lines)
        return func

    return fill
