"""Tests of Neural Clamping (input perturbation + temperature on a frozen model)."""

from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from torch import nn

from calibkit.calibrators import TemperatureScaling
from calibkit.calibrators.clamping import CalibratedModel, NeuralClamping
from calibkit.calibrators.clamping.init import (
    data_driven_delta,
    entropy_gradient,
    input_bounds,
    pixel_range,
)
from calibkit.core.errors import InputError, NotFittedError
from calibkit.metrics import ece
from tests.calibrators.problems import seeded_split
from tests.conftest import shared_path

SHAPE = (2, 2, 2)  # one input: 2 channels of 2 x 2


pytestmark = pytest.mark.usefixtures("one_thread")


def linear_model(k: int = 4, scale: float = 3.0, seed: int = 0) -> nn.Module:
    """A frozen-to-be linear classifier on inputs of SHAPE (overconfident for scale > 1)."""
    gen = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(math.prod(SHAPE), k))
    with torch.no_grad():
        model[1].weight.copy_(torch.randn(k, math.prod(SHAPE), generator=gen) * scale)
        model[1].bias.zero_()
    return model.eval()


def problem(
    n: int = 300, k: int = 4, seed: int = 0
) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """Inputs N(0, 1), labels drawn from softmax(logits / 2): the model is overconfident."""
    model = linear_model(k, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn((n, *SHAPE), generator=gen)
    with torch.no_grad():
        p = torch.softmax(model(x) / 2.0, dim=1)
    return model, x, torch.multinomial(p, 1, generator=gen).squeeze(1)


def focal_np(z: np.ndarray, y: np.ndarray, gamma: float) -> float:
    lp = log_softmax(z, axis=1)[np.arange(len(y)), y]
    return float(np.mean(-((1.0 - np.exp(lp)) ** gamma) * lp))


# ----- delta fixed at 0: temperature scaling under focal loss ---------------------------------
@pytest.mark.parametrize("gamma", [0.5, 1.0, 3.0])
def test_zero_delta_is_focal_temperature_scaling(gamma: float) -> None:
    model, x, y = problem()
    nc = NeuralClamping(model, gamma=gamma, init="zero", train="temperature", progress=False)
    nc.fit(x, y)
    with torch.no_grad():
        z = model(x).double().numpy()
    ref = minimize_scalar(
        lambda s: focal_np(z / math.exp(s), y.numpy(), gamma),
        bounds=(math.log(0.05), math.log(20.0)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert nc.temperature_ == pytest.approx(math.exp(ref.x), rel=1e-3)
    assert nc.temperature_ > 1.2  # the problem is overconfident
    assert torch.count_nonzero(nc.delta_) == 0


def test_gamma_zero_matches_temperature_scaling() -> None:
    model, x, y = problem()
    nc = NeuralClamping.focal_temperature_scaling(model, gamma=0.0, progress=False).fit(x, y)
    with torch.no_grad():
        z = model(x).numpy()
    ts = TemperatureScaling().fit(z, y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-3)
    assert np.allclose(nc.predict_proba(x), ts.predict_proba(z), atol=1e-5)


# ----- the data-driven initial delta (Theorem 3.2) ---------------------------------------------
@pytest.mark.parametrize("input_range", [None, (-5.0, 5.0), ((-6.0, -5.0), (5.0, 7.0))])
def test_data_driven_delta_keeps_inputs_in_range(input_range: object) -> None:
    model, x, y = problem()
    nc = NeuralClamping.fast(model, input_range=input_range, progress=False).fit(x, y)
    moved = x + nc.delta_
    if input_range is None:  # per-channel range of the calibration inputs
        alpha = x.amin(dim=(0, 2, 3)).view(2, 1, 1)
        beta = x.amax(dim=(0, 2, 3)).view(2, 1, 1)
    else:
        lo, hi = input_range  # type: ignore[misc]
        alpha = torch.tensor(lo, dtype=torch.float32).reshape(-1, 1, 1)
        beta = torch.tensor(hi, dtype=torch.float32).reshape(-1, 1, 1)
    assert bool((moved >= alpha).all() and (moved <= beta).all())
    assert torch.count_nonzero(nc.delta_) > 0


def test_data_driven_delta_by_hand() -> None:
    """f(x) = (x0 - x1, 0): the entropy grows as the margin x0 - x1 shrinks towards 0.

    Every input has x0 > x1 (the model prefers class 0), so dH/dx0 < 0 and dH/dx1 > 0:
    delta = (alpha - l0, beta - mu1) = (-1 - min x0, 2 - max x1).
    """
    model = nn.Sequential(nn.Flatten(), nn.Linear(2, 2, bias=False)).eval()
    with torch.no_grad():
        model[1].weight.copy_(torch.tensor([[1.0, -1.0], [0.0, 0.0]]))
    x = torch.tensor([[0.5, -0.5], [0.2, 0.0], [0.9, 0.3]]).view(3, 1, 1, 2)
    # by hand: p1 = sigmoid(-m), dH/dm = -m p0 p1 (binary entropy), dm/dx = (1, -1)
    m = np.array([1.0, 0.2, 0.6])
    p0 = 1 / (1 + np.exp(-m))
    dh_dm = -m * p0 * (1 - p0)
    g_hand = np.array([dh_dm.sum(), -dh_dm.sum()])
    g = entropy_gradient(model, x, 2, torch.device("cpu")).view(-1).numpy()
    assert np.allclose(g, g_hand, rtol=1e-5)
    low, high = input_bounds(x, 2, torch.device("cpu"))
    alpha, beta = torch.full_like(low, -1.0), torch.full_like(low, 2.0)
    delta = data_driven_delta(torch.from_numpy(g).view(1, 1, 2), low, high, alpha, beta)
    assert delta.view(-1).tolist() == pytest.approx([-1.0 - 0.2, 2.0 - 0.3])
    nc = NeuralClamping.fast(model, input_range=(-1.0, 2.0), progress=False)
    nc.fit(x, torch.tensor([0, 1, 0]))
    assert nc.delta_.view(-1).tolist() == pytest.approx([-1.2, 1.7])
    # a smaller step (margins 1, 0.2, 0.6 -> 0, -0.8, -0.4) raises the total entropy
    nc = NeuralClamping.fast(model, input_range=(-0.1, 1.0), progress=False)
    nc.fit(x, torch.tensor([0, 1, 0]))
    assert nc.delta_.view(-1).tolist() == pytest.approx([-0.3, 0.7])
    with torch.no_grad():
        h = [
            float(-(torch.softmax(z, 1) * torch.log_softmax(z, 1)).sum())
            for z in (model(x), model(x + nc.delta_))
        ]
    assert h[1] > h[0]


def test_pixel_range() -> None:
    lo, hi = pixel_range((0.5, 0.25), (0.5, 0.25))
    assert lo == (-1.0, -1.0)
    assert hi == (1.0, 3.0)


# ----- training -------------------------------------------------------------------------------
def test_joint_fit_is_deterministic_and_lowers_the_loss() -> None:
    model, x, y = problem()
    kw = {"init": "random", "epochs": 15, "batch_size": 64, "lr": 0.01, "progress": False}
    a = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    b = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    assert torch.equal(a.delta_, b.delta_)
    assert a.temperature_ == b.temperature_
    assert a.history_ == b.history_
    assert len(a.history_) == 15
    assert a.history_[-1] < a.history_[0]
    assert a.temperature_ > 1.0  # an overconfident model is cooled
    c = NeuralClamping(model, **{**kw, "seed": 1}).fit(x, y)  # type: ignore[arg-type]
    assert not torch.equal(a.delta_, c.delta_)


def test_model_is_never_changed() -> None:
    model, x, y = problem()
    model[1].bias.requires_grad_(True)
    model[1].weight.requires_grad_(False)
    before = copy.deepcopy(model.state_dict())
    nc = NeuralClamping(model, epochs=3, batch_size=64, progress=False).fit(x, y)
    nc.predict_proba(x)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not model.training
    assert model[1].bias.requires_grad
    assert not model[1].weight.requires_grad
    assert model[1].weight.grad is None


def test_train_delta_keeps_t_at_one_and_default_lambda() -> None:
    model, x, y = problem()
    nc = NeuralClamping(model, train="delta", epochs=2, progress=False).fit(x, y)
    assert nc.temperature_ == 1.0
    with torch.no_grad():
        z0 = model(x + NeuralClamping.fast(model, progress=False).fit(x, y).delta_)
    assert nc.lam_ == pytest.approx(0.1 * focal_np(z0.double().numpy(), y.numpy(), 1.0))


def test_gamma_pool_picks_the_lowest_calibration_ece() -> None:
    model, x, y = problem()
    nc = NeuralClamping.fast(model, gamma=(0.0, 1.0, 3.0), progress=False).fit(x, y)
    assert set(nc.ece_by_gamma_) == {0.0, 1.0, 3.0}
    assert nc.gamma_ == min(nc.ece_by_gamma_, key=nc.ece_by_gamma_.__getitem__)
    assert ece(y.numpy(), probs=nc.predict_proba(x)) == pytest.approx(
        min(nc.ece_by_gamma_.values())
    )


# ----- the held-out guard -----------------------------------------------------------------------
def exact_log_t(z: np.ndarray, y: np.ndarray, gamma: float) -> float:
    res = minimize_scalar(
        lambda t: focal_np(z / math.exp(t), y, gamma),
        bounds=(-5, 5),
        method="bounded",
        options={"xatol": 1e-10},
    )
    return float(res.x)


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_holdout_keeps_a_delta_that_helps_on_held_out_data(gamma: float) -> None:
    """Inputs shifted by +1 from what the model saw: delta = -1 helps on any data."""
    model, x, y = problem(n=400)
    nc = NeuralClamping(
        model,
        gamma=gamma,
        holdout=0.25,
        init="zero",
        lam=0.0,
        lr=0.05,
        epochs=30,
        batch_size=50,
        progress=False,
    ).fit(x + 1.0, y)
    assert nc.delta_kept_
    assert nc.holdout_losses_[0] < nc.holdout_losses_[1]
    assert float(nc.delta_.mean()) < -0.3
    # the held-out losses, recomputed: each candidate's T fitted on the learning part
    held = torch.randperm(400, generator=torch.Generator().manual_seed(0))[:100]
    learn = np.setdiff1d(np.arange(400), held.numpy())
    for delta, loss in zip((nc.delta_, torch.zeros(SHAPE)), nc.holdout_losses_, strict=True):
        with torch.no_grad():
            z = model(x + 1.0 + delta).double().numpy()
        t = exact_log_t(z[learn], y.numpy()[learn], gamma)
        expected = focal_np(z[held.numpy()] / math.exp(t), y.numpy()[held.numpy()], gamma)
        assert loss == pytest.approx(expected, rel=1e-6)


def test_holdout_drops_a_delta_that_only_fits_the_learning_part() -> None:
    """80 samples, a large step, no penalty: the learnt delta fits the learning part and
    loses on the held-out part, so delta = 0 is kept, and the fit is then temperature
    scaling (NLL) on the whole calibration set."""
    model, x, y = problem(n=80)
    kw = {"gamma": 0.0, "init": "random", "lam": 0.0, "lr": 0.2, "epochs": 60, "batch_size": 20}
    nc = NeuralClamping(model, holdout=0.25, progress=False, **kw).fit(x, y)  # type: ignore[arg-type]
    assert not nc.delta_kept_
    assert nc.holdout_losses_[0] >= nc.holdout_losses_[1]
    assert torch.equal(nc.delta_, torch.zeros(SHAPE))
    assert math.isnan(nc.sgd_log_temperature_)
    ts = TemperatureScaling().fit(model(x).detach().numpy(), y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)
    with pytest.raises(InputError, match=r"^view:"):
        nc.ablation("sgd")
    plain = NeuralClamping(model, progress=False, **kw).fit(x, y)  # type: ignore[arg-type]
    assert plain.delta_kept_
    assert plain.holdout_losses_ == []


def test_holdout_guards_the_fast_variant_against_a_wrecking_initial_delta() -> None:
    """One input dimension spans 1% of its channel's range: the data-driven delta moves it
    by about 3 standard deviations, and the fast variant needs T = 31 to recover."""
    model = linear_model()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((400, *SHAPE), generator=gen)
    x[:, 0, 0, 0] *= 0.01
    with torch.no_grad():
        p = torch.softmax(model(x) / 2.0, dim=1)
    y = torch.multinomial(p, 1, generator=gen).squeeze(1)
    plain = NeuralClamping.fast(model, gamma=0.0, progress=False).fit(x, y)
    held = NeuralClamping.fast(model, gamma=0.0, holdout=0.25, progress=False).fit(x, y)
    assert float(plain.delta_.abs().max()) > 3.0
    assert plain.temperature_ > 10.0
    assert not held.delta_kept_
    assert torch.equal(held.delta_, torch.zeros(SHAPE))
    ts = TemperatureScaling().fit(model(x).detach().numpy(), y.numpy())
    assert held.temperature_ == pytest.approx(ts.temperature_, rel=1e-5)


def test_holdout_needs_samples_on_both_sides() -> None:
    model, x, y = problem(n=3)
    with pytest.raises(InputError, match=r"^holdout:"):
        NeuralClamping(model, holdout=0.1, epochs=1, progress=False).fit(x, y)


def test_fast_gamma_selection_trains_only_the_candidate_the_fast_variant_prefers() -> None:
    model, x, y = problem()
    pool = (0.0, 1.0, 3.0)
    fast = NeuralClamping.fast(model, gamma=pool, progress=False).fit(x, y)
    nc = NeuralClamping(
        model, gamma=pool, gamma_select="fast", epochs=2, batch_size=64, progress=False
    ).fit(x, y)
    assert nc.gamma_ == fast.gamma_
    assert len(nc.history_) == 2
    others = {g: e for g, e in fast.ece_by_gamma_.items() if g != fast.gamma_}
    assert {g: nc.ece_by_gamma_[g] for g in others} == others
    one = NeuralClamping(model, gamma=fast.gamma_, epochs=2, batch_size=64, progress=False)
    assert torch.equal(one.fit(x, y).delta_, nc.delta_)


def test_progress_line(capsys: pytest.CaptureFixture[str]) -> None:
    model, x, y = problem()
    NeuralClamping(model, epochs=2, progress=True).fit(x, y)
    err = capsys.readouterr().err
    assert "epoch 2/2" in err
    assert "loss" in err


# ----- views, deployment, persistence ---------------------------------------------------------
def test_ablations_and_calibrated_model() -> None:
    model, x, y = problem()
    nc = NeuralClamping(model, init="random", epochs=3, lr=0.01, progress=False).fit(x, y)
    with torch.no_grad():
        plain = model(x).double().numpy()
        moved = model(x + nc.delta_).double().numpy()
    assert np.allclose(nc.logits(x), moved / nc.temperature_)
    assert np.allclose(nc.ablation("delta_only").logits(x), moved)
    assert np.allclose(nc.ablation("temperature_only").logits(x), plain / nc.temperature_)
    module = nc.to_module()
    assert isinstance(module, CalibratedModel)
    with torch.no_grad():
        probs = torch.softmax(module(x), dim=1).double().numpy()
    assert np.allclose(probs, nc.predict_proba(x), atol=1e-6)
    assert np.allclose(nc.predict_proba(x).sum(axis=1), 1.0)
    with pytest.raises(InputError, match="view"):
        nc.ablation("both")  # type: ignore[arg-type]
    sgd = nc.ablation("sgd")
    assert sgd.temperature_ == pytest.approx(math.exp(nc.sgd_log_temperature_))
    assert torch.equal(sgd.delta_, nc.delta_)
    fast = NeuralClamping.fast(model, progress=False).fit(x, y)
    assert math.isnan(fast.sgd_log_temperature_)
    with pytest.raises(InputError, match="view"):
        fast.ablation("sgd")  # no SGD in the fast variant


@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_final_temperature_is_the_exact_minimum_at_the_learnt_delta(gamma: float) -> None:
    from calibkit.calibrators.clamping.init import fit_focal_temperature

    model, x, y = problem()
    kw = {"init": "random", "epochs": 4, "batch_size": 64, "progress": False, "gamma": gamma}
    nc = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    plain = NeuralClamping(model, **kw, refine_temperature=False).fit(x, y)  # type: ignore[arg-type]
    assert torch.equal(nc.delta_, plain.delta_)  # the SGD is the same
    assert nc.sgd_log_temperature_ == plain.log_temperature_ == plain.sgd_log_temperature_
    z = nc.ablation("delta_only").logits(x)
    assert nc.log_temperature_ == pytest.approx(fit_focal_temperature(z, y.numpy(), gamma))
    # at lr 1e-3 the SGD barely moves T (the model is overconfident by a factor 2) ...
    assert abs(nc.sgd_log_temperature_) < 0.2
    assert nc.temperature_ > 1.5
    # ... and the exact step never raises the objective the SGD was minimising
    yn = y.numpy()
    assert focal_np(z / nc.temperature_, yn, gamma) <= focal_np(
        z / math.exp(nc.sgd_log_temperature_), yn, gamma
    )


def test_with_delta_at_zero_the_joint_fit_is_temperature_scaling() -> None:
    model, x, y = problem()
    nc = NeuralClamping(model, init="zero", lr=1e-12, gamma=0.0, epochs=1, progress=False)
    nc.fit(x, y)
    ts = TemperatureScaling().fit(model(x).detach().double().numpy(), y.numpy())
    assert nc.temperature_ == pytest.approx(ts.temperature_, rel=1e-6)


def test_save_load_round_trip(tmp_path: Path) -> None:
    model, x, y = problem()
    nc = NeuralClamping(model, gamma=(0.0, 1.0), init="random", epochs=2, progress=False)
    nc.fit(x, y)
    nc.save(tmp_path / "nc")
    sidecar = json.loads((tmp_path / "nc.json").read_text())
    assert sidecar["calibkit_neural_clamping"] == 1
    back = NeuralClamping.load(tmp_path / "nc", model)
    assert torch.equal(back.delta_, nc.delta_)
    assert back.temperature_ == nc.temperature_
    assert back.fitted_state().keys() == nc.fitted_state().keys()
    assert back.history_ == nc.history_
    assert back.ece_by_gamma_ == nc.ece_by_gamma_
    assert back.sgd_log_temperature_ == nc.sgd_log_temperature_
    assert back.delta_kept_
    assert back.holdout_losses_ == []
    held = NeuralClamping(model, init="random", epochs=2, holdout=0.2, progress=False).fit(x, y)
    held.save(tmp_path / "held")
    again = NeuralClamping.load(tmp_path / "held", model)
    assert (again.delta_kept_, again.holdout_losses_) == (held.delta_kept_, held.holdout_losses_)
    assert back.get_params() == nc.get_params()
    assert np.array_equal(back.predict_proba(x), nc.predict_proba(x))
    fast = NeuralClamping.fast(model, progress=False).fit(x, y)
    fast.save(tmp_path / "fast")  # no SGD temperature: null in the JSON, NaN again on load
    assert json.loads((tmp_path / "fast.json").read_text())["state"]["sgd_log_temperature_"] is None
    assert math.isnan(NeuralClamping.load(tmp_path / "fast", model).sgd_log_temperature_)
    (tmp_path / "nc.safetensors").write_bytes(b"garbage")
    with pytest.raises(InputError, match="checksum"):
        NeuralClamping.load(tmp_path / "nc", model)
    with pytest.raises(InputError, match="path"):
        NeuralClamping.load(tmp_path / "absent", model)


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
        NeuralClamping(model, epochs=1, progress=False).fit(bad_x, bad_y)


@pytest.mark.parametrize(
    ("params", "argument"),
    [
        ({"gamma": -1.0}, "gamma"),
        ({"gamma": ()}, "gamma"),
        ({"lam": -0.1}, "lam"),
        ({"lr": 0.0}, "lr"),
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 1.5}, "batch_size"),
        ({"init": "ones"}, "init"),
        ({"train": "both"}, "train"),
        ({"input_range": (1.0, -1.0)}, "input_range"),
        ({"input_range": ((0.0, 0.0), (1.0,))}, "input_range"),
        ({"seed": "0"}, "seed"),
        ({"refine_temperature": "yes"}, "refine_temperature"),
        ({"precision": "half"}, "precision"),
        ({"std": (1.0, math.inf)}, "std"),
        ({"gamma_select": "all"}, "gamma_select"),
        ({"holdout": 0.7}, "holdout"),
        ({"holdout": -0.1}, "holdout"),
        ({"holdout": True}, "holdout"),
        ({"holdout": 0.2, "train": "delta"}, "holdout"),
    ],
)
def test_bad_params(params: dict[str, object], argument: str) -> None:
    with pytest.raises(InputError, match=f"^{argument}:"):
        NeuralClamping(linear_model(), **params)  # type: ignore[arg-type]


def test_bad_predict_input_and_channel_count() -> None:
    model, x, y = problem(n=40)
    nc = NeuralClamping.fast(model, progress=False).fit(x, y)
    with pytest.raises(InputError, match=r"^inputs:"):
        nc.predict_proba(x[:, :, :1])
    with pytest.raises(InputError, match=r"^input_range:"):
        NeuralClamping.fast(model, input_range=((0, 0, 0), (1, 1, 1)), progress=False).fit(x, y)
    with pytest.raises(InputError, match=r"^model:"):
        NeuralClamping("model")  # type: ignore[arg-type]


# ----- real data ------------------------------------------------------------------------------
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
        nc = NeuralClamping.fast(model, gamma=(0.0, 0.5, 1.0), progress=False)
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
        nc = NeuralClamping(model, gamma=0.0, epochs=30, precision="bfloat16", progress=False)
        nc.fit(x[cal], y[cal])
        ece_ts = ece(labels[test], probs=ts.predict_proba(z[test]))
        gaps.append(ece(labels[test], probs=nc.predict_proba(x[test])) - ece_ts)
        sgd = nc.ablation("sgd").predict_proba(x[test])
        sgd_gaps.append(ece(labels[test], probs=sgd) - ece_ts)
        assert nc.temperature_ == pytest.approx(ts.temperature_, rel=0.1)
    print(f"ECE(NC) - ECE(TS): {np.round(gaps, 4)}; SGD pair: {np.round(sgd_gaps, 4)}")
    assert np.mean(gaps) <= 0.005
    assert np.mean(sgd_gaps) > 0.02  # what the exact temperature step repairs


class _Branchy(nn.Module):
    """Data-dependent control flow: torch.fx cannot trace it."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.lin(x.flatten(1))
        return out * 2 if bool(out.sum() > 0) else out


def _conv_bn() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 3),
    )
    with torch.no_grad():  # non-trivial running statistics, so that folding matters
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    return model.eval()


def test_fused_copy_folds_batch_norm_and_leaves_the_model_alone() -> None:
    from calibkit.calibrators.clamping.init import fused_copy

    model = _conv_bn()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    fast = fused_copy(model)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fast.modules())
    x = torch.randn(8, 3, 4, 4)
    with torch.no_grad():
        assert torch.allclose(fast(x), model(x), atol=1e-5)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    assert not any(p.requires_grad for p in fast.parameters())
    branchy = _Branchy()
    assert fused_copy(branchy) is branchy


def test_fused_and_plain_fits_agree() -> None:
    model = _conv_bn()
    x, y = torch.randn(96, 3, 4, 4), torch.arange(96) % 3
    fits = [
        NeuralClamping(model, epochs=3, batch_size=32, lr=0.05, progress=False, fuse=f).fit(x, y)
        for f in (True, False)
    ]
    assert torch.allclose(fits[0].delta_, fits[1].delta_, atol=1e-4)
    assert fits[0].temperature_ == pytest.approx(fits[1].temperature_, rel=1e-4)


def test_bfloat16_fit_is_close_to_float32_and_predicts_in_float32() -> None:
    model = _conv_bn()
    x, y = torch.randn(96, 3, 4, 4), torch.arange(96) % 3
    kw = {"epochs": 5, "batch_size": 32, "lr": 0.05, "progress": False}
    full = NeuralClamping(model, **kw).fit(x, y)  # type: ignore[arg-type]
    low = NeuralClamping(model, **kw, precision="bfloat16").fit(x, y)  # type: ignore[arg-type]
    again = NeuralClamping(model, **kw, precision="bfloat16").fit(x, y)  # type: ignore[arg-type]
    assert torch.equal(low.delta_, again.delta_)  # deterministic
    assert low.delta_.dtype == torch.float32
    start = NeuralClamping.fast(model, progress=False).fit(x, y).delta_  # the shared init
    step = (full.delta_ - start).norm()
    assert step > 0
    assert (low.delta_ - full.delta_).norm() < 0.05 * step  # rounds the passes, not the method
    assert low.temperature_ == pytest.approx(full.temperature_, rel=0.02)
    assert not torch.equal(low.delta_, full.delta_)  # the option does take effect
    assert low.predict_proba(x).dtype == np.float64
    with pytest.raises(InputError, match=r"^precision:"):
        NeuralClamping(model, precision="float16")


def test_a_dataset_of_the_loaders_is_taken_as_it_is() -> None:
    from calibkit.data import ImageArrays

    gen = np.random.default_rng(0)
    images = gen.integers(0, 256, size=(60, 4, 4, 3), dtype=np.uint8)
    data = ImageArrays(images, np.arange(60) % 3, ("a", "b", "c"))
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
    kw = {"epochs": 2, "batch_size": 16, "lr": 0.05, "progress": False}
    model = _conv_bn()
    by_data = NeuralClamping(model, **kw, mean=mean, std=std).fit(data)  # type: ignore[arg-type]
    x = data.to_tensor(mean, std)
    by_tensor = NeuralClamping(model, **kw).fit(x, data.labels)  # type: ignore[arg-type]
    assert torch.equal(by_data.delta_, by_tensor.delta_)
    np.testing.assert_array_equal(by_data.predict_proba(data), by_tensor.predict_proba(x))
    with pytest.raises(InputError, match=r"^labels:"):
        NeuralClamping(model, **kw).fit(x)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^mean:"):
        NeuralClamping(model, mean="abc")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^mean/std:"):
        NeuralClamping(model, mean=(0.5,), std=(1.0,)).fit(data)
