"""The driver running Neural Clamping by calibkit and by its authors' code (issue #33).

The authors' code (NCToolkit) is not in the repository: the end-to-end test writes a
minimal stand-in with the same API (and the same torchvision imports and ``.cuda()``
calls, so the driver's shims are exercised); one test runs the real clone at
``$NCTOOLKIT`` or ``/tmp/NCToolkit`` when it is there.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from calibkit.calibrators.model.clamping import SGDSettings
from calibkit.calibrators.model.clamping.sgd import run_sgd
from calibkit.core.errors import BoundWarning
from calibkit.metrics import ece
from experiments.neural_clamping import nc_authors, nc_inputs
from experiments.neural_clamping.authors_code import load_authors_code
from tests.conftest import shared_path

FAKE_UTILS = """
import torch
import torchvision
from torch import nn
from torchvision import transforms
from torchvision.datasets import ImageFolder

train_transform = transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.ToTensor()])


class FocalLoss(nn.Module):
    def __init__(self, class_num=10, gamma=2):
        super().__init__()
        self.gamma = gamma

    def forward(self, logits, labels):
        logp = torch.log_softmax(logits, dim=1).gather(1, labels.view(-1, 1)).view(-1)
        return (-(1 - logp.exp()) ** self.gamma * logp).mean()
"""

FAKE_WRAPPER = """
import torch
from torch import nn, optim

from .utils import FocalLoss


class NCWrapper(nn.Module):
    def __init__(self, model, num_classes=10, lambda_0=1, lambda_1=1, image_size=(3, 32, 32),
                 init_scale=0.01, dropout_p=0.0, init_temp=1, device_ids=[]):
        super().__init__()
        self.model = model
        self.perturbation = nn.Parameter(torch.randn(size=image_size) * init_scale)
        self.temperature = nn.Parameter(torch.ones(1) * init_temp)
        self.lambda_0, self.lambda_1, self.num_classes = lambda_0, lambda_1, num_classes
        self.model.cuda()

    def forward(self, input):
        return self.model(input + self.perturbation) / self.temperature

    def train_NC(self, val_loader, epoch, lr=0.001, momentum=0.9, nesterov=False, verbose=True,
                 focal_loss=False, gamma=1, adamW=False):
        self.cuda()
        crit = FocalLoss(self.num_classes, gamma) if focal_loss else nn.CrossEntropyLoss()
        opt = optim.SGD([self.perturbation, self.temperature], lr=lr, momentum=momentum)
        temps = []
        for i in range(epoch):
            for x, y in val_loader:
                x, y = x.cuda(), y.cuda()
                loss = self.lambda_0 * crit(self(x), y) + self.lambda_1 * torch.norm(
                    self.perturbation
                )
                loss.backward()
                opt.step()
                opt.zero_grad()
            temps.append(self.temperature.item())
            print(i + 1, "/", epoch, "Training")
        return {"temp": temps}
"""

CONFIG = """
name = "tiny"
seeds = [0]
calibrators = ["temperature"]
[data]
dataset = "digits"
calibration_from = "test"
calibration_size = 150
split_by_seed = true
[training]
epochs = 0
[[models]]
name = "mlp"
"""


def _fake(folder: Path, wrapper: str = FAKE_WRAPPER, utils: str = FAKE_UTILS) -> Path:
    pkg = folder / "neural_clamping"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "nc_wrapper.py").write_text(textwrap.dedent(wrapper), encoding="utf-8")
    (pkg / "utils.py").write_text(textwrap.dedent(utils), encoding="utf-8")
    return folder


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], code: Path | str) -> str:
    out = tmp_path / "out"
    before = _listing(tmp_path)
    rc = nc_authors.main(["--authors-code", str(code), "--out", str(out), "--epochs", "1"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1
    assert err.startswith("nc_authors.py: error: --authors-code: ")
    assert "Traceback" not in err
    assert not out.exists()
    assert _listing(tmp_path) == before
    return err


@pytest.fixture
def no_heavy_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal comes before any data is loaded or any fit is run."""

    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("heavy work started before the input was checked")

    monkeypatch.setattr(nc_authors, "load_inputs", boom)
    monkeypatch.setattr(nc_authors, "run", boom)


@pytest.mark.usefixtures("no_heavy_work")
def test_a_missing_authors_code_folder_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(tmp_path, capsys, tmp_path / "NCToolkit")
    assert "does not exist" in err
    assert "git clone https://github.com/yungchentang/NCToolkit" in err


