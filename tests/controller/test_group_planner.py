"""The operator's planner plans policies with many resource groups one group per Spark task."""

from __future__ import annotations

import numpy as np
import pytest
from kafka_balancer.controller.group_planner import SparkGroupPlanner
from kafka_balancer.controller.services import ModulePlanner
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.policy.parsing import parse_balance_policy_spec, parse_resource_group_spec
from pyspark.sql import SparkSession
from spark_fixtures import TEST_ENGINE

GROUPS = [
    ("payments", parse_resource_group_spec({"brokers": {"ids": [0, 1, 2, 3]}, "topics": {"patterns": ["pay-.*"]}})),
    ("search", parse_resource_group_spec({"brokers": {"ids": [4, 5, 6, 7]}, "topics": {"names": ["search"]}})),
    ("logs", parse_resource_group_spec({"brokers": {"ids": [8, 9, 10, 11]}, "topics": {"patterns": ["logs-.*"]}})),
]
SPEC = parse_balance_policy_spec(
    {"cluster": {"bootstrapServers": "127.0.0.1:9092"}, "resourceGroups": [name for name, _ in GROUPS]}
)


def skewed_groups() -> ClusterModel:
    """Three groups of 4 brokers (2 racks), each group's replicas piled on its first two brokers."""
    rng = np.random.default_rng(5)
    builder = ClusterBuilder()
    for b in range(12):
        builder.add_broker(b, rack=f"rack-{b % 2}")
    for topic, (base, scale) in {"pay-orders": (0, 1e9), "search": (4, 1e7), "logs-app": (8, 5e9)}.items():
        for p in range(16):
            replicas = [base + p % 2, base + (p + 1) % 2] if rng.random() < 0.8 else [base + 2, base + 3]
            builder.add_partition(topic, p, replicas, size_bytes=float(scale * rng.lognormal(0, 0.3)))
    return builder.build()


def _spark_jobs(spark: SparkSession) -> int:
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup())


@pytest.mark.spark
def test_many_groups_are_planned_on_spark_with_the_same_proposal(spark: SparkSession) -> None:
    model = skewed_groups()
    in_process = ModulePlanner().propose(model, SPEC, GROUPS)
    assert in_process.plan.partitions, "a skewed cluster needs moves"

    parallel = SparkGroupPlanner(min_groups=3, engine=TEST_ENGINE)
    jobs_before = _spark_jobs(spark)
    proposal = parallel.propose(model, SPEC, GROUPS)
    assert parallel.spark_plans == 1
    assert _spark_jobs(spark) > jobs_before  # the groups really went through Spark
    assert proposal.id == in_process.id
    assert proposal.plan == in_process.plan


@pytest.mark.spark
def test_few_groups_and_whole_cluster_operations_stay_in_process(spark: SparkSession) -> None:
    model = skewed_groups()
    planner = SparkGroupPlanner(min_groups=4, engine=TEST_ENGINE)
    jobs_before = _spark_jobs(spark)
    planner.propose(model, SPEC, GROUPS)  # 3 groups < 4
    operation = SPEC.operation.model_copy(update={"type": "demote-brokers", "brokers": [0]})
    demote = SPEC.model_copy(update={"operation": operation})
    whole = SparkGroupPlanner(min_groups=2, engine=TEST_ENGINE)
    whole.propose(model, demote, GROUPS)  # planned over the whole cluster
    assert planner.spark_plans == whole.spark_plans == 0
    assert _spark_jobs(spark) == jobs_before


def test_min_groups_below_two_is_refused() -> None:
    with pytest.raises(ValueError, match="MIN_GROUPS must be >= 2, got 1"):
        SparkGroupPlanner(min_groups=1)


def test_the_operator_reads_the_threshold_from_its_environment() -> None:
    from kafka_balancer.controller.operator import OperatorConfig

    assert OperatorConfig.from_env({}).spark_planning_min_groups == 8
    assert OperatorConfig.from_env({"KAFKA_BALANCER_SPARK_PLANNING_MIN_GROUPS": "3"}).spark_planning_min_groups == 3
    with pytest.raises(SystemExit, match="MIN_GROUPS must be >= 2, got 1"):
        OperatorConfig.from_env({"KAFKA_BALANCER_SPARK_PLANNING_MIN_GROUPS": "1"})
