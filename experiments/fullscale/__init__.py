"""The reproductions at the papers' scale, for GPU machines (docs/fullscale.md): each config
names its source table. ``calibkit study CONFIG --smoke`` runs any of them at toy size.

Its study configs stay in ``configs/`` (the path the documented commands name);
:data:`CONFIGS` lists them, relative to the repository root.
"""

CONFIGS = (
    "configs/fullscale/nc_bloodmnist_resnet50.toml",
    "configs/fullscale/nc_cifar100_resnet110.toml",
    "configs/fullscale/nc_cifar100_wrn40_10.toml",
    "configs/fullscale/nc_imagenet.toml",
    "configs/fullscale/seed_resnet18_birdcat.toml",
    "configs/fullscale/wang2021_resnet32_cifar10.toml",
    "configs/fullscale/wang2021_resnet32_cifar100.toml",
)
