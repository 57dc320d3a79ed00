"""A small fitted instance of every registered kind but Neural Clamping, and its answers.

Shared by the registry-wide suites (``test_contract.py``, ``test_persistence.py``,
``test_sklearn_estimator.py``): each builds what it checks from the registry, by kind
(``CALIBRATORS.names(kind=...)``), so a newly registered method is checked without editing
them. Per kind, :func:`fitted` fits:

- ``logits``: on logits and labels (two classes for a binary-only method);
- ``groups``: with two groups, the second overconfident by a further factor 3, so that
  the per-group arrays are filled and the groups' maps differ;
- ``sets``: on logits, a calibrator underneath (a nested document);
- ``priors``: on the source rows, then adapted to shifted target logits.

:func:`answer` is the kind's Python answer (``predict_set`` for sets, else
``predict_proba``, given the rows' groups where the kind declares them), which the kind's
module (:func:`module_inputs`) must give too.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch

from calibkit.calibrators import CALIBRATORS
from calibkit.calibrators.fitted import PostHoc
from tests.calibrators.problems import random_problem

#: Every kind but ``model`` (Neural Clamping takes the model: tests/calibrators/model/clamping).
KINDS = ("logits", "groups", "sets", "priors")
#: Every registered name of those kinds.
NAMES = CALIBRATORS.names(kind=KINDS)
#: Smaller settings where the defaults need more data (or time) than a few hundred rows.
SMALL: dict[str, dict[str, object]] = {
    "ms_odir": {"lambda_grid": [0.1, 1.0], "n_folds": 2},
    "dirichlet": {"lambda_grid": [0.1, 1.0], "n_folds": 2},
    "auto": {"methods": ["temperature", "histogram"], "n_folds": 2},
    "conformal": {"calibrator": "temperature", "conformity_score": "raps", "alpha": 0.2},
    # cells of 300 rows' size, so that both groups are patched (the defaults patch none)
    "multicalibration": {"n_bins": 5, "alpha": 0.02, "min_cell": 10},
}
#: Rows of the calibration set.
N_FIT = 300


def new(name: str, **params: Any) -> PostHoc:
    """An unfitted ``name`` with :data:`SMALL`'s settings (``params`` on top)."""
    obj: PostHoc = CALIBRATORS.create(name, **{**SMALL.get(name, {}), **params})
    return obj


def n_classes(name: str) -> int:
    return 2 if CALIBRATORS.get(name).binary_only else 3


def data(
    name: str, n: int = N_FIT, seed: int = 0, k: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Logits (float64) and labels drawn from softmax(logits / 1.5), every class present
    (``k`` classes: by default :func:`n_classes`)."""
    k = n_classes(name) if k is None else k
    z, y = random_problem(n, k, seed=seed, temperature=1.5, scale=2.5)
    y[:k] = np.arange(k)
    return z, y


def groups(n: int, unseen: bool = False) -> np.ndarray:
    """Each row's group: ``g0``, ``g1`` alternately (and ``g2``, unseen at fit, if asked)."""
    return np.array([f"g{i % (3 if unseen else 2)}" for i in range(n)])


def fit(obj: PostHoc, name: str, k: int | None = None) -> PostHoc:
    """``obj`` fitted on :func:`data` (of ``k`` classes) as its kind needs (module docstring)."""
    z, y = data(name, k=k)
    if obj.kind == "groups":
        g = groups(z.shape[0])
        z = z * np.where(g == "g1", 3.0, 1.0)[:, None]
        return obj.fit(z, y, groups=g)  # type: ignore[call-arg]
    if obj.kind == "priors":
        target, _ = data(name, n=200, seed=7, k=k)
        shift = np.linspace(1.0, -1.0, target.shape[1])  # a label-shifted target
        return obj.fit(z, y, target_logits=target + shift)  # type: ignore[call-arg]
    return obj.fit(z, y)  # type: ignore[attr-defined,no-any-return]


@functools.cache
def fitted(name: str) -> PostHoc:
    """``name`` fitted by :func:`fit` (cached: callers only read it)."""
    return fit(new(name), name)


def rows(name: str) -> tuple[np.ndarray, dict[str, Any]]:
    """Rows to predict (60 calibration rows, 60 new ones) and their per-row inputs."""
    z = np.concatenate([data(name)[0][:60], data(name, n=60, seed=1)[0]])
    metadata = {"groups": groups(z.shape[0], unseen=True)} if "groups" in _declared(name) else {}
    return z, metadata


def _declared(name: str) -> tuple[str, ...]:
    return CALIBRATORS.get(name).fit_metadata


def answer(obj: PostHoc, logits: np.ndarray, metadata: dict[str, Any]) -> np.ndarray:
    """The kind's answer: prediction sets for a conformal predictor, else probabilities."""
    if obj.kind == "sets":
        return np.asarray(obj.predict_set(logits))  # type: ignore[attr-defined]
    return np.asarray(obj.predict_proba(logits, **metadata))  # type: ignore[attr-defined]


def module_inputs(
    obj: PostHoc, logits: np.ndarray, metadata: dict[str, Any]
) -> tuple[torch.Tensor, ...]:
    """What ``obj.to_module()`` takes for these rows: the logits, and a group calibrator's
    int64 group codes (``group_codes``; -1 for a group unseen at fit)."""
    if obj.kind == "groups":
        codes = obj.group_codes(metadata["groups"])  # type: ignore[attr-defined]
        return torch.tensor(logits), torch.tensor(codes)
    return (torch.tensor(logits),)
