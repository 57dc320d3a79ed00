"""Wang, Feng & Zhang (NeurIPS 2021): training losses against post-hoc calibration
(docs/wang2021.md).

``study.py`` runs ``calibkit study`` with the report section of the paper
(``loss_report.py``: Table 1, Table 2, the finding, the loss figures; its analysis in
``analysis.py`` and ``loss_figures.py``); ``wang2021_configs.py`` writes the configs;
``wang2021_figures.py`` draws Figures 1(d), 2, 4 and 6(a) (``wang_figures.py``).

Its study configs stay in ``configs/`` (the path the documented commands name);
:data:`CONFIGS` lists them, relative to the repository root.
"""

CONFIGS = (
    "configs/wang2021_birdcat.toml",
    "configs/wang2021_birdcat_n500.toml",
    "configs/wang2021_birdcat_n1000.toml",
    "configs/wang2021_birdcat_n3000.toml",
    "configs/wang2021_bloodmnist.toml",
    "configs/wang2021_cifar10.toml",
)
