"""Chat API responses with ``top_logprobs``, where the answer is one option letter.

One JSON object per line (``.jsonl``)::

    {"task": "mmlu_anatomy", "answer": "C", "response": <chat completion>}

``response`` is the chat completion as the API returns it (OpenAI's
``choices[0].logprobs.content``, asked with ``logprobs=true, top_logprobs=N``), or a Batch
API output line's ``response`` (``{"status_code": 200, "body": <chat completion>}``).
``answer`` is the gold option's letter; ``task`` is optional (one task, ``"default"``,
without it). The option letters are ``letters`` (default ``"ABCD"``).

The answer is read at the first generated token that is not blank: its ``top_logprobs``
give each option's log-probability, a letter written several ways (``"B"``, ``" B"``)
counting once with their probabilities summed. An option missing from the top list gets
the remaining mass: at most ``1 - sum(listed probabilities)``, shared equally among the
missing options, and never more than the least listed token's probability (a token below
the top list is less likely than every listed one). The questions where that happened are
counted in the notes (the report says how many). Softmax over the options then gives the
model's probability of each option, given that it answers with an option.

>>> import json, tempfile
>>> top = [{"token": "B", "logprob": -0.2}, {"token": " B", "logprob": -3.5},
...        {"token": "A", "logprob": -2.5}, {"token": "The", "logprob": -4.0}]
>>> response = {"choices": [{"logprobs": {"content": [
...     {"token": "B", "logprob": -0.2, "top_logprobs": top}]}}]}
>>> with tempfile.TemporaryDirectory() as folder:
...     path = Path(folder) / "answers.jsonl"
...     _ = path.write_text(json.dumps({"answer": "B", "response": response}) + chr(10))
...     lm = read_chat(path, letters="ABC")
>>> probs = lm.outputs.probs[0]
>>> [round(p, 4) for p in probs.tolist()], lm.notes[0]  # C got the remaining mass
([0.0865, 0.8942, 0.0193], '1 question of 1 lacks an option in its top_logprobs: each missing option gets the remaining probability mass.')
"""  # noqa: E501

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs, check_labels, check_scores
from calibkit.io.json_lines import Line, read_json_lines, shown
from calibkit.io.lm_outputs import LMOutputs

#: The default option letters.
LETTERS = "ABCD"
#: The task of a line without one.
DEFAULT_TASK = "default"


def _content(line: Line) -> list[object]:
    response = line.field("response", dict, "a chat completion (an object)")
    if "body" in response and "choices" not in response:  # a Batch API output line
        status = response.get("status_code", 200)
        if status != 200:
            raise line.fail("response.status_code", "200 (an answered request)", shown(status))
        keys: tuple[str, ...] = ("response", "body", "choices")
    else:
        keys = ("response", "choices")
    choices = line.field(keys, list, "the completion's choices")
    if not choices:
        raise line.fail(".".join(keys), "at least one choice", "none")
    first = choices[0]
    if not isinstance(first, dict):
        raise line.fail(".".join(keys) + "[0]", "a choice (an object)", shown(first))
    logprobs = first.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        field = ".".join(keys) + "[0].logprobs.content"
        raise line.fail(field, "the tokens' logprobs (ask with logprobs=true)", shown(content))
    return content


def _option_logprobs(line: Line, letters: str) -> tuple[list[float], bool]:
    """The options' log-probabilities at the answer token; whether one was filled in."""
    content = _content(line)
    at = next(
        (
            i
            for i, t in enumerate(content)
            if isinstance(t, dict) and str(t.get("token", "")).strip()
        ),
        None,
    )
    if at is None:
        raise line.fail("response", "a generated token that is not blank", "only blanks")
    token = content[at]
    top = token.get("top_logprobs") if isinstance(token, dict) else None
    field = f"response.choices[0].logprobs.content[{at}].top_logprobs"
    if not isinstance(top, list) or not top:
        raise line.fail(field, "the top tokens (ask with top_logprobs=N)", shown(top))
    mass = dict.fromkeys(letters, 0.0)
    listed, least = 0.0, 1.0
    for j, item in enumerate(top):
        if not isinstance(item, dict) or not isinstance(item.get("token"), str):
            raise line.fail(f"{field}[{j}]", "a {token, logprob} object", shown(item))
        lp = item.get("logprob")
        if isinstance(lp, bool) or not isinstance(lp, int | float) or not lp <= 0:
            raise line.fail(f"{field}[{j}].logprob", "a log-probability <= 0", shown(lp))
        p = math.exp(lp)
        listed += p
        least = min(least, p)
        token = item["token"].strip()
        if token in mass:
            mass[token] += p
    missing = [k for k, v in mass.items() if v == 0.0]
    if missing:
        share = min(max(1.0 - listed, 0.0) / len(missing), least)
        for k in missing:
            mass[k] = share
    tiny = np.finfo(np.float64).tiny
    return [math.log(max(mass[k], tiny)) for k in letters], bool(missing)


def read_chat(path: Path, letters: str = LETTERS) -> LMOutputs:
    """The questions of a JSONL of chat responses (see the module docstring)."""
    if not isinstance(letters, str) or len(letters) < 2 or len(set(letters)) != len(letters):
        raise InputError("letters", "at least 2 distinct option letters (ABCD)", shown(letters))
    rows, golds, tasks = [], [], []
    filled = 0
    for line in read_json_lines(path):
        answer = line.field("answer", str, f"the gold option's letter (one of {letters})")
        if answer.strip() not in letters:
            raise line.fail("answer", f"one of the letters {letters}", shown(answer))
        task = line.data.get("task", DEFAULT_TASK)
        if not isinstance(task, str) or not task:
            raise line.fail("task", "a task name", shown(task))
        lps, was_filled = _option_logprobs(line, letters)
        filled += was_filled
        rows.append(lps)
        golds.append(letters.index(answer.strip()))
        tasks.append(task)
    logits = check_scores(np.array(rows), "logits", name=f"option log-probabilities of {path}")
    labels = check_labels(np.array(golds), n_classes=len(letters))
    n = len(rows)
    notes = [
        f"{filled:,} question{'s' if filled != 1 else ''} of {n:,} "
        f"lack{'s' if filled == 1 else ''} an option in {'their' if filled != 1 else 'its'}"
        " top_logprobs: each missing option gets the remaining probability mass."
    ]
    return LMOutputs(
        ClassifierOutputs(labels=labels, scores=logits, kind="logits"),
        np.array(tasks),
        np.full(n, len(letters), dtype=np.int64),
        "chat-logprobs",
        "options",
        tuple(notes),
    )


__all__ = ["DEFAULT_TASK", "LETTERS", "read_chat"]
