"""Synthetic skewed Kafka clusters for planner tests and benchmarks (seeded, so reproducible).

A cluster has ``racks`` racks of equal size; the last ``new_brokers`` brokers are empty (just
added). Topics have very different sizes (log-normal), retention and fan-out, so disk, network
and leader load do not move together; existing replicas are placed rack-aware but with strongly
uneven broker weights, so the cluster starts far from balanced.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from kafka_balancer.model.cluster import NO_BROKER, ClusterModel, LogDir
from kafka_balancer.planner.base.arrays import ranks

# Shapes whose seeds 1-8 docs/performance.md reports ("Other seeds"): `bench.planner seeds` plans them,
# `bench.planner_floor --shape` bounds them.
SHAPES = {
    "12": {"brokers": 12, "new_brokers": 3, "partitions": 2000, "rf": 3, "skew": 1.0},
    "15": {"brokers": 15, "new_brokers": 3, "partitions": 5000, "rf": 3, "skew": 2.0},
    "mixed-rf": {"brokers": 30, "new_brokers": 6, "partitions": 20000, "rf": 2.5, "skew": 2.0},
}

# The scale table's rows (`bench.planner table`): partitions, brokers, replication factor; skew 1,
# seed 1, brokers // 12 of them new. `bench.planner_floor --scale-rows N` bounds the first N.
SCALE_ROWS = [(20000, 24, 2.5), (65000, 48, 2.46), (130000, 96, 2.46), (433000, 270, 3.0), (933000, 270, 3.0)]


def scale_row(partitions: int, brokers: int, rf: float) -> dict[str, float | int]:
    """skewed_cluster arguments of one scale-table row."""
    new = brokers // 12
    return {"brokers": brokers, "new_brokers": new, "partitions": partitions, "rf": rf, "skew": 1.0, "seed": 1}


def seed_range(text: str) -> list[int]:
    """``"1-8"`` -> [1, ..., 8]; ``"3"`` -> [3]."""
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def _frozen(array: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    array.flags.writeable = False
    return array


def skewed_cluster(
    *,
    brokers: int = 12,
    new_brokers: int = 3,
    racks: int = 3,
    partitions: int = 2000,
    rf: float = 3,
    topics: int | None = None,
    skew: float = 1.0,
    seed: int = 7,
    dead_brokers: int = 0,
) -> ClusterModel:
    """A skewed cluster; ``skew`` 0 = even weights, 1 = brokers weighted 1..4x, 2 = up to 9x.

    A fractional ``rf`` mixes replication factors: e.g. 2.5 gives half the partitions 2 replicas
    and half 3 (large clusters carry such mixes: 320k replicas over 130k partitions is rf ~2.46).
    """
    if brokers % racks:
        raise ValueError(f"brokers ({brokers}) must be a multiple of racks ({racks}) for equal-size racks")
    rng = np.random.default_rng(seed)
    topics = topics or max(1, partitions // 20)
    old = brokers - new_brokers
    rack_of = np.arange(brokers) % racks
    weight = 1.0 + skew * rng.random(brokers) * (1.0 + skew)
    weight[old:] = 0.0  # new brokers start empty

    # Partitions per topic: a few big topics, many small ones; every topic gets at least one.
    share = rng.pareto(1.2, topics) + 0.05
    counts = np.maximum(1, np.floor(share / share.sum() * (partitions - topics)).astype(np.int64) + 1)
    counts[0] += partitions - counts.sum()
    if counts[0] < 1:
        counts = np.full(topics, partitions // topics)
        counts[: partitions - counts.sum()] += 1
    partition_topic = np.repeat(np.arange(topics), counts).astype(np.int32)
    partition_id = (np.arange(partitions) - np.repeat(np.cumsum(counts) - counts, counts)).astype(np.int32)

    rate = rng.lognormal(mean=13.0, sigma=1.5, size=topics)  # bytes/s per partition of each topic
    retention = rng.uniform(6 * 3600, 3 * 86400, size=topics)
    fanout = rng.uniform(0.5, 3.0, size=topics)
    noise = rng.lognormal(0.0, 0.3, size=partitions)
    bytes_in = rate[partition_topic] * noise
    size = bytes_in * retention[partition_topic] * rng.lognormal(0.0, 0.2, size=partitions)
    bytes_out = bytes_in * fanout[partition_topic]

    low_rf = int(np.floor(rf))
    wide = int(np.ceil(rf))
    part_rf = np.where(rng.random(partitions) < rf - low_rf, wide, low_rf)
    replicas = place_replicas(rng, weight, rack_of, part_rf)
    alive = np.ones(brokers, dtype=np.bool_)
    if dead_brokers:
        alive[rng.choice(old, size=dead_brokers, replace=False)] = False
    isr = replicas != NO_BROKER
    isr &= alive[np.maximum(replicas, 0)]
    leader = replicas[:, 0].copy()
    leader[~alive[leader]] = NO_BROKER
    names = tuple(f"topic-{t:05d}" for t in range(topics))
    return ClusterModel(
        broker_ids=_frozen(np.arange(brokers, dtype=np.int32)),
        broker_racks=tuple(f"rack-{r}" for r in rack_of),
        broker_alive=_frozen(alive),
        capacity=_frozen(np.full((brokers, 4), np.nan)),
        topics=names,
        topic_min_isr=_frozen(np.zeros(topics, dtype=np.int32)),
        topic_unclean_election=_frozen(np.full(topics, -1, dtype=np.int8)),
        partition_topic=_frozen(partition_topic),
        partition_id=_frozen(partition_id),
        replicas=_frozen(replicas),
        isr_mask=_frozen(isr),
        leader=_frozen(leader.astype(np.int32)),
        size_bytes=_frozen(size),
        bytes_in=_frozen(bytes_in),
        bytes_out=_frozen(bytes_out),
        messages_in=_frozen(bytes_in / 1024.0),
        cpu_leader=_frozen(np.full(partitions, np.nan)),
        cluster_name=f"synthetic-{brokers}b-{partitions}p-seed{seed}",
    )


def place_replicas(
    rng: np.random.Generator, weight: np.ndarray, rack_of: np.ndarray, part_rf: np.ndarray
) -> np.ndarray:  # type: ignore[type-arg]
    """Each partition's replicas (``part_rf`` of them, -1 padded): replica k in rack ``first + k``
    (racks in turn, so the racks are spread), on a broker of that rack drawn with probability
    proportional to ``weight`` (0: never); beyond the racks, on any broker not yet used."""
    partitions, racks, rf = part_rf.size, int(rack_of.max()) + 1, int(part_rf.max())
    replicas = np.full((partitions, rf), NO_BROKER, dtype=np.int32)
    first_rack = rng.integers(0, racks, size=partitions)
    for k in range(min(rf, racks)):
        rack = (first_rack + k) % racks
        for r in range(racks):
            members = np.flatnonzero((rack_of == r) & (weight > 0))
            rows = np.flatnonzero(rack == r)
            cum = np.cumsum(weight[members])
            pick = np.searchsorted(cum, rng.random(rows.size) * cum[-1], side="right")
            replicas[rows, k] = members[np.minimum(pick, members.size - 1)]
    for k in range(racks, rf):  # more replicas than racks: any broker not yet used
        for p in range(partitions):
            free = np.setdiff1d(np.flatnonzero(weight > 0), replicas[p, :k])
            replicas[p, k] = rng.choice(free)
    replicas[np.arange(rf)[None, :] >= part_rf[:, None]] = NO_BROKER
    return replicas


def disk_lower_bound(model: ClusterModel, removed: tuple[int, ...] = (), threshold: float = 1.10) -> float:
    """Bytes any plan must move: max(disk above threshold×avg, disk below (2−threshold)×avg) + removed bytes."""
    disk = broker_disk(model)
    gone = np.isin(model.broker_ids, removed) | ~model.broker_alive
    live = disk[~gone]
    avg = disk.sum() / live.size
    above = np.maximum(live - threshold * avg, 0).sum()
    below = np.maximum((2 - threshold) * avg - live, 0).sum()
    return float(max(above, below) + disk[gone].sum())


def goals_lower_bound(model: ClusterModel, threshold: float = 1.10) -> float:
    """Bytes any plan must move that brings disk, replica counts and every topic's replica spread into
    their bands (``threshold``, over all brokers; for a plan that keeps every broker and replication
    factor). Every byte moved leaves one broker and arrives on another, so the total is at least the
    sum over brokers of what each must send, and of what each must receive. A broker must send at
    least the most of: its disk above the band, its smallest replicas beyond the replica-count band,
    and per topic its smallest replicas of it beyond the topic's band; it must receive at least the
    most of: its disk below the band, and per topic the replicas it lacks times the topic's smallest.
    At least :func:`disk_lower_bound` (the disk terms alone); looser than the floor bench.planner_floor
    solves as a linear program (which also ties each topic's leaving and arriving bytes together and
    keeps the racks), but closed-form: seconds at millions of replicas."""
    if not model.broker_alive.all():
        raise ValueError("goals_lower_bound is for clusters whose every broker stays")
    valid = model.replicas != NO_BROKER
    part = np.nonzero(valid)[0]
    broker = model.replicas[valid].astype(np.int64)
    size = model.size_bytes[part]
    topic = np.asarray(model.partition_topic, dtype=np.int64)[part]
    n, topics = model.num_brokers, len(model.topics)
    disk = np.bincount(broker, weights=size, minlength=n)
    count = np.bincount(broker, minlength=n)
    per_topic = np.bincount(topic * n + broker, minlength=topics * n).reshape(topics, n)
    avg, count_hi = disk.mean(), np.ceil(count.mean() * threshold - 1e-9)
    topic_avg = per_topic.sum(axis=1) / n
    topic_hi = np.ceil(topic_avg * threshold - 1e-9)[:, None]
    topic_lo = np.floor(topic_avg * (2 - threshold) + 1e-9)[:, None]
    smallest = np.full(topics, np.inf)
    np.minimum.at(smallest, topic, size)
    send = np.maximum.reduce([
        np.maximum(disk - threshold * avg, 0.0),
        _smallest_beyond(broker, size, np.maximum(count - count_hi, 0), n),
        _smallest_beyond(topic * n + broker, size, np.maximum(per_topic - topic_hi, 0).ravel(), topics * n)
        .reshape(topics, n).sum(axis=0),
    ])  # fmt: skip
    lacking = np.maximum(topic_lo - per_topic, 0) * np.where(np.isfinite(smallest), smallest, 0.0)[:, None]
    receive = np.maximum(np.maximum((2 - threshold) * avg - disk, 0.0), lacking.sum(axis=0))
    return float(max(send.sum(), receive.sum()))


def _smallest_beyond(key: np.ndarray, size: np.ndarray, beyond: np.ndarray, keys: int) -> np.ndarray:  # type: ignore[type-arg]
    """Per key, the sum of its ``beyond[key]`` smallest sizes."""
    order = np.lexsort((size, key))
    key, size = key[order], size[order]
    kept = ranks(key) < beyond[key]  # in size order within each key: the smallest first
    return np.bincount(key[kept], weights=size[kept], minlength=keys)


def broker_disk(model: ClusterModel) -> np.ndarray:  # type: ignore[type-arg]
    """Bytes on each broker (by broker index) as the model places them."""
    valid = model.replicas != NO_BROKER
    return np.bincount(model.replicas[valid], weights=np.repeat(model.size_bytes, valid.sum(axis=1)),
                       minlength=model.num_brokers)  # fmt: skip


def with_disk_capacity(model: ClusterModel, factor: float) -> ClusterModel:
    """``model`` with every broker's disk capacity ``factor`` x the average broker's disk use (new
    brokers included), so at capacityThreshold 0.8 a factor of 1.3 puts the limit at 1.04x."""
    capacity = model.capacity.copy()
    capacity[:, 0] = factor * broker_disk(model).mean()
    return dataclasses.replace(model, capacity=capacity)


def with_log_dirs(model: ClusterModel, count: int, *, seed: int = 1, skew: float = 2.0) -> ClusterModel:
    """``model`` on JBOD brokers: ``count`` log directories each (``/data/0`` ..), every volume of
    2x the busiest broker's bytes / ``count`` (room for any plan, so the directory goals are weighed, not
    its capacity), and each replica in a directory drawn with weights 1 : ... : 1 + ``skew`` (the first
    directory of a broker fills fastest, as one does when disks were added later)."""
    rng = np.random.default_rng(seed)
    volume = 2.0 * float(broker_disk(model).max()) / count
    dirs = tuple(LogDir(f"/data/{j}", total_bytes=volume, usable_bytes=volume) for j in range(count))
    weights = 1.0 + skew * np.linspace(1.0, 0.0, count)
    local = rng.choice(count, size=model.replicas.shape, p=weights / weights.sum()).astype(np.int16)
    local[model.replicas == NO_BROKER] = -1
    return dataclasses.replace(model, broker_log_dirs=(dirs,) * model.num_brokers, replica_dir=_frozen(local))
