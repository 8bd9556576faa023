"""The Spark Connect engine: a real Spark Connect server on 127.0.0.1, the same analysis code over sc://
from another process, and the same snapshot as in-process.

The server is Spark's own Connect gRPC service (SparkConnectPlugin, shipped in pyspark's jars), running in
the test run's one shared JVM (see tests/spark_fixtures.py): a second JVM would cost ~25 s to start and
another cold start of every query. The client is a separate process, as a user's would be.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from kafka_balancer.analysis.analyze import analyze
from kafka_balancer.analysis.load import LoadOptions
from kafka_balancer.analysis.spark import EngineConfig
from kafka_balancer.analysis.store import SampleStore
from pyspark.sql import SparkSession
from samplegen import T0, TopicSpec, generate
from spark_fixtures import CONNECT_URL, TEST_ENGINE

pytestmark = pytest.mark.spark


HOT = TopicSpec("hot", 2, message_size=200, rate=lambda p, _i: 1000.0 * (p + 1))
IDLE = TopicSpec("idle", 1, message_size=50, rate=lambda _p, _i: 0.0)


def test_analyze_cli_over_spark_connect_gives_the_same_snapshot(spark: SparkSession, tmp_path: Path) -> None:
    connect_url = CONNECT_URL
    store = SampleStore(str(tmp_path / "samples"))
    for sample in generate([HOT, IDLE], count=7):
        store.append(sample)
    end = T0 + timedelta(minutes=6)
    # pyspark decides per process whether its functions build classic or Connect expressions, so the
    # Connect client runs as its own process: exactly how a user runs `kafka-balancer analyze`.
    output = tmp_path / "remote.json"
    # `python -m kafka_balancer.cli.analyze` is also how a SparkApplication driver runs it.
    command = [sys.executable, "-m", "kafka_balancer.cli.analyze", "--samples", str(tmp_path / "samples")]
    command += ["--from", T0.isoformat(), "--to", end.isoformat(), "--output", str(output)]
    command += ["--engine", "connect", "--engine-url", connect_url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    remote = json.loads(output.read_text())
    report = json.loads((tmp_path / "remote.json.analysis.json").read_text())

    local = analyze(store, T0, end, LoadOptions(cluster="c1"), TEST_ENGINE)
    assert report["engine"] == {"type": "connect", "url": connect_url}
    assert remote == local.snapshot
    parts = {(p["topic"], p["partition"]): p for p in remote["partitions"]}
    assert parts["hot", 1]["bytesInPerSec"] == pytest.approx(2000 * 200)
    assert report["completeness"] == 1.0


def test_connect_engine_needs_an_sc_url() -> None:
    with pytest.raises(
        ValueError, match=r"engine: field 'url' must be sc://host:port for type 'connect', got 'http://x'"
    ):
        EngineConfig(type="connect", url="http://x")
