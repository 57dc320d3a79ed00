"""Calibration under distribution shift (Ovadia et al., NeurIPS 2019) on the pretrained
CIFAR-10 ResNet-20 and ResNet-32: ``calibkit shift`` on every CIFAR-10-C corruption x
severity of the JPEG test images (README.md here).

``run.py`` runs it (one ``calibkit shift`` per model, reports in ``resnet20/`` and
``resnet32/``). It needs no study config: :data:`CONFIGS` is empty.
"""

CONFIGS: tuple[str, ...] = ()
