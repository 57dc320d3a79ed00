"""``calibkit shift`` under careless and hostile input (issue 32): a class subset scored on
the right columns of the model or refused, every option value checked before any work (alpha
against the calibration size, the normalisation, the severities, the part sizes), one line
and exit 2 with nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibkit.cli import main
from tests.conftest import shared_path

pytestmark = pytest.mark.usefixtures("one_thread")


def _lenet(path: Path, n_classes: int, favourite: int | None = None) -> Path:
    """A LeNet-5 of ``n_classes`` with random weights, or (``favourite``) one whose logits
    always pick that class: its accuracy is the share of that class's images."""
    import torch

    from calibkit.models import create_model

    torch.manual_seed(0)
    state = create_model("lenet5", n_classes).state_dict()
    if favourite is not None:
        state["classifier.5.weight"].zero_()
        state["classifier.5.bias"].zero_()
        state["classifier.5.bias"][favourite] = 3.0
    torch.save(state, path)
    return path


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A synthetic cifar10-jpeg.zip (16 images a class and split), its cache in tmp_path,
    and the options of a small run."""
    from tests.data.synthetic import cifar10_jpeg_zip

    monkeypatch.setenv("CALIBKIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CALIBKIT_DATA", raising=False)
    cifar10_jpeg_zip(tmp_path / "data", per_class=16)
    weights = _lenet(tmp_path / "lenet.pt", 10)
    args = [
        "shift", "--model", "lenet5", "--weights", str(weights),
        "--data-dir", str(tmp_path / "data"), "--cal-size", "60", "--test-size", "60",
        "--corruptions", "gaussian_noise", "--severities", "1", "--methods", "none",
        "--n-floor-draws", "0", "--device", "cpu", "--format", "json",
    ]  # fmt: skip
    return {"args": args, "folder": tmp_path}


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def _refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``args``: exit 2 with one error line (returned), no traceback."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("calibkit: error: ")]
    assert len(errors) == 1, err
    return errors[0]


def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any image decoded or any model run fails the test: the refusal comes first."""
    import calibkit.data.image_folder as image_folder
    import calibkit.workflows.shift_study as shift

    def heavy(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the input was refused")

    monkeypatch.setattr(image_folder, "read_image_folder", heavy)
    monkeypatch.setattr(shift, "model_logits", heavy)


# ----- a class subset and the model's classes (the wrong-number case) ---------------------


def test_a_subset_is_scored_on_the_columns_of_a_model_of_every_class(
    tiny: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A 10-class model that always says "bird", on bird and cat: right on every bird,
    half the images, not on none (labels 0/1 read as airplane/automobile)."""
    weights = _lenet(tiny["folder"] / "bird.pt", 10, favourite=2)
    args = [*tiny["args"], "--weights", str(weights), "--data", "cifar10-jpeg:bird,cat"]
    assert main([*args, "--cal-size", "16", "--test-size", "16", "--scores", "none"]) == 0
    captured = capsys.readouterr()
    assert "scored on the model's columns 2 (bird), 3 (cat) of its 10" in captured.err
    rows = {(r["method"], r["corruption"]): r for r in json.loads(captured.out)["rows"]}
    assert rows["none", "clean"]["accuracy"] == 0.5  # 8 birds of 16, stratified


def test_a_subset_keeps_its_labels_for_a_model_of_the_subset(
    tiny: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """A 2-class model (say trained on cat vs bird): the subset is labelled in the order
    given, cat 0 and bird 1; one that always says 0 is right on the cats."""
    weights = _lenet(tiny["folder"] / "two.pt", 2, favourite=0)
    args = [*tiny["args"], "--weights", str(weights), "--data", "cifar10-jpeg:cat,bird"]
    assert main([*args, "--cal-size", "16", "--test-size", "16", "--scores", "none"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["corruption"] == "clean"
    assert rows[0]["accuracy"] == 0.5


@pytest.mark.parametrize(
    ("n_classes", "data", "words"),
    [
        (3, "cifar10-jpeg:bird,cat", "'cifar10-jpeg:bird,cat', 2 of its 10 classes"),
        (3, "cifar10-jpeg", "'cifar10-jpeg', of 10 classes"),
        (10, "cifar10-jpeg:bird,kat", "got 'kat' (did you mean 'cat'?)"),
    ],
)
def test_a_model_of_other_classes_is_refused_before_any_image_is_decoded(
    tiny: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    n_classes: int,
    data: str,
    words: str,
) -> None:
    weights = _lenet(tiny["folder"] / "other.pt", n_classes)
    before = _listing(tiny["folder"])
    _no_work(monkeypatch)
    out = tiny["folder"] / "report"
    line = _refused(
        [*tiny["args"], "--weights", str(weights), "--data", data, "--out", str(out)], capsys
    )
    assert line.startswith("calibkit: error: --data: expected ")
    assert words in line
    if n_classes == 3:
        assert "the lenet5 checkpoint" in line
        assert "of 3 classes" in line
    assert _listing(tiny["folder"]) == before  # no cache, no report


@pytest.mark.skipif(
    not Path(__file__).parents[2].joinpath("../shared/data/cifar10-jpeg.zip").exists(),
    reason="needs ../shared/data",
)
def test_bird_and_cat_on_the_pretrained_resnet20(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case on the real data: ResNet-20 of CIFAR-10 on bird vs cat is right
    about as often as on all ten classes (3.0% before: labels 0/1 read as airplane and
    automobile)."""
    weights = shared_path("pretrained/resnet20-12fca82f.th")
    data = shared_path("cifar10-jpeg.zip").parent
    args = [
        "shift", "--model", "resnet20", "--weights", str(weights), "--data-dir", str(data),
        "--data", "cifar10-jpeg:bird,cat", "--cal-size", "200", "--test-size", "100",
        "--corruptions", "contrast", "--severities", "1", "--methods", "none",
        "--scores", "none", "--n-floor-draws", "0", "--device", "cpu", "--format", "json",
    ]  # fmt: skip
    assert main(args) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    clean = next(r for r in rows if r["corruption"] == "clean")
    assert clean["accuracy"] > 0.5


# ----- option values checked before any work -----------------------------------------------


def test_alpha_against_the_calibration_count_before_any_work(
    tiny: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_work(monkeypatch)
    before = _listing(tiny["folder"])
    line = _refused([*tiny["args"], "--alpha", "0.01"], capsys)
    assert line.startswith("calibkit: error: --cal-size: expected at least 197 calibration ")
    assert "alpha=0.01" in line
    assert "got 60 (30 for the quantile)" in line
    assert _listing(tiny["folder"]) == before


def test_alpha_against_a_calibration_fraction_before_the_model_runs(
    tiny: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import calibkit.workflows.shift_study as shift

    def heavy(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model ran before alpha was checked")

    monkeypatch.setattr(shift, "model_logits", heavy)
    line = _refused([*tiny["args"], "--cal-size", "0.5", "--alpha", "0.02"], capsys)
    assert "--cal-size: expected at least 97 calibration images for alpha=0.02" in line
    assert "got 80 (40 for the quantile)" in line  # half of the 160 test images


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--mean", "nan,0.4,0.4"),
        ("--mean", "0.4,inf,0.4"),
        ("--mean", "0.4,0.4,-inf"),
        ("--std", "inf,0.2,0.2"),
        ("--std", "0.2,nan,0.2"),
        ("--std", "0,0.2,0.2"),
        ("--std", "0.2,-1,0.2"),
    ],
)
def test_a_non_finite_normalisation_is_refused_when_read(
    tiny: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    value: str,
) -> None:
    import calibkit.workflows.shift_study as shift

    def settings(*args: object, **kwargs: object) -> None:
        raise AssertionError("the options were not refused when parsed")

    monkeypatch.setattr(shift, "ShiftSettings", settings)
    line = _refused([*tiny["args"], f"{option}={value}"], capsys)
    assert f"argument {option}: expected comma-separated " in line
    assert "finite numbers" in line
    assert "logits" not in line


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--severities", "\N{SUPERSCRIPT THREE}"),
        ("--severities", "1,\N{SUPERSCRIPT THREE}"),
        ("--severities", "1-\N{ARABIC-INDIC DIGIT THREE}"),
        ("--data", "cifar10-jpeg@fog:\N{SUPERSCRIPT THREE}"),
        ("--data", "cifar10-jpeg@fog:\N{ARABIC-INDIC DIGIT THREE}:test"),
    ],
)
def test_a_severity_in_other_digits_is_one_line(
    tiny: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    option: str,
    value: str,
) -> None:
    _no_work(monkeypatch)
    line = _refused([*tiny["args"], f"{option}={value}"], capsys)
    assert option in line
    assert repr(value.split(":")[1] if option == "--data" else value) in line


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            ["--test-size", "1"],
            "--test-size: expected at least 10 test images: one of each class",
        ),
        (
            ["--cal-size", "0.999999"],
            "--cal-size: expected a count in 1..159 or a fraction of the 160 images leaving "
            "images for both parts, got 0.999999 (160 of the 160 images)",
        ),
        (
            ["--cal-size", "0.001"],
            "got 0.001 (0 of the 160 images)",
        ),
        (
            ["--cal-size", "5", "--scores", "none"],
            "--cal-size: expected a calibration part holding images of each of the 10 classes",
        ),
    ],
)
def test_part_sizes_are_refused_for_their_real_cause(
    tiny: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: list[str],
    words: str,
) -> None:
    import calibkit.workflows.shift_study as shift

    def heavy(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model ran before the parts were checked")

    monkeypatch.setattr(shift, "model_logits", heavy)
    line = _refused([*tiny["args"], *extra], capsys)
    assert words in line
    assert "per class" not in line


def test_a_test_part_one_image_short_of_the_rest_is_kept(
    tiny: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The images left out of the test part need not hold every class (before: refused
    with a message about samples per class)."""
    assert main([*tiny["args"], "--test-size", "99", "--scores", "none"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["n_samples"] == 99  # of the 100 left by the 60 calibration images
