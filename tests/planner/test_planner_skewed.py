"""Strongly skewed synthetic clusters with new, empty brokers (bench/synthetic.py): balance reached, bytes kept low."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from checks import one_rack_per_broker
from kafka_balancer.planner import DISTRIBUTION_GOALS, OperationOptions, PlannerOptions, evaluate, plan

from bench.synthetic import disk_lower_bound, goals_lower_bound, skewed_cluster

# Broker-level resource goals that must end inside the band on these clusters.
RESOURCE_GOALS = (
    "replica-distribution",
    "disk-distribution",
    "network-in-distribution",
    "network-out-distribution",
    "cpu-distribution",
)


@pytest.mark.parametrize(
    "shape",
    [
        {"brokers": 12, "new_brokers": 3, "partitions": 2000, "rf": 3, "skew": 1.0, "seed": 7},
        {"brokers": 15, "new_brokers": 3, "partitions": 3000, "rf": 3, "skew": 2.0, "seed": 1},
        {"brokers": 18, "new_brokers": 6, "partitions": 3000, "rf": 2.5, "skew": 1.0, "seed": 4},
    ],
    ids=["12b-2k", "15b-3k-skew2", "18b-3k-rf2.5"],
)
def test_skewed_cluster_with_new_brokers(shape: dict[str, Any]) -> None:
    model = skewed_cluster(**shape)
    brokers, new = int(shape["brokers"]), int(shape["new_brokers"])
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
    # Every goal holds, the per-topic ones included (on the mixed-rf cluster the last leader slots
    # need detours, planner/finishing/detours.py). The bytes stay near the lower bound max(disk above 1.10 x
    # avg, disk below 0.90 x avg): within the 1.15x (measured 1.05x, 1.05x and 1.07x, and
    # 1.07x, 1.06x and 1.12x without the rebuilding rounds; docs/performance.md).
    assert summary["goalsViolated"] == [], summary["goalsViolated"]
    ratio = summary["bytesToMove"] / disk_lower_bound(model)
    assert 1.0 <= ratio <= 1.15, ratio
    # Every goal holds, so the plan moves at least what the bands force (a bound, not an estimate).
    assert summary["bytesToMove"] >= goals_lower_bound(model) >= disk_lower_bound(model)
    # Leadership is free, so leader counts go on to the average rounded down or up.
    leaders = after["leaders"]
    assert leaders["maxOverAvg"] * leaders["avg"] <= math.ceil(leaders["avg"]) + 1e-6, leaders
    assert leaders["minOverAvg"] * leaders["avg"] >= math.floor(leaders["avg"]) - 1e-6, leaders
    # With the seven broker-level goals only (measured 1.02-1.07x; 1.05-1.12x without the rounds).
    broker_level = tuple(g for g in DISTRIBUTION_GOALS if not g.startswith("topic-"))
    lean = plan(model, dataclasses.replace(options, distribution_goals=broker_level)).summary
    assert all(lean["goals"][goal]["holdsAfter"] for goal in RESOURCE_GOALS)
    assert 1.0 <= lean["bytesToMove"] / disk_lower_bound(model) <= 1.20


def test_the_goals_bound_counts_what_the_topic_bands_force_off_and_onto_each_broker() -> None:
    # Two brokers with the same disk (12 bytes each, so the disk bound is 0): broker 0 holds 4 of
    # topic "a" (1, 1, 5 and 5 bytes), broker 1 holds 4 of "b" (3 bytes each). Each topic's band is
    # 1-3 replicas per broker, so broker 0 must send at least its smallest "a" (1 byte) and broker 1
    # its smallest "b" (3 bytes): 4 bytes, and each must receive one of the other topic: 4 bytes too.
    partitions = [("a", p, [0], size) for p, size in enumerate([1.0, 1.0, 5.0, 5.0])]
    partitions += [("b", p, [1], 3.0) for p in range(4)]
    model = one_rack_per_broker(partitions, brokers=2)
    assert disk_lower_bound(model) == 0.0
    assert goals_lower_bound(model) == 4.0
