"""Calibration under distribution shift (Ovadia et al., NeurIPS 2019) on the pretrained
CIFAR-10 ResNet-20 and ResNet-32: ``calibkit shift`` on every CIFAR-10-C corruption x
severity of the JPEG test images.

``run.py`` runs it (one ``calibkit shift`` per model, no study config); ``analysis.py``
prints the write-up's tables; the write-up is ``README.md``, with the reports in
``resnet20/`` and ``resnet32/``.
"""
