"""Every calibrator's torch module gives its predict_proba: eager, scripted, exported, ONNX.

Each registered calibrator is fitted on a small seeded problem (two classes for the binary
methods), turned into a module by ``to_module()``, and run four ways; every way must give
the calibrator's ``predict_proba`` to 1e-6. The exported graphs are traced on 8 rows and run
on 200 (the batch dimension is dynamic). The piecewise maps' bin and interpolation rules are
checked against :mod:`calibkit.core.binning` and ``np.interp`` on the edges themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from calibkit.calibrators import CALIBRATORS, CalibratedModel, Calibrator, get_calibrator
from calibkit.calibrators.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.modules import Interpolation, StepMaps, Temperature, bin_of
from calibkit.core.binning import bin_index, index_from_edges
from calibkit.core.errors import InputError, NotFittedError
from calibkit.core.outputs import ClassifierOutputs
from tests.calibrators.clamping.problems import problem as clamping_problem
from tests.calibrators.problems import random_problem

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

TOLERANCE = 1e-6


@functools.cache
def fitted(name: str) -> tuple[Calibrator, torch.Tensor]:
    """``name`` fitted on 300 seeded rows, and 200 other rows of logits to calibrate."""
    k = 2 if CALIBRATORS.get(name).binary_only else 4
    z, y = random_problem(500, k, seed=3)
    return get_calibrator(name).fit(z[:300], y[:300]), torch.tensor(z[300:])


def _eager(module: nn.Module, x: torch.Tensor, tmp_path: Path) -> np.ndarray:
    with torch.no_grad():
        return np.asarray(module(x).numpy())


def _script(module: nn.Module, x: torch.Tensor, tmp_path: Path) -> np.ndarray:
    return _eager(torch.jit.script(module), x, tmp_path)


def _export(module: nn.Module, x: torch.Tensor, tmp_path: Path) -> np.ndarray:
    batch = {0: torch.export.Dim("batch")}
    program = torch.export.export(module, (x[:8],), dynamic_shapes=(batch,))
    return _eager(program.module(), x, tmp_path)


def _onnx(module: nn.Module, x: torch.Tensor, tmp_path: Path) -> np.ndarray:
    onnxruntime = pytest.importorskip("onnxruntime")
    path = tmp_path / "calibration.onnx"
    batch = {0: torch.export.Dim("batch")}
    program = torch.onnx.export(
        module, (x[:8],), dynamo=True, dynamic_shapes=(batch,), verbose=False
    )
    assert program is not None
    program.save(str(path))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {session.get_inputs()[0].name: x.numpy()})[0])


PATHS: dict[str, Callable[[nn.Module, torch.Tensor, Path], np.ndarray]] = {
    "eager": _eager,
    "script": _script,
    "export": _export,
    "onnx": _onnx,
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", CALIBRATORS.names())
def test_module_gives_predict_proba(name: str, path: str, tmp_path: Path) -> None:
    calibrator, x = fitted(name)
    probs = PATHS[path](calibrator.to_module(), x, tmp_path)
    expected = calibrator.predict_proba(x)
    assert probs.dtype == np.float64
    assert probs.shape == expected.shape
    assert np.abs(probs - expected).max() <= TOLERANCE


def test_float32_logits_give_float64_probabilities() -> None:
    calibrator, x = fitted("histogram")
    probs = calibrator.to_module()(x.float())
    assert probs.dtype == torch.float64
    expected = calibrator.predict_proba(x.float().numpy())
    assert np.abs(probs.numpy() - expected).max() <= TOLERANCE


def test_auto_exports_its_chosen_method() -> None:
    auto, _ = fitted("auto")
    assert type(auto.to_module()) is type(auto.chosen.to_module())  # type: ignore[attr-defined]


# ----- the piecewise rules, on the edges themselves --------------------------------------------
def _on_and_beside(values: np.ndarray) -> np.ndarray:
    """``values`` and their float neighbours on both sides, within [0, 1]."""
    near = np.concatenate([values, np.nextafter(values, 0.0), np.nextafter(values, 1.0)])
    return np.clip(near, 0.0, 1.0)


@pytest.mark.parametrize("n_bins", [1, 10, 15, 100])
def test_equal_width_bins_follow_core_binning(n_bins: int) -> None:
    conf = _on_and_beside(np.concatenate([np.arange(n_bins + 1) / n_bins, [0.29, 0.3, 0.7]]))
    edges = bin_index(conf, n_bins)[1]
    inner = torch.tensor(edges[1:-1]).unsqueeze(0)
    idx = bin_of(torch.tensor(conf).unsqueeze(1), inner)[:, 0].numpy()
    assert idx.tolist() == index_from_edges(conf, edges).tolist()


def test_equal_mass_bins_follow_core_binning() -> None:
    fit_conf = np.random.default_rng(0).uniform(size=200).round(2)  # many ties
    _, edges, _ = bin_index(fit_conf, 10, scheme="equal_mass")
    conf = _on_and_beside(np.concatenate([edges, fit_conf]))
    maps = StepMaps(edges, np.ones(10, dtype=np.int64), np.arange(10) / 10)
    mapped = maps(torch.tensor(conf).unsqueeze(1))[:, 0].numpy()
    assert mapped.tolist() == (index_from_edges(conf, edges, "equal_mass") / 10).tolist()


def test_empty_bins_keep_the_score() -> None:
    maps = StepMaps(np.array([0.0, 0.5, 1.0]), np.array([0, 3]), np.array([0.0, 0.9]))
    score = torch.tensor([[0.2], [0.5], [1.0]], dtype=torch.float64)
    assert maps(score)[:, 0].tolist() == [0.2, 0.9, 0.9]


def test_interpolation_is_np_interp() -> None:
    xs = [np.array([0.1, 0.2, 0.7, 0.8]), np.array([0.4]), np.array([0.0, 0.5, 1.0])]
    ys = [np.array([0.0, 0.5, 0.5, 1.0]), np.array([0.3]), np.array([0.1, 0.2, 0.9])]
    score = _on_and_beside(np.concatenate([*xs, np.linspace(0.0, 1.0, 41)]))
    mapped = Interpolation(xs, ys)(torch.tensor(np.column_stack([score] * 3))).numpy()
    for i, (xp, fp) in enumerate(zip(xs, ys, strict=True)):
        assert np.abs(mapped[:, i] - np.interp(score, xp, fp)).max() <= 1e-15


# ----- CalibratedModel ------------------------------------------------------------------------
def _classifier() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return nn.Linear(5, 4).eval(), torch.randn(200, 5)


@pytest.mark.parametrize("name", ["dirichlet", "isotonic"])
def test_calibrated_model_gives_predict_proba(name: str, tmp_path: Path) -> None:
    model, x = _classifier()
    calibrator, _ = fitted(name)
    with torch.no_grad():
        expected = calibrator.predict_proba(model(x).numpy())
    wrapped = CalibratedModel(model, calibrator).eval()
    for path in PATHS.values():
        assert np.abs(path(wrapped, x, tmp_path) - expected).max() <= TOLERANCE
    of_module = CalibratedModel(model, calibrator.to_module())
    assert np.abs(_eager(of_module, x, tmp_path) - expected).max() <= TOLERANCE


def test_calibrated_model_deploys_neural_clamping(tmp_path: Path) -> None:
    model, x, y = clamping_problem()
    nc = NeuralClamping(model, init="random", sgd=SGDSettings(epochs=2, progress=False)).fit(x, y)
    deployed = nc.to_module().eval()
    assert isinstance(deployed, CalibratedModel)
    for path in PATHS.values():
        assert np.abs(path(deployed, x, tmp_path) - nc.predict_proba(x)).max() <= TOLERANCE


def test_calibrated_model_refuses_what_it_cannot_wrap() -> None:
    model, _ = _classifier()
    with pytest.raises(InputError, match="calibrator"):
        CalibratedModel(model, "temperature")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="model"):
        CalibratedModel(lambda x: x, Temperature(1.0))  # type: ignore[arg-type]
    with pytest.raises(NotFittedError):
        CalibratedModel(model, get_calibrator("temperature"))
    with pytest.raises(NotFittedError):
        get_calibrator("isotonic").to_module()


def test_a_calibrator_without_a_module_says_so() -> None:
    class Shifted(Calibrator):  # an unregistered calibrator with no to_module
        maps_logits = True

        def _fit(self, out: ClassifierOutputs) -> None:
            return None

        def _transform(self, logits: np.ndarray) -> np.ndarray:
            return logits + 1.0

    shifted = Shifted().fit([[1.0, 0.0], [0.0, 1.0]], [0, 1])
    with pytest.raises(InputError, match="torch module"):
        shifted.to_module()
