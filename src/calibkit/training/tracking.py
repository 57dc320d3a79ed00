"""Per-epoch calibration tracking of held-out logits.

For each held-out split the trainer records accuracy, NLL, ECE, and the *optimal* ECE: the
lowest ECE over a temperature grid searched on that same split (Wang et al. 2021, Fig. 4).
It shows how calibratable the network is at that epoch, apart from how calibrated it is.
Accuracy, NLL and ECE come from the one mergeable accumulator,
:class:`~calibkit.metrics.StreamingCalibration` (the functions' kernels, the same numbers):
made here from the split's logits (the trainer, once per epoch on the host), or updated
batch by batch and synced by the caller (the Lightning callback).

>>> import numpy as np
>>> z = np.array([[4.0, 0.0], [0.0, 4.0], [3.0, 0.0], [0.0, 1.0]])
>>> row = track_split(z, np.array([0, 1, 1, 1]), n_bins=15)
>>> row["accuracy"], round(row["optimal_ece"], 4) <= round(row["ece"], 4)
(0.75, True)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from calibkit.calibrators.logit.temperature_grid import ece_grid_minimum
from calibkit.core.errors import InputError
from calibkit.core.outputs import as_outputs
from calibkit.metrics.streaming import StreamingCalibration

#: Temperatures searched for the optimal ECE: 0.01, 0.02, ..., 10 (as Wang et al. 2021).
TRACKING_TEMPERATURES: npt.NDArray[np.float64] = np.round(np.arange(1, 1001) * 0.01, 2)

#: Names of the values :func:`track_split` returns.
TRACKED = ("accuracy", "nll", "ece", "optimal_ece", "optimal_temperature")


def track_split(
    logits: object,
    labels: object,
    n_bins: int = 15,
    metric: StreamingCalibration | None = None,
) -> dict[str, float]:
    """Accuracy, NLL, ECE, optimal ECE and its temperature of one split's logits.

    ``metric``: the accumulator (``n_bins`` bins, top-label) already updated with these
    outputs, e.g. batch by batch and synced; None: one is made and updated here.
    """
    out = as_outputs(labels, logits=logits)
    best, optimal = ece_grid_minimum(out.scores, out.labels, TRACKING_TEMPERATURES, n_bins)
    if metric is None:
        metric = StreamingCalibration(n_bins=n_bins)
        metric.update(out)
    elif (metric.n_bins, metric.mode) != (n_bins, "top_label"):
        got = f"n_bins={metric.n_bins}, mode={metric.mode!r}"
        raise InputError("metric", f"n_bins={n_bins}, mode='top_label'", got)
    res = metric.compute()
    return {
        "accuracy": res["accuracy"],
        "nll": res["nll"],
        "ece": res["ece"],
        "optimal_ece": optimal,
        "optimal_temperature": float(TRACKING_TEMPERATURES[best]),
    }
