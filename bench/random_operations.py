"""Random small clusters and a random operation on each: the cases of
tests/planner/test_planner_every_operation.py and of ``bench.feasibility``.

3-15 brokers in 1-3 racks, maybe one dead; random placements (racks may be crowded), rf 1-4;
disk and network-out limits 1.1-2x the average on half the clusters; resource groups on a fifth;
excluded brokers, rebalances limited to a topic or a group, and balance thresholds drawn too.
:func:`with_log_dirs` gives such a cluster JBOD brokers, some of their directories cordoned;
:func:`jbod_case` is a case on such brokers (``remove-disks`` among its operations), some hard goals
left out of its policy.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import numpy as np
from kafka_balancer.model import ClusterBuilder, ClusterModel
from kafka_balancer.model.cluster import LogDir
from kafka_balancer.planner import GroupOptions, OperationOptions, PlannerOptions

OPERATIONS = (
    "rebalance",
    "add-brokers",
    "remove-brokers",
    "remove-brokers-onto-targets",
    "demote-brokers",
    "fix-offline-replicas",
    "change-replication-factor",
    "move-topics",
    "move-topics-to-group",
)


def random_case(seed: int, kind: str) -> tuple[ClusterModel, PlannerOptions]:
    """The cluster and the options of operation ``kind`` drawn from ``seed``."""
    rng = random.Random(seed)
    model, alive = _cluster(rng)
    return model, _options(rng, model.num_brokers, alive, kind)


def _cluster(rng: random.Random) -> tuple[ClusterModel, list[int]]:
    racks, brokers = rng.randint(1, 3), rng.randint(3, 15)
    dead = {rng.randrange(brokers)} if rng.random() < 0.3 else set()
    partitions = []
    for t in range(rng.randint(1, 4)):
        rf = rng.randint(1, min(4, brokers - len(dead)))
        for p in range(rng.randint(3, 30)):
            size, rate = rng.choice([1, 10, 100]) * rng.randint(1, 9), rng.randint(0, 1000)
            partitions.append((f"t{t}", p, rng.sample(range(brokers), rf), size, rate))
    disk: Counter[int] = Counter()
    out: Counter[int] = Counter()
    for _, _, replicas, size, rate in partitions:
        for b in replicas:
            disk[b] += size
        out[replicas[0]] += rate * (2 + len(replicas))
    alive = [b for b in range(brokers) if b not in dead]
    avg_disk, avg_out = sum(disk.values()) / len(alive), sum(out.values()) / len(alive)
    limited = rng.random() < 0.5
    builder = ClusterBuilder()
    for b in range(brokers):
        disk_cap = avg_disk * rng.uniform(1.1, 1.6) / 0.8 if limited else None
        out_cap = (avg_out * rng.uniform(1.2, 2.0) + 1) / 0.8 if limited and rng.random() < 0.5 else None
        builder.add_broker(
            b, rack=f"r{b % racks}", alive=b in alive, disk_bytes=disk_cap, network_out_bytes_per_sec=out_cap
        )
    for topic, p, replicas, size, rate in partitions:
        builder.add_partition(topic, p, replicas, size_bytes=size, bytes_in_per_sec=rate, bytes_out_per_sec=2 * rate)
    return builder.build(), alive


def _options(rng: random.Random, brokers: int, alive: list[int], kind: str) -> PlannerOptions:
    groups: tuple[GroupOptions, ...] = ()
    if kind == "move-topics-to-group" or rng.random() < 0.2:
        # Every broker in a group; topics t1.. in none of them.
        half = brokers // 2
        groups = (GroupOptions("a", tuple(range(half)), ("t0",)), GroupOptions("b", tuple(range(half, brokers))))
    one = rng.choice(alive)
    others = [b for b in alive if b != one]
    operation = {
        "rebalance": OperationOptions(),
        "add-brokers": OperationOptions("add-brokers", brokers=(one,)),
        "remove-brokers": OperationOptions(
            "remove-brokers", brokers=tuple(rng.sample(alive, rng.randint(1, max(1, len(alive) // 3))))
        ),
        "remove-brokers-onto-targets": OperationOptions(
            "remove-brokers", brokers=(one,), target_brokers=tuple(rng.sample(others, rng.randint(1, len(others))))
        ),
        "demote-brokers": OperationOptions("demote-brokers", brokers=(one,)),
        "fix-offline-replicas": OperationOptions("fix-offline-replicas"),
        "change-replication-factor": OperationOptions(
            "change-replication-factor", topics=("t0",), replication_factor=rng.randint(1, 3)
        ),
        "move-topics": OperationOptions(
            "move-topics", topics=("t0",), target_brokers=tuple(rng.sample(range(brokers), rng.randint(1, brokers)))
        ),
        "move-topics-to-group": OperationOptions("move-topics", topics=("t0",), target_group="b"),
    }[kind]
    # A rebalance limited to some topics or groups: what is outside may break a hard goal it cannot mend.
    topics = ("t0",) if kind == "rebalance" and rng.random() < 0.15 else ()
    per_group = {"rebalance", "add-brokers", "remove-brokers", "fix-offline-replicas"}
    to_balance = (rng.choice(["a", "b"]),) if groups and kind in per_group and rng.random() < 0.3 else ()
    return PlannerOptions(
        operation=operation,
        resource_groups=groups,
        topics=topics,
        groups_to_balance=to_balance,
        balance_threshold=rng.choice([1.02, 1.05, 1.10, 1.10, 1.3]),
        excluded_brokers_for_replicas=(rng.choice(alive),) if rng.random() < 0.2 else (),
        excluded_brokers_for_leadership=(rng.choice(alive),) if rng.random() < 0.2 else (),
    )


def with_log_dirs(model: ClusterModel, rng: random.Random) -> ClusterModel:
    """``model`` with 1-4 log directories per broker: sizes known on most (0.5-3x three times the
    average broker's bytes over 1-4 directories, so some start above or end near their limit),
    each directory cordoned with probability 0.15 and every directory of a fifth of the brokers;
    each replica in one of its broker's directories, skewed towards the first."""
    dirs: list[tuple[LogDir, ...]] = []
    total = float(model.size_bytes.sum()) * 3 / max(1, model.num_brokers)
    for _ in range(model.num_brokers):
        n, closed = rng.randint(1, 4), rng.random() < 0.2
        dirs.append(
            tuple(
                LogDir(
                    f"/data/{j}",
                    cordoned=closed or rng.random() < 0.15,
                    total_bytes=None if rng.random() < 0.2 else total * rng.uniform(0.5, 3),
                )
                for j in range(n)
            )
        )
    local = np.full(model.replicas.shape, -1, dtype=np.int16)
    for p in range(model.num_partitions):
        for k, b in enumerate(model.replicas[p].tolist()):
            if b >= 0:
                local[p, k] = 0 if rng.random() < 0.6 else rng.randrange(len(dirs[b]))
    return dataclasses.replace(model, broker_log_dirs=tuple(dirs), replica_dir=local)


REMOVE_DISKS = "remove-disks"


def jbod_case(seed: int, kind: str, dropped: frozenset[str]) -> tuple[ClusterModel, PlannerOptions]:
    """``random_case`` on JBOD brokers (``with_log_dirs``), without the ``dropped`` hard goals;
    ``remove-disks`` empties one or two directories of a rebalance's cluster."""
    model, options = random_case(seed, "rebalance" if kind == REMOVE_DISKS else kind)
    rng = random.Random(seed)
    model = with_log_dirs(model, rng)
    if kind == REMOVE_DISKS:
        ids = model.broker_ids.tolist()
        many = [b for b in range(model.num_brokers) if len(model.log_dirs(b)) > 1] or [0]
        chosen = rng.sample(many, k=min(len(many), rng.randint(1, 2)))
        named = tuple((int(ids[b]), model.log_dirs(b)[rng.randrange(len(model.log_dirs(b)))].path) for b in chosen)
        options = dataclasses.replace(options, operation=OperationOptions(REMOVE_DISKS, log_dirs=named))
    hard = tuple(g for g in options.hard_goals if g not in dropped)
    return model, dataclasses.replace(options, hard_goals=hard)
