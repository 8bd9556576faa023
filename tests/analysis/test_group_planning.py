"""Resource groups planned in parallel inside Spark (one group per task) give the driver's proposal."""

from __future__ import annotations

import numpy as np
import pytest
from kafka_balancer.analysis.group_planning import plan_groups
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import GroupOptions, OperationOptions, PlannerOptions, PlanningError, evaluate, plan
from pyspark.sql import SparkSession

GROUPS = (
    GroupOptions("payments", (0, 1, 2, 3), topic_patterns=("pay-.*",)),
    GroupOptions("search", (4, 5, 6, 7), topic_names=("search",)),
    GroupOptions("logs", (8, 9, 10, 11), topic_patterns=("logs-.*",)),
)


def skewed_groups() -> ClusterModel:
    """Three groups of 4 brokers (2 racks), each group's replicas piled on its first two brokers."""
    rng = np.random.default_rng(11)
    builder = ClusterBuilder()
    for b in range(12):
        builder.add_broker(b, rack=f"rack-{b % 2}")
    layout = {"pay-orders": (0, 1e9), "search": (4, 1e7), "logs-app": (8, 5e9)}
    for topic, (base, scale) in layout.items():
        for p in range(24):
            replicas = [base + p % 2, base + (p + 1) % 2] if rng.random() < 0.8 else [base + 2, base + 3]
            size = float(scale * rng.lognormal(0, 0.3))
            builder.add_partition(
                topic, p, replicas, size_bytes=size, bytes_in_per_sec=size / 1e4, bytes_out_per_sec=size / 5e3
            )
    return builder.build()


def test_each_group_is_planned_in_its_own_task_and_merges_into_the_driver_proposal(spark: SparkSession) -> None:
    model = skewed_groups()
    options = PlannerOptions(resource_groups=GROUPS)
    assert evaluate(model, options).max_over_avg("disk", "logs") > 1.3

    result = plan_groups(model, options, spark=spark)

    assert sorted(result.tasks) == ["logs", "payments", "search"]
    assert len(set(result.tasks.values())) == 3, f"groups shared a Spark task: {result.tasks}"
    whole = plan(model, options)
    assert result.proposal.plan == whole.plan
    assert result.proposal.id == whole.id
    assert result.proposal.plan.partitions, "a skewed cluster needs moves"
    for target in result.proposal.plan.partitions:
        group = next(g for g in GROUPS if g.matches(target.topic))
        assert set(target.replicas) <= set(group.broker_ids), target
    after = result.proposal.summary["groups"]["logs"]["after"]["disk"]
    assert after["maxOverAvg"] <= 1.10 + 1e-9


def test_a_group_that_cannot_meet_a_hard_goal_is_named(spark: SparkSession) -> None:
    builder = ClusterBuilder()
    for b in range(4):
        builder.add_broker(b, rack=f"rack-{b % 2}", disk_bytes=1e9)
    builder.add_partition("a-big", 0, [0, 1], size_bytes=5e9)
    builder.add_partition("b-small", 0, [2, 3], size_bytes=1e6)
    groups = (GroupOptions("a", (0, 1), topic_patterns=("a-.*",)), GroupOptions("b", (2, 3), topic_patterns=("b-.*",)))
    with pytest.raises(PlanningError, match="resource group 'a'"):
        plan_groups(builder.build(), PlannerOptions(resource_groups=groups), spark=spark)


def test_operations_planned_whole_are_refused_before_spark_runs() -> None:
    demote = PlannerOptions(resource_groups=GROUPS, operation=OperationOptions(type="demote-brokers", brokers=(0,)))
    with pytest.raises(PlanningError, match="planned whole"):
        plan_groups(skewed_groups(), demote)
