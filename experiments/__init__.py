"""Paper reproductions beside the library: one folder per reproduction.

Each folder holds what one reproduction needs beyond ``calibkit`` itself: the list of its
study configs (``CONFIGS``, files in the repository's ``configs/``, where the documented
commands name them), its driver scripts, its figure and analysis code, and its tests
(collected by the default ``pytest`` run). Nothing here is installed with calibkit, and
``calibkit`` never imports it. A driver runs from the repository root as a file
(``python experiments/wang2021/study.py CONFIG``, with calibkit importable: the venv, or
``PYTHONPATH=src``); tests import ``experiments.<folder>.<module>``.

- ``seed_study``: the first study (bird vs cat, three small networks), docs/seed-study.md.
- ``guo2017``: Guo et al. (2017), what makes networks miscalibrated, docs/guo2017.md.
- ``wang2021``: Wang, Feng & Zhang (2021), training losses against post-hoc calibration,
  docs/wang2021.md; its report section serves the loss survey too.
- ``neural_clamping``: Tang et al. (2023), Neural Clamping, docs/neural-clamping.md.
- ``losses_survey``: every training loss of calibkit on bird vs cat, docs/losses-survey.md.
- ``fullscale``: the reproductions at the papers' scale, for GPU machines, docs/fullscale.md.
"""
