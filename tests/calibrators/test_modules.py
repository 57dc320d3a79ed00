"""Every calibrator's torch module gives its predict_proba: eager, scripted, exported, ONNX.

Each registered calibrator is fitted on a small seeded problem (two classes for the binary
methods), turned into a module by ``to_module()``, and run four ways; every way must give
the calibrator's ``predict_proba`` to 1e-6, on 200 new rows and on the 300 calibration rows
themselves (whose scores sit exactly on Venn-Abers scores and equal-mass edges: ties). The
exported graphs are traced on 8 rows and run on 500 (the batch dimension is dynamic).
Every module refuses a shape ``predict_proba`` refuses, in each way, and gives a NaN row for
a NaN row. The piecewise maps' bin and interpolation rules are
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

from calibkit.calibrators import CALIBRATORS, CalibratedModel, Calibrator, create_calibrator
from calibkit.calibrators.export import export_onnx, export_program
from calibkit.calibrators.model.clamping import NeuralClamping, SGDSettings
from calibkit.calibrators.modules import (
    CheckedLogits,
    Interpolation,
    StepMaps,
    Temperature,
    bin_of,
    snap_to,
)
from calibkit.core.binning import bin_index, index_from_edges
from calibkit.core.errors import InputError, NotFittedError
from calibkit.core.outputs import ClassifierOutputs
from tests.calibrators.model.clamping.problems import problem as clamping_problem
from tests.calibrators.problems import random_problem

pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

TOLERANCE = 1e-6


#: Settings besides the defaults whose modules differ: equal-mass edges, Platt's scaler.
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    "histogram-equal_mass": ("histogram", {"scheme": "equal_mass"}),
    "histogram_classwise-equal_mass": ("histogram_classwise", {"scheme": "equal_mass"}),
    "scaling_binning-platt": ("scaling_binning", {"scaler": "platt"}),
}
#: Calibrators of logits (the group calibrators without groups: their global map; with
#: group codes in test_contract.py, as conformal sets and prior adapters); those that take
#: the model deploy as a CalibratedModel, checked on the same paths by
#: test_calibrated_model_deploys_neural_clamping.
LOGIT_NAMES = CALIBRATORS.names(kind=("logits", "groups"))
CASES = [*LOGIT_NAMES, *VARIANTS]


@functools.cache
def fitted(case: str) -> tuple[Calibrator, torch.Tensor]:
    """``case`` (a name or a :data:`VARIANTS` key) fitted on 300 seeded rows, and the 500
    rows of logits to calibrate: the 300 calibration rows, then 200 others."""
    name, params = VARIANTS.get(case, (case, {}))
    k = 2 if CALIBRATORS.get(name).binary_only else 4
    z, y = random_problem(500, k, seed=3)
    return create_calibrator(name, **params).fit(z[:300], y[:300]), torch.tensor(z)


#: A module's input: one tensor, or several (a group calibrator's logits and group codes);
#: each has the rows in its first dimension.
Inputs = torch.Tensor | tuple[torch.Tensor, ...]


def _tuple(x: Inputs) -> tuple[torch.Tensor, ...]:
    return x if isinstance(x, tuple) else (x,)


def _eager(module: nn.Module, x: Inputs, tmp_path: Path) -> np.ndarray:
    with torch.no_grad():
        return np.asarray(module(*_tuple(x)).numpy())


def _script(module: nn.Module, x: Inputs, tmp_path: Path) -> np.ndarray:
    return _eager(torch.jit.script(module), x, tmp_path)


def _export(module: nn.Module, x: Inputs, tmp_path: Path) -> np.ndarray:
    """Through calibkit's exporter (the rows dynamic), from 8 rows, run on all of them."""
    program = export_program(module, tuple(t[:8] for t in _tuple(x)))
    return _eager(program.module(), x, tmp_path)


