"""Write the calibkit 0.x files of ``test_legacy_files.py`` with the code that wrote them.

    git worktree add /tmp/old 3b6d706   # the last commit before the format-2 document
    PYTHONPATH=/tmp/old/src python tests/calibrators/data/write_v1_files.py
    git worktree remove /tmp/old

For each case it writes ``v1_<case>.json`` (that code's ``save``: ``calibkit_calibrator``,
``calibkit_conformal`` or ``calibkit_label_shift`` version 1) and ``v1_<case>.expected.json``:
a small fixed input (logits, and groups for the group calibrator) and what that code
predicted on it (``probs``; ``sets`` too for a conformal predictor, whose scores the script
checks are not within 1e-6 of a threshold). Run with the current code it would write
format-2 files instead: the point is the old writer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def _problem(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits N(0, 9) and labels drawn from softmax(logits / 2) (as tests' random_problem)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k)) * 3.0
    p = np.exp((z - z.max(axis=1, keepdims=True)) / 2.0)
    cdf = np.cumsum(p, axis=1)
    u = rng.uniform(size=(n, 1)) * cdf[:, -1:]
    return z, np.minimum((cdf < u).sum(axis=1), k - 1)


def _cases() -> dict[str, tuple[Any, dict[str, Any]]]:
    from calibkit.calibrators import create_calibrator
    from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
    from calibkit.calibrators.sets.conformal import ConformalClassifier

    z, y = _problem(400, 3, 0)
    groups = np.where(np.arange(400) % 3 == 0, "a", "b")
    target, _ = _problem(300, 3, 5)
    target = target + np.array([1.5, 0.0, -1.0])  # a shifted target
    auto = {"methods": ["temperature", "vector", "histogram"], "n_folds": 2}
    return {
        "temperature": (create_calibrator("temperature").fit(z, y), {}),
        "dirichlet": (
            create_calibrator("dirichlet", lambda_grid=[0.01, 1.0], n_folds=2).fit(z, y),
            {},
        ),
        "auto": (create_calibrator("auto", **auto).fit(z, y), {}),
        "temperature_groupwise": (
            create_calibrator("temperature_groupwise", min_group_size=60).fit(z, y, groups=groups),
            {"groups": ["a", "b", "a", "c", "b", "a", "c", "b"]},  # "c": unseen at fit
        ),
        "conformal": (
            ConformalClassifier(score="raps", alpha=0.2, calibrator="temperature").fit(z, y),
            {},
        ),
        "conformal_full_sets": (  # 40 rows are too few for alpha = 0.01: thresholds inf
            ConformalClassifier(
                score="aps", alpha=0.01, allow_full_sets=True, calibrator_split=None
            ).fit(z[:40], y[:40]),
            {},
        ),
        "prior_shift": (
            PriorShiftAdapter(method="em", calibrator="bcts").fit(z, y).adapt(target),
            {},
        ),
    }


def main() -> None:
    x = np.round(np.random.default_rng(9).standard_normal((8, 3)) * 3.0, 3)
    for case, (obj, metadata) in _cases().items():
        obj.save(HERE / f"v1_{case}.json")
        expected: dict[str, Any] = {"logits": x.tolist(), **metadata}
        if hasattr(obj, "predict_set"):
            expected["sets"] = obj.predict_set(x).tolist()
            gap = np.abs(obj.predict_scores(x) - obj.thresholds_[None, :])
            gap = gap[np.isfinite(gap)]
            assert gap.size == 0 or gap.min() > 1e-6, (case, gap.min())
        expected["probs"] = obj.predict_proba(x, **metadata).tolist()
        text = json.dumps(expected, indent=1) + "\n"
        (HERE / f"v1_{case}.expected.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
