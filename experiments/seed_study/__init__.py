"""The seed study: bird vs cat from CIFAR-10, LeNet-5 (with and without dropout) and ResNet-20 x
five seeds, every post-hoc calibrator (docs/seed-study.md). It needs no code of its own:
``calibkit study configs/seed_bird_cat.toml`` writes its report.

Its study configs stay in ``configs/`` (the path the documented commands name);
:data:`CONFIGS` lists them, relative to the repository root.
"""

CONFIGS = ("configs/seed_bird_cat.toml",)
