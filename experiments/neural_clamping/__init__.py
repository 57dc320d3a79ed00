"""Neural Clamping (Tang, Chen & Ho, TMLR 2024) against the post-hoc baselines
(docs/neural-clamping.md).

``calibkit study`` runs each config; ``nc_figure_fits.py`` fits the variants the paper's
figures need and ``nc_figures.py`` draws them (``clamping_figures.py``);
``nc_objective_check.py`` checks the calibration objective on one run.

Its study configs stay in ``configs/`` (the path the documented commands name);
:data:`CONFIGS` lists them, relative to the repository root.
"""

CONFIGS = (
    "configs/neural_clamping_birdcat.toml",
    "configs/neural_clamping_birdcat_bf16.toml",
    "configs/neural_clamping_bloodmnist.toml",
    "configs/neural_clamping_cifar10.toml",
)
