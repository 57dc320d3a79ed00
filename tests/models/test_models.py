"""Tests of the model zoo: shapes, gradients, determinism, parameter counts, checkpoints."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from calibkit.core.errors import InputError, UnknownNameError
from calibkit.models import MODELS, create_model, lenet5, load_pretrained_cifar_resnet
from tests.conftest import shared_path

RESNET20 = "pretrained/resnet20-12fca82f.th"
RESNET32 = "pretrained/resnet32-d509ac18.th"
CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("name", MODELS.names())
def test_forward_backward_and_eval_determinism(name: str) -> None:
    model = create_model(name, num_classes=10)
    size = MODELS.info(name).get("input_size", 32)
    x = torch.randn(2, 3, size, size)
    logits = model(x)
    assert logits.shape == (2, 10)
    assert torch.isfinite(logits).all()
    F.cross_entropy(logits, torch.tensor([1, 7])).backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, pname
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(x), model(x), rtol=0, atol=0)


@pytest.mark.parametrize("name", MODELS.names())
def test_binary_head_and_grey_input(name: str) -> None:
    model = create_model(name, num_classes=2, in_channels=1).eval()
    size = MODELS.info(name).get("input_size", 32)
    with torch.no_grad():
        logits = model(torch.randn(2, 1, size, size))
    assert logits.shape == (2, 2)
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("name", ["lenet5", "lenet5_dropout"])
def test_lenet_on_28x28(name: str) -> None:
    model = create_model(name, num_classes=8, input_size=28)
    assert model(torch.randn(2, 3, 28, 28)).shape == (2, 8)


def test_lenet_architecture_and_init() -> None:
    model = lenet5(10)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(c.out_channels, c.kernel_size) for c in convs] == [
        (6, (5, 5)),
        (16, (5, 5)),
        (120, (5, 5)),
    ]
    assert [(lin.in_features, lin.out_features) for lin in linears] == [(120, 84), (84, 10)]
    assert model.features(torch.zeros(1, 3, 32, 32)).shape == (1, 120, 1, 1)
    assert all(float(m.bias.detach().abs().sum()) == 0 for m in convs + linears)
    assert 0.005 < float(linears[0].weight.detach().std()) < 0.015
    dropouts = [
        m.p for m in create_model("lenet5_dropout", 10).modules() if isinstance(m, nn.Dropout)
    ]
    assert dropouts == [0.2, 0.2]


def test_bad_arguments() -> None:
    with pytest.raises(UnknownNameError, match=r"resnet20.*wrn28_10|wrn28_10.*resnet20"):
        create_model("vgg16", num_classes=10)  # far from every name: all are listed
    with pytest.raises(UnknownNameError, match=r"got 'resnet21' \(did you mean 'resnet20'\?\)"):
        create_model("resnet21", num_classes=10)
    with pytest.raises(InputError, match="num_classes"):
        create_model("resnet20", num_classes=0)
    with pytest.raises(InputError, match="input_size"):
        lenet5(10, input_size=64)


@pytest.mark.parametrize(("name", "count"), [("resnet20", 269_722), ("resnet32", 464_154)])
def test_parameter_counts(name: str, count: int) -> None:
    model = create_model(name, num_classes=10)
    assert sum(p.numel() for p in model.parameters()) == count


def test_wide_resnet_counts_and_dropout() -> None:
    model = create_model("wrn16_4", num_classes=100, dropout=0.3)
    assert sum(p.numel() for p in model.parameters()) == 2_772_020  # WRN-16-4: 2.7M
    assert {m.p for m in model.modules() if isinstance(m, nn.Dropout)} == {0.3}


@pytest.mark.parametrize(("relative", "depth"), [(RESNET20, 20), (RESNET32, 32)])
def test_pretrained_checkpoints_load(relative: str, depth: int) -> None:
    model = load_pretrained_cifar_resnet(shared_path(relative), depth)
    assert not model.training
    with torch.no_grad():
        logits = model(torch.randn(4, 3, 32, 32))
    assert logits.shape == (4, 10)
    assert torch.isfinite(logits).all()


def test_pretrained_wrong_or_corrupt_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="ResNet-32 checkpoint"):
        load_pretrained_cifar_resnet(shared_path(RESNET20), 32)
    corrupt = tmp_path / "corrupt.th"
    corrupt.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match=r"readable by torch\.load"):
        load_pretrained_cifar_resnet(corrupt, 20)
    with pytest.raises(InputError, match="existing checkpoint file"):
        load_pretrained_cifar_resnet(tmp_path / "absent.th", 20)
    other = tmp_path / "other.th"
    torch.save({"state_dict": {"module.fc.weight": torch.zeros(2, 2)}}, other)
    with pytest.raises(InputError, match=r"linear\.weight"):
        load_pretrained_cifar_resnet(other, 20)


def read_cifar10_test(path: Path, per_class: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``per_class`` test images of each class, normalised, and their labels."""
    from PIL import Image

    images, labels = [], []
    with zipfile.ZipFile(path) as archive:
        names = sorted(archive.namelist())
        for label, cls in enumerate(CLASSES):
            files = [n for n in names if n.startswith(f"test/{cls}/") and n.endswith(".jpg")]
            for name in files[:per_class]:
                rgb = Image.open(io.BytesIO(archive.read(name))).convert("RGB")
                images.append(np.asarray(rgb, dtype=np.float32) / 255.0)
                labels.append(label)
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2)
    x = (x - torch.tensor(MEAN).view(1, 3, 1, 1)) / torch.tensor(STD).view(1, 3, 1, 1)
    return x, torch.tensor(labels)


