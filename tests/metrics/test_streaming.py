"""StreamingCalibration: batches, merges and a two-process gloo sync equal ``evaluate``."""

from __future__ import annotations

import socket
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from calibkit import Binning, Resampling
from calibkit.core.errors import InputError
from calibkit.metrics import StreamingCalibration, evaluate
from calibkit.metrics.streaming import STREAMED
from tests.metrics import reference as ref

BATCHES = ((0, 1), (1, 700), (700, 701), (701, 3000))  # uneven, incl. one-row batches


def expected(
    labels: np.ndarray, n_bins: int = 15, mode: str = "top_label", **outputs: object
) -> dict[str, float]:
    """The functional suite's values on the whole data (no bootstrap, no floor)."""
    binning = Binning(n_bins=n_bins, mode=mode)  # type: ignore[arg-type]
    none = Resampling(n_boot=0)
    res = evaluate(labels, n_floor_draws=0, binning=binning, resampling=none, **outputs)  # type: ignore[arg-type]
    return {name: res.values[name] for name in STREAMED}


def assert_equal(got: dict[str, float], want: dict[str, float]) -> None:
    assert list(got) == list(STREAMED)
    for name in STREAMED:
        assert got[name] == pytest.approx(want[name], abs=1e-12, rel=0), name


def logit_data(n: int = 3000, k: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3
    return np.argmax(z / 2 + rng.gumbel(size=z.shape), axis=1), z


def test_hand_computed_values() -> None:
    # confidences 0.8 (correct) and 0.6 (wrong), 10 bins: ECE 0.5 * 0.2 + 0.5 * 0.6
    metric = StreamingCalibration(n_bins=10)
    metric.update([1, 0], probs=[[0.2, 0.8], [0.4, 0.6]])
    res = metric.compute()
    assert res["ece"] == pytest.approx(0.4, abs=1e-15)
    assert res["mce"] == pytest.approx(0.6, abs=1e-15)
    assert res["rmsce"] == pytest.approx(np.sqrt(0.2), abs=1e-15)
    assert res["accuracy"] == 0.5
    assert res["nll"] == pytest.approx(-(np.log(0.8) + np.log(0.4)) / 2, abs=1e-15)
    assert res["brier"] == pytest.approx((0.08 + 0.72) / 2, abs=1e-15)
    assert metric.bin_counts.dtype == torch.float64
    assert metric.bin_counts.tolist() == [0.0] * 6 + [1.0, 0.0, 1.0, 0.0]


@pytest.mark.parametrize(
    ("k", "n_bins", "mode"), [(2, 15, "top_label"), (2, 10, "positive_class"), (7, 10, "top_label")]
)
def test_batches_equal_evaluate(k: int, n_bins: int, mode: str) -> None:
    labels, probs = ref.overconfident_data(3000, k, seed=k)
    metric = StreamingCalibration(n_bins=n_bins, mode=mode)  # type: ignore[arg-type]
    for lo, hi in BATCHES:
        metric.update(labels[lo:hi], probs=probs[lo:hi])
    assert metric.n_samples == 3000
    assert_equal(metric.compute(), expected(labels, probs=probs, n_bins=n_bins, mode=mode))


def test_logit_tensors_with_gradients() -> None:
    labels, z = logit_data()
    metric = StreamingCalibration()
    for lo, hi in BATCHES:
        logits = torch.tensor(z[lo:hi], requires_grad=True)
        metric.update(torch.as_tensor(labels[lo:hi]), logits=logits)
    assert_equal(metric.compute(), expected(labels, logits=z))


def test_merge_equals_one_stream_and_reset_forgets() -> None:
    labels, z = logit_data(seed=1)
    parts = [StreamingCalibration(n_bins=12) for _ in BATCHES]
    for part, (lo, hi) in zip(parts, BATCHES, strict=True):
        part.update(labels[lo:hi], logits=z[lo:hi])
    merged = StreamingCalibration(n_bins=12)
    for part in parts:
        merged.merge(part)
    assert_equal(merged.compute(), expected(labels, logits=z, n_bins=12))
    merged.merge(StreamingCalibration(n_bins=12))  # an empty one changes nothing
    assert merged.n_samples == 3000
    merged.reset()
    assert merged.n_samples == 0
    assert merged.n_classes is None


def test_sync_without_process_group_is_a_no_op() -> None:
    metric = StreamingCalibration()
    metric.update([0], probs=[[0.7, 0.3]])
    assert metric.sync() is metric
    assert metric.synced is False
    metric.update([1], probs=[[0.7, 0.3]])  # still writable
    assert metric.n_samples == 2


def test_errors_name_the_argument() -> None:
    metric = StreamingCalibration()
    with pytest.raises(InputError, match="probs/logits"):
        metric.update([0, 1])  # neither: never guessed
    with pytest.raises(InputError, match="probs/logits"):
        metric.update([0], probs=[[0.5, 0.5]], logits=[[0.0, 0.0]])
    with pytest.raises(InputError, match="at least one update"):
        metric.compute()
    metric.update([0], probs=[[0.5, 0.5]])
    with pytest.raises(InputError, match="2 columns"):
        metric.update([0], probs=[[0.2, 0.3, 0.5]])
    with pytest.raises(InputError, match="n_bins=15"):
        metric.merge(StreamingCalibration(n_bins=10))
    with pytest.raises(InputError, match="mode"):
        StreamingCalibration(mode="classwise")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="mode"):
        StreamingCalibration(mode="positive_class").update([0], probs=[[0.2, 0.3, 0.5]])
    assert metric.n_samples == 1  # failed updates change nothing


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _worker(rank: int, port: int, labels: np.ndarray, z: np.ndarray, queue: mp.Queue) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        metric = StreamingCalibration(n_bins=15)
        half = np.array_split(np.arange(labels.shape[0]), 2)[rank]
        for rows in np.array_split(half, 3):  # a few batches per process
            metric.update(torch.as_tensor(labels[rows]), logits=torch.as_tensor(z[rows]))
        local = metric.n_samples
        metric.sync()
        metric.sync()  # idempotent: the data is not counted twice
        queue.put((rank, local, metric.n_samples, metric.n_classes, metric.compute()))
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_sync_to_the_single_process_result() -> None:
    labels, z = logit_data(n=2001, seed=2)  # odd: the halves differ in size
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = mp.start_processes(
        _worker, args=(_free_port(), labels, z, queue), nprocs=2, join=False, start_method="spawn"
    )
    results = sorted(queue.get(timeout=60) for _ in range(2))
    while not procs.join(timeout=30):
        pass
    single = StreamingCalibration(n_bins=15)
    single.update(labels, logits=z)
    want = expected(labels, logits=z, n_bins=15)
    assert_equal(single.compute(), want)
    assert [r[1] for r in results] == [1001, 1000]
    for _, _, n, k, got in results:
        assert (n, k) == (2001, 5)
        assert_equal(got, want)


