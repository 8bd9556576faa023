"""The cluster as a plan leaves it: the "after" side of a report drawn before (or instead of) executing.

A dry run has a proposal but no second snapshot; applying the plan's replica lists to the model gives
the placement the execution would produce (first replica = preferred leader, elected at the end), and
its ``log_dirs`` the directory of each replica: the one named, else the one the broker keeps it in,
else (a replica received with ``"any"``) none known until the broker chooses.
"""

from __future__ import annotations

import numpy as np

from kafka_balancer.model import NO_BROKER, ClusterModel, ReassignmentPlan
from kafka_balancer.model.plan import check_log_dirs


def planned(model: ClusterModel, plan: ReassignmentPlan) -> ClusterModel:
    """``model`` with every partition of ``plan`` on its target replicas, led by the first of them.

    Raises ValueError naming the plan entry when it refers to a partition or broker the model lacks
    (a plan made for another cluster or an older snapshot), or a log directory its broker lacks.
    """
    check_log_dirs(plan, model)
    # A replication-factor increase makes some rows longer than the model's widest one.
    width = max([model.replicas.shape[1], *(len(t.replicas) for t in plan.partitions)])
    replicas = np.full((model.num_partitions, width), NO_BROKER, dtype=np.int32)
    replicas[:, : model.replicas.shape[1]] = model.replicas
    leader = np.array(model.leader, dtype=np.int32)
    for n, target in enumerate(plan.partitions):
        try:
            p = model.partition_index(target.topic, target.partition)
            row = [model.broker_index(b) for b in target.replicas]
        except KeyError as err:
            raise ValueError(
                f"plan.partitions[{n}] ({target.topic}-{target.partition}, replicas {list(target.replicas)}): "
                f"{err.args[0]} in cluster {model.cluster_name!r}"
            ) from None
        replicas[p] = NO_BROKER
        replicas[p, : len(row)] = row
        leader[p] = row[0]
    return _in_named_dirs(model.with_placement(replicas, leader), plan)


def _in_named_dirs(model: ClusterModel, plan: ReassignmentPlan) -> ClusterModel:
    """``model`` with each replica the plan names a directory for in that directory (checked before)."""
    named = [t for t in plan.partitions if t.named_log_dirs]
    if not named:
        return model
    if model.replica_dir is None:
        replica_dir = np.full(model.replicas.shape, -1, dtype=np.int16)
    else:
        replica_dir = np.array(model.replica_dir, dtype=np.int16)
    for target in named:
        p = model.partition_index(target.topic, target.partition)
        for k, broker_id in enumerate(target.replicas):
            path = target.named_log_dirs.get(broker_id)
            if path is not None:
                paths = [d.path for d in model.log_dirs(model.broker_index(broker_id))]
                replica_dir[p, k] = paths.index(path)
    return model.with_replica_dirs(replica_dir)
