"""The reproductions at the papers' scale, for GPU machines: each config names its source
table. ``calibkit study CONFIG --smoke`` runs any of them at toy size.

Its study configs are ``configs/*.toml`` in this folder; its write-up (units, CPU step
times, GPU-hour estimates, the GPU check) is ``README.md``.
"""
