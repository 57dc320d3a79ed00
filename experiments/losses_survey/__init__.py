"""The loss survey: every training loss of calibkit on bird vs cat, before and after post-hoc
calibration (README.md here).

``study.py`` runs ``calibkit study`` with the training-objective section of
:mod:`experiments.wang2021.loss_report`; ``losses_survey_summary.py`` writes the summary.

Its study configs are ``configs/*.toml`` in this folder; its write-up is ``README.md``, with
the reports and figures the studies wrote under ``results/``.
"""
