"""Workflows built on the library: comparing calibrators on held-out data, conformal sets,
label shift, calibration under corruption, and the demo.

They compute and return results; writing reports is :mod:`calibkit.reporting`'s job.
Each name loads its module on first use (PEP 562). ``compare`` and ``label_shift`` are
functions of the modules of the same name: they are exported at the package root
(``calibkit.compare``, ``calibkit.label_shift``), not here, where importing the module
would hide the function behind it.
"""

from __future__ import annotations

from calibkit.core.lazy import lazy_exports

#: Each module -> the names it gives the package (loaded on first access).
_MODULES: dict[str, str] = {
    "calibkit.core.splits": "split_outputs",
    "calibkit.workflows.comparison": "Comparison MethodResult",
    "calibkit.workflows.recommendation": "Recommendation",
    "calibkit.workflows.conformal": "SetsResult conformal_sets",
    "calibkit.workflows.label_shift": ("LabelShiftResult resample_to_priors simulate_label_shift"),
    "calibkit.workflows.shift": "ShiftRow shift_table severity_summary",
    "calibkit.workflows.shift_study": "ShiftResult ShiftSettings run_shift",
    "calibkit.workflows.demo": "DemoResult DemoSettings run_demo",
    "calibkit.workflows.evaluate": "EvaluationRun evaluate_outputs",
}
__all__, __getattr__ = lazy_exports(__name__, _MODULES)
