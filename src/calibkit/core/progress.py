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

A phase of ``N`` steps that can take more than a couple of seconds (fits one by one, the
folds of a cross-validation) reports through :class:`Phase`: a bar step after each step,
and at ``INFO`` a permanent line ``<label> k/N <text>  <spent> spent, about <left> left``
once the phase has run :data:`QUIET_FOR` seconds, then at most every :data:`EVERY`
seconds, and at its last step. The time left is one rule everywhere (:func:`time_left`):
the time spent, divided by the steps done, times the steps left.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "EVERY",
    "QUIET_FOR",
    "Phase",
    "ProgressEvent",
    "duration",
    "progress_of",
    "report_step",
    "time_left",
    "time_left_text",
]

#: A phase's first permanent line comes after this many seconds (shorter phases are silent).
QUIET_FOR = 2.0
#: Seconds between two permanent lines of one phase (the last step is always said).
EVERY = 5.0


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


def duration(seconds: float) -> str:
    """``seconds`` as ``1h02m``, ``3m05s`` or ``12s``.

    >>> duration(12.4), duration(185), duration(3725)
    ('12s', '3m05s', '1h02m')
    """
    s = round(max(seconds, 0.0))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def time_left(spent: float, done: int, total: int) -> float:
    """The time left of ``total`` steps after ``done`` of them took ``spent`` seconds:
    ``spent / done * (total - done)`` (0 before the first step: nothing to go by).

    >>> time_left(12.0, 3, 8)  # 4 s a step, 5 steps left
    20.0
    """
    return spent / done * (total - done) if done > 0 else 0.0


def time_left_text(spent: float, done: int, total: int) -> str:
    """``12s spent, about 20s left`` (:func:`time_left`, :func:`duration`).

    >>> time_left_text(12.0, 3, 8)
    '12s spent, about 20s left'
    """
    return f"{duration(spent)} spent, about {duration(time_left(spent, done, total))} left"


class Phase:
    """A loop of ``total`` steps that reports each step to ``logger`` (see the module).

    Call :meth:`step` after each step (from any thread). Every step is a ``DEBUG`` record
    (a redrawn bar on a terminal); a permanent ``INFO`` line ``label k/N text  <spent>
    spent, about <left> left`` is written once ``quiet_for`` seconds have passed since the
    phase began, then at most every ``every`` seconds, and at the last step (if the phase
    said anything before or has run ``quiet_for`` seconds). ``clock`` gives the time.

    >>> import logging
    >>> log = logging.getLogger("calibkit.example_phase")
    >>> lines = []
    >>> class Keep(logging.Handler):
    ...     def emit(self, record: logging.LogRecord) -> None:
    ...         if record.levelno >= logging.INFO:
    ...             lines.append(record.getMessage())
    >>> log.addHandler(Keep()); log.setLevel(logging.DEBUG)
    >>> now = [0.0]
    >>> phase = Phase(log, "fitting", 4, clock=lambda: now[0])
    >>> for k in range(4):
    ...     now[0] += 3.0
    ...     phase.step(f"fold {k + 1}")
    >>> for line in lines:  # at 3 s the first line; at 6 s too soon after it
    ...     print(line)
    fitting 1/4 fold 1  3s spent, about 9s left
    fitting 3/4 fold 3  9s spent, about 3s left
    fitting 4/4 fold 4  12s spent, about 0s left
    """

    def __init__(
        self,
        logger: logging.Logger,
        label: str,
        total: int,
        *,
        quiet_for: float = QUIET_FOR,
        every: float = EVERY,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger, self.label, self.total = logger, label, max(int(total), 0)
        self.quiet_for, self.every, self.clock = quiet_for, every, clock
        self.start = clock()
        self.done = 0
        self._said: float | None = None  # when the last permanent line was written
        self._lock = threading.Lock()
        report_step(logger, ProgressEvent(label, 0, self.total), logging.DEBUG)

    def step(self, text: str = "", n: int = 1) -> None:
        """``n`` more steps done (``text``: what they were, e.g. ``"vector, fold 2/5"``)."""
        with self._lock:
            self.done += n
            now = self.clock()
            spent = now - self.start
            k, n = self.done, self.total
            report_step(self.logger, ProgressEvent(self.label, k, n, text), logging.DEBUG)
            last = k >= n
            due = spent >= self.quiet_for and (self._said is None or now - self._said >= self.every)
            if due or (last and (self._said is not None or spent >= self.quiet_for)):
                self._said = now
                line = f"{text}  {time_left_text(spent, k, n)}".lstrip()
                event = ProgressEvent(f"{self.label} {k}/{n}", k, n, line)
                report_step(self.logger, event, logging.INFO)
