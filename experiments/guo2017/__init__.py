"""Guo, Pleiss, Sun & Weinberger (ICML 2017): what makes a network miscalibrated (docs/guo2017.md).

``calibkit study`` runs each config; ``guo2017_report.py`` writes the factor tables and
figures (``factor_figures.py``) from the study folders.

Its study configs stay in ``configs/`` (the path the documented commands name);
:data:`CONFIGS` lists them, relative to the repository root.
"""

CONFIGS = (
    "configs/guo2017_birdcat.toml",
    "configs/guo2017_cifar10.toml",
)
