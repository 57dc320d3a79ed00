"""Write real lm-evaluation-harness ``samples_*.jsonl`` files, offline, for calibkit's tests
and the language-model experiment (``experiments/lm``).

The harness itself does the work: its command line (``lm-eval run``) reads a local task
YAML over a local JSON Lines dataset (``output_type: multiple_choice``, one task per subject,
grouped under one group), builds the requests, scores them with a model, computes ``acc``,
``acc_norm`` and ``acc_bytes``, and logs every question with ``--log_samples``. Only the
model is ours, registered in the harness's model registry before its command line runs:

``dummy``
    The harness's own dummy model (a uniform random log-likelihood in (-1, 0) per option).
``simulated``
    A model whose answers follow a declared calibration: each question of subject ``s``
    draws its gold option uniformly, then option scores ``z = skill_s * onehot(gold) +
    N(0, 1)``, so that the gold's probability given ``z`` is ``softmax(skill_s z)``
    exactly. The model reports ``softmax(sharpness_s skill_s z)`` as the log-likelihood of
    each continuation, ``sharpness_s = --sharpness`` times ``exp(N(0, --spread))`` per
    subject: calibrated at ``--sharpness 1 --spread 0`` (as a base model nearly is),
    over-confident at ``--sharpness 2.5`` (as an instruction-tuned model is), and by
    different amounts on different subjects with ``--spread`` (one temperature per task
    then has something to fix). The calibrated temperature of subject ``s`` is
    ``sharpness_s``.

Nothing is downloaded: ``HF_DATASETS_OFFLINE`` and ``HF_HUB_OFFLINE`` are set. Run it with a
Python that has lm-eval (never calibkit's environment; torch must stay the one installed)::

    python3.11 -m venv /tmp/lmeval && /tmp/lmeval/bin/pip install /opt/wheels/torch-*.whl
    /tmp/lmeval/bin/pip install lm-eval
    /tmp/lmeval/bin/python scripts/lm_harness_samples.py OUT --model dummy --subjects 3 \\
        --questions 8 --seed 0

``--ragged``: some questions get 3 or 5 options instead of 4 (as ARC's do). The samples land
in ``OUT/<model>/samples_<task>_<date>.jsonl`` with the harness's ``results_<date>.json``.
``tests/io/fixtures/lm/README.md`` names the commands that made the committed fixtures.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

#: Option texts, some with non-ASCII letters (acc_norm counts characters, acc_bytes bytes).
WORDS = [
    "apple", "café", "naïve answer", "river", "東京", "seventeen", "blue", "a long option text",
    "zero", "Ωmega", "north", "photosynthesis", "crème brûlée", "42", "yes", "no",
]  # fmt: skip


def write_tasks(
    folder: Path, n_subjects: int, n_questions: int, ragged: bool, seed: int
) -> list[str]:
    """The dataset (one JSONL per subject) and the task YAMLs; the subtask names."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for s in range(n_subjects):
        name = f"toyqa_subject{s:02d}"
        rows = []
        for q in range(n_questions):
            k = int(rng.choice([3, 4, 5], p=[0.15, 0.7, 0.15])) if ragged else 4
            choices = [str(w) for w in rng.choice(WORDS, size=k, replace=False)]
            rows.append({"question": f"Q{s}.{q}: which one?", "choices": choices, "answer": 0})
        data = folder / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
        yaml = [
            f"task: {name}",
            "dataset_path: json",
            "dataset_kwargs:",
            "  data_files:",
            f"    test: {data.resolve()}",
            "test_split: test",
            "output_type: multiple_choice",
            'doc_to_text: "{{question}}\\nAnswer:"',
            'doc_to_choice: "{{choices}}"',
            "doc_to_target: answer",
            "metric_list:",
            *(f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: true"
              for m in ("acc", "acc_norm", "acc_bytes")),
            "metadata:",
            "  version: 1.0",
        ]  # fmt: skip
        (folder / f"{name}.yaml").write_text("\n".join(yaml) + "\n", "utf-8")
        names.append(name)
    group = ["group: toyqa", "task:", *(f"  - {n}" for n in names)]
    group += ["aggregate_metric_list:", "  - metric: acc", "    weight_by_size: true"]
    group += ["metadata:", "  version: 1.0"]
    (folder / "toyqa.yaml").write_text("\n".join(group) + "\n", "utf-8")
    return names


