"""Tables of a language model's answers: option log-probabilities, or a stated confidence.

Two layouts, each as CSV (a header row, standard quoting) or JSON Lines (``.jsonl``):

``option-logprobs``: one question per row, its options' log-probabilities
    CSV: columns ``answer`` (the gold option's index, 0-based), ``logprob_0 ..
    logprob_{K-1}`` (a question with fewer options leaves the last cells empty), and
    optionally ``task``. JSONL: ``{"answer": 2, "logprobs": [-1.2, -0.3, -2.5], "task":
    "arc"}``. Softmax over a question's options gives the model's probability of each.
``stated-confidence``: one answer per row, the confidence the model stated and whether it
    was right: ``confidence`` (a probability in [0, 1]), ``correct`` (``1`` / ``0``,
    ``true`` / ``false``), optionally ``task``; the same keys in JSONL. It is calibrated on
    the binary path: the probability of being right, ``[1 - c, c]``, against right = 1.

Other columns are ignored. A row without a task gets the task ``"default"``. A bad cell is
an InputError naming the file, the line (JSONL) or data row (CSV) and the field; nothing is
returned from a file with one bad row.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = Path(folder) / "answers.csv"
...     _ = path.write_text("task,answer,logprob_0,logprob_1,logprob_2" + chr(10)
...                         + "arc,1,-2.0,-0.1,-3.0" + chr(10) + "boolq,0,-0.2,-1.9," + chr(10))
...     lm = read_option_table(path)
>>> lm.tasks.tolist(), lm.n_options.tolist(), lm.outputs.labels.tolist()
(['arc', 'boolq'], [3, 2], [1, 0])
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, check_labels, check_scores
from calibkit.io.csv_table import read_csv_table
from calibkit.io.json_lines import read_json_lines, shown
from calibkit.io.lm_outputs import LMOutputs, pad_options, padding_notes

#: The task of a row without one.
DEFAULT_TASK = "default"
_LOGPROB = re.compile(r"logprob_(\d+)")


def _records(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """Each row as ``(where, {field: value})``: a JSONL object (``line N``), or a CSV row by
    column name (``data row N``, as :mod:`calibkit.io.csv_table` counts them; the cells as
    text, an empty cell as None)."""
    if path.suffix.lower() == ".jsonl":
        for line in read_json_lines(path):
            yield f"line {line.number}", line.data
        return
    table = read_csv_table(path)
    if not table.rows:
        raise InputError(str(path), "at least one data row after the header", "no rows")
    for i, row in enumerate(table.rows, start=1):
        cells: dict[str, object] = {
            n: (c.strip() or None) for n, c in zip(table.names, row, strict=True)
        }
        yield f"data row {i}", cells


def _fail(path: Path, line: str, field: str, expected: str, value: object) -> InputError:
    return InputError(f"{path}, {line}, field {field}", expected, shown(value))


def _float(path: Path, line: str, field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _fail(path, line, field, "a number", value)
    try:
        x = float(value)
    except ValueError:
        raise _fail(path, line, field, "a number (decimal point)", value) from None
    if not math.isfinite(x):
        raise _fail(path, line, field, "a finite number", value)
    return x


def _task(path: Path, line: str, row: dict[str, object]) -> str:
    task = row.get("task")
    if task is None:
        return DEFAULT_TASK
    if not isinstance(task, str) or not task.strip():
        raise _fail(path, line, "task", "a task name", task)
    return task


def _index(path: Path, line: str, field: str, value: object, below: int) -> int:
    if isinstance(value, str) and re.fullmatch(r"\s*\d+(\.0*)?\s*", value):
        value = int(float(value))
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < below:
        raise _fail(path, line, field, f"an option index in [0, {below})", value)
    return value


def _logprobs(path: Path, line: str, row: dict[str, object]) -> list[float]:
    if "logprobs" in row:  # JSONL
        values = row["logprobs"]
        if not isinstance(values, list) or len(values) < 2:
            raise _fail(path, line, "logprobs", "a list of 2 or more log-probabilities", values)
        return [_float(path, line, f"logprobs[{j}]", v) for j, v in enumerate(values)]
    cols = sorted((int(m[1]), k) for k in row if (m := _LOGPROB.fullmatch(k)))
    if not cols:
        raise _fail(
            path, line, "logprobs", "logprob_0 .. logprob_{K-1} (or a logprobs list)", "none"
        )
    if [c for c, _ in cols] != list(range(len(cols))):
        raise InputError(str(path), "columns logprob_0 .. logprob_{K-1}", str([k for _, k in cols]))
    cells = [row[k] for _, k in cols]
    n = len(cells)
    while n and cells[n - 1] is None:
        n -= 1
    if n < 2 or any(c is None for c in cells[:n]):
        field = (
            cols[next((j for j in range(n) if cells[j] is None), max(n, 0))][1]
            if n
            else "logprob_0"
        )
        raise _fail(path, line, field, "2 or more options, the missing ones last", None)
    return [_float(path, line, k, row[k]) for _, k in cols[:n]]


def read_option_table(path: Path) -> LMOutputs:
    """The ``option-logprobs`` layout (see the module docstring)."""
    rows, golds, tasks = [], [], []
    for line, row in _records(path):
        lps = _logprobs(path, line, row)
        if "answer" not in row or row["answer"] is None:
            raise _fail(path, line, "answer", "the gold option's index", None)
        golds.append(_index(path, line, "answer", row["answer"], len(lps)))
        rows.append(lps)
        tasks.append(_task(path, line, row))
    logits, counts = pad_options(rows)
    notes = padding_notes(counts)
    return LMOutputs(
        ClassifierOutputs(
            labels=check_labels(np.array(golds), n_classes=logits.shape[1]),
            scores=check_scores(logits, "logits", name=f"log-probabilities of {path}"),
            kind="logits",
        ),
        np.array(tasks),
        counts,
        "option-logprobs",
        "options",
        tuple(notes),
    )


_TRUE = {"1", "1.0", "true", "yes"}
_FALSE = {"0", "0.0", "false", "no"}


def _correct(path: Path, line: str, value: object) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    text = str(value).strip().lower() if isinstance(value, str | float) else None
    if text in _TRUE:
        return 1
    if text in _FALSE:
        return 0
    raise _fail(path, line, "correct", "1 or 0 (true or false)", value)


def read_stated(path: Path) -> LMOutputs:
    """The ``stated-confidence`` layout (see the module docstring).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "stated.jsonl"
    ...     _ = path.write_text('{"confidence": 0.9, "correct": true}' + chr(10)
    ...                         + '{"confidence": 0.6, "correct": 0}' + chr(10))
    ...     lm = read_stated(path)
    >>> lm.outputs.probs.tolist(), lm.outputs.labels.tolist(), lm.answers
    ([[0.09999999999999998, 0.9], [0.4, 0.6]], [1, 0], 'stated')
    """
    conf, right, tasks = [], [], []
    for line, row in _records(path):
        if row.get("confidence") is None:
            raise _fail(path, line, "confidence", "a stated confidence in [0, 1]", None)
        c = _float(path, line, "confidence", row["confidence"])
        if not 0.0 <= c <= 1.0:
            expected = "a stated confidence in [0, 1] (write 90% as 0.9)"
            raise _fail(path, line, "confidence", expected, row["confidence"])
        if row.get("correct") is None:
            raise _fail(path, line, "correct", "1 or 0 (true or false)", None)
        conf.append(c)
        right.append(_correct(path, line, row["correct"]))
        tasks.append(_task(path, line, row))
    stated = np.array(conf, dtype=np.float64)
    probs = np.stack([1.0 - stated, stated], axis=1)
    return LMOutputs(
        ClassifierOutputs(
            labels=check_labels(np.array(right), n_classes=2),
            scores=check_scores(probs, "probs", name=f"stated confidences of {path}"),
            kind="probs",
        ),
        np.array(tasks),
        np.full(len(conf), 2, dtype=np.int64),
        "stated-confidence",
        "stated",
        ("Each answer's stated confidence is its probability of being right (binary path).",),
    )


__all__ = ["DEFAULT_TASK", "read_option_table", "read_stated"]
