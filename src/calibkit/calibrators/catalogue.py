"""Every entry of :data:`~calibkit.calibrators.fitted.CALIBRATORS`, declared without importing
its module.

The registry's metadata (each name's kind, place, whether it runs by default, its aliases,
its one-sentence summary and whether it takes two classes only) is readable before any
calibrator's module is imported: :data:`ENTRIES` declares each entry
(:meth:`Registry.declare <calibkit.core.registry.Registry.declare>`), and the module that
registers it is imported only when its class is wanted (``CALIBRATORS.get``). So
``calibkit methods`` lists every method, and ``calibkit fit`` / ``apply`` of temperature
scaling run, without importing torch (the torch-based modules: Neural Clamping, the
conformity scores, the exported ``nn.Module`` classes).

The entries are what the ``CALIBRATORS.register`` calls say, in the order of reports:
``tests/calibrators/test_catalogue.py`` imports every module of ``calibrators/`` and fails,
printing the block to paste here (:func:`render`), when one differs. A new calibrator adds
its entry here (its ``register`` call stays the source: the test says what to write).
"""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from calibkit.core.registry import Registry

#: The keys of a ``register`` call's metadata that are declared early (the rest, e.g. a
#: calibrator's ``scope``, are read after its module is imported).
DECLARED_KEYS = ("summary", "default", "aliases", "auto_candidate", "order")
PACKAGE = "calibkit.calibrators"


class Entry(NamedTuple):
    """One declared entry: its module (under ``calibkit.calibrators``), its kind, whether it
    takes two classes only (the class's ``binary_only``), its ``title`` and its early
    metadata.

    ``title`` is the method's name in words (lower case unless a proper name), said beside
    its key wherever a report names a method (:func:`title`: "`ms_odir` (matrix scaling
    with off-diagonal and intercept regularisation)"). It is declared here only: the
    ``register`` calls do not repeat it (issue #46, item 4).

    Parameters
    ----------
    module : str
        The module under ``calibkit.calibrators`` that holds the class.
    kind : str
        What the calibrator maps (the persistence kinds).
    binary_only : bool
        Whether it takes two classes only.
    title : str, optional
        The method's name in words.
    summary, default, aliases, auto_candidate, order
        The metadata its ``register`` call gives.

    Examples
    --------
    >>> e = Entry("logit.temperature", "logits", title="temperature scaling", default=True)
    >>> e.title, e.info()
    ('temperature scaling', {'default': True})
    """

    module: str
    kind: str
    binary_only: bool = False
    title: str | None = None
    summary: str | None = None
    default: bool | None = None
    aliases: tuple[str, ...] | None = None
    auto_candidate: bool | None = None
    order: float | None = None

    def info(self) -> dict[str, Any]:
        """The metadata declared (the keys the ``register`` call gives)."""
        return {k: getattr(self, k) for k in DECLARED_KEYS if getattr(self, k) is not None}


