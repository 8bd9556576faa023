"""The sampler's Prometheus path against a real HTTP server on 127.0.0.1 speaking the Prometheus HTTP API.

The Kafka side here is a small in-memory KafkaPort with a manual clock (the emulator end-to-end test
covers the real adapter); what is under test is what the sampler records from Prometheus and how the
Spark job uses it: message size from topic counters, bytes out from the out/in ratio, measured CPU.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.parse
from collections.abc import Iterable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from kafka_balancer.analysis.analyze import analyze
from kafka_balancer.analysis.load import LoadOptions
from kafka_balancer.analysis.prometheus import PrometheusClient, PrometheusError, queries_for
from kafka_balancer.analysis.sampler import Sampler, SamplerOptions
from kafka_balancer.analysis.store import SampleStore
from kafka_balancer.kafka.port import TopicPartition
from kafka_balancer.model import ClusterBuilder, ClusterModel
from pyspark.sql import SparkSession
from samplegen import T0
from spark_fixtures import TEST_ENGINE

# topic -> (messages/s per partition, bytes per message on the wire, log bytes per message, consumer fan-out)
RATES = {"hot": (1000.0, 300.0, 100.0, 2.0), "idle": (0.0, 50.0, 50.0, 0.0)}
CPU_CORES = {1: 0.25, 2: 0.75}


class Clock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def now(self) -> Any:
        return T0 + timedelta(seconds=self.seconds)


class InMemoryPort:
    """Reads of a two-broker cluster whose offsets and sizes grow with the clock."""

    def __init__(self, clock: Clock):
        self.clock = clock
        builder = ClusterBuilder()
        builder.add_broker(1, rack="a")
        builder.add_broker(2, rack="b")
        builder.set_topic("hot", min_insync_replicas=1)
        for p in range(2):
            builder.add_partition("hot", p, [1 + p, 2 - p])
        builder.add_partition("idle", 0, [1, 2])
        self.model = builder.build()

    def read_cluster(self, *, with_sizes: bool = True) -> ClusterModel:
        return self.model

    def replica_sizes(self) -> dict[tuple[TopicPartition, int], int]:
        sizes = {}
        for p in self.model.partitions():
            rate, _, log_bytes, _ = RATES[p.topic]
            for b in p.replicas:
                sizes[(TopicPartition(p.topic, p.partition), b)] = int(rate * log_bytes * self.clock.seconds)
        return sizes

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: int(RATES[tp.topic][0] * self.clock.seconds) for tp in partitions}

    def consumer_groups(self) -> list[Any]:
        return []


class FakePrometheus(BaseHTTPRequestHandler):
    clock: Clock

    def do_GET(self) -> None:
        url = urllib.parse.urlparse(self.path)
        query = urllib.parse.parse_qs(url.query)["query"][0]
        at = float(urllib.parse.parse_qs(url.query)["time"][0]) - T0.timestamp()
        if url.path != "/api/v1/query" or "broken" in query:
            self._send(400, {"status": "error", "errorType": "bad_data", "error": "parse error"})
            return
        result = []
        for topic, (rate, wire, _, fanout) in RATES.items():
            # Two partitions of 'hot' lead on the two brokers; counters are summed by topic.
            partitions = 2 if topic == "hot" else 1
            values = {
                "bytesin_total{topic!=": rate * wire * partitions * at,
                "messagesin_total{topic!=": rate * partitions * at,
                "bytesout_total{topic!=": fanout * rate * wire * partitions * at,
            }
            for key, value in values.items():
                if key in query:
                    result.append({"metric": {"topic": topic}, "value": [at, str(value)]})
        if "process_cpu_seconds_total" in query:
            for broker, cores in CPU_CORES.items():
                result.append({"metric": {"kubernetes_pod_name": f"my-kafka-{broker}"}, "value": [at, str(cores * at)]})
        self._send(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

    def _send(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[tuple[str, Clock]]:
    clock = Clock()
    handler = type("Handler", (FakePrometheus,), {"clock": clock})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", clock
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.spark
def test_prometheus_counters_drive_message_size_bytes_out_and_cpu(
    spark: SparkSession, tmp_path: Path, prometheus: tuple[str, Clock]
) -> None:
    url, clock = prometheus
    store = SampleStore(str(tmp_path / "samples"))
    client = PrometheusClient(
        url, queries_for("strimzi", {"broker_bytes_in": "", "broker_bytes_out": "", "log_size": ""})
    )
    options = SamplerOptions(cluster="prod", consumer_offsets=False)
    sampler = Sampler(InMemoryPort(clock), store, options, prometheus=client, clock=clock.now)  # type: ignore[arg-type]
    for _ in range(6):
        sample = sampler.sample_once()
        clock.seconds += 60
    assert sample.partitions[0].topic_messages_in_total == pytest.approx(1000 * 2 * 300)
    assert sample.brokers[1].cpu_seconds_total == pytest.approx(0.75 * 300)

    result = analyze(store, T0, T0 + timedelta(minutes=5), LoadOptions(cluster="prod"), TEST_ENGINE)
    parts = {(p["topic"], p["partition"]): p for p in result.snapshot["partitions"]}
    # 300 bytes per message on the wire (Prometheus), not the 100 the compressed log grows by.
    assert parts["hot", 0]["bytesInPerSec"] == pytest.approx(1000 * 300)
    assert parts["hot", 1]["bytesOutPerSec"] == pytest.approx(2 * 1000 * 300)
    assert parts["hot", 0]["sizeBytes"] == 1000 * 100 * 300
    assert result.report["messageSizeSource"]["hot"] == "prometheus"
    assert result.report["bytesOutSource"] == "prometheus"
    assert result.report["cpuSource"] == "measured"
    assert {b["id"]: b["load"]["cpu"] for b in result.report["brokers"]} == pytest.approx(CPU_CORES)


def test_prometheus_errors_name_the_query(prometheus: tuple[str, Clock]) -> None:
    url, _ = prometheus
    client = PrometheusClient(url)
    with pytest.raises(PrometheusError, match=r"query 'broken\{\}' failed: HTTP 400 .*parse error"):
        client.query("broken{}", T0)
    with pytest.raises(ValueError, match=r"unknown query 'cpu'"):
        queries_for("strimzi", {"cpu": "x"})
    with pytest.raises(ValueError, match=r"'prometheusUrl' must be an http\(s\) URL, got 'localhost:9090'"):
        PrometheusClient("localhost:9090")
    # A port that was free a moment ago and that nobody listens on: the connection is refused.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    unreachable = PrometheusClient(f"http://127.0.0.1:{closed}", timeout=2)
    with pytest.raises(PrometheusError, match=rf"prometheus http://127.0.0.1:{closed}: query 'up' failed"):
        unreachable.query("up")