@pytest.mark.usefixtures("no_heavy_work")
def test_a_folder_that_is_not_nctoolkit_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "demo.py").write_text("print(1)\n", encoding="utf-8")
    assert "has no neural_clamping/nc_wrapper.py" in _refused(tmp_path, capsys, tmp_path / "other")
    (tmp_path / "a_file").write_text("x", encoding="utf-8")
    assert "is not a folder" in _refused(tmp_path, capsys, tmp_path / "a_file")


@pytest.mark.usefixtures("no_heavy_work")
def test_an_nctoolkit_like_folder_with_another_api_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    renamed = FAKE_WRAPPER.replace("def train_NC(self, val_loader, epoch,", "def fit(self, x, y,")
    err = _refused(tmp_path, capsys, _fake(tmp_path / "renamed", wrapper=renamed))
    assert "has no method train_NC" in err
    other = FAKE_WRAPPER.replace("focal_loss=False, gamma=1,", "loss='ce',")
    err = _refused(tmp_path, capsys, _fake(tmp_path / "params", wrapper=other))
    assert "NCWrapper.train_NC lacks the parameter(s) focal_loss, gamma" in err
    broken = _fake(tmp_path / "broken", wrapper="import torch\nraise ImportError('no gpu')\n")
    err = _refused(tmp_path, capsys, broken)
    assert "fails to import (ImportError: no gpu)" in err
    assert not [m for m in sys.modules if m.startswith("_nctoolkit_")]


@pytest.mark.usefixtures("no_heavy_work")
@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--calibration", "training", "heldout or train or train-augmented"),
        ("--lr", "0", "expected a finite number > 0, got 0.0"),
        ("--methods", "nc_fl,ts_focal", "names among ts, nc_ce, nc_fl"),
        ("--delta-start", "theorem", "one of own, data, random, zero"),
        ("--lam", "-1", "'auto' or a number >= 0"),
        ("--device", "tpu", "cpu, or cuda / cuda:N on a machine with CUDA, got 'tpu'"),
        ("--device", "cuda:99", "cpu, or cuda / cuda:N on a machine with CUDA, got 'cuda:99' ("),
    ],
)
def test_a_bad_option_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    out = tmp_path / "out"
    code = _fake(tmp_path / "fake")
    before = _listing(tmp_path)
    assert nc_authors.main(["--authors-code", str(code), "--out", str(out), option, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"nc_authors.py: error: {option}: ")
    assert message in err
    assert err.count("\n") == 1
    assert _listing(tmp_path) == before


def test_the_shims_are_undone_after_loading(tmp_path: Path) -> None:
    cuda = torch.Tensor.cuda
    code = load_authors_code(_fake(tmp_path / "fake"))
    assert code.NCWrapper.__name__ == "NCWrapper"
    assert torch.Tensor.cuda is cuda
    stand_in = [m for m in sys.modules if m.startswith("torchvision")]
    assert all(sys.modules[m].__spec__ is not None for m in stand_in)  # a real one, if any


#: The units under ``--out`` (beside them: the cached logits, and the folder's manifest).
UNITS = "*/seed-*/*/*.json"


def _units(out: Path) -> dict[str, dict[str, object]]:
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(out.glob(UNITS))}