# fmt: off
ENTRIES: dict[str, Entry] = {
    "temperature": Entry(
        "logit.temperature",
        "logits",
        title="temperature scaling",
        summary=(
            "Temperature scaling (Guo et al. 2017): the logits divided by one temperature T "
            "fitted by NLL, T in [0.1, 10] unless t_min or t_max is given."
        ),
    ),
    "temperature_ece": Entry(
        "logit.temperature_grid",
        "logits",
        title="temperature scaling chosen by ECE",
        summary=(
            "Temperature scaling with T chosen on a grid (0.001 to 5 by default) by the lowest "
            "top-label ECE on the calibration set."
        ),
        auto_candidate=False,
    ),
    "vector": Entry(
        "logit.linear",
        "logits",
        title="vector scaling",
        summary=(
            "Vector scaling (Guo et al. 2017): softmax(diag(w) z + b), a weight and a bias per "
            "class, shrunk towards temperature scaling by a cross-validated strength."
        ),
    ),
    "matrix": Entry(
        "logit.linear",
        "logits",
        title="matrix scaling",
        summary=(
            "Matrix scaling (Guo et al. 2017): softmax(W z + b) with a full W, shrunk towards "
            "temperature scaling by a cross-validated strength s; that penalty is ms_odir's with "
            "lam = mu = s, so the two fit the same map when they choose the same strength."
        ),
    ),
    "ms_odir": Entry(
        "logit.linear",
        "logits",
        title="matrix scaling with off-diagonal and intercept regularisation",
        summary=(
            "Matrix scaling with off-diagonal and intercept regularisation (ODIR, Kull et al. "
            "2019) towards temperature scaling, lam by cross-validation unless given; at lam = mu"
            " = s it is matrix's problem at strength s."
        ),
    ),
    "dirichlet": Entry(
        "logit.linear",
        "logits",
        title="Dirichlet calibration",
        summary=(
            "Dirichlet calibration (Kull et al. 2019): ms_odir's regularised map on log-"
            "probabilities instead of logits, so the same map as ms_odir when the inputs are "
            "probabilities."
        ),
    ),
    "svs": Entry(
        "logit.structured",
        "logits",
        title="structured vector scaling",
        summary=(
            "Structured vector scaling (Berta et al. 2026): a diagonal linear map, fitted by "
            "penalised NLL, on the log-probabilities of smoothed temperature scaling."
        ),
        order=5.1,
    ),
    "sms": Entry(
        "logit.structured",
        "logits",
        title="structured matrix scaling",
        summary=(
            "Structured matrix scaling (Berta et al. 2026): a full linear map, fitted by "
            "penalised NLL, on the log-probabilities of smoothed temperature scaling."
        ),
        order=5.2,
    ),
    "sms_cv": Entry(
        "logit.structured",
        "logits",
        title="structured matrix scaling with a cross-validated penalty",
        summary=(
            "Structured matrix scaling with its three penalty weights multiplied by one scale "
            "chosen by cross-validation."
        ),
        order=5.3,
    ),
    "temperature_smoothed": Entry(
        "logit.temperature_smoothed",
        "logits",
        title="smoothed temperature scaling",
        summary=(
            "Temperature scaling mixed with the uniform distribution, (1 - eps) softmax(z / T) + "
            "eps / K, with eps = 1 / (n + 1) unless smoothing is given."
        ),
        default=False,
    ),
    "bias_corrected_temperature": Entry(
        "logit.bias_corrected",
        "logits",
        title="bias-corrected temperature scaling",
        summary=(
            "Bias-corrected temperature scaling (BCTS, Alexandari et al. 2020): softmax(z / T + "
            "b) with one temperature and a bias per class, fitted by NLL."
        ),
        default=False,
        aliases=("bcts",),
    ),
    "histogram": Entry(
        "logit.histogram",
        "logits",
        title="top-label histogram binning",
        summary=(
            "Top-label histogram binning: each confidence replaced by the accuracy of its bin "
            "(n_bins bins of equal width or equal mass)."
        ),
    ),
    "histogram_classwise": Entry(
        "logit.histogram",
        "logits",
        title="class-wise histogram binning",
        summary=(
            "One-vs-rest histogram binning of every class's probability, then renormalised to sum"
            " to one."
        ),
    ),
    "isotonic": Entry(
        "logit.isotonic",
        "logits",
        title="isotonic regression",
        summary=(
            "One-vs-rest isotonic regression of every class's softmax probability, then "
            "renormalised to sum to one."
        ),
    ),
    "platt": Entry(
        "logit.binary",
        "logits",
        binary_only=True,
        title="Platt scaling",
        summary=(
            "Platt scaling: sigmoid(a (z1 - z0) + b), the logit difference mapped by a logistic "
            "regression fitted by NLL."
        ),
    ),
    "beta": Entry(
        "logit.binary",
        "logits",
        binary_only=True,
        title="beta calibration",
        summary=(
            "Beta calibration (Kull et al. 2017): sigmoid(a ln p - b ln(1 - p) + c) with a, b >= "
            "0, fitted by NLL."
        ),
    ),
    "scaling_binning": Entry(
        "logit.scaling_binning",
        "logits",
        title="scaling-binning",
        summary=(
            "Scaling-binning (Kumar et al. 2019): a scaler fitted on one part of the calibration "
            "set, then equal-mass bins of its top-label confidences on the other."
        ),
        default=False,
    ),
    "venn_abers": Entry(
        "logit.venn_abers",
        "logits",
        title="Venn-Abers calibration",
        summary=(
            "Inductive Venn-Abers calibration (Vovk and Petej 2014), one-vs-rest: two isotonic "
            "fits per class merged into one probability, never 0."
        ),
        default=False,
    ),
    "isotonic_centred": Entry(
        "logit.centred_isotonic",
        "logits",
        title="centred isotonic regression",
        summary=(
            "Centred isotonic regression (Oron and Flournoy 2017), one-vs-rest and renormalised: "
            "strictly increasing between its points, never probability 0."
        ),
        default=False,
    ),
    "spline": Entry(
        "logit.spline",
        "logits",
        title="spline calibration",
        summary=(
            "Spline calibration (Gupta et al. 2021): the top-label confidence mapped through a "
            "cubic spline with n_knots knots fitted to the cumulative calibration curve."
        ),
        default=False,
    ),
    "auto": Entry(
        "logit.auto",
        "logits",
        title="automatic choice by cross-validation",
        summary=(
            "Picks a calibrator by cross-validation on the calibration set: temperature scaling "
            "unless another method has a lower held-out NLL by more than 3.5 standard errors."
        ),
        default=False,
    ),
    "temperature_groupwise": Entry(
        "groups.groupwise",
        "groups",
        title="temperature scaling per group",
        summary=(
            "Temperature scaling with one temperature per group, the global temperature for small"
            " and unseen groups."
        ),
        default=False,
    ),
    "multicalibration": Entry(
        "groups.groupwise",
        "groups",
        title="multicalibration",
        summary=(
            "Multicalibration (Hebert-Johnson et al. 2018): the top-label confidence patched over"
            " (group, confidence bin) cells until no cell is off by more than alpha."
        ),
        default=False,
    ),
    "conformal": Entry(
        "sets.conformal",
        "sets",
        title="split conformal prediction sets",
        summary=(
            "Split conformal prediction sets (class-conditional with mondrian) that hold the true"
            " class with probability at least 1 - alpha."
        ),
        default=False,
    ),
    "prior_shift": Entry(
        "priors.label_shift",
        "priors",
        title="label-shift adaptation of a calibrator",
        summary=(
            "A calibrator (BCTS by default) followed by adaptation to the target's class priors, "
            "estimated by EM or BBSE from unlabelled target rows."
        ),
        default=False,
    ),
    "nc_ce": Entry(
        "model.clamping.registry",
        "model",
        title="Neural Clamping trained by cross-entropy",
        summary=(
            "Neural Clamping (a learnt input perturbation and a temperature) trained by cross-"
            "entropy, that is focal gamma 0 (a gamma given is overridden)."
        ),
    ),
    "nc_fl": Entry(
        "model.clamping.registry",
        "model",
        title="Neural Clamping trained by focal loss",
        summary=(
            "Neural Clamping (a learnt input perturbation and a temperature) trained by focal "
            "loss, gamma 1 unless gamma is given."
        ),
    ),
    "nc_fast": Entry(
        "model.clamping.registry",
        "model",
        title="fast Neural Clamping",
        summary=(
            "The fast variant of Neural Clamping: the input perturbation set from the data, then "
            "the temperature fitted alone."
        ),
    ),
    "ts_focal": Entry(
        "model.clamping.registry",
        "model",
        title="temperature scaling fitted by focal loss",
        summary=(
            "Temperature scaling fitted by focal loss on the model's inputs (Neural Clamping with"
            " the input perturbation fixed at 0)."
        ),
    ),
}
# fmt: on


