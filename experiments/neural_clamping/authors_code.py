"""The authors' Neural Clamping code (NCToolkit), loaded from a clone the user fetched.

NCToolkit (github.com/yungchentang/NCToolkit, last changed in 2022; the commit checked
here is cdbb0a0) is never copied into this repository: :func:`load_authors_code` imports
``neural_clamping.nc_wrapper`` from the folder given as ``--authors-code``, under a private
package name (so it can never clash with this folder, ``experiments.neural_clamping``),
with two shims and no edit of their files:

- **torchvision**: their ``utils.py`` imports torchvision at module level (for its dataset
  loaders, transforms and ImageNet models, none of which the driver uses) and builds
  ``transforms.Compose(...)`` objects on import. torchvision is not a dependency of
  calibkit, so while their modules import, a stand-in package answers those imports; a
  stand-in object fails loudly if anything *calls* it. The stand-in is removed from
  ``sys.modules`` right after the import (a real torchvision, when installed, is used as it is).
- **.cuda()**: their wrapper calls ``.cuda()`` on the model, the tensors and the loss
  modules unconditionally. On a machine without CUDA, :func:`cpu_cuda` makes
  ``nn.Module.cuda`` and ``Tensor.cuda`` return their object unchanged while their code
  runs (and restores them after). The driver runs both codes on the CPU, so it applies
  this shim on a machine with CUDA too (``force``): a GPU path is not built yet.

A folder that is not NCToolkit, or whose wrapper's API differs from the one the driver
drives (:data:`NEEDED`), is refused with one :class:`AuthorsCodeError` naming
``--authors-code``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import sys
import types
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from calibkit.core.errors import InputError

ARGUMENT = "--authors-code"
URL = "https://github.com/yungchentang/NCToolkit"
COMMIT = "cdbb0a0"
WRAPPER = Path("neural_clamping") / "nc_wrapper.py"
#: What the driver calls, by name: the wrapper's constructor and methods with their parameters.
NEEDED: dict[str, tuple[str, ...]] = {
    "__init__": (
        "model",
        "num_classes",
        "lambda_0",
        "lambda_1",
        "image_size",
        "init_scale",
        "init_temp",
        "device_ids",
    ),
    "train_NC": ("val_loader", "epoch", "lr", "momentum", "verbose", "focal_loss", "gamma"),
    "forward": ("input",),
}


class AuthorsCodeError(InputError):
    """``--authors-code`` is not a usable clone of NCToolkit (the message says why)."""

    def __init__(self, got: str) -> None:
        super().__init__(ARGUMENT, f"the folder of a clone of NCToolkit ({URL})", got)


@dataclass(frozen=True)
class AuthorsCode:
    """The authors' loaded modules: ``NCWrapper`` and their ``utils`` (``FocalLoss``, ``ECE``)."""

    path: Path
    NCWrapper: Any
    utils: types.ModuleType


