"""Shared pytest fixtures. Fixtures for a subsystem live in tests/<subsystem>/conftest.py."""

import os

from emulator_fixtures import emulator  # noqa: F401  (the Kafka emulator, see emulator_fixtures.py)
from hypothesis import settings
from kafka_targets import kafka_target  # noqa: F401  (emulator or real brokers, see kafka_targets.py)
from real_kafka import real_cluster, real_kafka  # noqa: F401  (real Kafka brokers, see real_kafka.py)
from spark_fixtures import spark  # noqa: F401  (the one shared SparkSession, see spark_fixtures.py)

# `make test` draws the same hypothesis examples on every run, so that a red run reproduces on any
# machine and a change cannot land on a lucky draw. Bug hunts draw new ones:
# HYPOTHESIS_PROFILE=explore .venv/bin/pytest tests/planner
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
