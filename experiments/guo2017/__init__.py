"""Guo, Pleiss, Sun & Weinberger (ICML 2017): what makes a network miscalibrated.

``calibkit study`` runs each config; ``guo2017_report.py`` writes the factor tables and
figures (``factor_figures.py``) from the study folders.

Its study configs are ``configs/*.toml`` in this folder; its write-up is ``README.md``, with
the reports and figures the studies wrote under ``results/``.
"""
