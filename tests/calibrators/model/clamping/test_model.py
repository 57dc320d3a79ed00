"""Tests of NeuralClamping and CalibratedModel: views, deployment, argument checks, real data."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from calibkit.calibrators import CalibratedModel, TemperatureScaling
from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.core.errors import InputError, NotFittedError
from calibkit.metrics import ece
from tests.calibrators.model.clamping.problems import linear_model, problem
from tests.calibrators.problems import seeded_split
from tests.conftest import shared_path

pytestmark = pytest.mark.usefixtures("one_thread")


def test_ablations_and_calibrated_model() -> None:
    model, x, y = problem()
    nc = NeuralClamping(
        model, init="random", sgd=SGDSettings(epochs=3, lr=0.01, progress=False)
    ).fit(x, y)
    with torch.no_grad():
        plain = model(x).double().numpy()
        moved = model(x + nc.delta_).double().numpy()
    assert np.allclose(nc.logits(x), moved / nc.temperature_)
    assert np.allclose(nc.ablation("delta_only").logits(x), moved)
    assert np.allclose(nc.ablation("temperature_only").logits(x), plain / nc.temperature_)
    module = nc.to_module()
    assert isinstance(module, CalibratedModel)
    with torch.no_grad():
        probs = module(x).numpy()  # the calibrated probabilities (float64)
    assert np.allclose(probs, nc.predict_proba(x), atol=1e-6)
    assert np.allclose(nc.predict_proba(x).sum(axis=1), 1.0)
    with pytest.raises(InputError, match="view"):
        nc.ablation("both")  # type: ignore[arg-type]
    sgd = nc.ablation("sgd")
    assert sgd.temperature_ == pytest.approx(math.exp(nc.sgd_log_temperature_))
    assert torch.equal(sgd.delta_, nc.delta_)
    fast = NeuralClamping.fast(model, sgd=SGDSettings(progress=False)).fit(x, y)
    assert math.isnan(fast.sgd_log_temperature_)
    with pytest.raises(InputError, match="view"):
        fast.ablation("sgd")  # no SGD in the fast variant


def test_not_fitted(tmp_path: Path) -> None:
    model, x, _ = problem(n=10)
    nc = NeuralClamping(model)
    for call in (
        lambda: nc.predict_proba(x),
        lambda: nc.logits(x),
        nc.to_module,
        lambda: nc.ablation("delta_only"),
        lambda: nc.save(tmp_path / "nc"),
    ):
        with pytest.raises(NotFittedError):
            call()


@pytest.mark.parametrize(
    ("change", "argument"),
    [
        (
            lambda x, y: (x.clone().index_put_((torch.tensor([3]),), torch.tensor(math.nan)), y),
            "inputs",
        ),
        (lambda x, y: (x.view(len(x), -1)[:, 0], y), "inputs"),
        (lambda x, y: (x[:, :1], y), "inputs"),  # the model takes 2 channels
        (lambda x, y: (x.long(), y), "inputs"),
        (lambda x, y: ("images", y), "inputs"),
        (lambda x, y: (x, y + 1), "labels"),  # label 4 for a 4-class model
        (lambda x, y: (x, y[:-1]), "labels"),
        (lambda x, y: (x, -y), "labels"),
        (lambda x, y: (x, torch.zeros_like(y)), "labels"),
    ],
)
def test_bad_fit_input(change: object, argument: str) -> None:
    model, x, y = problem(n=40)
    bad_x, bad_y = change(x, y)  # type: ignore[operator]
    with pytest.raises(InputError, match=f"^{argument}:"):
        NeuralClamping(model, sgd=SGDSettings(epochs=1, progress=False)).fit(bad_x, bad_y)


@pytest.mark.parametrize(
    ("params", "argument"),
    [
        ({"gamma": -1.0}, "gamma"),
        ({"gamma": ()}, "gamma"),
        ({"lam": -0.1}, "lam"),
        ({"init": "ones"}, "init"),
        ({"train": "both"}, "train"),
        ({"input_range": (1.0, -1.0)}, "input_range"),
        ({"input_range": ((0.0, 0.0), (1.0,))}, "input_range"),
        ({"seed": "0"}, "seed"),
        ({"refine_temperature": "yes"}, "refine_temperature"),
        ({"std": (1.0, math.inf)}, "std"),
        ({"gamma_select": "all"}, "gamma_select"),
        ({"holdout": 0.7}, "holdout"),
        ({"holdout": -0.1}, "holdout"),
        ({"holdout": True}, "holdout"),
        ({"holdout": 0.2, "train": "delta"}, "holdout"),
        ({"sgd": {"lr": 0.1}}, "sgd"),
    ],
)
def test_bad_params(params: dict[str, object], argument: str) -> None:
    with pytest.raises(InputError, match=f"^{argument}:"):
        NeuralClamping(linear_model(), **params)  # type: ignore[arg-type]


def test_bad_predict_input_and_channel_count() -> None:
    model, x, y = problem(n=40)
    nc = NeuralClamping.fast(model, sgd=SGDSettings(progress=False)).fit(x, y)
    with pytest.raises(InputError, match=r"^inputs:"):
        nc.predict_proba(x[:, :, :1])
    with pytest.raises(InputError, match=r"^input_range:"):
        NeuralClamping.fast(
            model, input_range=((0, 0, 0), (1, 1, 1)), sgd=SGDSettings(progress=False)
        ).fit(x, y)
    with pytest.raises(InputError, match=r"^model:"):
        NeuralClamping("model")  # type: ignore[arg-type]


@functools.cache
def pretrained_resnet20() -> tuple[nn.Module, torch.Tensor, torch.Tensor, np.ndarray]:
    """The pretrained CIFAR-10 ResNet-20, 1,000 JPEG test images (100 per class), their
    labels and the model's logits (loaded once for the slow tests)."""
    from calibkit.models import load_pretrained_cifar_resnet
    from tests.models.test_models import read_cifar10_test

    x, y = read_cifar10_test(shared_path("cifar10-jpeg.zip"), per_class=100)
    model = load_pretrained_cifar_resnet(shared_path("pretrained/resnet20-12fca82f.th"), 20)
    with torch.no_grad():
        z = torch.cat([model(x[i : i + 250]) for i in range(0, len(x), 250)]).numpy()
    return model, x, y, z


