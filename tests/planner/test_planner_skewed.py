"""Strongly skewed synthetic clusters with new, empty brokers (bench/synthetic.py): balance reached, bytes kept low."""

from __future__ import annotations

import pytest
from kafka_balancer.planner import OperationOptions, PlannerOptions, evaluate, plan

from bench.synthetic import disk_lower_bound, skewed_cluster

# Broker-level resource goals that must end inside the band on these clusters.
RESOURCE_GOALS = (
    "replica-distribution",
    "disk-distribution",
    "network-in-distribution",
    "network-out-distribution",
    "cpu-distribution",
)


@pytest.mark.parametrize(
    ("brokers", "new", "partitions", "rf", "skew", "seed"),
    [(12, 3, 2000, 3, 1.0, 7), (15, 3, 3000, 3, 2.0, 1), (18, 6, 3000, 2.5, 1.0, 4)],
)
def test_skewed_cluster_with_new_brokers(
    brokers: int, new: int, partitions: int, rf: float, skew: float, seed: int
) -> None:
    model = skewed_cluster(brokers=brokers, new_brokers=new, partitions=partitions, rf=rf, skew=skew, seed=seed)
    options = PlannerOptions(operation=OperationOptions("add-brokers", brokers=tuple(range(brokers - new, brokers))))
    before = evaluate(model, options)
    assert before.max_over_avg("disk") > 1.3  # strongly skewed to start with
    proposal = plan(model, options)
    summary = proposal.summary
    after = summary["groups"]["cluster"]["after"]
    for goal in RESOURCE_GOALS:
        assert summary["goals"][goal]["holdsAfter"], (goal, summary["goals"][goal])
    for resource in ("disk", "network-in", "network-out", "cpu"):
        assert after[resource]["maxOverAvg"] <= 1.10 + 1e-9, (resource, after[resource])
        assert after[resource]["minOverAvg"] >= 0.90 - 1e-9, (resource, after[resource])
    # Every goal ends at least as close to its band as it started.
    for goal, stats in summary["goals"].items():
        assert stats["violationAfter"] <= stats["violationBefore"] + 1e-9, (goal, stats)
    assert summary["balancednessAfter"] > 90 > summary["balancednessBefore"]
    # Bytes moved against the lower bound max(disk above 1.10 x avg, disk below 0.90 x avg). The
    # issue's target is 1.15x; measured here 1.16-1.27x with the per-topic goals, which need moves of
    # their own (see docs/performance.md), so this guards against regressions, not the target.
    ratio = summary["bytesToMove"] / disk_lower_bound(model)
    assert 1.0 <= ratio <= 1.35, ratio
