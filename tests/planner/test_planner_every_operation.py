"""Every operation on random clusters with capacities, resource groups, excluded and dead brokers,
rebalances limited to some topics or groups: a plan that keeps every hard goal it can change, or a
failure that names what the cluster lacks, never one found by the plan's own final check ("the plan
would still break hard goal ..."). Each bug this found is also a literal test in
test_planner_operations.py."""

from __future__ import annotations

from checks import placement_after
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_balancer.planner import CATALOGUE, PlanningError, plan

from bench.random_operations import OPERATIONS, random_case

# What a demotion cannot change (it moves no data): see docs/goals.md, operations.
DATA_BOUND = {goal for goal in CATALOGUE.hard_goals if not CATALOGUE.leadership_mends(goal)}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from(OPERATIONS))
def test_every_operation_plans_or_names_what_the_cluster_lacks(seed: int, kind: str) -> None:
    model, options = random_case(seed, kind)
    try:
        proposal = plan(model, options)
    except PlanningError as error:
        failed: PlanningError | None = error
    else:
        failed = None
    if failed is not None:
        assert "would still break" not in failed.details, failed
        assert "still has a replica offline" not in failed.details, failed
        return
    hard = dict(proposal.summary["hardGoals"])
    if kind == "demote-brokers":
        hard = {goal: ok for goal, ok in hard.items() if goal not in DATA_BOUND}
        assert proposal.summary["moves"] == 0
    if not (options.topics or options.groups_to_balance):  # else only what it could mend (above)
        assert all(hard.values()), hard
    dead = {b.id for b in model.brokers() if not b.alive}
    placement = placement_after(model, proposal.plan)
    if kind != "demote-brokers":
        assert not any(set(replicas) & dead for replicas in placement.values())
    # A topic in no group while every broker is in one stays where it is: only its replicas on dead
    # or removed brokers move (and its leadership may, where a broker is above a limit).
    grouped = {name for group in options.resource_groups for name in group.topic_names}
    gone = dead | (set(options.operation.brokers) if options.operation.type == "remove-brokers" else set())
    for p in model.partitions():
        if options.resource_groups and p.topic not in grouped:
            assert set(p.replicas) - gone <= set(placement[(p.topic, p.partition)]), p
    # What the operation sends to the brokers the user named stays there (docs/goals.md, the capacity stage):
    # every replica of topics moved onto them; a removed broker's replicas on targets that did not
    # hold the partition before (which target is the planner's choice; other replicas may move).
    op = options.operation
    targets = set(op.target_brokers)
    for p in model.partitions():
        after = placement[(p.topic, p.partition)]
        if op.type == "move-topics" and targets and p.topic in op.topics:
            assert set(after) <= targets, (p, after)
        if op.type == "remove-brokers" and targets:
            removed = sum(b in op.brokers for b in p.replicas)
            assert sum(b in targets and b not in p.replicas for b in after) >= removed, (p, after)
