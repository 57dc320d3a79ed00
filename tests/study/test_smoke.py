"""``calibkit study CONFIG --smoke`` runs every shipped config end to end at toy size.

Real data is used where it is present (``../shared/data``); otherwise, and for the archives
that are downloaded (CIFAR-10/100) or pointed to (ImageNet), tiny synthetic files in the
official layouts stand in (tests/data/synthetic.py). The ImageNet config's user weights
are random weights of calibkit's own models, saved where the config expects them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from calibkit.cli import main
from calibkit.data import CIFAR10_CLASSES
from calibkit.data.cifar import ARCHIVES
from calibkit.data.medmnist import KNOWN_MD5
from calibkit.models import create_model
from calibkit.study import load_study_config
from calibkit.study.definition.components import resolve_device
from tests.conftest import SHARED_DATA, SHIPPED_CONFIGS
from tests.data.synthetic import bloodmnist_npz, cifar10_jpeg_zip, cifar_archive, imagenet_folder

CONFIGS = SHIPPED_CONFIGS
#: The configs smoke-run by default: one of each family (the others are marked slow: a
#: minute or more each on a busy 2-core CPU even at toy size, e.g. WRN-40-10 on the 500
#: calibration images that five of each of 100 classes make).
DEFAULT = {
    "neural_clamping_birdcat",
    "seed_bird_cat",
    "wang2021_resnet32_cifar10",
    "seed_resnet18_birdcat",
}

pytestmark = pytest.mark.usefixtures("one_thread")


def _official(monkeypatch: pytest.MonkeyPatch, name: str, path: Path) -> None:
    """Make the synthetic archive at ``path`` the official one for ``name``."""
    md5 = hashlib.md5(path.read_bytes()).hexdigest()
    changed = dataclasses.replace(ARCHIVES[name], md5=md5, url=path.as_uri())
    monkeypatch.setitem(ARCHIVES, name, changed)


def _has_classes(path: Path, dataset: str) -> bool:
    """Whether the real file holds the classes ``dataset`` needs (a GPU machine may be given
    a bird-and-cat-only copy of the CIFAR-10 JPEG archive, under its upload limit)."""
    if path.suffix != ".zip":
        return True
    subset = dataset.partition(":")[2]
    wanted = [c.strip() for c in subset.split(",")] if subset else list(CIFAR10_CLASSES)
    with zipfile.ZipFile(path) as zf:
        found = {n.split("/")[1] for n in zf.namelist() if n.count("/") >= 2}
    return set(wanted) <= found


def _data_dir(dataset: str, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path | None:
    """The folder to pass as --data-dir (None: the config's own, real data present)."""
    name = dataset.split(":")[0]
    if name in ("cifar10", "cifar100"):
        _official(monkeypatch, name, cifar_archive(tmp / "data", name, per_split=5200))
        return tmp / "data"
    if name == "imagenet-val":
        return imagenet_folder(tmp / "imagenet", n_classes=3, per_class=21)
    real = {"cifar10-jpeg": "cifar10-jpeg.zip", "bloodmnist": "bloodmnist.npz"}[name]
    if (SHARED_DATA / real).is_file() and _has_classes(SHARED_DATA / real, dataset):
        return SHARED_DATA
    if name == "bloodmnist":
        path = bloodmnist_npz(tmp / "data")
        monkeypatch.setitem(KNOWN_MD5, "bloodmnist.npz", hashlib.md5(path.read_bytes()).hexdigest())
    else:  # enough bird and cat training images for a config's 1,000-image calibration carve
        cifar10_jpeg_zip(tmp / "data", per_class=520)
    return tmp / "data"


def _user_weights(config: Path, tmp: Path) -> Path:
    """A copy of ``config`` beside random weights at its ``init`` paths (3 classes)."""
    copy = tmp / "cfg" / config.name
    copy.parent.mkdir(parents=True)
    shutil.copy(config, copy)
    for spec in load_study_config(copy).models:
        assert spec.init is not None
        Path(spec.init).parent.mkdir(parents=True, exist_ok=True)
        state = create_model(spec.name, 3).state_dict()
        save_file({k: v.contiguous() for k, v in state.items()}, spec.init)
    return copy


def _case(path: Path) -> object:
    marks = [] if path.stem in DEFAULT else [pytest.mark.slow]
    return pytest.param(path, id=f"{path.parents[1].name}/{path.stem}", marks=marks)


def test_every_family_runs_by_default() -> None:
    fast = {p.stem for p in CONFIGS if p.stem in DEFAULT}
    for family in ("neural_clamping", "wang2021", "seed_"):  # nc_: the ImageNet test below
        assert any(stem.startswith(family) for stem in fast), family
    assert fast == DEFAULT  # and nc_imagenet with tiny stand-ins, below


@pytest.mark.parametrize("config", [_case(p) for p in CONFIGS])
def test_smoke_runs_the_config(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _smoke(config, tmp_path, monkeypatch)


def test_smoke_imagenet_with_tiny_stand_ins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ImageNet config's data, user-weights and normalisation paths, by default: its
    three models replaced by one-block 224x224 networks (the real ones run when slow tests
    do; their names and shapes are tested in tests/models)."""
    from calibkit.models import MODELS
    from calibkit.models.mixer import MlpMixer
    from calibkit.models.vit import VisionTransformer

    def vit(num_classes: int, in_channels: int = 3) -> VisionTransformer:
        return VisionTransformer(num_classes, in_channels, dim=24, depth=1, heads=3)

    def mixer(num_classes: int, in_channels: int = 3) -> MlpMixer:
        return MlpMixer(num_classes, in_channels, dim=16, depth=1)

    items = MODELS._items
    stand_ins = {"resnet101": vit, "vit_small_patch16_224": vit, "mixer_b16_224": mixer}
    for name, tiny in stand_ins.items():
        MODELS.get(name)  # a declared entry's module imported first, so it won't register later
        monkeypatch.setitem(items, name, tiny)
    imagenet = next(p for p in CONFIGS if p.stem == "nc_imagenet")
    _smoke(imagenet, tmp_path, monkeypatch)


def _pretrained_from_shared(config: Path, tmp: Path) -> Path:
    """``config``, or a copy of it reading its pretrained checkpoints from
    :data:`SHARED_DATA` when they are not where the config says (``CALIBKIT_SHARED_DATA``
    points elsewhere, e.g. on a GPU machine given a copy of the data)."""
    text = config.read_text(encoding="utf-8")
    relative = re.findall(r'init = "((?:\.\./)+shared/data/pretrained/)', text)
    if not relative or (config.parent / relative[0]).is_dir():
        return config
    copy = tmp / "cfg" / config.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(text.replace(relative[0], f"{SHARED_DATA.as_posix()}/pretrained/"), "utf-8")
    return copy


def _smoke(config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "cache"))
    config = _pretrained_from_shared(config, tmp_path)
    cfg = load_study_config(config)
    inits = [Path(s.init) for s in cfg.models if s.init is not None]
    if any("pretrained" in p.parts for p in inits) and not all(p.is_file() for p in inits):
        pytest.skip("real data not available: the pretrained checkpoints in ../shared/data")
    if cfg.data.dataset == "imagenet-val":
        config = _user_weights(config, tmp_path)
    data_dir = _data_dir(cfg.data.dataset, tmp_path, monkeypatch)
    out = tmp_path / "out"
    argv = ["study", str(config), "--smoke", "--out", str(out), "--quiet"]
    argv += ["--data-dir", str(data_dir)] if data_dir is not None else []
    assert main(argv) == 0
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) > 1
    identity = json.loads(next(out.glob("runs/*/seed-0/identity.json")).read_text())
    assert identity["data"]["smoke"] is True
    assert identity["n"]["train"] <= 16
    history = json.loads(next(out.glob("runs/*/seed-0/train.json")).read_text())["history"]
    assert len(history) <= 1  # one epoch (none for a pretrained model)
    assert sorted(p.name for p in (out / "runs").iterdir()) == sorted(m.label for m in cfg.models)
    assert torch.get_num_threads() == 1
    # every unit ran on the device the config resolves (a GPU where there is one)
    device = str(resolve_device(cfg.device))
    for run in out.glob("runs/*/seed-0"):
        assert json.loads((run / "train.json").read_text())["device"] == device
        for fit in run.glob("clamping-*.json"):
            assert json.loads(fit.read_text())["device"] == device, fit.name
