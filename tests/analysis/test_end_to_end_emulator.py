"""Must show: sample an emulated cluster over TCP with the real adapter, run the Spark job through the
CLI, and the snapshot's per-partition bytes in is within 5% of the emulator's true rates, sizes within 1%.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.analysis.sampler import Sampler, SamplerOptions
from kafka_balancer.analysis.store import SampleStore
from kafka_balancer.cli import main
from kafka_balancer.kafka.adapter import KafkaAdapter
from kafka_balancer.kafka.connection import ConnectionSpec
from kafka_balancer.model import ClusterBuilder, ClusterModel
from pyspark.sql import SparkSession
from samplegen import T0

pytestmark = pytest.mark.spark

# topic -> per-partition (bytes in/s, messages in/s); 'hot' partitions differ, 'idle' writes nothing.
TRUE_RATES: dict[str, list[tuple[float, float]]] = {
    "hot": [(8e6, 8000.0), (4e6, 4000.0), (2e6, 2000.0)],
    "warm": [(150e3, 300.0), (50e3, 100.0)],
    "idle": [(0.0, 0.0), (0.0, 0.0)],
}


def _model() -> ClusterModel:
    builder = ClusterBuilder(cluster_name="e2e")
    for b in (1, 2, 3):
        builder.add_broker(b, rack=f"r{b}")
    for t, (topic, rates) in enumerate(sorted(TRUE_RATES.items())):
        builder.set_topic(topic, min_insync_replicas=2)
        for p, (bytes_in, messages_in) in enumerate(rates):
            replicas = [1 + (t + p + k) % 3 for k in range(3)]
            builder.add_partition(
                topic, p, replicas, size_bytes=1e6 * (p + 1), bytes_in_per_sec=bytes_in, messages_in_per_sec=messages_in
            )
    return builder.build()


def test_sampled_emulator_rates_and_sizes_match_truth(
    emulator: Any, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = emulator(_model())
    store = SampleStore(str(tmp_path / "samples"))
    port = KafkaAdapter(ConnectionSpec(bootstrap_servers=cluster.bootstrap_servers))
    # The emulator's manual clock is the sampler's clock: rates are per emulated second.
    sampler = Sampler(
        port, store, SamplerOptions(cluster="e2e"), clock=lambda: T0 + timedelta(seconds=cluster.state.clock)
    )
    try:
        for _ in range(6):
            sampler.sample_once()
            last_clock = cluster.state.clock
            cluster.advance(60)
    finally:
        port.close()
    true_sizes = {
        (topic, p): cluster.replica_bytes(topic, p, cluster.partition_view(topic, p)[2])
        for topic, rates in TRUE_RATES.items()
        for p in range(len(rates))
    }

    output = tmp_path / "snapshot.json"
    end = (T0 + timedelta(seconds=last_clock)).isoformat()
    args = ["analyze", "--samples", str(tmp_path / "samples"), "--from", T0.isoformat(), "--to", end]
    args += ["--output", str(output), "--engine-url", "local[2]", "--min-completeness", "1.0"]
    code = main(args)
    assert code == 0, capsys.readouterr().err
    snapshot = json.loads(output.read_text())
    report = json.loads((tmp_path / "snapshot.json.analysis.json").read_text())
    assert report["completeness"] == 1.0
    assert report["samples"] == 6
    parts = {(p["topic"], p["partition"]): p for p in snapshot["partitions"]}
    assert set(parts) == set(true_sizes)
    for (topic, p), (bytes_in, messages_in) in ((k, TRUE_RATES[k[0]][k[1]]) for k in true_sizes):
        got = parts[topic, p]
        assert got["bytesInPerSec"] == pytest.approx(bytes_in, rel=0.05, abs=1.0), (topic, p)
        assert got["messagesInPerSec"] == pytest.approx(messages_in, rel=0.05, abs=0.1), (topic, p)
        # Sizes as of the last sample (the emulator kept growing them during the last advance).
        grown = bytes_in * 60
        assert got["sizeBytes"] == pytest.approx(true_sizes[topic, p] - grown, rel=0.01), (topic, p)
    hot = [parts["hot", p]["bytesInPerSec"] for p in range(3)]
    assert hot[0] > hot[1] > hot[2] > parts["warm", 0]["bytesInPerSec"] > parts["idle", 0]["bytesInPerSec"] == 0
    assert {b["id"] for b in snapshot["brokers"]} == {1, 2, 3}
    assert {t["name"]: t["minInsyncReplicas"] for t in snapshot["topics"]} == {"hot": 2, "idle": 2, "warm": 2}
