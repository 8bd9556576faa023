"""Shared pytest fixtures. Fixtures for a subsystem live in tests/<subsystem>/conftest.py."""

from emulator_fixtures import emulator  # noqa: F401  (the Kafka emulator, see emulator_fixtures.py)
from spark_fixtures import spark  # noqa: F401  (the one shared SparkSession, see spark_fixtures.py)
