"""Every calibrator calibkit ships, declared once (:data:`ENTRIES`): its name, where its
class lives, its title, its one-line summary and the facts the registry reads (whether it
runs by default, its aliases, whether ``auto`` tries it, where it is a default, whether it
takes two classes only); and the names of the conformity scores and prior estimators.

This module imports no numpy and no torch: the registry
(:data:`~calibkit.calibrators.fitted.CALIBRATORS`), ``calibkit methods``, the command
line's name checks, the public names of ``calibkit`` and the API reference's lists read it
without importing a calibrator. A class named here registers itself under its key when its
module is imported (:class:`~calibkit.calibrators.fitted.PostHoc`), and
``CALIBRATORS.get(name)`` imports that module on first use. Nothing else names a
calibrator: the order of :data:`ENTRIES` is the order of reports; an entry's kind is its
module's folder (:data:`FOLDER_KINDS`).

>>> ENTRIES["temperature"].kind, ENTRIES["platt"].binary_only, aliases()
('logits', True, {'bcts': 'bias_corrected_temperature'})
>>> names(("sets", "priors")), kind_of("bcts"), kind_of("temprature") is None
(('conformal', 'prior_shift'), 'logits', True)
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

from calibkit.core.scope import EVERYWHERE, Scope

#: The package under which :attr:`Entry.where` is read.
PACKAGE = "calibkit.calibrators"
#: The kinds of fitted object, each with what it maps (``calibkit methods`` lists them so).
KINDS: dict[str, str] = {
    "logits": "calibrators of logits: logits -> calibrated probabilities",
    "groups": "calibrators that take each row's group: logits + groups -> probabilities",
    "model": "calibrators that take the model: inputs -> calibrated probabilities",
    "sets": "conformal predictors: logits -> prediction sets (and probabilities)",
    "priors": "prior-shift adapters: logits -> probabilities adapted to new class priors",
}
#: The folder of ``calibrators/`` that holds each kind's modules.
FOLDER_KINDS = {"logit": "logits", "groups": "groups", "model": "model", "sets": "sets",
                "priors": "priors"}  # fmt: skip


class Entry(NamedTuple):
    """One calibrator.

    Parameters
    ----------
    where : str
        Its class, as ``module.Class`` under ``calibkit.calibrators`` (the module's first
        folder gives its kind, :data:`FOLDER_KINDS`).
    title : str
        The method's name in words (lower case unless a proper name), said beside its key
        wherever a report names a method.
    summary : str
        What ``calibkit methods`` prints: one sentence.
    binary_only : bool
        It takes two classes only (the class's ``binary_only`` is set from here).
    default : bool
        It runs when the caller names none (``compare``, ``demo``, a study, ``auto``).
    aliases : tuple of str
        Other names it is found by.
    auto_candidate : bool
        ``auto`` may choose it (when it is a default).
    scope : Scope
        The data sizes for which it is a default.
    exported : bool
        Its class is a public name of ``calibkit`` and ``calibkit.calibrators`` (the Neural
        Clamping variants are not: their public class is ``NeuralClamping``).

    Examples
    --------
    >>> e = Entry("logit.temperature.TemperatureScaling", "temperature scaling", "T.")
    >>> e.kind, e.module, e.class_name
    ('logits', 'calibkit.calibrators.logit.temperature', 'TemperatureScaling')
    """

    where: str
    title: str
    summary: str
    binary_only: bool = False
    default: bool = True
    aliases: tuple[str, ...] = ()
    auto_candidate: bool = True
    scope: Scope = EVERYWHERE
    exported: bool = True

    @property
    def kind(self) -> str:
        """What it maps: the kind of its module's folder."""
        return FOLDER_KINDS[self.where.split(".", 1)[0]]

    @property
    def module(self) -> str:
        """The module that defines its class."""
        return f"{PACKAGE}.{self.where.rpartition('.')[0]}"

    @property
    def class_name(self) -> str:
        """Its class's name in :attr:`module`."""
        return self.where.rpartition(".")[2]

    def info(self) -> dict[str, Any]:
        """The metadata the registry keeps for it."""
        keys = ("summary", "default", "aliases", "auto_candidate", "scope", "title")
        return {k: getattr(self, k) for k in keys}


#: The scope of the cross-validated K x K maps (MS-ODIR, Dirichlet, SMS-CV): every
#: objective evaluation multiplies N x K by K x K twice.
CV_FULL_MAP_SCOPE = Scope(
    max_classes=200,
    reason=(
        "a K x K map with a cross-validated penalty (30-40 fits of K^2 parameters): MS-ODIR "
        "took 5 min at 200 classes and 25,000 rows on 2 busy cores"
    ),
)


def _classes(k: int) -> int:
    """SMS's map has a row per class, each penalised towards temperature scaling: what the
    calibration data must pin is about a row per class. Below 20 calibration samples per
    class SMS and SMS-CV are no defaults: among ``auto``'s candidates at 100 samples and 10
    classes their cross-fitted gains did not hold on the test part (1.10x-1.15x TS's NLL,
    ``docs/selection.md``); from 30 per class on they did."""
    return k


#: Every calibrator by key, in the order of reports.
ENTRIES: dict[str, Entry] = {
    "temperature": Entry(
        "logit.temperature.TemperatureScaling",
        title="temperature scaling",
        summary=(
            "Temperature scaling (Guo et al. 2017): the logits divided by one temperature T "
            "fitted by NLL, T in [0.1, 10] unless t_min or t_max is given."
        ),
    ),
    "temperature_ece": Entry(
        "logit.temperature_grid.TemperatureScalingECE",
        title="temperature scaling chosen by ECE",
        summary=(
            "Temperature scaling with T chosen on a grid (0.001 to 5 by default) by the lowest "
            "top-label ECE on the calibration set."
        ),
        auto_candidate=False,
        scope=Scope(
            cross_fit_max_classes=500,
            cross_fit_reason=(
                "its ECE grid search took 11 s a fit at 25,000 x 1,000 on 2 busy cores (five per "
                "auto), for a temperature chosen by ECE, not NLL"
            ),
        ),
    ),
    "vector": Entry(
        "logit.linear.VectorScaling",
        title="vector scaling",
        summary=(
            "Vector scaling (Guo et al. 2017): softmax(diag(w) z + b), a weight and a bias per "
            "class, shrunk towards temperature scaling by a cross-validated strength."
        ),
        scope=Scope(
            max_classes=500,
            reason=(
                "its shrinkage's cross-validation (50 diagonal fits): 1 min at 200 classes and "
                "25,000 rows on 2 busy cores, several from 500"
            ),
        ),
    ),
    "matrix": Entry(
        "logit.linear.MatrixScaling",
        title="matrix scaling",
        summary=(
            "Matrix scaling (Guo et al. 2017): softmax(W z + b) with a full W, shrunk towards "
            "temperature scaling by a cross-validated strength s; that penalty is ms_odir's with "
            "lam = mu = s, so the two fit the same map when they choose the same strength."
        ),
        scope=Scope(
            max_classes=50,
            reason="K (K + 1) parameters overfit (on 100 classes: 26-38% ECE, NLL 64)",
            parameters=lambda k: k * (k + 1),
            samples_per_parameter=2,
        ),
    ),
    "ms_odir": Entry(
        "logit.linear.MatrixScalingODIR",
        title="matrix scaling with off-diagonal and intercept regularisation",
        summary=(
            "Matrix scaling with off-diagonal and intercept regularisation (ODIR, Kull et al. "
            "2019) towards temperature scaling, lam by cross-validation unless given; at lam = mu"
            " = s it is matrix's problem at strength s."
        ),
        scope=CV_FULL_MAP_SCOPE,
    ),
    "dirichlet": Entry(
        "logit.linear.DirichletCalibration",
        title="Dirichlet calibration",
        summary=(
            "Dirichlet calibration (Kull et al. 2019): ms_odir's regularised map on log-"
            "probabilities instead of logits, so the same map as ms_odir when the inputs are "
            "probabilities."
        ),
        scope=CV_FULL_MAP_SCOPE,
    ),
    "svs": Entry(
        "logit.structured.StructuredVectorScaling",
        title="structured vector scaling",
        summary=(
            "Structured vector scaling (Berta et al. 2026): a diagonal linear map, fitted by "
            "penalised NLL, on the log-probabilities of smoothed temperature scaling."
        ),
    ),
    "sms": Entry(
        "logit.structured.StructuredMatrixScaling",
        title="structured matrix scaling",
        summary=(
            "Structured matrix scaling (Berta et al. 2026): a full linear map, fitted by "
            "penalised NLL, on the log-probabilities of smoothed temperature scaling."
        ),
        scope=Scope(
            max_classes=200,
            reason="a K x K map: one fit took 23 s at 200 classes and 25,000 rows on 2 busy cores",
            parameters=_classes,
            samples_per_parameter=20,
            per="class",
        ),
    ),
    "sms_cv": Entry(
        "logit.structured.StructuredMatrixScalingCV",
        title="structured matrix scaling with a cross-validated penalty",
        summary=(
            "Structured matrix scaling with its three penalty weights multiplied by one scale "
            "chosen by cross-validation."
        ),
        scope=dataclasses.replace(
            CV_FULL_MAP_SCOPE, parameters=_classes, samples_per_parameter=20, per="class"
        ),
    ),
    "temperature_smoothed": Entry(
        "logit.temperature_smoothed.SmoothedTemperatureScaling",
        title="smoothed temperature scaling",
        summary=(
            "Temperature scaling mixed with the uniform distribution, (1 - eps) softmax(z / T) + "
            "eps / K, with eps = 1 / (n + 1) unless smoothing is given."
        ),
        default=False,
    ),
    "bias_corrected_temperature": Entry(
        "logit.bias_corrected.BiasCorrectedTemperatureScaling",
        title="bias-corrected temperature scaling",
        summary=(
            "Bias-corrected temperature scaling (BCTS, Alexandari et al. 2020): softmax(z / T + "
            "b) with one temperature and a bias per class, fitted by NLL."
        ),
        default=False,
        aliases=("bcts",),
    ),
    "histogram": Entry(
        "logit.histogram.HistogramBinning",
        title="top-label histogram binning",
        summary=(
            "Top-label histogram binning: each confidence replaced by the accuracy of its bin "
            "(n_bins bins of equal width or equal mass)."
        ),
    ),
    "histogram_classwise": Entry(
        "logit.histogram.ClasswiseHistogramBinning",
        title="class-wise histogram binning",
        summary=(
            "One-vs-rest histogram binning of every class's probability, then renormalised to sum"
            " to one."
        ),
        scope=Scope(
            cross_fit_max_classes=500,
            cross_fit_reason=(
                "K one-vs-rest histograms a fit (3 s at 20,000 x 1,000 on 2 busy cores, five per "
                "auto), and 2x TS's NLL on CIFAR-100"
            ),
        ),
    ),
    "isotonic": Entry(
        "logit.isotonic.IsotonicCalibrator",
        title="isotonic regression",
        summary=(
            "One-vs-rest isotonic regression of every class's softmax probability, then "
            "renormalised to sum to one."
        ),
        scope=Scope(
            cross_fit_max_classes=500,
            cross_fit_reason=(
                "K one-vs-rest regressions a fit (10.5 s at 20,000 x 1,000 on 2 busy cores, five "
                "per auto), and never below TS's NLL in docs/selection.md"
            ),
        ),
    ),
    "platt": Entry(
        "logit.binary.PlattScaling",
        binary_only=True,
        title="Platt scaling",
        summary=(
            "Platt scaling: sigmoid(a (z1 - z0) + b), the logit difference mapped by a logistic "
            "regression fitted by NLL."
        ),
    ),
    "beta": Entry(
        "logit.binary.BetaCalibration",
        binary_only=True,
        title="beta calibration",
        summary=(
            "Beta calibration (Kull et al. 2017): sigmoid(a ln p - b ln(1 - p) + c) with a, b >= "
            "0, fitted by NLL."
        ),
    ),
    "scaling_binning": Entry(
        "logit.scaling_binning.ScalingBinning",
        title="scaling-binning",
        summary=(
            "Scaling-binning (Kumar et al. 2019): a scaler fitted on one part of the calibration "
            "set, then equal-mass bins of its top-label confidences on the other."
        ),
        default=False,
    ),
    "venn_abers": Entry(
        "logit.venn_abers.VennAbers",
        title="Venn-Abers calibration",
        summary=(
            "Inductive Venn-Abers calibration (Vovk and Petej 2014), one-vs-rest: two isotonic "
            "fits per class merged into one probability, never 0."
        ),
        default=False,
    ),
    "isotonic_centred": Entry(
        "logit.centred_isotonic.CentredIsotonicCalibrator",
        title="centred isotonic regression",
        summary=(
            "Centred isotonic regression (Oron and Flournoy 2017), one-vs-rest and renormalised: "
            "strictly increasing between its points, never probability 0."
        ),
        default=False,
    ),
    "spline": Entry(
        "logit.spline.SplineCalibration",
        title="spline calibration",
        summary=(
            "Spline calibration (Gupta et al. 2021): the top-label confidence mapped through a "
            "cubic spline with n_knots knots fitted to the cumulative calibration curve."
        ),
        default=False,
    ),
    "auto": Entry(
        "logit.auto.AutoCalibrator",
        title="automatic choice by cross-validation",
        summary=(
            "Picks a calibrator by cross-validation on the calibration set: temperature scaling "
            "unless another method has a lower held-out NLL by more than 3.5 standard errors."
        ),
        default=False,
    ),
    "temperature_groupwise": Entry(
        "groups.groupwise.GroupwiseTemperatureScaling",
        title="temperature scaling per group",
        summary=(
            "Temperature scaling with one temperature per group, the global temperature for small"
            " and unseen groups."
        ),
        default=False,
    ),
    "multicalibration": Entry(
        "groups.groupwise.Multicalibration",
        title="multicalibration",
        summary=(
            "Multicalibration (Hebert-Johnson et al. 2018): the top-label confidence patched over"
            " (group, confidence bin) cells until no cell is off by more than alpha."
        ),
        default=False,
    ),
    "conformal": Entry(
        "sets.conformal.ConformalClassifier",
        title="split conformal prediction sets",
        summary=(
            "Split conformal prediction sets (class-conditional with mondrian) that hold the true"
            " class with probability at least 1 - alpha."
        ),
        default=False,
    ),
    "prior_shift": Entry(
        "priors.label_shift.PriorShiftAdapter",
        title="label-shift adaptation of a calibrator",
        summary=(
            "A calibrator (BCTS by default) followed by adaptation to the target's class priors, "
            "estimated by EM or BBSE from unlabelled target rows."
        ),
        default=False,
    ),
    "nc_ce": Entry(
        "model.clamping.registry.NeuralClampingCE",
        title="Neural Clamping trained by cross-entropy",
        summary=(
            "Neural Clamping (a learnt input perturbation and a temperature) trained by cross-"
            "entropy, that is focal gamma 0 (a gamma given is overridden)."
        ),
        exported=False,
    ),
    "nc_fl": Entry(
        "model.clamping.registry.NeuralClampingFocal",
        title="Neural Clamping trained by focal loss",
        summary=(
            "Neural Clamping (a learnt input perturbation and a temperature) trained by focal "
            "loss, gamma 1 unless gamma is given."
        ),
        exported=False,
    ),
    "nc_fast": Entry(
        "model.clamping.registry.NeuralClampingFast",
        title="fast Neural Clamping",
        summary=(
            "The fast variant of Neural Clamping: the input perturbation set from the data, then "
            "the temperature fitted alone."
        ),
        exported=False,
    ),
    "ts_focal": Entry(
        "model.clamping.registry.FocalTemperatureScaling",
        title="temperature scaling fitted by focal loss",
        summary=(
            "Temperature scaling fitted by focal loss on the model's inputs (Neural Clamping with"
            " the input perturbation fixed at 0)."
        ),
        exported=False,
    ),
}
#: The conformity scores of conformal prediction sets, in the order tables list them: key ->
#: its class under ``calibkit.calibrators`` (``ConformalClassifier(conformity_score=...)``,
#: ``calibkit conformal --scores``).
CONFORMITY_SCORES: dict[str, str] = {
    "lac": "sets.conformal_scores.LAC",
    "aps": "sets.conformal_scores.APS",
    "raps": "sets.conformal_scores.RAPS",
    "saps": "sets.conformal_scores.SAPS",
}
#: The prior estimators of label-shift adaptation (``PriorShiftAdapter(estimator=...)``,
#: ``calibkit labelshift --estimator``).
PRIOR_ESTIMATORS = ("em", "bbse")


class Model(NamedTuple):
    """One model factory of :data:`MODEL_ENTRIES` (``calibkit.models.MODELS``): the function
    named as its key in ``calibkit.models.<module>``, and its metadata.

    Parameters
    ----------
    module : str
        Its module under ``calibkit.models``.
    family : str
        ``"lenet"``, ``"cifar_resnet"``, ``"resnet"``, ``"wide_resnet"``, ``"mlp"`` or
        ``"timm"`` (timm's names, started from a timm checkpoint).
    input_size : int, optional
        The image size it is made for, if not 32.
    depth : int, optional
        A CIFAR ResNet's depth (to start one from a checkpoint).

    Examples
    --------
    >>> MODEL_ENTRIES["resnet20"].info()
    {'family': 'cifar_resnet', 'depth': 20}
    """

    module: str
    family: str
    input_size: int | None = None
    depth: int | None = None

    def info(self) -> dict[str, Any]:
        """The metadata the registry keeps for it (what is given)."""
        keys = ("family", "input_size", "depth")
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}