def _onnx(module: nn.Module, x: Inputs, tmp_path: Path) -> np.ndarray:
    """Through calibkit's exporter (the rows dynamic), from 8 rows, run on all of them."""
    onnxruntime = pytest.importorskip("onnxruntime")
    path = export_onnx(module, tuple(t[:8] for t in _tuple(x)), tmp_path / "calibration.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calibration.onnx"]  # one file
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feeds = dict(zip(names, (t.numpy() for t in _tuple(x)), strict=True))
    return np.asarray(session.run(None, feeds)[0])


#: The four ways to run a module: eager, TorchScript, torch.export, ONNX Runtime.
PATHS: dict[str, Callable[[nn.Module, Inputs, Path], np.ndarray]] = {
    "eager": _eager,
    "script": _script,
    "export": _export,
    "onnx": _onnx,
}
#: The paths as parameters: torch.export and ONNX Runtime are the integration tier (three
#: quarters of this file's time), eager and TorchScript the unit tier.
PATH_PARAMS = [
    pytest.param(name, marks=pytest.mark.integration) if name in ("export", "onnx") else name
    for name in PATHS
]


@pytest.mark.parametrize("path", PATH_PARAMS)
@pytest.mark.parametrize("case", CASES)
def test_module_gives_predict_proba(case: str, path: str, tmp_path: Path) -> None:
    calibrator, x = fitted(case)
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
    module, chosen = auto.to_module(), auto.chosen.to_module()  # type: ignore[attr-defined]
    assert type(module.calibration) is type(chosen.calibration)


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


def test_deployed_neural_clamping_gives_a_nan_row_for_a_nan_input_row() -> None:
    model, x, y = clamping_problem()
    nc = NeuralClamping(model, init="random", sgd=SGDSettings(epochs=1, progress=False)).fit(x, y)
    x = x[:6].clone()
    x[2] = float("nan")
    with torch.no_grad():
        probs = nc.to_module().eval()(x).numpy()
    assert np.isnan(probs[2]).all()
    assert np.isfinite(np.delete(probs, 2, axis=0)).all()
    assert isinstance(nc.to_module().calibration, CheckedLogits)


def test_calibrated_model_refuses_what_it_cannot_wrap() -> None:
    model, _ = _classifier()
    with pytest.raises(InputError, match="calibrator"):
        CalibratedModel(model, "temperature")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="model"):
        CalibratedModel(lambda x: x, Temperature(1.0))  # type: ignore[arg-type]
    with pytest.raises(NotFittedError):
        CalibratedModel(model, create_calibrator("temperature"))
    with pytest.raises(NotFittedError):
        create_calibrator("isotonic").to_module()


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


# ----- the input contract: shapes and NaN -----------------------------------------------------
def _wrong_shapes(k: int) -> list[torch.Tensor]:
    """Batches ``predict_proba`` refuses: one column, a 3-D batch, one class too many, and
    a 1-D batch unless the problem is binary."""
    shapes = [(6, 1), (2, 6, k), (6, k + 1)] + ([] if k == 2 else [(6,)])
    return [torch.zeros(shape, dtype=torch.float64) for shape in shapes]


@pytest.mark.parametrize("name", LOGIT_NAMES)
def test_a_module_refuses_what_predict_proba_refuses(name: str) -> None:
    """A 4-class vector module used to broadcast (N, 1) logits into rows summing to 1, and
    3-D batches into rows summing to 0.67-2.2."""
    calibrator, x = fitted(name)
    module, k = calibrator.to_module(), calibrator.n_classes_
    scripted = torch.jit.script(module)
    batch = {0: torch.export.Dim("batch")}
    exported = torch.export.export(module, (x[:8],), dynamic_shapes=(batch,)).module()
    for bad in _wrong_shapes(k):
        with pytest.raises(InputError, match=rf"logits: expected logits of shape \(N, {k}\)"):
            module(bad)
        with pytest.raises(InputError):
            calibrator.predict_proba(bad.numpy())
        with pytest.raises(torch.jit.Error, match=rf"expected logits of shape \(N, {k}\)"):
            scripted(bad)
        # the exported program's guards on the traced shape: an AssertionError naming the
        # size, or an IndexError for a lower rank (torch's own messages)
        with pytest.raises((AssertionError, RuntimeError, IndexError)):
            exported(bad)


