"""calibkit's exporters take any number of rows (issue #46, item 1).

``torch.onnx.export(deployed, (x,), ...)`` from the README's 1,000-row example made a file
that ONNX Runtime refused 7 rows with ("Got: 7 Expected: 1000"); ``export_onnx`` and
``export_program`` mark the rows of every input dynamic. Every calibrator's module goes
through them in ``tests/calibrators/test_modules.py`` (exported from 8 rows, run on 500).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import calibkit as ck
from calibkit.core.errors import InputError

onnxruntime = pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def deployed() -> tuple[nn.Module, torch.Tensor]:
    """A classifier of 20 features, 10 classes, behind temperature scaling fitted on its
    outputs for 1,000 rows, and those rows."""
    torch.manual_seed(0)
    model = nn.Linear(20, 10).eval()
    x = torch.randn(1000, 20)
    with torch.no_grad():
        logits = model(x) * 4
        y = torch.distributions.Categorical(logits=logits / 2).sample()
        ts = ck.TemperatureScaling().fit(logits, y)
    return ck.CalibratedModel(nn.Sequential(model, _Scale(4.0)), ts).eval(), x


class _Scale(nn.Module):
    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z * self.factor


@pytest.mark.parametrize("rows", [7, 1, 1000, 2500])
def test_the_onnx_file_of_a_1000_row_example_takes_any_number_of_rows(
    deployed: tuple[nn.Module, torch.Tensor], rows: int, tmp_path: Path
) -> None:
    module, x = deployed
    path = ck.export_onnx(module, x, tmp_path / "calibrated.onnx")
    assert path == tmp_path / "calibrated.onnx"
    assert [p.name for p in tmp_path.iterdir()] == ["calibrated.onnx"]  # no .onnx.data
    session = onnxruntime.InferenceSession(str(path))
    batch = torch.randn(rows, 20)
    (probs,) = session.run(None, {session.get_inputs()[0].name: batch.numpy()})
    with torch.no_grad():
        expected = module(batch).numpy()
    assert probs.shape == (rows, 10)
    np.testing.assert_allclose(probs, expected, atol=1e-6)


def test_the_plain_export_of_the_readme_refused_7_rows(
    deployed: tuple[nn.Module, torch.Tensor], tmp_path: Path
) -> None:
    """What the README did before: the test above fails on its file."""
    module, x = deployed
    torch.onnx.export(module, (x,), str(tmp_path / "fixed.onnx"), dynamo=True, verbose=False)
    session = onnxruntime.InferenceSession(str(tmp_path / "fixed.onnx"))
    with pytest.raises(Exception, match="Got: 7 Expected: 1000"):
        session.run(None, {"x": x[:7].numpy()})


def test_the_program_takes_any_number_of_rows_from_a_one_row_example(
    deployed: tuple[nn.Module, torch.Tensor],
) -> None:
    module, x = deployed
    program = ck.export_program(module, x[:1])  # a batch of 1 is not taken for a constant
    for rows in (1, 7, 1000):
        assert torch.allclose(program.module()(x[:rows]), module(x[:rows]))


def test_a_fitted_calibrator_is_exported_through_its_module(tmp_path: Path) -> None:
    sim = ck.simulate(300, 4, shape="constant", gap=0.1, seed=0)  # overconfident outputs
    z, y = np.log(sim.probs), sim.labels
    for method in ("temperature", "histogram"):
        fitted = ck.create_calibrator(method).fit(z, y)
        path = ck.export_onnx(fitted, torch.tensor(z), tmp_path / f"{method}.onnx")
        session = onnxruntime.InferenceSession(str(path))
        (probs,) = session.run(None, {session.get_inputs()[0].name: z[:7]})
        np.testing.assert_allclose(probs, fitted.predict_proba(z[:7]), atol=1e-9)


@pytest.mark.parametrize(
    ("module", "example", "argument"),
    [
        ("temperature", torch.zeros(4, 2), "module"),
        (nn.Identity(), np.zeros((4, 2)), "example"),
        (nn.Identity(), torch.zeros(0, 2), "example"),
        (nn.Identity(), torch.tensor(1.0), "example"),
    ],
)
def test_bad_arguments_are_refused_by_name(
    module: object, example: object, argument: str, tmp_path: Path
) -> None:
    with pytest.raises(InputError, match=rf"^{argument}: expected "):
        ck.export_program(module, example)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=rf"^{argument}: expected "):
        ck.export_onnx(module, example, tmp_path / "m.onnx")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_the_onnx_file_is_never_written_through_a_link_nor_over_a_special_file(
    deployed: tuple[nn.Module, torch.Tensor], tmp_path: Path
) -> None:
    """export_onnx writes as every calibkit output does (issue #42): a link to the user's
    file is refused, not written through; a FIFO is refused, not written into (with no
    reader the run hung); an existing folder is one InputError, not IsADirectoryError."""
    module, x = deployed
    (tmp_path / "notes.txt").write_text("the user's")
    (tmp_path / "link.onnx").symlink_to("notes.txt")
    (tmp_path / "folder.onnx").mkdir()
    os.mkfifo(tmp_path / "pipe.onnx")
    reader = os.open(tmp_path / "pipe.onnx", os.O_RDONLY | os.O_NONBLOCK)  # no hang if not
    try:
        for name, why in [
            ("link.onnx", "a path that is not a symbolic link"),
            ("pipe.onnx", "a path that is not a special file"),
            ("folder.onnx", "a file path"),
        ]:
            with pytest.raises(InputError, match=f"^output: expected {why}"):
                ck.export_onnx(module, x, tmp_path / name)
        assert os.read(reader, 1) == b""
    finally:
        os.close(reader)
    assert (tmp_path / "notes.txt").read_text() == "the user's"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "folder.onnx",
        "link.onnx",
        "notes.txt",
        "pipe.onnx",
    ]
