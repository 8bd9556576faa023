"""Bytes per replica of the ClusterModel (the planner's working set), for ~1M replicas.

    .venv/bin/python -m bench.model_memory [--partitions 340000]

Target: < 200 bytes per replica (issue 2).
"""

from __future__ import annotations

import argparse

import numpy as np
from kafka_balancer.model import ClusterModel
from kafka_balancer.model.cluster import NO_BROKER, _frozen


def build(partitions: int, brokers: int, rf: int) -> ClusterModel:
    # Built from arrays directly (the shape ClusterBuilder produces) to keep the benchmark fast.
    ids = np.arange(1, brokers + 1, dtype=np.int32)
    p = np.arange(partitions, dtype=np.int64)
    replicas = np.stack([(p + k * 7) % brokers for k in range(rf)], axis=1).astype(np.int32)
    return ClusterModel(
        broker_ids=_frozen(ids),
        broker_racks=tuple(f"rack-{b % 3}" for b in range(brokers)),
        broker_alive=_frozen(np.ones(brokers, dtype=np.bool_)),
        capacity=_frozen(np.full((brokers, 4), np.nan)),
        topics=tuple(f"topic-{t:05d}" for t in range(partitions // 50 + 1)),
        topic_min_isr=_frozen(np.zeros(partitions // 50 + 1, dtype=np.int32)),
        topic_unclean_election=_frozen(np.full(partitions // 50 + 1, -1, dtype=np.int8)),
        partition_topic=_frozen((p // 50).astype(np.int32)),
        partition_id=_frozen((p % 50).astype(np.int32)),
        replicas=_frozen(replicas),
        isr_mask=_frozen(replicas != NO_BROKER),
        leader=_frozen(replicas[:, 0].copy()),
        size_bytes=_frozen(np.ones(partitions)),
        bytes_in=_frozen(np.ones(partitions)),
        bytes_out=_frozen(np.ones(partitions)),
        messages_in=_frozen(np.ones(partitions)),
        cpu_leader=_frozen(np.full(partitions, np.nan)),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=340_000)
    parser.add_argument("--brokers", type=int, default=300)
    parser.add_argument("--rf", type=int, default=3)
    args = parser.parse_args()
    model = build(args.partitions, args.brokers, args.rf)
    per_replica = model.nbytes() / model.num_replicas
    print(f"replicas={model.num_replicas} partitions={model.num_partitions} model arrays={model.nbytes() / 1e6:.1f} MB")
    print(f"bytes per replica: {per_replica:.1f} (target < 200)")


if __name__ == "__main__":
    main()
