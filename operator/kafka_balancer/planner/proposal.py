"""From a finished placement to a proposal: the reassignment, the leader changes, the summary and the id.

Also :func:`evaluate`, the same statistics for a placement without planning (metrics, imbalance
triggers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, ClusterModel
from kafka_balancer.model.plan import PartitionTarget, ReassignmentPlan
from kafka_balancer.model.proposal import LeaderChange, Proposal, content_id, model_fingerprint, planning_basis
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.measures import (
    balance_group_stats,
    balancedness,
    goal_violation,
    hard_goal_status,
    misled_partitions,
    quantity_stats,
)
from kafka_balancer.planner.base.state import State, arrived_replicas, resolve_groups
from kafka_balancer.planner.catalogue import CATALOGUE
from kafka_balancer.planner.options import PlannerOptions


@dataclass(frozen=True)
class Evaluation:
    """Balance statistics of one placement: per group and quantity, per goal, and the score."""

    groups: dict[str, dict[str, Any]]
    goals: dict[str, dict[str, Any]]
    balancedness: float
    hard_goals: dict[str, bool] = field(default_factory=dict)
    quantities: tuple[str, ...] = CATALOGUE.quantity_names
    # With preferred leader racks: per quantity leadership carries, its spread per group and leader
    # tier (``group/tier``), which is what its goal balances; and the partitions not led from their rack.
    tiered: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    misled: int = 0

    def max_over_avg(self, resource: str, group: str | None = None) -> float:
        """Largest max/avg ratio of ``resource`` (replicas|leaders|disk|network-in|network-out|cpu) over groups."""
        if resource not in self.quantities:
            raise ValueError(f"resource must be one of {', '.join(self.quantities)}, got {resource!r}")
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


def evaluate_state(st: State, original: Ints) -> Evaluation:
    """The statistics of the working placement (``original``: the placement before planning)."""
    violations = {g: goal_violation(st, g) for g in st.options.distribution_goals}
    goals = {g: {"holds": v <= 1e-9, "violation": round(v, 6)} for g, v in violations.items()}
    hard = hard_goal_status(st, original)
    tiered: dict[str, dict[str, dict[str, Any]]] = {}
    if st.tiers is not None:
        tiered = {st.catalogue.quantity_names[q]: balance_group_stats(st, q) for q in st.catalogue.leading}
    return Evaluation(
        quantity_stats(st),
        goals,
        balancedness(st, violations),
        hard,
        st.catalogue.quantity_names,
        tiered,
        int(misled_partitions(st).sum()),
    )


def evaluate(model: ClusterModel, options: PlannerOptions | None = None) -> Evaluation:
    """Statistics of the current placement without planning (for metrics and imbalance triggers).

    Leaders are counted where the preferred leader (first replica) is, as after an election.
    """
    options = options or PlannerOptions()
    st = State(model, options, resolve_groups(model, options))
    return evaluate_state(st, model.replicas)


@dataclass(frozen=True)
class _Changes:
    """What a placement changes: the reassignment, the leader changes, the moves and their bytes."""

    plan: ReassignmentPlan
    leaders: tuple[LeaderChange, ...]
    moves: int
    bytes: float


def _changes(model: ClusterModel, rep: Ints) -> _Changes:
    width = max(model.replicas.shape[1], rep.shape[1])
    orig = np.full((model.num_partitions, width), NO_BROKER, dtype=np.int32)
    orig[:, : model.replicas.shape[1]] = model.replicas
    final = np.full_like(orig, NO_BROKER)
    final[:, : rep.shape[1]] = rep
    changed = np.flatnonzero((orig != final).any(axis=1))
    ids = model.broker_ids
    targets = []
    for p in changed.tolist():
        row = final[p]
        targets.append(
            PartitionTarget(model.topic_name(p), int(model.partition_id[p]), tuple(int(ids[b]) for b in row[row >= 0]))
        )
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
    per_part = arrived_replicas(final[changed], orig[changed]).sum(axis=1)
    moves = int(per_part.sum())
    bytes_to_move = float((model.size_bytes[changed] * per_part).sum())
    return _Changes(ReassignmentPlan.of(targets), leader_changes, moves, bytes_to_move)


def build_proposal(
    model: ClusterModel, options: PlannerOptions, before: State, st: State, cut_short: str | None = None
) -> Proposal:
    """The proposal taking the placement of ``before`` to that of ``st`` (summary and id included);
    ``cut_short``: the stage the time budget (``options.max_planning_seconds``) cut short, if any."""
    changes = _changes(model, st.rep)
    basis = planning_basis(model_fingerprint(model), options.to_dict())
    pid = content_id(basis, changes.plan, changes.leaders)
    ev_before = evaluate_state(before, model.replicas)
    ev_after = evaluate_state(st, model.replicas)
    summary = {
        "proposalId": pid,
        "operation": options.operation.type,
        "moves": changes.moves,
        "partitionsMoved": len(changes.plan.partitions),
        "bytesToMove": changes.bytes,
        "leaderChanges": len(changes.leaders),
        "balancednessBefore": ev_before.balancedness,
        "balancednessAfter": ev_after.balancedness,
        "goalsHolding": ev_after.goals_holding,
        "goalsViolated": [
            g for g in (*options.hard_goals, *options.distribution_goals) if g not in ev_after.goals_holding
        ],
        "goals": {g: _goal_summary(ev_before, ev_after, g, options) for g in options.distribution_goals},
        "hardGoals": ev_after.hard_goals,
        "groups": {
            name: {"brokers": stats["brokers"], "before": ev_before.groups.get(name, {}), "after": stats}
            for name, stats in ev_after.groups.items()
        },
    }
    if cut_short is not None:
        summary["timeBudgetReached"] = {"seconds": options.max_planning_seconds, "stage": cut_short}
    if options.prefers_leader_racks:
        summary["preferredLeaderRacks"] = _leader_racks_summary(ev_before, ev_after, options)
    return Proposal(pid, changes.plan, changes.leaders, summary, basis)


def _goal_summary(before: Evaluation, after: Evaluation, goal: str, options: PlannerOptions) -> dict[str, Any]:
    return {
        "holdsBefore": before.goals[goal]["holds"],
        "holdsAfter": after.goals[goal]["holds"],
        "violationBefore": before.goals[goal]["violation"],
        "violationAfter": after.goals[goal]["violation"],
        "before": _goal_stats(before, goal, options),
        "after": _goal_stats(after, goal, options),
    }


def _goal_stats(ev: Evaluation, goal: str, options: PlannerOptions) -> dict[str, Any]:
    q = options.catalogue.balances(goal)
    if q is None:
        return {"violation": ev.goals[goal]["violation"]}
    name = options.catalogue.quantity_names[q]
    if name in ev.tiered:
        return ev.tiered[name]
    return {group: stats[name] for group, stats in ev.groups.items()}


def _leader_racks_summary(before: Evaluation, after: Evaluation, options: PlannerOptions) -> dict[str, Any]:
    """The preferred-leader-racks goal before and after: the partitions led from outside their preferred
    rack, and the spread of each quantity leadership carries per group and leader tier. ``racks`` is
    the policy's list; ``groupRacks`` the groups' own lists, where a group has one."""
    own = {g.name: list(options.leader_racks_of(g)) for g in options.resource_groups if options.leader_racks_of(g)}
    return {
        "racks": list(options.leader_racks),
        **({"groupRacks": own} if own else {}),
        "misledBefore": before.misled,
        "misledAfter": after.misled,
        "before": before.tiered,
        "after": after.tiered,
    }
