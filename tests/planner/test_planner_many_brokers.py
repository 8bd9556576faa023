"""Clusters of many brokers: planned when the per-topic tables fit, refused early with the sizes named
when they do not (docs/goals.md, "Limits"; the times are in docs/performance.md, "Many brokers")."""

from __future__ import annotations

import dataclasses
import tracemalloc

import pytest
from checks import broker_loads, placement_after, rack_spread_ok
from kafka_balancer.model import ReassignmentPlan
from kafka_balancer.planner import OperationOptions, PlannerOptions, PlanningError, plan

from bench.synthetic import skewed_cluster


def test_a_cluster_whose_per_topic_tables_are_too_large_is_refused_before_allocating() -> None:
    # 10,000 topics x 5,010 brokers is 50.1 million cells, just above the limit: the two tables
    # alone would take 400 MB, so the refusal must come before them.
    model = skewed_cluster(brokers=5010, new_brokers=0, racks=3, partitions=10000, topics=10000, rf=1, seed=1)
    tracemalloc.start()
    try:
        with pytest.raises(PlanningError) as refused:
            plan(model, PlannerOptions())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.reason == "cluster-too-large"
    assert "10,000 topics x 5,010 brokers = 50,100,000 per-topic counts" in refused.value.details
    assert "limit of 50,000,000" in refused.value.details
    assert peak < 50 * 2**20, peak


def test_a_cluster_of_many_brokers_plans_within_every_hard_goal() -> None:
    # 1,200 brokers in 10 racks, 10 partitions each (rf 3); the busiest broker dies and its replicas
    # are re-placed (fix-offline-replicas): 600 topics x 1,200 brokers, well inside the limit.
    model = skewed_cluster(brokers=1200, new_brokers=0, racks=10, partitions=12000, rf=3, seed=3)
    replicas = broker_loads(model, placement_after(model, ReassignmentPlan(())))["replicas"]
    victim = max(replicas, key=lambda b: (replicas[b], -b))
    alive = model.broker_alive.copy()
    alive[victim] = False
    model = dataclasses.replace(model, broker_alive=alive)
    proposal = plan(model, PlannerOptions(operation=OperationOptions("fix-offline-replicas")))
    placement = placement_after(model, proposal.plan)
    live = {int(b) for b in model.broker_ids} - {victim}
    assert all(victim not in row for row in placement.values())
    assert all(len(set(row)) == len(row) == 3 for row in placement.values())
    assert all(rack_spread_ok(model, row, live) for row in placement.values())
    # Only the dead broker's replicas move, spread over many brokers rather than piled on a few.
    assert proposal.summary["moves"] == replicas[victim]
    after = broker_loads(model, placement)["replicas"]
    gained = [after[b] - replicas[b] for b in live]
    assert max(gained) <= 3, max(gained)
    assert sum(g > 0 for g in gained) >= replicas[victim] // 3
