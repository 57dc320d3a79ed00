"""Paper reproductions beside the library: one folder per reproduction.

Each folder holds everything one reproduction needs beyond ``calibkit`` itself: its study
configs (``configs/*.toml``), its driver scripts, its figure and analysis code, its tests
(collected by the default ``pytest`` run), and its write-up (``README.md``) with the reports
and figures its studies wrote (``results/``). Nothing here is installed with calibkit, and
``calibkit`` never imports it. A driver runs from the repository root as a file
(``python experiments/wang2021/study.py CONFIG``, with calibkit importable: the venv, or
``PYTHONPATH=src``); tests import ``experiments.<folder>.<module>``. Every driver keeps the
command line's rules through ``_driver.py`` (``--help`` does nothing else; bad input is one
line and exit status 2, nothing written; an output folder is written through the library's
``atomic_directory``, never over the user's files).

- ``seed_study``: the first study (bird vs cat, three small networks).
- ``guo2017``: Guo et al. (2017), what makes networks miscalibrated.
- ``wang2021``: Wang, Feng & Zhang (2021), training losses against post-hoc calibration;
  its report section serves the loss survey too.
- ``neural_clamping``: Tang et al. (2023), Neural Clamping.
- ``losses_survey``: every training loss of calibkit on bird vs cat.
- ``fullscale``: the reproductions at the papers' scale, for GPU machines.
- ``shift``: Ovadia et al. (2019), calibration under corruption (``calibkit shift``, no
  study config; its reports in ``resnet20/`` and ``resnet32/``).
"""