#: The depths of the CIFAR ResNets (``resnet<depth>``, depth 6n + 2), the ones
#: :class:`~calibkit.models.resnet_cifar.CifarResNet` builds.
CIFAR_DEPTHS = (8, 14, 20, 32, 44, 56, 110)
#: Every model factory by name, in the order of ``MODELS.names()``.
MODEL_ENTRIES: dict[str, Model] = {
    "lenet5": Model("lenet", "lenet"),
    "lenet5_dropout": Model("lenet", "lenet"),
    # the CIFAR ResNets (He et al. 2016), named by their depth 6n + 2
    **{f"resnet{d}": Model("resnet_cifar", "cifar_resnet", depth=d) for d in CIFAR_DEPTHS},
    "resnet18": Model("resnet", "resnet"),
    "wrn16_4": Model("resnet", "wide_resnet"),
    "wrn28_10": Model("resnet", "wide_resnet"),
    "wrn40_10": Model("resnet", "wide_resnet"),
    "resnet50_28": Model("bottleneck", "resnet", input_size=28),
    "resnet101": Model("bottleneck", "timm", input_size=224),
    "vit_small_patch16_224": Model("vit", "timm", input_size=224),
    "mixer_b16_224": Model("mixer", "timm", input_size=224),
    "mlp": Model("mlp", "mlp"),
}
#: Each class (``Entry.where``) -> its key.
_BY_CLASS = {entry.where: name for name, entry in ENTRIES.items()}