def test_both_codes_run_end_to_end_on_identical_inputs_and_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cfg.toml").write_text(CONFIG, encoding="utf-8")
    out, cuda = tmp_path / "out", torch.Tensor.cuda
    argv = ["--authors-code", str(_fake(tmp_path / "fake")), "--config", str(tmp_path / "cfg.toml"),
            "--model", "mlp", "--epochs", "2", "--batch-size", "64", "--lr", "0.01",
            "--n-boot", "20", "--out", str(out)]  # fmt: skip
    with pytest.warns(BoundWarning):  # the untrained MLP's TS reaches its bound: said, not hidden
        assert nc_authors.main(argv) == 0
    first = capsys.readouterr()
    units = _units(out)
    assert sorted(units) == sorted(f"{m}-{c}" for m in nc_authors.METHODS for c in nc_authors.CODES)
    labels = np.load(out / "mlp" / "seed-0" / "logits.npz")["test_labels"]
    for name, unit in units.items():
        curve = unit["curve"]
        assert isinstance(curve, list)
        assert len(curve) == (0 if name == "ts-calibkit" else 3)  # the start and 2 epochs
        settings = unit["settings"]
        assert isinstance(settings, dict)
        assert (settings["cal_images"], settings["test_images"]) == (150, len(labels)) == (150, 449)
        interval = unit["test"]["ece"]  # type: ignore[index]
        assert interval["low"] <= interval["high"]
        if name.endswith("authors"):  # the hook saw what their own history says
            temps = [p["T"] for p in curve[1:]]
            assert temps == pytest.approx(unit["authors_history"]["temp"], rel=1e-6)  # type: ignore[index]
            assert unit["T"] == pytest.approx(temps[-1], rel=1e-6)
        elif curve:  # calibkit: the curve ends where SGD left T; then T is refined
            assert unit["T_sgd"] == pytest.approx(curve[-1]["T"], rel=1e-6)
    ts = units["ts-authors"]
    assert ts["delta_norm"] == 0.0  # their perturbation stayed pinned at 0
    raw = np.load(out / "mlp" / "seed-0" / "logits.npz")["test_logits"]
    assert ts["curve"][0]["test_ece"] == pytest.approx(ece(labels, logits=raw), abs=1e-9)  # type: ignore[index]
    assert "| NC (FL) | authors |" in first.out
    assert torch.Tensor.cuda is cuda  # the .cuda() shim is undone after the run

    mtimes = {p: p.stat().st_mtime_ns for p in out.glob(UNITS)}
    variant = units["nc_fl-authors"]["variant"]
    (out / "mlp" / "seed-0" / str(variant) / "nc_fl-authors.json").unlink()
    assert nc_authors.main(argv) == 0
    again = capsys.readouterr().err
    assert again.count("done before, skipped") == 5
    assert "[6/6] mlp seed 0 NC (FL) authors: fitting" in again
    for path, mtime in mtimes.items():
        if path.name != "nc_fl-authors.json":
            assert path.stat().st_mtime_ns == mtime
    assert _units(out)["nc_fl-authors"]["T"] == pytest.approx(units["nc_fl-authors"]["T"])

    other = tmp_path / "other.toml"  # the same model label in another config: not resumed
    other.write_text(CONFIG.replace("calibration_size = 150", "calibration_size = 100"), "utf-8")
    before = _listing(tmp_path)
    assert nc_authors.main([*argv, "--config", str(other)]) == 2
    assert "made with " + str(tmp_path / "cfg.toml") in capsys.readouterr().err
    assert _listing(tmp_path) == before


class _Recorder(torch.nn.Module):
    """A linear model that records the first feature (an input's index) of every batch."""

    def __init__(self) -> None:
        super().__init__()
        self.linear, self.seen = torch.nn.Linear(1, 2), []  # type: list[list[int]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.append(x[:, 0].detach().round().long().tolist())
        return self.linear(x)


def test_the_authors_loader_visits_the_calibration_set_in_calibkits_sgd_order() -> None:
    """The same batches in the same order for both codes: calibkit's own SGD, recorded."""
    x, y = torch.arange(50.0).view(50, 1), torch.arange(50) % 2
    model = _Recorder()
    settings = SGDSettings(lr=1e-12, batch_size=16, epochs=3, progress=False, precision="float32")
    run_sgd(model, x, y, torch.zeros(1), 0.0, 0.0, settings, joint=True, seed=7,
            device=torch.device("cpu"))  # fmt: skip
    loader = nc_inputs.authors_loader(x, y, 16, seed=7)
    theirs = [xb[:, 0].long().tolist() for _ in range(3) for xb, _ in loader]
    assert theirs == model.seen
    assert len(theirs) == 12
    assert theirs[:4] != theirs[4:8]  # a new order each epoch


def test_the_augmentation_crops_flips_and_cuts_out_as_theirs() -> None:
    """Every output pixel is an input pixel, the black padding (-mean/std) or a Cutout 0;
    the Cutout square is at most 6 x 6; draws differ; a seed repeats them."""
    image = torch.arange(1.0, 3 * 8 * 8 + 1).view(3, 8, 8)
    aug = nc_inputs.Augment([0.5, 0.5, 0.5], [0.25, 0.25, 0.25], seed=3)
    draws = [aug(image) for _ in range(40)]
    allowed = set(image.flatten().tolist()) | {-2.0, 0.0}
    flipped = 0
    for out in draws:
        assert out.shape == image.shape
        assert set(out.flatten().tolist()) <= allowed
        assert 1 <= int((out == 0).sum()) <= 3 * 36
        inside = out[0][(out[0] > 0)]
        rows = out[0].clone()
        rows[rows <= 0] = float("nan")
        steps = torch.diff(rows, dim=1)
        steps = steps[~steps.isnan()]
        flipped += bool((steps < 0).all())
        assert inside.numel() > 0
    assert 8 <= flipped <= 32  # RandomHorizontalFlip: about half
    again = nc_inputs.Augment([0.5, 0.5, 0.5], [0.25, 0.25, 0.25], seed=3)
    assert all(torch.equal(again(image), d) for d in draws[:5])
    assert not torch.equal(draws[0], draws[1])


