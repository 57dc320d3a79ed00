"""The truths of simulated outputs equal brute-force integration of their declarations.

Everything here is written from the documented declarations alone (the density of the
confidence from ``scipy.stats.beta``, each shape's formula, the shares' mixing ``lam(c)``
and ``D_k ~ Beta(alpha, (K - 2) alpha)``), integrated with ``scipy.integrate.quad``
(nested for the class-wise terms) and never with the module's quadrature, quantiles or
incomplete Beta functions.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy import integrate, special, stats

from calibkit.metrics.simulated import simulate
from calibkit.metrics.simulated_quadrature import integrate_pieces, sign_changes
from calibkit.metrics.simulated_truth import SimulationTruth, population_truth

Fn = Callable[[float], float]
TOL = 1e-9  # the module claims ~1e-12; quad's own error is the looser bound


def quad(g: Fn, a: float, b: float) -> float:
    if b - a < 1e-12:  # quad warns on a piece this thin: the midpoint is as good
        return g((a + b) / 2) * (b - a) if b > a else 0.0
    return float(integrate.quad(g, a, b, limit=400, epsabs=1e-12, epsrel=1e-11)[0])


def beta_pdf(a: float, b: float, low: float = 0.0, high: float = 1.0) -> Fn:
    """The Beta(a, b) density on [low, high], in plain floats (fast enough to nest quads)."""
    norm = 1.0 / (special.beta(a, b) * (high - low))

    def pdf(c: float) -> float:
        x = (c - low) / (high - low)
        return float(norm * x ** (a - 1) * (1 - x) ** (b - 1)) if 0 < x < 1 else 0.0

    return pdf


def declared_map(low: float, high: float, kw: dict[str, Any]) -> list[Fn]:
    """P(correct | c) of each group / class / the one map, from the docstring's formulas."""

    def constant(g: float) -> Fn:
        return lambda c: min(max(c - g, 0.0), 1.0)

    def sign_change(g: float) -> Fn:
        return lambda c: min(max(c - g * (2 * (c - low) / (high - low) - 1), 0.0), 1.0)

    shape = kw["shape"]
    if shape == "platt":
        a, b = kw["params"]
        return [lambda c: 1 / (1 + np.exp(-(a * np.log(c / (1 - c)) + b)))]
    if shape == "beta":
        a, b, m = kw["params"]
        return [lambda c: 1 / (1 + np.exp(-(m + a * np.log(c) - b * np.log(1 - c))))]
    if shape == "classwise":
        return [constant(g) for g in kw["class_gaps"]]
    make = sign_change if shape == "sign_change" else constant
    return [make(g) for g in kw.get("group_gaps", [kw.get("gap")])]


def brute_force(case: dict[str, Any]) -> dict[str, Any]:
    """Every truth of ``case`` (the arguments of ``simulate``), by quad."""
    k, n_bins = case["n_classes"], case["n_bins"]
    low, high = case.get("low", 1.0 / k), case.get("high", 1.0)
    a, b = case.get("confidence", (1.0, 1.0))
    pdf = beta_pdf(a, b, low, high)
    maps = declared_map(low, high, case)
    weights = np.asarray(case.get("group_weights", [1.0] * len(maps)), dtype=float)
    weights = weights / weights.sum()
    if case["shape"] == "classwise":
        weights = np.full(k, 1.0 / k)

    def pooled(c: float) -> float:
        return float(sum(w * f(c) for w, f in zip(weights, maps, strict=True)))

    def e(g: Fn, lo: float = low, hi: float = high) -> float:  # E[g(c); lo <= c < hi]
        return quad(lambda c: g(c) * pdf(c), max(lo, low), min(hi, high))

    out: dict[str, Any] = {
        "accuracy": e(pooled),
        "confidence": e(lambda c: c),
        "true_ece": e(lambda c: abs(c - pooled(c))),
        "true_rmsce": np.sqrt(e(lambda c: (c - pooled(c)) ** 2)),
    }
    edges = np.arange(n_bins + 1) / n_bins
    mass = np.array([e(lambda c: 1.0, x, y) for x, y in itertools.pairwise(edges)])
    gap = np.array([e(lambda c: pooled(c) - c, x, y) for x, y in itertools.pairwise(edges)])
    out["ece"] = np.abs(gap).sum()
    out["rmsce"] = np.sqrt(sum(g**2 / m for g, m in zip(gap, mass, strict=True) if m > 0))
    out["mce"] = max(abs(g) / m for g, m in zip(gap, mass, strict=True) if m > 0)
    q = stats.beta(a, b, loc=low, scale=high - low).ppf(np.arange(n_bins + 1) / n_bins)
    out["aece"] = sum(abs(e(lambda c: pooled(c) - c, x, y)) for x, y in itertools.pairwise(q))
    grid = np.linspace(low, high, 4001)
    steps = [e(lambda c: pooled(c) - c, x, y) for x, y in itertools.pairwise(grid)]
    out["ks"] = np.abs(np.cumsum(steps)).max()
    if case["shape"] in ("groups",) or "group_gaps" in case:
        out["group_ece"] = [
            sum(abs(e(lambda c, f=f: f(c) - c, x, y)) for x, y in itertools.pairwise(edges))
            for f in maps
        ]
        out["group_true_ece"] = [e(lambda c, f=f: abs(c - f(c))) for f in maps]
        out["group_accuracy"] = [e(f) for f in maps]
    class_maps = maps if case["shape"] == "classwise" else [pooled] * k
    out["classwise"] = classwise(
        k, class_maps, pdf, low, high, edges, case.get("concentration", 1.0)
    )
    return out


