"""The stages of a plan, in order (:data:`STAGES`): the operation's shape change, the hard goals
(precheck, evacuation, leadership, capacity), the distribution stage
(:mod:`kafka_balancer.planner.pipeline.distribution`), the passes that revisit a finished plan
(rebuilding rounds, count exchanges), and the log directories. docs/goals.md describes each stage."""

from __future__ import annotations

from typing import Final

import numpy as np

from kafka_balancer.model.policy.operations import ADD_BROKERS, CHANGE_REPLICATION_FACTOR, MOVE_TOPICS
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.capacity.precheck import precheck
from kafka_balancer.planner.finishing.rebuild import exchange_pass, rebuild_rounds
from kafka_balancer.planner.hard.evacuate import bad_slots, evacuate, fix_leadership
from kafka_balancer.planner.hard.operations import change_replication_factor, move_topics
from kafka_balancer.planner.hard.pinned import repair_capacity, repair_capacity_by_leadership, repair_racks_and_groups
from kafka_balancer.planner.log_dirs.placement import place_log_dirs
from kafka_balancer.planner.options import PlannerOptions, PlanningError
from kafka_balancer.planner.pipeline.distribution import again, distribute
from kafka_balancer.planner.pipeline.plan_run import (
    PlanRun,
    Stage,
    always,
    exchanges_counts,
    lead_from_preferred_racks,
    prefers_racks,
)


def _operation(run: PlanRun) -> None:
    """The operation's shape change (replication factor, topics moved); what the rest may move."""
    st = run.st
    _check_operation(st)
    op = st.options.operation
    if op.kind is CHANGE_REPLICATION_FACTOR and op.replication_factor is not None:
        change_replication_factor(st, op.topics, op.replication_factor)
    elif op.kind is MOVE_TOPICS:
        target_group = None
        if op.target_group is not None:
            target_group = st.groups.names.index(op.target_group)
            targets = st.groups.broker == target_group
        else:
            targets = st.named_targets()
        run.movable = move_topics(st, op.topics, targets & st.active, target_group)
        if op.target_group is None:
            # Named brokers: the topics stay on them (the capacity repair may settle them on another
            # named broker, and moves others to make room).
            run.movable = np.zeros_like(run.movable)
    elif shape_only(st.options):
        run.movable = np.zeros_like(run.movable)


def _check_operation(st: State) -> None:
    op = st.options.operation
    for b in op.brokers:
        st.index_of(b, "operation.brokers")
    for b in op.target_brokers:
        st.index_of(b, "operation.targetBrokers")
    if op.kind is ADD_BROKERS:
        for b in op.brokers:
            i = st.index_of(b, "operation.brokers")
            if not st.model.broker_alive[i]:
                raise PlanningError("invalid-options", f"field 'operation.brokers' names broker {b}, which is down")


def shape_only(options: PlannerOptions) -> bool:
    """Whether the plan only changes the cluster's shape (no distribution goals afterwards, so the
    data moved is just what the operation needs).

    Removing brokers onto named target brokers is such a change, as a hardware swap: their
    replicas land on the targets and nothing else moves (a rebalance over the targets and the
    rest would move replicas from the removed brokers onwards, off the brokers the user named).
    """
    op = options.operation
    return op.kind.shape_only or (op.kind.removes_brokers and bool(op.target_brokers))


def _evacuation(run: PlanRun) -> None:
    """Re-place what may not stay; a removed broker's replicas onto the ``targetBrokers`` when named.

    Those go first, as they have the fewest places to go: a dead broker's replica of the same
    partition (which may go anywhere in the group) placed first could take the one target whose
    rack kept the partition spread.
    """
    st = run.st
    parts, slots = bad_slots(st, ~st.active)
    run.evacuated = parts
    op = st.options.operation
    if op.kind.removes_brokers and op.target_brokers:
        removed = st.removed[st.rep[parts, slots]]
        evacuate(st, parts[removed], slots[removed], st.named_targets())
        parts, slots = parts[~removed], slots[~removed]
    evacuate(st, parts, slots)


def _places_log_dirs(run: PlanRun) -> bool:
    # demote-brokers moves no data: every replica stays in its directory.
    return run.st.dir_layout is not None and moves_data(run)


def _place_log_dirs(run: PlanRun) -> None:
    place_log_dirs(run.st, run.free, balance=balances(run))


def moves_data(run: PlanRun) -> bool:
    # demote-brokers moves no data: the totals that must fit are not its to change.
    return run.st.options.operation.kind.moves_data


def balances(run: PlanRun) -> bool:
    return not shape_only(run.st.options)


STAGES: Final = (
    Stage("operation", always, _operation),
    Stage("capacity precheck", moves_data, lambda run: precheck(run.st)),
    Stage("racks and groups of pinned partitions", moves_data, lambda run: repair_racks_and_groups(run.st, run.free)),
    Stage("evacuation", moves_data, _evacuation),
    Stage("leadership off excluded brokers", always, lambda run: fix_leadership(run.st)),
    Stage("leadership to preferred racks", prefers_racks, lead_from_preferred_racks),
    Stage(
        "capacity by leadership",
        lambda run: not moves_data(run),
        lambda run: repair_capacity_by_leadership(run.st, run.free),
    ),
    Stage(
        "capacity",
        moves_data,
        lambda run: repair_capacity(run.st, run.free, run.evacuated, fewest_bytes=shape_only(run.st.options)),
    ),
    Stage("distribution goals", balances, distribute, bounded=True),
    # Without the detours: on small clusters they made a round cost seconds (24 s of a 66-partition
    # plan), and of 5,774 random cases one plan changed without them. The count exchanges' pass
    # keeps them: two of the plans it mends need them (docs/performance.md).
    Stage("rebuilding rounds", balances, lambda run: rebuild_rounds(run.st, again(run, detours=False)), bounded=True),
    # Not bounded: once the search is cut short it is one turn of the replica-count goal, in the
    # budget's reserve (exchange_pass).
    Stage(
        "count exchanges",
        lambda run: balances(run) and exchanges_counts(run),
        lambda run: exchange_pass(run.st, again(run, detours=True)),
    ),
    # Again at the end: the distribution goals balance the leader-borne loads inside each leader
    # tier, which keeps most leaderships in their rack, but a leadership may still leave it where a
    # lower tier had room (or a replica move took the leader's rack away). A hard goal's stage.
    Stage("leadership back to preferred racks", prefers_racks, lead_from_preferred_racks),
    # JBOD: each replica's log directory, for the brokers' placement reached (a hard goal's stage).
    Stage("log directories", _places_log_dirs, _place_log_dirs),
)
