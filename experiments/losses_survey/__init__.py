"""The loss survey: every training loss of calibkit on bird vs cat, before and after post-hoc
calibration (docs/losses-survey.md).

``study.py`` runs ``calibkit study`` with the training-objective section of
:mod:`experiments.wang2021.loss_report`; ``losses_survey_summary.py`` writes the summary.

Its study configs stay in ``configs/`` (the path the documented commands name);
:data:`CONFIGS` lists them, relative to the repository root.
"""

CONFIGS = ("configs/losses_survey_birdcat.toml",)
