"""One day of samples of a large cluster through the analysis on local[2]: rows per second and peak memory.

    .venv/bin/python -m bench.analysis_day [--partitions 200000] [--samples 288] [--dir /tmp/kb-bench-samples]

200,000 partitions x 288 samples (one day at 5-minute intervals) = 57.6M partition rows. The samples are
generated once (numpy + pyarrow, in a separate process, not counted in the measured peak memory) exactly
as the sampler writes them: one Parquet file per sample in the store layout. Then this process runs what
``kafka-balancer analyze`` runs: list and check the files, the Spark job (rates per 5-minute window, avg
and p95 per partition), and the snapshot + report on the driver. It prints the time of each phase, rows per
second and the peak resident memory of the JVM and of the Python driver. Target: the whole day in under 5 minutes.

Known rates are generated (each partition has its own message rate and message size), so the bench also
checks that the snapshot's average bytes in matches them: a fast wrong answer does not count.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2026, 1, 1, tzinfo=UTC)
CLUSTER = "bench"
BROKERS = 60


def generate(directory: Path, partitions: int, samples: int, interval: int) -> None:
    """Write the samples as the sampler does (pyarrow, one zstd Parquet file per sample and dataset).

    Vectorised with numpy, run in its own process. Partition p has rate 1 + p % 97 msg/s and messages of
    100 + (p % 13) * 50 bytes; its replicas are 3 of 60 brokers on 3 racks.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from kafka_balancer.analysis.samples import BROKER_SCHEMA, PARTITION_SCHEMA
    from kafka_balancer.analysis.store import hour_of

    p = np.arange(partitions, dtype=np.int64)
    rate = 1 + p % 97
    size = 100 + (p % 13) * 50
    names = pa.array([f"topic-{t:05d}" for t in range(partitions // 20 + 1)], pa.string())
    topic = names.take(pa.array(p // 20))
    index = pa.array((p % 20).astype(np.int32))
    list_offsets = pa.array(np.arange(0, 3 * partitions + 1, 3, dtype=np.int32))
    flat = np.stack([p % BROKERS, (p + 7) % BROKERS, (p + 13) % BROKERS], axis=1).astype(np.int32)
    replicas = pa.ListArray.from_arrays(list_offsets, pa.array(flat.ravel()))
    leader = pa.array(flat[:, 0])
    brokers = pa.array(np.arange(BROKERS, dtype=np.int32))
    racks = pa.array([f"rack-{b % 3}" for b in range(BROKERS)])
    for s in range(samples):
        ts = START + timedelta(seconds=s * interval)
        offset = rate * (s * interval)
        log = offset * size + 1_000_000
        columns = {
            "ts": pa.array(np.full(partitions, int(ts.timestamp() * 1000)), pa.timestamp("ms", tz="UTC")),
            "topic": topic,
            "partition": index,
            "leader": leader,
            "replicas": replicas,
            "isr": replicas,
            "replica_sizes": pa.ListArray.from_arrays(list_offsets, pa.array(np.repeat(log, 3))),
            "log_end_offset": pa.array(offset),
            "consumer_offsets_sum": pa.nulls(partitions, pa.int64()),
            "topic_bytes_in_total": pa.nulls(partitions, pa.float64()),
            "topic_messages_in_total": pa.nulls(partitions, pa.float64()),
            "topic_bytes_out_total": pa.nulls(partitions, pa.float64()),
            "min_insync_replicas": pa.array(np.full(partitions, 2, dtype=np.int32)),
            "unclean_leader_election": pa.array(np.zeros(partitions, dtype=bool)),
        }
        broker_columns = {
            "ts": pa.array(np.full(BROKERS, int(ts.timestamp() * 1000)), pa.timestamp("ms", tz="UTC")),
            "broker_id": brokers,
            "rack": racks,
            "alive": pa.array(np.ones(BROKERS, dtype=bool)),
            "cpu_seconds_total": pa.nulls(BROKERS, pa.float64()),
            "bytes_in_total": pa.nulls(BROKERS, pa.float64()),
            "bytes_out_total": pa.nulls(BROKERS, pa.float64()),
        }
        for dataset, table in (
            ("partitions", pa.table(columns, schema=PARTITION_SCHEMA)),
            ("brokers", pa.table(broker_columns, schema=BROKER_SCHEMA)),
        ):
            target = directory / dataset / f"cluster={CLUSTER}" / f"hour={hour_of(ts)}"
            target.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, target / f"part-{int(ts.timestamp() * 1000)}-bench.parquet", compression="zstd")
    (directory / "COMPLETE").write_text(f"{partitions} {samples} {interval}\n")


def _children_rss_peak(pid: int) -> int:
    """Peak resident set (VmHWM, bytes) over the child processes of ``pid`` (the Spark JVM)."""
    peak = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("PPid", "0").strip()) == pid and "VmHWM" in fields:
            peak = max(peak, int(fields["VmHWM"].split()[0]) * 1024)
    return peak


class _PeakWatcher(threading.Thread):
    """Polls the JVM's VmHWM (it only grows) so the value is read while the JVM is still alive."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.peak = max(self.peak, _children_rss_peak(os.getpid()))


def measure(directory: Path, args: argparse.Namespace) -> None:
    from kafka_balancer.analysis.job import run_job
    from kafka_balancer.analysis.load import LoadOptions, build_load
    from kafka_balancer.analysis.spark import EngineConfig, get_session, stop_session
    from kafka_balancer.analysis.store import SampleStore

    partitions, samples, interval = args.partitions, args.samples, args.interval
    driver_memory, shuffle_partitions = args.driver_memory, args.shuffle_partitions
    engine = EngineConfig(
        url="local[2]", shuffle_partitions=shuffle_partitions, conf=(("spark.driver.memory", driver_memory),)
    )
    watcher = _PeakWatcher()
    watcher.start()
    t0 = time.perf_counter()
    spark = get_session(engine)
    t1 = time.perf_counter()
    store = SampleStore(str(directory))
    end = START + timedelta(seconds=interval * samples)
    frames = store.read(spark, CLUSTER, START, end)
    t2 = time.perf_counter()
    job = run_job(frames.partitions, frames.brokers, window_seconds=300)
    t3 = time.perf_counter()
    result = build_load(job, LoadOptions(cluster=CLUSTER))
    t4 = time.perf_counter()
    watcher.peak = max(watcher.peak, _children_rss_peak(os.getpid()))
    watcher.stop.set()
    stop_session(engine)

    rows = partitions * samples
    # Check against the generated truth: bytes in = rate x size, from the avg statistic.
    worst = 0.0
    for part in job.partitions.itertuples():
        p = int(part.topic[len("topic-") :]) * 20 + int(part.partition)
        true_rate = 1 + p % 97
        worst = max(worst, abs(part.msg_rate_avg - true_rate) / true_rate)
    py_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"rows: {rows:,} ({partitions:,} partitions x {samples} samples, every {interval} s)")
    print(f"engine: local[2], driver memory {driver_memory}, {shuffle_partitions} shuffle partitions")
    print(f"session start: {t1 - t0:6.1f} s")
    print(f"list+check files ({frames.files_read} files): {t2 - t1:6.1f} s")
    print(f"spark job (windows, avg, p95): {t3 - t2:6.1f} s  -> {rows / (t3 - t2):,.0f} rows/s")
    print(f"snapshot + report (driver): {t4 - t3:6.1f} s")
    total = t4 - t1
    print(f"analysis total (without session start): {total:6.1f} s  -> {rows / total:,.0f} rows/s")
    print(f"peak RSS: JVM {watcher.peak / 2**30:.2f} GiB, Python driver {py_peak / 2**30:.2f} GiB")
    print(f"snapshot partitions: {len(result.snapshot['partitions']):,}, completeness {result.report['completeness']}")
    print(f"worst relative error of the average message rate: {worst:.2e}")
    print(f"target (< 300 s for the day): {'met' if total < 300 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=288)
    parser.add_argument("--interval", type=int, default=300, help="seconds between samples")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kb-bench-samples"))
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--shuffle-partitions", type=int, default=32)
    parser.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    directory: Path = args.dir / f"{args.partitions}x{args.samples}"
    if args.generate_only:
        generate(directory, args.partitions, args.samples, args.interval)
        return
    if not (directory / "COMPLETE").exists():
        print(f"generating samples into {directory} (not measured) ...", flush=True)
        started = time.perf_counter()
        command = [sys.executable, "-m", "bench.analysis_day", "--generate-only", "--dir", str(args.dir)]
        command += ["--partitions", str(args.partitions), "--samples", str(args.samples)]
        command += ["--interval", str(args.interval)]
        subprocess.run(command, check=True)
        print(f"generated in {time.perf_counter() - started:.0f} s", flush=True)
    measure(directory, args)


if __name__ == "__main__":
    main()
