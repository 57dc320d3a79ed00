"""The shift workflow on hand-made logits and a tiny torch model: identical sets give
identical rows, a scaled-logit "shift" raises the ECE of ``none`` but not its accuracy,
and the model's logits are the model's forward pass on the corrupted images."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.core.progress import progress_of
from calibkit.data import corrupt
from calibkit.workflows.shift import (
    COLUMNS,
    model_logits,
    severity_summary,
    shift_table,
    shifted_logits,
)
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


def _parts(n: int = 1200, k: int = 4):
    z, y = random_problem(n, k, seed=0)
    half = n // 2
    return as_outputs(y[:half], logits=z[:half]), as_outputs(y[half:], logits=z[half:]), z, y


def test_an_unshifted_copy_gives_the_clean_rows() -> None:
    cal, test, z, y = _parts()
    copy = as_outputs(y[600:], logits=z[600:].copy())
    rows = shift_table(cal, test, {("copy", 3): copy}, ["none", "temperature"], alpha=0.1)
    assert [(r.method, r.corruption, r.severity) for r in rows] == [
        ("none", "clean", 0),
        ("none", "copy", 3),
        ("temperature", "clean", 0),
        ("temperature", "copy", 3),
        ("ts+raps", "clean", 0),
        ("ts+raps", "copy", 3),
        ("ts+lac", "clean", 0),
        ("ts+lac", "copy", 3),
    ]
    for clean, shifted in zip(rows[::2], rows[1::2], strict=True):
        assert set(clean.values) == set(COLUMNS)
        # the same arrays through the same code: equal, NaN where a column does not apply
        assert clean.values.keys() == shifted.values.keys()
        for key, value in clean.values.items():
            assert value == shifted.values[key] or (
                math.isnan(value) and math.isnan(shifted.values[key])
            )
    assert math.isnan(rows[0].values["coverage"])
    assert math.isnan(rows[4].values["ece"])
    assert 0.8 < rows[4].values["coverage"] < 1.0  # 90% target on 600 exchangeable rows


def test_scaled_logits_raise_the_ece_of_none_but_keep_its_accuracy() -> None:
    cal, test, z, y = _parts()
    hot = {("hot", s): as_outputs(y[600:], logits=(1 + s) * z[600:]) for s in (1, 2)}
    rows = shift_table(cal, test, hot, ["none"], scores=[], n_floor_draws=0)
    ece = [r.values["ece"] for r in rows]
    acc = [r.values["accuracy"] for r in rows]
    assert ece[0] < ece[1] < ece[2]
    assert acc[0] == acc[1] == acc[2]  # argmax is scale-invariant
    assert np.isnan(rows[0].values["ece_floor"])  # no floor draws asked for


def test_the_summary_averages_over_corruptions() -> None:
    cal, test, z, y = _parts()
    sets = {(c, 1): as_outputs(y[600:], logits=f * z[600:]) for c, f in (("a", 2.0), ("b", 3.0))}
    rows = shift_table(cal, test, sets, ["none"], scores=[], n_floor_draws=0)
    summary = severity_summary(rows)
    assert [(m, s, n) for m, s, n, _ in summary] == [("none", 0, 1), ("none", 1, 2)]
    expected = (rows[1].values["nll"] + rows[2].values["nll"]) / 2
    assert summary[1][3]["nll"] == pytest.approx(expected, rel=1e-9)  # rounded to 12 places


def test_bad_input_is_refused() -> None:
    cal, test, z, y = _parts()
    with pytest.raises(InputError, match="alpha"):
        shift_table(cal, test, {}, ["none"], alpha=1.0)
    three = as_outputs(y[600:] % 3, logits=z[600:, :3])
    with pytest.raises(InputError, match="4 classes"):
        shift_table(cal, test, {("a", 1): three}, ["none"])


def _tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 3))


def test_model_logits_are_the_forward_pass_in_batches() -> None:
    images = np.random.default_rng(0).integers(0, 256, (7, 8, 8, 3), dtype=np.uint8)
    net = _tiny_model()
    got = model_logits(net, images, (0.5, 0.5, 0.5), (0.25, 0.25, 0.25), batch_size=3)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        want = net((x - 0.5) / 0.25).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # float32, batched vs whole


def test_shifted_logits_are_the_model_on_the_corrupted_images() -> None:
    rng = np.random.default_rng(1)
    images = rng.integers(0, 256, (6, 8, 8, 3), dtype=np.uint8)
    labels = np.array([0, 1, 2, 0, 1, 2])
    net = _tiny_model()
    mean, std = (0.5, 0.5, 0.5), (0.25, 0.25, 0.25)
    out = shifted_logits(
        net, images, labels, ["gaussian_noise", "contrast"], [1, 5], mean=mean, std=std, key="k"
    )
    assert list(out) == [
        ("gaussian_noise", 1),
        ("gaussian_noise", 5),
        ("contrast", 1),
        ("contrast", 5),
    ]
    x = corrupt(images, "contrast", 5, key="k")
    want = model_logits(net, x, mean, std)
    np.testing.assert_array_equal(out[("contrast", 5)].as_logits(), want)  # same path, same bits
    again = shifted_logits(
        net, images, labels, ["gaussian_noise"], [5], mean=mean, std=std, key="k"
    )
    np.testing.assert_array_equal(
        again[("gaussian_noise", 5)].as_logits(), out[("gaussian_noise", 5)].as_logits()
    )
    with pytest.raises(InputError, match="severity"):
        shifted_logits(net, images, labels, ["contrast"], [6], mean=mean, std=std)


def test_the_seed_draws_the_noise_floor() -> None:
    cal, test, _, _ = _parts()
    a, b = (shift_table(cal, test, {}, ["none"], scores=[], seed=s)[0] for s in (0, 1))
    assert a.values["ece"] == b.values["ece"]  # the same arrays, the same ECE
    assert a.values["ece_floor"] != b.values["ece_floor"]  # other Bernoulli draws


def test_load_model_and_resolve_device_live_below_study(tmp_path: Path) -> None:
    from calibkit.core.devices import resolve_device
    from calibkit.models import create_model, load_model
    from calibkit.study.definition import components

    assert components.resolve_device is resolve_device  # the old import still works
    torch.manual_seed(0)
    net = create_model("resnet20", 10)
    path = tmp_path / "r20.th"
    torch.save({"state_dict": net.state_dict()}, path)
    loaded = load_model("resnet20", path, 10, 3)  # the CIFAR-ResNet branch
    x = torch.zeros(2, 3, 32, 32)
    net.eval()
    assert torch.equal(loaded(x), net(x))
    with pytest.raises(InputError, match="10 classes") as info:
        load_model("resnet20", path, 100, 3)
    assert info.value.argument == "weights"
    lenet = tmp_path / "lenet.pt"
    torch.save(create_model("lenet5", 4).state_dict(), lenet)
    assert not load_model("lenet5", lenet, 4, 3).training  # the generic branch, eval mode
    with pytest.raises(InputError) as info:
        load_model("lenet5", lenet, 10, 3)
    assert info.value.argument == "weights"


def test_fitting_and_judging_are_phases_with_a_step_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The last part of ``calibkit shift`` (about 35 s on the README's study) ran silent."""
    cal, test, _, _ = _parts(400, 3)
    shifted = {("hot", 1): as_outputs(test.labels, logits=2 * test.as_logits())}
    with caplog.at_level(logging.DEBUG, logger="calibkit.workflows.shift"):
        shift_table(cal, test, shifted, ["none", "temperature"], scores=["lac"], n_floor_draws=0)
    events = [e for r in caplog.records if (e := progress_of(r))]
    fits = [(e.step, e.text) for e in events if e.label == "fitting 3 methods"]
    assert fits == [(0, ""), (1, "none"), (2, "temperature"), (3, "ts+lac")]
    judged = [(e.step, e.total) for e in events if e.label == "judging 3 methods on 2 sets"]
    assert judged == [(k, 6) for k in range(7)]