def register_simulated(data: Path, sharpness: float, spread: float, seed: int) -> None:
    """Register the ``simulated`` model (see the module docstring) in the harness."""
    import numpy as np
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model

    # every question's prompt -> (subject, options, gold drawn from softmax(z), z)
    table: dict[str, tuple[list[str], np.ndarray]] = {}
    rng = np.random.default_rng(seed + 1)
    tilt = np.random.default_rng(seed + 2)  # apart: the golds' draws stay those of golds()
    for path in sorted(data.glob("toyqa_subject*.jsonl")):
        skill = float(rng.uniform(0.5, 3.0))
        sharp = sharpness * float(np.exp(tilt.normal(0.0, spread))) * skill
        for line in path.read_text("utf-8").splitlines():
            row = json.loads(line)
            k = len(row["choices"])
            gold = int(rng.integers(k))
            z = rng.normal(size=k) + skill * np.eye(k)[gold]
            table[f"{row['question']}\nAnswer:"] = (row["choices"], sharp * z)

    @register_model("simulated")
    class SimulatedLM(LM):  # type: ignore[misc]
        def __init__(self, **kwargs: object) -> None:  # batch_size, device, ...: unused
            super().__init__()

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            out = []
            for req in requests:
                context, continuation = req.args
                choices, z = table[context]
                logp = z - np.logaddexp.reduce(z)
                out.append((float(logp[choices.index(continuation.strip())]), False))
            return out

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        def generate_until(self, requests, disable_tqdm: bool = False):
            raise NotImplementedError

        @classmethod
        def create_from_arg_string(cls, arg_string, additional_config=None):
            return cls()

        @classmethod
        def create_from_arg_obj(cls, arg_dict, additional_config=None):
            return cls()


def golds(data: Path, seed: int) -> None:
    """Rewrite each question's ``answer`` to the gold the simulated model's truth drew, so
    that the dataset and the model agree (the same draws as :func:`register_simulated`)."""
    import numpy as np

    rng = np.random.default_rng(seed + 1)
    for path in sorted(data.glob("toyqa_subject*.jsonl")):
        rng.uniform(0.5, 3.0)
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        for row in rows:
            k = len(row["choices"])
            row["answer"] = int(rng.integers(k))
            rng.normal(size=k)
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--model", choices=("dummy", "simulated"), default="dummy")
    p.add_argument("--subjects", type=int, default=3)
    p.add_argument("--questions", type=int, default=8)
    p.add_argument("--sharpness", type=float, default=1.0)
    p.add_argument("--spread", type=float, default=0.0)
    p.add_argument("--ragged", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="0")
    tasks = args.out / "tasks"
    write_tasks(tasks, args.subjects, args.questions, args.ragged, args.seed)
    golds(tasks, args.seed)
    if args.model == "simulated":
        register_simulated(tasks, args.sharpness, args.spread, args.seed)
    import random

    random.seed(args.seed)  # the dummy model's draws
    digest = hashlib.sha256(str(vars(args)).encode()).hexdigest()[:8]
    sys.argv = [
        "lm-eval", "run", "--model", args.model, "--tasks", "toyqa",
        "--include_path", str(tasks), "--output_path", str(args.out / "results"),
        "--log_samples", "--seed", str(args.seed), "--metadata", json.dumps({"run": digest}),
    ]  # fmt: skip
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()


if __name__ == "__main__":
    main()
