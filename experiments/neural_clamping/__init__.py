"""Neural Clamping (Tang, Chen & Ho, TMLR 2024) against the post-hoc baselines
(README.md here).

``calibkit study`` runs each config; ``nc_figure_fits.py`` fits the variants the paper's
figures need and ``nc_figures.py`` draws them (``clamping_figures.py``);
``nc_objective_check.py`` checks the calibration objective on one run.

Its study configs are ``configs/*.toml`` in this folder; its write-up is ``README.md``, with
the reports and figures the studies wrote under ``results/``.
"""