def test_the_augmented_variant_runs_and_keeps_its_own_logits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cfg.toml").write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--authors-code", str(_fake(tmp_path / "fake")), "--config", str(tmp_path / "cfg.toml"),
            "--model", "mlp", "--epochs", "2", "--batch-size", "64", "--methods", "nc_ce",
            "--n-boot", "20", "--out", str(out)]  # fmt: skip
    assert nc_authors.main([*argv, "--calibration", "train-augmented"]) == 0
    assert nc_authors.main(argv) == 0
    capsys.readouterr()
    seed = out / "mlp" / "seed-0"
    aug, held = np.load(seed / "logits-train-augmented.npz"), np.load(seed / "logits.npz")
    assert not np.array_equal(aug["cal_logits"], held["cal_logits"])
    assert np.array_equal(aug["test_logits"], held["test_logits"])  # the same test images
    units = {p.parent.name.rpartition("cal_")[2] + "/" + p.stem: p for p in seed.rglob("*.json")}
    assert sorted(units) == [
        "heldout/nc_ce-authors", "heldout/nc_ce-calibkit",
        "train-augmented/nc_ce-authors", "train-augmented/nc_ce-calibkit",
    ]  # fmt: skip
    theirs = json.loads(units["train-augmented/nc_ce-authors"].read_text(encoding="utf-8"))
    assert theirs["settings"]["augmentation"] == "per epoch"


def _real_code() -> Path:
    path = Path(os.environ.get("NCTOOLKIT", "/tmp/NCToolkit"))
    if not (path / "neural_clamping" / "nc_wrapper.py").is_file():
        pytest.skip(f"the authors' code is absent: clone NCToolkit to {path} (or set $NCTOOLKIT)")
    return path


def test_the_real_authors_code_runs_on_the_pretrained_resnet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _real_code()
    shared_path("pretrained/resnet20-12fca82f.th")
    shared_path("cifar10-jpeg.zip")
    out = tmp_path / "out"
    argv = ["--authors-code", str(code), "--model", "resnet20", "--images", "200",
            "--epochs", "1", "--batch-size", "100", "--methods", "ts,nc_fl",
            "--delta-start", "data", "--n-boot", "20", "--out", str(out)]  # fmt: skip
    assert nc_authors.main(argv) == 0
    units = _units(out)
    assert sorted(units) == ["nc_fl-authors", "nc_fl-calibkit", "ts-authors", "ts-calibkit"]
    data = np.load(out / "resnet20" / "seed-0" / "logits-n200.npz")
    raw_ece = ece(data["test_labels"], logits=data["test_logits"])
    assert raw_ece > 0.05  # the JPEG shift: the ResNet is overconfident before calibration
    ours, theirs = units["nc_fl-calibkit"], units["nc_fl-authors"]
    # the same start (calibkit's data-driven delta, T = 1) on the same test images
    assert theirs["curve"][0]["test_ece"] == pytest.approx(ours["curve"][0]["test_ece"], abs=1e-9)  # type: ignore[index]
    assert theirs["curve"][0]["delta_norm"] == pytest.approx(ours["curve"][0]["delta_norm"])  # type: ignore[index]
    assert theirs["lam"] == pytest.approx(ours["lam"], rel=1e-6)  # the same rule, the same lambda
    assert theirs["curve"][1]["T"] == pytest.approx(theirs["authors_history"]["temp"][0], rel=1e-6)  # type: ignore[index]
    assert units["ts-calibkit"]["T"] > 1.5  # type: ignore[operator]


def test_temperature_only_runs_each_codes_sgd_on_t_alone_on_the_cached_logits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--temperature-only``: delta stays at 0 in both codes; their NC (CE) is then their
    TS step for step (the same loss, SGD and batches), and calibkit's refined NC (CE) is
    the exact NLL minimum, i.e. calibkit's TS."""
    (tmp_path / "cfg.toml").write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--authors-code", str(_fake(tmp_path / "fake")), "--config", str(tmp_path / "cfg.toml"),
            "--model", "mlp", "--epochs", "3", "--batch-size", "64", "--lr", "0.01",
            "--n-boot", "20", "--temperature-only", "--out", str(out)]  # fmt: skip
    with pytest.warns(BoundWarning):
        assert nc_authors.main(argv) == 0
    err = capsys.readouterr().err
    units: dict[str, Any] = _units(out)
    assert len(units) == 6
    for name, unit in units.items():
        assert str(unit["variant"]).endswith("-tonly")
        assert unit["settings"]["temperature_only"] is True
        assert unit["delta_norm"] == 0.0
        assert all(p["delta_norm"] == 0.0 for p in unit["curve"])
        if name != "ts-calibkit":
            assert len(unit["curve"]) == 4
    temps = [[p["T"] for p in units[n]["curve"]] for n in ("ts-authors", "nc_ce-authors")]
    assert temps[0] == pytest.approx(temps[1], rel=1e-6)
    assert temps[0][-1] > temps[0][1] > 1.0  # SGD moved T, as in their TS
    assert "time left known once a fit of each kind has run" not in err.splitlines()[-1]


