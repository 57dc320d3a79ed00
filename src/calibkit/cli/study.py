"""``calibkit study [CONFIG]``: train models x seeds, calibrate, report (resumable).

``--out`` is a new or empty folder, or a study folder (holding only files a study wrote,
see :mod:`calibkit.study.store.folder`); the current folder and its parents, and a folder holding
the config file or another input, are refused. Every
input is checked before any file is written. A folder another study is writing is
refused, not waited for.

A unit that fails does not stop the others: they are written, then each failed unit is
named and the exit status is 2 if every failure was bad input, else 1 (running the study
again resumes it). SIGTERM is handled like Ctrl-C: the workers are stopped, the folder's
lock released, and the exit status is 143 (130 for Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from calibkit.cli.common import check_input, check_name, check_output, renamed
from calibkit.cli.options import Subparsers, add_out, int_list, number, opt
from calibkit.core import catalog
from calibkit.core.errors import InputError
from calibkit.core.names import DATASETS, EXECUTORS, either
from calibkit.core.validation import EPOCHS, SEED, Integer
from calibkit.core.words import plural


def add_arguments(sub: Subparsers) -> None:
    """The ``study`` subcommand and its options."""
    text = "train models x seeds from a TOML config, calibrate, report (resumable)"
    p = sub.add_parser("study", help=text, description=text)
    p.add_argument("config", metavar="CONFIG", nargs="?", help="TOML file (default: digits)")
    rule = "new, empty, or a study folder; one another study is writing is refused"
    add_out(p, "the runs and the report", rule=rule)
    part = p.add_argument_group("part of the study", "narrow or adapt the config's runs")
    opt(part, "--models", "A,B", "run only these model labels")
    opt(part, "--seeds", "0,1", "run only these seeds", type=int_list(SEED))
    opt(part, "--epochs", "N", "override every model's epochs", type=number(EPOCHS))
    opt(part, "--data-dir", "DIR", "folder of the dataset files (overrides the config)")
    text = "toy size (one epoch of two batches, small subsets, same code paths); marked smoke"
    part.add_argument("--smoke", action="store_true", help=text)
    p.add_argument("--quiet", action="store_true", help="no per-epoch progress")
    _add_executor_options(p)
    text = "write the report from the runs and fits finished so far; train and fit nothing"
    p.add_argument("--report-only", action="store_true", help=text)


def _add_executor_options(p: argparse.ArgumentParser) -> None:
    """Where the units of work run (see :mod:`calibkit.study.run.executors`)."""
    where = p.add_argument_group("where the work runs", "one process, worker processes, Ray")
    text = f"{either(EXECUTORS)} (default {EXECUTORS[0]}; ray: pip install 'calibkit[ray]')"
    opt(where, "--executor", "NAME", text, choices=EXECUTORS)
    text = "worker processes (--executor processes; default: the cores)"
    opt(where, "--workers", "N", text, type=number(Integer(1, 1024)))
    text = "a Ray cluster's head, HOST:PORT (--executor ray; default: a local Ray)"
    opt(where, "--address", "ADDR", text)
    where.add_argument("--verbose", action="store_true", help="show Ray's own logs")


#: The library's argument names -> the flags that set them (errors name what the user typed).
FLAGS = {"out": "--out", "executor": "--executor", "workers": "--workers", "address": "--address"}


def run(args: argparse.Namespace) -> int:
    """Run (or resume) the study and write its report; an error naming a library argument
    set by a flag (:data:`FLAGS`) names the flag instead."""
    try:
        return _run(args)
    except InputError as exc:
        if exc.argument not in FLAGS:
            raise
        raise renamed(exc, FLAGS[exc.argument]) from None


#: The study run without CONFIG (``calibkit.study.definition.config.DEFAULT_CONFIG``, a test
#: checks; spelled here so that a refusal comes before torch is imported).
DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "study" / "definition" / "digits.toml"


def check_first(args: argparse.Namespace) -> Path:
    """The config's path, checked before torch is imported with the names it holds (read as
    plain TOML): its models' and its dataset's, and the ``--models`` labels; and ``--out``'s
    place (an existing file, a missing parent). The config loader and the study folder's
    rules check the rest."""
    from calibkit.io.toml import read_toml

    if args.config is not None:
        check_input(args.config, "CONFIG")
    if getattr(args, "out", None) is not None:
        check_output(Path(args.out), "--out", folder=True)
    path = Path(args.config) if args.config else DEFAULT_CONFIG
    config = read_toml(path)  # a file that is not TOML is refused here, saying why
    found = config.get("models")
    models = [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []
    for i, model in enumerate(models):
        if isinstance(model.get("name"), str):
            check_name(model["name"], f"{path}: models[{i}].name", tuple(catalog.MODEL_ENTRIES))
    data = config.get("data")
    if isinstance(data, dict) and isinstance(data.get("dataset"), str):
        dataset = data["dataset"].partition("@")[0].partition(":")[0].strip()
        check_name(dataset, f"{path}: data.dataset", DATASETS)
    labels = [str(m.get("label") or m.get("name")) for m in models]
    for label in args.models.split(",") if args.models else ():
        check_name(label.strip(), "--models", labels)
    return path


def _run(args: argparse.Namespace) -> int:
    path = check_first(args)
    from calibkit.study import load_study_config, make_executor, run_study
    from calibkit.study.run.executors import StudyFailed
    from calibkit.study.store.folder import check_study_folder

    cfg = load_study_config(path)
    cfg = cfg.select(
        models=[m.strip() for m in args.models.split(",")] if args.models else None,
        seeds=args.seeds,
        epochs=args.epochs,
        data_dir=str(Path(args.data_dir).resolve()) if args.data_dir else None,
    )
    if args.smoke:  # said before it runs: a smoke run is not the study it was asked for
        overrides = cfg.smoke_overrides()
        if overrides:
            print("calibkit: --smoke overrides: " + "; ".join(overrides), file=sys.stderr)
            print(
                "calibkit: a smoke run checks the code paths; its numbers are not advice",
                file=sys.stderr,
            )
        cfg = cfg.smoke()
    out = check_study_folder(Path(args.out or f"study-{path.stem}"), "--out", inputs=[path])
    executor = make_executor(
        args.executor or "serial", workers=args.workers, address=args.address, verbose=args.verbose
    )
    try:  # Ctrl-C and SIGTERM unwind through here: calibkit.cli.main says so (130, 143)
        with _smoke_bounds(args.smoke) as bounds:
            runs = run_study(
                cfg, out, progress=not args.quiet, report_only=args.report_only, executor=executor
            )
    except StudyFailed as exc:
        print(f"calibkit: error: {exc}", file=sys.stderr)
        return exc.status
    print(_verdict(out))
    print(f"{plural(len(runs.records), 'run')}; report: {out / 'report.html'}")
    if bounds:
        print(
            f"smoke size: {plural(len(bounds), 'fit')} stopped at a bound of its range, as "
            "fits on models trained for two batches do (not at full size)"
        )
    return 0


@contextlib.contextmanager
def _smoke_bounds(smoke: bool) -> Iterator[list[str]]:
    """With ``--smoke``, the calibrators' BoundWarnings (a temperature at its bound: the toy
    models are near chance) kept out of the warnings and counted (issue #46, item 7: they
    read like the user's mistake); every other warning, and every warning at full size,
    shown as usual."""
    caught: list[str] = []
    if not smoke:
        yield caught
        return
    from calibkit.core.errors import BoundWarning

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", BoundWarning)
        try:
            yield caught
        finally:
            for w in seen:
                if issubclass(w.category, BoundWarning):
                    caught.append(str(w.message))
            others = [w for w in seen if not issubclass(w.category, BoundWarning)]
    for w in others:  # outside the recording: shown as the command shows warnings
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _verdict(out: Path) -> str:
    """The study's verdict as its report states it, for the terminal (first)."""
    from calibkit.io.jsonfile import read_json
    from calibkit.reporting.document import Verdict
    from calibkit.reporting.text import verdict_text
    from calibkit.study.store.folder import RESULTS_JSON

    said = read_json(out / RESULTS_JSON).get("verdict")
    return "" if not said else verdict_text(Verdict(said["headline"], said["detail"]))
