"""The Spark Connect engine: a real Spark Connect server (shipped in pyspark's jars) on 127.0.0.1, the same
analysis code over sc://, and the same snapshot as in-process.

The server is a second JVM, started for this module only and stopped at its end.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pyspark
import pytest
from kafka_balancer.analysis.analyze import analyze
from kafka_balancer.analysis.load import LoadOptions
from kafka_balancer.analysis.spark import EngineConfig, stop_session
from kafka_balancer.analysis.store import SampleStore
from pyspark.sql import SparkSession
from samplegen import T0, TopicSpec, generate
from spark_fixtures import TEST_ENGINE

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    home = Path(pyspark.__file__).parent
    log = (tmp_path_factory.mktemp("connect") / "server.log").open("w")
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    command = [
        str(home / "bin" / "spark-submit"),
        "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master", "local[1]",
        "--driver-memory", "512m",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.sql.shuffle.partitions=2",
        "spark-internal",
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                pytest.fail(f"Spark Connect server exited with {server.returncode}; see {log.name}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"Spark Connect server did not listen on 127.0.0.1:{port} within 120 s")
                time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        stop_session(EngineConfig(type="connect", url=f"sc://127.0.0.1:{port}"))
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
        log.close()


HOT = TopicSpec("hot", 2, message_size=200, rate=lambda p, _i: 1000.0 * (p + 1))
IDLE = TopicSpec("idle", 1, message_size=50, rate=lambda _p, _i: 0.0)


def test_analyze_cli_over_spark_connect_gives_the_same_snapshot(
    spark: SparkSession, connect_url: str, tmp_path: Path
) -> None:
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
    with pytest.raises(ValueError, match=r"engine: field 'url' must be sc://host:port for type 'connect', got 'http://x'"):
        EngineConfig(type="connect", url="http://x")
