"""What a study is: its configuration (:mod:`.config`), its data (:mod:`.prepare`) and the
model of each run (:mod:`.components`); the embedded default study ``digits.toml``.

The lowest sub-layer of :mod:`calibkit.study`: it imports no other part of the study.
"""
