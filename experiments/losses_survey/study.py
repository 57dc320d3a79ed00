"""``calibkit study`` with the training-objective section of Wang et al. (2021) in its report.

    python experiments/losses_survey/study.py \\
        experiments/losses_survey/configs/losses_survey_birdcat.toml --out runs/losses_survey

The same driver as ``experiments/wang2021/study.py`` (the options of ``calibkit study``).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: the repository root makes `experiments` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments.wang2021.study import main

if __name__ == "__main__":
    raise SystemExit(main())
