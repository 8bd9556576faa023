"""The ONE SparkSession of a test run (starting one costs ~15 s): use the ``spark`` fixture, never build another.

tests/conftest.py imports this module, so every test directory can ask for ``spark``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka_balancer.analysis.spark import EngineConfig, get_session, stop_session
from pyspark.sql import SparkSession

# local[2]: the machine has two cores; the analysis code reaches this same cached session through
# get_session(TEST_ENGINE), so code under test and tests never start a second JVM.
TEST_ENGINE = EngineConfig(type="local", url="local[2]", shuffle_partitions=2)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_session(TEST_ENGINE)
    yield session
    stop_session(TEST_ENGINE)
