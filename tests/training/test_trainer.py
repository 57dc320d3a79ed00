"""Tests of the training loop: determinism, resume, validation, tracking, progress."""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from calibkit.core.errors import InputError
from calibkit.core.progress import ProgressEvent, progress_of
from calibkit.models import mlp
from calibkit.training import (
    TRACKED,
    TrainConfig,
    TrainResult,
    predict_logits,
    train,
    training_loss,
)

TIMING = ("seconds", "train_seconds", "eval_seconds", "tracking_seconds")


pytestmark = pytest.mark.usefixtures("one_thread")


def _images(n: int = 48, k: int = 3, seed: int = 0) -> tuple[Tensor, Tensor]:
    """An easy image problem: class c has a bright patch in column block c."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % k
    x = torch.randn(n, 1, 8, 8, generator=g) * 0.3
    for c in range(k):
        x[y == c, :, :, 2 * c : 2 * c + 2] += 2.0
    return x, y


def _model(k: int = 3, init: int = 0, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(init)
    return mlp(k, in_channels=1, input_size=8, hidden=(16,), dropout=dropout)


def _strip(history: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in h.items() if k not in TIMING} for h in history]


def _same_state(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def _run(
    cfg: TrainConfig,
    seed: int = 0,
    init: int = 0,
    checkpoint: Path | None = None,
    loss_fn: Callable[[Tensor, Tensor], Tensor] | None = None,
    dropout: float = 0.0,
) -> tuple[nn.Module, TrainResult]:
    x, y = _images()
    hx, hy = _images(24, seed=1)
    model = _model(init=init, dropout=dropout)
    result = train(
        model,
        (x, y),
        cfg,
        seed=seed,
        held_out={"val": (hx, hy)},
        loss_fn=loss_fn,
        checkpoint=checkpoint,
    )
    return model, result


# --- (a) determinism ----------------------------------------------------------------------


def test_same_seed_is_bit_identical_and_other_seed_differs() -> None:
    cfg = TrainConfig(epochs=2, batch_size=16, lr=0.01, augment=True)
    m1, r1 = _run(cfg, seed=5, dropout=0.5)
    m2, r2 = _run(cfg, seed=5, dropout=0.5)
    assert _same_state(m1, m2)
    assert _strip(r1.history) == _strip(r2.history)
    np.testing.assert_array_equal(r1.logits["val"], r2.logits["val"])
    m3, r3 = _run(cfg, seed=6, dropout=0.5)
    assert not _same_state(m1, m3)
    assert _strip(r1.history) != _strip(r3.history)


def test_init_seed_matters_and_train_reseeds_global_rng() -> None:
    cfg = TrainConfig(epochs=1, batch_size=16, lr=0.01)
    m1, _ = _run(cfg, init=0)
    m2, _ = _run(cfg, init=1)
    assert not _same_state(m1, m2)
    # the global generator is reseeded by train: dropout does not depend on prior draws
    x, y = _images()
    models = []
    for burn in (0, 10):
        model = _model(dropout=0.5)
        torch.rand(burn)
        train(model, (x, y), cfg, seed=3, held_out={})
        models.append(model)
    assert _same_state(*models)


# --- (b) resume ---------------------------------------------------------------------------


class Killed(Exception):
    """Stands for the process being killed in the middle of an epoch."""


def _killed_after(batches: int) -> Callable[[Tensor, Tensor], Tensor]:
    """Cross-entropy (the default loss) that raises on batch number ``batches`` + 1."""
    count = [0]

    def loss(logits: Tensor, labels: Tensor) -> Tensor:
        if count[0] == batches:
            raise Killed
        count[0] += 1
        return nn.functional.cross_entropy(logits, labels)

    return loss


ONECYCLE = TrainConfig(epochs=4, batch_size=16, lr=0.02, schedule="onecycle", augment=True)


@pytest.mark.parametrize(
    ("cfg", "dropout"),
    [(ONECYCLE, 0.0), (ONECYCLE.replace(augment=False), 0.5), (ONECYCLE, 0.5)],
    ids=["adam-onecycle-augment", "adam-onecycle-dropout", "adam-onecycle-augment-dropout"],
)
def test_resume_after_a_kill_is_bit_identical(
    tmp_path: Path, cfg: TrainConfig, dropout: float
) -> None:
    ma, ra = _run(cfg, seed=7, checkpoint=tmp_path / "a.pt", dropout=dropout)
    ck = tmp_path / "ck.pt"
    with pytest.raises(Killed):  # killed in epoch 3 (3 batches per epoch)
        _run(cfg, seed=7, checkpoint=ck, dropout=dropout, loss_fn=_killed_after(7))
    assert ck.is_file()
    torch.manual_seed(123)  # the resumed process's global generator is anything
    mb, rb = _run(cfg, seed=7, checkpoint=ck, dropout=dropout)
    assert _same_state(ma, mb)
    np.testing.assert_array_equal(ra.logits["val"], rb.logits["val"])
    assert _strip(ra.history) == _strip(rb.history)
    assert [h["epoch"] for h in rb.history] == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize(
    ("cfg", "dropout"),
    [
        (TrainConfig(epochs=4, batch_size=16, lr=0.02, augment=True), 0.5),
        (
            TrainConfig(
                epochs=4,
                batch_size=16,
                optimizer="sgd",
                lr=0.05,
                nesterov=True,
                schedule="step",
                milestones=(2, 3),
                augment=True,
            ),
            0.5,
        ),
    ],
    ids=["adam-none-augment-dropout", "sgd-step-augment-dropout"],
)
def test_extending_a_finished_run_is_bit_identical(
    tmp_path: Path, cfg: TrainConfig, dropout: float
) -> None:
    """Schedules that do not depend on the run length: 2 epochs, then 2 more = 4 in one go."""
    ma, ra = _run(cfg, seed=7, checkpoint=tmp_path / "a.pt", dropout=dropout)
    ck = tmp_path / "ck.pt"
    _, first = _run(cfg.replace(epochs=2), seed=7, checkpoint=ck, dropout=dropout)
    assert len(first.history) == 2
    torch.manual_seed(123)
    mb, rb = _run(cfg, seed=7, checkpoint=ck, dropout=dropout)
    assert _same_state(ma, mb)
    np.testing.assert_array_equal(ra.logits["val"], rb.logits["val"])
    assert _strip(ra.history) == _strip(rb.history)
    assert rb.history[:2] == first.history  # the first two epochs came from the checkpoint


def test_finished_checkpoint_trains_no_more(tmp_path: Path) -> None:
    cfg = TrainConfig(epochs=2, batch_size=16, lr=0.01)
    ck = tmp_path / "ck.pt"
    ma, ra = _run(cfg, checkpoint=ck)
    mb, rb = _run(cfg, init=99, checkpoint=ck)  # weights come from the checkpoint
    assert _same_state(ma, mb)
    assert rb.history == ra.history
    np.testing.assert_array_equal(ra.logits["val"], rb.logits["val"])


# --- (c) corrupt checkpoint ---------------------------------------------------------------


def test_corrupt_checkpoint_raises_input_error(tmp_path: Path) -> None:
    ck = tmp_path / "ck.pt"
    ck.write_bytes(np.random.default_rng(0).bytes(256))
    with pytest.raises(InputError, match=r"^checkpoint: expected a calibkit training checkpoint"):
        _run(TrainConfig(epochs=1, batch_size=16), checkpoint=ck)


def test_foreign_checkpoint_version_raises_input_error(tmp_path: Path) -> None:
    ck = tmp_path / "ck.pt"
    torch.save({"version": 99}, ck)
    with pytest.raises(InputError, match=r"^checkpoint: expected version 1"):
        _run(TrainConfig(epochs=1, batch_size=16), checkpoint=ck)


def test_checkpoint_missing_keys_is_refused(tmp_path: Path) -> None:
    ck = tmp_path / "ck.pt"
    torch.save({"version": 1, "config": {}, "model": {}}, ck)
    with pytest.raises(InputError, match=r"^checkpoint: expected a complete training checkpoint"):
        _run(TrainConfig(epochs=1, batch_size=16), checkpoint=ck)


def test_a_checkpoint_without_last_wrong_is_refused(tmp_path: Path) -> None:
    """Issue #45, item 4: every checkpoint this code writes holds ``last_wrong``; one without
    it (written before 0.1.0) is refused, not resumed with the counts started afresh."""
    ck = tmp_path / "ck.pt"
    _run(TrainConfig(epochs=1, batch_size=16), checkpoint=ck)
    saved = torch.load(ck, weights_only=False)
    del saved["last_wrong"]
    torch.save(saved, ck)
    with pytest.raises(InputError, match=r"^checkpoint: expected a complete .*\(no last_wrong\)"):
        _run(TrainConfig(epochs=1, batch_size=16), checkpoint=ck)


def test_checkpoint_of_other_settings_is_refused_before_loading(tmp_path: Path) -> None:
    ck = tmp_path / "ck.pt"
    _run(TrainConfig(epochs=1, batch_size=16, lr=0.01), checkpoint=ck)
    model = _model(init=5)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x, y = _images()
    with pytest.raises(InputError, match=r"^checkpoint: .*these training settings.*ck\.pt"):
        train(
            model, (x, y), TrainConfig(epochs=1, batch_size=8), seed=0, held_out={}, checkpoint=ck
        )
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())


def test_checkpoint_of_another_model_is_refused_before_loading(tmp_path: Path) -> None:
    ck = tmp_path / "ck.pt"
    cfg = TrainConfig(epochs=1, batch_size=16)
    _run(cfg, checkpoint=ck)
    x, y = _images()
    torch.manual_seed(0)
    wider = mlp(3, in_channels=1, input_size=8, hidden=(32,))
    shapes = r"\(net\.1\.weight: \(32, 64\)\), got .*ck\.pt \(net\.1\.weight: \(16, 64\)"
    with pytest.raises(
        InputError, match=r"^checkpoint: expected the weights of this model " + shapes
    ):
        train(wider, (x, y), cfg, seed=0, held_out={}, checkpoint=ck)
    deeper = mlp(3, in_channels=1, input_size=8, hidden=(16, 16))
    with pytest.raises(
        InputError,
        match=r"^checkpoint: expected the weights of this model, got .*other parameter names",
    ):
        train(deeper, (x, y), cfg, seed=0, held_out={}, checkpoint=ck)


# --- (d) bad splits -----------------------------------------------------------------------


def _bad(train_split: tuple[object, object], held: dict[str, tuple[object, object]]) -> None:
    train(
        _model(),
        train_split,
        TrainConfig(epochs=1),
        seed=0,
        held_out=held,  # type: ignore[arg-type]
    )


def test_bad_train_split() -> None:
    x, y = _images(12)
    nan = x.clone()
    nan[3, 0, 1, 1] = float("nan")
    with pytest.raises(InputError, match=r"^train_split: expected finite inputs, got NaN or inf"):
        _bad((nan, y), {})
    inf = x.clone()
    inf[0, 0, 0, 0] = float("inf")
    with pytest.raises(InputError, match=r"^train_split: expected finite inputs"):
        _bad((inf, y), {})
    with pytest.raises(InputError, match=r"^train_split: expected a float tensor of inputs"):
        _bad((x.long(), y), {})
    with pytest.raises(InputError, match=r"^train_split: expected a float tensor of inputs"):
        _bad((x.numpy(), y), {})
    with pytest.raises(InputError, match=r"^train_split: expected a float tensor of inputs"):
        _bad((x.reshape(-1), y), {})  # no sample axis
    with pytest.raises(InputError, match=r"^train_split: expected int64 labels of shape \(12,\)"):
        _bad((x, y.int()), {})
    with pytest.raises(InputError, match=r"^train_split: expected int64 labels.*\(11,\)"):
        _bad((x, y[:11]), {})
    with pytest.raises(InputError, match=r"^train_split: expected int64 labels.*\(12, 1\)"):
        _bad((x, y[:, None]), {})
    with pytest.raises(InputError, match=r"^train_split: expected int64 labels"):
        _bad((x, y.float()), {})


def test_labels_not_a_tensor() -> None:
    x, y = _images(12)
    with pytest.raises(InputError, match=r"^train_split: expected int64 labels.*got ndarray"):
        _bad((x, y.numpy()), {})
    with pytest.raises(InputError, match=r"^train_split: expected int64 labels.*got list"):
        _bad((x, y.tolist()), {})


def test_bad_held_out_split_is_named() -> None:
    x, y = _images(12)
    nan = x.clone()
    nan[0, 0, 0, 0] = float("nan")
    with pytest.raises(InputError, match=r"^calibration: expected finite inputs"):
        _bad((x, y), {"test": (x, y), "calibration": (nan, y)})
    with pytest.raises(InputError, match=r"^test: expected int64 labels"):
        _bad((x, y), {"test": (x, y.int())})
    with pytest.raises(InputError, match=r"^test: expected a float tensor"):
        _bad((x, y), {"test": (x.int(), y)})


# --- (e) history, logits, mode ------------------------------------------------------------


def test_history_logits_and_eval_mode() -> None:
    x, y = _images(60)
    held = {"val": _images(30, seed=1), "test": _images(21, seed=2)}
    model = _model(dropout=0.2)
    cfg = TrainConfig(epochs=6, batch_size=20, lr=0.01, eval_batch_size=8)
    result = train(model, (x, y), cfg, seed=0, held_out=held)
    assert len(result.history) == 6
    for i, h in enumerate(result.history, start=1):
        assert h["epoch"] == float(i)
        for key in ("train_loss", "train_accuracy", "lr", *TIMING):
            assert key in h
        for name in held:
            for what in TRACKED:
                assert f"{name}_{what}" in h
        assert 0.0 <= h["train_accuracy"] <= 1.0
        assert h["lr"] == 0.01
    expected = {"epoch", "lr", "train_loss", "train_accuracy", *TIMING}
    expected |= {f"{n}_{w}" for n in held for w in TRACKED}
    assert set(result.history[0]) == expected
    losses = [h["train_loss"] for h in result.history]
    assert all(a > b for a, b in itertools.pairwise(losses))
    assert losses[-1] < 0.5 * losses[0]
    assert result.history[-1]["val_accuracy"] > 0.9
    assert not model.training
    assert result.seconds >= sum(h["seconds"] for h in result.history) * 0.99
    for name, (hx, hy) in held.items():
        assert result.logits[name].dtype == np.float32
        assert result.logits[name].shape == (len(hy), 3)
        # other batch sizes (8 vs 1024): the same values up to float32 rounding
        torch.testing.assert_close(
            torch.from_numpy(result.logits[name]), predict_logits(model, hx, batch_size=8)
        )
        torch.testing.assert_close(
            torch.from_numpy(result.logits[name]), predict_logits(model, hx), rtol=1e-5, atol=1e-5
        )
        np.testing.assert_array_equal(result.labels[name], hy.numpy())
        assert result.labels[name].dtype == np.int64
    last = result.history[-1]
    logits = result.logits["val"]
    val_y = held["val"][1].numpy()
    assert last["val_accuracy"] == pytest.approx(np.mean(logits.argmax(1) == val_y))


def test_train_loss_is_the_mean_batch_loss() -> None:
    """With lr tiny the weights barely move: the epoch loss is the cross-entropy at init."""
    x, y = _images(32)
    model = _model()
    with torch.no_grad():
        initial = nn.functional.cross_entropy(model(x), y).item()
    cfg = TrainConfig(epochs=1, batch_size=10, optimizer="sgd", momentum=0.0, lr=1e-9)
    result = train(model, (x, y), cfg, seed=0, held_out={})
    assert result.history[0]["train_loss"] == pytest.approx(initial, rel=1e-6)
    assert result.logits == {}
    assert result.labels == {}


def test_predict_logits_batches_and_eval_mode() -> None:
    model = _model(dropout=0.5)
    model.train()
    x, _ = _images(10)
    out = predict_logits(model, x, batch_size=3)
    assert not model.training
    assert out.shape == (10, 3)
    assert out.dtype == torch.float32
    with torch.no_grad():
        torch.testing.assert_close(out, model(x), rtol=1e-6, atol=1e-6)


def test_lr_in_history_follows_the_schedule() -> None:
    cfg = TrainConfig(
        epochs=3,
        batch_size=16,
        optimizer="sgd",
        lr=0.1,
        schedule="step",
        milestones=(1, 2),
        lr_decay=0.5,
    )
    _, result = _run(cfg)
    assert [h["lr"] for h in result.history] == pytest.approx([0.05, 0.025, 0.025])


# --- (f) custom loss ----------------------------------------------------------------------


def test_custom_loss_is_used() -> None:
    calls: list[int] = []

    def counting_loss(logits: Tensor, labels: Tensor) -> Tensor:
        calls.append(len(labels))
        return nn.functional.cross_entropy(logits, labels) * 0.0 + 7.0 + 0.0 * logits.sum()

    x, y = _images(40)
    cfg = TrainConfig(epochs=2, batch_size=16)
    result = train(_model(), (x, y), cfg, seed=0, held_out={}, loss_fn=counting_loss)
    assert calls == [16, 16, 8, 16, 16, 8]
    assert [h["train_loss"] for h in result.history] == pytest.approx([7.0, 7.0])


def test_the_loss_named_in_the_settings_is_trained() -> None:
    """``cfg.loss`` is used when no ``loss_fn`` is given: the same run as passing it."""
    cfg = TrainConfig(epochs=2, batch_size=16, loss="focal", loss_params={"gamma": 2.0})
    assert training_loss(TrainConfig()) is nn.functional.cross_entropy
    m1, r1 = _run(cfg)
    m2, r2 = _run(cfg, loss_fn=training_loss(cfg))
    m3, _ = _run(cfg.replace(loss="cross_entropy", loss_params={}))
    assert _same_state(m1, m2)  # the same computation, run twice
    assert _strip(r1.history) == _strip(r2.history)
    assert not _same_state(m1, m3)


# --- (g) progress output ------------------------------------------------------------------


def _epoch_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]


def test_progress_summary_lines(caplog: pytest.LogCaptureFixture) -> None:
    x, y = _images(8)
    cfg = TrainConfig(epochs=20, batch_size=8)
    with caplog.at_level(logging.INFO, logger="calibkit.training"):
        train(_model(), (x, y), cfg, seed=0, held_out={"val": (x, y)}, label="m/0 ")
    lines = _epoch_lines(caplog)
    shown = [int(m.group(1)) for m in map(re.compile(r"^m/0 epoch (\d+)/20 ").match, lines) if m]
    assert shown == [1, *range(2, 21, 2)]
    assert len(lines) == len(shown)
    assert re.search(r"loss \d+\.\d{4} acc [\d.]+% \| val: acc [\d.]+% nll [\d.]+ ece ", lines[0])
    assert "(opt " in lines[0]
    assert lines[0].endswith("s")
    events = [progress_of(r) for r in caplog.records]
    assert events[0] == ProgressEvent(
        "m/0 epoch 1/20", 1, 20, lines[0].removeprefix("m/0 epoch 1/20 ")
    )


@pytest.mark.parametrize(("epochs", "expected"), [(3, [1, 2, 3]), (25, [1, 2, 4, 6])])
def test_progress_epochs_shown(
    caplog: pytest.LogCaptureFixture, epochs: int, expected: list[int]
) -> None:
    x, y = _images(8)
    with caplog.at_level(logging.INFO, logger="calibkit.training"):
        train(_model(), (x, y), TrainConfig(epochs=epochs, batch_size=8), seed=0, held_out={})
    shown = [int(line.split()[1].split("/")[0]) for line in _epoch_lines(caplog)]
    assert shown[: len(expected)] == expected
    assert shown[-1] == epochs
    if epochs == 25:
        assert shown == [1, *range(2, 25, 2), 25]


def test_every_batch_is_reported_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    x, y = _images(20)
    with caplog.at_level(logging.DEBUG, logger="calibkit.training"):
        train(_model(), (x, y), TrainConfig(epochs=2, batch_size=8), seed=0, held_out={})
    steps = [progress_of(r) for r in caplog.records if r.levelno == logging.DEBUG]
    assert [(e.label, e.step, e.total) for e in steps if e is not None] == [
        (f"epoch {i}/2", b, 3) for i in (1, 2) for b in (1, 2, 3)
    ]
    assert all(e is not None and re.fullmatch(r"loss \d+\.\d{4}", e.text) for e in steps)


def test_train_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    x, y = _images(8)
    train(_model(), (x, y), TrainConfig(epochs=2, batch_size=8), seed=0, held_out={})
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out == ""


def test_learned_epoch_of_a_frozen_model_is_its_correctness() -> None:
    """With a learning rate of ~0 the mini-batch predictions never change: every sample
    the model gets right was learned in epoch 1, every other one never (0)."""
    torch.manual_seed(0)
    x, y = torch.randn(60, 1, 8, 8), torch.randint(0, 3, (60,))
    model = mlp(3, in_channels=1, input_size=8, hidden=(8,))
    cfg = TrainConfig(epochs=3, batch_size=16, optimizer="sgd", lr=1e-30, track_learning=True)
    result = train(model, (x, y), cfg, seed=0, held_out={})
    correct = result.logits["train"].argmax(1) == y.numpy()
    assert result.learned_epoch is not None
    assert result.learned_epoch.tolist() == np.where(correct, 1, 0).tolist()
    assert result.labels["train"].tolist() == y.tolist()


def test_learned_epoch_survives_resume(tmp_path: Path) -> None:
    torch.manual_seed(0)
    x, y = torch.randn(80, 1, 8, 8), torch.randint(0, 2, (80,))
    cfg = TrainConfig(epochs=6, batch_size=16, lr=0.05, track_learning=True)

    def run(epochs: int, checkpoint: Path | None) -> np.ndarray:
        torch.manual_seed(1)
        model = mlp(2, in_channels=1, input_size=8, hidden=(8,))
        res = train(
            model,
            (x, y),
            cfg.replace(epochs=epochs),
            seed=0,
            held_out={},
            checkpoint=checkpoint,
        )
        assert res.learned_epoch is not None
        return res.learned_epoch

    whole = run(6, None)
    run(3, tmp_path / "ck.pt")
    assert run(6, tmp_path / "ck.pt").tolist() == whole.tolist()
    assert set(whole.tolist()) <= set(range(7))
    assert (whole > 1).any()


def test_zero_epochs_only_evaluates_the_model_as_it_is() -> None:
    torch.manual_seed(0)
    x, y = torch.randn(30, 1, 8, 8), torch.randint(0, 3, (30,))
    model = mlp(3, in_channels=1, input_size=8, hidden=(8,))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for schedule in ("none", "onecycle", "cosine"):
        cfg = TrainConfig(epochs=0, schedule=schedule)
        result = train(model, (x, y), cfg, seed=0, held_out={"t": (x, y)})
        assert result.history == []
        assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
        # exact: the same predict_logits, batch size (1024), threads and weights
        assert np.array_equal(result.logits["t"], predict_logits(model, x).numpy())


def test_a_checkpoint_made_before_the_warmup_settings_still_resumes() -> None:
    from calibkit.training.checkpoint import can_resume, config_dict

    cfg = TrainConfig(epochs=2)
    old = {k: v for k, v in config_dict(cfg).items() if not k.startswith("warmup")}
    assert can_resume(old, cfg)
    assert not can_resume(old, cfg.replace(warmup_steps=3, warmup_lr=1e-4))


@pytest.mark.parametrize("track", [False, True])
def test_an_epoch_stays_on_the_models_device_without_host_round_trips(track: bool) -> None:
    """On PyTorch's ``meta`` device (a stand-in for a GPU: shapes, no values), a step that
    mixed a host tensor into the device's computation, or waited for a device value
    (``.cpu()``, ``.item()``, a boolean mask), fails. The whole epoch, augmentation and
    learning tracking included, runs there and hands back device sums."""
    from calibkit.training.trainer import _start, resident, train_epoch

    meta = torch.device("meta")
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Flatten(), nn.Linear(256, 3))
    model = model.to(meta)
    x, y = _images(20)
    x, y = resident([x, y], meta)
    cfg = TrainConfig(epochs=1, batch_size=8, augment=True, track_learning=track)
    state = _start(model, cfg, 0, n=20, checkpoint=None, device=meta)
    loss_sum, correct = train_epoch(state, (x, y), cfg, 1, training_loss(cfg))
    assert (loss_sum.device, correct.device, state.last_wrong.device) == (meta, meta, meta)
    assert {p.device for p in model.parameters()} == {meta}


def test_held_out_logits_stay_on_the_device_until_asked_for() -> None:
    from calibkit.training.trainer import device_logits

    meta = torch.device("meta")
    model = _model().to(meta)
    x, _ = _images(20)
    z = device_logits(model, x.to(meta), batch_size=8)
    assert z.device == meta
    assert z.shape == (20, 3)
    assert z.dtype == torch.float32


def test_splits_stay_on_the_cpu_and_move_whole_to_another_device() -> None:
    from calibkit.training.trainer import resident

    x, y = _images(20)
    same = resident([x, y], torch.device("cpu"))
    assert same[0] is x
    assert same[1] is y
    moved = resident([x, y], torch.device("meta"))
    assert [t.device.type for t in moved] == ["meta", "meta"]


def test_augmentation_drawn_per_epoch_is_the_per_batch_augmentation() -> None:
    """The epoch's draws are made in the order the per-batch loop made them, so a CPU run
    is bit-identical to the loop before draws moved out of it (and a GPU run augments on
    exactly the same crops and flips)."""
    from calibkit.data.augment import crop_and_flip
    from calibkit.training.trainer import epoch_draws

    x, _ = _images(21)
    cfg = TrainConfig(batch_size=8, augment=True)
    gen_a, gen_b = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    perm, draws = epoch_draws(21, cfg, gen_a)
    assert draws is not None
    assert draws.shape == (3, 21)
    ref_perm = torch.randperm(21, generator=gen_b)
    assert torch.equal(perm, ref_perm)
    from calibkit.data.augment import apply_crop_and_flip

    for b in range(0, 21, 8):
        idx = perm[b : b + 8]
        expected = crop_and_flip(x[idx], generator=gen_b)
        top, left, flip = draws[:, b : b + 8]
        assert torch.equal(apply_crop_and_flip(x[idx], top, left, flip.bool()), expected)
    assert torch.equal(gen_a.get_state(), gen_b.get_state())


@pytest.mark.gpu
def test_training_on_cuda_keeps_the_splits_there_and_resumes(tmp_path: Path) -> None:
    cuda = torch.device("cuda")
    x, y = _images()
    hx, hy = _images(24, seed=1)
    cfg = TrainConfig(epochs=3, batch_size=16, augment=True, track_learning=True)
    model = _model().to(cuda)
    result = train(model, (x, y), cfg, seed=0, held_out={"val": (hx, hy)})
    assert {p.device.type for p in model.parameters()} == {"cuda"}
    assert result.logits["val"].shape == (24, 3)
    assert np.isfinite(result.logits["val"]).all()
    assert result.learned_epoch is not None
    killed = _model().to(cuda)
    ck = tmp_path / "ck.pt"
    train(killed, (x, y), cfg.replace(epochs=2), seed=0, held_out={"val": (hx, hy)}, checkpoint=ck)
    resumed = _model().to(cuda)
    again = train(resumed, (x, y), cfg, seed=0, held_out={"val": (hx, hy)}, checkpoint=ck)
    # float32 CUDA kernels: the resumed run and the straight one agree to rounding
    np.testing.assert_allclose(again.logits["val"], result.logits["val"], rtol=1e-4, atol=1e-4)
