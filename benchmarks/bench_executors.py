"""One study run by the three executors (serial, processes --workers 2, ray with 2 CPUs).

The study: the digits MLP (hidden 256x256) x 2 variants x 4 seeds = 8 runs of about 20 s
each with one thread (``--epochs`` sets their length). Each executor runs it as the command
line does, in a child process, into a fresh folder, in a rotating order round after round
(the same load for all three); the table gives the median wall time, the ratio to serial
and the driver's peak memory (its own max RSS: it holds one unit's artefacts at a time plus
the data). Every results.csv must equal serial's byte for byte. Then Ray alone: the time
``ray.init`` takes to start a local instance of 2 CPUs, and the round trip of one task once
warm, a task taking the prepared data from the object store (put once) and a unit.

    python benchmarks/bench_executors.py [--repeats 2] [--epochs 150] [--rotate 0]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import machine, table

CONFIG = """
name = "bench-executors"
seeds = [0, 1, 2, 3]
calibrators = ["temperature", "histogram", "isotonic"]

[data]
dataset = "digits"
calibration_size = 300

[training]
epochs = {epochs}
batch_size = 64
optimizer = "adam"
lr = 0.003

[[models]]
name = "mlp"
params = {{ hidden = [256, 256] }}

[[models]]
name = "mlp"
label = "mlp_dropout"
params = {{ hidden = [256, 256], dropout = 0.2 }}
"""

CHILD = """
import json, resource, sys, time
from calibkit.cli import main
t0 = time.perf_counter()
rc = main(sys.argv[1:])
seconds = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rc": rc, "seconds": seconds, "rss_mb": rss}))
"""

EXECUTORS = {
    "serial": ["--executor", "serial"],
    "processes": ["--executor", "processes", "--workers", "2"],
    "ray": ["--executor", "ray"],
}


def run_once(config: Path, out: Path, name: str) -> dict[str, float]:
    """One study by ``name`` in a child process (one thread for serial, like a worker)."""
    from calibkit.study.store.run_folder import RunFolder

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = ["--threads", "1", "study", str(config), "--out", str(out), "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args, *EXECUTORS[name]],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    units = [json.loads(p.read_text()) for p in out.glob(f"{RunFolder.GLOB}/{RunFolder.TRAIN}")]
    result["unit_seconds"] = statistics.median(u["train_seconds"] for u in units)
    return result


def ray_overhead(n_tasks: int = 20) -> tuple[float, float]:
    """Seconds ``ray.init`` takes (local, 2 CPUs) and the median round trip of a warm task."""
    import ray

    from calibkit.study.definition.config import DataConfig
    from calibkit.study.definition.prepare import prepare_data

    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)  # fmt: skip
    started = time.perf_counter() - t0
    data = ray.put(prepare_data(DataConfig("digits", calibration_size=300)))

    @ray.remote(num_cpus=1)
    def touch(data: object) -> int:
        return len(data.classes)  # type: ignore[attr-defined]

    ray.get([touch.remote(data) for _ in range(4)])  # warm both workers
    trips = []
    for _ in range(n_tasks):
        t = time.perf_counter()
        ray.get(touch.remote(data))
        trips.append(time.perf_counter() - t)
    ray.shutdown()
    return started, statistics.median(trips)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--epochs", type=int, default=150)
    text = "shift the rotating order (a later single round: another executor first)"
    p.add_argument("--rotate", type=int, default=0, help=text)
    args = p.parse_args()
    print(machine(), f"load {os.getloadavg()[0]:.1f}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    config = tmp / "bench.toml"
    config.write_text(CONFIG.format(epochs=args.epochs))
    results: dict[str, list[dict[str, float]]] = {n: [] for n in EXECUTORS}
    names = list(EXECUTORS)
    reference = None
    for r in range(args.rotate, args.rotate + args.repeats):
        for name in names[r % 3 :] + names[: r % 3]:
            out = tmp / f"{name}-{r}"
            results[name].append(run_once(config, out, name))
            print(f"round {r} {name}: {results[name][-1]}", f"load {os.getloadavg()[0]:.1f}")
            csv = (out / "results.csv").read_bytes()
            reference = reference or csv
            assert csv == reference, f"{name}: results.csv differs"
    serial = statistics.median(x["seconds"] for x in results["serial"])
    rows = []
    for name, runs in results.items():
        wall = statistics.median(x["seconds"] for x in runs)
        unit = statistics.median(x["unit_seconds"] for x in runs)
        rss = max(x["rss_mb"] for x in runs)
        rows.append([name, f"{wall:.1f} s", f"{serial / wall:.2f}x", f"{unit:.1f} s", f"{rss:.0f}"])
    headers = ["executor", "wall (median)", "vs serial", "one run's training", "driver MB"]
    print(table(headers, rows))
    started, trip = ray_overhead()
    print(f"Ray: local start {started:.2f} s; a warm task's round trip {trip * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
