"""``calibkit study`` with the training-objective section of Wang et al. (2021) in its report.

    python experiments/wang2021/study.py experiments/wang2021/configs/wang2021_birdcat.toml \\
        --out runs/wang2021_birdcat

It takes the options of ``calibkit study`` (``--help``). When the study's models differ by
training loss (a cross-entropy model among them), the report gains Table 1, Table 2, the
finding stated from them and the loss figures (:func:`~experiments.wang2021.loss_report.
loss_section`); otherwise it is the report ``calibkit study`` writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from calibkit.cli import main as calibkit_main
from calibkit.study.report import report_sections
from experiments.wang2021.loss_report import loss_section


def main(argv: list[str] | None = None) -> int:
    """Run ``calibkit study`` with ``argv`` (default: this command line's arguments)."""
    with report_sections(loss_section):
        return calibkit_main(["study", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
