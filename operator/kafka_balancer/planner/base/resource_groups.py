"""Resource groups resolved to indices: each broker's, topic's and partition's group, and which
groups a plan balances."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from kafka_balancer.model.cluster import BoolArray, ClusterModel
from kafka_balancer.planner.base.arrays import Ints
from kafka_balancer.planner.options import PlannerOptions

UNGROUPED: Final = "(ungrouped)"
WHOLE_CLUSTER: Final = "cluster"


@dataclass
class Groups:
    """Resource groups resolved to indices: ``broker[b]`` and ``partition[p]`` are group indices."""

    names: list[str]
    broker: Ints
    partition: Ints
    topic: Ints
    # Groups the options balance (groupsToBalance) and that have brokers at all; a stage may balance
    # fewer (Scope.groups).
    balanced: BoolArray
    # Groups with at least one broker (a group without brokers confines nothing: topics in no group
    # while every broker is in one).
    has_brokers: BoolArray


def resolve_groups(model: ClusterModel, options: PlannerOptions) -> Groups:
    nb, nt = model.num_brokers, len(model.topics)
    if not options.resource_groups:
        names = [WHOLE_CLUSTER]
        broker = np.zeros(nb, dtype=np.int32)
        topic = np.zeros(nt, dtype=np.int32)
    else:
        names = [g.name for g in options.resource_groups] + [UNGROUPED]
        rest = len(names) - 1
        broker = np.full(nb, rest, dtype=np.int32)
        known = {int(b): i for i, b in enumerate(model.broker_ids.tolist())}
        for gi, group in enumerate(options.resource_groups):
            for b in group.broker_ids:
                if b in known:
                    broker[known[b]] = gi
        topic = np.full(nt, rest, dtype=np.int32)
        for ti, name in enumerate(model.topics):
            for gi, group in enumerate(options.resource_groups):
                if group.matches(name):
                    topic[ti] = gi
                    break
    partition = topic[model.partition_topic] if model.num_partitions else np.zeros(0, dtype=np.int32)
    has_brokers = np.bincount(broker, minlength=len(names)) > 0
    balanced = has_brokers.copy()
    if options.groups_to_balance:
        balanced &= np.array([n in options.groups_to_balance for n in names])
    return Groups(names, broker, partition.astype(np.int32), topic, balanced, has_brokers)
