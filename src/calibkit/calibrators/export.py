"""Export a calibration (or a classifier with it) for deployment, for any batch size.

``torch.export.export(module, (x,))`` and ``torch.onnx.export(module, (x,), path)`` fix every
dimension of the example: a file exported from a 1,000-row example refuses 7 rows ("Got: 7
Expected: 1000" in ONNX Runtime). :func:`export_program` and :func:`export_onnx` mark the
first dimension of every input (the rows) dynamic, so the program and the ONNX file take any
number of rows, and leave the other dimensions (the classes, an image's shape) as the
example has them. Either takes a module (a calibrator's ``to_module()``, a
:class:`~calibkit.calibrators.calibrated_model.CalibratedModel`, any ``nn.Module``) or a
fitted calibkit object (its ``to_module()`` is exported).

ONNX needs the ``onnx`` extra (``pip install 'calibkit[onnx]'``: ``onnx``, ``onnxscript``
and ``onnxruntime`` to run the file). The file is one ``.onnx`` (the weights inside it, no
``.onnx.data`` beside it), written by ``torch.onnx.export(..., dynamo=True)`` without its
progress lines.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.io.atomic import atomic_write_bytes

if TYPE_CHECKING:
    from torch.export import ExportedProgram

#: The name of the dynamic first dimension of every input.
BATCH = "batch"


def _module(module: object) -> nn.Module:
    """``module`` itself, or the ``to_module()`` of a fitted calibkit object."""
    if isinstance(module, nn.Module):
        return module
    to_module = getattr(module, "to_module", None)
    if callable(to_module):
        exported = to_module()
        if isinstance(exported, nn.Module):
            return exported
    expected = "a torch.nn.Module or a fitted calibkit object (with to_module())"
    raise InputError("module", expected, type(module).__name__)


def _example(example: object) -> tuple[Tensor, ...]:
    """The example inputs as a tuple of tensors with at least one row each (a single row
    repeated: torch.export takes a batch of 1 for a constant)."""
    inputs = example if isinstance(example, tuple) else (example,)
    if not inputs or not all(isinstance(t, Tensor) for t in inputs):
        expected = "a tensor of inputs (rows first), or a tuple of them"
        raise InputError("example", expected, type(example).__name__)
    if any(t.dim() == 0 or t.shape[0] == 0 for t in inputs):
        shapes = ", ".join(str(tuple(t.shape)) for t in inputs)
        raise InputError("example", "inputs with at least one row (rows first)", shapes)
    return tuple(torch.cat([t, t]) if t.shape[0] == 1 else t for t in inputs)


def _dynamic(inputs: tuple[Tensor, ...]) -> tuple[dict[int, Any], ...]:
    batch = torch.export.Dim(BATCH)
    return tuple({0: batch} for _ in inputs)


def export_program(module: object, example: Tensor | tuple[Tensor, ...]) -> ExportedProgram:
    """``torch.export.export`` of ``module`` with the rows of every input dynamic.

    Parameters
    ----------
    module : nn.Module or fitted calibkit object
        What to export (a fitted object: its ``to_module()``).
    example : Tensor or tuple of Tensor
        Example inputs, rows first (their other dimensions are fixed).

    Returns
    -------
    torch.export.ExportedProgram
        Its ``module()`` takes any number of rows.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.calibrators import TemperatureScaling
    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    >>> program = export_program(TemperatureScaling().fit(z, [0, 1, 1, 1]), torch.tensor(z))
    >>> program.module()(torch.zeros(7, 2, dtype=torch.float64)).shape
    torch.Size([7, 2])
    """
    net = _module(module)
    inputs = _example(example)
    with _quiet():
        return torch.export.export(net, inputs, dynamic_shapes=_dynamic(inputs))


def export_onnx(module: object, example: Tensor | tuple[Tensor, ...], path: str | Path) -> Path:
    """Write ``module`` as an ONNX file at ``path`` that takes any number of rows.

    Parameters
    ----------
    module : nn.Module or fitted calibkit object
        What to export (a fitted object: its ``to_module()``).
    example : Tensor or tuple of Tensor
        Example inputs, rows first (their other dimensions are fixed). The ONNX inputs are
        named as ``forward``'s arguments.
    path : str or Path
        The ``.onnx`` file written (one file, replaced if it exists; a symbolic link, a
        FIFO, a device or a folder there is refused, as
        :func:`~calibkit.io.atomic.atomic_write_bytes` refuses them).

    Returns
    -------
    Path
        ``path``.

    Examples
    --------
    >>> import tempfile, numpy as np, onnxruntime
    >>> from calibkit.calibrators import TemperatureScaling
    >>> z = np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 2.0]])
    >>> ts = TemperatureScaling().fit(z, [0, 1, 1, 1])
    >>> path = export_onnx(ts, torch.tensor(z), tempfile.mkdtemp() + "/ts.onnx")
    >>> session = onnxruntime.InferenceSession(path)
    >>> session.run(None, {"logits": np.zeros((7, 2))})[0].shape
    (7, 2)
    """
    net = _module(module)
    inputs = _example(example)
    target = Path(path)
    try:
        import onnxscript  # noqa: F401  (torch.onnx's dynamo exporter needs it)
    except ImportError:
        raise ImportError(
            "export_onnx needs onnx and onnxscript: pip install 'calibkit[onnx]'"
        ) from None
    with _quiet():
        program = torch.onnx.export(
            net,
            inputs,
            dynamo=True,
            dynamic_shapes=_dynamic(inputs),
            external_data=False,
            verbose=False,
        )
    assert program is not None
    # written as every calibkit output is: never through a link, over a FIFO, a device or
    # a folder (program.save(path) opens the path itself)
    atomic_write_bytes(target, program.model_proto.SerializeToString())
    return target


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Without the exporters' notes that are not about the caller's module: torch.onnx's
    log lines on torchvision's operators (not installed, not used) and the FutureWarning
    its pytree code raises about its own ``LeafSpec``."""
    logger = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*treespec, LeafSpec.*", FutureWarning)
            yield
    finally:
        logger.setLevel(level)