@pytest.mark.slow
@pytest.mark.shared_data
def test_pretrained_resnet20_accuracy_on_jpeg_cifar10() -> None:
    x, y = read_cifar10_test(shared_path("cifar10-jpeg.zip"), per_class=50)
    model = load_pretrained_cifar_resnet(shared_path(RESNET20), 20)
    with torch.no_grad():
        accuracy = float((model(x).argmax(1) == y).float().mean())
    print(f"ResNet-20 accuracy on 500 JPEG CIFAR-10 test images: {accuracy:.3f}")
    assert 0.70 <= accuracy <= 0.92


@pytest.mark.parametrize("name", MODELS.names())
def test_every_model_is_registered_with_its_family(name: str) -> None:
    info = MODELS.info(name)
    assert info["family"] in ("lenet", "cifar_resnet", "resnet", "wide_resnet", "mlp", "timm")
    if info["family"] == "cifar_resnet":  # the depth that loads a checkpoint
        assert f"resnet{info['depth']}" == name
        assert 6 * len(create_model(name, 3).layer1) + 2 == info["depth"]  # type: ignore[arg-type]


def test_num_classes_is_checked_once_for_every_model() -> None:
    for bad in (0, True, 2.0):
        with pytest.raises(InputError, match=r"^num_classes: expected an integer >= 1, got"):
            create_model("lenet5", bad)  # type: ignore[arg-type]
    model = create_model("mlp", np.int64(3), input_size=8)  # type: ignore[arg-type]
    assert model(torch.zeros(2, 3, 8, 8)).shape == (2, 3)


@pytest.mark.parametrize("loader", ["cifar_resnet", "load_checkpoint"])
def test_a_checkpoint_holding_nan_or_inf_is_refused_naming_it(tmp_path: Path, loader: str) -> None:
    from calibkit.models import load_checkpoint

    state = create_model("resnet20", 10).state_dict()
    state["layer1.0.conv1.weight"][0, 0, 0, 0] = float("nan")
    state["linear.bias"][3] = float("-inf")
    path = tmp_path / "bad.th"
    torch.save({"state_dict": state}, path)
    match = rf"^path: expected a checkpoint of finite numbers, got {path} \(2 of \d+ tensors"
    load = (
        (lambda: load_pretrained_cifar_resnet(path, 20))
        if loader == "cifar_resnet"
        else (lambda: load_checkpoint(create_model("resnet20", 10), path))
    )
    with pytest.raises(InputError, match=match):
        load()


def test_model_classes_reads_the_checkpoint_alone(tmp_path: Path) -> None:
    """Issue 32: a model's classes, checked against the data's before any work."""
    from calibkit.models import model_classes

    for name, k in (("lenet5", 7), ("resnet20", 3), ("wrn16_4", 5)):
        torch.save(create_model(name, k).state_dict(), tmp_path / f"{name}.pt")
        assert model_classes(name, tmp_path / f"{name}.pt") == k
    with pytest.raises(InputError, match="weights: expected a checkpoint of this MLP"):
        model_classes("mlp", tmp_path / "lenet5.pt")
    with pytest.raises(InputError, match="weights: expected a CIFAR ResNet checkpoint"):
        model_classes("resnet32", tmp_path / "lenet5.pt")
