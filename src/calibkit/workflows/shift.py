"""Calibration under distribution shift (Ovadia et al. 2019): calibrators fitted on clean
data, judged on every corruption x severity.

:func:`shift_table` fits each calibrator once on the clean calibration part and evaluates
it on the clean test part (corruption ``"clean"``, severity 0) and on every shifted test
set: accuracy, NLL, ECE (15 bins) with its noise floor, Brier, failure AUROC and AURC; the
conformal sets (split conformal on temperature scaling) give their coverage and mean set
size. The result is a tidy list of :class:`ShiftRow`, one per method x corruption x
severity; :func:`severity_summary` averages it over the corruptions.
:func:`model_logits` and :func:`shifted_logits` make the logits of a torch model on
images and on their corrupted copies (:func:`calibkit.data.corrupt`).
:func:`calibkit.workflows.shift_study.run_shift` does the whole study from its settings
with these parts, as ``calibkit shift`` does.

>>> from calibkit.core.outputs import as_outputs
>>> rng = np.random.default_rng(0)
>>> z = rng.normal(size=(800, 3)) * 2
>>> y = np.array([rng.choice(3, p=np.exp(r) / np.exp(r).sum()) for r in z])
>>> cal, test = as_outputs(y[:400], logits=z[:400]), as_outputs(y[400:], logits=z[400:])
>>> hot = as_outputs(y[400:], logits=3 * z[400:])  # overconfident: a "shift"
>>> rows = shift_table(cal, test, {("hot", 1): hot}, ["none"], scores=[], n_floor_draws=0)
>>> [(r.method, r.corruption, r.severity) for r in rows]
[('none', 'clean', 0), ('none', 'hot', 1)]
>>> rows[1].values["ece"] > rows[0].values["ece"]
True
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from calibkit.calibrators import create_calibrator
from calibkit.calibrators.sets.conformal import ConformalClassifier
from calibkit.core.docs import OUTPUTS_EXAMPLE, fill_doc
from calibkit.core.errors import InputError
from calibkit.core.options import Binning, Resampling
from calibkit.core.outputs import ClassifierOutputs, as_outputs
from calibkit.core.progress import Phase, ProgressEvent, report_step, time_left_text
from calibkit.metrics import evaluate
from calibkit.workflows.shift_parts import (
    check_conformal_size,
    conformal_method,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "CLASSIFIER_COLUMNS",
    "COLUMNS",
    "DEFAULT_METHODS",
    "DEFAULT_SCORES",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "SET_COLUMNS",
    "ShiftRow",
    "model_logits",
    "severity_summary",
    "shift_table",
    "shifted_logits",
]

log = logging.getLogger(__name__)

#: The calibrators fitted by default (``"none"``: the model's own softmax).
DEFAULT_METHODS = ("none", "temperature", "vector", "ms_odir", "dirichlet")
#: The conformity scores by default, each split conformal on temperature scaling.
DEFAULT_SCORES = ("raps", "lac")
#: The input normalisation of the pretrained CIFAR ResNets (``../shared/data/README.md``).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: The metrics of a calibrator's row (fractions; the names of the metric registry,
#: ``ece_floor``: the ECE of a perfectly calibrated model with the same confidences).
CLASSIFIER_COLUMNS = ("accuracy", "nll", "ece", "ece_floor", "brier", "failure_auroc", "aurc")
#: The metrics of a conformal row (the set metrics' names).
SET_COLUMNS = ("coverage", "mean_set_size")
#: Every metric column of the table, in order.
COLUMNS = CLASSIFIER_COLUMNS + SET_COLUMNS
#: The corruption name of the unshifted test part.
CLEAN = "clean"


@dataclass(frozen=True)
@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
class ShiftRow:
    """One method on one test set: ``values`` maps every name of :data:`COLUMNS` to a
    number (NaN where it does not apply: set metrics for a calibrator, the others for a
    conformal method).

    Examples
    --------
    {outputs_example}
    >>> shifted = {("noise", 1): as_outputs(y[300:], logits=0.5 * z[300:])}

    >>> row = shift_table(cal, test, shifted, ["temperature"], n_floor_draws=10)[1]
    >>> row.method, row.corruption, row.severity, 0 <= row.values["ece"] <= 1
    ('temperature', 'noise', 1, True)
    """

    method: str
    corruption: str
    severity: int
    n_samples: int
    values: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """A flat JSON-ready dict (NaN as None)."""
        nums = {k: (None if math.isnan(v) else v) for k, v in self.values.items()}
        return {
            "method": self.method,
            "corruption": self.corruption,
            "severity": self.severity,
            "n_samples": self.n_samples,
            **nums,
        }


def conformal_name(score: str) -> str:
    """The table's name of the conformal method with ``score`` (on temperature scaling).

    >>> conformal_name("raps")
    'ts+raps'
    """
    return f"ts+{score}"


def _classifier_values(
    test: ClassifierOutputs,
    probs: npt.NDArray[np.float64],
    n_floor_draws: int,
    seed: int,
    binning: Binning,
) -> dict[str, float]:
    res = evaluate(
        test.labels,
        probs=probs,
        binning=binning,
        resampling=Resampling(n_boot=0, seed=seed),
        n_floor_draws=n_floor_draws,
    )
    values = {k: float(res.values.get(k, math.nan)) for k in CLASSIFIER_COLUMNS}
    return values | {k: math.nan for k in SET_COLUMNS}


def _set_values(sets: npt.NDArray[np.bool_], labels: npt.NDArray[np.int64]) -> dict[str, float]:
    coverage = float(sets[np.arange(len(labels)), labels].mean())
    values = {k: math.nan for k in CLASSIFIER_COLUMNS}
    return values | {"coverage": coverage, "mean_set_size": float(sets.sum(axis=1).mean())}


@fill_doc(outputs_example=OUTPUTS_EXAMPLE)
def shift_table(
    cal: ClassifierOutputs,
    test: ClassifierOutputs,
    shifted: Mapping[tuple[str, int], ClassifierOutputs],
    methods: Sequence[str] = DEFAULT_METHODS,
    *,
    scores: Sequence[str] = DEFAULT_SCORES,
    alpha: float = 0.1,
    n_floor_draws: int = 100,
    binning: Binning = Binning(),
    seed: int = 0,
) -> list[ShiftRow]:
    """Every method fitted once on ``cal``, evaluated on ``test`` and on each shifted set.

    Parameters
    ----------
    cal, test
        Clean calibration and test outputs (logits or probabilities with labels).
    shifted
        ``{(corruption, severity): outputs}``, the shifted test sets (any sizes, the
        classes of ``cal``).
    methods
        Calibrator names (``"none"``: the uncalibrated model).
    scores, alpha
        Conformity scores, each split conformal on temperature scaling fitted on ``cal``
        (half for TS, half for the quantile), at miscoverage ``alpha``.
    n_floor_draws, binning, seed
        Draws of the ECE noise floor (0: none, NaN); the bins of the binned metrics; the
        seed of the floors and of the conformal split.

    Returns
    -------
    list of ShiftRow
        Method by method (the conformal ones last); within one, clean first then the
        shifted sets in the order of ``shifted``.

    Examples
    --------
    {outputs_example}
    >>> shifted = {("noise", 1): as_outputs(y[300:], logits=0.5 * z[300:])}

    >>> rows = shift_table(cal, test, shifted, ["none", "temperature"], n_floor_draws=10)
    >>> [(row.method, row.corruption, row.severity) for row in rows][:3]
    [('none', 'clean', 0), ('none', 'noise', 1), ('temperature', 'clean', 0)]
    """
    if not 0.0 < alpha < 1.0:
        raise InputError("alpha", "a number in (0, 1)", repr(alpha))
    check_conformal_size(scores, alpha, cal.n_samples, seed, "cal")
    bad = [(c, s) for (c, s), o in shifted.items() if o.n_classes != cal.n_classes]
    if bad:
        raise InputError("shifted", f"outputs with {cal.n_classes} classes", repr(bad[0]))
    sets = {CLEAN: test} | {f"{c}:{s}": o for (c, s), o in shifted.items()}
    keys = [(CLEAN, 0), *shifted]
    fitted: list[tuple[str, Callable[[ClassifierOutputs], dict[str, float]]]] = []
    z_cal = cal.as_logits()
    fits = Phase(log, f"fitting {len(methods) + len(scores)} methods", len(methods) + len(scores))
    for name in methods:
        if name == "none":
            fitted.append(
                (name, lambda o: _classifier_values(o, o.probs, n_floor_draws, seed, binning))
            )
            fits.step(name)
            continue
        calibrator = create_calibrator(name).fit(z_cal, cal.labels)
        fits.step(name)

        def apply(o: ClassifierOutputs, c: Any = calibrator) -> dict[str, float]:
            probs = np.asarray(c.predict_proba(o.as_logits()), dtype=np.float64)
            return _classifier_values(o, probs, n_floor_draws, seed, binning)

        fitted.append((name, apply))
    for score in scores:
        cp = conformal_method(score, alpha, seed).fit(z_cal, cal.labels)

        def cover(o: ClassifierOutputs, m: ConformalClassifier = cp) -> dict[str, float]:
            return _set_values(np.asarray(m.predict_set(o.as_logits())), o.labels)

        fitted.append((conformal_name(score), cover))
        fits.step(conformal_name(score))
    rows = []
    label = f"judging {len(fitted)} methods on {len(keys)} sets"
    judged = Phase(log, label, len(fitted) * len(keys))
    for name, judge in fitted:
        for (corruption, severity), out in zip(keys, sets.values(), strict=True):
            rows.append(ShiftRow(name, corruption, severity, out.n_samples, judge(out)))
            judged.step(f"{name} on {corruption}" + (f":{severity}" if severity else ""))
    return rows


def severity_summary(
    rows: Sequence[ShiftRow],
) -> list[tuple[str, int, int, dict[str, float]]]:
    """``(method, severity, corruptions, means)``: each metric averaged over the corruptions
    at each severity (severity 0: the clean test part), in the order of ``rows``.

    >>> rows = [ShiftRow("m", "a", 1, 10, {"ece": 0.1}), ShiftRow("m", "b", 1, 10, {"ece": 0.3})]
    >>> severity_summary(rows)
    [('m', 1, 2, {'ece': 0.2})]
    """
    groups: dict[tuple[str, int], list[ShiftRow]] = {}
    for r in rows:
        groups.setdefault((r.method, r.severity), []).append(r)
    out = []
    for (method, severity), members in groups.items():
        names = members[0].values
        means = {k: float(np.mean([m.values[k] for m in members])) for k in names}
        out.append((method, severity, len(members), {k: round(v, 12) for k, v in means.items()}))
    return out


def model_logits(
    model: torch.nn.Module,
    images: npt.ArrayLike,
    mean: Sequence[float],
    std: Sequence[float],
    *,
    device: torch.device | str = "cpu",
    batch_size: int = 500,
) -> npt.NDArray[np.float32]:
    """Float32 logits of ``model`` (moved to ``device``, eval mode) on uint8 ``(N, H, W, C)``
    ``images`` normalised as ``(x / 255 - mean) / std``, ``batch_size`` images at a time.

    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 3))
    >>> model_logits(net, np.zeros((5, 2, 2, 3), np.uint8), (0, 0, 0), (1, 1, 1)).shape
    (5, 3)
    """
    import torch

    from calibkit.core.images import image_tensor
    from calibkit.training.trainer import device_logits

    x = np.asarray(images)
    model = model.to(torch.device(device))
    parts = []
    for start in range(0, len(x), batch_size):  # normalised one batch at a time (memory)
        t = image_tensor(x[start : start + batch_size], mean, std)
        parts.append(device_logits(model, t, batch_size).cpu().numpy())
    if not parts:
        raise InputError("images", "at least one image", f"{x.shape}")
    return np.concatenate(parts).astype(np.float32)


def shifted_logits(
    model: torch.nn.Module,
    images: npt.ArrayLike,
    labels: npt.ArrayLike,
    corruptions: Sequence[str],
    severities: Sequence[int],
    *,
    mean: Sequence[float],
    std: Sequence[float],
    seed: int = 0,
    key: str = "",
    indices: npt.ArrayLike | None = None,
    device: torch.device | str = "cpu",
    batch_size: int = 500,
) -> dict[tuple[str, int], ClassifierOutputs]:
    """``{(corruption, severity): outputs}`` of ``model`` on ``images`` corrupted by
    :func:`calibkit.data.corrupt` (``seed``, ``key`` and ``indices`` as there: the same
    image gets the same corruption whatever else is evaluated). Logs one progress line per
    set at ``INFO`` with the time left, extrapolated from the sets done.
    """
    from calibkit.data.corruptions import check_corruption, corrupt

    todo = [(c, check_corruption(c, s)) for c in corruptions for s in severities]
    y = np.asarray(labels)
    out: dict[tuple[str, int], ClassifierOutputs] = {}
    start = time.perf_counter()
    for i, (c, s) in enumerate(todo, 1):
        x = corrupt(images, c, s, seed=seed, key=key, indices=indices)
        z = model_logits(model, x, mean, std, device=device, batch_size=batch_size)
        out[(c, s)] = as_outputs(y, logits=z)
        spent = time.perf_counter() - start
        acc = float((z.argmax(axis=1) == y).mean())
        text = f"{c}:{s} accuracy {100 * acc:.1f}%  {time_left_text(spent, i, len(todo))}"
        report_step(log, ProgressEvent(f"shift {i}/{len(todo)}", i, len(todo), text), logging.INFO)
    return out
