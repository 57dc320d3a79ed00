"""The ``model`` kind of the one contract: calibrators that take the model and its inputs.

A :class:`ModelCalibrator` (Neural Clamping) is registered in the one
:data:`~calibkit.calibrators.fitted.CALIBRATORS` registry like every fitted object, of kind
``"model"`` (``needs_model``): consumers of saved logits (``compare``, ``calibkit methods``'
logit list, ``auto``, a study's ``calibrators``) leave such entries out, a study's
``input_calibrators`` takes only them. What differs from a logit calibrator (as
torch-uncertainty's ``PostProcessing(model)``, the model is a parameter):

- constructed as ``cls(model, **params)``; ``params`` are declared in
  ``param_constraints`` as for every calibrator (the model is not among them: it is not
  saved, the caller gives it again to ``load``), and
  ``create_calibrator(name, model=model, **params)`` builds one;
- ``fit(inputs, labels)`` and ``predict_proba(inputs)`` take the model's *inputs*; errors
  about them name ``inputs``;
- fitted state (``_`` attributes, checked on load against ``state_constraints``),
  ``NotFittedError``, ``get_params`` / ``set_params``, ``transform`` missing, as for the
  others; fitted *tensors* (:meth:`ModelCalibrator._tensors`, Neural Clamping's
  ``delta_``) are saved apart;
- deployment: :meth:`~calibkit.calibrators.base.Calibrator.input_module` and
  :meth:`~calibkit.calibrators.base.Calibrator.output_module` are what
  :class:`~calibkit.calibrators.calibrated_model.CalibratedModel` puts before and after
  the model; ``to_module()`` is that whole ``CalibratedModel``.

Persistence: ``save(path)`` writes two files beside each other, never pickle: the tensors
to ``path`` with suffix ``.safetensors`` and the one document
(:mod:`~calibkit.calibrators.persistence`, kind ``"model"``) to ``path`` with suffix
``.json``; the document names the tensor file and holds its sha256 (``tensors_file``,
``tensors_sha256``). ``calibkit.load(json_path, model=model)`` (or ``cls.load(path,
model)``, which takes either suffix or none) reads them back, bit-exact: the checksum, the
tensors and every field are checked, and a tampered or foreign pair raises one InputError
naming the file. :meth:`ModelCalibrator.to_json` is the same document with no tensor file
(``tensors_file`` null; the checksum is that of the tensors ``save`` would write): it
describes the fit, but cannot rebuild it, so ``load_document`` refuses it.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from abc import abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from calibkit.calibrators.base import F64, Calibrator
from calibkit.calibrators.fitted import CALIBRATORS, PostHoc
from calibkit.calibrators.persistence import (
    MAX_FILE_BYTES,
    TENSOR_KEYS,
    Document,
    decode,
    document,
    write_json_document,
)
from calibkit.core.errors import InputError
from calibkit.core.outputs import ClassifierOutputs
from calibkit.core.validation import check_params

if TYPE_CHECKING:
    from torch import Tensor, nn

    from calibkit.calibrators.calibrated_model import CalibratedModel


class ModelCalibrator(Calibrator):
    """Base of the calibrators that take the model and refit on its inputs (see the module).

    Examples
    --------
    >>> from calibkit.calibrators import CALIBRATORS
    >>> CALIBRATORS.names(kind="model")
    ['nc_ce', 'nc_fl', 'nc_fast', 'ts_focal']
    >>> issubclass(CALIBRATORS.get("nc_ce"), ModelCalibrator)
    True
    """

    kind: ClassVar[str] = "model"
    #: Parameters a registered variant fixes, whatever the caller gives.
    fixed_params: ClassVar[Mapping[str, Any]] = {}

    if TYPE_CHECKING:  # not a parameter (see PostHoc.n_classes_)

        @property
        def model(self) -> nn.Module: ...
        @model.setter
        def model(self, value: nn.Module) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        model = inspect.Parameter("model", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        keywords = [
            inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v)
            for k, v in cls.default_params().items()
        ]
        # the signature help() and inspect show: the model, then the declared keywords
        cls.__signature__ = inspect.Signature([model, *keywords])  # type: ignore[attr-defined]

    @classmethod
    def default_params(cls) -> dict[str, Any]:
        """Each declared parameter's default (the constructor's keywords)."""
        return {k: f.default for k, f in cls.declared_params.items()}

    @classmethod
    def create(cls, model: object, params: Mapping[str, Any], owner: str | None = None) -> Self:
        """A new ``cls`` of ``model`` with ``params`` checked against ``param_constraints``
        (an undeclared one is blamed on ``owner``, default the method's name)."""
        if model is None:
            raise InputError("model", f"the model that {cls.name!r} calibrates", "None")
        checked = check_params(cls.param_constraints, cls.split_params(params), owner or cls.name)
        return cls(model, **checked)  # type: ignore[call-arg]

    @classmethod
    def split_params(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """Flat parameters (as in a config) -> constructor keywords; identity here."""
        return dict(params)

    def set_params(self, **params: Any) -> Self:
        """Set declared parameters, checked as the constructor checks them (all or none)."""
        check_params(self.param_constraints, params, self.name)
        trial = type(self)(self.model, **{**self.get_params(), **params})  # type: ignore[call-arg]
        for name in params:
            setattr(self, name, getattr(trial, name))
        return self

    def __sklearn_clone__(self) -> Self:
        """``sklearn.base.clone``: a new, unfitted calibrator of the same parameters and
        model (the same object: never changed by a fit, and not a parameter)."""
        return type(self)(self.model, **self.get_params())  # type: ignore[call-arg]

    # ----- the contract, on inputs ----------------------------------------------------------
    def fit(  # type: ignore[override]  # the model's inputs, not logits
        self,
        inputs: object,
        labels: object = None,
        sample_weight: object = None,
        **metadata: object,
    ) -> Self:
        """Learn the calibration from the model's calibration ``inputs`` and ``labels``.

        Parameters
        ----------
        inputs : Tensor, array or ImageDataset
            Calibration inputs ``(N, ...)``; a dataset is normalised by the method's
            ``mean``/``std``.
        labels : array-like or None
            Class indices ``(N,)``; None: the dataset's labels.
        sample_weight : None
            Refused (a method that cannot weight samples), as by the logit calibrators.

        Returns
        -------
        Self
            ``self``, with its fitted attributes set (Neural Clamping's ``delta_``,
            ``temperature_``, ``gamma_`` and the others).
        """
        self._route(metadata)
        if sample_weight is not None:
            expected = f"None for {self.name!r}, a method that cannot weight samples"
            raise InputError("sample_weight", expected, "weights")
        with self._fit_or_unchanged():
            self._fit_inputs(inputs, labels)
        return self

    def predict_proba(self, inputs: object, **metadata: object) -> F64:  # type: ignore[override]
        """Calibrated probabilities of the model's ``inputs`` (float64, rows sum to 1)."""
        self._route(metadata)
        self.check_is_fitted()
        return self._predict_inputs(inputs)

    @abstractmethod
    def _fit_inputs(self, inputs: object, labels: object) -> None:
        """Fit on ``inputs`` and ``labels`` (sets the fitted ``_`` attributes)."""

    @abstractmethod
    def _predict_inputs(self, inputs: object) -> F64:
        """Calibrated probabilities of ``inputs`` (the calibrator is fitted)."""

    def _fit(self, out: ClassifierOutputs, weights: F64 | None = None) -> None:
        raise InputError("logits", f"inputs of the model for {self.name!r}", "logits")

    def to_module(self) -> CalibratedModel:
        """The model with its calibration built in, for deployment: inputs in, calibrated
        probabilities out (``CalibratedModel(model, self)``)."""
        from calibkit.calibrators.calibrated_model import CalibratedModel

        self.check_is_fitted()
        return CalibratedModel(self.model, self)

    # ----- persistence ----------------------------------------------------------------------
    #: The method a saved document names when ``name`` is not registered (a subclass used
    #: directly): a registered one that fixes no parameter, so the saved ones rebuild it.
    saved_as: ClassVar[str | None] = None

    @abstractmethod
    def _tensors(self) -> dict[str, Tensor]:
        """The fitted tensors, by their names in the tensor file (the rest of the fitted
        state is in the document)."""

    @abstractmethod
    def _set_tensors(self, tensors: dict[str, Tensor]) -> None:
        """Check and set the tensors read from a tensor file (an InputError naming the
        tensor for a wrong one)."""

    def _check_model(self) -> None:
        """Refuse, on load, a ``model`` the fitted state was not fitted for (an InputError
        naming ``model``: another number of classes, or inputs of another shape); called
        once the state and the tensors are set. Default: nothing to check."""
        return None

    @classmethod
    def _constructor_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        """A document's parameters -> constructor keywords (default: the same)."""
        return params

    def _saved_state(self) -> dict[str, Any]:
        """The fitted attributes the document holds (:meth:`fitted_constraints`, in their
        declared order; the tensors are in the tensor file)."""
        state = self.fitted_state()
        return {key: state[key] for key in self.fitted_constraints() if key in state}

    def _method(self) -> str:
        return self.name if self.name in CALIBRATORS or self.saved_as is None else self.saved_as

    def _document(self, tensors_file: str | None) -> tuple[dict[str, Any], bytes]:
        """The document naming ``tensors_file``, and the bytes of that tensor file."""
        from safetensors.torch import save

        self.check_is_fitted()
        self._check_fitted_with("")
        tensors = {k: t.detach().cpu().contiguous() for k, t in self._tensors().items()}
        data = save(tensors)
        doc = document(
            self.kind,
            self._method(),
            self._saved_params(),
            self._saved_state(),
            tensors_file=tensors_file,
            tensors_sha256=hashlib.sha256(data).hexdigest(),
        )
        return doc, data

    def to_json(self) -> dict[str, Any]:
        """The document :meth:`save` writes, with no tensor file (``tensors_file`` null,
        ``tensors_sha256`` that of the tensors): it describes the fit, and two fits with the
        same document are the same; rebuilding one takes the files :meth:`save` writes."""
        return self._document(None)[0]

    def save(self, path: str | Path) -> None:
        """Write the fitted tensors to ``path`` with suffix ``.safetensors`` and the document
        to ``path`` with suffix ``.json`` (each atomically; never pickle)."""
        from calibkit.io.atomic import atomic_write_bytes

        json_path, tensor_path = saved_paths(path)
        doc, data = self._document(tensor_path.name)
        atomic_write_bytes(tensor_path, data)
        write_json_document(json_path, doc)

    @classmethod
    def load(cls, path: str | Path, model: nn.Module | None = None) -> Self:
        """Read the files :meth:`save` wrote (``path`` with any suffix, or none), applied to
        ``model``; checked as ``calibkit.load`` checks them."""
        return super().load(saved_paths(path)[0], model)

    @classmethod
    def _from_document(
        cls, doc: Document, path: Path | None = None, model: object = None
    ) -> PostHoc:
        """A fitted ``cls`` of ``model`` from a parsed document and the tensor file beside
        ``path``: the checksum, the parameters, the state and the tensors checked."""
        if path is None:
            expected = (
                "the files save() wrote, read by calibkit.load(path, model=...): the tensors"
                " of a model calibrator are in a file beside its document"
            )
            raise InputError("document", expected, "the document alone")
        if model is None:
            expected = f"the torch.nn.Module the saved {cls.name!r} applies to (model=...)"
            raise InputError("model", expected, "None")
        tensor_path, tensors = _read_tensors(doc, path)
        params = decode(doc.params, "params")
        state = decode(doc.state, "state")
        if not isinstance(params, dict):
            raise InputError("params", "a mapping of parameters", type(params).__name__)
        given = check_params(
            cls.param_constraints, cls._constructor_params(params), "params", prefix="params."
        )
        try:
            obj = cls(model, **given)  # type: ignore[call-arg]
        except InputError as exc:  # the model, or a relation between parameters
            name = exc.argument if exc.argument == "model" else f"params.{exc.argument}"
            raise InputError(name, exc.expected, exc.got) from None
        for key in cls.fixed_params:  # a document of this method holds its fixed values
            if key in given and getattr(obj, key) != given[key]:
                expected = f"{getattr(obj, key)!r}, fixed by {cls.name!r}"
                raise InputError(f"params.{key}", expected, repr(given[key]))
        obj._load_state(state)
        try:
            obj._set_tensors(tensors)
        except InputError as exc:
            raise InputError(f"{tensor_path}: {exc.argument}", exc.expected, exc.got) from None
        obj._check_model()
        return obj


def saved_paths(path: str | Path) -> tuple[Path, Path]:
    """The document and the tensor file a model calibrator saved at ``path`` writes.

    >>> [p.name for p in saved_paths("runs/nc")]
    ['nc.json', 'nc.safetensors']
    """
    p = Path(path)
    return p.with_suffix(".json"), p.with_suffix(".safetensors")


def _read_tensors(doc: Document, path: Path) -> tuple[Path, dict[str, Tensor]]:
    """The tensor file the document at ``path`` names, and its tensors: a bare
    ``.safetensors`` name beside the document, at most :data:`MAX_FILE_BYTES`, of the
    document's sha256, a valid safetensors file (no pickle)."""
    from safetensors import SafetensorError
    from safetensors.torch import load

    name_key, sha_key = TENSOR_KEYS
    name, digest = doc.raw.get(name_key), doc.raw.get(sha_key)
    if not isinstance(name, str) or Path(name).name != name or not name.endswith(".safetensors"):
        expected = "the name of a .safetensors file beside the document"
        raise InputError(name_key, expected, repr(name)[:60])
    if not isinstance(digest, str) or not re.fullmatch("[0-9a-f]{64}", digest):
        raise InputError(sha_key, "a sha256 in hexadecimal", repr(digest)[:60])
    tensor_path = path.with_name(name)
    try:
        if tensor_path.stat().st_size > MAX_FILE_BYTES:
            limit = f"a file of at most {MAX_FILE_BYTES >> 20} MB"
            raise InputError(str(tensor_path), limit, f"{tensor_path.stat().st_size:,} bytes")
        data = tensor_path.read_bytes()
    except FileNotFoundError:
        raise InputError(name_key, "an existing file beside the document", name) from None
    except OSError as exc:
        raise InputError(str(tensor_path), "a readable file", str(exc.strerror)) from None
    if hashlib.sha256(data).hexdigest() != digest:
        expected = f"a tensor file matching the document's checksum ({sha_key})"
        raise InputError(str(tensor_path), expected, "other contents")
    try:
        return tensor_path, load(data)
    except SafetensorError as exc:
        raise InputError(str(tensor_path), "a safetensors file", str(exc)) from None
