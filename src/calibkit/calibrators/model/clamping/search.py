"""One Neural Clamping fit per focal exponent, and the choice among them.

``gamma`` may be a pool of candidates: each is fitted (:func:`fit_gamma`) and the one
with the lowest calibration-set ECE is kept. With ``gamma_select="fast"`` and joint
training, the candidates are first ranked by the calibration ECE of the fast variant (the
initial ``delta`` and the exact temperature: one forward pass for the whole pool), and
only the best is trained jointly (:func:`search_gamma`). Each fit is a :class:`GammaFit`.

With a hold-out (:mod:`~calibkit.calibrators.model.clamping.holdout`), the in-sample ECE decides
nothing: the candidates (and the fast ranking, each fast fit guarded) are compared by
held-out NLL, and the chosen fit gives way to temperature scaling where that has the lower
held-out NLL (:func:`guard_against_ts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor, nn

from calibkit.calibrators.model.clamping.holdout import GUARDS, held_out_nll, holdout_split
from calibkit.calibrators.model.clamping.init import initial_delta
from calibkit.calibrators.model.clamping.objective import (
    default_lam,
    fit_focal_temperature,
    penalised_loss_np,
)
from calibkit.calibrators.model.clamping.passes import fused_copy, logits_pass
from calibkit.calibrators.model.clamping.settings import SGDSettings
from calibkit.calibrators.model.clamping.sgd import run_sgd
from calibkit.metrics import ece


class ClampingSpec(Protocol):
    """What a search reads of the Neural Clamping it fits (its parameters and model); a
    protocol, so that this module does not import the class that imports it."""

    model: nn.Module
    gamma: tuple[float, ...]
    lam: float | None
    init: str
    train: str
    gamma_select: str
    holdout: float
    refine_temperature: bool
    input_range: Any
    seed: int
    sgd: SGDSettings


@dataclass(frozen=True)
class GammaFit:
    """The fit of one focal exponent ``gamma``.

    Parameters
    ----------
    gamma : float
        The focal exponent.
    ece : float
        Calibration-set ECE of the fitted pair.
    delta : Tensor
        The learnt (or initial, or zero) perturbation.
    log_t : float
        The final ``log T``.
    lam : float
        The weight of ``||delta||^2`` used.
    history : list of float
        Mean objective per SGD epoch (one value, the objective at the end, without SGD).
    sgd_log_t : float
        ``log T`` where SGD left it (NaN without joint SGD or with the guard's ``delta = 0``).
    holdout_losses : list of float
        Held-out NLL of the learnt ``delta`` and of ``delta = 0`` (empty without hold-out).
    guard : str
        Which guard decided (one of :data:`~calibkit.calibrators.model.clamping.holdout.GUARDS`).
    ts_loss : float or None
        Held-out NLL of temperature scaling (None without hold-out).

    Examples
    --------
    >>> fit = GammaFit(1.0, 0.02, torch.zeros(3), 0.4, 0.1, [0.5], math.nan, [])
    >>> fit.delta_kept, round(fit.temperature, 4)
    (True, 1.4918)
    """

    gamma: float
    ece: float
    delta: Tensor
    log_t: float
    lam: float
    history: list[float]
    sgd_log_t: float
    holdout_losses: list[float]
    guard: str = GUARDS[0]
    ts_loss: float | None = None

    @property
    def delta_kept(self) -> bool:
        """Whether the hold-out guard kept the learnt ``delta`` (always, without it)."""
        return self.guard in GUARDS[:2]

    @property
    def held_out_nll(self) -> float:
        """Held-out NLL of the fit the guard kept (NaN without hold-out)."""
        return min(self.holdout_losses) if self.holdout_losses else math.nan

    @property
    def temperature(self) -> float:
        """``T = exp(log_t)``."""
        return math.exp(self.log_t)


@dataclass(frozen=True)
class _Start:
    """What every candidate of a fit shares: data, initial ``delta`` and its logits."""

    model: nn.Module  # the model for the SGD (a fused copy, or the model)
    x: Tensor
    y: Tensor
    labels: np.ndarray
    delta0: Tensor
    z0: np.ndarray
    split: tuple[Tensor, Tensor] | None  # hold-out indices (learn, held)
    z_zero: np.ndarray | None  # logits at delta = 0 (with hold-out)


def search_gamma(
    nc: ClampingSpec, x: Tensor, y: Tensor, device: torch.device
) -> tuple[GammaFit, dict[float, float]]:
    """The best :class:`GammaFit` of ``nc.gamma`` on ``(x, y)`` and the ECE by gamma."""
    start = _start(nc, x, y, device)
    eces: dict[float, float] = {}
    pool = nc.gamma
    if nc.gamma_select == "fast" and nc.train == "joint" and len(pool) > 1:
        z0, labels = start.z0, start.labels
        for g in pool:
            eces[g] = ece(labels, logits=z0 / math.exp(fit_focal_temperature(z0, labels, g)))
        rank = eces if start.split is None else {g: _fast_held_out(start, g) for g in pool}
        pool = (min(pool, key=rank.__getitem__),)
    fits = [fit_gamma(nc, start, g, device) for g in pool]
    eces.update({fit.gamma: fit.ece for fit in fits})
    held = start.split is not None
    best = min(fits, key=lambda fit: fit.held_out_nll if held else fit.ece)  # the first of ties
    return guard_against_ts(start, best), eces


def _fast_held_out(start: _Start, gamma: float) -> float:
    """Held-out NLL of the guarded fast variant at ``gamma`` (the better of the initial
    ``delta`` and ``delta = 0``)."""
    assert start.split is not None
    assert start.z_zero is not None
    learn, held = (i.numpy() for i in start.split)
    return min(held_out_nll(z, start.labels, learn, held, gamma) for z in (start.z0, start.z_zero))


def guard_against_ts(start: _Start, best: GammaFit) -> GammaFit:
    """``best``, or temperature scaling where its held-out NLL is lower (with a hold-out).

    Temperature scaling is fitted by NLL on the learning part and judged on the held-out
    part, as the candidates are; where it wins, it is refitted by NLL on the whole
    calibration set (``delta = 0``) and the fit says so (``guard="temperature scaling"``).
    """
    if start.split is None or start.z_zero is None:
        return best
    learn, held = (i.numpy() for i in start.split)
    labels, z = start.labels, start.z_zero
    ts = held_out_nll(z, labels, learn, held, 0.0)
    if not best.held_out_nll > ts:
        return replace(best, ts_loss=ts)
    log_t = fit_focal_temperature(z, labels, 0.0)
    delta = torch.zeros_like(start.delta0)
    history = [penalised_loss_np(z / math.exp(log_t), labels, delta, 0.0, best.lam)]
    score = ece(labels, logits=z / math.exp(log_t))
    return replace(
        best,
        ece=score,
        delta=delta,
        log_t=log_t,
        history=history,
        sgd_log_t=math.nan,
        guard=GUARDS[3],
        ts_loss=ts,
    )


def _start(nc: ClampingSpec, x: Tensor, y: Tensor, device: torch.device) -> _Start:
    sgd = nc.sgd
    fast = fused_copy(nc.model) if sgd.fuse else nc.model
    delta0 = initial_delta(
        nc.init,
        fast,
        x,
        input_range=nc.input_range,
        seed=nc.seed,
        batch_size=sgd.batch_size,
        device=device,
    )
    z0 = logits_pass(nc.model, x, delta0, sgd.batch_size, device).numpy()
    split = holdout_split(len(y), nc.holdout, nc.seed) if nc.holdout else None
    z_zero = None
    if split is not None:
        zero = torch.zeros_like(delta0)
        z_zero = logits_pass(nc.model, x, zero, sgd.batch_size, device).numpy()
    return _Start(fast, x, y, y.numpy(), delta0, z0, split, z_zero)


def fit_gamma(nc: ClampingSpec, start: _Start, gamma: float, device: torch.device) -> GammaFit:
    """Fit ``delta`` and ``T`` of ``nc`` for one ``gamma``: SGD (unless ``train`` is
    ``"temperature"``), the hold-out guard, then the exact temperature step."""
    labels = start.labels
    lam = default_lam(start.z0, labels, gamma) if nc.lam is None else nc.lam
    history: list[float] = []
    if nc.train == "temperature":
        delta, z, sgd_log_t = start.delta0, start.z0, math.nan
    else:
        learn = slice(None) if start.split is None else start.split[0]
        joint = nc.train == "joint"
        x, y = start.x[learn], start.y[learn]
        delta, sgd_log_t, history = run_sgd(
            start.model,
            x,
            y,
            start.delta0,
            gamma,
            lam,
            nc.sgd,
            joint=joint,
            seed=nc.seed,
            device=device,
        )
        z = logits_pass(nc.model, start.x, delta, nc.sgd.batch_size, device).numpy()
    held_losses: list[float] = []
    guard = GUARDS[0]
    if start.split is not None and start.z_zero is not None:
        learn_np, held_np = (i.numpy() for i in start.split)
        held_losses = [
            held_out_nll(zz, labels, learn_np, held_np, gamma) for zz in (z, start.z_zero)
        ]
        guard = GUARDS[1] if held_losses[0] < held_losses[1] else GUARDS[2]
        if guard == GUARDS[2]:  # delta = 0 does as well
            delta, z, sgd_log_t = torch.zeros_like(start.delta0), start.z_zero, math.nan
    # the objective's exact minimum over T at this delta (the penalty does not depend on
    # T): never above where SGD stopped
    exact = math.isnan(sgd_log_t) or (nc.refine_temperature and nc.train == "joint")
    log_t = fit_focal_temperature(z, labels, gamma) if exact else sgd_log_t
    if not history:
        history = [penalised_loss_np(z / math.exp(log_t), labels, delta, gamma, lam)]
    score = ece(labels, logits=z / math.exp(log_t))
    return GammaFit(gamma, score, delta, log_t, lam, history, sgd_log_t, held_losses, guard)