def classwise(
    k: int, maps: list[Fn], pdf: Fn, low: float, high: float, edges: Any, alpha: float
) -> Any:
    """``T[j, b] = E[(1{y = j} - p_j) 1{p_j in b}]``: class ``j`` predicted (probability
    1/K, ``p_j = c``, ``P(y = j) = f_j(c)``), or class ``m != j`` predicted (``p_j = (1 - c)
    d_j``, ``P(y = j) = (1 - f_m(c)) d_j``), ``d_j`` integrated against its density."""
    v = 1.0 / (k - 1)
    share_pdf = beta_pdf(alpha, (k - 2) * alpha) if k > 2 else None

    def share_term(c: float, lo: float, hi: float) -> float:  # E[d 1{(1 - c) d in [lo, hi)}]
        if share_pdf is None:
            return 1.0 if lo <= 1 - c < hi else 0.0
        lam = min(max((1 - 2 * c) / ((1 - c) * (1 - v)), 0.0), 1.0)
        shift, scale = lam * v, 1 - lam
        x0 = min(max((lo / (1 - c) - shift) / scale, 0.0), 1.0)
        x1 = min(max((hi / (1 - c) - shift) / scale, 0.0), 1.0)
        return quad(lambda x: (shift + scale * x) * share_pdf(x), x0, x1)

    bins = list(itertools.pairwise(edges))
    top = np.array(
        [
            [quad(lambda c, f=f: (f(c) - c) * pdf(c), max(x, low), min(y, high)) for x, y in bins]
            for f in maps
        ]
    )
    other = np.array(
        [
            [
                quad(lambda c, f=f, x=x, y=y: (c - f(c)) * share_term(c, x, y) * pdf(c), low, high)
                for x, y in bins
            ]
            for f in maps
        ]
    )
    return top / k + (other.sum(axis=0) - other) / k


CASES = [
    {"n_classes": 3, "shape": "constant", "gap": 0.1, "n_bins": 5},
    {
        "n_classes": 4,
        "shape": "sign_change",
        "gap": 0.15,
        "low": 0.3,
        "high": 0.95,
        "confidence": (2.0, 0.7),
        "concentration": 2.0,
        "n_bins": 6,
    },
    {"n_classes": 2, "shape": "platt", "params": (0.5, 0.2), "n_bins": 7},
    {
        "n_classes": 5,
        "shape": "beta",
        "params": (1.0, 0.5, 0.1),
        "low": 0.2,
        "confidence": (1.5, 1.2),
        "concentration": 1.5,
        "n_bins": 4,
    },
    {"n_classes": 3, "shape": "classwise", "class_gaps": (0.1, -0.05, 0.2), "n_bins": 4},
    {
        "n_classes": 3,
        "shape": "groups",
        "group_gaps": (-0.1, 0.0, 0.15),
        "group_weights": (1.0, 2.0, 1.0),
        "n_bins": 5,
    },
]


#: quad's own warning about its roundoff near a density's infinite end.
QUAD_ROUNDOFF = pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
#: Densities infinite at an end (the confidence's and the shares'): quad is slow there.
SINGULAR = {
    "n_classes": 5,
    "shape": "beta",
    "params": (1.0, 0.5, 0.1),
    "low": 0.2,
    "confidence": (0.6, 0.8),
    "concentration": 0.5,
    "n_bins": 3,
}


