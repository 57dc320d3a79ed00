"""lm-evaluation-harness ``samples_*.jsonl`` files of ``multiple_choice`` tasks.

``lm-eval run ... --log_samples`` writes one ``samples_<task>_<date>.jsonl`` per task (and
per subtask of a group such as ``mmlu``), beside its ``results_<date>.json``. Each line is
one question as the harness logs it (``lm_eval/evaluator.py``, then
``EvaluationTracker.save_results_samples``):

``doc_id``, ``doc``
    The question's index and the dataset row.
``arguments``
    ``{"gen_args_<i>": {"arg_0": context, "arg_1": continuation}}``, one request per
    option, in option order; the continuation is the task's ``target_delimiter`` followed
    by the option's text (``construct_requests``).
``filtered_resps``
    One ``[log-likelihood, is_greedy]`` per option, written as strings (``sanitize_list``:
    ``"-1.2345"``, exact for a Python float); ``resps`` holds the same before the filter.
``target``
    ``str`` of ``doc_to_target``: the gold option's index (``"2"``) or its text.
``filter``, ``metrics``, ``acc``, ``acc_norm``, ``acc_bytes``
    The filter's name and the per-question metrics the task computed.

:func:`read_harness` reads one such file, or a folder of them (the folder ``lm-eval``
wrote: every ``samples_*.jsonl`` directly inside, one task per file; the task is the file's
name without ``samples_`` and the date, and two files of one task are refused). The
option scores are the log-likelihoods as logged (``length_norm=None``), or normalised as the
harness's metrics do (``process_results``): ``"acc_norm"`` divides each by the option's
length in characters, ``"acc_bytes"`` by its length in UTF-8 bytes, the option being the
continuation without the task's ``target_delimiter`` (read from ``results_*.json``'s task
config beside the samples when there, else the harness's default ``" "``). Where a line
logs the harness's own ``acc`` (or ``acc_norm``, ``acc_bytes``), the argmax of the scores
read must agree with it; a disagreement (a wrong delimiter, a mis-logged response) is
refused, naming the line, so the scores calibkit calibrates are the ones the harness scored.

``results_*.json`` beside the samples also gives each task's group (``group_subtasks``:
``mmlu_anatomy`` is in ``mmlu_stem``, itself in ``mmlu``): the per-question groups
``group`` (the nearest group holding the task) besides ``task``.

A task logged with ``acc_mutual_info`` scores each option twice (conditional, then
unconditional); the first half is read. Several gold options per question
(``multiple_target``), several filters in one file, a missing or non-numeric field: an
InputError naming the file, line and field; nothing is returned from a file with one bad
line.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from calibkit.core.errors import InputError
from calibkit.core.names import LM_LENGTH_NORMS
from calibkit.core.outputs import ClassifierOutputs, check_labels, check_scores
from calibkit.io.json_lines import Line, read_json_lines, shown
from calibkit.io.lm_outputs import LMOutputs, pad_options, padding_notes

#: A samples file's name: ``samples_<task>_<date>.jsonl`` (the date as ``lm-eval`` writes it,
#: ``datetime.now().isoformat()`` with ``-`` for ``:``).
SAMPLES_NAME = re.compile(
    r"samples_(?P<task>.+?)(?:_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?))?\.jsonl"
)
#: The harness's normalisations of the option log-likelihoods, with what each divides by
#: (declared in :data:`calibkit.core.names.LM_LENGTH_NORMS`).
LENGTH_NORMS = LM_LENGTH_NORMS
#: The harness's default ``target_delimiter``.
DEFAULT_DELIMITER = " "


def task_of(path: Path) -> str:
    """The task a samples file holds, from its name.

    >>> task_of(Path("samples_mmlu_anatomy_2024-05-01T12-00-00.123456.jsonl"))
    'mmlu_anatomy'
    >>> task_of(Path("arc.jsonl"))
    'arc'
    """
    m = SAMPLES_NAME.fullmatch(path.name)
    return m["task"] if m else path.stem


def samples_files(path: Path) -> list[Path]:
    """The samples files of ``path``: itself, or every ``samples_*.jsonl`` directly in the
    folder ``path`` (sorted by name); two of one task are refused."""
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.glob("samples_*.jsonl") if p.is_file())
    if not files:
        raise InputError(str(path), "a folder holding lm-eval samples_*.jsonl files", "none")
    seen: dict[str, Path] = {}
    for f in files:
        task = task_of(f)
        if task in seen:
            got = f"{seen[task].name} and {f.name} (two runs? keep one, or name a file)"
            raise InputError(str(path), f"one samples file per task ({task!r})", got)
        seen[task] = f
    return files


def _harness_config(folder: Path) -> tuple[dict[str, dict[str, object]], dict[str, str], bool]:
    """From the ``results_*.json`` files of ``folder``: each task's config, each task's
    nearest group, and whether a chat template was applied."""
    configs: dict[str, dict[str, object]] = {}
    parents: dict[str, str] = {}
    chat = False
    for p in sorted(folder.glob("results_*.json")):
        try:
            doc = json.loads(p.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(str(p), "the harness's results JSON", type(exc).__name__) from None
        if not isinstance(doc, dict):
            raise InputError(str(p), "the harness's results JSON (an object)", type(doc).__name__)
        for task, config in (doc.get("configs") or {}).items():
            if isinstance(config, dict):
                configs[str(task)] = config
        for group, subtasks in (doc.get("group_subtasks") or {}).items():
            for sub in subtasks if isinstance(subtasks, list) else []:
                parents.setdefault(str(sub), str(group))
        chat = chat or bool(doc.get("chat_template"))
    return configs, parents, chat


def _delimiter(task: str, configs: dict[str, dict[str, object]], chat: bool) -> str | None:
    """The ``target_delimiter`` the harness put before each option of ``task`` (None: no
    config beside the samples)."""
    config = configs.get(task)
    if config is None:
        return None
    delimiter = str(config.get("target_delimiter", DEFAULT_DELIMITER))
    gen_prefix = config.get("gen_prefix")
    if chat and not (gen_prefix and not str(gen_prefix)[-1:].isspace()):
        return ""  # construct_requests: no delimiter after a chat template without a prefix
    return delimiter


def _number(line: Line, field: str, value: object) -> float:
    """A logged number (the harness writes them as strings)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise line.fail(field, "a log-likelihood (a number, or a number as text)", shown(value))
    try:
        x = float(value)
    except ValueError:
        raise line.fail(field, "a log-likelihood (a number)", shown(value)) from None
    if not math.isfinite(x):
        raise line.fail(field, "a finite log-likelihood", shown(value))
    return x


