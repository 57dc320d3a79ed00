"""The label-shift report says what the estimate found (issue #32): EM stopped by its
iteration budget is not reported as converged, in the verdict, the body and the JSON."""

from __future__ import annotations

import dataclasses

import pytest

from calibkit import Resampling
from calibkit.calibrators.priors.estimators import EM
from calibkit.calibrators.priors.label_shift import PriorShiftAdapter
from calibkit.core.errors import ConvergenceWarning
from calibkit.core.outputs import as_outputs
from calibkit.reporting.label_shift_report import label_shift_report
from calibkit.workflows.label_shift import label_shift
from tests.calibrators.problems import random_problem

pytestmark = pytest.mark.usefixtures("one_thread")


def test_em_stopped_at_max_iter_1_is_reported_as_not_converged() -> None:
    z, y = random_problem(900, 3, seed=0)
    result = label_shift(
        as_outputs(y[:600], logits=z[:600]),
        z[600:],
        y[600:],
        calibrator=None,
        resampling=Resampling(n_boot=0),
    )
    assert result.converged is True
    assert result.caveats == ()
    plain = label_shift_report(result).results
    assert plain["converged"] is True
    assert not label_shift_report(result).document.verdict.detail.startswith("Read with")
    adapter = PriorShiftAdapter(calibrator=None, estimator=EM(max_iter=1)).fit(z[:600], y[:600])
    with pytest.warns(ConvergenceWarning):
        adapter.adapt(z[600:])
    stopped = dataclasses.replace(
        result,
        adapter=adapter,
        priors=adapter.target_priors_,
        n_iter=adapter.n_iter_,
        converged=adapter.converged_,
        caveats=tuple(adapter.caveats()),
    )
    report = label_shift_report(stopped)
    results = report.results
    assert (results["converged"], results["n_iter"]) == (False, 1)
    assert results["caveats"] == [
        "EM did not converge in max_iter=1 iteration (a prior still moved by more than "
        "tol=1e-08): the target priors are its last iterate; raise max_iter"
    ]
    verdict = report.document.verdict
    assert verdict is not None
    assert verdict.detail.startswith("Read with care: EM did not converge in 1 iteration. ")
    how, caution = report.document.body[:2]
    assert "estimated by EM (1 iteration, not converged)" in getattr(how, "text", "")
    assert getattr(caution, "text", "").startswith("Caution: EM did not converge")
    assert "caution: EM did not converge" in report.text
