"""The Spark path of the consumer-group analysis gives exactly the plain-Python results."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest
from kafka_balancer.analysis.consumer_groups import GroupsInput, analyze, analyze_python, analyze_spark
from kafka_balancer.cli import main
from kafka_balancer.consumers import ASSIGNOR_NAMES, GroupSpec, Member, assign
from kafka_balancer.kafka.port import ConsumerGroupInfo, ConsumerGroupMember, TopicPartition
from kafka_balancer.sandbox import EmulatedCluster
from pyspark.sql import SparkSession
from test_emulated_groups import RANGE_GROUP, ROUNDROBIN_GROUP, groups_model  # tests/consumers is on sys.path

pytestmark = pytest.mark.spark


def synthetic_groups(count: int, seed: int = 7) -> GroupsInput:
    """Groups with 2-6 members over 1-3 of 8 topics, each assigned by a random built-in assignor
    (unequal subscriptions in a third of them), with committed offsets behind a log end."""
    rng = random.Random(seed)
    partitions = {f"topic-{i}": rng.randint(1, 12) for i in range(8)}
    groups = []
    for g in range(count):
        topics = rng.sample(sorted(partitions), rng.randint(1, 3))
        members = []
        for m in range(rng.randint(2, 6)):
            subscribed = topics if g % 3 else rng.sample(topics, rng.randint(1, len(topics)))
            members.append(Member(f"consumer-{m}-{rng.randrange(16**6):06x}", tuple(subscribed)))
        assignor = ASSIGNOR_NAMES[g % len(ASSIGNOR_NAMES)]
        assignment = assign(assignor, GroupSpec(partitions, tuple(members)))
        infos = tuple(
            ConsumerGroupMember(
                m.id,
                "client",
                "/127.0.0.1",
                m.topics,
                {t: tuple(p for tt, p in assignment[m.id] if tt == t) for t in m.topics},
            )
            for m in members
        )
        committed = {TopicPartition(t, p): rng.randint(0, 500) for t in topics for p in range(partitions[t])}
        groups.append(
            ConsumerGroupInfo(
                f"group-{g:04d}", "Stable", "consumer", assignor, infos, committed, dict.fromkeys(committed, 1000)
            )
        )
    rates = {(t, p): float(rng.randint(1, 50)) for t, n in partitions.items() for p in range(n)}
    return GroupsInput(tuple(groups), partitions, rates)


def test_spark_and_python_agree(spark: SparkSession) -> None:
    data = synthetic_groups(40)
    expected = analyze_python(data)
    assert len(expected) == 40
    assert analyze_spark(data, spark) == expected
    # analyze() switches to Spark above the threshold and gives the same answer.
    assert analyze(data, spark=spark, spark_threshold=10) == expected


def test_python_path_below_threshold_needs_no_spark() -> None:
    data = synthetic_groups(5)
    assert [r["group"] for r in analyze(data, spark=None)] == [f"group-{g:04d}" for g in range(5)]


def test_consumers_cli_on_spark_matches_in_process(
    spark: SparkSession, emulator: Callable[..., EmulatedCluster], capsys: pytest.CaptureFixture[str]
) -> None:
    # local[2] is the test run's shared session (spark_fixtures.TEST_ENGINE): the CLI reuses it.
    cluster = emulator(groups_model())
    for seed in (RANGE_GROUP, ROUNDROBIN_GROUP):
        cluster.seed_group(seed)
    common = ["consumers", "--bootstrap-servers", cluster.bootstrap_servers, "--json"]
    tracker = spark.sparkContext.statusTracker()
    jobs_before = len(tracker.getJobIdsForGroup())
    assert main([*common, "--spark-threshold", "1", "--engine-url", "local[2]"]) == 0
    on_spark = json.loads(capsys.readouterr().out)
    assert len(tracker.getJobIdsForGroup()) > jobs_before  # the groups really went through Spark
    jobs_before = len(tracker.getJobIdsForGroup())
    assert main(common) == 0
    in_process = json.loads(capsys.readouterr().out)
    assert len(tracker.getJobIdsForGroup()) == jobs_before  # two groups: below the default threshold
    assert [g["group"] for g in on_spark["groups"]] == ["mixed-roundrobin", "orders-range"]
    assert on_spark == in_process