def _continuations(line: Line, n: int) -> list[str]:
    args = line.field("arguments", (dict, list), "the requests (an object gen_args_0 ...)")
    items = list(args.values()) if isinstance(args, dict) else list(args)
    if len(items) != n:
        raise line.fail("arguments", f"one request per response ({n})", f"{len(items)}")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, dict) and isinstance(item.get("arg_1"), str):
            out.append(item["arg_1"])
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[1], str):
            out.append(item[1])
        else:
            raise line.fail(f"arguments.gen_args_{i}", "a (context, continuation)", shown(item))
    return out


def _gold(line: Line, options: list[str]) -> int:
    target = line.field("target", (str, int), "the gold option (index or text)")
    text = str(target).strip()
    if re.fullmatch(r"\d+", text):
        gold = int(text)
        if gold >= len(options):
            raise line.fail("target", f"an option index below {len(options)}", shown(target))
        return gold
    if text.startswith("["):
        raise line.fail("target", "one gold option per question", f"several, {shown(target)}")
    if text in options:
        return options.index(text)
    raise line.fail("target", "an option's index or text", shown(target))


def _read_line(
    line: Line, delimiter: str, length_norm: str | None
) -> tuple[list[float], int, list[float]]:
    """One question: its option log-likelihoods, gold index and scores (normalised)."""
    resps = line.field("filtered_resps", list, "one [log-likelihood, is_greedy] per option")
    metrics = line.data.get("metrics")
    if isinstance(metrics, list) and "acc_mutual_info" in metrics:
        resps = resps[: len(resps) // 2]
    if not resps:
        raise line.fail("filtered_resps", "one [log-likelihood, is_greedy] per option", "none")
    lls = []
    for i, r in enumerate(resps):
        value = r[0] if isinstance(r, list) and r else r
        lls.append(_number(line, f"filtered_resps[{i}]", value))
    conts = _continuations(line, len(line.data["filtered_resps"]))[: len(lls)]
    options = [c[len(delimiter) :] if c.startswith(delimiter) else c for c in conts]
    gold = _gold(line, options)
    scores = lls
    if length_norm is not None:
        lengths = [
            float(len(o) if length_norm == "acc_norm" else len(o.encode("utf-8"))) for o in options
        ]
        if min(lengths) == 0:
            raise line.fail("arguments", f"options of positive length ({length_norm})", "empty")
        scores = (np.array(lls) / np.array(lengths)).tolist()
    _agrees(line, lls, gold, "acc")
    if length_norm is not None:
        _agrees(line, scores, gold, length_norm)
    return lls, gold, scores


def _agrees(line: Line, scores: list[float], gold: int, metric: str) -> None:
    """Refuse scores whose argmax disagrees with the harness's logged ``metric``."""
    logged = line.data.get(metric)
    if isinstance(logged, bool) or not isinstance(logged, int | float):
        return
    mine = 1.0 if int(np.argmax(scores)) == gold else 0.0
    if mine != float(logged):
        why = "the target delimiter differs from the task's? (" + repr(metric) + ")"
        raise line.fail(metric, f"{mine} from the scores read ({why})", shown(logged))


def read_harness(path: Path, length_norm: str | None = None) -> LMOutputs:
    """The questions of a samples file, or of a folder of them (see the module docstring).

    Examples
    --------
    >>> import json, tempfile
    >>> row = {"doc_id": 0, "target": "1", "filter": "none", "acc": 1.0,
    ...        "arguments": {f"gen_args_{i}": {"arg_0": "Q", "arg_1": " " + o}
    ...                      for i, o in enumerate(["yes", "no"])},
    ...        "filtered_resps": [["-2.5", "False"], ["-0.5", "True"]]}
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "samples_boolq_2024-01-01T00-00-00.000001.jsonl"
    ...     _ = path.write_text(json.dumps(row) + chr(10))
    ...     lm = read_harness(path, length_norm="acc_norm")
    >>> lm.tasks.tolist(), lm.outputs.labels.tolist(), lm.outputs.scores.tolist()
    (['boolq'], [1], [[-0.8333333333333334, -0.25]])
    """
    if length_norm is not None and length_norm not in LENGTH_NORMS:
        raise InputError(
            "length_norm", "None, " + ", ".join(map(repr, LENGTH_NORMS)), repr(length_norm)
        )
    files = samples_files(path)
    folder = path if path.is_dir() else path.parent
    configs, parents, chat = _harness_config(folder)
    rows: list[list[float]] = []
    golds: list[int] = []
    tasks: list[str] = []
    defaulted: list[str] = []
    for f in files:
        task = task_of(f)
        delimiter = _delimiter(task, configs, chat)
        if delimiter is None:
            defaulted.append(task)
            delimiter = DEFAULT_DELIMITER
        filters: dict[str, int] = {}
        ids: dict[object, int] = {}
        for line in read_json_lines(f):
            name = line.data.get("filter", "none")
            filters.setdefault(str(name), line.number)
            if len(filters) > 1:
                got = ", ".join(map(repr, filters))
                raise line.fail("filter", "one filter per samples file", got)
            doc_id = line.data.get("doc_id")
            if doc_id is not None and not isinstance(doc_id, dict | list):
                if doc_id in ids:
                    raise line.fail(
                        "doc_id", "each question once", f"{doc_id!r} again (line {ids[doc_id]})"
                    )
                ids[doc_id] = line.number
            _, gold, scores = _read_line(line, delimiter, length_norm)
            rows.append(scores)
            golds.append(gold)
            tasks.append(task)
    logits, counts = pad_options(rows)
    labels = check_labels(np.array(golds, dtype=np.int64), n_classes=logits.shape[1])
    checked = check_scores(logits, "logits", name=f"log-likelihoods of {path}")
    notes = []
    if length_norm is not None:
        notes.append(
            f"Option scores are the log-likelihoods divided by {LENGTH_NORMS[length_norm]}, as"
            f" the harness's {length_norm} normalises them."
        )
    else:
        notes.append("Option scores are the harness's log-likelihoods, unnormalised (its acc).")
    if length_norm is not None and defaulted:
        notes.append(
            f"No results_*.json beside the samples for {', '.join(defaulted[:3])}"
            f"{' ...' if len(defaulted) > 3 else ''}: each option is its continuation without"
            " the harness's default delimiter ' '."
        )
    notes += padding_notes(counts)
    groups = {}
    if parents:
        groups["group"] = np.array([parents.get(t, t) for t in tasks])
    return LMOutputs(
        ClassifierOutputs(labels=labels, scores=checked, kind="logits"),
        np.array(tasks),
        counts,
        "lm-eval",
        "options",
        tuple(notes),
        groups,
    )


__all__ = ["DEFAULT_DELIMITER", "LENGTH_NORMS", "read_harness", "samples_files", "task_of"]
