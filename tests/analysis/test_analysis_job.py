"""The Spark job on generated samples with known rates: rates, windows, p95, completeness, bad input."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka_balancer.analysis.analyze import analyze
from kafka_balancer.analysis.load import AnalysisError, LoadOptions
from kafka_balancer.analysis.report import IncompleteSnapshotError, check_completeness
from kafka_balancer.analysis.samples import PartitionSample, Sample, SampleSchemaError
from kafka_balancer.analysis.store import SampleStore, StoreError
from kafka_balancer.model import parse_snapshot
from pyspark.sql import SparkSession
from samplegen import T0, TopicSpec, generate
from spark_fixtures import TEST_ENGINE

pytestmark = pytest.mark.spark

HOT = TopicSpec("hot", 2, message_size=200, rate=lambda p, _i: 1000.0 * (p + 1))
IDLE = TopicSpec("idle", 1, message_size=50, rate=lambda _p, _i: 0.0)
# Bursty: 10 msg/s, except 100 msg/s in the interval ending at sample 7 (inside the second window).
BURSTY = TopicSpec("bursty", 1, message_size=100, rate=lambda _p, i: 100.0 if i == 7 else 10.0, consumer_groups=2)


def _store(tmp_path: Path, samples: list[Sample]) -> SampleStore:
    store = SampleStore(str(tmp_path / "samples"))
    for sample in samples:
        store.append(sample)
    return store


def _partitions(snapshot: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(p["topic"], p["partition"]): p for p in snapshot["partitions"]}


def test_rates_sizes_windows_and_p95(spark: SparkSession, tmp_path: Path) -> None:
    # 16 samples a minute apart; the range takes 15 of them: windows start at the first sample, so
    # intervals ending at minutes 1-5, 6-10 and 11-14 fall in three windows of 300, 300 and 240 s
    # (the sample at minute 15 is outside the range).
    store = _store(tmp_path, generate([HOT, IDLE, BURSTY], count=16))
    end = T0 + timedelta(minutes=14)
    p95 = analyze(store, T0, end, LoadOptions(cluster="c1", statistic="p95"), TEST_ENGINE)
    avg = analyze(store, T0, end, LoadOptions(cluster="c1", statistic="avg"), TEST_ENGINE)

    parts = _partitions(p95.snapshot)
    assert parts["hot", 0]["bytesInPerSec"] == pytest.approx(1000 * 200)
    assert parts["hot", 1]["bytesInPerSec"] == pytest.approx(2000 * 200)
    assert parts["hot", 1]["messagesInPerSec"] == pytest.approx(2000)
    assert parts["hot", 1]["sizeBytes"] == (1000 + 2000 * 14 * 60) * 200
    assert parts["idle", 0]["bytesInPerSec"] == 0
    # One consumer group reads everything: bytes out = bytes in; two groups: twice.
    assert parts["hot", 0]["bytesOutPerSec"] == pytest.approx(1000 * 200)
    assert parts["bursty", 0]["bytesOutPerSec"] == pytest.approx(2 * parts["bursty", 0]["bytesInPerSec"])
    # Window rates of 'bursty': (10*4+100)/5 = 28 msg/s in the burst window (300 s), 10 in the others
    # (540 s). avg weighs them by their seconds: the range's messages over its seconds.
    bursty_avg = _partitions(avg.snapshot)["bursty", 0]["messagesInPerSec"]
    assert bursty_avg == pytest.approx((10 * 13 + 100) / 14)
    # p95: 10 msg/s covers 64% of the time, so the rate stays at or below 28 for 95% of it.
    assert parts["bursty", 0]["messagesInPerSec"] == pytest.approx(28)
    assert p95.report["expectedWindows"] == 3

    report = p95.report
    assert report["completeness"] == 1.0
    assert report["samples"] == 15
    assert report["messageSizeSource"] == {"bursty": "sizeGrowth", "hot": "sizeGrowth", "idle": "clusterAverage"}
    assert report["corruptFiles"] == 0
    cluster = report["groups"]["cluster"]["resources"]
    assert cluster["replicas"]["avg"] == pytest.approx(8 / 3)
    assert cluster["network-in"]["max"] >= cluster["network-in"]["avg"]
    parse_snapshot(p95.snapshot)


def test_two_samples_one_interval_apart_make_a_usable_snapshot(spark: SparkSession, tmp_path: Path) -> None:
    store = _store(tmp_path, generate([HOT, IDLE], count=2))
    result = analyze(store, T0, T0 + timedelta(minutes=1), LoadOptions(cluster="c1"), TEST_ENGINE)
    assert _partitions(result.snapshot)["hot", 1]["bytesInPerSec"] == pytest.approx(2000 * 200)
    assert result.report["completeness"] == 1.0
    check_completeness(result.report, 1.0)


def test_partition_without_an_interval_lowers_completeness_and_is_refused(spark: SparkSession, tmp_path: Path) -> None:
    samples = generate([HOT], count=3)
    last = samples[-1]
    late = PartitionSample("new", 0, leader=1, replicas=(1,), isr=(1,), replica_sizes=(10,), log_end_offset=5)
    samples[-1] = Sample(last.cluster, last.ts, [*last.partitions, late], last.brokers)
    store = _store(tmp_path, samples)
    result = analyze(store, T0, T0 + timedelta(minutes=2), LoadOptions(cluster="c1"), TEST_ENGINE)
    assert result.report["completeness"] == pytest.approx(2 / 3)
    assert _partitions(result.snapshot)["new", 0]["bytesInPerSec"] == 0
    with pytest.raises(IncompleteSnapshotError, match=r"completeness 0.667 is below .*minCompleteness 0.900: 2 of 3"):
        check_completeness(result.report, 0.9)


def test_broker_in_samples_but_not_in_metadata_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    rogue = TopicSpec("t", 1, 10, rate=lambda _p, _i: 1.0, replicas=lambda _p: (1, 7))
    store = _store(tmp_path, generate([rogue], count=2))
    with pytest.raises(AnalysisError, match=r"broker 7 is in the samples \(replicas of partition t-0: \[1, 7\]\)"):
        analyze(store, T0, T0 + timedelta(minutes=1), LoadOptions(cluster="c1"), TEST_ENGINE)


def test_corrupt_files_are_skipped_and_counted(spark: SparkSession, tmp_path: Path) -> None:
    store = _store(tmp_path, generate([HOT], count=3))
    hour_dir = tmp_path / "samples" / "partitions" / "cluster=c1" / "hour=2026-11-21T10"
    (hour_dir / "part-truncated.parquet").write_bytes(b"PAR1 this is not parquet")
    result = analyze(store, T0, T0 + timedelta(minutes=2), LoadOptions(cluster="c1"), TEST_ENGINE)
    assert result.report["corruptFiles"] == 1
    assert result.report["corruptFileNames"][0].endswith("part-truncated.parquet")
    assert _partitions(result.snapshot)["hot", 0]["bytesInPerSec"] == pytest.approx(1000 * 200)


def test_wrong_schema_names_file_and_column(spark: SparkSession, tmp_path: Path) -> None:
    store = _store(tmp_path, generate([HOT], count=2))
    hour_dir = tmp_path / "samples" / "partitions" / "cluster=c1" / "hour=2026-11-21T10"
    bad = pa.table({"ts": pa.array([T0], pa.timestamp("ms", tz="UTC")), "topic": ["x"], "partition": ["zero"]})
    bad = bad.append_column("replicas", pa.array([[1]], pa.list_(pa.int32())))
    pq.write_table(bad, hour_dir / "part-foreign.parquet")
    with pytest.raises(SampleSchemaError, match=r"part-foreign.parquet: column 'partition' must be int32, got string"):
        analyze(store, T0, T0 + timedelta(minutes=1), LoadOptions(cluster="c1"), TEST_ENGINE)


def test_empty_range_and_unknown_cluster_are_clear_errors(spark: SparkSession, tmp_path: Path) -> None:
    store = _store(tmp_path, generate([HOT], count=2))
    with pytest.raises(StoreError, match=r"no samples of cluster 'c1' between 2026-11-22"):
        analyze(store, T0 + timedelta(days=1), T0 + timedelta(days=2), LoadOptions(cluster="c1"), TEST_ENGINE)
    with pytest.raises(StoreError, match=r"no samples of cluster 'other'.*clusters in the store: c1"):
        analyze(store, T0, T0 + timedelta(minutes=1), LoadOptions(cluster="other"), TEST_ENGINE)
    with pytest.raises(StoreError, match=r"empty time range"):
        analyze(store, T0, T0, LoadOptions(cluster="c1"), TEST_ENGINE)


def test_measured_cpu_calibrates_the_bytes_model(spark: SparkSession, tmp_path: Path) -> None:
    samples = generate([HOT], count=3, cpu_cores=lambda b, _i: 0.5 * b)
    result = analyze(_store(tmp_path, samples), T0, T0 + timedelta(minutes=2), LoadOptions(cluster="c1"), TEST_ENGINE)
    assert result.report["cpuSource"] == "measured"
    loads = {b["id"]: b["load"]["cpu"] for b in result.report["brokers"]}
    assert loads == pytest.approx({1: 0.5, 2: 1.0, 3: 1.5})
    assert all(p["cpuCoresLeader"] > 0 for p in result.snapshot["partitions"])


def test_the_message_size_pairs_the_offset_with_the_in_sync_replicas_log(spark: SparkSession, tmp_path: Path) -> None:
    """ListOffsets' latest offset is the high watermark; the leader's log runs ahead of it by what its
    followers have not fetched yet (on a busy machine 4.7 MB at one end of a range and 0.5 MB at the
    other). The message size is the growth of the smallest in-sync log over the offset growth; replica 3,
    out of sync and far behind, is not counted."""
    store = SampleStore(str(tmp_path / "samples"))
    for i, lead in enumerate((4_700_000, 2_000_000, 500_000)):
        offset = 10_000 + 1_000 * i
        synced = offset * 4_000
        part = PartitionSample(
            "t", 0, leader=1, replicas=(1, 2, 3), isr=(1, 2), replica_sizes=(synced + lead, synced, 1_000),
            log_end_offset=offset, consumer_offsets_sum=0,
        )  # fmt: skip
        store.append(Sample("c1", T0 + timedelta(minutes=i), [part], generate([], count=1)[0].brokers))
    result = analyze(store, T0, T0 + timedelta(minutes=2), LoadOptions(cluster="c1"), TEST_ENGINE)
    assert result.report["messageSizeBytes"] == {"t": pytest.approx(4_000)}
    assert _partitions(result.snapshot)["t", 0]["sizeBytes"] == 12_000 * 4_000 + 500_000  # the leader's log
