"""The planner's entry points: ``plan`` (model + options -> Proposal) and ``evaluate`` (statistics only).

Order of work: the operation's shape change, hard goals (evacuate, racks, leadership, capacity),
then each distribution goal in priority order, then the per-topic goals. Every step after the
hard goals accepts a move only if no goal gets worse on the brokers it touches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel
from kafka_balancer.model.plan import PartitionTarget, ReassignmentPlan
from kafka_balancer.model.proposal import LeaderChange, Proposal, content_id, model_fingerprint, planning_basis
from kafka_balancer.planner.balance import LEADER_FIRST, balance_goal
from kafka_balancer.planner.detours import repair_topic_slots
from kafka_balancer.planner.goals import (
    GOAL_QUANTITY,
    TOPIC_GOALS,
    balancedness,
    ended_worse,
    goal_violation,
    hard_goal_status,
    quantity_stats,
)
from kafka_balancer.planner.hard import bad_slots, evacuate, fix_leadership, precheck
from kafka_balancer.planner.operations import change_replication_factor, move_topics
from kafka_balancer.planner.options import PlannerOptions, PlanningError
from kafka_balancer.planner.pinned import repair_capacity, repair_capacity_by_leadership, repair_racks_and_groups
from kafka_balancer.planner.rebuild import exchange_pass, rebuild_rounds
from kafka_balancer.planner.revert import revert_moves
from kafka_balancer.planner.select import compute_bands
from kafka_balancer.planner.state import QUANTITY_NAMES, Ints, State, arrived_replicas, resolve_groups
from kafka_balancer.planner.substitute import substitute_moves
from kafka_balancer.planner.tighten import leaders_off_average, tighten_leaders
from kafka_balancer.planner.topic_chains import leader_chains
from kafka_balancer.planner.topics import balance_topic_goal

# Operations that only change the cluster's shape: no distribution rounds afterwards, so the
# data moved is just what the operation needs.
SHAPE_ONLY = frozenset({"demote-brokers", "fix-offline-replicas", "change-replication-factor", "move-topics"})
# Hard goals only data moves can mend (leaders carry no more disk, replicas or bytes in than followers).
DATA_BOUND_GOALS = (
    "rack-awareness",
    "resource-group-confinement",
    "replica-capacity",
    "disk-capacity",
    "network-in-capacity",
)
# The per-topic replica goal also runs once right after this goal (see _run).
TOPIC_SPREAD_EARLY_AFTER = "disk-distribution"
# Rounds of that early pass (and of the repeat at the end): gains fall off fast (measured at 1.3M
# replicas: half the distance in the first 10 rounds, under 1% per round after that).
TOPIC_SPREAD_EARLY_ROUNDS = 12
# Share of the leader chains' per-call caps for the last call, after the leader counts are finished
# (the caps only bind on very large clusters: 2.8M replicas, 65 s for the full caps).
FINAL_CHAINS_SHARE = 0.05
# And for the chains of the per-topic repeat (2.8M replicas: 21 s for 471 slots with the full caps).
REPEAT_CHAINS_SHARE = 0.3


@dataclass(frozen=True)
class Evaluation:
    """Balance statistics of one placement: per group and quantity, per goal, and the score."""

    groups: dict[str, dict[str, Any]]
    goals: dict[str, dict[str, Any]]
    balancedness: float
    hard_goals: dict[str, bool] = field(default_factory=dict)

    def max_over_avg(self, resource: str, group: str | None = None) -> float:
        """Largest max/avg ratio of ``resource`` (replicas|leaders|disk|network-in|network-out|cpu) over groups."""
        if resource not in QUANTITY_NAMES:
            raise ValueError(f"resource must be one of {', '.join(QUANTITY_NAMES)}, got {resource!r}")
        values = [g[resource]["maxOverAvg"] for name, g in self.groups.items() if group in (None, name)]
        return max(values, default=1.0)

    @property
    def goals_holding(self) -> list[str]:
        return [g for g, s in self.goals.items() if s["holds"]] + [g for g, ok in self.hard_goals.items() if ok]

    def to_dict(self) -> dict[str, Any]:
        return {
            "groups": self.groups,
            "goals": self.goals,
            "hardGoals": self.hard_goals,
            "balancedness": self.balancedness,
        }


def _evaluate_state(st: State, original: Ints) -> Evaluation:
    violations = {g: goal_violation(st, g) for g in st.options.distribution_goals}
    goals = {g: {"holds": v <= 1e-9, "violation": round(v, 6)} for g, v in violations.items()}
    return Evaluation(quantity_stats(st), goals, balancedness(st, violations), hard_goal_status(st, original))


def evaluate(model: ClusterModel, options: PlannerOptions | None = None) -> Evaluation:
    """Statistics of the current placement without planning (for metrics and imbalance triggers).

    Leaders are counted where the preferred leader (first replica) is, as after an election.
    """
    options = options or PlannerOptions()
    st = State(model, options, resolve_groups(model, options))
    return _evaluate_state(st, model.replicas)


def plan(model: ClusterModel, options: PlannerOptions | None = None) -> Proposal:
    """Compute the proposal for ``model`` under ``options``; raises PlanningError on an unmet hard goal.

    Each distribution goal is optimized under the guard of the goals before it (a later goal never
    undoes an earlier one) and may temporarily worsen the goals after it, which then repair
    themselves in their turn. When a goal still ends worse than it started, the plan is recomputed
    with that goal guarded from the start, so applying a plan never makes a statistic worse.
    """
    options = options or PlannerOptions()
    before = State(model, options, resolve_groups(model, options))
    comparable = options.operation.type in {"rebalance", "add-brokers"} and not _holds_inactive(before)
    start = {g: goal_violation(before, g) for g in options.distribution_goals} if comparable else {}
    strict: frozenset[str] = frozenset()
    while True:
        st = _run(model, options, strict)
        worse = {g for g, v in start.items() if ended_worse(v, goal_violation(st, g))}
        if not worse - strict:
            break
        strict |= worse
    _final_checks(st, model.replicas, before.movable)
    return build_proposal(model, options, before, st)


def _holds_inactive(st: State) -> bool:
    """Whether replicas sit on dead or removed brokers (then group averages change as they leave)."""
    return bool(((st.rep != NO_BROKER) & ~st.active[np.maximum(st.rep, 0)]).any())


def goal_order(options: PlannerOptions) -> list[str]:
    """The order distribution goals are optimized in: broker-level goals by priority, then per-topic goals."""
    goals = options.distribution_goals
    return [g for g in goals if g in GOAL_QUANTITY] + [g for g in TOPIC_GOALS if g in goals]


def _run(model: ClusterModel, options: PlannerOptions, strict: frozenset[str]) -> State:
    st = State(model, options, resolve_groups(model, options))
    free = st.movable  # before the operation pins partitions
    _check_operation(st)
    _apply_operation(st)
    op = options.operation.type
    if op != "demote-brokers":  # it moves no data: the totals that must fit are not its to change
        precheck(st)
        repair_racks_and_groups(st, free)
        parts, slots = bad_slots(st, ~st.active)
        _evacuate_onto_targets(st, parts, slots)
    fix_leadership(st)
    if op == "demote-brokers":
        repair_capacity_by_leadership(st, free)
    else:
        repair_capacity(st, free, parts, fewest_bytes=_shape_only(options))
    if not _shape_only(options):
        _distribute(st, strict)
        # Without the detours (step 9): on small clusters they made a round cost seconds (24 s of a
        # 66-partition plan), and of 5,774 random cases one plan changed without them. The count
        # exchanges' pass keeps them: two of the plans it mends need them (docs/performance.md).
        rebuild_rounds(st, lambda again: _distribute(again, strict, detours=False))
        exchange_pass(st, lambda again: _distribute(again, strict))
    st.guarded = frozenset(options.distribution_goals)
    return st


def _distribute(st: State, strict: frozenset[str], *, detours: bool = True) -> None:
    """Every distribution goal in turn, then the finishing passes (docs/goals.md, steps 4-11; the
    detours of step 9 only with ``detours``)."""
    options = st.options
    done: list[str] = []
    topic_spread = "topic-replica-distribution" in options.distribution_goals
    for goal in goal_order(options):
        done.append(goal)
        st.guarded = frozenset(done) | strict
        if goal in GOAL_QUANTITY:
            balance_goal(st, goal)
            if goal == TOPIC_SPREAD_EARLY_AFTER and topic_spread:
                # While the brokers still have slack in the later goals' bands, one-way moves can
                # even out the topics; at the end only exchanges (twice the bytes) could.
                balance_topic_goal(st, "topic-replica-distribution", rounds=TOPIC_SPREAD_EARLY_ROUNDS)
        else:
            # Last: exchanges may now use partitions of any size, for what is still out of band.
            balance_topic_goal(st, goal, size_cap=1.0)
    # Leadership moves of the last goal free some replica moves of the one before: once more,
    # briefly (it finishes a few slots; at millions of replicas more rounds would not pay).
    st.guarded = frozenset(options.distribution_goals) | strict
    for goal in TOPIC_GOALS:
        if goal in options.distribution_goals:
            balance_topic_goal(
                st, goal, size_cap=1.0, rounds=TOPIC_SPREAD_EARLY_ROUNDS, chains_share=REPEAT_CHAINS_SHARE
            )
    revert_moves(st)
    substitute_moves(st)
    tighten_leaders(st)
    if "topic-leader-distribution" in options.distribution_goals:
        # The traffic and leader counts changed since the topic-leader goal's turn: its chains
        # (no data moves) may now find a way for what it left out of band. Briefly: at millions
        # of replicas a full call would take a minute.
        leader_chains(st, compute_bands(st), share=FINAL_CHAINS_SHARE)
    if detours:
        repair_topic_slots(st)
    # Shortcuts (docs/goals.md, step 10): a replica that arrived on a broker takes the place of
    # one that left it, one move fewer each. After the detours: run before them, it left them
    # fewer ways out (a mixed-rf seed kept a topic slot out of band).
    substitute_moves(st, arrived=True)
    # Stand-ins from afar, last: run before the detours, they left a mixed-rf seed a topic slot out of band.
    substitute_moves(st, far=True)
    _finish_by_leadership(st, strict)


def _finish_by_leadership(st: State, strict: frozenset[str]) -> None:
    """Leadership moves and trades (no data moves) for the leader-borne goals still out of band.

    Such a goal can end its own turn short (its brokers' other loads at their edges then) and the
    passes after it only keep it from getting worse; the moves they made since may have opened a
    way. Every goal is guarded, so nothing that holds breaks.
    """
    st.guarded = frozenset(st.options.distribution_goals) | strict
    short = [
        g
        for g in goal_order(st.options)
        if g in GOAL_QUANTITY and GOAL_QUANTITY[g] in LEADER_FIRST and goal_violation(st, g) > 1e-9
    ]
    for goal in short:
        balance_goal(st, goal, leadership_only=True)
    if leaders_off_average(st):
        # The passes since the leader counts were finished (topic-leader chains, detours) and the
        # moves above may have moved some off the rounded average.
        tighten_leaders(st)


def _check_operation(st: State) -> None:
    op = st.options.operation
    for b in op.brokers:
        st.index_of(b, "operation.brokers")
    for b in op.target_brokers:
        st.index_of(b, "operation.targetBrokers")
    if op.type == "add-brokers":
        for b in op.brokers:
            i = st.index_of(b, "operation.brokers")
            if not st.model.broker_alive[i]:
                raise PlanningError("invalid-options", f"field 'operation.brokers' names broker {b}, which is down")


def _apply_operation(st: State) -> None:
    op = st.options.operation
    if op.type == "change-replication-factor" and op.replication_factor is not None:
        change_replication_factor(st, op.topics, op.replication_factor)
    elif op.type == "move-topics":
        target_group = None
        if op.target_group is not None:
            target_group = st.groups.names.index(op.target_group)
            targets = st.groups.broker == target_group
        else:
            targets = st.named_targets()
        move_topics(st, op.topics, targets & st.active, target_group)
        if op.target_group is None:
            # Named brokers: the topics stay on them (the capacity repair may settle them on another
            # named broker, and moves others to make room).
            st.movable = np.zeros_like(st.movable)
    elif _shape_only(st.options):
        st.movable = np.zeros_like(st.movable)


def _shape_only(options: PlannerOptions) -> bool:
    """Whether the plan only changes the cluster's shape (no distribution goals afterwards).

    Removing brokers onto named target brokers is such a change, as a hardware swap: their
    replicas land on the targets and nothing else moves (a rebalance over the targets and the
    rest would move replicas from the removed brokers onwards, off the brokers the user named).
    """
    op = options.operation
    return op.type in SHAPE_ONLY or (op.type == "remove-brokers" and bool(op.target_brokers))


def _evacuate_onto_targets(st: State, parts: Ints, slots: Ints) -> None:
    """Re-place what may not stay; a removed broker's replicas onto the ``targetBrokers`` when named.

    Those go first, as they have the fewest places to go: a dead broker's replica of the same
    partition (which may go anywhere in the group) placed first could take the one target whose
    rack kept the partition spread.
    """
    op = st.options.operation
    if op.type == "remove-brokers" and op.target_brokers:
        removed = st.removed[st.rep[parts, slots]]
        evacuate(st, parts[removed], slots[removed], st.named_targets())
        parts, slots = parts[~removed], slots[~removed]
    evacuate(st, parts, slots)


def _final_checks(st: State, original: Ints, scope: BoolArray) -> None:
    """Every hard goal the plan is responsible for holds (``scope``: the partitions it may move)."""
    status = hard_goal_status(st, original, scope)
    if st.options.operation.type == "demote-brokers":
        # Demotion moves no data, so it cannot fix racks, groups, or loads leadership does not carry.
        for goal in DATA_BOUND_GOALS:
            status.pop(goal, None)
    failed = [g for g, ok in status.items() if not ok]
    if failed:
        raise PlanningError(failed[0], f"the plan would still break hard goal {failed[0]}; see docs/goals.md")
    offline = (st.rep != NO_BROKER) & ~st.active[np.maximum(st.rep, 0)]
    if st.options.operation.type != "demote-brokers" and offline.any():
        p = int(np.flatnonzero(offline.any(axis=1))[0])
        raise PlanningError("excluded-brokers", f"partition {st.model.topic_name(p)} still has a replica offline")


def build_proposal(model: ClusterModel, options: PlannerOptions, before: State, st: State) -> Proposal:
    width = max(model.replicas.shape[1], st.rep.shape[1])
    orig = np.full((model.num_partitions, width), NO_BROKER, dtype=np.int32)
    orig[:, : model.replicas.shape[1]] = model.replicas
    final = np.full_like(orig, NO_BROKER)
    final[:, : st.rep.shape[1]] = st.rep
    changed = np.flatnonzero((orig != final).any(axis=1))
    ids = model.broker_ids
    targets = []
    for p in changed.tolist():
        row = final[p]
        targets.append(
            PartitionTarget(model.topic_name(p), int(model.partition_id[p]), tuple(int(ids[b]) for b in row[row >= 0]))
        )
    reassignment = ReassignmentPlan.of(targets)
    new_leader = final[:, 0]
    lead_changed = np.flatnonzero((new_leader != model.leader) & (new_leader != NO_BROKER))
    leader_changes = tuple(
        LeaderChange(
            model.topic_name(p),
            int(model.partition_id[p]),
            None if model.leader[p] == NO_BROKER else int(ids[model.leader[p]]),
            int(ids[new_leader[p]]),
        )
        for p in lead_changed.tolist()
    )
    fo, ff = orig[changed], final[changed]
    per_part = arrived_replicas(ff, fo).sum(axis=1)
    moves = int(per_part.sum())
    bytes_to_move = float((model.size_bytes[changed] * per_part).sum())
    opts = options.to_dict()
    basis = planning_basis(model_fingerprint(model), opts)
    pid = content_id(basis, reassignment, leader_changes)
    ev_before = _evaluate_state(before, model.replicas)
    ev_after = _evaluate_state(st, model.replicas)
    summary = {
        "proposalId": pid,
        "operation": options.operation.type,
        "moves": moves,
        "partitionsMoved": len(targets),
        "bytesToMove": bytes_to_move,
        "leaderChanges": len(leader_changes),
        "balancednessBefore": ev_before.balancedness,
        "balancednessAfter": ev_after.balancedness,
        "goalsHolding": ev_after.goals_holding,
        "goalsViolated": [
            g for g in (*options.hard_goals, *options.distribution_goals) if g not in ev_after.goals_holding
        ],
        "goals": {
            g: {
                "holdsBefore": ev_before.goals[g]["holds"],
                "holdsAfter": ev_after.goals[g]["holds"],
                "violationBefore": ev_before.goals[g]["violation"],
                "violationAfter": ev_after.goals[g]["violation"],
                "before": _goal_stats(ev_before, g),
                "after": _goal_stats(ev_after, g),
            }
            for g in options.distribution_goals
        },
        "hardGoals": ev_after.hard_goals,
        "groups": {
            name: {"brokers": stats["brokers"], "before": ev_before.groups.get(name, {}), "after": stats}
            for name, stats in ev_after.groups.items()
        },
    }
    return Proposal(pid, reassignment, leader_changes, summary, basis)


def _goal_stats(ev: Evaluation, goal: str) -> dict[str, Any]:
    if goal not in GOAL_QUANTITY:
        return {"violation": ev.goals[goal]["violation"]}
    name = QUANTITY_NAMES[GOAL_QUANTITY[goal]]
    return {group: stats[name] for group, stats in ev.groups.items()}
