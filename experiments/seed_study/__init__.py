"""The seed study: bird vs cat from CIFAR-10, LeNet-5 (with and without dropout) and ResNet-20 x
five seeds, every post-hoc calibrator (README.md here). It needs no code of its own:
``calibkit study experiments/seed_study/configs/seed_bird_cat.toml`` writes its report.

Its study configs are ``configs/*.toml`` in this folder; its write-up is ``README.md``, with
the reports and figures the studies wrote under ``results/``.
"""
