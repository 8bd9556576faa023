"""Every operation on random clusters with capacities, resource groups, excluded and dead brokers,
rebalances limited to some topics or groups, JBOD brokers with cordoned directories, and any of the
hard goals left out of the policy: a plan that keeps every hard goal it can change, or a failure that
names what the cluster lacks (its claim recomputed by refusals.py), never one found by the plan's own
final check ("the plan would still break hard goal ...") and never a crash. Hard goals are judged by
independent.py, from their definitions, at their exact limits. Each bug this found is also a literal
test in test_planner_operations.py."""

from __future__ import annotations

from checks import dirs_after, placement_after
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from independent import LEADERSHIP_GOALS, answers_for, check, summary_disagreements
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.plan import ReassignmentPlan, check_log_dirs
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import CATALOGUE, PlannerOptions
from known_gaps import known_gaps, known_rack_gap
from refusals import planned_or_refused

from bench.random_operations import OPERATIONS, REMOVE_DISKS, jbod_case


# Derandomized (tests/conftest.py): the same cases in every run, so that a red run names a change.
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from((*OPERATIONS, REMOVE_DISKS)),
    st.frozensets(st.sampled_from(CATALOGUE.hard_goals), max_size=3),
)
# A refusal naming the live brokers that take no new replicas ("[1] take no new ones (...)").
@example(seed=94476, kind="add-brokers", dropped=frozenset())
# A rack-awareness refusal of a partition with one replica on a dead broker and one outside its group,
# where the group has one broker left in the second rack: it named the stage's placement, not the cluster's.
@example(seed=78201498, kind="add-brokers", dropped=frozenset())
# Issue 52's seed, log-dir-capacity kept and cordoned-log-dirs dropped: its mutation run crashed the
# precheck with ZeroDivisionError (hosts with no room; the literal case is in test_planner_cordons.py);
# this draw is refused on disk-capacity, a claim refusals.py recomputes.
@example(seed=501181, kind="fix-offline-replicas", dropped=frozenset({"cordoned-log-dirs"}))
def test_every_operation_plans_or_names_what_the_cluster_lacks(seed: int, kind: str, dropped: frozenset[str]) -> None:
    model, options = jbod_case(seed, kind, dropped)
    # A refusal is the one the docs describe for what this cluster lacks, its numbers and brokers true here.
    proposal = planned_or_refused(model, options)
    if proposal is None:
        return
    if kind == "demote-brokers":
        assert proposal.summary["moves"] == 0
    check_log_dirs(proposal.plan, model)  # every named directory is one of its broker's
    _hard_goals_hold(model, options, proposal)
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
    if kind == REMOVE_DISKS:
        emptied = set(op.log_dirs)
        assert not [k for k, path in dirs_after(model, proposal.plan).items() if (k[2], path) in emptied]


def _hard_goals_hold(model: ClusterModel, options: PlannerOptions, proposal: Proposal) -> None:
    """Every hard goal judged from its definition (independent.py): all hold where the plan answers
    for them; elsewhere (a limited rebalance, a topic in no group) nothing new breaks."""
    before = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    placement = placement_after(model, proposal.plan)
    verdict = check(model, options, placement, dirs_after(model, proposal.plan))
    was = check(model, options, before, dirs_after(model, ReassignmentPlan(()))).hard().places()
    for v in verdict.hard().violations:
        if options.operation.type == "demote-brokers" and v.goal not in LEADERSHIP_GOALS:
            assert (v.goal, v.where) in was, v  # a demotion moves no data
        elif not known_rack_gap(model, options, v):
            assert not answers_for(options, v), v
            assert (v.goal, v.where) in was, v
    tolerated = known_gaps(model, options, verdict.holds("resource-group-confinement"))
    assert not summary_disagreements(verdict, options, proposal.summary, tolerated)