def test_temperature_only_nc_ce_by_calibkit_is_its_ts_on_the_pretrained_resnet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On real logits (an interior optimum): calibkit's NC (CE) with delta held at 0 ends at
    TS's temperature (the exact step), NC (FL) above it (focal loss favours a higher T)."""
    shared_path("pretrained/resnet20-12fca82f.th")
    shared_path("cifar10-jpeg.zip")
    argv = ["--authors-code", str(_fake(tmp_path / "fake")), "--model", "resnet20",
            "--images", "500", "--epochs", "5", "--codes", "calibkit", "--temperature-only",
            "--n-boot", "20", "--out", str(tmp_path / "out")]  # fmt: skip
    assert nc_authors.main(argv) == 0
    capsys.readouterr()
    units: dict[str, Any] = _units(tmp_path / "out")
    assert units["nc_ce-calibkit"]["T"] == pytest.approx(units["ts-calibkit"]["T"], rel=1e-3)
    assert units["nc_fl-calibkit"]["T"] > 1.1 * units["ts-calibkit"]["T"]
    assert units["ts-calibkit"]["T"] > 1.5


def test_the_time_left_is_read_from_fits_of_the_same_kind() -> None:
    args = nc_authors.parse_args(["--authors-code", "x"])
    rest = [(0, "nc_fl", "authors"), (0, "ts", "authors")]
    seconds = {(True, "authors"): [2.0, 4.0]}
    assert "known once" in nc_authors.time_left(args, seconds, rest)  # NC through the model
    seconds[(False, "authors")] = [600.0]
    assert nc_authors.time_left(args, seconds, rest) == "about 10.1 min left"  # 600 + 3 s


def test_calibration_on_training_images_without_augmentation_has_its_own_logits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cfg.toml").write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "out"
    argv = ["--authors-code", str(_fake(tmp_path / "fake")), "--config", str(tmp_path / "cfg.toml"),
            "--model", "mlp", "--epochs", "1", "--batch-size", "64", "--methods", "nc_ce",
            "--temperature-only", "--n-boot", "20", "--out", str(out)]  # fmt: skip
    for calibration in ("train", "train-augmented"):
        assert nc_authors.main([*argv, "--calibration", calibration]) == 0
    capsys.readouterr()
    seed = out / "mlp" / "seed-0"
    plain, aug = np.load(seed / "logits-train.npz"), np.load(seed / "logits-train-augmented.npz")
    assert np.array_equal(plain["cal_labels"], aug["cal_labels"])  # the same training images
    assert not np.allclose(plain["cal_logits"], aug["cal_logits"])  # only one is augmented
    assert np.array_equal(plain["test_logits"], aug["test_logits"])
    theirs = [json.loads(p.read_text("utf-8")) for p in seed.rglob("nc_ce-authors.json")]
    assert sorted(u["settings"]["augmentation"] or "none" for u in theirs) == [
        "none",
        "one fixed draw",  # T alone on the cached logits: no per-epoch draw
    ]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_both_codes_run_on_cuda_and_agree_with_the_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--device cuda``: the model, both codes' fits and the curves on the GPU (their
    ``.cuda()`` calls real, no shim); T and the curve's first test ECE as on the CPU."""
    (tmp_path / "cfg.toml").write_text(CONFIG, encoding="utf-8")
    argv = ["--authors-code", str(_fake(tmp_path / "fake")), "--config", str(tmp_path / "cfg.toml"),
            "--model", "mlp", "--epochs", "2", "--batch-size", "64", "--lr", "0.01",
            "--methods", "nc_ce,nc_fl", "--n-boot", "20"]  # fmt: skip
    runs = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / device
        assert nc_authors.main([*argv, "--device", device, "--out", str(out)]) == 0
        runs[device] = _units(out)
    capsys.readouterr()
    for name, unit in runs["cuda"].items():
        cpu = runs["cpu"][name]
        assert unit["settings"]["device"].startswith("cuda")  # type: ignore[index]
        assert unit["T"] == pytest.approx(cpu["T"], rel=1e-3)
        assert unit["curve"][0]["test_ece"] == pytest.approx(cpu["curve"][0]["test_ece"], abs=1e-3)  # type: ignore[index]
