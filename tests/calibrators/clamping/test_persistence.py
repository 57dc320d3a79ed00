"""Tests of saving and loading a fitted Neural Clamping."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch

from calibkit.calibrators.clamping import NeuralClamping, SGDSettings
from calibkit.core.errors import InputError
from tests.calibrators.clamping.problems import problem

pytestmark = pytest.mark.usefixtures("one_thread")


def test_save_load_round_trip(tmp_path: Path) -> None:
    model, x, y = problem()
    nc = NeuralClamping(
        model, gamma=(0.0, 1.0), init="random", sgd=SGDSettings(epochs=2, progress=False)
    )
    nc.fit(x, y)
    nc.save(tmp_path / "nc")
    sidecar = json.loads((tmp_path / "nc.json").read_text())
    assert sidecar["calibkit_neural_clamping"] == 1
    back = NeuralClamping.load(tmp_path / "nc", model)
    assert torch.equal(back.delta_, nc.delta_)
    assert back.temperature_ == nc.temperature_
    assert back.fitted_state().keys() == nc.fitted_state().keys()
    assert back.history_ == nc.history_
    assert back.ece_by_gamma_ == nc.ece_by_gamma_
    assert back.sgd_log_temperature_ == nc.sgd_log_temperature_
    assert back.delta_kept_
    assert back.holdout_losses_ == []
    assert (back.guard_, back.holdout_ts_loss_) == ("no hold-out", None)
    held = NeuralClamping(
        model, init="random", holdout=0.2, sgd=SGDSettings(epochs=2, progress=False)
    ).fit(x, y)
    held.save(tmp_path / "held")
    again = NeuralClamping.load(tmp_path / "held", model)
    assert (again.delta_kept_, again.holdout_losses_) == (held.delta_kept_, held.holdout_losses_)
    assert held.guard_ in ("delta kept", "delta dropped", "temperature scaling")
    assert (again.guard_, again.holdout_ts_loss_) == (held.guard_, held.holdout_ts_loss_)
    assert again.guard == held.guard
    assert back.get_params() == nc.get_params()
    assert np.array_equal(back.predict_proba(x), nc.predict_proba(x))
    fast = NeuralClamping.fast(model, sgd=SGDSettings(progress=False)).fit(x, y)
    fast.save(tmp_path / "fast")  # no SGD temperature: null in the JSON, NaN again on load
    assert json.loads((tmp_path / "fast.json").read_text())["state"]["sgd_log_temperature_"] is None
    assert math.isnan(NeuralClamping.load(tmp_path / "fast", model).sgd_log_temperature_)
    (tmp_path / "nc.safetensors").write_bytes(b"garbage")
    with pytest.raises(InputError, match="checksum"):
        NeuralClamping.load(tmp_path / "nc", model)
    with pytest.raises(InputError, match="path"):
        NeuralClamping.load(tmp_path / "absent", model)


DATA = Path(__file__).parent / "data"


def test_a_file_written_before_the_settings_were_grouped_loads() -> None:
    """``data/nc_v1.*``: written by the flat-constructor code (format version 1), a fit of
    ``problem()`` with gamma (0, 1), random init, 2 epochs of batches of 64, hold-out 0.2."""
    model, x, _ = problem()
    nc = NeuralClamping.load(DATA / "nc_v1", model)
    doc = json.loads((DATA / "nc_v1.json").read_text())
    # the file records the precision it was fitted in (float32, the default then)
    assert nc.sgd == SGDSettings(batch_size=64, epochs=2, progress=False, precision="float32")
    assert (nc.gamma, nc.init, nc.holdout) == ((0.0, 1.0), "random", 0.2)
    assert nc.temperature_ == doc["state"]["temperature_"]
    assert nc.history_ == doc["state"]["history_"]
    assert nc.ece_by_gamma_ == {0.0: doc["state"]["ece_by_gamma_"][0][1], 1.0: 0.08439543221295}
    # stored values come back exactly: the fitted state is read, not recomputed
    assert (nc.holdout_losses_, nc.delta_kept_) == (doc["state"]["holdout_losses_"], True)
    assert nc.sgd_log_temperature_ == doc["state"]["sgd_log_temperature_"]
    # written before the guard said which of it decided: filled in as what that fit was
    assert "guard_" not in doc["state"]
    assert (nc.guard_, nc.holdout_ts_loss_) == ("delta kept", None)
    assert nc.guard.startswith("delta kept (held-out NLL ")
    stored = safetensors.torch.load_file(DATA / "nc_v1.safetensors")["delta"]
    assert torch.equal(nc.delta_, stored)
    # the predictions are recomputed by float32 dot products (8 terms, |terms| summing to ~40)
    # on whatever CPU runs the test: a logit may move by ~8 * 2**-24 * 40 = 2e-5, and so the
    # relative error of a probability (that of its log) is up to ~2e-5 / T; measured against
    # this file (written on an AMD EPYC): 2.4e-6 on an AVX-512/AMX Xeon, 1.1e-5 with
    # ATEN_CPU_CAPABILITY=default; a wrong temperature or delta moves them by > 1e-2
    np.testing.assert_allclose(nc.predict_proba(x), np.load(DATA / "nc_v1_proba.npy"), rtol=1e-4)


def test_a_guard_that_disagrees_with_the_fit_is_refused(tmp_path: Path) -> None:
    model, x, y = problem()
    sgd = SGDSettings(epochs=1, batch_size=64, progress=False)
    NeuralClamping(model, holdout=0.2, sgd=sgd).fit(x, y).save(tmp_path / "nc")
    doc = json.loads((tmp_path / "nc.json").read_text())
    for guard, kept in [
        ("temperature scaling", True),
        ("delta kept", False),
        ("no hold-out", True),
    ]:
        doc["state"].update(guard_=guard, delta_kept_=kept)
        (tmp_path / "nc.json").write_text(json.dumps(doc))
        with pytest.raises(InputError, match=r"state\.guard_"):
            NeuralClamping.load(tmp_path / "nc", model)
    doc["state"]["guard_"] = "trust me"
    (tmp_path / "nc.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"state\.guard_"):
        NeuralClamping.load(tmp_path / "nc", model)


def test_the_sidecar_keeps_the_settings_flat(tmp_path: Path) -> None:
    model, x, y = problem()
    sgd = SGDSettings(epochs=1, batch_size=64, progress=False)
    NeuralClamping(model, sgd=sgd).fit(x, y).save(tmp_path / "nc")
    params = json.loads((tmp_path / "nc.json").read_text())["params"]
    old = json.loads((DATA / "nc_v1.json").read_text())["params"]
    assert set(params) == set(old)
    assert (params["epochs"], params["batch_size"]) == (1, 64)
