"""Resource groups: each group balanced against its own average, nothing crosses a group boundary."""

from __future__ import annotations

import numpy as np
import pytest
from checks import placement_after
from dead_broker import left_worse_by_the_hard_goals
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.planner import GroupOptions, PlannerOptions, evaluate, plan
from kafka_balancer.planner.groups import merge, plan_group, split

GROUPS = (
    GroupOptions("payments", (0, 1, 2, 3, 4, 5), topic_patterns=("pay-.*",)),
    GroupOptions("search", (6, 7, 8, 9, 10, 11), topic_names=("search-a", "search-b")),
    GroupOptions("logs", (12, 13, 14, 15, 16, 17), topic_patterns=("logs-.*",)),
)


def three_group_cluster() -> ClusterModel:
    """Three groups of 6 brokers (3 racks each) with very different loads, each skewed onto few brokers."""
    rng = np.random.default_rng(3)
    builder = ClusterBuilder()
    for b in range(18):
        builder.add_broker(b, rack=f"rack-{b % 3}")
    layout = {
        "payments": (["pay-orders", "pay-refunds"], 60, 1e9),
        "search": (["search-a", "search-b"], 40, 1e8),
        "logs": (["logs-app", "logs-audit", "logs-web"], 50, 5e9),
    }
    for gi, (_, (topics, parts, scale)) in enumerate(layout.items()):
        base = gi * 6
        for topic in topics:
            for p in range(parts):
                # Skew: the first broker of each rack gets most replicas; racks stay distinct.
                first = int(rng.integers(0, 3))
                replicas = [base + (first + k) % 3 + (3 if rng.random() < 0.2 else 0) for k in range(3)]
                size = float(scale * rng.lognormal(0, 0.5))
                builder.add_partition(
                    topic, p, replicas, size_bytes=size, bytes_in_per_sec=size / 1e4, bytes_out_per_sec=size / 5e3
                )
    return builder.build()


def test_each_group_balanced_against_its_own_average_and_confined() -> None:
    model = three_group_cluster()
    options = PlannerOptions(resource_groups=GROUPS)
    before = evaluate(model, options)
    assert before.max_over_avg("disk", "payments") > 1.3
    proposal = plan(model, options)
    placement = placement_after(model, proposal.plan)
    members = {g.name: set(g.broker_ids) for g in GROUPS}
    for (topic, _), replicas in placement.items():
        group = next(g for g in GROUPS if g.matches(topic))
        assert set(replicas) <= members[group.name], f"{topic}: {replicas} leaves group {group.name}"
    groups = proposal.summary["groups"]
    averages = {name: groups[name]["after"]["disk"]["avg"] for name in members}
    # Loads differ a lot between groups: a cluster-wide average would make no group balanced.
    assert max(averages.values()) > 10 * min(averages.values())
    for name in members:
        for resource in ("disk", "network-in"):
            stats = groups[name]["after"][resource]
            assert stats["maxOverAvg"] <= 1.10 + 1e-9, (name, resource, stats)
            assert stats["minOverAvg"] >= 0.90 - 1e-9, (name, resource, stats)
    # Counts hold within rounding (the band's edges are rounded outwards to whole replicas/leaders).
    for goal in ("replica-distribution", "disk-distribution", "network-in-distribution", "leader-count-distribution"):
        assert proposal.summary["goals"][goal]["holdsAfter"], goal
    assert proposal.summary["hardGoals"]["resource-group-confinement"]


def test_only_the_named_group_moves() -> None:
    model = three_group_cluster()
    options = PlannerOptions(resource_groups=GROUPS, groups_to_balance=("search",))
    proposal = plan(model, options)
    assert proposal.plan.partitions
    assert all(t.topic.startswith("search-") for t in proposal.plan.partitions)


def test_groups_planned_separately_merge_into_the_same_proposal() -> None:
    model = three_group_cluster()
    options = PlannerOptions(resource_groups=GROUPS)
    jobs = split(model, options)
    assert [j.name for j in jobs] == ["payments", "search", "logs"]
    targets = [t for job in jobs for t in plan_group(job).targets]
    merged = merge(model, options, targets)
    whole = plan(model, options)
    assert merged.plan == whole.plan
    assert merged.id == whole.id


def test_replica_outside_its_group_is_moved_home() -> None:
    builder = ClusterBuilder()
    for b in range(6):
        builder.add_broker(b, rack=f"r{b % 2}")
    builder.add_partition("a-1", 0, [0, 3, 1])  # broker 3 is in group b
    builder.add_partition("b-1", 0, [3, 4])
    groups = (GroupOptions("a", (0, 1, 2), topic_patterns=("a-.*",)), GroupOptions("b", (3, 4, 5), ("b-1",)))
    proposal = plan(builder.build(), PlannerOptions(resource_groups=groups, hard_goals=("resource-group-confinement",)))
    placement = placement_after(builder.build(), proposal.plan)
    assert set(placement[("a-1", 0)]) == {0, 1, 2}
    assert placement[("a-1", 0)][0] == 0


@pytest.mark.parametrize("name", ["payments", "logs"])
def test_evaluate_reports_group_statistics(name: str) -> None:
    ev = evaluate(three_group_cluster(), PlannerOptions(resource_groups=GROUPS))
    assert ev.groups[name]["brokers"] == sorted(next(g for g in GROUPS if g.name == name).broker_ids)
    assert ev.max_over_avg("disk", name) >= 1.0
    with pytest.raises(ValueError, match="resource must be one of"):
        ev.max_over_avg("memory")


def test_merge_names_the_goals_any_groups_hard_goals_left_worse() -> None:
    model = left_worse_by_the_hard_goals()
    options = PlannerOptions()
    plans = {job.name: plan_group(job) for job in split(model, options)}
    targets = [t for planned in plans.values() for t in planned.targets]
    merged = merge(model, options, targets, worsened={n: p.worsened_by_hard_goals for n, p in plans.items()})
    whole = plan(model, options).summary["goalsWorsenedByHardGoals"]
    assert merged.summary["goalsWorsenedByHardGoals"] == whole == ["topic-replica-distribution"]
    # Several groups: the union of their lists, once each, in the goals' priority order.
    worsened = {"b": ("topic-replica-distribution", "disk-distribution"), "a": ("disk-distribution",)}
    union = merge(model, options, targets, worsened=worsened).summary["goalsWorsenedByHardGoals"]
    assert union == ["disk-distribution", "topic-replica-distribution"]
