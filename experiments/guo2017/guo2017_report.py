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
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.reporting.document import Document, Figure, Paragraph, table_section
from calibkit.reporting.figures import figure_png_bytes
from calibkit.reporting.render import to_markdown
from calibkit.study import load_study_config
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
    results = json.loads((study / "results.json").read_text())
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("studies", nargs="+", help="CONFIG:STUDY_DIR:NAME")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    for spec in args.studies:
        config, folder, name = spec.split(":")
        study, dest = Path(folder), args.out / name
        (dest / "figures").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(config, dest / "config.toml")
        shutil.copyfile(study / "report.md", dest / "report.md")
        for png in (study / "figures").glob("*.png"):
            shutil.copyfile(png, dest / "figures" / png.name)
        doc = document(Path(config), study)
        for fig in doc.figures():
            (dest / "figures" / fig.name).write_bytes(fig.png)
        (dest / "factors.md").write_text(to_markdown(doc))
        print(f"wrote {dest}")


if __name__ == "__main__":
    main()
