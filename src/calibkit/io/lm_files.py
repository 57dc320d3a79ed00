"""The files language-model evaluation tools write, by layout: the one entry the prediction
loader (:func:`calibkit.io.predictions.load_predictions` with ``layout=``) and every command
(``--layout``) use.

The layout is said by the caller, never guessed from the file (a ``.jsonl`` may be any of
three):

- ``lm-eval``: lm-evaluation-harness ``samples_*.jsonl`` of ``multiple_choice`` tasks (a file,
  or the folder of one per task): :mod:`~calibkit.io.lm_harness`;
- ``chat-logprobs``: chat API responses with ``top_logprobs``, the answer one option letter:
  :mod:`~calibkit.io.lm_chat`;
- ``option-logprobs``: a CSV or JSONL of option log-probabilities with a task column, and
  ``stated-confidence``: one of stated confidences with right / wrong:
  :mod:`~calibkit.io.lm_table`.

Each gives an :class:`~calibkit.io.lm_outputs.LMOutputs`: the classifier outputs every
command works on, and each question's task (``--groups task``).

>>> sorted(LAYOUTS)
['chat-logprobs', 'lm-eval', 'option-logprobs', 'stated-confidence']
"""

from __future__ import annotations

from pathlib import Path

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.core.names import LM_LAYOUTS
from calibkit.io.lm_chat import LETTERS, read_chat
from calibkit.io.lm_harness import LENGTH_NORMS, read_harness
from calibkit.io.lm_outputs import LMOutputs
from calibkit.io.lm_table import read_option_table, read_stated

#: Layout -> the file suffixes it reads (a folder: ``lm-eval`` only), declared in
#: :data:`calibkit.core.names.LM_LAYOUTS`.
LAYOUTS = LM_LAYOUTS


def check_layout(layout: object) -> str:
    """``layout`` if it is one of :data:`LAYOUTS`, else an UnknownNameError naming
    ``layout`` (with the nearest)."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise UnknownNameError("layout", str(layout), list(LAYOUTS))
    return layout


def read_lm_file(
    path: Path,
    layout: str,
    *,
    length_norm: str | None = None,
    letters: str | None = None,
) -> LMOutputs:
    """The file (or, for ``lm-eval``, folder) ``path`` of ``layout``; ``length_norm``
    (``lm-eval`` only: ``"acc_norm"``, ``"acc_bytes"``) and ``letters`` (``chat-logprobs``
    only, default ``"ABCD"``) as their readers take them.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "stated.csv"
    ...     _ = path.write_text("task,confidence,correct" + chr(10) + "gsm8k,0.95,0" + chr(10))
    ...     lm = read_lm_file(path, "stated-confidence")
    >>> lm.layout, lm.answers, lm.tasks.tolist()
    ('stated-confidence', 'stated', ['gsm8k'])
    >>> read_lm_file(Path("x.npz"), "lm-eval")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calibkit.core.errors.InputError: layout: expected a file ending in .jsonl or a folder ...
    """
    layout = check_layout(layout)
    if length_norm is not None and layout != "lm-eval":
        raise InputError("length_norm", "a length normalisation only for layout lm-eval", layout)
    if length_norm is not None and length_norm not in LENGTH_NORMS:
        raise UnknownNameError("length_norm", str(length_norm), list(LENGTH_NORMS))
    if letters is not None and layout != "chat-logprobs":
        raise InputError("letters", "option letters only for layout chat-logprobs", layout)
    suffixes = LAYOUTS[layout]
    folder_ok = layout == "lm-eval"
    if not (path.suffix.lower() in suffixes or (folder_ok and path.is_dir())):
        wanted = "a file ending in " + " or ".join(suffixes) + (" or a folder" * folder_ok)
        raise InputError("layout", f"{wanted} ({layout})", path.name)
    if not path.exists():
        raise InputError("predictions file", "an existing file", f"{path} (not found)")
    if not (path.is_file() or (folder_ok and path.is_dir())):
        raise InputError("predictions file", "a regular file", f"{path} (a folder or special file)")
    if layout == "lm-eval":
        return read_harness(path, length_norm)
    if layout == "chat-logprobs":
        return read_chat(path, LETTERS if letters is None else letters)
    if layout == "option-logprobs":
        return read_option_table(path)
    return read_stated(path)


__all__ = ["LAYOUTS", "check_layout", "read_lm_file"]
