"""The linear solver's products on a torch device (``linear_device``): each product against
the numpy path's on the same inputs (other kernels: to 1e-8, not to rounding), the exact
gradient by finite differences, every family fitted with ``device="cpu"`` (torch's float64
arithmetic) against its numpy fit, the device refused by name, and on CUDA (``gpu``) the
same agreement there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.optimize import check_grad

from calibkit.calibrators import Calibrator, create_calibrator
from calibkit.calibrators.logit import linear_device as dev
from calibkit.calibrators.logit import linear_solver as lin
from calibkit.core.errors import InputError
from tests.calibrators.problems import random_problem

CPU = torch.device("cpu")
#: Every calibrator of the linear solver (each declares ``device``).
FAMILY = ("vector", "matrix", "ms_odir", "dirichlet", "svs", "sms", "sms_cv")


def _weights(n: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.2, 3.0, size=n)


def _designs(
    n: int, k: int, weighted: bool, device: torch.device = CPU
) -> tuple[lin.Design, lin.Design]:
    z, y = random_problem(n, k)
    w = _weights(n) if weighted else None
    return lin.Design(z, y, w), lin.Design(z, y, w, device)


def _penalty_problem(
    k: int, shared: bool, centred: bool
) -> tuple[lin.Penalty, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2)
    coef = rng.uniform(0.0, 0.5, size=(k, k + 1))
    factor = rng.normal(size=(k + 1, k + 1) if shared else (k, k + 1, k + 1)) * 0.3
    factor += np.eye(k + 1)
    centre = lin.temperature_map(k, 0.5) if centred else None
    start = lin.identity_map(k) + rng.normal(size=(k, k + 1)) * 0.1
    return lin.Penalty(coef, factor, centre), start, rng.normal(size=k * (k + 1)) * 0.2


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shared", [False, True], ids=["per-class", "shared"])
@pytest.mark.parametrize("centred", [False, True])
def test_full_objective_is_the_numpy_objective(weighted: bool, shared: bool, centred: bool) -> None:
    k = 6
    numpy_design, device_design = _designs(400, k, weighted)
    pen, start, u = _penalty_problem(k, shared, centred)
    want_value, want_grad = lin.full_objective(numpy_design, pen, start)(u)
    centre = None if pen.centre is None else torch.from_numpy(pen.centre)
    objective = dev.full_objective(
        device_design.on_device,  # type: ignore[arg-type]
        torch.from_numpy(pen.coef),
        torch.from_numpy(pen.factor),
        centre,
        torch.from_numpy(start),
    )

    def on_numpy(v: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = objective(torch.from_numpy(v))
        return value, grad.numpy()

    value, grad = on_numpy(u)
    assert value == pytest.approx(want_value, rel=1e-10)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-8, atol=1e-11)
    assert check_grad(lambda v: on_numpy(v)[0], lambda v: on_numpy(v)[1], u) < 1e-6


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shared", [False, True], ids=["per-class", "shared"])
def test_a_full_fit_on_the_device_reaches_the_numpy_optimum(weighted: bool, shared: bool) -> None:
    """torch's L-BFGS on the device and scipy's L-BFGS-B on the CPU: the same convex
    problem, the same minimum (objective to 1e-10, the map to 1e-6)."""
    k = 5
    numpy_design, device_design = _designs(600, k, weighted)
    pen, start, _ = _penalty_problem(k, shared, centred=True)
    nll0 = numpy_design.nll(start)
    want_wb, want_nll = lin.fit_full(numpy_design, pen, start, nll0, 500, 1e-14)
    wb, got_nll = lin.fit_full(device_design, pen, start, nll0, 500, 1e-14)
    assert got_nll + pen(wb) == pytest.approx(want_nll + pen(want_wb), rel=1e-10)
    np.testing.assert_allclose(wb, want_wb, atol=1e-6)
    assert got_nll == pytest.approx(device_design.nll(wb), rel=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_diagonal_products_are_the_numpy_ones(weighted: bool) -> None:
    k = 7
    a, b = _designs(500, k, weighted)
    rng = np.random.default_rng(3)
    wb = lin.identity_map(k) * 0.7 + rng.normal(size=(k, k + 1)) * 0.1
    assert b.nll(wb) == pytest.approx(a.nll(wb), rel=1e-10)
    w, bias = rng.uniform(0.3, 1.5, k), rng.normal(size=k) * 0.2
    want = lin.diagonal_pass(a.x_rows, a.labels, a.weights, w, bias)
    got = dev.diagonal_pass(b.on_device, w, bias)  # type: ignore[arg-type]
    assert got[0] == pytest.approx(want[0], rel=1e-10)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(
        dev.diagonal_curvature(b.on_device, w, bias),  # type: ignore[arg-type]
        lin.diagonal_curvature(a.x_rows, a.weights, w, bias),
        rtol=1e-8,
        atol=1e-11,
    )


@pytest.mark.parametrize(("n", "k"), [(600, 8), (20, 9)], ids=["blocks", "one-matrix"])
def test_curvature_is_the_numpy_curvature(n: int, k: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both branches (one block per class; one shared matrix when (K+1)^2 > 4 N), the
    per-class blocks in several row chunks."""
    monkeypatch.setattr(lin, "CURVATURE_CHUNK", 1000)
    a, b = _designs(n, k, weighted=False)
    for floor, c in ((1e-3, 1.0), (1e-2, 0.4)):
        want = lin.curvature(a, floor, c)
        np.testing.assert_allclose(lin.curvature(b, floor, c), want, rtol=1e-8, atol=1e-11)
    assert want.ndim == (3 if n == 600 else 2)