@pytest.fixture(
    scope="module",
    params=[*CASES, pytest.param(SINGULAR, marks=[pytest.mark.slow, QUAD_ROUNDOFF])],
    ids=lambda c: f"{c['shape']}-K{c['n_classes']}-{c['n_bins']}bins",
)
def pair(request: pytest.FixtureRequest) -> tuple[SimulationTruth, dict[str, Any]]:
    case = request.param
    truth = simulate(10, seed=0, **case).truth
    return truth, {"case": case, **brute_force(case)}


@pytest.mark.parametrize(
    "name",
    ["accuracy", "confidence", "true_ece", "true_rmsce", "ece", "rmsce", "mce", "aece", "ks"],
)
def test_top_label_truths_equal_brute_force(
    pair: tuple[SimulationTruth, dict[str, Any]], name: str
) -> None:
    truth, expected = pair
    assert getattr(truth, name) == pytest.approx(expected[name], abs=TOL if name != "ks" else 1e-7)


def test_classwise_truth_equals_brute_force(pair: tuple[SimulationTruth, dict[str, Any]]) -> None:
    truth, expected = pair
    np.testing.assert_allclose(truth.classwise, expected["classwise"], atol=TOL)
    k = expected["case"]["n_classes"]
    assert truth.sce == pytest.approx(np.abs(expected["classwise"]).sum() / k, abs=TOL)


def test_group_truths_equal_brute_force(pair: tuple[SimulationTruth, dict[str, Any]]) -> None:
    truth, expected = pair
    if "group_ece" not in expected:
        assert truth.group_ece == ()
        assert truth.group_gap is None
        return
    for name in ("group_ece", "group_true_ece", "group_accuracy"):
        np.testing.assert_allclose(getattr(truth, name), expected[name], atol=TOL)
    ece, true = expected["group_ece"], expected["group_true_ece"]
    assert truth.group_gap == pytest.approx(max(ece) - min(ece), abs=TOL)
    assert truth.group_true_gap == pytest.approx(max(true) - min(true), abs=TOL)


def test_bins_hold_the_population_sums(pair: tuple[SimulationTruth, dict[str, Any]]) -> None:
    truth, _ = pair
    for bins in (truth.bins, truth.mass_bins):
        assert bins.total == pytest.approx(1.0, abs=1e-14)
        assert bins.confidence_sum.sum() == pytest.approx(truth.confidence, abs=1e-12)
        assert bins.accuracy_sum.sum() == pytest.approx(truth.accuracy, abs=1e-12)
    assert truth.mass_bins.counts == pytest.approx(np.full(truth.n_bins, 1 / truth.n_bins))


def test_the_true_p_correct_is_the_declared_map() -> None:
    c = np.linspace(0.25, 0.999, 50)
    truth = simulate(10, 4, shape="platt", params=(2.0, 1.0), seed=0).truth
    expected = 1 / (1 + np.exp(-(2 * np.log(c / (1 - c)) + 1)))
    np.testing.assert_allclose(truth.p_correct(c), expected, rtol=1e-13)
    grouped = simulate(10, 4, shape="groups", group_gaps=(0.1, -0.1), seed=0).truth
    np.testing.assert_allclose(grouped.p_correct(c, group=0), np.clip(c - 0.1, 0, 1))
    np.testing.assert_allclose(
        grouped.p_correct(c), (np.clip(c - 0.1, 0, 1) + np.clip(c + 0.1, 0, 1)) / 2
    )


def test_values_use_calibkit_metric_names() -> None:
    truth = simulate(10, 3, seed=0).truth
    assert set(truth.values) == {
        "accuracy", "confidence", "ece", "aece", "mce", "rmsce", "ece_debiased", "sce", "ks"
    }  # fmt: skip
    assert truth.values["ece_debiased"] == truth.rmsce


def test_a_truth_is_computed_once_per_declaration() -> None:
    one, two = simulate(10, 3, seed=0), simulate(20, 3, seed=5)
    assert one.truth is two.truth
    assert population_truth(one.model, 7) is one.truth_for(7)


def test_quadrature_is_exact_on_known_integrals() -> None:
    def fun(x: Any) -> Any:
        return np.stack([x**14, np.sqrt(x), np.abs(x - 0.3), x**0.3], axis=1)

    got = integrate_pieces(fun, np.array([0.0, 0.3, 1.0])).sum(axis=0)
    np.testing.assert_allclose(got, [1 / 15, 2 / 3, 0.49 / 2 + 0.09 / 2, 1 / 1.3], atol=1e-12)
    roots = sign_changes(lambda x: np.sin(20 * x), np.array([0.01, 1.0]))
    np.testing.assert_allclose(roots, np.pi * np.arange(1, 7) / 20, atol=1e-14)