def test_importing_the_metrics_loads_no_lightning() -> None:
    code = "import sys, calibkit.metrics; print('lightning' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_merging_a_metric_into_itself_is_refused() -> None:
    metric = StreamingCalibration()
    metric.update([0, 1], probs=[[0.8, 0.2], [0.3, 0.7]])
    with pytest.raises(InputError, match="other: expected another StreamingCalibration"):
        metric.merge(metric)
    assert metric.n_samples == 2  # nothing counted twice


def _mismatch_worker(
    rank: int,
    port: int,
    settings: list[dict[str, object]],
    k: list[int],
    queue: mp.Queue,
    resync: bool = False,
) -> None:
    """Rank ``rank`` syncs a metric of ``settings[rank]`` over ``k[rank]`` classes (0: no
    batch) and reports the error message, or the sample count. With ``resync`` both sync
    first, then rank 1 alone resets and adds its batch again before the reported sync."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        metric = StreamingCalibration(**settings[rank])  # type: ignore[arg-type]
        probs = np.full((4, max(k[rank], 1)), 1.0 / max(k[rank], 1))
        if k[rank]:
            metric.update(np.arange(4) % k[rank], probs=probs)
        if resync:
            metric.sync()
            if rank == 1:
                metric.reset()
                metric.update(np.arange(4) % k[rank], probs=probs)
        before = [t.clone() for t in metric.state]
        try:
            metric.sync()
            queue.put((rank, "ok", metric.n_samples))
        except InputError as exc:
            unchanged = all(torch.equal(a, b) for a, b in zip(before, metric.state, strict=True))
            queue.put((rank, str(exc), unchanged and not metric.synced))
    finally:
        dist.destroy_process_group()


def _run_pair(
    settings: list[dict[str, object]], k: list[int], resync: bool = False
) -> list[tuple[int, str, object]]:
    queue = mp.get_context("spawn").Queue()
    procs = mp.start_processes(
        _mismatch_worker,
        args=(_free_port(), settings, k, queue, resync),
        nprocs=2,
        join=False,
        start_method="spawn",
    )
    results = sorted(queue.get(timeout=60) for _ in range(2))
    while not procs.join(timeout=30):
        pass
    return results


@pytest.mark.parametrize(
    ("settings", "k", "message"),
    [
        ([{"n_bins": 15}, {"n_bins": 10}], [3, 3], "n_bins from 10 to 15"),
        ([{}, {"mode": "positive_class"}], [2, 2], "mode 'top_label' and 'positive_class'"),
        ([{}, {}], [2, 3], "number of classes from 2 to 3"),
    ],
)
def test_sync_refuses_different_settings_on_every_process(
    settings: list[dict[str, object]], k: list[int], message: str
) -> None:
    """Two real gloo processes: each raises the same InputError before reducing anything
    (n_bins used to abort one process, mode to merge silently)."""
    results = _run_pair(settings, k)
    assert [r[0] for r in results] == [0, 1]
    assert results[0][1] == results[1][1]  # the same message on both
    assert results[0][1].startswith("sync: expected the same n_bins, mode")
    assert message in results[0][1]
    assert all(r[2] is True for r in results)  # the state is unchanged, not synced


def test_sync_accepts_a_process_without_data() -> None:
    results = _run_pair([{}, {}], [3, 0])
    assert results == [(0, "ok", 4), (1, "ok", 4)]


def test_sync_refuses_a_metric_synced_on_one_process_only() -> None:
    """Rank 1 reset and synced again while rank 0 still held its synced sums: rank 0 used to
    return at once and leave rank 1 waiting in all_reduce forever; both now raise."""
    results = _run_pair([{}, {}], [3, 3], resync=True)
    assert results[0][1] == results[1][1]
    assert "a metric already synced on some processes only" in results[0][1]
    assert results[0][2] is False  # rank 0 is still synced (read-only until reset)
    assert results[1][2] is True


def test_the_wrapper_is_the_functional_core_summed() -> None:
    """torchmetrics' pattern: the stateful metric adds what ``batch_sums`` returns and
    computes with ``metrics_from_sums``; calibkit has no second accumulator."""
    import calibkit
    import calibkit.metrics
    from calibkit.core.outputs import as_outputs
    from calibkit.metrics.streaming import batch_sums, metrics_from_sums, streamed_kernels

    labels, z = logit_data()
    metric = StreamingCalibration(n_bins=12)
    kernels = streamed_kernels()
    bins, totals = np.zeros((3, 12)), np.zeros(1 + len(metric.means))
    for lo, hi in BATCHES:
        metric.update(labels[lo:hi], logits=z[lo:hi])
        b, t = batch_sums(as_outputs(labels[lo:hi], logits=z[lo:hi]), kernels, n_bins=12)
        bins, totals = bins + b, totals + t
    assert torch.equal(torch.stack(metric.state[:3]), torch.from_numpy(bins))
    assert torch.equal(metric.totals, torch.from_numpy(totals))
    # the same sums in the same order: equal exactly
    assert metric.compute() == metrics_from_sums(bins, totals, kernels)
    assert not hasattr(calibkit.metrics, "CalibrationMetrics")
    assert "CalibrationMetrics" not in dir(calibkit)