@pytest.mark.slow
@pytest.mark.shared_data
def test_fast_variant_on_pretrained_resnet20_jpeg_cifar10() -> None:
    """1,000 JPEG CIFAR-10 test images, 500 calibration / 500 test, over 4 seeded splits.

    The fast variant (gamma chosen from (0, 0.5, 1) by calibration ECE) against temperature
    scaling: on one split of 500 test images the ECE's sampling noise (about 1 point) is
    larger than the tolerance, so the mean over 4 splits is compared.
    """
    model, x, y, z = pretrained_resnet20()
    labels = y.numpy()
    gaps, raw = [], []
    for seed in range(4):
        cal, test = (
            seeded_split(len(x))
            if seed == 0
            else np.split(np.random.default_rng(seed).permutation(len(x)), [len(x) // 2])
        )
        ts = TemperatureScaling().fit(z[cal], labels[cal])
        nc = NeuralClamping.fast(model, gamma=(0.0, 0.5, 1.0), sgd=SGDSettings(progress=False))
        nc.fit(x[cal], y[cal])
        ece_ts = ece(labels[test], probs=ts.predict_proba(z[test]))
        gaps.append(ece(labels[test], probs=nc.predict_proba(x[test])) - ece_ts)
        raw.append(ece(labels[test], logits=z[test]))
    print(f"ECE(NC fast) - ECE(TS) per split: {np.round(gaps, 4)}; raw ECE {np.round(raw, 3)}")
    assert min(raw) > 0.08  # the shifted model is overconfident
    assert np.mean(gaps) <= 0.005


@pytest.mark.slow
@pytest.mark.shared_data
def test_joint_fit_on_pretrained_resnet20_is_not_worse_than_temperature_scaling() -> None:
    """NC (CE) ends with the exact temperature at its delta, so it keeps what TS achieves.

    500 calibration / 500 test JPEG CIFAR-10 images, 2 seeded splits, 30 epochs of SGD in
    bfloat16 (the SGD alone leaves T near 1 on so few steps: 30 epochs x 1 batch).
    """
    model, x, y, z = pretrained_resnet20()
    labels = y.numpy()
    gaps, sgd_gaps = [], []
    for seed in range(2):
        cal, test = np.split(np.random.default_rng(seed).permutation(len(x)), [len(x) // 2])
        ts = TemperatureScaling().fit(z[cal], labels[cal])
        nc = NeuralClamping(
            model, gamma=0.0, sgd=SGDSettings(epochs=30, precision="bfloat16", progress=False)
        )
        nc.fit(x[cal], y[cal])
        ece_ts = ece(labels[test], probs=ts.predict_proba(z[test]))
        gaps.append(ece(labels[test], probs=nc.predict_proba(x[test])) - ece_ts)
        sgd = nc.ablation("sgd").predict_proba(x[test])
        sgd_gaps.append(ece(labels[test], probs=sgd) - ece_ts)
        assert nc.temperature_ == pytest.approx(ts.temperature_, rel=0.1)
    print(f"ECE(NC) - ECE(TS): {np.round(gaps, 4)}; SGD pair: {np.round(sgd_gaps, 4)}")
    assert np.mean(gaps) <= 0.005
    assert np.mean(sgd_gaps) > 0.02  # what the exact temperature step repairs


def test_the_parameters_are_declared_once() -> None:
    """Issue #45, item 2: each parameter is one ``param()`` line, from which the checks,
    the keyword signature (the model first) and the docstring's Parameters come; a relation
    between two of them is checked after both, and a variant's fixed values override."""
    import inspect

    from calibkit.calibrators.model.clamping.registry import NeuralClampingCE

    keywords = list(inspect.signature(NeuralClampingCE).parameters)
    assert keywords == ["model", *NeuralClamping.param_constraints]
    assert keywords[1:4] == ["gamma", "lam", "init"]
    doc = NeuralClamping.__doc__ or ""
    assert "Parameters\n----------\ngamma : tuple[float, ...], default (1.0,)" in doc
    assert NeuralClampingCE(nn.Linear(2, 3), gamma=2.0).gamma == (0.0,)
    with pytest.raises(InputError, match=r"^holdout: expected 0 with train='delta', got 0.2$"):
        NeuralClamping(nn.Linear(2, 3), train="delta", holdout=0.2)
    with pytest.raises(InputError, match=r"^neural_clamping: expected parameters among gamma"):
        NeuralClamping(nn.Linear(2, 3), colour="red")
