"""From the CRD spec models (model/policy.py) to :class:`PlannerOptions`. Pure conversion.

Resource groups select brokers by id or by rack; racks are resolved against the cluster model
here, so the planner only ever sees broker ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_balancer.model.cluster import ClusterModel
from kafka_balancer.model.policy.balance_policy import BalancePolicySpec
from kafka_balancer.model.policy.groups import check_groups, group_brokers
from kafka_balancer.model.policy.operations import REBALANCE, operation_kind
from kafka_balancer.model.policy.resource_group import ResourceGroupSpec
from kafka_balancer.planner.options import GroupOptions, OperationOptions, PlannerOptions, PlanningError


def options_from_policy(
    spec: BalancePolicySpec,
    groups: Sequence[tuple[str, ResourceGroupSpec]] = (),
    model: ClusterModel | None = None,
) -> PlannerOptions:
    """Options for a BalancePolicy spec and the ResourceGroups it names (name, spec).

    ``model`` resolves rack selectors and checks that no broker or topic is in two groups; a
    group named in ``spec.resourceGroups`` but missing from ``groups`` is an error.
    """
    by_name = dict(groups)
    missing = [g for g in spec.resource_groups if g not in by_name]
    if missing:
        raise PlanningError(
            "invalid-options", f"field 'spec.resourceGroups' names ResourceGroup '{missing[0]}', which was not given"
        )
    chosen = [(name, by_name[name]) for name in spec.resource_groups]
    racks: dict[int, str | None] = {}
    if model is not None:
        racks = {int(b): r for b, r in zip(model.broker_ids.tolist(), model.broker_racks, strict=True)}
        check_groups(chosen, topics=model.topics, racks=racks)
    group_options = tuple(
        GroupOptions(
            name=name,
            broker_ids=tuple(group_brokers(group, racks)),
            topic_names=tuple(group.topics.names),
            topic_patterns=tuple(group.topics.patterns),
            preferred_leader_racks=tuple(group.preferred_leader_racks),
        )
        for name, group in chosen
    )
    goals = spec.goals
    op = spec.operation
    kind = operation_kind(op.type)
    operation = OperationOptions(
        type=op.type,
        brokers=tuple(op.brokers),
        topics=tuple(op.topics) if "topics" in kind.required else (),
        replication_factor=op.replication_factor,
        target_brokers=tuple(op.target_brokers),
        target_group=op.target_group,
        log_dirs=tuple((d.broker, d.path) for d in op.log_dirs) if "log_dirs" in kind.required else (),
    )
    return PlannerOptions(
        hard_goals=tuple(goals.hard),
        distribution_goals=tuple(goals.distribution),
        balance_threshold=goals.balance_threshold,
        capacity_threshold=goals.capacity_threshold,
        max_replicas_per_broker=goals.max_replicas_per_broker,
        excluded_brokers_for_replicas=tuple(goals.excluded_brokers_for_replicas),
        excluded_brokers_for_leadership=tuple(goals.excluded_brokers_for_leadership),
        max_planning_seconds=goals.max_planning_seconds,
        preferred_leader_racks=tuple(goals.preferred_leader_racks),
        resource_groups=group_options,
        operation=operation,
        # A rebalance limited to some topics names them in operation.topics.
        topics=tuple(op.topics) if kind is REBALANCE else (),
    )
