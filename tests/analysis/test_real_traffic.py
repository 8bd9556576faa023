"""Must show (issue 32): load measured from real traffic. Producers write to a real Kafka cluster at
known rates; `kafka-balancer sample` (the CLI, in its own process) samples the cluster while they run;
`kafka-balancer analyze` on local Spark turns the samples into a snapshot whose per-partition bytes in
is within 10% of what was produced into each partition over the sampled range.
"""

from __future__ import annotations

import bisect
import json
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from confluent_kafka import Message, Producer
from kafka_balancer.cli import main
from pyspark.sql import SparkSession
from real_kafka import QUIET, RealKafka

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MB = 1_000_000
CLI = Path(sys.executable).parent / "kafka-balancer"  # the console script, as a user runs it


@dataclass(frozen=True)
class Topic:
    """A topic, the bytes per second each partition receives (key + value) and the size of its records."""

    name: str
    rates: tuple[float, ...]  # bytes/s per partition
    record_bytes: int


# The three topics at 1, 5 and 20 MB/s (replication factor 3: 78 MB/s written in all), partitions
# of different rates within each topic, and records of three sizes (key included).
TOPICS = (
    Topic("light", (0.3 * MB, 0.7 * MB), 400),
    Topic("medium", (1.0 * MB, 1.5 * MB, 2.5 * MB), 1000),
    Topic("heavy", (10.0 * MB, 6.0 * MB, 4.0 * MB), 4000),
)
WARM_UP_S = 3.0
SAMPLES = 9  # 40 s of traffic sampled
SAMPLE_INTERVAL_S = 5.0


@dataclass
class Progress:
    """Payload bytes (key + value) per (topic, partition) that the brokers acknowledged, checkpointed
    against wall time. Acknowledged, not handed to the client: records queue in the client while the
    brokers warm up, and the sampler sees a record when it is in the log, not when it was produced."""

    times: list[float] = field(default_factory=list)
    acked: list[dict[tuple[str, int], int]] = field(default_factory=list)

    def at(self, key: tuple[str, int], when: float) -> float:
        """Bytes acknowledged in ``key`` by wall time ``when`` (linear between checkpoints)."""
        i = bisect.bisect_right(self.times, when)
        assert 0 < i < len(self.times), f"{when} lies outside the production ({self.times[0]}..{self.times[-1]})"
        t0, t1 = self.times[i - 1], self.times[i]
        b0, b1 = self.acked[i - 1][key], self.acked[i][key]
        return b0 + (b1 - b0) * (when - t0) / (t1 - t0)

    def rate(self, key: tuple[str, int], start: float, end: float) -> float:
        return (self.at(key, end) - self.at(key, start)) / (end - start)


