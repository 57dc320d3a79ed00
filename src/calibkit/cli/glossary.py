"""The command line's vocabulary: every option, the one concept it names, and the commands
that take it. The names the parser checks before importing the library (datasets,
corruptions, executors, calibrators, models) are read from :mod:`calibkit.core.names` and
:mod:`calibkit.core.catalog`, where they are declared.

One concept has one spelling, and one spelling one meaning, across every command
(``tests/cli/test_glossary.py`` checks every parser against :data:`GLOSSARY`, and
``docs/cli.md`` is :func:`glossary_markdown`).

>>> GLOSSARY["--methods"].concept
'calibrators compared'
"""

from __future__ import annotations

from dataclasses import dataclass

from calibkit.core.catalog import PRIOR_ESTIMATORS
from calibkit.core.names import EXECUTORS, either


@dataclass(frozen=True)
class Term:
    """One option: the concept it names, what it means, and the commands that take it."""

    concept: str
    meaning: str
    commands: tuple[str, ...]


_REPORTING = ("evaluate", "compare", "conformal", "labelshift", "shift", "demo")
_FILES = ("evaluate", "compare", "conformal", "labelshift", "fit", "apply")

#: What a command writes without ``--out`` (issue #46, item 2): the one rule, read by every
#: command's ``--out`` (:func:`calibkit.cli.options.add_out`), by the test that runs every
#: command without it (``tests/cli/test_outputs.py``) and by ``docs/cli.md``.
OUTPUT_RULE = (
    "Without `--out` (`-o`) a command prints its result and writes nothing. The one "
    "exception is `study`, whose result is its runs on disk (trained models, resumable): "
    "without `--out` it writes them to `study-<config name>`, as its `--help` says."
)

#: The commands that write without ``--out``, and where (:data:`OUTPUT_RULE`'s exception).
DEFAULT_OUT: dict[str, str] = {"study": "study-<config name>"}


