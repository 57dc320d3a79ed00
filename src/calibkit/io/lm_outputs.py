"""A language model's answers as calibkit reads them: multiple-choice option scores with the
gold option, or a stated confidence with right / wrong, each question with its task.

:class:`LMOutputs` is what every reader of an evaluation tool's file returns
(:mod:`calibkit.io.lm_files`): the :class:`~calibkit.core.outputs.ClassifierOutputs` every
command works on (the options' log-likelihoods as ``logits``: softmax over a question's
options gives the model's probability of each; a stated confidence as the binary
``probs`` ``[1 - c, c]`` against right = 1), each question's task (the groups of
``--groups task``), its number of options, and the notes a report repeats (how the file was
read: a normalisation, a filled-in probability mass, padded options).

Questions with fewer options than the widest one are padded (:func:`pad_options`): a
missing option gets a log-likelihood :data:`PAD_GAP` nats below the question's lowest one,
so its probability is 0 in float64 at any temperature calibkit fits (``exp(-1e6 / T)``
underflows for every ``T`` below 1e4), and it is never the gold.

>>> z, counts = pad_options([[-1.0, -2.0], [-0.5, -0.7, -3.0]])
>>> z[0].tolist(), counts.tolist()
([-1.0, -2.0, -1000002.0], [2, 3])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from calibkit.core.outputs import ClassifierOutputs

#: How far below a question's lowest option a missing option's log-likelihood is put.
PAD_GAP = 1e6
#: The kinds of answer a file holds: options of a multiple-choice question, or a stated
#: confidence (one probability of being right per question: the binary path).
ANSWER_KINDS = ("options", "stated")


def pad_options(rows: Sequence[Sequence[float]]) -> tuple[np.ndarray, npt.NDArray[np.int64]]:
    """The rows of option log-likelihoods as one float64 matrix (missing options padded, see
    the module docstring) and each row's number of options."""
    counts = np.array([len(r) for r in rows], dtype=np.int64)
    width = int(counts.max())
    out = np.empty((len(rows), width), dtype=np.float64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
        if len(r) < width:
            out[i, len(r) :] = min(r) - PAD_GAP
    return out, counts


def padding_notes(counts: npt.NDArray[np.int64]) -> list[str]:
    """The report's note on the questions padded by :func:`pad_options` (none if none was).

    >>> padding_notes(np.array([2, 3, 3]))
    ['1 questions have fewer than 3 options; the missing options have probability 0.']
    """
    if counts.min() == counts.max():
        return []
    short = int((counts < counts.max()).sum())
    missing = "the missing options have probability 0."
    return [f"{short:,} questions have fewer than {int(counts.max())} options; {missing}"]


@dataclass(frozen=True)
class LMOutputs:
    """A language model's answers read from an evaluation tool's file.

    Attributes
    ----------
    outputs : ClassifierOutputs
        Option log-likelihoods as ``logits`` with the gold option as the label (``answers
        == "options"``), or ``probs`` ``[1 - c, c]`` of a stated confidence ``c`` with
        right = 1 as the label (``answers == "stated"``).
    tasks : ndarray of str
        Each question's task (one name for a file of one task).
    n_options : ndarray of int64
        Each question's number of options (2 for a stated confidence).
    layout : str
        The layout read (:data:`calibkit.io.lm_files.LAYOUTS`).
    answers : str
        ``"options"`` or ``"stated"`` (:data:`ANSWER_KINDS`): the report's vocabulary.
    notes : tuple of str
        How the file was read, in words a report repeats.
    groups : dict of str to ndarray
        Further per-question groups by name besides ``task`` (``group``: the harness's
        group of each task, from its ``results_*.json``).

    Examples
    --------
    >>> from calibkit.core.outputs import as_outputs
    >>> lm = LMOutputs(as_outputs([0], logits=[[0.0, -1.0]]), np.array(["arc"]), np.array([2]),
    ...                "option-logprobs", "options")
    >>> lm.n_questions, lm.task_names, lm.group_keys
    (1, ['arc'], ['task'])
    """

    outputs: ClassifierOutputs
    tasks: np.ndarray
    n_options: npt.NDArray[np.int64]
    layout: str
    answers: str
    notes: tuple[str, ...] = ()
    groups: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n_questions(self) -> int:
        return self.outputs.n_samples

    @property
    def task_names(self) -> list[str]:
        """The tasks in the order they first appear."""
        return list(dict.fromkeys(self.tasks.tolist()))

    @property
    def group_keys(self) -> list[str]:
        """The names ``--groups`` may take for this file: ``task`` and :attr:`groups`'."""
        return ["task", *self.groups]

    def group(self, key: str) -> np.ndarray | None:
        """The per-question groups named ``key`` (None if the file has no such groups)."""
        return self.tasks if key == "task" else self.groups.get(key)


__all__ = ["ANSWER_KINDS", "PAD_GAP", "LMOutputs", "pad_options", "padding_notes"]
