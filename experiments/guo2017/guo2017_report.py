"""Write the Guo et al. (2017) factor report of finished studies into ``results/<name>/`` here.

For each study folder (made by ``calibkit study experiments/guo2017/configs/guo2017_*.toml
--out DIR``) and its config: the config (as config.toml), the folder's report.md and
figures/ are copied, and
``factors.md`` is written beside them with the one-factor-at-a-time tables (Welch tests
against the base, rank correlations), the NLL-overfitting table, the per-epoch tables and
their figures (experiments.guo2017.factor_figures).

    python experiments/guo2017/guo2017_report.py \\
        experiments/guo2017/configs/guo2017_birdcat.toml:/work/runs/guo2017_birdcat:birdcat \\
        experiments/guo2017/configs/guo2017_cifar10.toml:/work/runs/guo2017_cifar10:cifar10 \\
        [--out experiments/guo2017/results]

Models of the config without a finished run are left out of the tables and figures.

``--out`` (an existing folder) holds one folder per study, ``NAME``, each written whole
(:func:`calibkit.io.atomic.atomic_directory`): a new or empty folder, or one this script
wrote and nobody changed since (its manifest says so). A folder holding anything else (the
user's files; the committed ``results/<name>/``, written before manifests) is refused before
any work, and so is a missing input, in one line (exit status 2): nothing is written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_directory, check_replaceable_folder
from calibkit.reporting.document import Document, Figure, Paragraph, table_section
from calibkit.reporting.figure_style import figure_png_bytes
from calibkit.reporting.render import to_markdown
from calibkit.study import load_study_config
from experiments._driver import driver_parser, input_file, input_folder, run_driver
from experiments.guo2017.factor_figures import (
    epoch_table,
    factor_figure,
    factor_levels,
    factor_table,
    nll_accuracy_epochs_figure,
    overfitting_table,
    trend_table,
)

#: Where the write-up (README.md) finds the reports.
RESULTS = Path(__file__).resolve().parent / "results"
#: The lists of a study's results.json read here.
RUN_KEYS = ("rows", "runs")


def study_results(study: Path) -> dict[str, Any]:
    """The ``results.json`` of the study folder ``study`` (an InputError naming STUDY_DIR if
    it is not one of ``calibkit study``: a missing file, no list of rows and of runs)."""
    input_folder(study, "STUDY_DIR", ["report.md", "results.json"])
    try:
        found = json.loads((study / "results.json").read_text(encoding="utf-8"))
    except (ValueError, RecursionError):
        found = None
    if not (isinstance(found, dict) and all(isinstance(found.get(k), list) for k in RUN_KEYS)):
        got = f"{study} (its results.json has no {' and no '.join(RUN_KEYS)})"
        raise InputError("STUDY_DIR", "a folder of calibkit study", got)
    return found


def histories(results: dict[str, Any]) -> dict[str, list[list[dict[str, float]]]]:
    """``{model: [history of each seed]}`` in the study's order."""
    out: dict[str, list[list[dict[str, float]]]] = {}
    for run in sorted(results["runs"], key=lambda r: r["seed"]):
        out.setdefault(run["model"], []).append(run["history"])
    return out


def shown_models(levels: dict[str, list[tuple[float, str]]], base: str) -> list[str]:
    """The base and, per factor, the level farthest from the base's value."""
    shown = [base]
    for pairs in levels.values():
        base_value = next(v for v, lb in pairs if lb == base)
        far = max(pairs, key=lambda p: abs(p[0] - base_value))[1]
        if far not in shown:
            shown.append(far)
    return shown


def document(config: Path, study: Path) -> Document:
    """The factor document of one study folder and its config."""
    cfg = load_study_config(config)
    results = study_results(study)
    rows, hist = results["rows"], histories(results)
    base = cfg.models[0].label
    levels = {
        factor: [(v, lb) for v, lb in pairs if lb in hist]
        for factor, pairs in factor_levels(cfg).items()
    }
    levels = {factor: pairs for factor, pairs in levels.items() if len(pairs) > 1}
    intro = f"{cfg.name}. Base model: {base}; factors: {', '.join(levels)}."
    blocks: list[Any] = [Paragraph(intro)]
    blocks += [table_section(factor_table(rows, levels, base, c)) for c in ("none", "temperature")]
    blocks += [table_section(trend_table(rows, levels, "none"))]
    fig = factor_figure(rows, levels, "none")
    caption = "Accuracy, ECE and NLL against each factor"
    blocks += [Figure("factors.png", caption, figure_png_bytes(fig))]
    blocks += [table_section(overfitting_table(hist))]
    shown = {lb: hist[lb] for lb in shown_models(levels, base) if lb in hist}
    fig = nll_accuracy_epochs_figure(shown, title="Test NLL and test error per epoch")
    caption = "NLL overfitting while the error falls"
    blocks += [Figure("nll_error_epochs.png", caption, figure_png_bytes(fig))]
    blocks += [table_section(epoch_table(hist[lb], lb)) for lb in shown]
    return Document(f"Factors: {cfg.name}", blocks)


#: The argument naming each study.
SPEC = "CONFIG:STUDY_DIR:NAME"


def studies(specs: Sequence[str], out: Path) -> list[tuple[Path, Path, Path]]:
    """``(config, study folder, output folder)`` of each spec, every output folder and input
    checked before any is written (an InputError naming the argument)."""
    found: list[tuple[Path, Path, Path]] = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) != 3:
            raise InputError(SPEC, "three parts separated by ':'", repr(spec))
        config, folder, name = parts
        if name in ("", ".", "..") or "/" in name:
            raise InputError(SPEC, "a NAME that is one folder name", repr(spec))
        dest = out / name
        if dest in [d for _, _, d in found]:
            raise InputError(SPEC, "a different NAME for each study", repr(spec))
        check_replaceable_folder(dest, "--out")
        study_results(Path(folder))
        found.append((input_file(config, "CONFIG"), Path(folder), dest))
    return found


def write(config: Path, study: Path, dest: Path) -> None:
    """The folder ``dest``: the config, the study's report and figures, and ``factors.md``."""
    doc = document(config, study)
    with atomic_directory(dest) as tmp:
        (tmp / "figures").mkdir()
        shutil.copyfile(config, tmp / "config.toml")
        shutil.copyfile(study / "report.md", tmp / "report.md")
        for png in (study / "figures").glob("*.png"):
            shutil.copyfile(png, tmp / "figures" / png.name)
        for fig in doc.figures():
            (tmp / "figures" / fig.name).write_bytes(fig.png)
        (tmp / "factors.md").write_text(to_markdown(doc), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; its exit status (2: bad input, nothing written)."""
    parser = driver_parser(__file__, __doc__)
    parser.add_argument("studies", nargs="+", metavar=SPEC)
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help="the folder to write a NAME folder in"
    )

    def work(args: argparse.Namespace) -> None:
        for config, study, dest in studies(args.studies, args.out):
            write(config, study, dest)
            print(f"wrote {dest}")

    return run_driver(parser, work, argv)


if __name__ == "__main__":
    sys.exit(main())