#: Every option of every command (the global ``--threads`` too), by its one spelling.
GLOSSARY: dict[str, Term] = {
    # ----- input files
    "--labels": Term(
        "labels beside FILE",
        "labels (.npy) beside a .npy FILE",
        tuple(c for c in _FILES if c != "labelshift"),  # its files: --cal-labels, --target-labels
    ),
    "--cal": Term(
        "calibration part as a file",
        "the labelled predictions calibrators are fitted on, as their own file",
        ("compare", "labelshift"),
    ),
    "--cal-labels": Term(
        "labels beside --cal", "labels (.npy) beside a .npy --cal file", ("compare", "labelshift")
    ),
    "--test": Term(
        "test part as a file",
        "the labelled predictions methods are judged on, as their own file (with --cal)",
        ("compare",),
    ),
    "--test-labels": Term(
        "labels beside --test", "labels (.npy) beside a .npy --test file", ("compare",)
    ),
    "--target": Term(
        "target predictions",
        "predictions of the distribution adapted to (label shift); labels optional",
        ("labelshift", "fit"),
    ),
    "--target-labels": Term(
        "labels beside --target", "labels (.npy) beside a .npy --target file", ("labelshift",)
    ),
    "--kind": Term("score kind", "logits or probs: what the file's scores are", _FILES),
    "--target-kind": Term(
        "score kind of --target",
        "logits or probs: what --target's scores are (default: as --kind says)",
        ("labelshift",),
    ),
    "--scores-key": Term("score array name", "name of the score array (with --kind)", _FILES),
    "--labels-key": Term("label array name", "name of the label array", _FILES),
    "--layout": Term(
        "a language model's file",
        "lm-eval samples (a file or folder), chat-logprobs, option-logprobs, stated-confidence",
        _FILES,
    ),
    "--length-norm": Term(
        "option length normalisation", "lm-eval: acc_norm (characters) or acc_bytes", _FILES
    ),
    "--letters": Term("option letters", "chat-logprobs: the options' letters (ABCD)", _FILES),
    "--groups": Term(
        "group of each sample",
        "array or column of one group per sample",
        ("evaluate", "compare", "fit", "apply"),
    ),
    # ----- what is fitted
    "--methods": Term(
        "calibrators compared",
        "comma-separated registered calibrators, each fitted and judged",
        ("compare", "shift", "demo"),
    ),
    "--method": Term(
        "the one method fitted",
        "the registered method fitted (fit), or the calibrator under the sets or the "
        "prior adapter (conformal, labelshift)",
        ("conformal", "labelshift", "fit"),
    ),
    "--param": Term("a method's parameter", "KEY=VALUE, repeatable", ("fit",)),
    "--estimator": Term(
        "prior estimator",
        f"how target priors are estimated: {either(PRIOR_ESTIMATORS)}",
        ("labelshift",),
    ),
    "--estimator-param": Term(
        "an estimator's parameter",
        "KEY=VALUE of the estimator (tol=1e-6 for em, soft=true for bbse), repeatable",
        ("labelshift",),
    ),
    "--priors": Term("known target priors", "P0,P1,... instead of estimating", ("labelshift",)),
    "--scores": Term(
        "conformity scores",
        "comma-separated conformity scores (lac, aps, ...)",
        ("conformal", "shift"),
    ),
    "--score-param": Term(
        "a score's parameter",
        "KEY=VALUE for the scores that declare KEY (`penalty`, `k_reg` of raps), repeatable",
        ("conformal",),
    ),
    "--alpha": Term(
        "miscoverage", "target miscoverage of the sets, in (0, 1)", ("conformal", "shift")
    ),
    "--mondrian": Term("per-class quantiles", "one conformal quantile per class", ("conformal",)),
    "--randomized": Term("randomised sets", "uniform tie-breaking of the scores", ("conformal",)),
    # ----- metrics
    "--extra": Term(
        "metric outside the suite", "a registered extra metric, repeatable", ("evaluate",)
    ),
    "--coverage": Term("coverage of risk@coverage", "coverage in (0, 1]", ("evaluate",)),
    "--risk": Term("risk of coverage@risk", "risk in [0, 1]", ("evaluate",)),
    "--interval": Term("per-bin interval", "the per-bin interval of the diagram", ("evaluate",)),
    "--corp": Term("CORP curve", "add the CORP reliability curve", ("evaluate",)),
    "--n-bins": Term(
        "bins",
        "equal-width bins of the binned metrics",
        ("evaluate", "compare", "labelshift", "shift", "demo"),
    ),
    "--n-boot": Term(
        "bootstrap resamples",
        "resamples of the percentile-bootstrap intervals (in evaluate and compare only "
        "the risk / coverage points'; the others need none); 0: no interval at all",
        ("evaluate", "compare", "conformal", "labelshift", "demo"),
    ),
    "--level": Term(
        "interval level",
        "confidence level of every interval (the true binned errors' too)",
        ("evaluate", "compare", "conformal", "labelshift", "demo"),
    ),
    "--seed": Term("random seed", "seed of every random draw (splits, bootstrap)", (*_REPORTING,)),
    "--mode": Term(
        "binary mode",
        "top_label or positive_class, for two classes",
        ("evaluate", "compare", "demo"),
    ),
    "--n-floor-draws": Term("noise-floor draws", "draws of the ECE noise floor", ("shift",)),
    # ----- parts and splits
    "--cal-size": Term(
        "calibration-part size",
        "calibration part of the data: a fraction or a count",
        ("compare", "conformal", "shift"),
    ),
    "--test-size": Term("test-part size", "test images kept of the rest", ("shift",)),
    "--split": Term("dataset split", "a split of --data (train, test, ...)", ("shift",)),
    # ----- outputs
    "--out": Term(
        "output",
        "the report folder (or the file fit and apply write); without it: printed, not written",
        (*_REPORTING, "study", "fit", "apply"),
    ),
    "--force": Term(
        "replace an output file",
        "replace an existing output file (never an input)",
        ("evaluate", "fit", "apply"),
    ),
    "--format": Term("terminal format", "table or json on stdout", (*_REPORTING, "methods")),
    "--plot": Term(
        "reliability diagram file", "write the reliability diagram there", ("evaluate",)
    ),
    "--smooth-plot": Term(
        "smoothed diagram file", "the kernel-smoothed diagram there", ("evaluate",)
    ),
    "--rc-plot": Term("risk-coverage file", "the risk-coverage curves there", ("evaluate",)),
    "--quiet": Term("no progress", "no per-epoch progress lines", ("study",)),
    # ----- models, data, devices
    "--model": Term("registered model", "the registered model of --weights", ("shift",)),
    "--weights": Term("checkpoint", "the model's state dict", ("shift",)),
    "--data": Term("dataset", "a registered image dataset", ("shift",)),
    "--data-dir": Term("dataset folder", "the folder of the dataset files", ("shift", "study")),
    "--corruptions": Term("corruptions", "corruption names, or all", ("shift",)),
    "--severities": Term("severities", "corruption severities: 1-5, 3 or 1,3,5", ("shift",)),
    "--mean": Term("input mean", "input normalisation mean per channel", ("shift",)),
    "--std": Term("input std", "input normalisation std per channel", ("shift",)),
    "--device": Term("device", "cpu, cuda, cuda:N or auto", ("shift",)),
    "--batch-size": Term("batch size", "images per forward pass", ("shift",)),
    "--epochs": Term("epochs", "training epochs", ("demo", "study")),
    # ----- studies
    "--models": Term("models of a study", "the config's model labels to run", ("study",)),
    "--seeds": Term("seeds of a study", "the seeds to run", ("study",)),
    "--smoke": Term(
        "toy size",
        "a toy size, same code paths, in about a minute; marked smoke",
        ("shift", "study"),
    ),
    "--report-only": Term("report only", "write the report from finished runs", ("study",)),
    "--executor": Term("executor", either(EXECUTORS), ("study",)),
    "--workers": Term("worker processes", "worker processes of --executor processes", ("study",)),
    "--address": Term("Ray address", "a Ray cluster's head", ("study",)),
    "--verbose": Term("Ray's logs", "show Ray's own logs", ("study",)),
    "--threads": Term("threads", "threads of torch and BLAS (before the command)", ()),
}


def glossary_markdown() -> str:
    """The glossary as the Markdown table of ``docs/cli.md``."""
    lines = ["| Option | Concept | Meaning | Commands |", "|:---|:---|:---|:---|"]
    for option, t in GLOSSARY.items():
        where = ", ".join(t.commands) or "(global, before the command)"
        lines.append(f"| `{option}` | {t.concept} | {t.meaning} | {where} |")
    return "\n".join(lines) + "\n"
