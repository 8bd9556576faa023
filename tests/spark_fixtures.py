"""The ONE SparkSession of a test run (starting one costs ~15 s): use the ``spark`` fixture, never build another.

tests/conftest.py imports this module, so every test directory can ask for ``spark``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_balancer.analysis.spark import EngineConfig, get_session, stop_session
from kafka_balancer.sandbox.ports import free_port
from pyspark.sql import SparkSession

# The same JVM also serves Spark Connect (Spark's own SparkConnectPlugin, the gRPC service that
# `SparkConnectServer` runs) on a free loopback port, so the Connect test talks to a real Connect server
# without paying for a second JVM and a cold start. Sessions over Connect are isolated from this one.
CONNECT_URL = f"sc://127.0.0.1:{free_port()}"

# local[2]: the machine has two cores; the analysis code reaches this same cached session through
# get_session(TEST_ENGINE), so code under test and tests never start a second JVM.
TEST_ENGINE = EngineConfig(
    type="local",
    url="local[2]",
    shuffle_partitions=2,
    conf=(
        ("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin"),
        ("spark.connect.grpc.binding.address", "127.0.0.1"),
        ("spark.connect.grpc.binding.port", CONNECT_URL.rsplit(":", 1)[1]),
    ),
)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_session(TEST_ENGINE)
    yield session
    stop_session(TEST_ENGINE)
