"""Write the format-2 files of ``test_legacy_files.py`` with the code that wrote them.

    new=$(git log --format=%h -S'FORMAT_VERSION = 3' -- src/calibkit/calibrators/persistence.py)
    mkdir /tmp/old && git archive "$new^" src | tar -x -C /tmp/old   # the last format-2 code
    PYTHONPATH=/tmp/old/src python tests/calibrators/data/write_v2_files.py

For each case it writes ``v2_<case>.json`` (that code's ``save``: ``{"calibkit": 2, ...}``,
without the records format 3 added, ``fitted_with_`` and ``input_kind_``) and
``v2_<case>.expected.json``: a small fixed input (logits, or log-probabilities for a map
fitted on probabilities) and what that code predicted on it (``probs``; ``sets`` too for a
conformal predictor, whose scores the script checks are not within 1e-6 of a threshold).
Run with the current code it would write format-3 files instead: the point is the old
writer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def _problem(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits N(0, 9) and labels drawn from softmax(logits / 2) (as write_v1_files)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, k)) * 3.0
    p = np.exp((z - z.max(axis=1, keepdims=True)) / 2.0)
    cdf = np.cumsum(p, axis=1)
    u = rng.uniform(size=(n, 1)) * cdf[:, -1:]
    return z, np.minimum((cdf < u).sum(axis=1), k - 1)


def _log_probs(z: np.ndarray) -> np.ndarray:
    """Log-probabilities as a probability file gives them (float32 probabilities)."""
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p = (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
    return np.log(p.astype(np.float64))


def _cases() -> dict[str, tuple[Any, bool]]:
    """Each case's fitted object, and whether it was fitted on log-probabilities."""
    from calibkit.calibrators import create_calibrator
    from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
    from calibkit.calibrators.sets.conformal import ConformalClassifier

    z, y = _problem(400, 3, 0)
    target, _ = _problem(300, 3, 5)
    target = target + np.array([1.5, 0.0, -1.0])  # a shifted target
    return {
        "temperature": (create_calibrator("temperature").fit(z, y), False),
        "vector": (create_calibrator("vector", shrink="none").fit(z, y), False),
        "matrix_on_probs": (
            create_calibrator("matrix", shrink="none").fit(_log_probs(z), y),
            True,
        ),
        "conformal_raps": (
            ConformalClassifier(score="raps", alpha=0.2, calibrator="temperature").fit(z, y),
            False,
        ),
        "prior_shift": (
            PriorShiftAdapter(estimator="bbse", calibrator="temperature", soft=True)
            .fit(z, y)
            .adapt(target),
            False,
        ),
    }


def main() -> None:
    x = np.round(np.random.default_rng(9).standard_normal((8, 3)) * 3.0, 3)
    for case, (obj, on_probs) in _cases().items():
        obj.save(HERE / f"v2_{case}.json")
        inputs = _log_probs(x) if on_probs else x
        expected: dict[str, Any] = {"logits": inputs.tolist()}
        if hasattr(obj, "predict_set"):
            expected["sets"] = obj.predict_set(inputs).tolist()
            gap = np.abs(obj.predict_scores(inputs) - obj.thresholds_[None, :])
            gap = gap[np.isfinite(gap)]
            assert gap.size == 0 or gap.min() > 1e-6, (case, gap.min())
        expected["probs"] = obj.predict_proba(inputs).tolist()
        text = json.dumps(expected, indent=1) + "\n"
        (HERE / f"v2_{case}.expected.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