@pytest.mark.parametrize("name", [n for n in LOGIT_NAMES if n != "auto"])
def test_a_binary_module_takes_the_1d_layout_predict_proba_takes(name: str) -> None:
    """Fitted on 1-D positive-class logits (the documented binary layout), the module takes
    them too (it crashed) and refuses (N, 1) (it returned [1.0])."""
    z, y = random_problem(300, 2, seed=4)
    positive = z[:, 1] - z[:, 0]
    calibrator = create_calibrator(name).fit(positive[:200], y[:200])
    expected = calibrator.predict_proba(positive)
    for module in (calibrator.to_module(), torch.jit.script(calibrator.to_module())):
        probs = module(torch.tensor(positive)).numpy()
        assert probs.shape == (300, 2)
        assert np.abs(probs - expected).max() <= TOLERANCE
        with pytest.raises((InputError, torch.jit.Error), match=r"\(N, 2\) or \(N,\)"):
            module(torch.tensor(positive)[:, None])


@pytest.mark.parametrize("path", PATH_PARAMS)
@pytest.mark.parametrize("case", CASES)
def test_a_nan_row_gives_a_nan_row(case: str, path: str, tmp_path: Path) -> None:
    """venn_abers, isotonic_centred, spline and scaling_binning used to turn a NaN row into
    plausible finite probabilities; now every module gives NaN there, the other rows as
    before (an infinite logit, which predict_proba refuses too, gives NaN as well)."""
    calibrator, x = fitted(case)
    x = x[290:310].clone()  # calibration rows and new ones
    x[3, 0], x[7, :], x[11, -1] = float("nan"), float("nan"), float("inf")
    probs = PATHS[path](calibrator.to_module(), x, tmp_path)
    bad = np.zeros(x.shape[0], dtype=bool)
    bad[[3, 7, 11]] = True
    assert np.isnan(probs[bad]).all()
    assert np.isfinite(probs[~bad]).all()
    expected = calibrator.predict_proba(x[~bad].numpy())
    assert np.abs(probs[~bad] - expected).max() <= TOLERANCE


def test_onnx_runtime_refuses_a_wrong_shape(tmp_path: Path) -> None:
    onnxruntime = pytest.importorskip("onnxruntime")
    calibrator, x = fitted("vector")
    _onnx(calibrator.to_module(), x, tmp_path)  # writes calibration.onnx
    session = onnxruntime.InferenceSession(
        str(tmp_path / "calibration.onnx"), providers=["CPUExecutionProvider"]
    )
    name = session.get_inputs()[0].name
    for bad in _wrong_shapes(4)[:3]:
        with pytest.raises(Exception, match=r"(?i)dimension|rank"):
            session.run(None, {name: bad.numpy()})


def test_ties_on_stored_scores_are_snapped() -> None:
    """A score a few units in the last place from a stored calibration score or edge is
    placed on it (what torch's and ONNX Runtime's exp and log do to a calibration row's own
    score); scores farther away are not."""
    stored = torch.tensor([[0.25, 0.5, 0.75]], dtype=torch.float64)
    near = np.nextafter(np.nextafter(0.5, 0.0), 0.0)  # two units below 0.5
    score = torch.tensor([[near], [0.5 - 1e-9], [0.5], [0.9]], dtype=torch.float64)
    assert snap_to(score, stored)[:, 0].tolist() == [0.5, 0.5 - 1e-9, 0.5, 0.9]
    assert snap_to(score, stored[:, :0])[:, 0].tolist() == score[:, 0].tolist()  # no edges