def declare_all(registry: Registry[Any]) -> None:
    """Declare every entry of :data:`ENTRIES` in ``registry`` (in order: their places)."""
    for name, entry in ENTRIES.items():
        registry.declare(
            name,
            f"{PACKAGE}.{entry.module}",
            kind=entry.kind,
            attributes={"binary_only": entry.binary_only},
            **entry.info(),
        )


def title(name: str) -> str | None:
    """The declared title of the method ``name`` (a key or an alias), or None (a method not
    declared here: a plug-in's).

    >>> title("ms_odir"), title("bcts"), title("someone_elses")
    ('matrix scaling with off-diagonal and intercept regularisation', 'bias-corrected temperature scaling', None)
    """  # noqa: E501
    entry = ENTRIES.get(name)
    if entry is None:
        entry = next((e for e in ENTRIES.values() if name in (e.aliases or ())), None)
    return None if entry is None else entry.title


def entry_of(registry: Registry[Any], name: str) -> Entry:
    """The entry ``name`` as its ``register`` call says (its module imported), with the
    title declared here (the ``register`` calls do not carry it)."""
    obj = registry.get(name)
    info = registry.info(name)
    return Entry(
        obj.__module__.removeprefix(PACKAGE + "."),
        registry.kind_of(name),
        bool(obj.binary_only),
        title(name),
        **{k: info[k] for k in DECLARED_KEYS if k in info},
    )


def _literal(value: object) -> str:
    """``value`` (a string, a bool, a number or a tuple of strings) as Python source."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a valid Python literal, in "..."
    if isinstance(value, tuple):
        return "(" + "".join(f"{_literal(v)}, " for v in value).rstrip() + ")"
    return repr(value)


def _string(text: str, indent: str) -> list[str]:
    """``text`` as implicitly concatenated literals on lines within 100 characters."""
    chunks = textwrap.wrap(text, 100 - len(indent) - 4, drop_whitespace=False)
    assert "".join(chunks) == text, text
    return [f"{indent}{_literal(chunk)}" for chunk in chunks]


def render(entries: dict[str, Entry]) -> str:
    """The ``ENTRIES = {...}`` block of this module for ``entries`` (what the test prints)."""
    lines = ["ENTRIES: dict[str, Entry] = {"]
    for name, entry in entries.items():
        lines += [f"    {_literal(name)}: Entry(", f"        {_literal(entry.module)},"]
        lines.append(f"        {_literal(entry.kind)},")
        if entry.binary_only:
            lines.append("        binary_only=True,")
        if entry.title is not None:
            lines.append(f"        title={_literal(entry.title)},")
        for key, value in entry.info().items():
            if key == "summary":
                lines += ["        summary=(", *_string(value, " " * 12), "        ),"]
            else:
                lines.append(f"        {key}={_literal(value)},")
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines)
