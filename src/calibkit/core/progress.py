"""How long-running library code reports progress: through :mod:`logging`, never by printing.

Every module logs to its own logger, ``logging.getLogger(__name__)`` (children of the
``calibkit`` logger). A line people should see (what is being done, an epoch's summary)
goes out at ``INFO``. A line that says how far a loop has got carries a
:class:`ProgressEvent` (``extra={"progress": event}``): the epochs of a training run at
``INFO``, its mini-batches at ``DEBUG`` (many, meant for a redrawn bar, not a log file).
Nothing is shown unless the application installs a handler: the command line draws
these records on stderr (see :mod:`calibkit.cli.progress`); a notebook can call
``logging.basicConfig(level=logging.INFO)``.

>>> import logging
>>> log = logging.getLogger("calibkit.example")
>>> seen = []
>>> class Keep(logging.Handler):
...     def emit(self, record: logging.LogRecord) -> None:
...         seen.append((record.getMessage(), progress_of(record)))
>>> log.addHandler(Keep()); log.setLevel(logging.DEBUG)
>>> report_step(log, ProgressEvent("epoch 1/2", step=3, total=4, text="loss 0.5000"))
>>> seen
[('epoch 1/2 loss 0.5000', ProgressEvent(label='epoch 1/2', step=3, total=4, text='loss 0.5000'))]
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

__all__ = ["ProgressEvent", "progress_of", "report_step"]


@dataclass(frozen=True)
class ProgressEvent:
    """Step ``step`` of ``total`` of the loop ``label`` (e.g. ``"epoch 3/10"``), with ``text``.

    The record's message is ``label text``.
    """

    label: str
    step: int
    total: int
    text: str = ""


def report_step(logger: logging.Logger, event: ProgressEvent, level: int = logging.DEBUG) -> None:
    """Log ``event`` (message ``label text``) at ``level``, the event attached to the record."""
    if logger.isEnabledFor(level):
        message = f"{event.label} {event.text}".rstrip()
        logger.log(level, "%s", message, extra={"progress": event}, stacklevel=2)


def progress_of(record: logging.LogRecord) -> ProgressEvent | None:
    """The :class:`ProgressEvent` a log record carries, or None for a plain message."""
    event = getattr(record, "progress", None)
    return event if isinstance(event, ProgressEvent) else None