def key_of(module: str, qualname: str) -> str | None:
    """The key of the class ``qualname`` of ``module`` if it is catalogued, else None.

    >>> key_of("calibkit.calibrators.logit.binary", "PlattScaling")
    'platt'
    """
    return _BY_CLASS.get(f"{module.removeprefix(PACKAGE + '.')}.{qualname}")


def exported() -> dict[str, str]:
    """Each public class (:attr:`Entry.exported`) -> the module that defines it.

    >>> exported()["PlattScaling"]
    'calibkit.calibrators.logit.binary'
    """
    return {e.class_name: e.module for e in ENTRIES.values() if e.exported}


def names(kinds: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The keys of the entries of ``kinds`` (every kind if None), by kind in the order of
    :data:`KINDS`, then in the order of :data:`ENTRIES`."""
    chosen = tuple(KINDS) if kinds is None else kinds
    return tuple(n for kind in chosen for n, e in ENTRIES.items() if e.kind == kind)


def aliases(kinds: tuple[str, ...] | None = None) -> dict[str, str]:
    """Each alias of an entry of ``kinds`` (every kind if None) -> the key it stands for."""
    keys = names(kinds)
    return {a: n for n in keys for a in ENTRIES[n].aliases}


def kind_of(name: str) -> str | None:
    """The kind of the entry ``name`` (a key or an alias); None if there is none."""
    entry = ENTRIES.get(aliases().get(name, name))
    return None if entry is None else entry.kind


def title(name: str) -> str | None:
    """The title of the method ``name`` (a key or an alias), or None (a method not declared
    here: a plug-in's).

    >>> title("ms_odir"), title("bcts"), title("someone_elses")
    ('matrix scaling with off-diagonal and intercept regularisation', 'bias-corrected temperature scaling', None)
    """  # noqa: E501
    entry = ENTRIES.get(aliases().get(name, name))
    return None if entry is None else entry.title
