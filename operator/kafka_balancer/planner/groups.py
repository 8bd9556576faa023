"""Plan resource groups independently (e.g. in parallel inside Spark) and merge the results.

Groups never share brokers or partitions, so a group's plan only depends on its own partitions:
``split`` gives each group's sub-model (every broker, only that group's partitions) and options
limited to that group; ``plan_group`` plans one of them; ``merge`` applies every group's targets to
the whole model and builds the one proposal (summary and id over the whole cluster).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kafka_balancer.model.cluster import NO_BROKER, ClusterModel
from kafka_balancer.model.plan import PartitionTarget
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.base.resource_groups import resolve_groups
from kafka_balancer.planner.base.state import State
from kafka_balancer.planner.log_dirs.placement import place_log_dirs
from kafka_balancer.planner.options import PlannerOptions, PlanningError
from kafka_balancer.planner.pipeline import plan
from kafka_balancer.planner.pipeline.stages import shape_only
from kafka_balancer.planner.proposal import build_proposal


@dataclass(frozen=True)
class GroupJob:
    """One group's planning input: the group name, its sub-model and its options."""

    name: str
    model: ClusterModel
    options: PlannerOptions


def subset(model: ClusterModel, parts: Ints) -> ClusterModel:
    """The model with every broker and topic but only the given partitions."""
    return dataclasses.replace(
        model,
        partition_topic=model.partition_topic[parts],
        partition_id=model.partition_id[parts],
        replicas=model.replicas[parts],
        isr_mask=model.isr_mask[parts],
        leader=model.leader[parts],
        size_bytes=model.size_bytes[parts],
        bytes_in=model.bytes_in[parts],
        bytes_out=model.bytes_out[parts],
        messages_in=model.messages_in[parts],
        cpu_leader=model.cpu_leader[parts],
        elr_mask=None if model.elr_mask is None else model.elr_mask[parts],
        replica_dir=None if model.replica_dir is None else model.replica_dir[parts],
        remote_bytes=None if model.remote_bytes is None else model.remote_bytes[parts],
        untiered_bytes=None if model.untiered_bytes is None else model.untiered_bytes[parts],
        _index=None,
    )


def split(model: ClusterModel, options: PlannerOptions) -> list[GroupJob]:
    """One job per resource group that has brokers and partitions (a rebalance only)."""
    if not options.operation.kind.per_group:
        raise PlanningError("invalid-options", f"operation {options.operation.type} is planned whole, not per group")
    groups = resolve_groups(model, options)
    jobs = []
    for g, name in enumerate(groups.names):
        parts = np.flatnonzero(groups.partition == g)
        if parts.size == 0 or not groups.balanced[g]:
            continue
        group_options = dataclasses.replace(options, groups_to_balance=(name,)) if options.resource_groups else options
        jobs.append(GroupJob(name, subset(model, parts), group_options))
    return jobs


@dataclass(frozen=True)
class GroupPlan:
    """One group's plan: its partitions whose replicas or order change, the stage its time budget
    cut short (None: it ran to the end) and the goals its hard goals' stages left worse."""

    targets: list[PartitionTarget]
    cut_short: str | None
    worsened_by_hard_goals: tuple[str, ...] = ()


def plan_group(job: GroupJob) -> GroupPlan:
    """Plan one group (with the whole time budget: the groups are planned side by side)."""
    proposal = plan(job.model, job.options)
    reached = proposal.summary.get("timeBudgetReached")
    return GroupPlan(
        list(proposal.plan.partitions),
        None if reached is None else str(reached["stage"]),
        tuple(proposal.summary.get("goalsWorsenedByHardGoals", ())),
    )


def merge(
    model: ClusterModel,
    options: PlannerOptions,
    targets: Iterable[PartitionTarget],
    cut_short: Mapping[str, str] | None = None,
    worsened: Mapping[str, Sequence[str]] | None = None,
) -> Proposal:
    """The whole-cluster proposal from every group's targets (``cut_short``: group -> the stage its
    time budget cut short; ``worsened``: group -> the goals its hard goals' stages left worse, named
    in the summary as one list in goal order)."""
    groups = resolve_groups(model, options)
    after = State(model, options, groups)
    rows: list[list[int]] = []
    parts: list[int] = []
    for target in targets:
        parts.append(model.partition_index(target.topic, target.partition))
        rows.append([model.broker_index(b) for b in target.replicas])
    width = max([after.rep.shape[1], *(len(r) for r in rows)])
    rep = np.full((model.num_partitions, width), NO_BROKER, dtype=np.int32)
    rep[:, : after.rep.shape[1]] = after.rep
    for p, row in zip(parts, rows, strict=True):
        rep[p] = NO_BROKER
        rep[p, : len(row)] = row
    after.rep = rep
    after.refresh_loads()
    # The groups' plans each placed their replicas in directories; placed again over the whole cluster
    # (a group's brokers are its own, so this gives each broker what its group's plan gave it).
    place_log_dirs(after, after.scope.movable, balance=not shape_only(options))
    before = State(model, options, resolve_groups(model, options))
    cut = "; ".join(f"group '{name}': {stage}" for name, stage in sorted((cut_short or {}).items()))
    forced = {goal for goals in (worsened or {}).values() for goal in goals}
    ordered = tuple(g for g in options.distribution_goals if g in forced)
    return build_proposal(model, options, before, after, cut or None, worsened_by_hard_goals=ordered)