class _Absent:
    """A torchvision object the stand-in only names: any use fails with the reason."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __call__(self, *args: object, **kwargs: object) -> _Absent:
        if self._name.startswith("torchvision.transforms."):
            return _Absent(self._name + "()")  # built on import by their utils.py: harmless
        raise RuntimeError(f"{self._name}: torchvision is stood in for by the driver (not used)")

    def __getattr__(self, attr: str) -> _Absent:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{self._name}.{attr}")


def _absent_attribute(module: str) -> Callable[[str], _Absent]:
    """A module-level ``__getattr__`` (PEP 562) naming every attribute as absent."""

    def get(attr: str) -> _Absent:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Absent(f"{module}.{attr}")

    return get


def _torchvision_stand_in() -> dict[str, types.ModuleType]:
    """Stand-in modules for ``torchvision`` and the submodules their ``utils.py`` imports."""
    modules = {}
    for name in (
        "torchvision",
        "torchvision.transforms",
        "torchvision.datasets",
        "torchvision.models",
    ):
        mod = types.ModuleType(name)
        setattr(mod, "__getattr__", _absent_attribute(name))  # noqa: B010 (PEP 562)
        modules[name] = mod
    for sub in ("transforms", "datasets", "models"):
        setattr(modules["torchvision"], sub, modules[f"torchvision.{sub}"])
    return modules


@contextlib.contextmanager
def _stand_in_torchvision() -> Iterator[None]:
    """While inside: ``import torchvision`` finds the stand-in, unless a real one exists."""
    if importlib.util.find_spec("torchvision") is not None:
        yield
        return
    stand_in = _torchvision_stand_in()
    sys.modules.update(stand_in)
    try:
        yield
    finally:
        for name in stand_in:
            sys.modules.pop(name, None)


@contextlib.contextmanager
def cpu_cuda(force: bool = False) -> Iterator[None]:
    """While inside, without CUDA (or with ``force``): ``Module.cuda()`` and
    ``Tensor.cuda()`` return their object (their code then runs on the CPU)."""
    if torch.cuda.is_available() and not force:
        yield
        return
    module_cuda, tensor_cuda = torch.nn.Module.cuda, torch.Tensor.cuda
    torch.nn.Module.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.cuda = module_cuda  # type: ignore[method-assign]
        torch.Tensor.cuda = tensor_cuda  # type: ignore[method-assign]


def _forget(name: str) -> None:
    """Remove the private package ``name`` and its modules from ``sys.modules``."""
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def _import_package(root: Path) -> tuple[types.ModuleType, types.ModuleType]:
    """Their ``neural_clamping`` package under a private name; its nc_wrapper and utils."""
    name = f"_nctoolkit_{uuid.uuid4().hex[:8]}"
    init = root / "neural_clamping" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        name, init, submodule_search_locations=[str(init.parent)]
    )
    if spec is None or spec.loader is None:
        raise AuthorsCodeError(f"'{root}' (its neural_clamping package cannot be loaded)")
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # their clone stays as is
    try:
        spec.loader.exec_module(package)
        with _stand_in_torchvision(), cpu_cuda(), warnings.catch_warnings():
            # their 2022 sources compile with invalid escapes in docstrings: not ours to flag
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)
            wrapper = importlib.import_module(f"{name}.nc_wrapper")
            utils = importlib.import_module(f"{name}.utils")
    except Exception as exc:  # their code, any failure: one line naming it
        _forget(name)
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise AuthorsCodeError(
            f"'{root}', whose neural_clamping.nc_wrapper fails to import "
            f"({type(exc).__name__}: {first})"
        ) from None
    finally:
        sys.dont_write_bytecode = bytecode
    return wrapper, utils


def _check_api(root: Path, wrapper: types.ModuleType, utils: types.ModuleType) -> None:
    """Refuse a wrapper whose class, methods or parameters differ from :data:`NEEDED`."""
    cls = getattr(wrapper, "NCWrapper", None)
    if not inspect.isclass(cls):
        raise AuthorsCodeError(f"'{root}', whose nc_wrapper.py has no class NCWrapper")
    for method, params in NEEDED.items():
        fn = getattr(cls, method, None)
        if not callable(fn):
            raise AuthorsCodeError(f"'{root}', whose NCWrapper has no method {method}")
        have = inspect.signature(fn).parameters
        missing = [p for p in params if p not in have]
        if missing:
            raise AuthorsCodeError(
                f"'{root}', whose NCWrapper.{method} lacks the parameter(s) {', '.join(missing)} "
                f"(another API than NCToolkit {COMMIT})"
            )
    if not callable(getattr(utils, "FocalLoss", None)):
        raise AuthorsCodeError(f"'{root}', whose neural_clamping.utils has no FocalLoss")


def load_authors_code(path: str | Path) -> AuthorsCode:
    """Import the authors' wrapper from the clone at ``path``, with the shims; check its API.

    Parameters
    ----------
    path : str or Path
        The folder of a clone of NCToolkit (holding ``neural_clamping/nc_wrapper.py``).

    Returns
    -------
    AuthorsCode
        Their ``NCWrapper`` class and ``utils`` module.

    Raises
    ------
    AuthorsCodeError
        A missing folder, one that is not NCToolkit, or one whose API differs.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise AuthorsCodeError(f"'{path}', which does not exist (git clone {URL})")
    if not root.is_dir():
        raise AuthorsCodeError(f"'{path}', which is not a folder")
    if not (root / WRAPPER).is_file():
        raise AuthorsCodeError(f"'{path}', which has no {WRAPPER.as_posix()} (not NCToolkit)")
    if not (root / "neural_clamping" / "__init__.py").is_file():
        raise AuthorsCodeError(f"'{path}', which has no neural_clamping/__init__.py")
    wrapper, utils = _import_package(root.resolve())
    try:
        _check_api(root, wrapper, utils)
    except AuthorsCodeError:
        _forget(wrapper.__name__.rpartition(".")[0])
        raise
    return AuthorsCode(root.resolve(), wrapper.NCWrapper, utils)
