"""Shared pytest fixtures. Fixtures for a subsystem live in tests/<subsystem>/conftest.py."""

import os
from collections import Counter
from collections.abc import Iterator

import pytest
from emulator_fixtures import emulator  # noqa: F401  (the Kafka emulator, see emulator_fixtures.py)
from hypothesis import settings
from kafka_balancer.analysis.spark import stop_session
from kafka_balancer.sandbox.real import KAFKA_VERSION
from kafka_targets import kafka_target  # noqa: F401  (emulator or real brokers, see kafka_targets.py)
from real_kafka import (  # noqa: F401  (real Kafka brokers, see real_kafka.py)
    CLUSTERS,
    group_of,
    kafka_version,
    real_cluster,
    real_clusters,
    real_kafka,
)
from spark_fixtures import TEST_ENGINE, spark  # noqa: F401  (the one shared SparkSession, see spark_fixtures.py)
from submissions import submissions  # noqa: F401  (what reached the emulator's controller, see submissions.py)

# `make test` draws the same hypothesis examples on every run, so that a red run reproduces on any
# machine and a change cannot land on a lucky draw. Bug hunts draw new ones:
# HYPOTHESIS_PROFILE=explore .venv/bin/pytest tests/planner
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ----- one real Kafka cluster and one Spark session per run (issue 52) ------------------------------
# Starting either costs tens of CPU seconds and hundreds of MB, and `make test` runs two xdist workers
# (--dist loadgroup): every test on the shared real cluster is in one xdist group, every test on the
# shared SparkSession in another, so each is started once, by the worker that runs its group, and
# stopped after the group's last test (an idle 6-broker cluster costs a third of a core, and the other
# worker's tests run for a long while after the group ends). The groups hold the most tests, so
# pytest-xdist hands them out first.
SPARK_GROUP = "spark"
# Tests of each group still to run (every worker collects every test; the worker that runs a group
# runs all of it, so its count reaches zero there and nowhere else).
_LEFT: Counter[str] = Counter()
_UNGROUPED: set[str] = set()  # node ids of this worker's tests that pytest-xdist left ungrouped


def _kafka_version(item: pytest.Item) -> str | None:
    """The Kafka version of the shared real cluster the test runs on; None when it uses none."""
    names = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    if {"real_kafka", "real_cluster"} & names or params.get("kafka_target") == "real":
        return str(params.get("kafka_version", KAFKA_VERSION))
    target = str(params.get("kafka_target", ""))
    if target.startswith("real-"):  # another version's cluster (kafka_targets.BACKENDS)
        return target.removeprefix("real-")
    return None


def _group(item: pytest.Item) -> str | None:
    version, on_spark = _kafka_version(item), "spark" in getattr(item, "fixturenames", ())
    if version is not None and on_spark:
        raise pytest.UsageError(
            f"{item.nodeid}: the shared real Kafka cluster and the shared SparkSession run on different xdist "
            "workers; run the analysis as `kafka-balancer analyze` (a process of its own) instead"
        )
    if version is not None:
        return group_of(version)
    return SPARK_GROUP if on_spark else None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    # Slow tests first (a stable sort): a long test handed out last would end the run alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    _LEFT.clear()
    _LEFT.update(group for group in map(_group, session.items) if group is not None)
    # pytest-xdist hands out a group whole only when it could mark the group in the test's node id
    # (pytest 9.2 took that away silently, pytest-xdist#1386): then every worker would start its own
    # cluster and session, and the run would double its JVMs. Such a run fails its grouped tests.
    if getattr(session.config.option, "loadgroup", False):  # on an xdist worker under --dist loadgroup
        _UNGROUPED.update(item.nodeid for item in session.items if _group(item) and "@" not in item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.nodeid in _UNGROUPED:
        pytest.fail(
            "--dist loadgroup did not group this test: this pytest and pytest-xdist do not work together "
            "(pytest-xdist#1386); install the versions of constraints.txt",
            pytrace=False,
        )


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # before pytest-timeout starts the test's clock
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    version = _kafka_version(item)
    if version is not None and item.nodeid not in _UNGROUPED:
        CLUSTERS.start(version)  # once; a failure is the test's, through its fixture (real_kafka.py)
    yield
    group = _group(item)
    if group is None:
        return
    _LEFT[group] -= 1
    if _LEFT[group] == 0:  # the group's last test, its teardown done
        if version is not None:
            CLUSTERS.stop(version)
        else:
            stop_session(TEST_ENGINE)


def pytest_sessionfinish() -> None:
    CLUSTERS.stop()
