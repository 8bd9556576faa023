"""From a finished placement to a proposal: the reassignment, the leader changes, the summary and the id.

Also :func:`evaluate`, the same statistics for a placement without planning (metrics, imbalance
triggers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, BoolArray, ClusterModel
from kafka_balancer.model.log_dirs import snapshot_dirs
from kafka_balancer.model.plan import ANY_LOG_DIR, PartitionTarget, ReassignmentPlan
from kafka_balancer.model.proposal import LeaderChange, Proposal, content_id, model_fingerprint, planning_basis
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.log_dirs import carried_dirs, dir_limits
from kafka_balancer.planner.base.log_dirs import over_limit as dir_over_limit
from kafka_balancer.planner.base.measures import (
    balance_group_stats,
    balancedness,
    goal_violation,
    hard_goal_status,
    log_dir_bands,
    log_dir_bytes,
    misled_partitions,
    named_dirs,
    quantity_stats,
)
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State, arrived_replicas
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


def weighed_goals(st: State) -> tuple[str, ...]:
    """The distribution goals the statistics weigh: the directory goal only where the cluster has log
    directories (elsewhere it has nothing to weigh, and would only raise every balancedness)."""
    catalogue = st.catalogue
    return tuple(
        g for g in st.options.distribution_goals if catalogue.goal(g).kind != "directory" or st.dir_layout is not None
    )


def evaluate_state(st: State, original: Ints) -> Evaluation:
    """The statistics of the working placement (``original``: the placement before planning)."""
    violations = {g: goal_violation(st, g) for g in weighed_goals(st)}
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
    if st.dir_layout is not None:
        st.dirs = snapshot_dirs(st.dir_layout, model)
    return evaluate_state(st, model.replicas)


@dataclass(frozen=True)
class _Changes:
    """What a placement changes: the reassignment, the leader changes, the moves and their bytes (between
    brokers, and between a broker's log directories)."""

    plan: ReassignmentPlan
    leaders: tuple[LeaderChange, ...]
    moves: int
    bytes: float
    dir_moves: int = 0
    dir_bytes: float = 0.0


def _changes(model: ClusterModel, st: State) -> _Changes:
    rep = st.rep
    width = max(model.replicas.shape[1], rep.shape[1])
    orig = np.full((model.num_partitions, width), NO_BROKER, dtype=np.int32)
    orig[:, : model.replicas.shape[1]] = model.replicas
    final = np.full_like(orig, NO_BROKER)
    final[:, : rep.shape[1]] = rep
    named = _named_dirs(st, width)
    changed = np.flatnonzero((orig != final).any(axis=1) | named.any(axis=1))
    ids = model.broker_ids
    targets = []
    for p in changed.tolist():
        row = final[p]
        valid = row >= 0
        targets.append(
            PartitionTarget(
                model.topic_name(p),
                int(model.partition_id[p]),
                tuple(int(ids[b]) for b in row[valid]),
                _log_dirs(st, named[p], p) if named[p].any() else None,
            )
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
    arrived = arrived_replicas(final, orig)
    per_part = arrived[changed].sum(axis=1)
    moves = int(per_part.sum())
    bytes_to_move = float((model.copy_bytes[changed] * per_part).sum())
    between_dirs = (named & ~arrived).sum(axis=1)
    return _Changes(
        ReassignmentPlan.of(targets),
        leader_changes,
        moves,
        bytes_to_move,
        int(between_dirs.sum()),
        float((model.size_bytes * between_dirs).sum()),
    )


def _named_dirs(st: State, width: int) -> BoolArray:
    """(P, width) replica slots whose log directory the plan names: a replica a broker receives into a
    chosen directory, or one moving between its broker's directories."""
    out: BoolArray = np.zeros((st.model.num_partitions, width), dtype=np.bool_)
    out[:, : st.rep.shape[1]] = named_dirs(st)
    return out


def _log_dirs(st: State, named: BoolArray, p: int) -> tuple[str, ...]:
    """One entry per replica: the named directory's path, ``any`` for the replicas that stay where they are."""
    assert st.dir_layout is not None
    assert st.dirs is not None
    paths = st.dir_layout.paths
    row = st.rep[p]
    return tuple(
        paths[int(st.dirs[p, k])] if named[k] else ANY_LOG_DIR for k in range(row.shape[0]) if row[k] != NO_BROKER
    )


def build_proposal(
    model: ClusterModel,
    options: PlannerOptions,
    before: State,
    st: State,
    cut_short: str | None = None,
    *,
    worsened_by_hard_goals: tuple[str, ...] = (),
) -> Proposal:
    """The proposal taking the placement of ``before`` to that of ``st`` (summary and id included);
    ``cut_short``: the stage the time budget (``options.max_planning_seconds``) cut short, if any;
    ``worsened_by_hard_goals``: the distribution goals that end worse than they started although
    guarded from the start (the hard goals' stages left them so)."""
    layout = before.dir_layout
    if layout is not None:
        before.dirs = snapshot_dirs(layout, model)
        if st.dirs is None:  # no stage placed them (demote-brokers): every replica stays where it is
            st.dirs = carried_dirs(layout, model, st.rep)
    changes = _changes(model, st)
    basis = planning_basis(model_fingerprint(model), options.to_dict())
    pid = content_id(basis, changes.plan, changes.leaders)
    ev_before = evaluate_state(before, model.replicas)
    ev_after = evaluate_state(st, model.replicas)
    weighed = weighed_goals(st)
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
        "goalsViolated": [g for g in (*options.hard_goals, *weighed) if g not in ev_after.goals_holding],
        "goals": {g: _goal_summary(ev_before, ev_after, g, options) for g in weighed},
        "hardGoals": ev_after.hard_goals,
        "groups": {
            name: {"brokers": stats["brokers"], "before": ev_before.groups.get(name, {}), "after": stats}
            for name, stats in ev_after.groups.items()
        },
    }
    if cut_short is not None:
        summary["timeBudgetReached"] = {"seconds": options.max_planning_seconds, "stage": cut_short}
    if worsened_by_hard_goals:
        summary["goalsWorsenedByHardGoals"] = list(worsened_by_hard_goals)
    if options.prefers_leader_racks:
        summary["preferredLeaderRacks"] = _leader_racks_summary(ev_before, ev_after, options)
    if layout is not None:
        summary["logDirs"] = log_dirs_summary(before, st, changes.dir_moves, changes.dir_bytes)
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


def log_dirs_summary(before: State, after: State, moves: int, moved_bytes: float) -> dict[str, Any]:
    """The log directories before and after: how far each broker's directories are from their targets
    (its own average, log-dir-distribution) and how many are above their limit (log-dir-capacity)."""
    layout = after.dir_layout
    assert layout is not None
    out: dict[str, Any] = {
        "directories": layout.count,
        "cordoned": int(layout.cordoned.sum()),
        "removed": [layout.name(int(d), after.model.broker_ids) for d in np.flatnonzero(layout.removed)],
        "movesBetweenDirs": moves,
        "bytesBetweenDirs": moved_bytes,
    }
    limits = dir_limits(layout, after.options.capacity_threshold)
    for name, st in (("before", before), ("after", after)):
        held = log_dir_bytes(st)
        assert held is not None
        bands = log_dir_bands(st, held)
        weighed = bands.weighed & (bands.target > 0)
        ratio = held[weighed] / bands.target[weighed]
        outside = bands.outside(held)
        out[name] = {
            "maxOverTarget": float(ratio.max()) if ratio.size else 1.0,
            "minOverTarget": float(ratio.min()) if ratio.size else 1.0,
            "outOfBand": int((outside & weighed).sum()),
            "overLimit": int(dir_over_limit(held, limits).sum()),
        }
    return out