class RateProducer:
    """Produces into every partition of ``topics`` at its rate until stopped: a token bucket per
    partition, topped up every 10 ms, so the rate holds over any second, not only on average."""

    def __init__(self, bootstrap_servers: str, topics: Sequence[Topic]):
        self.topics = topics
        self.progress = Progress()
        self.failures: list[str] = []
        self.stop = threading.Event()
        self._acked = {(t.name, p): 0 for t in topics for p in range(len(t.rates))}
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap_servers,
                "acks": "all",
                "linger.ms": 10,
                "batch.size": 1024 * 1024,
                "compression.type": "none",
                **QUIET,
            }
        )
        self._thread = threading.Thread(target=self._run, name="rate-producer", daemon=True)

    def __enter__(self) -> RateProducer:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.stop.set()
        self._thread.join(timeout=60)
        left = self._producer.flush(60)
        del self._producer  # librdkafka has no close(): dropping the handle disconnects it
        if exc_type is None:  # else the test's own failure is the one to see
            assert left == 0, f"{left} records not delivered"
            assert not self.failures, f"producer failures: {self.failures[:3]}"

    def wait_steady(self, at_least_s: float, at_most_s: float = 30.0) -> float:
        """Wait until the records queued in the client stay under 0.1 s of traffic for a second: the
        fresh brokers have warmed up and keep pace (they fall seconds behind at first). Gives up after
        ``at_most_s``, since the comparison holds regardless (it uses acknowledged bytes); returns the
        seconds waited."""
        per_second = sum(sum(t.rates) / t.record_bytes for t in self.topics)
        started = time.monotonic()
        calm_since: float | None = None
        while (now := time.monotonic()) - started < at_most_s:
            if len(self._producer) > 0.1 * per_second:
                calm_since = None
            elif calm_since is None:
                calm_since = now
            if calm_since is not None and now - calm_since >= 1.0 and now - started >= at_least_s:
                break
            time.sleep(0.05)
        return time.monotonic() - started

    def _delivered(self, err: object, msg: Message) -> None:
        if err is not None:
            self.failures.append(str(err))
            return
        self._acked[(msg.topic(), msg.partition())] += len(msg) + len(msg.key() or b"")

    def _run(self) -> None:
        try:
            self._produce()
        except Exception as err:  # reported by __exit__; the checkpoints stop here
            self.failures.append(f"producer thread: {err!r}")

    def _produce(self) -> None:
        streams = [(t, p, rate) for t in self.topics for p, rate in enumerate(t.rates)]
        handed = dict.fromkeys(self._acked, 0)
        values = {t.name: bytes(range(256)) * (t.record_bytes // 256 + 1) for t in self.topics}
        started = time.monotonic()
        counter = 0
        while not self.stop.is_set():
            elapsed = time.monotonic() - started
            for topic, p, rate in streams:
                while handed[topic.name, p] + topic.record_bytes <= rate * elapsed:
                    counter += 1
                    key = b"%08d" % counter
                    value = values[topic.name][: topic.record_bytes - len(key)]
                    try:
                        self._producer.produce(topic.name, value, key, partition=p, on_delivery=self._delivered)
                    except BufferError:
                        break  # the client's queue is full: this partition catches up on the next round
                    handed[topic.name, p] += topic.record_bytes
            self._producer.poll(0)
            self.progress.times.append(time.time())
            self.progress.acked.append(dict(self._acked))
            time.sleep(0.01)


def _iso_seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_bytes_in_from_sampled_real_traffic_is_within_10_percent_of_produced(
    real_kafka: RealKafka, spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    brokers = real_kafka.broker_ids
    for t, topic in enumerate(TOPICS):
        # Leaders spread over the brokers, each partition on three brokers of three racks.
        assignment = [[brokers[(2 * t + p + k) % len(brokers)] for k in range(3)] for p in range(len(topic.rates))]
        real_kafka.create_topic(topic.name, assignment, {"min.insync.replicas": "2"})
    samples = tmp_path / "samples"
    sample = [str(CLI), "sample", "--bootstrap-servers", real_kafka.bootstrap_servers, "--samples", str(samples)]
    sample += ["--cluster", "real", "--interval", f"{SAMPLE_INTERVAL_S:g}s", "--count", str(SAMPLES)]
    with RateProducer(real_kafka.bootstrap_servers, TOPICS) as producer:
        warm_up_s = producer.wait_steady(at_least_s=WARM_UP_S)
        done = subprocess.run(sample, capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-2000:]

    output = tmp_path / "snapshot.json"
    args = ["analyze", "--samples", str(samples), "--from", "now-1h", "--to", "now", "--output", str(output)]
    code = main([*args, "--engine-url", "local[2]", "--min-completeness", "1.0"])
    assert code == 0, capsys.readouterr().err
    snapshot = json.loads(output.read_text())
    report = json.loads((tmp_path / "snapshot.json.analysis.json").read_text())
    assert report["samples"] == SAMPLES
    # Kafka has no per-partition byte counter: the message size comes from how the logs grew.
    assert report["messageSizeSource"] == {t.name: "sizeGrowth" for t in TOPICS}

    first, last = _iso_seconds(report["from"]), _iso_seconds(report["to"])
    estimated = {(p["topic"], p["partition"]): p["bytesInPerSec"] for p in snapshot["partitions"]}
    produced = {key: producer.progress.rate(key, first, last) for key in estimated}
    lines = [
        f"{t}-{p}: produced {produced[t, p] / MB:.3f} MB/s, estimated {estimated[t, p] / MB:.3f} MB/s"
        f" ({estimated[t, p] / produced[t, p] - 1:+.1%})"
        for t, p in sorted(produced)
    ]
    print(f"warm-up {warm_up_s:.1f} s, sampled {last - first:.1f} s:", "; ".join(lines))
    print("message sizes (bytes):", {t: round(s, 1) for t, s in report["messageSizeBytes"].items()})
    for topic in TOPICS:
        # The size is the record as the log stores it: the payload plus Kafka's framing (a few bytes
        # of varints per record, 61 bytes per batch), which the brokers receive and store too.
        assert topic.record_bytes < report["messageSizeBytes"][topic.name] <= topic.record_bytes + 80
    assert set(estimated) == {(t.name, p) for t in TOPICS for p in range(len(t.rates))}
    for key in sorted(produced):
        assert estimated[key] == pytest.approx(produced[key], rel=0.10), lines