def test_subsets_stay_on_the_device() -> None:
    z, y = random_problem(50, 3)
    d = lin.Design(z, y, None, CPU).subset(np.arange(10))
    assert d.device == CPU
    assert d.on_device is not None
    assert d.on_device.x1.shape == (10, 4)
    assert lin.Design(z, y).on_device is None


def _fit_both(
    name: str, device: str, z: np.ndarray, y: np.ndarray, w: np.ndarray | None
) -> tuple[object, object]:
    params = {"n_folds": 3} if name not in ("svs", "sms") else {}
    a = create_calibrator(name, **params).fit(z, y, w)
    b = create_calibrator(name, device=device, **params).fit(z, y, w)
    return a, b


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", FAMILY)
def test_every_family_fits_the_same_map_on_a_torch_device(name: str, weighted: bool) -> None:
    """Same data, same search: torch's float64 products (and, for a full map, torch's
    L-BFGS) on the CPU choose the numpy fit's penalty and reach its map to the optimisers'
    tolerance (near the structured scalings' flat optima, L-BFGS stops 3e-12 from the
    minimum, and the probabilities of the two fits differ by up to 3e-6)."""
    z, y = random_problem(900, 5, seed=4)
    w = _weights(900) if weighted else None
    a, b = _fit_both(name, "cpu", z, y, w)
    for attr in ("reg_lambda_", "shrink_strength_", "reg_scale_"):
        assert getattr(a, attr, None) == getattr(b, attr, None)
    np.testing.assert_allclose(b.predict_proba(z), a.predict_proba(z), atol=1e-5)  # type: ignore[attr-defined]
    assert b.get_params()["device"] == "cpu"  # type: ignore[attr-defined]


def test_the_device_is_a_declared_parameter_kept_by_the_document(tmp_path: Path) -> None:
    z, y = random_problem(300, 3)
    fitted = create_calibrator("dirichlet", device="cpu", reg_lambda=1.0).fit(z, y)
    path = tmp_path / "dir.json"
    fitted.save(path)
    again = Calibrator.load(path)
    assert again.get_params()["device"] == "cpu"
    np.testing.assert_array_equal(again.predict_proba(z), fitted.predict_proba(z))
    with pytest.raises(InputError, match="device"):
        create_calibrator("ms_odir", device="gpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_this_machine_lacks_is_refused_by_name_at_fit() -> None:
    z, y = random_problem(300, 3)
    cal = create_calibrator("vector", device="cuda")  # a name is checked, not the machine
    with pytest.raises(InputError, match=r"^device: .*no CUDA here"):
        cal.fit(z, y)
    assert not cal.is_fitted


@pytest.mark.gpu
@pytest.mark.parametrize("name", FAMILY)
def test_every_family_fits_the_same_map_on_cuda(name: str) -> None:
    z, y = random_problem(3000, 20, seed=5)
    a, b = _fit_both(name, "cuda", z, y, _weights(3000))
    np.testing.assert_allclose(b.predict_proba(z), a.predict_proba(z), atol=1e-5)  # type: ignore[attr-defined]
