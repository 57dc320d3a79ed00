"""Wang, Feng & Zhang (NeurIPS 2021): training losses against post-hoc calibration
(README.md here).

``study.py`` runs ``calibkit study`` with the report section of the paper
(``loss_report.py``: Table 1, Table 2, the finding, the loss figures; its analysis in
``analysis.py`` and ``loss_figures.py``); ``wang2021_configs.py`` writes the configs;
``wang2021_figures.py`` draws Figures 1(d), 2, 4 and 6(a) (``wang_figures.py``).

Its study configs are ``configs/*.toml`` in this folder; its write-up is ``README.md``, with
the reports and figures the studies wrote under ``results/``.
"""
