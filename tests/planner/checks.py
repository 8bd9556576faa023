"""Independent checks of a plan applied to a model (written apart from the planner's own code)."""

from __future__ import annotations

import math
from collections import Counter

from kafka_balancer.model import ClusterBuilder, ClusterModel, ReassignmentPlan
from kafka_balancer.model.proposal import Proposal
from kafka_balancer.planner import PlannerOptions, PlanningError, plan


def placement_after(model: ClusterModel, plan: ReassignmentPlan) -> dict[tuple[str, int], tuple[int, ...]]:
    """Replica lists (ids) of every partition after applying the plan."""
    placement = {(p.topic, p.partition): p.replicas for p in model.partitions()}
    for target in plan.partitions:
        assert (target.topic, target.partition) in placement, target
        placement[(target.topic, target.partition)] = target.replicas
    return placement


def dirs_after(model: ClusterModel, plan_: ReassignmentPlan) -> dict[tuple[str, int, int], str | None]:
    """(topic, partition, broker id) -> the replica's log directory after the plan (None: not known):
    the one the plan names, else where its broker held it."""
    out: dict[tuple[str, int, int], str | None] = {}
    for p in range(model.num_partitions):
        key = (model.topic_name(p), int(model.partition_id[p]))
        for b, d in zip(model.replica_ids(p), model.replica_log_dirs(p), strict=True):
            out[(*key, b)] = d
    for target in plan_.partitions:
        old = model.replica_ids(model.partition_index(target.topic, target.partition))
        before = {b: out.pop((target.topic, target.partition, b)) for b in old}
        named = target.named_log_dirs
        for b in target.replicas:
            out[(target.topic, target.partition, b)] = named.get(b, before.get(b))
    return out


def plan_or_refusal(model: ClusterModel, options: PlannerOptions) -> Proposal | PlanningError:
    """The proposal, or the refusal (for property tests that judge either)."""
    try:
        return plan(model, options)
    except PlanningError as error:
        return error


def rack_spread_ok(model: ClusterModel, replicas: tuple[int, ...], hosts: set[int]) -> bool:
    """Replicas on distinct racks when there are enough racks among ``hosts``, else as even as possible."""
    rack_of, racks = _racks(model, hosts)
    per_rack = Counter(rack_of[b] for b in replicas)
    return max(per_rack.values()) <= math.ceil(len(replicas) / max(racks, 1))


_last_racks: list[tuple[ClusterModel, frozenset[int], dict[int, str], int]] = []


def _racks(model: ClusterModel, hosts: set[int]) -> tuple[dict[int, str], int]:
    """Each broker's rack, and how many racks ``hosts`` span. The last answer is kept: callers check
    every partition of a plan in turn (at 1,200 brokers, rebuilding it per partition took a minute)."""
    if _last_racks and _last_racks[0][0] is model and _last_racks[0][1] == hosts:
        return _last_racks[0][2], _last_racks[0][3]
    rack_of = {b.id: b.rack or f"none-{b.id}" for b in model.brokers()}
    racks = len({rack_of[b] for b in hosts})
    _last_racks[:] = [(model, frozenset(hosts), rack_of, racks)]
    return rack_of, racks


def broker_loads(model: ClusterModel, placement: dict[tuple[str, int], tuple[int, ...]]) -> dict[str, Counter[int]]:
    """Replica count, leader count and disk per broker id (leader = first replica)."""
    sizes = {(p.topic, p.partition): p.size_bytes for p in model.partitions()}
    loads: dict[str, Counter[int]] = {"replicas": Counter(), "leaders": Counter(), "disk": Counter()}
    for key, replicas in placement.items():
        for b in replicas:
            loads["replicas"][b] += 1
            loads["disk"][b] += int(sizes[key])
        loads["leaders"][replicas[0]] += 1
    return loads


def one_rack_per_broker(partitions: list[tuple[str, int, list[int], float]], brokers: int) -> ClusterModel:
    """A small hand-made cluster: ``brokers`` brokers, each in its own rack, and the given
    (topic, partition, replica ids, size) with equal traffic per partition."""
    builder = ClusterBuilder()
    for b in range(brokers):
        builder.add_broker(b, rack=f"rack-{b}")
    for topic, p, replicas, size in partitions:
        builder.add_partition(topic, p, replicas, size_bytes=size, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3)
    return builder.build()


def disk_over_limit(*, big: int, small: int, big_size: float) -> tuple[ClusterModel, float]:
    """Brokers 0-3 hold ``big`` replicas of ``big_size`` bytes and ``small`` of 1 byte, brokers 4-5
    are new; every broker's disk limit is 1.04x the average, so 0-3 must shed their excess first.
    Returns the model and the fewest bytes the repair can move (whole replicas)."""
    builder = ClusterBuilder()
    old_disk = big * big_size + small
    limit = 1.04 * 4 * old_disk / 6
    for b in range(6):
        builder.add_broker(b, rack=f"rack-{b}", disk_bytes=limit / 0.8)  # capacityThreshold 0.8
    p = 0
    for b in range(4):
        for size, count, prefix in ((big_size, big, "big"), (1.0, small, "small")):
            for k in range(count):
                builder.add_partition(
                    f"{prefix}-{k % 5}", p, [b], size_bytes=size, bytes_in_per_sec=1e3, bytes_out_per_sec=1e3
                )
                p += 1
    return builder.build(), 4 * math.ceil(old_disk - limit)
