"""What `--statistic avg` and `p95` mean when the windows of a range differ in length (issue 52).

The shape of the failing fresh-clone run (its samples are not kept): 9 samples over 39 s whose range
crossed a 5-minute boundary 4 s after the first sample, a broker draining a backlog in those 4 s. With
windows cut at multiples of 5 minutes and a plain mean of the window rates, the 4-s window weighed as
much as the 35-s one after it, and heavy-0's estimate was +25.4% of what was produced. Windows now start
at the range's first sample and each counts for the seconds it covers (docs/samples.md).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.analysis.analyze import analyze
from kafka_balancer.analysis.load import LoadOptions
from kafka_balancer.analysis.store import SampleStore
from pyspark.sql import SparkSession
from samplegen import T0, TopicSpec, generate
from spark_fixtures import TEST_ENGINE

pytestmark = pytest.mark.spark

RECORD_BYTES = 4000
DRAIN, STEADY = 4210.0, 2500.0  # messages/s: the 4-s window and the 35 s after it (1.684x)
# T0 is on a 5-minute boundary: the first interval (4 s) ends before it, the seven after (35 s) after it.
AT_S = (-4.5, -0.5, 4.5, 9.5, 14.5, 19.5, 24.5, 29.5, 34.5)
HEAVY = TopicSpec("heavy", 1, RECORD_BYTES, rate=lambda _p, i: DRAIN if i == 1 else STEADY)
PRODUCED = (4 * DRAIN + 35 * STEADY) / 39  # messages/s over the sampled range


def _store(tmp_path: Path) -> SampleStore:
    store = SampleStore(str(tmp_path / "samples"))
    for sample in generate([HEAVY], count=len(AT_S), at_s=AT_S, cpu_cores=lambda _b, i: 2.0 if i == 1 else 1.0):
        store.append(sample)
    return store


def _run(store: SampleStore, statistic: str, window_seconds: int = 300) -> dict[str, Any]:
    options = LoadOptions(cluster="c1", statistic=statistic, window_seconds=window_seconds)  # type: ignore[arg-type]
    result = analyze(store, T0 - timedelta(minutes=1), T0 + timedelta(minutes=1), options, TEST_ENGINE)
    heavy = result.snapshot["partitions"][0]
    return {
        "bytes_in": heavy["bytesInPerSec"],
        "cpu": {b["id"]: b["load"]["cpu"] for b in result.report["brokers"]},
        "windows": result.report["expectedWindows"],
    }


def test_a_backlog_drained_across_a_window_boundary_is_weighed_by_its_seconds(
    spark: SparkSession, tmp_path: Path
) -> None:
    store = _store(tmp_path)
    avg, p95 = _run(store, "avg"), _run(store, "p95")
    produced = PRODUCED * RECORD_BYTES
    # The range (39 s) is one window: both statistics are the range's bytes over its seconds (a plain
    # mean of a 4-s and a 35-s window gave +25.4%).
    assert avg["windows"] == p95["windows"] == 1
    assert avg["bytes_in"] == pytest.approx(produced, rel=1e-6)
    assert p95["bytes_in"] == pytest.approx(produced, rel=1e-6)
    # Broker CPU is measured over the same windows: 2 cores in the 4 s, 1 in the 35 s.
    assert avg["cpu"] == pytest.approx(dict.fromkeys((1, 2, 3), (4 * 2.0 + 35 * 1.0) / 39))


def test_windows_shorter_than_the_range_count_for_the_seconds_they_cover(spark: SparkSession, tmp_path: Path) -> None:
    store = _store(tmp_path)
    # 10-s windows from the first sample: 9 s (4 s draining, 5 s steady), then 10, 10 and 10 s steady.
    avg, p95 = _run(store, "avg", window_seconds=10), _run(store, "p95", window_seconds=10)
    assert avg["windows"] == 4
    assert avg["bytes_in"] == pytest.approx(PRODUCED * RECORD_BYTES, rel=1e-6)
    # The steady rate covers 30 of 39 s (77%): the rate stays at or below the first window's for 95%.
    first_window = (4 * DRAIN + 5 * STEADY) / 9
    assert p95["bytes_in"] == pytest.approx(first_window * RECORD_BYTES, rel=1e-6)


def test_a_short_last_window_does_not_set_the_percentile(spark: SparkSession, tmp_path: Path) -> None:
    # 27 samples a minute apart with a burst in the last minute: five 300-s windows and a last one of
    # 60 s, 3.8% of the range. A plain percentile over the six windows put p95 at 10 + 0.75 x 90 = 77.5
    # msg/s; counted for its seconds the burst stays in the top 5% of the time.
    burst = TopicSpec("t", 1, 100, rate=lambda _p, i: 100.0 if i == 26 else 10.0)
    store = SampleStore(str(tmp_path / "samples"))
    for sample in generate([burst], count=27):
        store.append(sample)
    end = T0 + timedelta(minutes=26)
    p95 = analyze(store, T0, end, LoadOptions(cluster="c1", statistic="p95"), TEST_ENGINE)
    avg = analyze(store, T0, end, LoadOptions(cluster="c1", statistic="avg"), TEST_ENGINE)
    assert p95.report["expectedWindows"] == 6
    assert p95.snapshot["partitions"][0]["messagesInPerSec"] == pytest.approx(10.0)
    assert avg.snapshot["partitions"][0]["messagesInPerSec"] == pytest.approx((25 * 10 + 100) / 26)
